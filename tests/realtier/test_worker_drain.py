"""Draining a worker on the dev stack's twin: `multiKueue.drain: [worker-2]` with jobs running on
worker-2 and more submitted to the manager.

The drain is what `pulumi up` of the drained stack changes: the objects the program renders for
the stack with `multiKueue.drain: [worker-2]` that differ from those it renders without (asserted:
worker-2's mirrored LocalQueues, nothing else), applied server-side to the running twin. Then:

- the jobs already running on worker-2 go on and complete there, once each, none evicted;
- jobs submitted to the manager after the drain wait, refused by worker-2 ("LocalQueue ... is
  stopped") while worker-2's autoscaler could still make nodes for them, and complete on
  worker-1 once its autoscaler runs;
- the listing line of docs/operations.md ("Is it empty yet?"), run as written on the manager,
  names worker-2's jobs while they run and nothing once they have finished;
- lifting the drain (the objects rendered without it, applied again) makes worker-2's
  LocalQueues Active again.

Measured times go to the run's report ("real tier: measured").
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from builders.fleet import kueue_objects
from builders.multikueue import multikueue_config
from checks.stack import parse_fleet
from components.retire import blocking, read_workloads
from config.models import FleetConfig
from config.resolve import dispatch_sets
from testkit.realtier.e2e import run_documented
from testkit.realtier.faults import KUEUE_API, condition, get_json
from testkit.realtier.harness import ControlPlane, Report, Tools, apply
from testkit.realtier.kueue import TWIN_WORKER_LOST_TIMEOUT
from testkit.realtier.pulumi_cli import OPERATIONS, section
from testkit.realtier.shared.faults_runtime import (
    MANAGER,
    autoscale,
    completed_once,
    dev_twin,
    queues_active,
    running_pods,
    state,
    submit,
    where,
    workloads,
)
from testkit.realtier.shared.twin_jobs import PODS
from testkit.realtier.twin import submissions
from testkit.realtier.twin_run import (
    JobWatch,
    SimulationTools,
    Twin,
)
from testkit.realtier.wait import until

pytestmark = [pytest.mark.real]

STACK: Final = "dev"
DRAINED: Final = "worker-2"
OTHER: Final = "worker-1"
RUNNING: Final = 2  # jobs running on worker-2 when it is drained
QUEUED: Final = 3  # jobs submitted to the manager after the drain
RUN_FOR: Final = "25s"  # how long the running jobs' pods stay Running (kwok): past the drain
EMPTY_SECTION: Final = "**Is it empty yet?**"


@pytest.fixture
def twin(tools: Tools, simulation: SimulationTools, tmp_path: Path) -> Iterator[Twin]:
    """dev's twin, user pools at minCount, no autoscaler yet (the test says where)."""
    with dev_twin(
        tools, simulation, tmp_path, worker_lost_timeout=TWIN_WORKER_LOST_TIMEOUT
    ) as started:
        yield started


def drained(fleet: FleetConfig, workers: list[str]) -> FleetConfig:
    """The twin's stack with `multiKueue.drain: workers`, validated as a stack file would be."""
    raw: dict[str, Any] = fleet.model_dump(mode="json", by_alias=True, exclude_none=True)
    raw["multiKueue"]["drain"] = workers
    value, _ = parse_fleet(raw, source="twin")
    return value


def changed_objects(before: FleetConfig, after: FleetConfig) -> dict[str, list[dict[str, Any]]]:
    """Per cluster, the queue objects `after` renders differently from `before` (what `up` of
    the edited stack changes among them)."""
    old = {(m.target, m.obj["kind"], str(m.obj["metadata"])): m.obj for m in _all(before)}
    out: dict[str, list[dict[str, Any]]] = {}
    for m in _all(after):
        if old.get((m.target, m.obj["kind"], str(m.obj["metadata"]))) != m.obj:
            out.setdefault(m.target, []).append(m.obj)
    return out


def _all(fleet: FleetConfig) -> list[Any]:
    return [m for objects in kueue_objects(fleet).values() for m in objects]


def local_queue_active(plane: ControlPlane, ns: str, name: str) -> tuple[str | None, str]:
    obj = get_json(plane, f"{KUEUE_API}/namespaces/{ns}/localqueues/{name}")
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "Active":
            return str(c.get("status")), str(c.get("reason"))
    return None, "no Active condition"


# Kueue v0.19.2's words for a Workload whose LocalQueue has a stopPolicy: "inactive" when it
# never had a reservation (pkg/controller/core/workload_controller.go:2085-2086,
# getQueueBlocker), "stopped" when a reservation is cancelled (:1084).
HELD_MESSAGES: Final = ("is inactive", "is stopped")


def refused_by_hold(plane: ControlPlane, ns: str, name: str, seen: set[str] | None = None) -> bool:
    """worker-2's copy of the manager Workload `name` waits because its LocalQueue is held."""
    wl = get_json(plane, f"{KUEUE_API}/namespaces/{ns}/workloads/{name}")
    for c in ((wl or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "QuotaReserved" and c.get("status") == "False":
            message = str(c.get("message"))
            if seen is not None:
                seen.add(message)
            queue = f"LocalQueue {((wl or {}).get('spec') or {}).get('queueName')} "
            return any(message == queue + words for words in HELD_MESSAGES)
    return False


def documented_listing(manager: ControlPlane) -> list[tuple[str, str]]:
    """The listing line of docs/operations.md's drain section, run as written on the manager."""
    body = section(OPERATIONS.read_text(), "## Draining a worker")
    lines = [ln for ln in body.split(EMPTY_SECTION, 1)[1].splitlines() if ln.startswith("kubectl ")]
    assert len(lines) == 1, f"docs/operations.md, {EMPTY_SECTION}: expected one kubectl line"
    out = run_documented(manager, lines[0])
    return [(ns, name) for ns, name in (row.split() for row in out.splitlines() if row)]


def test_drained_worker_finishes_its_jobs_and_gets_no_new_ones(
    twin: Twin, autoscaler: Path, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    manager, drained_plane = (twin.planes[n] for n in (MANAGER, DRAINED))
    # Only worker-2's autoscaler at first: its gate alone opens, the first jobs run there.
    autoscale(twin, autoscaler, DRAINED)
    queues_active(twin)
    [sub] = [s for s in submissions(twin.fleet) if s.dispatched]
    ns = sub.namespace
    running = [f"drain-run-{i}" for i in range(RUNNING)]
    queued = [f"drain-new-{i}" for i in range(QUEUED)]
    watches = {n: JobWatch(twin.planes[n]) for n in (DRAINED, OTHER)}

    def seen() -> str:
        return state(twin, ns, [DRAINED, OTHER])

    try:
        t0 = time.monotonic()
        submit(twin, sub, running, RUN_FOR)
        until(
            lambda: all(len(running_pods(drained_plane, ns, n)) == PODS for n in running),
            120.0,
            f"every first job Running on {DRAINED}",
            seen=seen,
        )
        t_running = time.monotonic() - t0
        on_drained = {w["metadata"]["name"] for w in workloads(manager, ns) if where(w) == DRAINED}
        assert len(on_drained) == RUNNING, seen()
        assert sorted(documented_listing(manager)) == sorted((ns, w) for w in on_drained)
        # What `up` reads before worker-2 may leave MultiKueue (components/retire.py): the same
        # Workloads, as Kueue recorded their admission there.
        guard_sees = blocking(read_workloads(manager.kubeconfig.read_text()), [DRAINED])
        assert guard_sees == {DRAINED: sorted(f"{ns}/{w}" for w in on_drained)}, guard_sees

        # The drain: what `up` of the stack with multiKueue.drain changes, and only that.
        held = drained(twin.fleet, [DRAINED])
        changes = changed_objects(twin.fleet, held)
        assert list(changes) == [DRAINED], changes
        assert {o["kind"] for o in changes[DRAINED]} == {"LocalQueue"}, changes
        t_drain = time.monotonic()
        applied = apply(drained_plane, changes[DRAINED])
        assert not applied.rejected, applied.stderr
        for lq in changes[DRAINED]:
            meta = lq["metadata"]
            until(
                lambda meta=meta: (
                    local_queue_active(drained_plane, meta["namespace"], meta["name"])
                    == ("False", "Stopped")
                ),
                30.0,
                f"[{DRAINED}] LocalQueue {meta['namespace']}/{meta['name']} Active=False Stopped",
                seen=lambda meta=meta: str(
                    local_queue_active(drained_plane, meta["namespace"], meta["name"])
                ),
            )
        t_held = time.monotonic() - t_drain
        still = [n for n in running if len(running_pods(drained_plane, ns, n)) == PODS]
        assert still == running, f"finished before the drain took effect; raise RUN_FOR: {seen()}"

        # New jobs: worker-2's autoscaler runs and has room, but its queue is held.
        submit(twin, sub, queued, "1s")
        names: dict[str, dict[str, Any]] = {}

        def refused() -> bool:
            names.update(
                {
                    w["metadata"]["name"]: w
                    for w in workloads(manager, ns)
                    if w["metadata"]["name"] not in on_drained
                }
            )
            return len(names) == QUEUED and all(
                refused_by_hold(drained_plane, ns, n, held_messages) for n in names
            )

        held_messages: set[str] = set()
        until(
            refused,
            60.0,
            f"every new job's copy on {DRAINED} refused (LocalQueue held: {HELD_MESSAGES})",
            seen=lambda: f"QuotaReserved=False messages there: {sorted(held_messages)}\n{seen()}",
        )
        t_refused = time.monotonic() - t_drain
        # worker-1 takes them once its autoscaler answers its gate.
        autoscale(twin, autoscaler, OTHER)
        until(
            lambda: all(completed_once(twin, ns, n) for n in running + queued),
            180.0,
            "every job completed once",
            seen=seen,
        )
        t_done = time.monotonic()
        finished = {w["metadata"]["name"]: w for w in workloads(manager, ns)}
        assert len(finished) == RUNNING + QUEUED, seen()
        for name, wl in finished.items():
            assert condition(wl, "Finished") == "True", seen()
            assert condition(wl, "Evicted") is None, f"{name} was evicted: {seen()}"
            want = DRAINED if name in on_drained else OTHER
            assert where(wl) == want, f"{name} finished on {where(wl)}, not {want}: {seen()}"
        for name in running:
            assert watches[DRAINED].completed(ns, name), f"{name} not seen completing on {DRAINED}"
            assert not watches[OTHER].completed(ns, name), f"{name} also ran on {OTHER}"
        for name in queued:
            assert watches[OTHER].completed(ns, name), f"{name} not seen completing on {OTHER}"
            assert not watches[DRAINED].completed(ns, name), f"{name} ran on drained {DRAINED}"
        assert documented_listing(manager) == [], "the documented listing still names jobs"
        guard_sees = blocking(read_workloads(manager.kubeconfig.read_text()), [DRAINED])
        assert guard_sees == {}, f"the retire guard would still refuse: {guard_sees}"

        # Lifting the drain: the objects rendered without it give the queues back.
        lifted = changed_objects(held, twin.fleet)
        assert list(lifted) == [DRAINED], lifted
        applied = apply(drained_plane, lifted[DRAINED])
        assert not applied.rejected, applied.stderr
        for lq in lifted[DRAINED]:
            meta = lq["metadata"]
            until(
                lambda meta=meta: (
                    local_queue_active(drained_plane, meta["namespace"], meta["name"])[0] == "True"
                ),
                30.0,
                f"[{DRAINED}] LocalQueue {meta['namespace']}/{meta['name']} Active again",
            )
        t_end = time.monotonic()
    finally:
        for watch in watches.values():
            watch.stop()
    line = (
        f"drain {STACK}: {RUNNING} jobs Running on {DRAINED} after {t_running:.1f}s; drain "
        f"applied (its LocalQueues held) in {t_held:.1f}s; {QUEUED} new jobs refused there "
        f"{t_refused:.1f}s after the drain ({sorted(held_messages)}); all "
        f"{RUNNING + QUEUED} complete once "
        f"{t_done - t_drain:.1f}s after it ({RUNNING} on {DRAINED}, {QUEUED} on {OTHER}), none "
        f"evicted; drain lifted; test {t_end - t0:.0f}s (twin start "
        f"{twin.timings.get('wired', 0.0):.0f}s)"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)


def test_a_worker_leaving_the_multikueue_config_loses_its_running_jobs(
    twin: Twin, autoscaler: Path, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    """Why a drain holds LocalQueues instead: Kueue v0.19.2 evicts on the manager a Workload
    whose worker leaves the MultiKueueConfig, and leaves its copy running there unseen
    (docs/operations.md, "Draining a worker"). Fails once a Kueue release keeps such work, and
    then a drain could leave the config instead."""
    manager, drained_plane = (twin.planes[n] for n in (MANAGER, DRAINED))
    autoscale(twin, autoscaler, DRAINED)
    queues_active(twin)
    [sub] = [s for s in submissions(twin.fleet) if s.dispatched]
    ns, name = sub.namespace, "leave-0"

    def seen() -> str:
        return state(twin, ns, [DRAINED, OTHER])

    t0 = time.monotonic()
    submit(twin, sub, [name], "60s")
    until(
        lambda: len(running_pods(drained_plane, ns, name)) == PODS,
        120.0,
        f"the job Running on {DRAINED}",
        seen=seen,
    )
    t_running = time.monotonic() - t0
    [wl] = workloads(manager, ns)
    assert where(wl) == DRAINED, seen()
    # worker-2 out of every MultiKueueConfig: what removing it from `multiKueue.workers` does.
    [dispatch] = dispatch_sets(twin.fleet)
    others = [w for w in dispatch.workers if w != DRAINED]
    t_leave = time.monotonic()
    applied = apply(manager, [multikueue_config(others, dispatch.name)])
    assert not applied.rejected, applied.stderr
    messages: set[str] = set()

    def evicted() -> bool:
        current = get_json(
            manager, f"{KUEUE_API}/namespaces/{ns}/workloads/{wl['metadata']['name']}"
        )
        for check in ((current or {}).get("status") or {}).get("admissionChecks") or []:
            messages.add(str(check.get("message")))
        # Evicted=True lasts until Kueue reserves quota for it again, which may be before a
        # poll sees it: an Evicted condition at all, and the worker's name reset, say it was.
        return condition(current, "Evicted") is not None and where(current or {}) != DRAINED

    until(
        evicted,
        60.0,
        f"the manager's Workload evicted (clusterName reset) once {DRAINED} left the "
        "MultiKueueConfig",
        seen=seen,
    )
    t_evicted = time.monotonic()
    # Its copy is not deleted: it goes on running on the worker that left.
    assert len(running_pods(drained_plane, ns, name)) == PODS, seen()
    line = (
        f"leave {STACK}: job Running on {DRAINED} after {t_running:.1f}s; {DRAINED} out of "
        f"MultiKueueConfig {dispatch.name}: the manager's Workload evicted "
        f"{t_evicted - t_leave:.1f}s later (check messages seen: {sorted(messages)}), its "
        f"copy still Running on {DRAINED}"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)
