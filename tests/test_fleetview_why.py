"""fleetview `why` and `status` warnings in every state a job can be in.

Each scenario is built as Kueue v0.19.2 leaves the objects (the writer is named beside it, in
kubernetes-sigs/kueue at tag v0.19.2) and validated against the pinned CRDs; the verdict and the
warnings are then what an on-call person reads. Names of the v0.19.2 source files are relative to
that tag.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetview.objects import Snapshot
from fleetview.settings import Timings, from_stack_file
from fleetview.status import report
from fleetview.why import explain, states
from testkit import crdschema
from testkit.fleetview_objects import (
    JOB,
    NOW,
    PENDING_MESSAGE,
    TEAM,
    WL,
    Obj,
    check_state,
    cond,
    local_queue,
    manager,
    pending_workloads,
    provisioning_request,
    worker,
    workload,
)
from testkit.repo import ROOT

PROD = Timings(source="Pulumi.prod.yaml", dispatcher="Incremental", step_size=1)
PREEMPTOR_UID = "20000000-0000-0000-0000-000000000002"
# pkg/scheduler/preemption/preemption.go preemptionMessage.
PREEMPTED = (
    f"Preempted to accommodate a workload (UID: {PREEMPTOR_UID}, JobUID: "
    "30000000-0000-0000-0000-000000000003) due to prioritization in the ClusterQueue; preemptor "
    "path: /team-a; preemptee path: /team-a"
)
# pkg/controller/core/workload_controller.go reconcileCheckBasedEviction, quoting the MultiKueue
# check's Retry message (admissionchecks/multikueue/workload.go updateACS, and the eviction of a
# worker's copy, which sets the message directly).
LOST = (
    'Evicted due to AdmissionCheck in Retry state: "multikueue" (Admitting remote lost, '
    'Previously: "Ready")'
)
ON_WORKER = (
    'Evicted due to AdmissionCheck in Retry state: "multikueue" (Workload evicted on worker '
    'cluster: "worker-1", resetting for re-admission. Previously: "Ready")'
)
# workload_controller.go reconcileNotReadyTimeout.
PODS_READY_TIMEOUT = f"Exceeded the PodsReady timeout {TEAM}/{WL}"
# pkg/workload/evict/evict.go resetChecksOnEviction.
RESET = "Reset to Pending after eviction. Previously: "


# The cluster autoscaler's words when a request's PodTemplate is gone (processors/provreq
# injector.go, FailedToCreatePods): the failure tests/realtier/test_fleetview_gate_retry.py drives.
MISSING_TEMPLATES = (
    "missing pod templates, 1 pod templates were referenced, 1 templates were missing: "
    "ppt-wl-provisioning-1-main"
)


def why(*snaps: Snapshot, timings: Timings | None = None, target: str = f"{TEAM}/{JOB}") -> Any:
    return explain(list(snaps), target, NOW, 300, timings)


def warnings_of(*snaps: Snapshot, timings: Timings | None = None) -> list[tuple[str, str]]:
    return [(w["kind"], w["object"]) for w in report(list(snaps), NOW, 300, timings)["warnings"]]


def says(answer: Any, state: str, *phrases: str) -> None:
    """The verdict's state is `state`, and each phrase stands in its sentence."""
    assert answer["state"] == state, answer
    for phrase in phrases:
        assert phrase in answer["verdict"], answer["verdict"]


def quota_reserved(seconds: float) -> Obj:
    """QuotaReserved=True in ClusterQueue team-a, `seconds` ago (pkg/scheduler/scheduler.go)."""
    return cond(
        "QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue team-a", seconds
    )


def checks_not_ready(seconds: float) -> Obj:
    """Admitted=False while an admission check is not Ready (pkg/workload/admissionchecks.go
    SyncAdmittedCondition; gate off: UnsatisfiedChecks)."""
    return cond(
        "Admitted", "False", "UnsatisfiedChecks", "The workload has not all checks ready", seconds
    )


def unreserved(message: str, seconds: float) -> list[Obj]:
    """Back in the queue after an eviction, `seconds` ago: reconciler.go unsets QuotaReserved with
    the eviction's message, and Admitted is False with no reservation and checks not all Ready."""
    return [
        cond("QuotaReserved", "False", "Pending", message, seconds),
        cond(
            "Admitted",
            "False",
            "NoReservationUnsatisfiedChecks",
            "The workload has no reservation and not all checks ready",
            seconds,
        ),
    ]


def reserved(seconds: float, nominated: list[str] | None = None, check: str = "Pending") -> Obj:
    """A manager Workload with quota, its MultiKueue check not Ready, no worker chosen."""
    return workload(
        TEAM,
        JOB,
        conditions=[
            quota_reserved(seconds),
            checks_not_ready(seconds),
        ],
        checks=[check_state("multikueue", check, "", seconds)],
        nominated=nominated,
        admitted_to=TEAM,
    )


def copy(conditions: list[Obj], checks: list[Obj] | None = None, **kw: Any) -> Obj:
    return workload(TEAM, JOB, conditions=conditions, checks=checks, origin=True, **kw)


def copy_pending_quota() -> Obj:
    return copy([cond("QuotaReserved", "False", "Pending", PENDING_MESSAGE)])


def dispatched(to: str, seconds: float = 300) -> Obj:
    return workload(
        TEAM,
        JOB,
        conditions=[
            quota_reserved(seconds),
            cond("Admitted", "True", "Admitted", "The workload is admitted", seconds),
        ],
        checks=[
            check_state("multikueue", "Ready", f'The workload was admitted on "{to}"', seconds)
        ],
        cluster_name=to,
        admitted_to=TEAM,
    )


def pods_ready(seconds: float) -> Obj:
    """PodsReady=True, `seconds` ago: every pod of the job is running (workload_controller.go)."""
    return cond(
        "PodsReady",
        "True",
        "Started",
        "All pods reached readiness and the workload is running",
        seconds,
    )


def admitted_copy(pods_ready: Obj | None, seconds: float = 300) -> Obj:
    conditions = [
        quota_reserved(seconds),
        cond("Admitted", "True", "Admitted", "The workload is admitted", seconds),
    ]
    return copy(
        conditions + ([pods_ready] if pods_ready else []),
        [
            check_state(
                "provisioning",
                "Ready",
                "Provisioning Request was successfully provisioned.",
                seconds,
            )
        ],
        admitted_to=TEAM,
    )


def preempted() -> Obj:
    """Preempted on the manager and back in the queue (evict.go prepareForEviction clears the
    nominations and resets the check; jobframework/reconciler.go unsets QuotaReserved with the
    eviction's message and sets Requeued=True for a preemption)."""
    return workload(
        TEAM,
        JOB,
        conditions=[
            *unreserved(PREEMPTED, 170),
            cond("Evicted", "True", "Preempted", PREEMPTED, 180),
            cond("Preempted", "True", "InClusterQueue", PREEMPTED, 180),
            cond("Requeued", "True", "Preempted", PREEMPTED, 170),
        ],
        checks=[check_state("multikueue", "Pending", RESET + "Ready", 180)],
        evictions=[("Preempted", "", 1)],
    )


def preemptor() -> Obj:
    return workload(
        TEAM,
        "urgent",
        uid=PREEMPTOR_UID,
        conditions=[
            quota_reserved(175),
            checks_not_ready(175),
        ],
        checks=[check_state("multikueue", "Pending", "", 175)],
        nominated=["worker-1", "worker-2"],
        admitted_to=TEAM,
    )


def lost_holding_quota(seconds: float) -> Obj:
    """Evicted after workerLostTimeout, quota still held: the manager's Job keeps the lost worker's
    pod counts, so reconciler.go never unsets QuotaReserved (docs/operations.md)."""
    return workload(
        TEAM,
        JOB,
        conditions=[
            quota_reserved(2400),
            checks_not_ready(seconds),
            cond("Evicted", "True", "AdmissionCheck", LOST, seconds),
        ],
        checks=[check_state("multikueue", "Pending", RESET + "Retry", seconds, retry_count=1)],
        admitted_to=TEAM,
        evictions=[("AdmissionCheck", "", 1)],
    )


def evicted_on_worker() -> Obj:
    """The manager's side after worker-1's waitForPodsReady evicted the copy: check Retry, the
    manager evicts (AdmissionCheck), releases quota, and the backoff ends at once (no requeueAt)."""
    return workload(
        TEAM,
        JOB,
        conditions=[
            *unreserved(ON_WORKER, 50),
            cond("Evicted", "True", "AdmissionCheck", ON_WORKER, 60),
            cond("Requeued", "True", "BackoffFinished", "The workload backoff was finished", 45),
        ],
        checks=[check_state("multikueue", "Pending", RESET + "Retry", 60, retry_count=1)],
        evictions=[("AdmissionCheck", "", 1)],
    )


def redispatched_after_worker_evictions(retries: int = 2) -> Obj:
    """The manager's side as the real Kueue leaves it a moment after worker-1 evicted the copy
    (tests/realtier/test_fleetview_pods_ready.py): it stopped its Job, deleted the copies (no
    quota: multikueue/workload.go step 2), reserved quota again at once (no requeueAt, so
    Requeued=True BackoffFinished at once) and worker-1 admitted a new copy. Evicted is False
    "Previously: ..." (workload.go SetQuotaReservation); the check counts the evictions
    (evict.go resetChecksOnEviction) and is Ready again."""
    wl = dispatched("worker-1", 12)
    wl["status"]["conditions"] += [
        cond("Evicted", "False", "QuotaReserved", f"Previously: {ON_WORKER}", 15),
        cond("Requeued", "True", "BackoffFinished", "The workload backoff was finished", 15),
    ]
    wl["status"]["admissionChecks"][0]["retryCount"] = retries
    return wl


def copy_evicted_by_pods_ready() -> Obj:
    return copy(
        [
            cond("QuotaReserved", "False", "Pending", PODS_READY_TIMEOUT, 65),
            cond("Evicted", "True", "PodsReadyTimeout", PODS_READY_TIMEOUT, 70),
            cond("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", 1870),
            cond("Requeued", "False", "PodsReadyTimeout", PODS_READY_TIMEOUT, 65),
        ],
        requeue=(1, -10),
        evictions=[("PodsReadyTimeout", "WaitForStart", 1)],
    )


def team_b_in_backoff() -> Obj:
    """prod's team-b, queued on worker-1's own LocalQueue (multiKueue.allowUnmirrored), evicted
    twice by waitForPodsReady: requeueState (workload.go UpdateRequeueState) holds it back."""
    message = f"Exceeded the PodsReady timeout team-b/{WL}"
    return workload(
        "team-b",
        JOB,
        queue="team-b",
        conditions=[
            cond("QuotaReserved", "False", "Pending", message, 25),
            cond("Admitted", "False", "NoReservation", "The workload has no reservation", 25),
            cond("Evicted", "True", "PodsReadyTimeout", message, 30),
            cond("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", 1830),
            cond("Requeued", "False", "PodsReadyTimeout", message, 25),
        ],
        requeue=(2, 90),
        evictions=[("PodsReadyTimeout", "WaitForStart", 2)],
    )


def copy_at_gate_after_failure() -> tuple[Obj, Obj]:
    """A copy whose ProvisioningRequest failed once: provisioning/controller.go sets Retry with
    requeueAfterSeconds, the copy is evicted, evict.go resets the check to Pending with
    retryCount 1, and workload_controller.go puts requeueAt at the check's retry time."""
    failed = f"Retrying after failure: {MISSING_TEMPLATES}"
    evicted = f'Evicted due to AdmissionCheck in Retry state: "provisioning" ({failed})'
    wl = copy(
        [
            cond("QuotaReserved", "False", "Pending", evicted, 20),
            cond("Evicted", "True", "AdmissionCheck", evicted, 20),
            cond("Requeued", "False", "AdmissionCheck", evicted, 20),
        ],
        [
            check_state(
                "provisioning", "Pending", RESET + "Retry", 20, retry_count=1, requeue_after=60
            )
        ],
        requeue=(0, 40),
        evictions=[("AdmissionCheck", "", 1)],
    )
    pr = provisioning_request(
        TEAM,
        WL,
        [
            cond("Accepted", "True", "Accepted", "Provisioning Request was accepted", 140),
            cond(
                "Failed",
                "True",
                "FailedToCreatePods",
                MISSING_TEMPLATES,
                25,
            ),
        ],
    )
    return wl, pr


def scenarios() -> Iterator[tuple[str, Obj]]:
    gate_copy, gate_pr = copy_at_gate_after_failure()
    objs = {
        "preempted": preempted(),
        "preemptor": preemptor(),
        "lost": lost_holding_quota(600),
        "evicted-on-worker": evicted_on_worker(),
        "copy-pods-ready": copy_evicted_by_pods_ready(),
        "redispatched": redispatched_after_worker_evictions(),
        "team-b": team_b_in_backoff(),
        "gate-copy": gate_copy,
        "gate-pr": gate_pr,
        "reserved": reserved(900, ["worker-1", "worker-2"]),
        "starting": admitted_copy(
            cond("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", 300)
        ),
    }
    yield from objs.items()


@pytest.mark.parametrize(("what", "obj"), list(scenarios()), ids=lambda x: str(x)[:40])
def test_every_scenario_object_is_valid_against_the_pinned_schemas(what: str, obj: Obj) -> None:
    del what
    project, version = (
        ("cluster-autoscaler", "v0.0.0-20240830133931-adfbe7e45277")
        if obj["kind"] == "ProvisioningRequest"
        else ("kueue", "v0.19.2")
    )
    crdschema.assert_valid(obj, project, version)


# ---- pending ----------------------------------------------------------------------------------


def _other(job: str) -> Obj:
    return workload(
        TEAM,
        job,
        uid=f"4000000{len(job)}-0000-0000-0000-000000000000",
        conditions=[cond("QuotaReserved", "False", "Pending", PENDING_MESSAGE)],
    )


def test_why_says_pending_for_quota_with_its_position_from_the_visibility_api() -> None:
    mine = workload(
        TEAM, JOB, conditions=[cond("QuotaReserved", "False", "Pending", PENDING_MESSAGE)]
    )
    first, second = _other("a"), _other("bb")
    m = dataclasses.replace(
        manager(first, second, mine),
        pending_workloads={TEAM: pending_workloads([(first, TEAM), (second, TEAM), (mine, TEAM)])},
    )
    answer = why(m)
    assert answer["state"] == "pending"
    assert PENDING_MESSAGE in answer["verdict"]
    assert (
        "2 Workloads ahead of it in ClusterQueue team-a (2 in LocalQueue team-a), of 3 pending"
        in answer["verdict"]
    )


def test_why_says_the_position_is_unknown_where_the_visibility_api_is_not_served() -> None:
    mine = workload(
        TEAM, JOB, conditions=[cond("QuotaReserved", "False", "Pending", PENDING_MESSAGE)]
    )
    m = dataclasses.replace(manager(mine), visibility_note="not served (HTTP 404)")
    answer = why(m)
    says(
        answer,
        "pending",
        "position in the queue is unknown (visibility API on manager: not served (HTTP 404))",
    )


def test_why_says_a_stopped_local_queue_holds_the_job_not_quota() -> None:
    # workload_controller.go reconcileOnLocalQueueActiveState: "LocalQueue %s is stopped",
    # reason Inadmissible (Suspended only with the UnadmittedWorkloadsObservability gate).
    wl = workload(
        TEAM,
        JOB,
        conditions=[cond("QuotaReserved", "False", "Inadmissible", "LocalQueue team-a is stopped")],
    )
    m = manager(wl)
    m.local_queues[0] = local_queue(TEAM, TEAM, TEAM) | {
        "spec": {"clusterQueue": TEAM, "stopPolicy": "Hold"}
    }
    answer = why(m)
    says(
        answer, "queue-stopped", "LocalQueue team-a is stopped (LocalQueue team-a stopPolicy Hold)"
    )
    assert "It is not waiting for quota" in answer["verdict"]
    assert "waits for quota" not in answer["verdict"]


# ---- among the workers ------------------------------------------------------------------------


def test_why_says_nominated_and_what_the_incremental_dispatcher_does_next() -> None:
    answer = why(
        manager(reserved(420, ["worker-1"])),
        worker("worker-1", copy_pending_quota()),
        worker("worker-2"),
        timings=PROD,
    )
    says(answer, "nominated", "nominated to worker-1 since quota was reserved 7m00s ago")
    assert f"on worker-1 it waits for quota: {PENDING_MESSAGE}" in answer["verdict"]
    assert (
        "the Incremental dispatcher (Pulumi.prod.yaml) adds the next 1 of worker-2 after each "
        "5m00s round in which no worker admits it"
    ) in answer["verdict"]
    assert "stranded" not in answer["verdict"]


def test_why_says_at_a_workers_gate_with_retry_count_next_attempt_and_the_autoscalers_words() -> (
    None
):
    gate_copy, pr = copy_at_gate_after_failure()
    answer = why(manager(reserved(200, ["worker-1"])), worker("worker-1", gate_copy, prs=(pr,)))
    says(
        answer,
        "gate-retry",
        "waits at its provisioning gate provisioning (Pending, attempt 2 of 4, next attempt at "
        "20:00:40Z (in 40s); after attempt 4 the check is Rejected and the Workload deactivated)",
    )
    assert f"the cluster autoscaler says failed: {MISSING_TEMPLATES}" in answer["verdict"]
    assert "holds quota and waits at" not in answer["verdict"]  # the eviction gave it back
    # The attempts left follow the gate's ProvisioningRequestConfig (retryStrategy).
    strict = why(
        manager(reserved(200, ["worker-1"])),
        worker("worker-1", gate_copy, prs=(pr,), retry_limit=1),
    )
    assert (
        "(Pending, attempt 2 of 2, next attempt at 20:00:40Z (in 40s); after attempt 2 the"
        in (strict["verdict"])
    )
    # The moment before that eviction: the copy still holds quota, its check in Retry.
    retrying = copy(
        [quota_reserved(140)],
        [
            check_state(
                "provisioning",
                "Retry",
                f"Retrying after failure: {MISSING_TEMPLATES}",
                5,
                requeue_after=60,
            )
        ],
        admitted_to=TEAM,
    )
    now = why(manager(reserved(200, ["worker-1"])), worker("worker-1", retrying, prs=(pr,)))
    assert now["state"] == "gate-retry"
    assert (
        "holds quota and waits at its provisioning gate provisioning (Retry, attempt 1 of 4 "
        "failed, next attempt at 20:00:55Z (in 55s); after attempt 4 the check is Rejected and "
        "the Workload deactivated)"
    ) in now["verdict"]


def test_why_says_gate_retry_when_any_nominated_workers_copy_retries_its_gate() -> None:
    """A copy whose request failed outranks another worker's copy merely waiting at its gate,
    whichever worker is listed first."""
    gate_copy, pr = copy_at_gate_after_failure()
    waiting = copy(
        [quota_reserved(100)],
        [check_state("provisioning", "Pending", "", 100)],
        admitted_to=TEAM,
    )
    answer = why(
        manager(reserved(200, ["worker-1", "worker-2"])),
        worker("worker-1", waiting),
        worker("worker-2", gate_copy, prs=(pr,)),
    )
    says(answer, "gate-retry", "nominated to worker-1, worker-2 since quota was reserved")
    assert (
        "on worker-1 it holds quota and waits at its provisioning gate provisioning "
        in (answer["verdict"])
    )
    assert "(Pending, attempt 2 of 4, next attempt at" in answer["verdict"]


def copy_stuck_at_gate(evicted_ago: float) -> Obj:
    """A worker's copy (MultiKueue origin label) evicted at its gate before admission, as the
    real Kueue 0.19.2 leaves it: Evicted=True (AdmissionCheck) and still QuotaReserved=True,
    the check reset to Pending with retryCount 1 (test_fleetview_gate_retry.py)."""
    evicted = (
        'Evicted due to AdmissionCheck in Retry state: "provisioning" '
        f"(Retrying after failure: {MISSING_TEMPLATES})"
    )
    return copy(
        [quota_reserved(140), cond("Evicted", "True", "AdmissionCheck", evicted, evicted_ago)],
        [
            check_state(
                "provisioning",
                "Pending",
                RESET + "Retry",
                evicted_ago,
                retry_count=1,
                requeue_after=30,
            )
        ],
        admitted_to=TEAM,
    )


def test_why_says_gate_stuck_for_a_copy_evicted_at_its_gate_that_holds_quota_past_the_grace() -> (
    None
):
    """Kueue 0.19.2 never releases such a copy's quota (no Job on the worker before admission):
    past the grace `why` says so and names the fix, and `status` warns StuckCopy."""
    waiting = copy(
        [quota_reserved(100)], [check_state("provisioning", "Pending", "", 100)], admitted_to=TEAM
    )
    home = manager(reserved(600, ["worker-1", "worker-2"]))
    stuck = worker("worker-1", copy_stuck_at_gate(400))
    answer = why(home, stuck, worker("worker-2", waiting))
    says(
        answer,
        "gate-stuck",
        "on worker-1 its gate failed and Kueue evicted this copy 6m40s ago (Evicted due to "
        'AdmissionCheck in Retry state: "provisioning"',
        "but the copy still holds worker-1's quota",
        "the gate does not try again there. The fix: delete the copy on that worker; the "
        "manager's Kueue makes a new one",
        f"kubectl --kubeconfig worker-1.kubeconfig delete workload -n {TEAM} {WL}",
        "on worker-2 it holds quota and waits at its provisioning gate",
    )
    assert warnings_of(home, stuck) == [("StuckCopy", f"{TEAM}/{WL}")]
    # Inside the grace it is an eviction in flight: Kueue's retry, no warning.
    fresh = worker("worker-1", copy_stuck_at_gate(20))
    assert why(home, fresh, worker("worker-2", waiting))["state"] == "gate-retry"
    assert warnings_of(home, fresh) == []
    # A worker's own job (no origin label) releases its quota through its Job: never StuckCopy.
    own = copy_stuck_at_gate(400)
    del own["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"]
    assert warnings_of(home, worker("worker-1", own)) == []


def test_why_says_the_autoscaler_has_not_answered_a_request_with_no_condition() -> None:
    """A request with no condition (not even Accepted) is one no autoscaler has looked at:
    not "waiting", which is what an autoscaler that accepted it and found no capacity says."""
    waiting = copy(
        [quota_reserved(100)],
        [check_state("provisioning", "Pending", "", 100)],
        admitted_to=TEAM,
    )
    unanswered = provisioning_request(TEAM, WL, [])
    answer = why(
        manager(reserved(200, ["worker-1"])), worker("worker-1", waiting, prs=(unanswered,))
    )
    says(
        answer,
        "at-gate",
        "(Pending, first attempt); the cluster autoscaler has not answered ProvisioningRequest "
        f"{WL}-provisioning-1 (no condition on it yet)",
    )


def test_why_says_admitted_and_starting_with_the_pods_ready_timeout_left() -> None:
    starting = admitted_copy(
        cond("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", 300)
    )
    answer = why(manager(dispatched("worker-2")), worker("worker-2", starting))
    says(
        answer,
        "starting",
        "its pods are not all ready yet (WaitForStart: Not all pods are ready or succeeded)",
    )
    assert "waitForPodsReady (30m00s) evicts it in 25m00s if they are not" in answer["verdict"]


def test_why_says_running_only_once_pods_are_ready() -> None:
    running = admitted_copy(pods_ready(200))
    answer = why(manager(dispatched("worker-2")), worker("worker-2", running))
    says(answer, "running", "admitted on worker-2 and runs there (PodsReady since 3m20s)")


def test_why_says_worker_lost_and_when_workerlosttimeout_evicts() -> None:
    answer = why(
        manager(dispatched("worker-2"), down=("worker-2",)),
        Snapshot("worker-2", error="unreachable: no answer"),
        timings=PROD,
    )
    says(
        answer,
        "worker-lost",
        "workerLostTimeout (15m00s, Pulumi.prod.yaml) has passed (in about 8m20s)",
    )


def test_why_does_not_call_a_worker_lost_that_only_fleetview_cannot_read() -> None:
    answer = why(
        manager(dispatched("worker-2")),
        Snapshot("worker-2", error="unauthorized: list nodes: Unauthorized"),
    )
    says(answer, "dispatched", "Kueue's connection to worker-2 is Active")
    assert "unauthorized: list nodes: Unauthorized" in answer["verdict"]
    assert "is lost" not in answer["verdict"]


# ---- evicted ------------------------------------------------------------------------------------


def test_why_says_preempted_by_the_workload_kueue_names_in_the_preempted_condition() -> None:
    answer = why(manager(preempted(), preemptor()), worker("worker-1"), worker("worker-2"))
    assert answer["state"] == "preempted"
    assert (
        f"It was preempted on manager 3m00s ago by Workload {TEAM}/job-urgent-1a2b3 (Job urgent, "
        "on manager, ClusterQueue team-a), for prioritization in the ClusterQueue."
    ) in answer["verdict"]
    assert (
        "it is back in its queue (requeued 2m50s ago); the scheduler has not tried it again yet"
        in answer["verdict"]
    )
    # Once the scheduler tried it again, its own message replaces the eviction's.
    tried = preempted()
    tried["status"]["conditions"][0] = cond("QuotaReserved", "False", "Pending", PENDING_MESSAGE)
    again = why(manager(tried, preemptor()), worker("worker-1"), worker("worker-2"))
    assert (
        f"back in its queue and waits for quota (requeued 2m50s ago): {PENDING_MESSAGE}"
        in again["verdict"]
    )
    assert "holds quota" not in answer["verdict"]
    assert "stranded" not in answer["verdict"]


def test_why_says_evicted_by_a_lost_worker_and_waits_for_the_job_within_the_grace() -> None:
    answer = why(manager(lost_holding_quota(60)), worker("worker-1"))
    says(
        answer,
        "evicted-worker-lost",
        "the worker it ran on was lost for longer than workerLostTimeout",
    )
    assert "Kueue is stopping its Job" in answer["verdict"]


def test_why_names_the_stale_pod_count_fix_for_an_eviction_still_holding_quota() -> None:
    answer = why(manager(lost_holding_quota(600)), worker("worker-1"), worker("worker-2"))
    says(answer, "evicted-holding-quota", "It still holds quota 10m00s after the eviction")
    assert "zero the Job's stale pod counts" in answer["verdict"]
    assert "redispatch" not in answer["verdict"]


def test_why_keeps_the_manager_only_stale_count_fix_off_a_single_clusters_eviction() -> None:
    held = lost_holding_quota(600)
    held["status"]["conditions"][2] = cond(
        "Evicted", "True", "PodsReadyTimeout", PODS_READY_TIMEOUT, 600
    )
    solo = dataclasses.replace(worker("solo", held), cluster="solo")
    answer = why(solo)
    says(answer, "evicted-holding-quota", "its Job still has active pods on solo")
    assert "stale pod counts" not in answer["verdict"]


def test_why_says_evicted_by_waitforpodsready_on_a_worker_and_which_setting_applies() -> None:
    answer = why(
        manager(evicted_on_worker()),
        worker("worker-1", copy_evicted_by_pods_ready()),
        worker("worker-2"),
    )
    assert answer["state"] == "evicted-on-worker"
    assert (
        "It was evicted on worker-1 and the manager evicted it too, 1m00s ago" in answer["verdict"]
    )
    assert (
        "waitForPodsReady (30m00s) evicted its copy there: its pods were not all ready in time "
        f"({PODS_READY_TIMEOUT})" in answer["verdict"]
    )
    assert "kueue.configuration.waitForPodsReady.timeout" in answer["verdict"]
    assert "Now it is back in its queue" in answer["verdict"]


def test_why_says_a_job_dispatched_again_after_worker_evictions_is_not_held_back_by_backoff() -> (
    None
):
    starting = admitted_copy(
        cond("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", 10), 10
    )
    answer = why(
        manager(redispatched_after_worker_evictions()),
        worker("worker-1", starting),
        worker("worker-2"),
    )
    says(
        answer,
        "starting",
        "waitForPodsReady (30m00s) evicts it in 29m50s if they are not",
        "It was evicted on a worker before (2 times, last on worker-1, dispatched again 15s ago: "
        "multikueue retryCount and the manager's Evicted condition)",
        "the worker's requeuingStrategy may not hold it back",
        "each new copy starts at 0",
        "raise kueue.configuration.waitForPodsReady.timeout",
    )
    # Running this time: the earlier eviction is said, not the pods-ready advice.
    running = admitted_copy(pods_ready(5), 10)
    answer = why(
        manager(redispatched_after_worker_evictions(1)),
        worker("worker-1", running),
        worker("worker-2"),
    )
    says(answer, "running", "It was evicted on a worker before (1 time, last on worker-1")
    assert "requeuingStrategy" not in answer["verdict"]
    # Never evicted: nothing said.
    plain = why(manager(dispatched("worker-1", 12)), worker("worker-1", starting))
    assert "before" not in plain["verdict"]


def test_why_says_evicted_by_waitforpodsready_once_the_backoff_is_over() -> None:
    # The backoff over: workload_controller.go sets Requeued=True (BackoffFinished) and clears
    # requeueAt; Evicted stays True until the next reservation.
    wl = team_b_in_backoff()
    wl["status"]["requeueState"] = {"count": 2}
    wl["status"]["conditions"][4] = cond(
        "Requeued", "True", "BackoffFinished", "The workload backoff was finished", 5
    )
    answer = why(manager(), worker("worker-1", wl), target="team-b/train")
    says(
        answer,
        "evicted-pods-ready",
        "evicted on worker-1 by waitForPodsReady (30m00s here) 30s ago",
        # the documented fix where the pods run (a worker, or a single cluster)
        "raise kueue.configuration.waitForPodsReady.timeout (docs/kueue-queueing.md",
    )
    assert "back in its queue (requeued 2 times so far, last 5s ago)" in answer["verdict"]
    # Evicted by the manager's own waitForPodsReady (on only where the stack sets it): its key.
    on_manager = team_b_in_backoff()
    on_manager["status"]["requeueState"] = {"count": 2}
    answer = why(manager(on_manager), target="team-b/train")
    says(answer, "evicted-pods-ready", "kueue.managerConfiguration.waitForPodsReady")


def test_why_says_evicted_because_its_queue_stopped() -> None:
    # workload_controller.go reconcileOnClusterQueueActiveState: stopPolicy HoldAndDrain.
    message = "The ClusterQueue is stopped"
    wl = workload(
        TEAM,
        JOB,
        conditions=[
            cond("QuotaReserved", "False", "Inadmissible", "ClusterQueue team-a is stopped", 50),
            cond("Evicted", "True", "ClusterQueueStopped", message, 60),
        ],
    )
    answer = why(manager(wl))
    says(answer, "evicted-queue-stopped", f"as its queue stopped: {message}")


def test_why_finds_a_job_on_a_worker_only_queue_and_says_it_is_in_requeue_backoff() -> None:
    w1 = worker("worker-1", team_b_in_backoff())
    answer = why(manager(), w1, worker("worker-2"), target="team-b/train")
    assert (answer["cluster"], answer["state"]) == ("worker-1", "backoff")
    assert (
        "queued on worker-1's own LocalQueue team-b (not through the manager)" in answer["verdict"]
    )
    assert "evicted on worker-1 by waitForPodsReady (30m00s here)" in answer["verdict"]
    assert (
        "requeue backoff until 20:01:30Z (in 1m30s) (requeued 2 times so far)" in answer["verdict"]
    )
    assert "has not taken the job in" not in answer["verdict"]


def test_why_says_deactivated_and_what_brings_it_back() -> None:
    message = (
        "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
    )
    wl = workload(
        TEAM,
        JOB,
        active=False,
        conditions=[
            cond("QuotaReserved", "False", "Pending", message),
            cond("Evicted", "True", "DeactivatedDueToRequeuingLimitExceeded", message),
        ],
    )
    answer = why(manager(wl))
    assert answer["state"] == "deactivated"
    assert message in answer["verdict"]
    assert "until spec.active is true" in answer["verdict"]


def test_why_says_finished_with_kueues_reason() -> None:
    wl = workload(
        TEAM, JOB, conditions=[cond("Finished", "True", "Succeeded", "Job finished successfully")]
    )
    answer = why(manager(wl))
    says(answer, "finished", "The job finished (Succeeded): Job finished successfully")


# ---- stranded, and only then --------------------------------------------------------------------


def test_why_says_stranded_and_names_the_redispatch_fix_only_with_nothing_nominated_anywhere() -> (
    None
):
    answer = why(manager(reserved(600)), worker("worker-1"), worker("worker-2"))
    says(answer, "stranded", "nominated to no worker and has no copy on any")
    assert "aks-batch-fleet/redispatch" in answer["verdict"]
    fresh = why(manager(reserved(30)), worker("worker-1"), worker("worker-2"))
    assert fresh["state"] == "dispatching"
    assert "stranded" not in fresh["verdict"]


def test_why_says_the_copy_is_missing_when_no_nominated_worker_holds_one_past_the_rounds() -> None:
    def at(seconds: float) -> Any:
        return why(
            manager(reserved(seconds, ["worker-1"]), since=3600),
            worker("worker-1"),
            worker("worker-2"),
            timings=PROD,
        )

    assert at(540)["state"] == "nominated"
    late = at(660)
    assert late["state"] == "copy-missing"
    assert (
        "none of them holds a copy (over 10m00s): Kueue could not create it there"
        in (late["verdict"])
    )
    assert "aks-batch-fleet/redispatch" not in late["verdict"]


def test_status_does_not_warn_of_backlog_nor_a_round_of_the_incremental_dispatcher() -> None:
    backlog = (
        manager(reserved(720, ["worker-1", "worker-2"])),
        worker("worker-1", copy_pending_quota()),
        worker("worker-2", copy_pending_quota()),
    )
    assert warnings_of(*backlog) == []
    one_round = (
        manager(reserved(420, ["worker-1"])),
        worker("worker-1", copy_pending_quota()),
        worker("worker-2"),
    )
    assert warnings_of(*one_round, timings=PROD) == []


def test_status_warns_undispatched_past_the_dispatchers_bound_only() -> None:
    # Nominated to worker-1 but no copy there: Incremental (step 1, 2 workers) explains one more
    # round (5 min) on top of the grace (5 min).
    def at(seconds: float) -> list[tuple[str, str]]:
        return warnings_of(
            manager(reserved(seconds, ["worker-1"]), since=3600),
            worker("worker-1"),
            worker("worker-2"),
            timings=PROD,
        )

    assert at(540) == []
    assert at(660) == [("Undispatched", f"{TEAM}/{WL}")]
    [late] = report(
        [manager(reserved(660, ["worker-1"]), since=3600), worker("worker-1"), worker("worker-2")],
        NOW,
        300,
        PROD,
    )["warnings"]
    assert "nominated to worker-1 but no copy on any of them" in late["message"]
    assert "Kueue could not create its copy there" in late["message"]
    # Nothing nominated: Kueue nominates at once, so the grace alone.
    stranded = report([manager(reserved(600)), worker("worker-1"), worker("worker-2")], NOW, 300)
    [warning] = stranded["warnings"]
    assert (warning["kind"], warning["object"]) == ("Undispatched", f"{TEAM}/{WL}")
    assert "nominated to no worker and no copy on any" in warning["message"]


def test_status_does_not_warn_of_a_finished_job_that_never_had_a_worker() -> None:
    done = reserved(3600)
    done["status"]["conditions"].append(
        cond("Finished", "True", "Failed", "Job was deleted before it was dispatched", 3000)
    )
    assert warnings_of(manager(done), worker("worker-1"), worker("worker-2")) == []


def test_status_warns_of_an_eviction_still_holding_quota_not_of_undispatched() -> None:
    assert warnings_of(manager(lost_holding_quota(60)), worker("worker-1")) == []
    assert warnings_of(manager(lost_holding_quota(600)), worker("worker-1")) == [
        ("EvictedHoldingQuota", f"{TEAM}/{WL}")
    ]


def test_status_does_not_warn_of_a_booking_that_expired_after_admission() -> None:
    # cluster-autoscaler processors/provreq/processor.go: BookingExpired=True on every Provisioned
    # request after 10 min; Kueue ignores it for an admitted Workload (provisioning/controller.go).
    expired = provisioning_request(
        TEAM,
        WL,
        [
            cond("Accepted", "True", "Accepted", "Provisioning Request was accepted", 900),
            cond(
                "Provisioned",
                "True",
                "Provisioned",
                "Provisioning Request was successfully provisioned.",
                840,
            ),
            cond(
                "BookingExpired",
                "True",
                "CapacityReservationTimeExpired",
                "Capacity reservation time expired",
                240,
            ),
        ],
    )
    running = admitted_copy(
        pods_ready(700),
        840,
    )
    assert (
        warnings_of(manager(dispatched("worker-2")), worker("worker-2", running, prs=(expired,)))
        == []
    )
    # Before admission the same condition makes Kueue retry the gate: worth a look.
    waiting = copy(
        [quota_reserved(900)],
        [check_state("provisioning", "Pending", "")],
        admitted_to=TEAM,
    )
    assert warnings_of(
        manager(reserved(900, ["worker-2"])), worker("worker-2", waiting, prs=(expired,))
    ) == [("ProvisioningRequestFailed", f"{TEAM}/{WL}-provisioning-1")]


def test_status_rows_carry_why_state_of_every_job_on_the_manager() -> None:
    snaps = [manager(preempted(), preemptor()), worker("worker-1"), worker("worker-2")]
    found = states(snaps, NOW, 300)
    assert found == {
        ("manager", TEAM, WL): "preempted",
        ("manager", TEAM, "job-urgent-1a2b3"): "nominated",
    }
    [ds] = report(snaps, NOW, 300, None, found)["clusters"][0]["dispatchSets"]
    assert [(w["name"], w["phase"], w["state"]) for w in ds["workloads"]] == [
        (WL, "evicted", "preempted"),
        ("job-urgent-1a2b3", "reserved", "nominated"),
    ]


def test_status_says_when_workerlosttimeout_moves_a_lost_workers_jobs() -> None:
    out = report([manager(dispatched("worker-2"), down=("worker-2",))], NOW, 300, PROD)
    [warning] = [w for w in out["warnings"] if w["object"] == "worker-2"]
    assert warning["kind"] == "MultiKueueClusterNotActive"
    assert warning["message"].endswith(
        "; 1 job admitted there is evicted and dispatched again once workerLostTimeout "
        "(15m00s, Pulumi.prod.yaml) has passed: in about 8m20s"
    ), warning["message"]
    quiet = report([manager(down=("worker-1",))], NOW, 300, PROD)["warnings"]
    assert quiet[0]["message"].endswith("; no job admitted there")


def test_status_reports_the_timings_it_judged_with() -> None:
    out = report([manager()], NOW, 300, PROD)
    assert out["timings"] == {
        "source": "Pulumi.prod.yaml",
        "dispatcher": "Incremental",
        "stepSize": 1,
        "roundSeconds": 300.0,
        "workerLostTimeoutSeconds": 900.0,
        "note": "",
    }


# ---- the timings come from the stack --------------------------------------------------------


def test_timings_follow_each_committed_stacks_dispatcher_and_timeouts() -> None:
    prod, dev = from_stack_file("prod"), from_stack_file("dev")
    assert (prod.source, prod.dispatcher, prod.step_size) == ("Pulumi.prod.yaml", "Incremental", 1)
    # prod's team-a set has 3 workers, one per 5-minute round: 2 more rounds after the first.
    assert prod.dispatch_bound(3) == 600
    assert (dev.dispatcher, dev.dispatch_bound(2)) == ("AllAtOnce", 0)
    for t in (prod, dev):
        assert t.worker_lost_timeout == 900  # Kueue's default: neither stack sets it
        # This program turns the manager's waitForPodsReady off; workers keep Kueue 0.19's 30m.
        assert (t.pods_ready_timeout_on("manager"), t.pods_ready_timeout_on("worker-1")) == (
            None,
            1800,
        )


def test_timings_read_a_stacks_worker_lost_timeout_and_pods_ready_timeout(tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    kueue = doc["config"]["aks-batch-fleet:fleet"]["kueue"]
    kueue["multiKueue"] = {"dispatcher": "Incremental", "workerLostTimeout": "2m"}
    kueue["configuration"] = {"waitForPodsReady": {"timeout": "45m"}}
    (tmp_path / "Pulumi.edited.yaml").write_text(yaml.safe_dump(doc))
    t = from_stack_file("edited", tmp_path)
    assert (t.dispatcher, t.step_size, t.worker_lost_timeout) == ("Incremental", 3, 120)
    assert t.pods_ready_timeout_on("worker-2") == 2700
    missing = from_stack_file("absent", tmp_path)
    assert (missing.source, missing.dispatcher) == ("Kueue v0.19.2 defaults", "AllAtOnce")
    assert "no stack file Pulumi.absent.yaml" in missing.note
