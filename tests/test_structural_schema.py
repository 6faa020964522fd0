"""upstream.structural is the one structural-schema engine: the program's extraSpec check and the
test suite's CRD validator (testkit/crdschema.py) both read schemas through it. These are the
parts of the API server's create path the pinned CRDs do not exercise yet (value validations,
`multipleOf`, `byte`, embedded resources) and the order of its steps (nulls, then defaults)."""

from __future__ import annotations

from typing import Any

import pytest

from upstream.structural import admit, schema_errors, unchecked_formats

Schema = dict[str, Any]


def obj(**properties: Schema) -> Schema:
    return {"type": "object", "properties": properties}


def test_a_null_is_dropped_and_reported_before_defaults_fill_its_place() -> None:
    """The API server prunes a non-nullable null, then defaults the field it left empty."""
    schema = obj(mode={"type": "string", "default": "Never"}, note={"type": "string"})
    stored, errors = admit({"mode": None, "note": None}, schema)
    assert stored == {"mode": "Never"}
    assert sorted(where for where, _ in errors) == [("mode",), ("note",)]
    assert all("null: the API server drops it" in message for _, message in errors)


def test_a_nullable_null_is_kept() -> None:
    stored, errors = admit({"maybe": None}, obj(maybe={"type": "string", "nullable": True}))
    assert (stored, errors) == ({"maybe": None}, [])


def test_admit_leaves_its_input_alone() -> None:
    value = {"spec": {}}
    admit(value, obj(spec=obj(replicas={"type": "integer", "default": 1})))
    assert value == {"spec": {}}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": "x"}, []),
        ({"b": "y"}, []),
        ({}, ["must match at least one of 2 shapes (anyOf)"]),
    ],
    ids=["first", "second", "neither"],
)
def test_any_of_required_branches(value: dict[str, str], expected: list[str]) -> None:
    """Kubernetes' usual 'one of these fields' shape: branches that only require."""
    schema = {
        **obj(a={"type": "string"}, b={"type": "string"}),
        "anyOf": [
            {"required": ["a"]},
            {"required": ["b"]},
        ],
    }
    found = [message for _, message in schema_errors(value, schema)]
    assert len(found) == len(expected)
    assert all(e in m for e, m in zip(expected, found, strict=True))


def test_one_of_counts_the_branches_that_match() -> None:
    schema = {
        **obj(a={"type": "string"}, b={"type": "string"}),
        "oneOf": [
            {"required": ["a"]},
            {"required": ["b"]},
        ],
    }
    assert schema_errors({"a": "x"}, schema) == []
    [(_, message)] = schema_errors({"a": "x", "b": "y"}, schema)
    assert message == "must match exactly one of 2 shapes (oneOf), matches 2"


def test_all_of_and_not_are_value_validations() -> None:
    schema = {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 5}], "not": {"enum": [3]}}
    assert schema_errors(2, schema) == []
    assert schema_errors(7, schema) == [((), "must be <= 5")]
    assert schema_errors(3, schema) == [((), "matches a shape the schema forbids (not)")]


def test_a_branch_declares_no_structure() -> None:
    """A field named only in a branch is not an unknown field of the branch (it prunes nothing)."""
    schema = {**obj(a={"type": "string"}), "anyOf": [{"properties": {"a": {"minLength": 2}}}]}
    assert schema_errors({"a": "xy"}, schema) == []
    [(where, message)] = schema_errors({"a": "x"}, schema)
    assert where == ()
    assert "at least 2 characters" in message


def test_int_or_string_anyof_restates_the_types_only() -> None:
    schema = {
        "x-kubernetes-int-or-string": True,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": "^[0-9]+%?$",
    }
    assert schema_errors(3, schema) == []
    assert schema_errors("30%", schema) == []
    [(_, message)] = schema_errors("3x", schema)
    assert "does not match" in message


def test_multiple_of_unique_items_and_byte() -> None:
    schema = obj(
        step={"type": "integer", "multipleOf": 5},
        ids={"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        ca={"type": "string", "format": "byte"},
    )
    good = {"step": 10, "ids": ["a", "b"], "ca": "aGVsbG8="}
    assert schema_errors(good, schema) == []
    bad = {"step": 7, "ids": ["a", "a"], "ca": "not base64!"}
    assert sorted(schema_errors(bad, schema)) == [
        (("ca",), "'not base64!' is not base64"),
        (("ids", 1), "duplicate entry 'a' (the list is a set)"),
        (("step",), "must be a multiple of 5"),
    ]


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("2026-12-06T17:00:00Z", True),
        ("2026-12-06T17:00:00.123+01:00", True),
        ("2026-12-06T17:00", False),  # no seconds: metav1.Time does not decode it
        ("2026-12-06T17:00:00", False),  # no zone
        ("2026-12-06", False),
    ],
)
def test_date_time_is_rfc_3339(text: str, ok: bool) -> None:
    assert (schema_errors(text, {"type": "string", "format": "date-time"}) == []) is ok


def test_an_embedded_resource_allows_its_type_meta() -> None:
    schema = obj(
        template={
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            },
        }
    )
    value = {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}}
    assert schema_errors(value, schema) == []
    [(where, _)] = schema_errors({"template": {"kindd": "Pod"}}, schema)
    assert where == ("template", "kindd")


def test_formats_it_does_not_check_are_named() -> None:
    schema = obj(
        url={"type": "string", "format": "uri"},
        n={"type": "integer", "format": "int32"},
        f={"type": "number", "format": "double"},
        t={"type": "string", "format": "date-time"},
    )
    assert unchecked_formats(schema) == {"uri"}
