"""Draining a worker (`multiKueue.drain`): no new work, what runs finishes, nothing else moves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from builders.fleet import render_fleet
from checks.stack import parse_fleet
from config.errors import ConfigError
from config.resolve import drained_workers, held_local_queues
from preflight.__main__ import _print_tables  # pyright: ignore[reportPrivateUsage]
from preflight.diff import compare
from preflight.diff_render import render_text
from preflight.plan import build_plan
from preflight.snapshot import Snapshot, snapshot
from preflight.sources import extra_sections
from testkit import crdschema
from testkit.fleetgen import fleet, worker_name
from testkit.shared.preflight_diff import Fleet, edited, section

W1, W2, W3, W4 = (worker_name(i) for i in range(1, 5))


def two_sets(drain: list[str]) -> dict[str, Any]:
    """Manager ClusterQueues batch-1 -> [w1, w2] and batch-2 -> [w3, w4]."""
    raw = fleet(4, per_queue=2, karmada=False)
    raw["multiKueue"]["drain"] = drain
    return raw


def objects(raw: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    value, _ = parse_fleet(raw)
    manifests, _ = render_fleet(value)
    return [(m.target, m.obj) for m in manifests]


def errors(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_fleet(raw)
    return [str(i) for i in info.value.issues if i.severity == "error"]


def local_queues(objs: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    return {
        f"{t}/{o['metadata']['namespace']}/{o['metadata']['name']}": o["spec"]
        for t, o in objs
        if o["kind"] == "LocalQueue"
    }


def test_drain_holds_the_workers_mirrored_queues_and_nothing_else() -> None:
    before, after = objects(two_sets([])), objects(two_sets([W2]))
    held = {"clusterQueue": "team-a", "stopPolicy": "Hold"}
    assert local_queues(after) == {
        **local_queues(before),
        f"{W2}/team-a/batch-1": held,
    }
    # Every other object is the same: its MultiKueueCluster, its kubeconfig Secret, its worker
    # RBAC and token, and its MultiKueueConfig entry (leaving it would evict its work; W2 is
    # already last in its set, where a drained worker goes).
    rest = [(t, o) for t, o in after if o["kind"] != "LocalQueue"]
    assert rest == [(t, o) for t, o in before if o["kind"] != "LocalQueue"]
    configs = {
        o["metadata"]["name"]: o["spec"] for _, o in after if o["kind"] == "MultiKueueConfig"
    }
    assert configs == {
        "multikueue-batch-1": {"clusters": [W1, W2]},
        "multikueue-batch-2": {"clusters": [W3, W4]},
    }
    for _, obj in after:
        if obj["kind"] == "LocalQueue":
            report = crdschema.validate(obj, "kueue", "v0.19.2")
            assert report.errors == [], report.errors


def test_a_drained_worker_is_nominated_last_and_comes_back_in_its_place() -> None:
    """Kueue's Incremental dispatcher nominates in MultiKueueConfig order and waits a 5-minute
    round on each nominee: a drained worker first in its set would cost every new job a round."""

    def clusters(drain: list[str]) -> dict[str, list[str]]:
        return {
            o["metadata"]["name"]: o["spec"]["clusters"]
            for _, o in objects(two_sets(drain))
            if o["kind"] == "MultiKueueConfig"
        }

    assert clusters([W1, W3]) == {
        "multikueue-batch-1": [W2, W1],
        "multikueue-batch-2": [W4, W3],
    }
    assert clusters([]) == {"multikueue-batch-1": [W1, W2], "multikueue-batch-2": [W3, W4]}


def test_drain_resolves_per_worker_in_config_order() -> None:
    value, _ = parse_fleet(two_sets([W3, W2]))
    assert drained_workers(value) == [W3, W2]
    assert held_local_queues(value) == {W3: [("team-a", "batch-2")], W2: [("team-a", "batch-1")]}


def test_undrained_stack_has_no_stop_policy() -> None:
    assert all("stopPolicy" not in spec for spec in local_queues(objects(two_sets([]))).values())


def test_draining_the_last_worker_of_a_set_is_refused_with_the_key_path() -> None:
    assert errors(two_sets([W1, W3, W2])) == [
        f"multiKueue.drain[2]: drains the last worker of dispatch set 'multikueue-batch-1' "
        f"({W1}, {W2}; ClusterQueues batch-1): its queues would dispatch nowhere and every new "
        "job would wait; add a worker to the set first, or keep one undrained"
    ]


def test_drain_names_only_dispatch_workers_once() -> None:
    assert errors(two_sets([W2, "worker-9", W2])) == [
        f"multiKueue.drain[1]: 'worker-9' is not a worker the manager dispatches to "
        f"({W1}, {W2}, {W3}, {W4})",
        f"multiKueue.drain[2]: {W2!r} is listed more than once (first at drain[0])",
    ]


def test_drain_is_a_list_of_names() -> None:
    raw = two_sets([])
    raw["multiKueue"]["drain"] = W2
    assert any(e.startswith("multiKueue.drain:") for e in errors(raw))


# --- preflight: the plan and the diff -------------------------------------------------------------


def drain_worker_2(fleet: Fleet) -> None:
    fleet["multiKueue"]["drain"] = ["worker-2"]


@pytest.fixture(scope="module")
def dev() -> Snapshot:
    return snapshot("dev")


def test_plan_diff_shows_a_drain_and_its_lifting(dev: Snapshot, tmp_path: Path) -> None:
    drained = edited(tmp_path, drain_worker_2)
    diff = compare(dev, drained, ref="main")
    assert [s["title"] for s in diff["sections"]] == ["MultiKueue drain"]
    assert section(diff, "MultiKueue drain") == [
        "worker-2 drained: no new work from multikueue (held: team-a/team-a); "
        "what runs there finishes there"
    ]
    assert "  + worker-2 drained: no new work from multikueue" in render_text(diff)
    lifted = compare(drained, dev, ref="main")
    assert section(lifted, "MultiKueue drain") == ["worker-2 undrained: takes new work again"]


def test_plan_prints_the_drained_worker() -> None:
    value, warnings = parse_fleet(two_sets([W2]))
    sections, _ = extra_sections(value)
    plan = build_plan("bench", value, warnings)
    plan["sections"] = sections
    (drain,) = [s for s in sections if s["title"].startswith("MultiKueue drain")]
    assert drain["rows"] == [
        [
            W2,
            "multikueue-batch-1",
            "team-a/batch-1",
            "finishes there (stays in its MultiKueueConfigs)",
        ]
    ]
    console = Console(record=True, width=250)
    _print_tables(plan, console)
    text = console.export_text()
    assert "MultiKueue drain: no new work, admitted work runs to completion" in text
    row = next(line for line in text.splitlines() if W2 in line and "team-a/batch-1" in line)
    assert "multikueue-batch-1" in row


# --- docs/operations.md shows what preflight prints -----------------------------------------------

OPERATIONS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"


def test_operations_page_quotes_the_diff_and_the_refusal(dev: Snapshot, tmp_path: Path) -> None:
    page = OPERATIONS.read_text()
    diff = compare(dev, edited(tmp_path, drain_worker_2), ref="main")
    (line,) = [ln for ln in render_text(diff).splitlines() if "drained" in ln]
    assert f"MultiKueue drain\n{line}\n" in page

    def drain_both(fleet: Fleet) -> None:
        fleet["multiKueue"]["drain"] = ["worker-1", "worker-2"]

    refused = edited(tmp_path / "both", drain_both)
    assert refused["valid"] is False
    (error,) = refused["errors"]
    assert f"\n{error['path']}: {error['message']}\n" in page


def test_a_drain_under_a_dispatcher_that_ignores_the_order_warns() -> None:
    raw = two_sets([W1])
    raw["kueue"] = {
        **raw.get("kueue", {}),
        "multiKueue": {"dispatcher": "Incremental"},
        "featureGates": {"MultiKueueIncrementalDispatcherRespectConfigOrder": False},
    }
    _, warnings = parse_fleet(raw)
    found = [w for w in warnings if "by name, not in the order" in w.message]
    assert [w.path for w in found] == ["multiKueue.drain"]
