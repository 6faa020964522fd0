"""Faults at run time on the dev stack's twin: a worker lost mid-job, the manager's Kueue killed -9
mid-dispatch. Jobs are submitted to the manager (MultiKueue dispatches them); their pods stay
Running for a while (testkit/realtier/faults.py, timed kwok Stages).

- A worker lost: every job runs on worker-1; worker-1's plane goes (faults.lose_plane). Asserted:
  the manager's MultiKueueCluster worker-1 goes inactive; after `workerLostTimeout` (20s here)
  the manager admits the workloads again and they complete on worker-2; each manager Job
  completes once (succeeded = its completions, its Workload Finished, on worker-2); then
  worker-1 comes back, its MultiKueueCluster is Active again, and nothing runs twice: the
  manager's Jobs and Workloads are unchanged and worker-1 starts no new pod of them.
  Workloads Kueue 0.19.2 evicts but cannot release (their manager Job keeps the lost worker's
  pod counts) get the documented operator step 60 s after the timeout, and are reported.
- Kueue killed: the manager's Kueue gets SIGKILL while it is dispatching a batch of jobs and is
  started again. Asserted: every job completes, each on exactly one worker, none twice.
  A Workload still undispatched 60 s after the restart gets the documented operator step (below),
  and is reported.
- A Workload reserved while no worker answers (the workers frozen, the manager's Kueue
  restarted meanwhile): Kueue 0.19.2 never dispatches it, even once every worker is Active
  again; the documented operator step (an annotation on the Workload) does, and it completes once.
- Destroy with work in the queues is test_pulumi_engine.py's destroy (the real engine, after
  its rotations, with Jobs holding quota on every plane).

Measured times go to the run's report ("real tier: measured").
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from fleetview.verdict import FIX_REDISPATCH
from testkit.realtier.faults import (
    KUEUE_API,
    cluster_active,
    condition,
    freeze_plane,
    get_json,
    kill_kueue,
    lose_plane,
    restart_kueue,
    restore_plane,
    thaw_all,
)
from testkit.realtier.fleetview_cli import fleetview
from testkit.realtier.harness import ControlPlane, Report, Tools
from testkit.realtier.shared.faults_runtime import (
    MANAGER,
    STACK,
    WORKER_LOST_TIMEOUT,
    autoscale,
    completed_once,
    dev_twin,
    job,
    ready_to_dispatch,
    redispatch,
    running_pods,
    state,
    submit,
    where,
    workloads,
)
from testkit.realtier.shared.twin_jobs import PODS
from testkit.realtier.twin import Submission, load_stack
from testkit.realtier.twin_run import (
    JobWatch,
    SimulationTools,
    Twin,
)
from testkit.realtier.wait import until
from upstream.kueue import DISPATCHERS

pytestmark = [pytest.mark.real, pytest.mark.slow]

LOST: Final = "worker-1"
SURVIVOR: Final = "worker-2"
RUN_FOR: Final = "30s"  # how long each pod stays Running (kwok): well past the loss
JOBS: Final = 3
GC_INTERVAL: Final = 10.0  # the tier's multiKueue.gcInterval (testkit/realtier/kueue.py)


@pytest.fixture
def twin(tools: Tools, simulation: SimulationTools, tmp_path: Path) -> Iterator[Twin]:
    """dev's twin, its user pools at minCount: each test starts the real cluster-autoscaler on
    the workers it wants to answer the provisioning gates (`autoscale`)."""
    with dev_twin(tools, simulation, tmp_path) as started:
        yield started


@pytest.fixture
def prod_dispatch_twin(tools: Tools, simulation: SimulationTools, tmp_path: Path) -> Iterator[Twin]:
    """The same twin, its manager's Kueue on the `kueue.multiKueue` settings prod states
    (Incremental, stepSize 1) instead of dev's AllAtOnce."""
    dev = load_stack(STACK)
    prod = load_stack("prod").kueue.multi_kueue
    fleet = dev.model_copy(update={"kueue": dev.kueue.model_copy(update={"multi_kueue": prod})})
    with dev_twin(tools, simulation, tmp_path, fleet) as started:
        yield started


# ---- helpers ---------------------------------------------------------------------------------


STRANDED_AFTER: Final = 60.0  # beyond workerLostTimeout: a Workload not re-admitted is stranded


def release_stranded(manager: ControlPlane, ns: str) -> list[str]:
    """The operator step for Workloads Kueue evicted but cannot release: zero the stale pod
    counts of their manager Job (`kubectl patch job NAME --subresource=status`). Returns the
    Jobs patched."""
    patched: list[str] = []
    for wl in workloads(manager, ns):
        if not (condition(wl, "Evicted") == "True" and condition(wl, "QuotaReserved") == "True"):
            continue
        owner = next(
            (o["name"] for o in wl["metadata"].get("ownerReferences") or [] if o["kind"] == "Job"),
            None,
        )
        obj = job(manager, ns, owner) if owner else None
        if obj is None or not (obj.get("status") or {}).get("active"):
            continue
        manager.kubectl(
            "patch",
            "job",
            str(owner),
            f"--namespace={ns}",
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"active": 0, "ready": 0}}),
        )
        patched.append(str(owner))
    return patched


# ---- a worker lost mid-job -------------------------------------------------------------------


def test_worker_lost_mid_job_is_readmitted_on_the_other_worker(
    twin: Twin, autoscaler: Path, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    manager, lost, survivor = (twin.planes[n] for n in (MANAGER, LOST, SURVIVOR))
    # Only worker-1's autoscaler before the loss: its gate alone opens, every job runs there.
    sub = ready_to_dispatch(twin, autoscaler, LOST)
    ns = sub.namespace
    names = [f"lost-{i}" for i in range(JOBS)]
    watch = JobWatch(survivor)
    try:
        t0 = time.monotonic()
        submit(twin, sub, names, RUN_FOR)
        until(
            lambda: all(len(running_pods(lost, ns, n)) == PODS for n in names),
            120.0,
            f"every job Running on {LOST}",
            seen=lambda: state(twin, ns, [LOST, SURVIVOR]),
        )
        assert not any(running_pods(survivor, ns, n) for n in names)
        t_running = time.monotonic() - t0

        t_loss = time.monotonic()
        lose_plane(lost, twin.kueues[LOST])
        # worker-2's autoscaler from now on: the re-dispatched copies scale its pool up.
        autoscale(twin, autoscaler, SURVIVOR)
        until(
            lambda: cluster_active(manager, LOST) == "False",
            60.0,
            f"MultiKueueCluster {LOST} inactive",
        )
        t_inactive = time.monotonic()

        # Not before workerLostTimeout: the manager waits for the worker to come back.
        def readmitted() -> bool:
            return all(where(w) == SURVIVOR for w in workloads(manager, ns))

        stranded: list[str] = []
        try:
            until(
                readmitted,
                WORKER_LOST_TIMEOUT + STRANDED_AFTER,
                f"every workload admitted again on {SURVIVOR}",
            )
            t_readmitted = time.monotonic()
        except AssertionError:
            # Kueue 0.19.2: an evicted Workload keeps its quota until its Job has no active
            # pods, and the manager's Job still counts those the lost worker last reported
            # (docs/operations.md, "When things go wrong"). The operator step, as documented:
            stranded = release_stranded(manager, ns)
            until(
                readmitted,
                120.0,
                f"every workload admitted again on {SURVIVOR} after the operator step",
                seen=lambda: f"stranded {stranded}; " + state(twin, ns, [SURVIVOR]),
            )
            t_readmitted = time.monotonic()
        assert t_readmitted - t_loss >= WORKER_LOST_TIMEOUT, "re-admitted before the timeout"
        until(
            lambda: all(completed_once(twin, ns, n) for n in names),
            180.0,
            f"every job completed once on {SURVIVOR}",
            seen=lambda: state(twin, ns, [SURVIVOR]),
        )
        t_complete = time.monotonic()
        for name in names:
            assert watch.completed(ns, name), f"{name} was not seen completing on {SURVIVOR}"
        finished = {
            w["metadata"]["name"]: where(w)
            for w in workloads(manager, ns)
            if condition(w, "Finished") == "True"
        }
        assert len(finished) == JOBS, finished
        assert set(finished.values()) == {SURVIVOR}, finished

        # worker-1 comes back: nothing of the jobs may run there again.
        t_back = time.monotonic()
        restore_plane(lost, twin.kueues[LOST])
        until(
            lambda: cluster_active(manager, LOST) == "True",
            120.0,
            f"MultiKueueCluster {LOST} Active again",
        )
        t_active = time.monotonic()
        before = {w["metadata"]["name"]: where(w) for w in workloads(manager, ns)}
        settle_until = time.monotonic() + GC_INTERVAL + 10.0
        while time.monotonic() < settle_until:
            for name in names:
                # kwok's delayed completions of the frozen pods fire now: those pods may finish,
                # but no new pod may start on worker-1, and the manager must not count them.
                assert completed_once(twin, ns, name), f"{name}: the manager's Job changed"
            time.sleep(1.0)
        after = {w["metadata"]["name"]: where(w) for w in workloads(manager, ns)}
        assert after == before, f"manager Workloads changed after {LOST} returned"
        leftover = [n for n in names if job(lost, ns, n) is not None]
        t_end = time.monotonic()
    finally:
        watch.stop()
    line = (
        f"faults {STACK}: {LOST} lost with {JOBS} jobs x {PODS} pods running ({RUN_FOR} each, "
        f"workerLostTimeout {WORKER_LOST_TIMEOUT:.0f}s): running after {t_running:.1f}s; "
        f"MultiKueueCluster inactive {t_inactive - t_loss:.1f}s after the loss; re-admitted on "
        f"{SURVIVOR} {t_readmitted - t_loss:.1f}s after"
        + (f" (stranded until the operator step: {stranded})" if stranded else "")
        + f"; all completed {t_complete - t_loss:.1f}s "
        f"after; {LOST} Active again {t_active - t_back:.1f}s after it returned; its copies left "
        f"{GC_INTERVAL + 10:.0f}s later: {leftover or 'none'}; test {t_end - t0:.0f}s"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)


# ---- the manager's Kueue killed mid-dispatch -------------------------------------------------


def test_manager_kueue_killed_mid_dispatch_loses_and_repeats_nothing(
    twin: Twin, autoscaler: Path, tools: Tools, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    manager = twin.planes[MANAGER]
    workers = {n: twin.planes[n] for n in (LOST, SURVIVOR)}
    sub = ready_to_dispatch(twin, autoscaler, *workers)
    ns = sub.namespace
    names = [f"kill-{i}" for i in range(6)]
    watches = {n: JobWatch(p) for n, p in workers.items()}
    try:
        t0 = time.monotonic()
        submit(twin, sub, names, "5s")
        # Mid-dispatch: the first copy reached a worker, not all jobs are admitted yet.
        until(
            lambda: any(job(p, ns, n) for p in workers.values() for n in names),
            60.0,
            "a first job copied to a worker",
        )
        admitted = sum(1 for w in workloads(manager, ns) if condition(w, "Admitted") == "True")
        t_kill = time.monotonic()
        kill_kueue(twin.kueues[MANAGER])
        restart = restart_kueue(twin.kueues[MANAGER], tools.openssl)
        stranded: list[str] = []
        try:
            until(
                lambda: all(completed_once(twin, ns, n) for n in names),
                STRANDED_AFTER,
                "every job completed once after the restart",
            )
            t_done = time.monotonic()
        except AssertionError:
            # A Workload the restarted Kueue reconciled before it had connected to any worker
            # is never dispatched (the test below makes it happen every time;
            # docs/operations.md, "When things go wrong"). The operator step, as documented:
            stranded = undispatched(manager, workers, ns)
            listed = redispatch(manager)
            assert listed == [(ns, n) for n in stranded], (
                f"the documented listing found {listed}, not {stranded}"
            )
            until(
                lambda: all(completed_once(twin, ns, n) for n in names),
                120.0,
                "every job completed once after the restart and the operator step",
                seen=lambda: f"stranded {stranded}; " + state(twin, ns, list(workers)),
            )
            t_done = time.monotonic()
        ran_on = {n: [w for w, watch in watches.items() if watch.completed(ns, n)] for n in names}
        twice = {n: ws for n, ws in ran_on.items() if len(ws) != 1}
        assert not twice, f"jobs not completed on exactly one worker: {twice}"
    finally:
        for watch in watches.values():
            watch.stop()
    line = (
        f"faults {STACK}: manager Kueue killed -9 {t_kill - t0:.1f}s after {len(names)} jobs "
        f"were submitted ({admitted} admitted then); ready again in {restart:.1f}s; every job "
        f"completed once, {t_done - t_kill:.1f}s after the kill"
        + (f" (undispatched until the operator step: {stranded})" if stranded else "")
        + "; per worker: "
        + ", ".join(f"{w} {sum(1 for ws in ran_on.values() if w in ws)}" for w in workers)
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)


# ---- a Workload reserved while no worker answers ---------------------------------------------

RECONCILED: Final = 10.0  # after the restart: the new Kueue has read every Workload once
HELD: Final = 30.0  # every worker back and Active, and still no copy: stranded


def undispatched(manager: ControlPlane, workers: dict[str, ControlPlane], ns: str) -> list[str]:
    """Manager Workloads that hold quota and were never dispatched: QuotaReserved, not Admitted
    nor Finished, no worker in status.clusterName, every admission check Pending, and no copy
    (same name) on any worker."""
    found: list[str] = []
    for wl in workloads(manager, ns):
        checks = (wl.get("status") or {}).get("admissionChecks") or []
        if (
            condition(wl, "QuotaReserved") != "True"
            or "True" in (condition(wl, "Admitted"), condition(wl, "Finished"))
            or where(wl)
            or not checks
            or any(c.get("state") != "Pending" for c in checks)
        ):
            continue
        name = wl["metadata"]["name"]
        path = f"{KUEUE_API}/namespaces/{ns}/workloads/{name}"
        if not any(get_json(plane, path) for plane in workers.values()):
            found.append(name)
    return found


@dataclass(frozen=True)
class Stranded:
    sub: Submission
    workers: dict[str, ControlPlane]
    restart: float  # seconds the manager's restarted Kueue took to be ready
    log_offset: int  # where the restarted Kueue's log starts in its kueue.log


def _strand(twin: Twin, autoscaler: Path, tools: Tools, name: str) -> Stranded:
    """The stranding both dispatchers are judged on: the workers freeze, Job `name` gets quota on
    the manager, the manager's Kueue is killed and restarted while no worker answers. The
    workers stay frozen (the caller thaws them)."""
    manager = twin.planes[MANAGER]
    workers = {n: twin.planes[n] for n in (LOST, SURVIVOR)}
    sub = ready_to_dispatch(twin, autoscaler, *workers)
    for worker, plane in workers.items():
        freeze_plane(plane, twin.kueues[worker])
    submit(twin, sub, [name], "5s")
    until(
        lambda: any(
            condition(w, "QuotaReserved") == "True" for w in workloads(manager, sub.namespace)
        ),
        60.0,
        "the Job's Workload holds quota on the manager",
    )
    kueue = twin.kueues[MANAGER]
    kill_kueue(kueue)
    offset = (kueue.workdir / "kueue.log").stat().st_size
    restart = restart_kueue(kueue, tools.openssl)
    return Stranded(sub, workers, restart, offset)


# fleetview's --stranded-after: under HELD, so the stranded Workload's workers have been Active
# longer than the grace when the test asks.
FLEETVIEW_GRACE: Final = "20"


def _fleetview_says_stranded(twin: Twin, ns: str, job: str) -> str:
    """What an on-call person runs on the stranded Job: `why` calls it stranded and gives the
    documented step, `status` warns of it; one line of what they said."""
    options = ("--json", "--timings-from", STACK, "--stranded-after", FLEETVIEW_GRACE)
    why, _ = fleetview(twin.planes, "why", f"{ns}/{job}", *options)
    assert why.returncode == 0, why.stderr
    answer = json.loads(why.stdout)
    assert answer["state"] == "stranded", answer
    assert FIX_REDISPATCH in answer["verdict"], answer["verdict"]
    status, _ = fleetview(twin.planes, "status", *options)
    assert status.returncode == 0, status.stderr
    warned = [w for w in json.loads(status.stdout)["warnings"] if job in w["object"]]
    assert [w["kind"] for w in warned] == ["Undispatched"], warned
    assert "nominated to no worker and no copy on any" in warned[0]["message"], warned
    return f"why {answer['state']}, status {warned[0]['kind']} on {warned[0]['cluster']}"


def test_a_workload_reserved_while_no_worker_answers_is_dispatched_after_the_operator_step(
    twin: Twin, autoscaler: Path, tools: Tools, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kueue 0.19.2's AllAtOnce dispatcher nominates the workers it is connected to at that moment
    (`nominateAndSynchronizeWorkers`, pkg/controller/admissionchecks/multikueue/workload.go): a
    Workload it reconciles while none is connected gets no copy and no requeue, and later
    connections requeue only Workloads that have a copy. Made deterministic here: the workers
    freeze, a Job gets quota on the manager, the manager's Kueue restarts (its first reconcile
    finds no worker connected), the workers come back. Asserted: the Workload stays undispatched
    with every worker Active (the defect; if a Kueue release fixes it this fails, and the documented
    step can go), then the documented step dispatches it and the Job completes once."""
    manager = twin.planes[MANAGER]
    name = "unanswered-0"
    control = "control-0"
    t0 = time.monotonic()
    stranded_case = _strand(twin, autoscaler, tools, name)
    sub, workers, restart = stranded_case.sub, stranded_case.workers, stranded_case.restart
    ns = sub.namespace
    time.sleep(RECONCILED)
    thaw_all(workers.values(), [twin.kueues[w] for w in workers])
    t_thawed = time.monotonic()
    watches = {n: JobWatch(p) for n, p in workers.items()}
    try:
        until(
            lambda: all(cluster_active(manager, w) == "True" for w in workers),
            180.0,
            "every MultiKueueCluster Active again",
        )
        t_active = time.monotonic()
        # The control: a Job submitted now is dispatched and completes (the workers are
        # connected, not just marked Active), while the first stays undispatched.
        submit(twin, sub, [control], "5s")
        held_until = time.monotonic() + HELD
        stranded: list[str] = []
        while time.monotonic() < held_until or not completed_once(twin, ns, control):
            stranded = undispatched(manager, workers, ns)
            assert stranded, (
                "Kueue dispatched the Workload by itself: the stranding docs/operations.md "
                "describes did not happen (fixed upstream?); seen: "
                + state(twin, ns, list(workers))
            )
            assert time.monotonic() < held_until + 120.0, "the control Job did not complete: " + (
                state(twin, ns, list(workers))
            )
            time.sleep(1.0)
        t_control = time.monotonic()
        told = _fleetview_says_stranded(twin, ns, name)
        t_step = time.monotonic()
        listed = redispatch(manager)
        assert listed == [(ns, n) for n in stranded], (
            f"the documented listing found {listed}, not {stranded}"
        )
        until(
            lambda: completed_once(twin, ns, name),
            120.0,
            "the Job completed once after the operator step",
            seen=lambda: state(twin, ns, list(workers)),
        )
        t_done = time.monotonic()
        ran_on = [w for w, watch in watches.items() if watch.completed(ns, name)]
        assert len(ran_on) == 1, f"{name} completed on {ran_on}, not on exactly one worker"
    finally:
        for watch in watches.values():
            watch.stop()
    line = (
        f"faults {STACK}: a Workload reserved while no worker answered, the manager's Kueue "
        f"restarted (ready in {restart:.1f}s): every worker Active {t_active - t_thawed:.1f}s "
        f"after they returned; a Job submitted then completed, and the Workload was still "
        f"undispatched {t_control - t_active:.0f}s later ({stranded}); "
        f"fleetview: {told}; "
        f"after the operator step the Job completed once on {ran_on[0]} in "
        f"{t_done - t_step:.1f}s; test {time.monotonic() - t0:.0f}s"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)


# ---- the same stranding, with prod's dispatcher ------------------------------------------------

NOT_CONNECTED: Final = "no remote client for nominated cluster"  # Kueue's error (kueue#11668)
RETRIES_WHILE_FROZEN: Final = 3  # errors the restarted Kueue logs before the workers come back
HEALS_WITHIN: Final = 180.0  # from the workers' return to the Job complete, no person involved


def _log_from(kueue_log: Path, offset: int) -> str:
    with kueue_log.open("rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")


def test_prods_incremental_dispatcher_dispatches_a_workload_reserved_while_no_worker_answers(
    prod_dispatch_twin: Twin,
    autoscaler: Path,
    tools: Tools,
    report: Report,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The stranding above, with the manager on prod's Incremental dispatcher.
    Incremental keeps its nominations in `status.nominatedClusterNames`, and MultiKueue returns
    an error for a nominated worker it has no client for (kueue#11668, in 0.19.2), so the
    Workload is retried with controller-runtime's per-item backoff instead of being dropped.
    Asserted: the restarted Kueue hits that error while the workers are frozen (so the case is
    the stranding one); once the workers are back, the Workload is dispatched and its Job
    completes once, on one worker, with no operator step."""
    twin = prod_dispatch_twin
    kueue = twin.kueues[MANAGER]
    dispatcher = kueue.loaded_configuration()["multiKueue"]
    assert dispatcher.get("dispatcherName") == DISPATCHERS["Incremental"], dispatcher
    manager = twin.planes[MANAGER]
    name = "unanswered-inc-0"
    t0 = time.monotonic()
    stranded_case = _strand(twin, autoscaler, tools, name)
    sub, workers, restart = stranded_case.sub, stranded_case.workers, stranded_case.restart
    ns = sub.namespace
    log_path, offset = kueue.workdir / "kueue.log", stranded_case.log_offset
    until(
        lambda: _log_from(log_path, offset).count(NOT_CONNECTED) >= RETRIES_WHILE_FROZEN,
        60.0,
        f"the restarted Kueue retries the Workload {RETRIES_WHILE_FROZEN}x while no worker "
        f"answers ('{NOT_CONNECTED}' in its log)",
        seen=lambda: _log_from(log_path, offset)[-3000:],
    )
    nominated = [
        (w["metadata"]["name"], (w.get("status") or {}).get("nominatedClusterNames"))
        for w in workloads(manager, ns)
    ]
    thaw_all(workers.values(), [twin.kueues[w] for w in workers])
    t_thawed = time.monotonic()
    watches = {n: JobWatch(p) for n, p in workers.items()}
    try:
        until(
            lambda: all(cluster_active(manager, w) == "True" for w in workers),
            180.0,
            "every MultiKueueCluster Active again",
        )
        t_active = time.monotonic()
        until(
            lambda: completed_once(twin, ns, name),
            HEALS_WITHIN,
            f"the Job completed once with no operator step, {HEALS_WITHIN:.0f}s after the "
            "workers returned",
            seen=lambda: state(twin, ns, list(workers)),
        )
        t_done = time.monotonic()
        ran_on = [w for w, watch in watches.items() if watch.completed(ns, name)]
        assert len(ran_on) == 1, f"{name} completed on {ran_on}, not on exactly one worker"
    finally:
        for watch in watches.values():
            watch.stop()
    retries = _log_from(log_path, offset).count(NOT_CONNECTED)
    line = (
        f"faults {STACK}, prod's dispatcher (Incremental): a Workload reserved while no worker "
        f"answered, the manager's Kueue restarted (ready in {restart:.1f}s), nominations "
        f"{nominated}; every worker Active {t_active - t_thawed:.1f}s after they returned; the "
        f"Job completed once on {ran_on[0]} {t_done - t_thawed:.1f}s after they returned, no "
        f"operator step ({retries} retries logged); test {time.monotonic() - t0:.0f}s"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)
