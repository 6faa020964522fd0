"""What Kueue v0.19.2's own conditions, reasons and messages say about a Workload (pure).

Every rule here reads a field exactly as Kueue writes it; the comment beside it names the file of
the v0.19.2 source (kubernetes-sigs/kueue at tag v0.19.2, commit 8eab687) that writes it, so a
Kueue upgrade is checked against those files (docs/observability.md "Verdicts").
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any, Final

from fleetview.objects import ORIGIN_LABEL, age, condition, is_true, parse_time

# apis/kueue/v1beta2/workload_types.go: reasons of the Evicted condition.
EVICTED_BY_PREEMPTION: Final = "Preempted"
EVICTED_BY_PODS_READY_TIMEOUT: Final = "PodsReadyTimeout"
EVICTED_BY_ADMISSION_CHECK: Final = "AdmissionCheck"
EVICTED_BY_CLUSTER_QUEUE_STOPPED: Final = "ClusterQueueStopped"
EVICTED_BY_LOCAL_QUEUE_STOPPED: Final = "LocalQueueStopped"
EVICTED_ON_MANAGER: Final = "EvictedOnManagerCluster"
DEACTIVATED: Final = "Deactivated"
# The same file: reasons of QuotaReserved=False a stopped or inactive queue gives (Suspended with
# the UnadmittedWorkloadsObservability gate, beta and off in 0.19.2; Inadmissible without it).
QUEUE_BLOCKED_REASONS: Final = ("Suspended", "Inadmissible", "Misconfigured")
# pkg/scheduler/preemption/preemption.go preemptionMessage and HumanReadablePreemptionReasons.
_PREEMPTOR: Final = re.compile(r"\(UID: ([^,]+), JobUID: ([^)]+)\)")
PREEMPTION_REASONS: Final = {
    "InClusterQueue": "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
    "InCohortFairSharing": "Fair Sharing within the cohort",
    "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
}
# pkg/controller/admissionchecks/multikueue/workload.go: the MultiKueue check's Retry messages,
# which the manager's eviction message quotes (workload_controller.go buildAdmissionChecksMessage).
WORKER_LOST: Final = "Admitting remote lost"
EVICTED_ON_WORKER: Final = "Workload evicted on worker cluster"
WORKER_IN_MESSAGE: Final = re.compile(r'Workload evicted on worker cluster: "([^"]+)"')


def holds_quota(wl: Mapping[str, Any]) -> bool:
    return is_true(wl, "QuotaReserved")


def evicted(wl: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Evicted condition while True (Kueue keeps it True until the next quota reservation:
    pkg/workload/workload.go SetQuotaReservation -> resetActiveCondition)."""
    c = condition(wl, "Evicted")
    return c if c is not None and c.get("status") == "True" else None


def eviction_kind(wl: Mapping[str, Any]) -> str | None:
    """Why a Workload was evicted, from Evicted's reason and message; None when it was not."""
    c = evicted(wl)
    if c is None:
        return None
    reason, message = str(c.get("reason") or ""), str(c.get("message") or "")
    if reason.startswith(DEACTIVATED):
        return "deactivated"
    if reason == EVICTED_BY_PREEMPTION:
        return "preempted"
    if reason == EVICTED_BY_PODS_READY_TIMEOUT:
        return "pods-ready-timeout"
    if reason == EVICTED_BY_ADMISSION_CHECK and WORKER_LOST in message:
        return "worker-lost"
    if reason == EVICTED_BY_ADMISSION_CHECK and EVICTED_ON_WORKER in message:
        return "evicted-on-worker"
    if reason in (EVICTED_BY_CLUSTER_QUEUE_STOPPED, EVICTED_BY_LOCAL_QUEUE_STOPPED):
        return "queue-stopped"
    if reason == EVICTED_BY_ADMISSION_CHECK:
        return "admission-check"
    if reason == EVICTED_ON_MANAGER:
        return "evicted-on-manager"
    return "other"


def stuck_copy_for(wl: Mapping[str, Any], now: dt.datetime) -> float | None:
    """Seconds since a worker's MultiKueue copy was evicted at its gate while it still holds
    quota; None for anything else. Such a copy stays so: jobframework/reconciler.go releases an
    evicted Workload's quota by stopping its Job, and MultiKueue creates the Job on a worker
    only at admission (multikueue/workload.go step 6b, SyncJob), so the provisioning check's
    retry (provisioning/controller.go) never runs there, and the manager acts on a copy's
    eviction only once its check is Ready (step 4). Seen on the real Kueue v0.19.2
    (tests/realtier/test_fleetview_gate_retry.py); upstream kubernetes-sigs/kueue#8089."""
    labels = (wl.get("metadata") or {}).get("labels") or {}
    ev = evicted(wl)
    if (
        ORIGIN_LABEL not in labels
        or ev is None
        or eviction_kind(wl) != "admission-check"
        or not holds_quota(wl)
        or is_true(wl, "Admitted")
    ):
        return None
    return age(ev.get("lastTransitionTime"), now) or 0.0


def preemptor(wl: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(Workload UID, Job UID, reason in words) of who preempted it, from the Preempted condition
    (preemption.go IssuePreemptions -> SetPreemptedCondition); None when not preempted."""
    c = condition(wl, "Preempted")
    ev = evicted(wl)
    if c is None or c.get("status") != "True":
        if ev is None or ev.get("reason") != EVICTED_BY_PREEMPTION:
            return None
        c = ev
    found = _PREEMPTOR.search(str(c.get("message") or ""))
    words = PREEMPTION_REASONS.get(str(c.get("reason") or ""), "")
    if found is None:
        return ("UNKNOWN", "UNKNOWN", words)
    return (found.group(1).strip(), found.group(2).strip(), words)


def requeue_state(wl: Mapping[str, Any]) -> tuple[int, dt.datetime | None]:
    """`status.requeueState`: (count, requeueAt). workload.go UpdateRequeueState/SetRequeueState."""
    state = (wl.get("status") or {}).get("requeueState") or {}
    return int(state.get("count") or 0), parse_time(state.get("requeueAt"))


def in_backoff(wl: Mapping[str, Any], now: dt.datetime) -> dt.datetime | None:
    """requeueAt while it is ahead and the Workload waits for it (no quota, not requeued yet:
    workload_controller.go sets Requeued=True, BackoffFinished, once requeueAt has passed)."""
    _, at = requeue_state(wl)
    if at is None or at <= now or holds_quota(wl):
        return None
    requeued = condition(wl, "Requeued")
    if requeued is not None and requeued.get("status") == "True":
        return None
    return at


def queue_blocked(wl: Mapping[str, Any]) -> str | None:
    """The message of QuotaReserved=False when a queue is stopped, inactive or missing
    (workload_controller.go getQueueBlocker and reconcileOn*QueueActiveState), else None."""
    c = condition(wl, "QuotaReserved")
    if c is None or c.get("status") != "False" or c.get("reason") not in QUEUE_BLOCKED_REASONS:
        return None
    message = str(c.get("message") or "")
    words = ("is stopped", "is inactive", "doesn't exist", "is terminating or missing")
    return message if any(w in message for w in words) else None
