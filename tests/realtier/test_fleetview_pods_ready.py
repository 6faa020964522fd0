"""fleetview on the real Kueue: a job whose pods never get ready within a worker's waitForPodsReady
timeout, dispatched from the manager and queued on the worker itself, through the eviction and the
requeue backoff; `why`'s verdict and `status`'s warnings.

The twin: dev's fleet (a manager dispatching team-a to two gated workers of 16 CPU each, their
user pools at minCount, the real cluster-autoscaler on worker-1 only) whose workers run a short
waitForPodsReady, set through the stack's own key `kueue.configuration.waitForPodsReady` (20 s,
requeuingStrategy backoff 25 s, backoffLimitCount 1) so each Kueue runs what the program renders
for such a stack (builders/kueue.py; the manager's stays off, as the program keeps it). The same
fleet is written as a stack file, `Pulumi.podsready.yaml` outside the project, and fleetview
reads its timings from it (`--timings-from PATH`). A held pod is bound to its node and never
ready (faults.held_not_ready, a kwok pod-ready Stage that skips an annotation).

What Kueue v0.19.2 does, from its source (kubernetes-sigs/kueue at v0.19.2) and seen here:
- On the worker, `pkg/controller/core/workload_controller.go` `reconcileNotReadyTimeout`
  (:1229-1277) evicts a Workload admitted `timeout` ago whose PodsReady is still False: Evicted
  reason `PodsReadyTimeout`, "Exceeded the PodsReady timeout NS/NAME", and `UpdateRequeueState`
  (pkg/workload/workload.go:817-832) counts it and sets `requeueAt` = now + base x 2^(count-1).
  Past `backoffLimitCount` `triggerDeactivation` (:1282-1295) deactivates it instead. The job's
  pods stop; jobframework/reconciler.go then unsets QuotaReserved with Requeued=False
  (PodsReadyTimeout); workload_controller.go (:640-663) keeps it out until `requeueAt`, then
  sets Requeued=True, BackoffFinished.
- For a copy dispatched by the manager, `pkg/controller/admissionchecks/multikueue/workload.go`
  step 4 (:441-487) turns the copy's eviction into the MultiKueue check's Retry ("Workload
  evicted on worker cluster: ..."); the manager evicts its own Workload
  (`reconcileCheckBasedEviction`, :969-1000, reason AdmissionCheck) and
  pkg/workload/evict/evict.go `resetChecksOnEviction` (:220-240) counts it in the check's
  retryCount. Its Job stopped (the copy's status synced, jobs/job/job_multikueue_adapter.go
  :126-133), the manager releases the quota, step 2 (:380-394) deletes the copies, and with no
  requeueAt of its own (the manager evicted it for a check, not for PodsReady) the backoff ends
  at once and it is dispatched again: within about a second (seen here). The evicted copy's
  requeueState mostly goes with it; the new copy starts at count 0. Not always: once here a copy
  with count 1 was admitted again on worker-1, kept and requeued after its own backoff (probably
  the manager reserved again before its MultiKueue controller saw it without quota, so step 2
  did not run; not examined further). So a dispatched job is not reliably held back by the
  worker's backoff nor deactivated by its backoffLimitCount: it can be evicted and
  dispatched again once per timeout. Its manager Workload keeps Evicted=False "Previously: ..."
  (workload.go SetQuotaReservation -> resetActiveCondition) and the check's retryCount.

Driven, on one twin, both jobs submitted at once (held):
1. `fv-local-unready` (1 CPU), on worker-1's own LocalQueue: evicted by waitForPodsReady, its
   quota released: `backoff`, with requeueAt (the next attempt's time) and the count. At once
   `fv-filler` (5 x 3100m) takes the rest of worker-1's quota.
2. `fv-unready` (500m), dispatched: admitted on worker-1, evicted there after 20 s and
   dispatched again; once worker-1 admitted the new copy, `why` says `starting`, that it was
   evicted on worker-1 before (the check's retryCount) and that the worker's backoff does not
   hold it back, naming the timeout's key; its new copy has no requeueState, the manager none.
   Then it is deleted.
3. Once the backoff ends `fv-local-unready` is back in its queue without quota, still Evicted:
   `evicted-pods-ready`, naming `kueue.configuration.waitForPodsReady.timeout`
   (docs/kueue-queueing.md).

`status` raises no warning in any of them, and that is right: every warning kind
(docs/observability.md "Warnings") is a state Kueue will not leave by itself in the timings
fleetview knows, or a cluster it cannot read. Here Kueue moves each job on its own: the eviction
releases the quota at once, the backoff ends at requeueAt, a job back in its queue waits for quota
like any backlog, the local job is deactivated at backoffLimitCount. The dispatched job's endless
re-dispatch is the one an operator must act on, and `why` says it; a warning for it would need a
count of evictions over time, which one snapshot has only as the check's retryCount and which a
slow but healthy start also raises once.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from checks.stack import parse_fleet
from config.models import FleetConfig
from config.schema import FULL_KEY
from testkit.realtier.faults import KUEUE_API, condition, condition_of, get_json, held_not_ready
from testkit.realtier.fleetview_cli import fleetview
from testkit.realtier.harness import ControlPlane, Report, Tools, apply
from testkit.realtier.jobs import suspended_job, workload_of_job
from testkit.realtier.shared.faults_runtime import MANAGER, dev_twin, ready_to_dispatch, state
from testkit.realtier.twin import Submission, load_stack
from testkit.realtier.twin_run import SimulationTools, Twin
from testkit.realtier.wait import until

pytestmark = [pytest.mark.real]

WORKER: Final = "worker-1"  # the only worker whose autoscaler runs: copies are admitted there
TIMEOUT: Final = 20  # seconds: the workers' waitForPodsReady timeout
BACKOFF: Final = 25  # seconds: requeuingStrategy.backoffBaseSeconds (first requeue after it)
PODS_READY: Final = {
    "timeout": f"{TIMEOUT}s",
    "requeuingStrategy": {
        "backoffBaseSeconds": BACKOFF,
        "backoffMaxSeconds": 60,
        "backoffLimitCount": 1,
    },
}
STACK_NAME: Final = "podsready"
WAIT: Final = 60.0  # every wait below (2 shared cores)
UNREADY, LOCAL, FILLER = "fv-unready", "fv-local-unready", "fv-filler"
FIX: Final = "raise kueue.configuration.waitForPodsReady.timeout (docs/kueue-queueing.md"
EVICTED_ON_WORKER: Final = f'Workload evicted on worker cluster: "{WORKER}"'


def pods_ready_raw() -> dict[str, Any]:
    """dev's fleet value with the workers' waitForPodsReady short (the stack's own key)."""
    raw: dict[str, Any] = load_stack("dev").model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    raw["kueue"].setdefault("configuration", {})["waitForPodsReady"] = PODS_READY
    return raw


@dataclass(frozen=True)
class Fleet:
    fleet: FleetConfig
    stack_file: Path  # the same fleet as a stack file, for fleetview's --timings-from


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    raw = pods_ready_raw()
    parsed, _ = parse_fleet(raw, source="dev, its workers' waitForPodsReady short")
    path = tmp_path_factory.mktemp("stack") / f"Pulumi.{STACK_NAME}.yaml"
    path.write_text(yaml.safe_dump({"config": {FULL_KEY: raw}}, sort_keys=False))
    return Fleet(parsed, path)


@pytest.fixture(scope="module")
def twin(
    tools: Tools,
    simulation: SimulationTools,
    fleet: Fleet,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Twin]:
    workdir = tmp_path_factory.mktemp("fleetview-pods-ready")
    held = held_not_ready(simulation, workdir / "held-stages")
    with dev_twin(tools, held, workdir, fleet.fleet) as started:
        yield started


# ---- driving and reading -------------------------------------------------------------------


@dataclass
class Driven:
    twin: Twin
    sub: Submission
    stack_file: Path
    took: dict[str, float]
    requeue_at: dt.datetime | None = None  # fv-local-unready's first backoff ends then

    @property
    def manager(self) -> ControlPlane:
        return self.twin.planes[MANAGER]

    @property
    def worker(self) -> ControlPlane:
        return self.twin.planes[WORKER]

    def seen(self) -> str:
        local = workload_of_job(self.worker, self.sub.namespace, LOCAL)
        return f"{state(self.twin, self.sub.namespace, [WORKER])}\nlocal: {json.dumps(local)}"

    def run(self, *args: str) -> dict[str, Any]:
        done, _ = fleetview(
            self.twin.planes, *args, "--json", "--timings-from", str(self.stack_file)
        )
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode == 0, f"fleetview {args}: exit {done.returncode}: {done.stderr}"
        return json.loads(done.stdout)

    def read(self, job: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """`why` of the job and `status`, side by side (each a process reading every plane)."""
        with ThreadPoolExecutor(max_workers=2) as pool:
            why = pool.submit(self.run, "why", f"{self.sub.namespace}/{job}")
            status = pool.submit(self.run, "status")
            return why.result(), status.result()


def _job(sub: Submission, name: str, cpu: str, **kw: Any) -> dict[str, Any]:
    return suspended_job(name, sub.namespace, sub.local_queue, {"cpu": cpu, "memory": "64Mi"}, **kw)


def _submit(plane: ControlPlane, *jobs: dict[str, Any]) -> None:
    applied = apply(plane, list(jobs))
    assert not applied.rejected, applied.stderr


def _copy(plane: ControlPlane, ns: str, name: str) -> dict[str, Any] | None:
    return get_json(plane, f"{KUEUE_API}/namespaces/{ns}/workloads/{name}")


def _stamp(when: str) -> dt.datetime:
    return dt.datetime.fromisoformat(when.replace("Z", "+00:00"))


def _says(answer: dict[str, Any], state_: str, *parts: str) -> None:
    assert answer["state"] == state_, answer
    for part in parts:
        assert part in answer["verdict"], f"{part!r} not in: {answer['verdict']}"


@pytest.fixture(scope="module")
def driven(autoscaler: Path, twin: Twin, fleet: Fleet) -> Driven:
    t0 = time.monotonic()
    sub = ready_to_dispatch(twin, autoscaler, WORKER)
    manager, worker = twin.planes[MANAGER], twin.planes[WORKER]
    until(
        lambda: (
            condition(get_json(manager, f"{KUEUE_API}/multikueueclusters/{WORKER}"), "Active")
            == "True"
        ),
        WAIT,
        f"[manager] MultiKueueCluster {WORKER} Active",
    )
    _submit(manager, _job(sub, UNREADY, "500m", dispatched=True, held=True))
    _submit(worker, _job(sub, LOCAL, "1", held=True))
    return Driven(twin, sub, fleet.stack_file, {"ready": time.monotonic() - t0})


# ---- the tests ----------------------------------------------------------------------------


def test_fleetview_says_a_workers_own_job_evicted_by_pods_ready_is_in_backoff(
    driven: Driven, report: Report
) -> None:
    """Run first: the job was submitted with the dispatched one, and its backoff is on now."""
    ns, worker, sub = driven.sub.namespace, driven.worker, driven.sub

    def in_backoff() -> dict[str, Any] | None:
        wl = workload_of_job(worker, ns, LOCAL)
        evicted = condition_of(wl, "Evicted")
        requeue = ((wl or {}).get("status") or {}).get("requeueState") or {}
        return (
            wl
            if (evicted.get("status"), evicted.get("reason")) == ("True", "PodsReadyTimeout")
            and condition(wl, "QuotaReserved") == "False"
            and requeue.get("requeueAt")
            else None
        )

    wl = until(
        in_backoff,
        TIMEOUT + WAIT,
        f"[{WORKER}] {LOCAL} evicted by waitForPodsReady, its quota released",
        seen=driven.seen,
    )
    name = str(wl["metadata"]["name"])
    requeue = wl["status"]["requeueState"]
    requeue_at = _stamp(str(requeue["requeueAt"]))
    evicted = condition_of(wl, "Evicted")
    assert evicted["message"] == f"Exceeded the PodsReady timeout {ns}/{name}", evicted
    assert requeue["count"] == 1, requeue
    # workload.go UpdateRequeueState: base x 2^0, jitter 0.0001, from the eviction (whole
    # seconds on the condition).
    backoff = (requeue_at - _stamp(str(evicted["lastTransitionTime"]))).total_seconds()
    assert BACKOFF - 1 <= backoff <= BACKOFF + 1, (backoff, requeue, evicted)
    # For step 3, at once (a read may take seconds on a loaded machine): the filler takes what is
    # left of worker-1's quota beside fv-unready's copy (15.5 of 16 CPU, 5 pods, one per node of
    # the pool's 5), so this job (1 CPU) does not fit once its backoff ends, fv-unready gone or not.
    _submit(worker, _job(sub, FILLER, "3100m", pods=5, run_for="10m"))
    answer, status = driven.read(LOCAL)
    assert dt.datetime.now(dt.UTC) < requeue_at, "fleetview ran past the backoff: too slow"
    _says(
        answer,
        "backoff",
        f"It is queued on {WORKER}'s own LocalQueue {sub.local_queue} (not through the manager)",
        f"It was evicted on {WORKER} by waitForPodsReady ({TIMEOUT}s here) ",
        f"its pods were not all ready in time ({evicted['message']}); if its pods need longer",
        FIX,
        f"it is in requeue backoff until {requeue_at.strftime('%H:%M:%SZ')} (in ",
        "(requeued 1 time so far)",
    )
    assert answer["cluster"] == WORKER, answer
    [fact] = [f for f in answer["facts"] if f["object"] == "requeueState"]
    assert fact["says"].startswith(f"count 1, requeueAt {requeue_at.strftime('%H:%M:%SZ')}"), fact
    assert status["warnings"] == [], status["warnings"]
    driven.requeue_at = requeue_at
    report(
        f"fleetview on a worker's own job past waitForPodsReady ({TIMEOUT}s): backoff "
        f"{backoff:.0f}s (count 1, requeueAt named), no warning"
    )


def test_fleetview_says_a_dispatched_job_evicted_by_a_workers_pods_ready_is_dispatched_again(
    driven: Driven, report: Report
) -> None:
    ns, manager, worker = driven.sub.namespace, driven.manager, driven.worker
    t0 = time.monotonic()

    # Its copy is evicted TIMEOUT after each admission; the manager evicts, deletes the copy and
    # dispatches a new one, which worker-1 admits: the check counts the eviction and Evicted is
    # False "Previously: ...". (An evicted copy lives about a second: not waited for. The first
    # eviction may be behind already: step 1 ran first.)
    def again() -> dict[str, Any] | None:
        wl = workload_of_job(manager, ns, UNREADY)
        copy = _copy(worker, ns, str(wl["metadata"]["name"])) if wl else None
        if wl is None or copy is None:
            return None
        evicted = condition_of(wl, "Evicted")
        ready = condition(copy, "PodsReady") == "False" and condition(wl, "Admitted") == "True"
        return (
            wl
            if ready
            and evicted.get("status") == "False"
            and EVICTED_ON_WORKER in str(evicted.get("message"))
            else None
        )

    wl = until(
        again,
        TIMEOUT + WAIT,
        f"[manager] {UNREADY} evicted on {WORKER} and admitted there again",
        seen=driven.seen,
    )
    waited = time.monotonic() - t0
    name = str(wl["metadata"]["name"])
    [check] = wl["status"]["admissionChecks"]
    retries = int(check.get("retryCount") or 0)
    assert (check["state"], retries >= 1) == ("Ready", True), check
    # The manager keeps no requeueState: nothing on its side holds it back.
    assert not wl["status"].get("requeueState"), wl["status"]

    answer, status = driven.read(UNREADY)
    _says(
        answer,
        "starting",
        f"it is admitted on {WORKER} ",
        f"waitForPodsReady ({TIMEOUT}s) evicts it in ",
        f"It was evicted on a worker before ({retries} time{'s' if retries != 1 else ''}, last "
        f"on {WORKER}, dispatched again ",
        "the worker's requeuingStrategy may not hold it back",
        "each new copy starts at 0",
        FIX,
    )
    assert status["timings"]["source"] == str(driven.stack_file), status["timings"]
    assert status["warnings"] == [], status["warnings"]
    [row] = [
        w
        for c in status["clusters"]
        if c["name"] == MANAGER
        for d in c["dispatchSets"]
        for w in d["workloads"]
        if w["name"] == name
    ]
    assert (row["state"], row["worker"]) == ("starting", WORKER), row
    # It would loop: stop it here, so the next steps have worker-1's quota to themselves.
    manager.kubectl("delete", "job", UNREADY, "-n", ns, "--wait=false")
    until(
        lambda: _copy(worker, ns, name) is None,
        WAIT,
        f"[{WORKER}] {UNREADY}'s copy gone",
        seen=driven.seen,
    )
    report(
        f"fleetview on a dispatched job past a worker's waitForPodsReady ({TIMEOUT}s): evicted "
        f"there and admitted again at once (seen {waited:.0f}s into the step); starting, evicted "
        f"before (retryCount {retries}), no warning"
    )


def test_fleetview_says_a_workers_own_job_back_from_backoff_without_quota_is_evicted_pods_ready(
    driven: Driven, report: Report
) -> None:
    """Run last: the filler (step 1) took the quota while the job was in backoff."""
    ns, worker = driven.sub.namespace, driven.worker
    assert driven.requeue_at is not None, "the backoff step did not run"
    reserved = condition_of(workload_of_job(worker, ns, FILLER), "QuotaReserved")
    assert reserved.get("status") == "True", reserved
    assert _stamp(str(reserved["lastTransitionTime"])) < driven.requeue_at, reserved

    # The backoff over, the job is back in its queue but the filler holds the quota: still
    # Evicted (until its next reservation), Requeued=True BackoffFinished.
    def waiting() -> dict[str, Any] | None:
        wl = workload_of_job(worker, ns, LOCAL)
        return (
            wl
            if condition_of(wl, "Requeued").get("reason") == "BackoffFinished"
            and condition(wl, "Evicted") == "True"
            and "insufficient unused quota" in str(condition_of(wl, "QuotaReserved").get("message"))
            else None
        )

    wl = until(
        waiting,
        BACKOFF + WAIT,
        f"[{WORKER}] {LOCAL}'s backoff over, waiting for the quota {FILLER} holds",
        seen=driven.seen,
    )
    answer, status = driven.read(LOCAL)
    _says(
        answer,
        "evicted-pods-ready",
        f"It was evicted on {WORKER} by waitForPodsReady ({TIMEOUT}s here) ",
        FIX,
        "Now it is back in its queue and waits for quota (requeued 1 time so far, last ",
        str(condition_of(wl, "QuotaReserved")["message"]),
    )
    assert status["warnings"] == [], status["warnings"]
    assert "requeue backoff" not in answer["verdict"], answer["verdict"]
    report(
        f"fleetview on a worker's own job back from its backoff without quota: "
        f"evicted-pods-ready, waiting for {FILLER}'s; no warning"
    )
