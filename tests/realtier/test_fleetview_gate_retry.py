"""fleetview on the real Kueue and cluster-autoscaler: a provisioning gate the autoscaler fails,
through Kueue's retry; `why`'s verdict and `status`'s warnings.

The twin: dev's fleet (a manager dispatching team-a to two gated workers, their user pools at
minCount) whose workers' gate `batch-scaleup` states a short retry through the stack's own key
(`retryStrategy`: backoffLimitCount 2, backoffBaseSeconds 30), so each worker's Kueue reads the
ProvisioningRequestConfig the program renders for such a stack. worker-1's real
cluster-autoscaler starts only once the request to fail is in place.

How the real autoscaler fails a request (cluster-autoscaler 1.33.0): a best-effort-atomic
request whose capacity is not found is only `Provisioned=False` (CapacityIsNotFound) and tried
again by the autoscaler itself (provisioningrequest/besteffortatomic/provisioning_class.go), so
Kueue keeps waiting; `Failed=True` comes from `processors/provreq/injector.go` when the pods of
a request cannot be made (`FailedToCreatePods`: "missing pod templates, ..." when a PodTemplate
the request names is gone), from `processors/provreq/processor.go` after 7 days unanswered
(`Expired`), or from the check-capacity class (`CapacityIsNotFound`). The fault here is the
first: the request's PodTemplate is deleted before the autoscaler starts (Kueue v0.19.2 makes
a request's templates only when it makes the request: `syncOwnedProvisionRequest`), so its
first look at the request fails it.

What Kueue v0.19.2 does with it (pkg/controller/admissionchecks/provisioning/controller.go
`syncCheckStates`): attempt 1 <= backoffLimitCount, so the check goes to Retry with
"Retrying after failure: ..." and `requeueAfterSeconds` (pkg/workload/admissionchecks.go
`UpdateAdmissionCheckRequeueState`: base x 2^(retryCount), jitter 0.0001), which the workload
controller copies to `requeueState.requeueAt`. Seen here: the Workload keeps its quota in Retry
until about then, is evicted (AdmissionCheck), pkg/workload/evict/evict.go
`resetChecksOnEviction` sets the check Pending with retryCount 1, the Job's reconciler releases
the quota and Kueue makes attempt 2 (`<workload>-<check>-2`, new PodTemplates) at once, which
the autoscaler answers.

Driven, one after the other:
1. A job on worker-1's own LocalQueue. Between the failure and attempt 2, `why` says
   `gate-retry`: the attempt of 3, the next attempt's time (the check's transition +
   requeueAfterSeconds), what the autoscaler said; `status` warns ProvisioningRequestFailed for
   that request (a failed request is worth a look even while Kueue retries), and nothing else.
   Attempt 2 Provisioned, the job admitted on worker-1 and running: `why` says so, and `status`
   raises no warning (Kueue deleted the failed request with attempt 2).
2. A job dispatched from the manager (dev's AllAtOnce: a copy on each worker; worker-2 has no
   autoscaler, so its copy waits at its gate and its request has no condition). worker-1's
   copy's first request fails the same way: `why` on the manager's job says `gate-retry` (a
   copy retrying outranks one merely at its gate) with both copies' stories, and `status` warns
   ProvisioningRequestFailed. Then what Kueue v0.19.2 does with a copy (found here, then read in
   its source): at the next attempt's time the worker evicts the copy, but the copy keeps its
   quota, as jobframework/reconciler.go releases an evicted Workload's quota by stopping its Job
   and MultiKueue makes the Job on a worker only at admission; the failed request is deleted
   and no attempt 2 is made; the manager acts on a copy's eviction only once its check is Ready
   (pkg/controller/admissionchecks/multikueue/workload.go step 4), so its Workload is never
   evicted. The copy stays so (kubernetes-sigs/kueue#8089): past the grace `why` says
   `gate-stuck` and names the fix, `status` warns StuckCopy. The fix as docs/operations.md
   gives it (delete the copy on the worker) works: the manager makes a new copy, its first
   request is answered, the job runs on worker-1 and no warning is left.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from checks.stack import parse_fleet
from config.models import FleetConfig
from testkit.realtier.autoscaler import TOOL, start_autoscalers
from testkit.realtier.faults import KUEUE_API, condition, condition_of, get_json, items
from testkit.realtier.fleetview_cli import fleetview
from testkit.realtier.harness import ControlPlane, Report, Tools, apply
from testkit.realtier.jobs import suspended_job, workload_of_job
from testkit.realtier.shared.faults_runtime import MANAGER, dev_twin, ready_to_dispatch, state
from testkit.realtier.twin import load_stack, submissions
from testkit.realtier.twin_run import PROVISIONING_API, SimulationTools, Twin
from testkit.realtier.wait import until

pytestmark = [pytest.mark.real]

WORKER: Final = "worker-1"  # its autoscaler fails the first request, then answers
UNSCALED: Final = "worker-2"  # no autoscaler: a copy there waits at its gate
WORKERS: Final = (WORKER, UNSCALED)
GATE: Final = "batch-scaleup"  # dev's workers' provisioning gate
BACKOFF: Final = 30  # seconds: the gate's retryStrategy.backoffBaseSeconds (attempt 2 after it)
RETRY: Final = {"backoffLimitCount": 2, "backoffBaseSeconds": BACKOFF, "backoffMaxSeconds": 60}
GRACE: Final = "10"  # --stranded-after in step 2: the stuck copy is judged past it
WAIT: Final = 60.0  # every wait below (2 shared cores)
JOB: Final = "fv-gate-retry"  # step 1, on worker-1's own LocalQueue
DISPATCHED: Final = "fv-gate-retry-dispatched"  # step 2, from the manager
MISSING: Final = "missing pod templates, 1 pod templates were referenced, 1 templates were missing"


def gate_retry_fleet() -> FleetConfig:
    """dev's fleet, its workers' gate retrying after 30 s, twice (the stack's own key)."""
    raw: dict[str, Any] = load_stack("dev").model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    for cluster in raw["clusters"]:
        for gate in (cluster.get("queues") or {}).get("provisioningGates") or []:
            gate["retryStrategy"] = RETRY
    parsed, _ = parse_fleet(raw, source="dev, its workers' gate retrying after 30 s")
    return parsed


@pytest.fixture(scope="module")
def twin(
    tools: Tools, simulation: SimulationTools, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Twin]:
    workdir = tmp_path_factory.mktemp("fleetview-gate-retry")
    with dev_twin(tools, simulation, workdir, gate_retry_fleet()) as started:
        yield started


def _requests(plane: ControlPlane, ns: str) -> dict[str, dict[str, Any]]:
    return {
        str(pr["metadata"]["name"]): pr
        for pr in items(plane, f"{PROVISIONING_API}/namespaces/{ns}/provisioningrequests")
    }


def _check(wl: dict[str, Any] | None) -> dict[str, Any]:
    checks = ((wl or {}).get("status") or {}).get("admissionChecks") or []
    return next((c for c in checks if c.get("name") == GATE), {})


def _stamp(when: str) -> dt.datetime:
    return dt.datetime.fromisoformat(when.replace("Z", "+00:00"))


def _read(
    twin: Twin, ns: str, job: str = JOB, grace: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """`why` of the job and `status`, side by side (each a process reading every plane)."""

    def run(*args: str) -> dict[str, Any]:
        extra = ("--stranded-after", grace) if grace else ()
        done, _ = fleetview(twin.planes, *args, "--json", *extra)
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode == 0, f"fleetview {args}: exit {done.returncode}: {done.stderr}"
        return json.loads(done.stdout)

    with ThreadPoolExecutor(max_workers=2) as pool:
        why = pool.submit(run, "why", f"{ns}/{job}")
        status = pool.submit(run, "status")
        return why.result(), status.result()


def _says(answer: dict[str, Any], state_: str, *parts: str) -> None:
    assert answer["state"] == state_, answer
    for part in parts:
        assert part in answer["verdict"], f"{part!r} not in: {answer['verdict']}"


@dataclass
class Failed:
    """A copy's first request failed by the autoscaler, and the gate retrying."""

    workload: dict[str, Any]  # on worker-1, at that moment
    request: str  # attempt 1's name
    next_try: dt.datetime  # the check's transition + requeueAfterSeconds


def _copy(plane: ControlPlane, ns: str, name: str) -> dict[str, Any] | None:
    return get_json(plane, f"{KUEUE_API}/namespaces/{ns}/workloads/{name}")


def _fail_first_request(
    twin: Twin,
    autoscaler: Path,
    ns: str,
    submit: Callable[[], str | None],
    seen: Callable[[], str],
) -> Failed:
    """worker-1's autoscaler stopped (if it runs), the job submitted (`submit` then returns the
    name of its Workload on worker-1, or None until there is one), its first request's
    PodTemplate deleted, the autoscaler started: it fails the request, Kueue retries."""
    worker = twin.planes[WORKER]
    worker.stop_component(TOOL)
    name = submit()

    # Kueue reserves worker-1's quota and makes attempt 1: its PodTemplate, then the request.
    def first_request() -> dict[str, Any] | None:
        wl_name = submit()
        return _requests(worker, ns).get(f"{wl_name}-{GATE}-1") if wl_name else None

    first = until(first_request, WAIT, f"[{WORKER}] attempt 1's ProvisioningRequest", seen=seen)
    name = str(first["metadata"]["name"])
    [podset] = first["spec"]["podSets"]
    worker.kubectl("delete", "podtemplate", podset["podTemplateRef"]["name"], "-n", ns)
    start_autoscalers({WORKER: worker}, twin.fleet, autoscaler)

    # The autoscaler fails it; Kueue retries: the check in Retry, then (the Workload evicted)
    # Pending with retryCount 1, its next attempt requeueAfterSeconds after the transition.
    def retrying() -> tuple[dict[str, Any], dict[str, Any]] | None:
        wl_name = submit()
        wl = _copy(worker, ns, wl_name) if wl_name else None
        pr = _requests(worker, ns).get(name)
        check = _check(wl)
        failing = check.get("state") == "Retry" or int(check.get("retryCount") or 0) >= 1
        return (wl, pr) if wl and pr and condition(pr, "Failed") == "True" and failing else None

    wl, pr = until(retrying, WAIT, f"[{WORKER}] {name} Failed, the gate in retry", seen=seen)
    failed = condition_of(pr, "Failed")
    assert (failed["reason"], MISSING in failed["message"]) == ("FailedToCreatePods", True), failed
    check = _check(wl)
    assert check["requeueAfterSeconds"] in (BACKOFF - 1, BACKOFF, BACKOFF + 1), check
    next_try = _stamp(str(check["lastTransitionTime"])) + dt.timedelta(
        seconds=int(check["requeueAfterSeconds"])
    )
    return Failed(wl, name, next_try)


def _says_gate_retry(answer: dict[str, Any], failed: Failed, on: str) -> None:
    """`on`: how the verdict names worker-1's part ("On worker-1 it" for its own job, "on
    worker-1 it" among a dispatched job's copies)."""
    assert dt.datetime.now(dt.UTC) < failed.next_try, "fleetview ran past the next attempt: slow"
    _says(
        answer,
        "gate-retry",
        f"{on} it ",
        f"at its provisioning gate {GATE} (",
        # attempt 1 failed (Retry) or attempt 2 waits for its time (Pending, retryCount 1)
        "of 3",
        f"next attempt at {failed.next_try.strftime('%H:%M:%SZ')} (in ",
        "after attempt 3 the check is Rejected and the Workload deactivated",
        f"the cluster autoscaler says failed: {MISSING}",
    )


def _warns_failed(status: dict[str, Any], ns: str, failed: Failed) -> None:
    assert [(w["kind"], w["cluster"], w["object"]) for w in status["warnings"]] == [
        ("ProvisioningRequestFailed", WORKER, f"{ns}/{failed.request}")
    ], status["warnings"]
    assert "FailedToCreatePods" in status["warnings"][0]["message"], status["warnings"]


def _admitted_at_attempt_2(
    twin: Twin, ns: str, wl_name: str, failed: Failed, seen: Callable[[], str]
) -> dict[str, Any]:
    """Attempt 2 after the backoff: a new request the autoscaler answers; the Workload on
    worker-1 admitted and running; Kueue deleted attempt 1's request. That Workload."""
    worker = twin.planes[WORKER]
    second = f"{wl_name}-{GATE}-2"

    def admitted() -> dict[str, Any] | None:
        wl = _copy(worker, ns, wl_name)
        prs = _requests(worker, ns)
        return (
            wl
            if condition(wl, "Admitted") == "True"
            and condition(wl, "PodsReady") == "True"
            and second in prs
            and condition(prs[second], "Provisioned") == "True"
            and failed.request not in prs
            else None
        )

    wl = until(
        admitted,
        BACKOFF + WAIT,
        f"[{WORKER}] {wl_name} admitted at attempt 2, running, attempt 1's request gone",
        seen=seen,
    )
    check = _check(wl)
    assert (check["state"], check.get("retryCount")) == ("Ready", 1), check
    return wl


def _seen(twin: Twin, ns: str) -> Callable[[], str]:
    def seen() -> str:
        lines = [state(twin, ns, list(WORKERS))]
        for w in WORKERS:
            plane = twin.planes[w]
            wls = items(plane, f"{KUEUE_API}/namespaces/{ns}/workloads")
            lines.append(f"[{w}] workloads: {json.dumps([x.get('status') for x in wls])}")
            prs = {n: pr.get("status") for n, pr in _requests(plane, ns).items()}
            lines.append(f"[{w}] requests: {json.dumps(prs)}")
        return "\n".join(lines)

    return seen


def test_fleetview_says_gate_retry_with_the_next_attempt_after_the_autoscaler_fails_a_request(
    twin: Twin, autoscaler: Path, report: Report
) -> None:
    """Run first: worker-1's autoscaler is not started before it."""
    sub = ready_to_dispatch(twin, autoscaler)  # every ClusterQueue Active; no autoscaler yet
    worker, ns = twin.planes[WORKER], sub.namespace
    t0 = time.monotonic()
    seen = _seen(twin, ns)
    job = suspended_job(JOB, ns, sub.local_queue, {"cpu": "1", "memory": "64Mi"}, run_for="10m")
    submitted: list[bool] = []

    def submit() -> str | None:
        if not submitted:
            applied = apply(worker, [job])
            assert not applied.rejected, applied.stderr
            submitted.append(True)
        wl = workload_of_job(worker, ns, JOB)
        return str(wl["metadata"]["name"]) if wl else None

    failed = _fail_first_request(twin, autoscaler, ns, submit, seen)
    answer, status = _read(twin, ns)
    _says_gate_retry(answer, failed, f"On {WORKER}")
    assert answer["cluster"] == WORKER, answer
    _warns_failed(status, ns, failed)
    failed_at = time.monotonic() - t0

    wl_name = str(failed.workload["metadata"]["name"])
    _admitted_at_attempt_2(twin, ns, wl_name, failed, seen)
    answer, status = _read(twin, ns)
    _says(answer, "running", f"on {WORKER}")
    assert status["warnings"] == [], status["warnings"]
    report(
        f"fleetview on a gate the real autoscaler failed (FailedToCreatePods): gate-retry "
        f"{failed_at:.0f}s after submission with the next attempt's time, "
        f"ProvisioningRequestFailed; running after attempt 2 "
        f"({time.monotonic() - t0:.0f}s), no warning"
    )


def test_fleetview_says_a_dispatched_jobs_copy_evicted_at_its_gate_is_stuck_and_the_fix_works(
    twin: Twin, autoscaler: Path, report: Report
) -> None:
    """Run second: worker-1's autoscaler runs (step 1) and is stopped and started again here."""
    [sub] = [s for s in submissions(twin.fleet) if s.dispatched]
    manager, worker, ns = twin.planes[MANAGER], twin.planes[WORKER], sub.namespace
    t0 = time.monotonic()
    seen = _seen(twin, ns)
    job = suspended_job(
        DISPATCHED,
        ns,
        sub.local_queue,
        {"cpu": "1", "memory": "64Mi"},
        dispatched=True,
        run_for="10m",
    )
    submitted: list[bool] = []

    def submit() -> str | None:
        """The manager's Workload's name once worker-1 holds its copy."""
        if not submitted:
            applied = apply(manager, [job])
            assert not applied.rejected, applied.stderr
            submitted.append(True)
        wl = workload_of_job(manager, ns, DISPATCHED)
        name = str(wl["metadata"]["name"]) if wl else None
        return name if name and _copy(worker, ns, name) else None

    failed = _fail_first_request(twin, autoscaler, ns, submit, seen)
    wl_name = str(failed.workload["metadata"]["name"])
    uid = failed.workload["metadata"]["uid"]
    answer, status = _read(twin, ns, DISPATCHED, GRACE)
    _says_gate_retry(answer, failed, f"on {WORKER}")
    _says(
        answer,
        "gate-retry",
        f"nominated to {', '.join(WORKERS)} since quota was reserved",
        f"on {UNSCALED} it holds quota and waits at its provisioning gate {GATE} (Pending, "
        "first attempt); the cluster autoscaler has not answered ProvisioningRequest "
        f"{wl_name}-{GATE}-1 (no condition on it yet)",
    )
    assert answer["cluster"] == MANAGER, answer
    _warns_failed(status, ns, failed)
    failed_at = time.monotonic() - t0

    # Evicted at the next attempt's time, the copy still holds worker-1's quota: no Job of it
    # on the worker (MultiKueue makes that at admission), so nothing releases the quota
    # (jobframework/reconciler.go) and the gate never tries again there. Past the grace:
    def evicted() -> dict[str, Any] | None:
        copy = _copy(worker, ns, wl_name)
        return copy if condition(copy, "Evicted") == "True" else None

    copy = until(evicted, BACKOFF + WAIT, f"[{WORKER}] {wl_name}'s copy evicted", seen=seen)
    at = _stamp(str(condition_of(copy, "Evicted")["lastTransitionTime"]))
    time.sleep(max((at - dt.datetime.now(dt.UTC)).total_seconds() + int(GRACE) + 1, 0.0))
    answer, status = _read(twin, ns, DISPATCHED, GRACE)
    copy = _copy(worker, ns, wl_name)
    assert copy is not None, f"{wl_name}'s copy gone from {WORKER}"
    assert copy["metadata"]["uid"] == uid, copy
    assert (condition(copy, "Evicted"), condition(copy, "QuotaReserved")) == ("True", "True"), copy
    assert not [n for n in _requests(worker, ns) if n.startswith(wl_name)], _requests(worker, ns)
    home = workload_of_job(manager, ns, DISPATCHED)
    assert condition(home, "Evicted") is None, home
    _says(
        answer,
        "gate-stuck",
        f"on {WORKER} its gate failed and Kueue evicted this copy ",
        f"but the copy still holds {WORKER}'s quota",
        "the gate does not try again there. The fix: delete the copy on that worker",
        f"kubectl --kubeconfig {WORKER}.kubeconfig delete workload -n {ns} {wl_name}",
        f"on {UNSCALED} it holds quota and waits at its provisioning gate {GATE}",
    )
    assert [(w["kind"], w["cluster"], w["object"]) for w in status["warnings"]] == [
        ("StuckCopy", WORKER, f"{ns}/{wl_name}")
    ], status["warnings"]
    stuck_at = time.monotonic() - t0

    # The fix: delete the copy on worker-1; the manager's Kueue makes a new one, whose first
    # request the autoscaler answers.
    worker.kubectl("delete", "workload", wl_name, "-n", ns)

    def admitted() -> dict[str, Any] | None:
        wl = _copy(worker, ns, wl_name)
        return (
            wl
            if wl is not None
            and wl["metadata"]["uid"] != uid
            and condition(wl, "Admitted") == "True"
            and condition(wl, "PodsReady") == "True"
            else None
        )

    until(admitted, WAIT, f"[{WORKER}] a new copy of {wl_name} admitted, running", seen=seen)
    until(
        lambda: _copy(twin.planes[UNSCALED], ns, wl_name) is None,
        WAIT,
        f"[{UNSCALED}] {wl_name}'s copy removed once worker-1 admitted it",
        seen=seen,
    )
    answer, status = _read(twin, ns, DISPATCHED, GRACE)
    _says(answer, "running", f"on {WORKER}")
    assert status["warnings"] == [], status["warnings"]
    report(
        f"fleetview on a dispatched job whose copy's gate failed on {WORKER}: gate-retry "
        f"{failed_at:.0f}s after submission, gate-stuck and StuckCopy at {stuck_at:.0f}s; "
        f"running after the copy was deleted ({time.monotonic() - t0:.0f}s), no warning"
    )
