"""A Workload's story on the cluster where its pods would run: a worker's MultiKueue copy, or the
Workload itself on a single cluster or a worker's own queue (pure; for `why`'s verdict)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from fleetview import kueuestate as ks
from fleetview.objects import (
    PROVISIONING_CONTROLLER,
    Snapshot,
    age,
    condition,
    human,
    is_true,
    name,
    namespace,
    parse_time,
)
from fleetview.seen import Seen, at, kubectl, message_of, pr_message, requests_of
from fleetview.status import FIX_STUCK_COPY, check_states, provisioning_state, queue_of


def _is_provisioning(snap: Snapshot, check: str) -> bool:
    return any(
        name(ac) == check
        and (ac.get("spec") or {}).get("controllerName") == PROVISIONING_CONTROLLER
        for ac in snap.admission_checks
    )


def _retry_limit(snap: Snapshot, check: str) -> int | None:
    """The gate's retryStrategy.backoffLimitCount (its ProvisioningRequestConfig; the CRD defaults
    it to 3): provisioning/controller.go retries while the attempt is <= it, then rejects."""
    ac = next((a for a in snap.admission_checks if name(a) == check), None)
    params = str(((ac or {}).get("spec") or {}).get("parameters", {}).get("name") or "")
    prc = next((p for p in snap.provisioning_request_configs if name(p) == params), None)
    if prc is None:
        return None
    strategy = (prc.get("spec") or {}).get("retryStrategy") or {}
    return int(strategy.get("backoffLimitCount", 3))


def position(snap: Snapshot, wl: Mapping[str, Any], cq: str | None) -> str:
    """Its place in the ClusterQueue, from the visibility API where the cluster serves it."""
    if snap.pending_workloads is None:
        why = snap.visibility_note or "not read"
        return f"its position in the queue is unknown (visibility API on {snap.cluster}: {why})"
    items = snap.pending_workloads.get(cq or "", [])
    me = next(
        (
            i
            for i in items
            if (i.get("metadata") or {}).get("name") == name(wl)
            and (i.get("metadata") or {}).get("namespace") == namespace(wl)
        ),
        None,
    )
    if me is None:
        return f"the visibility API does not list it among ClusterQueue {cq}'s {len(items)} pending"
    ahead = int(me.get("positionInClusterQueue") or 0)
    local = int(me.get("positionInLocalQueue") or 0)
    return (
        f"{ahead} Workload{'s' if ahead != 1 else ''} ahead of it in ClusterQueue {cq} "
        f"({local} in LocalQueue {me.get('localQueueName')}), of {len(items)} pending"
    )


def local_story(
    cluster: str, wl: Mapping[str, Any], snap: Snapshot, seen: Seen
) -> tuple[str, str, str]:
    """(state, story, next) of a Workload on the cluster where its pods would run."""
    ns, wl_name, now = namespace(wl), name(wl), seen.now
    show = kubectl(cluster, f"get workload -n {ns} {wl_name} -o yaml")
    ev = ks.evicted(wl)
    if is_true(wl, "Finished"):
        return "finished", f"it finished on {cluster}: {message_of(wl, 'Finished')}", show
    if ev is not None:
        kind = ks.eviction_kind(wl)
        if kind == "pods-ready-timeout":
            return (
                "evicted-pods-ready",
                f"on {cluster} waitForPodsReady evicted it "
                f"{human(age(ev.get('lastTransitionTime'), now))} ago: {ev.get('message')}; "
                "the manager dispatches it again",
                show,
            )
        if kind == "admission-check":
            stuck = ks.stuck_copy_for(wl, now)
            if stuck is not None and stuck > seen.grace:
                return (
                    "gate-stuck",
                    f"on {cluster} its gate failed and Kueue evicted this copy {human(stuck)} "
                    f"ago ({ev.get('message')}), but the copy still holds {cluster}'s quota: "
                    "Kueue 0.19.2 releases it by stopping the copy's Job, which MultiKueue makes "
                    "on a worker only at admission, so the gate does not try again there. The "
                    f"fix: {FIX_STUCK_COPY}: "
                    + kubectl(cluster, f"delete workload -n {ns} {wl_name}"),
                    show,
                )
            return gate_story(cluster, wl, snap, seen)
        return (
            "evicted",
            f"on {cluster} it is evicted ({ev.get('reason')}): {ev.get('message')}",
            show,
        )
    if not ks.holds_quota(wl):
        if ks.in_backoff(wl, now) is not None:
            return gate_story(cluster, wl, snap, seen)
        blocked = ks.queue_blocked(wl)
        if blocked:
            return (
                "queue-stopped",
                f"on {cluster} its queue does not admit: {blocked}",
                kubectl(cluster, f"get localqueues -n {ns} -o yaml"),
            )
        msg = message_of(wl, "QuotaReserved") or "no reason given yet"
        return (
            "pending",
            f"on {cluster} it waits for quota: {msg}; {position(snap, wl, queue_of(wl, snap))}",
            kubectl(cluster, f"get clusterqueue {queue_of(wl, snap) or '-A'} -o yaml"),
        )
    if not is_true(wl, "Admitted"):
        return gate_story(cluster, wl, snap, seen)
    ready = condition(wl, "PodsReady")
    if ready is not None and ready.get("status") == "True":
        return (
            "running",
            f"it is admitted on {cluster} and runs there (PodsReady since "
            f"{human(age(ready.get('lastTransitionTime'), now))})",
            kubectl(cluster, f"get pods -n {ns} -o wide"),
        )
    # Admitted, pods not all ready: waitForPodsReady counts from Admitted (WaitForStart) or from
    # PodsReady=False (WaitForRecovery): workload_controller.go admittedNotReadyWorkload.
    admitted = condition(wl, "Admitted") or {}
    recovering = ready is not None and ready.get("reason") == "WaitForRecovery"
    start = (ready if ready is not None and recovering else admitted).get("lastTransitionTime")
    elapsed = age(start, now)
    timeout = seen.timings.pods_ready_timeout_on(cluster)
    if timeout is None:
        bound = "waitForPodsReady is off there, so nothing times it out"
    else:
        left = timeout - (elapsed or 0.0)
        bound = (
            f"waitForPodsReady ({human(timeout)}) evicts it in {human(left)} if they are not"
            if left > 0
            else f"waitForPodsReady ({human(timeout)}) is due to evict it"
        )
    why = f"{ready.get('reason')}: {ready.get('message')}" if ready else "no PodsReady yet"
    return (
        "starting",
        f"it is admitted on {cluster} {human(elapsed)} ago and its pods are not all ready yet "
        f"({why}); {bound}",
        kubectl(cluster, f"get pods -n {ns} -o wide")
        + " ; then the pods' events (image pulls, scheduling, node scale-up)",
    )


def gate_story(
    cluster: str, wl: Mapping[str, Any], snap: Snapshot, seen: Seen
) -> tuple[str, str, str]:
    """Quota reserved on the cluster, an admission check (the provisioning gate) not Ready."""
    ns, now = namespace(wl), seen.now
    gates = [c for c in check_states(wl) if c.get("state") != "Ready"]
    prs = requests_of(snap, wl)
    newest = max(
        prs, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp")), default=None
    )
    for gate in gates:
        if not (prs or _is_provisioning(snap, str(gate.get("name")))):
            continue
        state = str(gate.get("state") or "Pending")
        retries = int(gate.get("retryCount") or 0)
        # In Retry the next attempt is lastTransitionTime + requeueAfterSeconds (provisioning/
        # controller.go UpdateAdmissionCheckRequeueState; pkg/workload/admissionchecks.go
        # GetMaxRetryTime, which the workload controller copies to requeueState.requeueAt).
        # After the eviction the check is Pending again with a new lastTransitionTime
        # (evict.go resetChecksOnEviction): then requeueAt, not the check, says when.
        after = gate.get("requeueAfterSeconds")
        next_try = ""
        changed = parse_time(gate.get("lastTransitionTime"))
        if after and changed is not None and state == "Retry":
            next_try = f", next attempt at {at(changed + dt.timedelta(seconds=int(after)), now)}"
        _, requeue_at = ks.requeue_state(wl)
        if not next_try and requeue_at is not None and requeue_at > now:
            next_try = f", next attempt at {at(requeue_at, now)}"
        if newest is None:
            said = "says no ProvisioningRequest yet"
        elif not (newest.get("status") or {}).get("conditions"):
            # Not even Accepted: no autoscaler has looked at it (none runs, or it does not
            # serve ProvisioningRequests), or it has not got to it yet.
            said = f"has not answered ProvisioningRequest {name(newest)} (no condition on it yet)"
        else:
            said = f"says {provisioning_state(newest)}: {pr_message(newest)}".rstrip(": ")
        limit = _retry_limit(snap, str(gate.get("name")))
        failing = state == "Retry" or retries > 0
        # retryCount counts the failed attempts already behind an eviction (evict.go); in Retry
        # the current attempt has failed and the eviction that counts it is still to come.
        tried = f"attempt {retries + 1}" if failing else "first attempt"
        if failing and limit is not None:
            tried += f" of {limit + 1}" if limit else " (backoffLimitCount 0: no retry)"
        if state == "Retry":
            tried += " failed"
        last = (
            f"; after attempt {limit + 1} the check is Rejected and the Workload deactivated"
            if failing and limit
            else ""
        )
        holding = "holds quota and waits" if ks.holds_quota(wl) else "waits"
        return (
            "gate-retry" if failing else "at-gate",
            f"on {cluster} it {holding} at its provisioning gate {gate.get('name')} "
            f"({state}, {tried}{next_try}{last}); the cluster autoscaler {said}",
            kubectl(cluster, f"get provisioningrequests -n {ns} -o yaml")
            + " ; then the cluster autoscaler's events and logs",
        )
    names = ", ".join(f"{g.get('name')}={g.get('state')}" for g in gates) or "none pending"
    return (
        "at-gate",
        f"on {cluster} it holds quota and waits for admission checks: {names}",
        kubectl(cluster, f"get workload -n {ns} {name(wl)} -o yaml"),
    )
