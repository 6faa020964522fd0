"""The Configuration the twin's Kueues actually run is the program's.

The dev twin (testkit/realtier/twin_run.py) starts each cluster's Kueue with the Configuration and
feature gates the program renders for that cluster (builders.kueue manager_config and
feature_gates). Asserted on the running processes, not on the rendered file:

- the manager's Kueue logged, at start, a loaded Configuration that carries the program's
  settings (the dispatcher dev states);
- waitForPodsReady is off on the manager and on (Kueue 0.19's default) on a worker. Kueue's job
  reconciler gives a Workload a `PodsReady` condition (False, `WaitForStart` until admitted) on
  every reconcile when, and only when, waitForPodsReady is on (pkg/controller/jobframework/
  reconciler.go at v0.19.2, step 5). A Job on worker-1 must get one (the control: the mechanism
  works here); a Job dispatched from the manager, reconciled there for at least as long, must
  not. Before the manager got the DisableWaitForPodsReady gate it did, and its 30-minute timeout
  evicted and re-dispatched jobs still starting on a worker.

One job, one scale-up (item 4): on the same twin (both dev workers gated), one Job submitted to
the manager under dev's dispatcher (AllAtOnce, Kueue's default) opens a ProvisioningRequest on
every gated worker of its dispatch set; the manager's Kueue is then restarted with the
`multiKueue` settings prod renders (Incremental, stepSize 1) and one Job opens exactly one: the
manager nominates one worker, only that worker gets a copy, only it asks its autoscaler for
nodes. This fails if prod goes back to AllAtOnce or to a step that nominates more than one.

Cheap: one dev twin for the module, every pool at maxCount, no autoscaler (no ProvisioningRequest
is ever answered, so no Job runs and nothing is admitted on a worker), no engine.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, Final

import pytest

from builders.kueue import feature_gates, manager_config
from builders.multikueue import multikueue_config
from config.resolve import dispatch_sets, with_mirrored_queues
from testkit.realtier.crds import kueue_crd_paths
from testkit.realtier.faults import cluster_active, restart_kueue
from testkit.realtier.harness import ControlPlane, Report, Tools, apply
from testkit.realtier.jobs import suspended_job, workload_of_job
from testkit.realtier.kueue import kueue_binary
from testkit.realtier.twin import load_stack
from testkit.realtier.twin_run import (
    PROVISIONING_API,
    SimulationTools,
    Twin,
    running_twin,
)
from testkit.realtier.wait import holds, until
from upstream.kueue import DISPATCHERS

pytestmark = [pytest.mark.real]

STACK: Final = "dev"
NAMESPACE: Final = "team-a"
QUEUE: Final = "team-a"
KUEUE_API: Final = "/apis/kueue.x-k8s.io/v1beta2"
TIMEOUT: Final = 60.0
POLL: Final = 0.25
# After Incremental's one ProvisioningRequest exists, how long the count is watched to stay one
# (Kueue 0.19.2's next round starts only after 5 minutes).
HELD: Final = 5.0


@pytest.fixture(scope="module")
def twin(
    tools: Tools, simulation: SimulationTools, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Twin]:
    """dev's twin, every pool at maxCount, shared by the module's tests (the last one restarts
    the manager's Kueue with prod's dispatcher)."""
    binary = kueue_binary()
    if binary is None:
        pytest.skip("real tier: kueue not built")
    with running_twin(
        STACK,
        tools,
        simulation,
        kueue_binary=binary,
        kueue_crds=kueue_crd_paths(load_stack(STACK)),
        workdir=tmp_path_factory.mktemp("kueue-config-twin"),
    ) as started:
        yield started


def _job(name: str, dispatched: bool) -> dict[str, Any]:
    requests = {"cpu": "100m", "memory": "64Mi"}
    return suspended_job(name, NAMESPACE, QUEUE, requests, limits=False, dispatched=dispatched)


def _condition(wl: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    conditions: list[dict[str, Any]] = ((wl or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def test_manager_runs_without_wait_for_pods_ready_and_a_worker_with_it(twin: Twin) -> None:
    manager = twin.fleet.manager
    assert manager is not None, "dev has a MultiKueue manager"
    worker = "worker-1"
    rendered = manager_config(twin.fleet.kueue, manager)
    loaded = twin.kueues[manager.name].loaded_configuration()
    assert loaded["multiKueue"]["dispatcherName"] == rendered["multiKueue"]["dispatcherName"], (
        f"the manager's Kueue loaded {loaded.get('multiKueue')}, the program renders "
        f"{rendered.get('multiKueue')}"
    )
    home, remote = twin.planes[manager.name], twin.planes[worker]
    t0 = time.monotonic()
    for plane, name, dispatched in ((home, "mgr-job", True), (remote, "wkr-job", False)):
        applied = apply(plane, [_job(name, dispatched)])
        assert not applied.rejected, f"[{plane.name}] {applied.stderr}"
    # Both Workloads exist and the manager's reserved quota: its job reconciler has run.
    until(
        lambda: (
            (_condition(workload_of_job(home, NAMESPACE, "mgr-job"), "QuotaReserved") or {}).get(
                "status"
            )
            == "True"
        ),
        TIMEOUT,
        f"[{manager.name}] Workload of mgr-job reserves quota",
        seen=lambda: workload_of_job(home, NAMESPACE, "mgr-job"),
        poll=POLL,
    )
    control = until(
        lambda: _condition(workload_of_job(remote, NAMESPACE, "wkr-job"), "PodsReady"),
        TIMEOUT,
        f"[{worker}] Workload of wkr-job gets a PodsReady condition (waitForPodsReady on "
        "there, Kueue's default)",
        seen=lambda: workload_of_job(remote, NAMESPACE, "wkr-job"),
        poll=POLL,
    )
    # Watch the manager at least as long again as the worker took (polled: fails at once).
    holds(
        lambda: _condition(workload_of_job(home, NAMESPACE, "mgr-job"), "PodsReady") is None,
        max(2.0, time.monotonic() - t0),
        f"[{manager.name}] the dispatched job's Workload has no PodsReady condition "
        f"(waitForPodsReady off there; worker control: {control})",
        seen=lambda: workload_of_job(home, NAMESPACE, "mgr-job"),
        poll=POLL,
    )


# ---- one job, one scale-up ---------------------------------------------------------------------


def _gated_workers(twin: Twin, cluster_queue: str) -> list[str]:
    """The workers of `cluster_queue`'s dispatch set whose (mirrored) ClusterQueue of that name
    has a ProvisioningRequest gate, in the set's order."""
    workers = next(s.workers for s in dispatch_sets(twin.fleet) if cluster_queue in s.queues)
    clusters = {c.name: c for c in with_mirrored_queues(twin.fleet).clusters}
    return [
        w
        for w in workers
        if any(
            q.name == cluster_queue and q.provisioning_gate is not None
            for q in clusters[w].queues.cluster_queues
        )
    ]


def _requests_for(plane: ControlPlane, workload: str) -> list[str]:
    """The ProvisioningRequests on `plane` made for (owned by) the Workload `workload`."""
    status, body = plane.get(f"{PROVISIONING_API}/namespaces/{NAMESPACE}/provisioningrequests")
    items: list[dict[str, Any]] = (json.loads(body).get("items") or []) if status == 200 else []
    return [
        str(pr["metadata"]["name"])
        for pr in items
        if any(o.get("name") == workload for o in pr["metadata"].get("ownerReferences") or [])
    ]


def _copy_on(plane: ControlPlane, workload: str) -> bool:
    status, _ = plane.get(f"{KUEUE_API}/namespaces/{NAMESPACE}/workloads/{workload}")
    return status == 200


def _one_job(twin: Twin, job: str, gated: list[str], enough: int) -> tuple[float, str]:
    """Submit `job` to the manager; wait until `enough` gated workers hold a ProvisioningRequest
    for its Workload. Returns (seconds from submit, the manager Workload's name)."""
    manager = twin.fleet.manager
    assert manager is not None
    home = twin.planes[manager.name]
    t0 = time.monotonic()
    applied = apply(home, [_job(job, dispatched=True)])
    assert not applied.rejected, f"[{manager.name}] {applied.stderr}"
    wl_name: str = until(
        lambda: (workload_of_job(home, NAMESPACE, job) or {}).get("metadata", {}).get("name"),
        TIMEOUT,
        f"[{manager.name}] a Workload for {job}",
        seen=lambda: workload_of_job(home, NAMESPACE, job),
        poll=POLL,
    )

    def opened() -> dict[str, list[str]]:
        return {w: _requests_for(twin.planes[w], wl_name) for w in gated}

    until(
        lambda: sum(1 for prs in opened().values() if prs) >= enough,
        TIMEOUT,
        f"ProvisioningRequests for {wl_name} on {enough} of the gated workers {gated}",
        seen=lambda: {
            "requests": opened(),
            "nominated": ((workload_of_job(home, NAMESPACE, job) or {}).get("status") or {}).get(
                "nominatedClusterNames"
            ),
        },
        poll=POLL,
    )
    return time.monotonic() - t0, wl_name


def test_one_job_opens_one_provisioning_request_with_prods_dispatcher(
    twin: Twin, tools: Tools, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    manager = twin.fleet.manager
    assert manager is not None, "dev has a MultiKueue manager"
    home = twin.planes[manager.name]
    kueue = twin.kueues[manager.name]
    gated = _gated_workers(twin, QUEUE)
    assert len(gated) >= 2, f"dev's {QUEUE} reaches {gated} gated workers; the test needs 2+"
    until(
        lambda: all(cluster_active(home, w) == "True" for w in gated),
        TIMEOUT,
        f"[{manager.name}] MultiKueueClusters {gated} Active",
        seen=lambda: {w: cluster_active(home, w) for w in gated},
        poll=POLL,
    )

    # Before: dev's dispatcher, Kueue's default AllAtOnce (dev states it on purpose).
    before = kueue.loaded_configuration()["multiKueue"]["dispatcherName"]
    assert before == DISPATCHERS["AllAtOnce"], (
        f"the baseline needs dev's manager on AllAtOnce; it loaded {before}"
    )
    t_all, wl_all = _one_job(twin, "all-at-once", gated, enough=len(gated))
    opened_all = {w: _requests_for(twin.planes[w], wl_all) for w in gated}
    home.kubectl("delete", "job", "-n", NAMESPACE, "all-at-once", "--wait=false")

    # After: the manager's Kueue restarted with the multiKueue settings prod renders.
    prod = load_stack("prod").kueue.multi_kueue
    settings = twin.fleet.kueue.model_copy(update={"multi_kueue": prod})
    kueue.stop()
    kueue.program_config = manager_config(settings, manager)
    kueue.feature_gates = feature_gates(settings, manager)
    restart = restart_kueue(kueue, tools.openssl)
    loaded = kueue.loaded_configuration()["multiKueue"]
    rendered = kueue.program_config["multiKueue"]
    assert loaded["dispatcherName"] == rendered["dispatcherName"] == DISPATCHERS["Incremental"], (
        f"prod renders {rendered}; the restarted manager loaded {loaded}"
    )
    t_inc, wl_inc = _one_job(twin, "incremental", gated, enough=1)

    def state() -> dict[str, Any]:
        return {
            "requests": {w: _requests_for(twin.planes[w], wl_inc) for w in gated},
            "copies": [w for w in gated if _copy_on(twin.planes[w], wl_inc)],
            "nominated": (
                (workload_of_job(home, NAMESPACE, "incremental") or {}).get("status") or {}
            ).get("nominatedClusterNames"),
        }

    def one_worker() -> bool:
        seen = state()
        with_request = [w for w, prs in seen["requests"].items() if prs]
        return (
            len(with_request) == 1
            and seen["copies"] == with_request
            and seen["nominated"] == with_request
        )

    holds(
        one_worker,
        HELD,
        f"prod's dispatcher: one worker nominated, holding the only copy of {wl_inc} and its "
        f"only ProvisioningRequest (of the gated {gated})",
        seen=state,
        poll=POLL,
    )
    opened_inc = state()["requests"]
    first = [w for w, prs in opened_inc.items() if prs]
    assert first == gated[:1], f"Incremental nominated {first}, not the set's first {gated[:1]}"
    home.kubectl("delete", "job", "-n", NAMESPACE, "incremental", "--wait=false")

    # Worker preference: the set's order is the order Incremental nominates in (Kueue v0.19.2,
    # gate MultiKueueIncrementalDispatcherRespectConfigOrder, beta and on): the program renders
    # the MultiKueueConfig in the config's order, so listing the workers the other way round
    # (clusterQueueWorkers.team-a: [worker-2, worker-1]) makes worker-2 the first choice.
    (config_name,) = [d.name for d in dispatch_sets(twin.fleet) if QUEUE in d.queues]
    preferred = list(reversed(gated))
    reordered = apply(home, [multikueue_config(preferred, config_name)])
    assert not reordered.rejected, reordered.stderr
    t_pref, wl_pref = _one_job(twin, "preferred", gated, enough=1)

    def preferred_only() -> bool:
        seen = {w: _requests_for(twin.planes[w], wl_pref) for w in gated}
        nominated = ((workload_of_job(home, NAMESPACE, "preferred") or {}).get("status") or {}).get(
            "nominatedClusterNames"
        )
        return [w for w, prs in seen.items() if prs] == preferred[:1] == nominated

    holds(
        preferred_only,
        HELD,
        f"the reordered set {preferred}: only {preferred[0]} nominated for {wl_pref}",
        seen=lambda: {
            "requests": {w: _requests_for(twin.planes[w], wl_pref) for w in gated},
            "nominated": (
                (workload_of_job(home, NAMESPACE, "preferred") or {}).get("status") or {}
            ).get("nominatedClusterNames"),
        },
        poll=POLL,
    )
    home.kubectl("delete", "job", "-n", NAMESPACE, "preferred", "--wait=false")
    restored = apply(home, [multikueue_config(gated, config_name)])
    assert not restored.rejected, restored.stderr

    count_all = sum(len(prs) for prs in opened_all.values())
    count_inc = sum(len(prs) for prs in opened_inc.values())
    line = (
        f"one job, {len(gated)} gated workers: AllAtOnce opened {count_all} "
        f"ProvisioningRequests ({opened_all}) in {t_all:.1f}s; prod's Incremental "
        f"(stepSize {rendered.get('incrementalDispatcherConfig', {}).get('stepSize')}, manager "
        f"restarted in {restart:.1f}s) opened {count_inc} ({opened_inc}) in {t_inc:.1f}s, "
        f"still {count_inc} {HELD:.0f}s later; with the set reordered {preferred}, the next "
        f"job's only request was on {preferred[0]} ({t_pref:.1f}s)"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)
