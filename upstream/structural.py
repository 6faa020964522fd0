"""Kubernetes structural schemas (a CRD version's `openAPIV3Schema`), as the API server applies
them to a created object (k8s.io/apiextensions-apiserver: structural defaulting, then
`validation.ValidateCustomResource`, then pruning).

`admit` does what the server does to a created value: drops nulls in non-nullable fields,
applies schema defaults, then validates. `schema_errors` reports what the server refuses, or
prunes without a word: wrong types, enum values, bounds, `multipleOf`, patterns, formats
(`int32`, `int64`, `date-time`, `byte`), required fields, duplicate `set`/`map` list entries,
nulls in non-nullable fields, fields the schema does not have, and the value validations
`allOf`/`anyOf`/`oneOf`/`not`. `unchecked_formats` names the formats a schema uses that are not
checked here. Not here: CEL rules (`x-kubernetes-validations`) and ObjectMeta; their callers
check the ones they need (checks.extraspec) and the test suite checks all of them
(testkit/crdschema.py, which uses this engine for everything structural).

Pure, standard library only: the program, preflight and the test suite all use it.
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime as dt
import difflib
import functools
import re
from collections.abc import Mapping
from typing import Any, Final, cast

Schema = Mapping[str, Any]
# A position inside a value: keys and list indexes, outermost first.
Where = tuple[str | int, ...]

_INT_BOUNDS: Final = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
# Formats checked here, and those with nothing to check beyond the type (kube-openapi's strfmt
# registry has more, e.g. `uri`, `email`, `uuid`: `unchecked_formats` names those).
_CHECKED_FORMATS: Final = frozenset({"int32", "int64", "date-time", "byte"})
_TYPE_ONLY_FORMATS: Final = frozenset({"float", "double", "password", "int-or-string"})
# RFC 3339 as metav1.Time decodes it: seconds and a zone are required.
_DATE_TIME: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z"
)


def _props(s: Schema) -> Mapping[str, Schema]:
    return cast("Mapping[str, Schema]", s.get("properties") or {})


def _type_of(s: Schema) -> str | None:
    if s.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return cast("str | None", s.get("type"))


def admit(value: Any, s: Schema) -> tuple[Any, list[tuple[Where, str]]]:
    """`value` as the API server stores it on create (a deep copy: non-nullable nulls dropped,
    then defaults applied) and every structural-schema error, the dropped nulls included."""
    value = copy.deepcopy(value)
    errors: list[tuple[Where, str]] = []
    _drop_nulls(value, s, (), errors)
    _default(value, s)
    return value, [*errors, *schema_errors(value, s)]


def _drop_nulls(value: Any, s: Schema, where: Where, out: list[tuple[Where, str]]) -> None:
    if isinstance(value, dict):
        mapping = cast("dict[str, Any]", value)
        for key in list(mapping):
            sub = _sub_schema(s, key)
            if sub is None:
                continue
            if mapping[key] is None and not sub.get("nullable"):
                out.append(((*where, key), _NULL))
                del mapping[key]
            else:
                _drop_nulls(mapping[key], sub, (*where, key), out)
    elif isinstance(value, list) and isinstance(s.get("items"), Mapping):
        for n, item in enumerate(cast("list[Any]", value)):
            _drop_nulls(item, cast("Schema", s["items"]), (*where, n), out)


def _sub_schema(s: Schema, key: str) -> Schema | None:
    props = _props(s)
    if key in props:
        return props[key]
    extra = s.get("additionalProperties")
    return cast("Schema", extra) if isinstance(extra, Mapping) else None


def unchecked_formats(s: Schema) -> set[str]:
    """The `format`s used anywhere in `s` that `schema_errors` does not check."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            node = cast("Mapping[str, Any]", node)
            fmt = node.get("format")
            if isinstance(fmt, str) and fmt not in _CHECKED_FORMATS | _TYPE_ONLY_FORMATS:
                found.add(fmt)
            for key, sub in node.items():
                if key not in ("default", "enum", "example"):
                    walk(sub)
        elif isinstance(node, list):
            for item in cast("list[Any]", node):
                walk(item)

    walk(s)
    return found


def with_defaults(value: Any, s: Schema) -> Any:
    """`value` with the schema's `default`s set where a field is absent (a deep copy)."""
    value = copy.deepcopy(value)
    _default(value, s)
    return value


def _default(value: Any, s: Schema) -> None:
    if isinstance(value, dict):
        mapping = cast("dict[str, Any]", value)
        for key, sub in _props(s).items():
            if key not in mapping and "default" in sub:
                mapping[key] = copy.deepcopy(sub["default"])
            if key in mapping:
                _default(mapping[key], sub)
        extra = s.get("additionalProperties")
        if isinstance(extra, Mapping):
            for key, item in mapping.items():
                if key not in _props(s):
                    _default(item, cast("Schema", extra))
    elif isinstance(value, list) and isinstance(s.get("items"), Mapping):
        for item in cast("list[Any]", value):
            _default(item, cast("Schema", s["items"]))


def go_regex_to_python(pattern: str) -> str:
    """The RE2 pattern of a CRD (as the API server reads it) as an equivalent Python `re` one.

    Two differences matter for the pinned CRDs: RE2 accepts inline flags after `^` (kruise writes
    `^(?i)...`), and Go's `$` (and `\\z`) means end of text while Python's `$` also matches before
    a final newline, so `"a\n"` would pass `^a$` here and be refused by the API server.
    """
    match = re.match(r"^\^\(\?([a-zA-Z]+)\)", pattern)
    if match:
        pattern = f"(?{match.group(1)})^" + pattern[match.end() :]
    if re.match(r"^\(\?[a-zA-Z]*m", pattern):
        return pattern  # multi-line mode: `$` is per line in both engines
    out: list[str] = []
    escaped = in_class = False
    for ch in pattern:
        if escaped:
            out.append("Z" if ch == "z" else ch)
            escaped = False
        elif ch == "\\":
            out.append(ch)
            escaped = True
        elif in_class:
            out.append(ch)
            in_class = ch != "]"
        elif ch == "[":
            out.append(ch)
            in_class = True
        else:
            out.append(r"\Z" if ch == "$" else ch)
    converted = "".join(out)
    re.compile(converted)  # fail loudly at load time rather than silently not checking a pattern
    return converted


@functools.lru_cache(maxsize=256)
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(go_regex_to_python(text))


def _date_time(text: str) -> bool:
    if not _DATE_TIME.match(text):
        return False
    try:
        dt.datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error):
        return False
    return True


def _named(value: Any) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a mapping",
    }
    return names.get(type(value), type(value).__name__)


_NULL: Final = "null: the API server drops it; set a value or leave the key out"


def schema_errors(value: Any, s: Schema, where: Where = ()) -> list[tuple[Where, str]]:
    """Every structural-schema error in `value` (defaults applied first), with its position."""
    out: list[tuple[Where, str]] = []
    _check(value, s, where, out)
    return out


def _check(
    value: Any, s: Schema, where: Where, out: list[tuple[Where, str]], *, values_only: bool = False
) -> None:
    """`values_only`: a branch of allOf/anyOf/oneOf/not, which constrains values but declares no
    structure (no unknown-field errors, and a branch without a type checks any value)."""
    if value is None:
        if not s.get("nullable") and not values_only:
            out.append((where, _NULL))
        return
    kind = _type_of(s)
    if values_only and kind is None:
        kind = _value_kind(value)
    if kind == "int-or-string":
        if isinstance(value, bool) or not isinstance(value, int | str):
            out.append((where, f"must be an integer or a string, not {_named(value)}"))
            return
        if isinstance(value, str):
            _check_string(value, s, where, out)
        else:
            _check_number(value, s, where, out)
    elif kind == "object":
        if not isinstance(value, dict):
            out.append((where, f"must be a mapping, not {_named(value)}"))
            return
        _check_object(cast("dict[Any, Any]", value), s, where, out, values_only=values_only)
    elif kind == "array":
        if not isinstance(value, list):
            out.append((where, f"must be a list, not {_named(value)}"))
            return
        _check_array(cast("list[Any]", value), s, where, out, values_only=values_only)
    elif kind == "string":
        if not isinstance(value, str):
            out.append((where, f"must be a string, not {_named(value)}"))
            return
        _check_string(value, s, where, out)
    elif kind in ("integer", "number"):
        whole = kind == "integer"
        if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
            out.append(
                (where, f"must be {'an integer' if whole else 'a number'}, not {_named(value)}")
            )
            return
        _check_number(value, s, where, out)
    elif kind == "boolean" and not isinstance(value, bool):
        out.append((where, f"must be true or false, not {_named(value)}"))
        return
    if "enum" in s and value not in s["enum"]:
        allowed = ", ".join(str(v) for v in s["enum"])
        out.append((where, f"{value!r} is not allowed; allowed: {allowed}"))
    if not s.get("x-kubernetes-int-or-string"):  # its anyOf only restates the two types
        _check_branches(value, s, where, out)


def _value_kind(value: Any) -> str | None:
    kinds = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array"}
    return "object" if isinstance(value, dict) else kinds.get(type(value))


def _branch_errors(value: Any, branch: Any, where: Where) -> list[tuple[Where, str]]:
    out: list[tuple[Where, str]] = []
    _check(value, cast("Schema", branch), where, out, values_only=True)
    return out


def _check_branches(value: Any, s: Schema, where: Where, out: list[tuple[Where, str]]) -> None:
    for branch in s.get("allOf") or ():
        out.extend(_branch_errors(value, branch, where))
    any_of = list(s.get("anyOf") or ())
    if any_of:
        failures = [_branch_errors(value, b, where) for b in any_of]
        if all(failures):
            reasons = "; ".join(f[0][1] for f in failures)
            out.append(
                (where, f"must match at least one of {len(any_of)} shapes (anyOf): {reasons}")
            )
    one_of = list(s.get("oneOf") or ())
    if one_of:
        matching = sum(not _branch_errors(value, b, where) for b in one_of)
        if matching != 1:
            out.append(
                (
                    where,
                    f"must match exactly one of {len(one_of)} shapes (oneOf), matches {matching}",
                )
            )
    if isinstance(s.get("not"), Mapping) and not _branch_errors(value, s["not"], where):
        out.append((where, "matches a shape the schema forbids (not)"))


# An embedded resource (x-kubernetes-embedded-resource) always allows its own type meta.
_EMBEDDED: Final[Mapping[str, Schema]] = {
    "apiVersion": {"type": "string"},
    "kind": {"type": "string"},
    "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
}


def _check_object(
    value: dict[Any, Any],
    s: Schema,
    where: Where,
    out: list[tuple[Where, str]],
    *,
    values_only: bool = False,
) -> None:
    props = _props(s)
    if s.get("x-kubernetes-embedded-resource"):
        props = {**_EMBEDDED, **props}
    extra = s.get("additionalProperties")
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields")) or extra is True or values_only
    for key, item in value.items():
        if not isinstance(key, str):
            out.append(((*where, str(key)), "keys must be strings"))
            continue
        if key in props:
            _check(item, props[key], (*where, key), out, values_only=values_only)
        elif isinstance(extra, Mapping):
            _check(item, cast("Schema", extra), (*where, key), out, values_only=values_only)
        elif not preserve:
            hint = difflib.get_close_matches(key, list(props), n=1)
            known = f"did you mean {hint[0]!r}?" if hint else "known: " + ", ".join(sorted(props))
            out.append(((*where, key), f"unknown field ({known})"))
    for key in s.get("required", ()):
        if key not in value:
            out.append(((*where, key), "required field missing"))
    if "maxProperties" in s and len(value) > s["maxProperties"]:
        out.append((where, f"at most {s['maxProperties']} entries"))
    if "minProperties" in s and len(value) < s["minProperties"]:
        out.append((where, f"at least {s['minProperties']} entries"))


def _check_array(
    value: list[Any],
    s: Schema,
    where: Where,
    out: list[tuple[Where, str]],
    *,
    values_only: bool = False,
) -> None:
    if "maxItems" in s and len(value) > s["maxItems"]:
        out.append((where, f"at most {s['maxItems']} items, got {len(value)}"))
    if "minItems" in s and len(value) < s["minItems"]:
        out.append((where, f"at least {s['minItems']} items, got {len(value)}"))
    items = s.get("items")
    if isinstance(items, Mapping):
        for n, item in enumerate(value):
            _check(item, cast("Schema", items), (*where, n), out, values_only=values_only)
    list_type = s.get("x-kubernetes-list-type")
    if list_type == "set" or s.get("uniqueItems"):
        seen: list[Any] = []
        for n, item in enumerate(value):
            if item in seen:
                out.append(((*where, n), f"duplicate entry {item!r} (the list is a set)"))
            seen.append(item)
    elif list_type == "map":
        keys = list(s.get("x-kubernetes-list-map-keys", ()))
        seen_keys: dict[tuple[Any, ...], int] = {}
        for n, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            entry = cast("dict[str, Any]", item)
            key = tuple(entry.get(k) for k in keys)
            if key in seen_keys:
                ident = dict(zip(keys, key, strict=True))
                first = seen_keys[key]
                out.append(
                    ((*where, n), f"duplicate entry for list-map key {ident} (also at [{first}])")
                )
            seen_keys.setdefault(key, n)


def _check_string(value: str, s: Schema, where: Where, out: list[tuple[Where, str]]) -> None:
    if "maxLength" in s and len(value) > s["maxLength"]:
        out.append((where, f"at most {s['maxLength']} characters"))
    if "minLength" in s and len(value) < s["minLength"]:
        out.append((where, f"at least {s['minLength']} characters"))
    if "pattern" in s and not _pattern(s["pattern"]).search(value):
        out.append((where, f"{value!r} does not match {s['pattern']}"))
    if s.get("format") == "date-time" and not _date_time(value):
        out.append((where, f"{value!r} is not an RFC 3339 date-time"))
    if s.get("format") == "byte" and not _base64(value):
        out.append((where, f"{value!r} is not base64"))


def _check_number(value: float, s: Schema, where: Where, out: list[tuple[Where, str]]) -> None:
    bounds = _INT_BOUNDS.get(str(s.get("format")))
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        bits = str(s["format"]).removeprefix("int")
        out.append((where, f"{value} does not fit a signed {bits}-bit integer ({s['format']})"))
    if "minimum" in s:
        low = s["minimum"]
        if value < low or (s.get("exclusiveMinimum") and value == low):
            out.append((where, f"must be {'>' if s.get('exclusiveMinimum') else '>='} {low}"))
    if "maximum" in s:
        high = s["maximum"]
        if value > high or (s.get("exclusiveMaximum") and value == high):
            out.append((where, f"must be {'<' if s.get('exclusiveMaximum') else '<='} {high}"))
    step = s.get("multipleOf")
    if isinstance(step, int | float) and step and (value / step) != int(value / step):
        out.append((where, f"must be a multiple of {step}"))


def crd_version_schema(crd: Mapping[str, Any], version: str) -> Schema | None:
    """The `openAPIV3Schema` of one served version of a CRD document, or None."""
    spec = cast("Mapping[str, Any]", crd.get("spec") or {})
    for v in cast("list[Mapping[str, Any]]", spec.get("versions") or []):
        if v.get("name") == version:
            schema = cast("Mapping[str, Any]", v.get("schema") or {})
            return cast("Schema | None", schema.get("openAPIV3Schema"))
    return None
