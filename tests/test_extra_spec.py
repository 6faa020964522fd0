"""`extraSpec`, the escape hatch of queue objects (docs/kueue-queueing.md).

The staging example (tests/fixtures/staging-extra-spec.yaml) sets two Kueue v0.19.2 fields that
have no typed key; it validates without a warning, renders objects the pinned CRDs accept (with
the test suite's full validator, CEL rules included) and the program registers them merged.
Mistyped or unknown fields, and fields a typed key owns, are refused with the key path inside
`extraSpec`. Preflight's own schema walker (upstream/structural.py) and CEL twins are held to
the test suite's validator: each refusal here is also an error there, and the twin table covers
every CEL rule of the four kinds at both pinned Kueue versions.
"""

from __future__ import annotations

import copy
import re
import runpy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from builders.fleet import kueue_objects
from builders.kueue_queues import (
    OWNED_SPEC,
    resource_flavor,
    with_extra_spec,
)
from checks import extraspec
from checks.stack import parse_fleet
from config.errors import ConfigError
from config.kueue import FlavorConfig
from testkit import crdschema
from testkit.fleetvalues import fleet_issues as issues
from testkit.fleetvalues import queue_objects as objects
from testkit.mocks import Graph, run_program, set_stack_config
from testkit.repo import ROOT
from testkit.shared.extra_spec import (
    BAD_FIELDS,
    COHORT,
    CQ_A,
    CQ_B,
    FIXTURE,
    FLAVOR,
    LQ,
    Q,
    queues,
    render_unchecked,
    staging,
)
from upstream.kueue import KUEUE_VERSIONS
from upstream.structural import crd_version_schema, go_regex_to_python, schema_errors, with_defaults

FAIR_SHARE = Path(__file__).parent / "fixtures" / "fair-share.yaml"
DOC = ROOT / "docs" / "kueue-queueing.md"
CQ_TYPE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"


# --- the staging example ---------------------------------------------------------------------


def test_the_staging_example_is_clean_and_renders_the_merged_fields() -> None:
    raw = staging()
    _, warnings = parse_fleet(raw)
    assert warnings == []
    objs = objects(raw)
    assert objs[("ClusterQueue", "team-a")]["spec"]["flavorFungibility"] == {
        "whenCanBorrow": "TryNextFlavor",
        "whenCanPreempt": "TryNextFlavor",
        "preference": "PreemptionOverBorrowing",
    }
    team_b = objs[("ClusterQueue", "team-b")]["spec"]
    assert team_b["stopPolicy"] == "Hold"
    # The typed keys rendered as without the hatch.
    assert team_b["fairSharing"] == {"weight": "1"}
    assert team_b["cohortName"] == "research"


def test_the_staging_example_matches_the_pinned_crds_with_their_cel_rules() -> None:
    fleet, _ = parse_fleet(staging())
    failures: list[str] = []
    checked: set[str] = set()
    for manifests in kueue_objects(fleet).values():
        for m in manifests:
            if not m.obj["apiVersion"].startswith("kueue.x-k8s.io/"):
                continue  # Namespace, PodDisruptionBudget: Kubernetes' own kinds
            report = crdschema.validate(m.obj, "kueue", f"v{fleet.kueue.version}")
            assert report.crd is not None, m.kind
            checked.add(m.kind)
            failures += [f"{m.kind}/{m.name}: {e}" for e in [*report.errors, *report.warnings]]
    assert {"ClusterQueue", "Cohort", "LocalQueue", "ResourceFlavor"} <= checked
    assert failures == []


def test_the_program_registers_the_merged_objects(graph: Graph) -> None:
    """__main__.py under the mocks: the ClusterQueues carry the extraSpec fields."""
    set_stack_config(staging())
    run_program(lambda: runpy.run_path(str(ROOT / "__main__.py")))
    registered = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in graph.of_type(CQ_TYPE)}
    assert registered["team-a"]["flavorFungibility"]["preference"] == "PreemptionOverBorrowing"
    assert registered["team-a"]["flavorFungibility"]["whenCanBorrow"] == "TryNextFlavor"
    assert registered["team-b"]["stopPolicy"] == "Hold"
    assert registered == {
        name: obj["spec"]
        for (kind, name), obj in objects(staging()).items()
        if kind == "ClusterQueue"
    }


def test_the_program_registers_nothing_for_a_bad_extra_spec(graph: Graph) -> None:
    raw = staging()
    queues(raw)["clusterQueues"][0]["extraSpec"]["flavorFungibility"] = {"prefrence": "x"}
    set_stack_config(raw)
    path = r"clusters\[staging\]\.queues\.clusterQueues\[team-a\]\.extraSpec\.flavorFungibility"
    with pytest.raises(pulumi.RunError, match=path + r"\.prefrence: unknown field"):
        run_program(lambda: runpy.run_path(str(ROOT / "__main__.py")))
    assert graph.resources == []


# --- refusals ---------------------------------------------------------------------------------


def _with_extra(where: tuple[str, int], extra: dict[str, Any]) -> dict[str, Any]:
    raw = staging()
    queues(raw)[where[0]][where[1]]["extraSpec"] = copy.deepcopy(extra)
    return raw


@pytest.mark.parametrize(("where", "extra", "expected"), BAD_FIELDS, ids=lambda v: str(v)[:40])
def test_a_bad_field_is_refused_with_its_key_path(
    where: tuple[str, int], extra: dict[str, Any], expected: str
) -> None:
    found = issues(_with_extra(where, extra))
    assert any(t.startswith(expected) for t in found), found


@pytest.mark.parametrize(("where", "extra", "expected"), BAD_FIELDS, ids=lambda v: str(v)[:40])
def test_each_refusal_is_one_the_crd_makes_too(
    where: tuple[str, int], extra: dict[str, Any], expected: str
) -> None:
    """The test suite's validator (the same structural engine, then ObjectMeta and every CEL rule
    of the CRD with cel-python) refuses the rendered object too: preflight's walker and twins
    invent no rule."""
    del expected
    report = crdschema.validate(render_unchecked(where, extra), "kueue", "v0.19.2")
    assert report.errors != []


OWNED: list[tuple[tuple[str, int], dict[str, Any], str]] = [
    (
        ("clusterQueues", 0),
        {"cohortName": "org"},
        f"{CQ_A}.cohortName: owned by the typed key `cohortName`: set that instead",
    ),
    (
        # Owned also while its typed key is unset (team-b has no flavorFungibility).
        ("clusterQueues", 1),
        {"flavorFungibility": {"whenCanBorrow": "TryNextFlavor"}},
        f"{CQ_B}.flavorFungibility.whenCanBorrow: owned by the typed key "
        "`flavorFungibility.whenCanBorrow`",
    ),
    (
        ("clusterQueues", 0),
        {"preemption": None},
        f"{CQ_A}.preemption: would replace the typed keys `preemption.withinClusterQueue`, "
        "`preemption.reclaimWithinCohort`, `preemption.borrowWithinCohort`: set those instead",
    ),
    (
        ("clusterQueues", 0),
        {"resourceGroups": []},
        f"{CQ_A}.resourceGroups: owned by the typed key `resourceGroups`",
    ),
    (
        ("clusterQueues", 0),
        {"admissionChecksStrategy": {"admissionChecks": [{"name": "extra-check"}]}},
        f"{CQ_A}.admissionChecksStrategy: set by the program (provisioningGate names the gate "
        "and MultiKueue adds its check)",
    ),
    (
        ("cohorts", 1),
        {"fairSharing": {"weight": "5"}},
        f"{COHORT}.fairSharing.weight: owned by the typed key `fairSharing.weight`",
    ),
    (("cohorts", 1), {"parentName": "x"}, f"{COHORT}.parentName: owned by the typed key"),
    (
        ("localQueues", 0),
        {"stopPolicy": "Hold"},
        f"{LQ}.extraSpec.stopPolicy: set by the program (multiKueue.drain holds",
    ),
    (
        ("localQueues", 0),
        {"clusterQueue": "team-b"},
        f"{LQ}.extraSpec.clusterQueue: owned by the typed key `clusterQueue`",
    ),
    (
        ("flavors", 0),
        {"nodeLabels": {"a": "b"}},
        f"{FLAVOR}.nodeLabels: owned by the typed key `nodeLabels`",
    ),
    (("flavors", 0), {"tolerations": []}, f"{FLAVOR}.tolerations: owned by the typed key"),
]


@pytest.mark.parametrize(("where", "extra", "expected"), OWNED, ids=lambda v: str(v)[:40])
def test_a_field_a_typed_key_owns_is_refused_naming_that_key(
    where: tuple[str, int], extra: dict[str, Any], expected: str
) -> None:
    found = issues(_with_extra(where, extra))
    assert any(t.startswith(expected) for t in found), found


def test_every_mistake_shows_at_once() -> None:
    """An owned field does not hide a schema error beside it."""
    raw = _with_extra(("clusterQueues", 1), {"cohortName": "org", "stopPolicy": "Paused"})
    found = issues(raw)
    assert any(t.startswith(f"{CQ_B}.cohortName: owned by") for t in found), found
    assert any(t.startswith(f"{CQ_B}.stopPolicy: 'Paused' is not allowed") for t in found), found


def test_one_mistake_gives_one_error() -> None:
    """A taint without an effect breaks the schema's `required`; the CEL rule on effects, which
    reads the same value, adds nothing."""
    found = issues(_with_extra(("flavors", 0), {"nodeTaints": [{"key": "gpu"}]}))
    assert [t for t in found if t.startswith(FLAVOR)] == [
        f"{FLAVOR}.nodeTaints[0].effect: required field missing"
    ]


def test_the_builder_refuses_an_owned_field_on_its_own() -> None:
    with pytest.raises(ValueError, match="ClusterQueue extraSpec sets fields the program owns"):
        with_extra_spec("ClusterQueue", {}, {"cohortName": "x"})


def test_the_merge_is_deep_and_leaves_the_config_alone() -> None:
    extra = {"flavorFungibility": {"preference": "PreemptionOverBorrowing"}}
    typed = {"flavorFungibility": {"whenCanBorrow": "TryNextFlavor"}, "stopPolicy": "None"}
    merged = with_extra_spec("ClusterQueue", typed, extra)
    assert merged == {
        "flavorFungibility": {
            "whenCanBorrow": "TryNextFlavor",
            "preference": "PreemptionOverBorrowing",
        },
        "stopPolicy": "None",
    }
    merged["flavorFungibility"]["preference"] = "changed"
    assert extra["flavorFungibility"]["preference"] == "PreemptionOverBorrowing"
    assert typed == {"flavorFungibility": {"whenCanBorrow": "TryNextFlavor"}, "stopPolicy": "None"}


# --- the pinned CRDs behind preflight's check ----------------------------------------------------


@pytest.fixture
def no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(extraspec, "PINNED_CRDS", tmp_path)
    extraspec.spec_schema.cache_clear()
    yield tmp_path
    extraspec.spec_schema.cache_clear()


def test_without_the_pinned_crds_an_extra_spec_is_refused_not_passed(no_cache: Path) -> None:
    del no_cache
    found = issues(staging())
    assert (
        f"{CQ_A}: cannot be checked: no pinned Kueue v0.19.2 CRD to check it against "
        "(kueue.x-k8s.io_clusterqueues.yaml): run scripts/fetch-crds (pins: scripts/crd-pins.json)"
    ) in found
    # A stack without extraSpec does not need them.
    assert issues(yaml.safe_load(FAIR_SHARE.read_text())) == []


def test_an_edited_crd_in_the_cache_is_refused(no_cache: Path) -> None:
    real = crdschema.CACHE_CRDS / "kueue" / "v0.19.2"
    copy_dir = no_cache / "kueue" / "v0.19.2"
    copy_dir.mkdir(parents=True)
    for f in real.glob("*.yaml"):
        (copy_dir / f.name).write_bytes(f.read_bytes())
    assert issues(staging()) == []
    extraspec.spec_schema.cache_clear()
    cq = copy_dir / "kueue.x-k8s.io_clusterqueues.yaml"
    cq.write_text(cq.read_text().replace("HoldAndDrain", "Paused"))
    found = issues(staging())
    assert any(
        "kueue.x-k8s.io_clusterqueues.yaml does not match its sha256 pin" in t for t in found
    ), found


def _spec_schema(version: str, kind: str) -> dict[str, Any]:
    crd = yaml.safe_load(extraspec.crd_file(version.removeprefix("v"), kind).read_text())
    schema = crd_version_schema(crd, "v1beta2")
    assert schema is not None, (version, kind)
    return schema["properties"]["spec"]


def _rules(s: dict[str, Any]) -> Iterator[str]:
    for rule in s.get("x-kubernetes-validations", ()):
        yield rule["rule"]
    for sub in s.get("properties", {}).values():
        yield from _rules(sub)
    if isinstance(s.get("items"), dict):
        yield from _rules(s["items"])
    if isinstance(s.get("additionalProperties"), dict):
        yield from _rules(s["additionalProperties"])


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
@pytest.mark.parametrize("kind", list(extraspec.KINDS))
def test_every_cel_rule_has_a_twin_or_a_reason(version: str, kind: str) -> None:
    """A Kueue pin that brings a new CEL rule fails here until preflight knows what it does."""
    rules = set(_rules(_spec_schema(version, kind)))
    known = set(extraspec.CEL_TWINS.get(kind, {})) | set(extraspec.CEL_NOT_REACHED)
    assert rules - known == set()


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
@pytest.mark.parametrize("kind", list(extraspec.KINDS))
def test_owned_fields_are_fields_of_the_crd_and_patterns_compile(version: str, kind: str) -> None:
    spec = _spec_schema(version, kind)
    for path in OWNED_SPEC[kind]:
        node = spec
        for part in path:
            assert part in node.get("properties", {}), (kind, path)
            node = node["properties"][part]

    def patterns(s: dict[str, Any]) -> Iterator[str]:
        if "pattern" in s:
            yield s["pattern"]
        for sub in (
            *s.get("properties", {}).values(),
            s.get("items"),
            s.get("additionalProperties"),
        ):
            if isinstance(sub, dict):
                yield from patterns(sub)

    for pattern in patterns(spec):
        re.compile(go_regex_to_python(pattern))


def _leaves(value: Any, at: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            yield from _leaves(sub, (*at, key))
    else:
        yield at


@pytest.mark.parametrize("fixture", [FAIR_SHARE, FIXTURE], ids=lambda p: p.name)
def test_every_field_the_typed_keys_render_is_owned(fixture: Path) -> None:
    """A typed key added to a builder without its OWNED_SPEC entry fails here: extraSpec could
    then set the same field and one of the two would win silently."""
    raw = yaml.safe_load(fixture.read_text())
    for item in (
        v for k in ("flavors", "cohorts", "clusterQueues", "localQueues") for v in queues(raw)[k]
    ):
        item.pop("extraSpec", None)
    queues(raw)["clusterQueues"][1]["flavorFungibility"] = {"whenCanBorrow": "TryNextFlavor"}
    queues(raw)["clusterQueues"][1]["preemption"]["borrowWithinCohort"] = {
        "policy": "LowerPriority"
    }
    queues(raw)["clusterQueues"][1]["admissionScope"] = {"admissionMode": "NoAdmissionFairSharing"}
    queues(raw)["localQueues"][0]["fairSharing"] = {"weight": "2"}
    kinds: set[str] = set()
    for (kind, name), obj in objects(raw).items():
        if kind not in OWNED_SPEC:
            continue
        kinds.add(kind)
        owned = OWNED_SPEC[kind]
        for leaf in _leaves(obj["spec"]):
            assert any(leaf[: len(p)] == p for p in owned), (kind, name, leaf)
    assert kinds == set(OWNED_SPEC)


# --- docs/kueue-queueing.md ----------------------------------------------------------------------


def test_the_docs_example_is_the_staging_stacks_and_its_refusals_are_what_preflight_prints() -> (
    None
):
    page = DOC.read_text()
    marker = (
        "<!-- extraSpec example: the team-a entry of tests/fixtures/staging-extra-spec.yaml -->"
    )
    block = page.split(marker, 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    (entry,) = yaml.safe_load(block)["clusterQueues"]
    assert entry == queues(staging())["clusterQueues"][0]

    quoted = [
        (("clusterQueues", 0), {"flavorFungibility": {"prefrence": "PreemptionOverBorrowing"}}),
        (("clusterQueues", 1), {"stopPolicy": "Paused"}),
        (("clusterQueues", 0), {"cohortName": "org"}),
    ]
    for where, extra in quoted:
        raw = _with_extra(where, extra)
        with pytest.raises(ConfigError) as err:
            parse_fleet(raw)
        lines = [str(err.value.named(i)) for i in err.value.issues]
        assert len(lines) == 1, lines
        assert f"\n{lines[0]}\n" in page, lines[0]


def test_a_topology_on_a_flavor_without_node_labels_is_refused_like_the_crd_does() -> None:
    raw = staging()
    queues(raw)["flavors"].append({"name": "tas", "extraSpec": {"topologyName": "default"}})
    found = issues(raw)
    expected = f"{Q}.flavors[2].extraSpec: topologyName needs at least one node label"
    assert any(t.startswith(expected) for t in found), found
    with_labels = staging()
    queues(with_labels)["flavors"].append(
        {"name": "tas", "nodeLabels": {"zone": "a"}, "extraSpec": {"topologyName": "default"}}
    )
    assert not any(t.startswith(f"{Q}.flavors[2].extraSpec") for t in issues(with_labels))
    cluster = parse_fleet(staging())[0].clusters[0]
    for flavor, refused in (
        (queues(raw)["flavors"][2], True),
        (queues(with_labels)["flavors"][2], False),
    ):
        obj = resource_flavor(FlavorConfig.model_validate(flavor), cluster)
        assert (crdschema.validate(obj, "kueue", "v0.19.2").errors != []) is refused


def test_the_schema_walker_on_the_rules_the_queue_crds_use() -> None:
    """upstream.structural alone, on a schema with each construct (written here, not read)."""
    schema = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "maxLength": 3},
            "weight": {"x-kubernetes-int-or-string": True, "pattern": "^[0-9]+$"},
            "count": {"type": "integer", "format": "int32", "minimum": 0, "default": 1},
            "on": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "checks": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "maybe": {"type": "string", "nullable": True},
        },
    }
    good = {
        "name": "abc",
        "weight": 3,
        "on": True,
        "tags": ["a", "b"],
        "checks": [{"name": "a"}, {"name": "b"}],
        "labels": {"x": "y"},
        "free": {"anything": [1]},
        "maybe": None,
    }
    assert with_defaults(good, schema)["count"] == 1
    assert schema_errors(with_defaults(good, schema), schema) == []
    bad = {
        "weight": "3x",
        "count": 2**31,
        "on": 1,
        "tags": ["a", "a"],
        "checks": [{"name": "a"}, {"name": "a"}],
        "labels": {"x": 1},
        "nmae": "abcd",
    }
    assert sorted(schema_errors(bad, schema)) == sorted(
        [
            (("weight",), "'3x' does not match ^[0-9]+$"),
            (("count",), "2147483648 does not fit a signed 32-bit integer (int32)"),
            (("on",), "must be true or false, not an integer"),
            (("tags", 1), "duplicate entry 'a' (the list is a set)"),
            (("checks", 1), "duplicate entry for list-map key {'name': 'a'} (also at [0])"),
            (("labels", "x"), "must be a string, not an integer"),
            (("nmae",), "unknown field (did you mean 'name'?)"),
            (("name",), "required field missing"),
        ]
    )


def test_a_pattern_reads_as_the_api_server_reads_it_end_of_text_included() -> None:
    """A CRD's pattern is RE2: its `$` is the end of the text. Read with Python's `re` as is, a
    value with a trailing newline would pass preflight and be refused by the API server."""
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"}}}
    assert schema_errors({"name": "abc"}, schema) == []
    [(where, message)] = schema_errors({"name": "abc\n"}, schema)
    assert where == ("name",)
    assert "does not match" in message
    # Go's inline flags after `^` (kruise's CRDs write `^(?i)...`) are not a Python syntax error.
    insensitive = {"type": "string", "pattern": "^(?i)[a-z]+$"}
    assert schema_errors("ABC", insensitive) == []
