"""Retiring a MultiKueue worker: the RetireGuard on the manager (components/retire.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pulumi.runtime import rpc

from checks.multikueue import check_force_retire
from checks.stack import parse_fleet
from components import retire
from components.retire import (
    RetireGuardProvider,
    blocking,
    blocking_links,
    leaving,
    leaving_links,
    refusal,
)
from config.errors import ConfigError
from preflight.diff import _retire, compare  # pyright: ignore[reportPrivateUsage]
from preflight.diff_render import render_text
from preflight.snapshot import snapshot
from testkit.fleetgen import fleet, worker_name
from testkit.mocks import Graph, run_program
from testkit.shared.multikueue_component import MKCONFIG, build, urn_of
from testkit.shared.preflight_diff import Fleet, edited, flags, section
from upstream.kueue import admitted_worker

ROOT = Path(__file__).resolve().parent.parent
GUARD = "pulumi-python:dynamic:Resource"


def workload(
    name: str, worker: str | None, finished: bool = False, check: str | None = None
) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": []}
    if worker is not None:
        status["clusterName"] = worker
    if check is not None:  # its dispatch set's MultiKueue check, as Kueue lists it
        status["admissionChecks"] = [{"name": check, "state": "Ready"}]
    if finished:
        status["conditions"].append({"type": "Finished", "status": "True"})
    return {"metadata": {"namespace": "team-a", "name": name}, "status": status}


def test_a_workload_is_on_the_worker_its_cluster_name_says_until_it_finishes() -> None:
    assert admitted_worker(workload("a", "worker-2")) == "worker-2"
    assert admitted_worker(workload("b", "worker-2", finished=True)) is None
    assert admitted_worker(workload("c", None)) is None  # pending, or evicted (field reset)
    assert admitted_worker({"metadata": {}}) is None


def test_blocking_names_only_the_leaving_workers_unfinished_workloads() -> None:
    found = blocking(
        [
            workload("run-2", "worker-2"),
            workload("run-1", "worker-2"),
            workload("done", "worker-2", finished=True),
            workload("elsewhere", "worker-1"),
            workload("pending", None),
        ],
        ["worker-2", "worker-3"],
    )
    assert found == {"worker-2": ["team-a/run-1", "team-a/run-2"]}


def test_leaving_is_old_minus_new_minus_force_retire() -> None:
    olds = {"workers": ["worker-1", "worker-2", "worker-3"]}
    assert leaving(olds, {"workers": ["worker-1"], "forceRetire": ["worker-3"]}) == ["worker-2"]
    assert leaving(olds, {"workers": ["worker-3", "worker-2", "worker-1"]}) == []
    assert leaving({}, {"workers": ["worker-1"]}) == []  # created: nothing leaves


def test_the_refusal_names_the_workloads_the_drain_step_and_the_override() -> None:
    text = refusal({"worker-2": [f"team-a/job-{i}" for i in range(12)]})
    assert "worker-2: 12 Workload(s)" in text
    assert "team-a/job-0" in text
    assert "and 2 more" in text
    assert "multiKueue.drain: [worker-2]" in text
    assert "multiKueue.forceRetire: [worker-2]" in text
    assert "Nothing was changed or deleted" in text


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The provider's live reads, answered with one Workload admitted on worker-2."""
    seen: list[str] = []

    def read(kubeconfig: str) -> list[dict[str, Any]]:
        seen.append(kubeconfig)
        return [workload("run", "worker-2"), workload("old", "worker-1", finished=True)]

    monkeypatch.setattr(retire, "read_workloads", read)
    return seen


OLD = {"workers": ["worker-1", "worker-2"], "forceRetire": [], "kubeconfig": "kc"}


def test_update_refuses_a_leaving_worker_with_work(reads: list[str]) -> None:
    with pytest.raises(RuntimeError, match=r"worker-2: 1 Workload\(s\) .*team-a/run"):
        RetireGuardProvider().update("id", OLD, {**OLD, "workers": ["worker-1"]})
    assert reads == ["kc"]


def test_update_lets_an_empty_or_forced_worker_go(reads: list[str]) -> None:
    provider = RetireGuardProvider()
    news = {**OLD, "workers": ["worker-2"]}  # worker-1 leaves: nothing runs there
    assert provider.update("id", OLD, news).outs == news
    forced = {**OLD, "workers": ["worker-1"], "forceRetire": ["worker-2"]}
    assert provider.update("id", OLD, forced).outs == forced
    assert reads == ["kc"]  # the forced one read nothing


def test_no_read_unless_a_worker_leaves(reads: list[str]) -> None:
    provider = RetireGuardProvider()
    news = {**OLD, "workers": ["worker-1", "worker-2", "worker-3"], "kubeconfig": "new"}
    assert provider.diff("id", OLD, news).changes
    provider.update("id", OLD, news)
    assert not provider.diff("id", OLD, dict(OLD)).changes
    provider.delete("id", OLD)  # destroy: deleting everything is what was asked
    assert reads == []


def test_an_unreadable_manager_fails_with_what_was_not_done() -> None:
    with pytest.raises(RuntimeError, match="nothing was changed or deleted"):
        retire.read_workloads("apiVersion: v1\nkind: Config\nclusters: []\n")


def test_every_multikueue_config_waits_for_the_guard(graph: Graph) -> None:
    def program() -> Any:
        return build(manager_kubeconfig="manager-kubeconfig", force_retire=("worker-9",))

    built = run_program(program)
    assert built.manager.guard is not None
    guard_urn = urn_of(built.manager.guard)
    (guard,) = graph.of_type(GUARD)
    assert guard.urn == guard_urn
    assert guard.inputs["workers"] == ["worker-1", "worker-2"]
    assert guard.inputs["forceRetire"] == ["worker-9"]
    assert rpc.is_rpc_secret(guard.inputs["kubeconfig"])
    assert "kubeconfig" in guard.additional_secret_outputs
    configs = graph.of_type(MKCONFIG)
    assert configs
    for config in configs:
        assert guard_urn in config.dependencies, config.name


def test_no_guard_without_the_managers_kubeconfig(graph: Graph) -> None:
    built = run_program(build)
    assert built.manager.guard is None
    assert graph.of_type(GUARD) == []


def test_the_program_does_not_import_the_kubernetes_client_at_start() -> None:
    code = (
        "import sys, components.fleet, components.retire; "
        "print(sorted(m for m in sys.modules if m == 'kubernetes' or m.startswith('kubernetes.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


def with_multikueue(**settings: Any) -> dict[str, Any]:
    raw = fleet(3, karmada=False, split=False)
    raw["multiKueue"] = {**raw["multiKueue"], **settings}
    return raw


def test_force_retire_of_a_worker_still_linked_is_refused_with_its_key_path() -> None:
    gone, linked = worker_name(9), worker_name(1)
    parsed, _ = parse_fleet(with_multikueue(forceRetire=[gone]), source="test")
    assert list(check_force_retire(parsed)) == []
    with pytest.raises(ConfigError) as info:
        parse_fleet(with_multikueue(forceRetire=[gone, linked]), source="test")
    assert [str(i) for i in info.value.issues if i.severity == "error"] == [
        f"multiKueue.forceRetire[1]: {linked!r} is still a worker the manager dispatches to: "
        "forceRetire is for a worker removed in the same change (a dead one); take it out of "
        "forceRetire"
    ]


def test_the_offline_diff_says_up_will_read_the_manager_and_that_it_cannot(
    tmp_path: Path,
) -> None:
    def out_of_multikueue(raw: Fleet) -> None:
        raw["multiKueue"]["workers"] = ["worker-1"]

    def forced(raw: Fleet) -> None:
        out_of_multikueue(raw)
        raw["multiKueue"]["forceRetire"] = ["worker-2"]

    base = snapshot("dev")
    diff = compare(base, edited(tmp_path / "a", out_of_multikueue), ref="main")
    assert section(diff, "MultiKueue retire") == [
        "worker-2 leaves MultiKueue: `pulumi up` first reads the manager and refuses while "
        "Workloads are admitted there (not read here: drain it and run the listing in "
        "docs/operations.md)"
    ]
    assert ("worker-2", "live check at up") in flags(diff)
    diff = compare(base, edited(tmp_path / "b", forced), ref="main")
    (text,) = section(diff, "MultiKueue retire")
    assert text.startswith("worker-2 leaves MultiKueue, forced (multiKueue.forceRetire)")


OPERATIONS = ROOT / "docs" / "operations.md"


def test_operations_page_quotes_the_diff_the_refusal_and_the_key_path_error(
    tmp_path: Path,
) -> None:
    page = OPERATIONS.read_text()

    def retire_worker_2(raw: Fleet) -> None:
        raw["clusters"] = [c for c in raw["clusters"] if c["name"] != "worker-2"]
        for app in raw["karmada"]["applications"]:
            app["propagation"]["weights"].pop("worker-2", None)

    diff = compare(snapshot("dev"), edited(tmp_path, retire_worker_2), ref="main")
    (line,) = [ln for ln in render_text(diff).splitlines() if "leaves MultiKueue" in ln]
    assert f"MultiKueue retire\n{line}\n" in page
    shown = refusal({"worker-2": ["team-a/job-7b2xk", "team-a/job-q9d4m"]})
    assert f"\n{shown}\n" in page
    with pytest.raises(ConfigError) as info:
        parse_fleet(with_multikueue(forceRetire=[worker_name(2)]), source="test")
    (error,) = [str(i) for i in info.value.issues if i.severity == "error"]
    assert error.replace(worker_name(2), "worker-2").split(" ...")[0][:80] in page


# --- a worker leaving one dispatch set while another keeps it -------------------------------

LINKED = {
    "workers": ["worker-1", "worker-2"],
    "links": {"multikueue": ["worker-1", "worker-2"], "gpu": ["worker-2"]},
    "forceRetire": [],
    "kubeconfig": "kc",
}


def test_leaving_links_are_the_pairs_one_set_drops_even_when_another_keeps_the_worker() -> None:
    news = {**LINKED, "links": {"multikueue": ["worker-1"], "gpu": ["worker-2"]}}
    assert leave(news) == [("multikueue", "worker-2")]
    assert leaving(LINKED, news) == []  # by workers alone nothing leaves: only links see it
    forced = {**news, "forceRetire": ["worker-2"]}
    assert leave(forced) == []
    # Out of every set: the worker leaves as a whole, as the whole-worker message says.
    gone = {**LINKED, "workers": ["worker-1"], "links": {"multikueue": ["worker-1"]}}
    assert leave(gone) == [(None, "worker-2")]
    # State from before the guard knew sets: whole workers, as before.
    assert leaving_links({"workers": ["worker-1", "worker-2"]}, news) == []
    assert leaving_links({"workers": ["worker-1", "worker-2"]}, {"workers": ["worker-1"]}) == [
        (None, "worker-2")
    ]


def leave(news: dict[str, Any]) -> list[tuple[str | None, str]]:
    return leaving_links(LINKED, news)


def test_blocking_links_judge_the_set_a_workload_was_dispatched_through() -> None:
    workloads = [
        workload("cpu-run", "worker-2", check="multikueue"),
        workload("gpu-run", "worker-2", check="gpu"),
        workload("cpu-done", "worker-2", finished=True, check="multikueue"),
    ]
    found = blocking_links(workloads, [("multikueue", "worker-2")])
    assert found == {"worker-2 (dispatch set multikueue)": ["team-a/cpu-run"]}
    assert blocking_links(workloads, [("gpu", "worker-1")]) == {}
    # A Workload that lists no check is held for any set of its worker (the safe reading).
    unknown = [workload("unknown", "worker-2")]
    assert blocking_links(unknown, [("gpu", "worker-2")]) == {
        "worker-2 (dispatch set gpu)": ["team-a/unknown"]
    }


def test_update_refuses_dropping_a_worker_from_one_set_while_that_sets_work_runs_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running = [workload("cpu-run", "worker-2", check="multikueue")]
    monkeypatch.setattr(retire, "read_workloads", lambda _kc: running)
    provider = RetireGuardProvider()
    news = {**LINKED, "links": {"multikueue": ["worker-1"], "gpu": ["worker-2"]}}
    assert provider.diff("id", LINKED, news).changes
    with pytest.raises(
        RuntimeError, match=r"worker-2 \(dispatch set multikueue\): 1 Workload"
    ) as err:
        provider.update("id", LINKED, news)
    # The way out names the worker, as the keys it is written under take it.
    assert "multiKueue.drain: [worker-2]" in str(err.value)
    # The gpu set's work on worker-2 does not hold the multikueue set's change.
    running[:] = [workload("gpu-run", "worker-2", check="gpu")]
    assert provider.update("id", LINKED, news).outs == news


def test_the_program_gives_the_guard_each_sets_workers(graph: Graph) -> None:
    run_program(lambda: build(manager_kubeconfig="manager-kubeconfig"))
    (guard,) = graph.of_type(GUARD)
    links = guard.inputs["links"]
    assert links
    assert all(isinstance(w, list) and w for w in links.values())
    assert set(guard.inputs["workers"]) == {w for ws in links.values() for w in ws}


def test_the_offline_diff_names_a_worker_leaving_one_queues_dispatch() -> None:
    base = {"dispatch": {"team-a": ["worker-1", "worker-2"], "team-b": ["worker-2"]}}
    head = {"dispatch": {"team-a": ["worker-1"], "team-b": ["worker-2"]}, "forceRetire": []}
    (found,) = _retire(base, head)
    assert found["key"] == "worker-2 from team-a"
    assert "leaves the dispatch of team-a" in found["text"]
    assert found["flag"] == "live check at up"
