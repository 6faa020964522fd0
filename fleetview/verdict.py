"""`why`'s verdict: one `state` word, a sentence and the next thing to look at, for each state a
job's Workload can be in on the manager (pure). Where the pods would run is fleetview.localstory.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from builders.multikueue import k8s_name
from fleetview import kueuestate as ks
from fleetview.localstory import local_story, position
from fleetview.objects import age, condition, human, is_true, name, namespace
from fleetview.seen import Seen, at, kubectl, message_of
from fleetview.status import check_states, queue_of, workload_phase

# docs/operations.md, "When things go wrong": the two documented fixes `why` tells apart.
FIX_STALE_COUNTS = (
    'docs/operations.md "A worker cluster lost with jobs running on it": zero the Job\'s stale '
    "pod counts (kubectl patch job NAME -n NAMESPACE --subresource=status --type=merge "
    '-p \'{"status":{"active":0,"ready":0}}\') once its pods run nowhere'
)


FIX_REDISPATCH = (
    'docs/operations.md "The manager\'s Kueue killed mid-dispatch": give the Workload an update '
    "event (kubectl annotate workload NAME -n NAMESPACE "
    'aks-batch-fleet/redispatch="$(date +%s)" --overwrite)'
)


# docs/kueue-queueing.md "waitForPodsReady: what each cluster runs": the setting that times a
# start out, by where the eviction happened (a worker or standalone cluster, or the manager).
PODS_READY_DOCS = '(docs/kueue-queueing.md "waitForPodsReady: what each cluster runs")'
FIX_PODS_READY = (
    "if its pods need longer (a GPU pool from zero, a large image), raise "
    f"kueue.configuration.waitForPodsReady.timeout {PODS_READY_DOCS}; if they never get ready, "
    "their events say why (image, scheduling, probes)"
)
FIX_PODS_READY_MANAGER = (
    "the manager's own timeout evicted it (kueue.managerConfiguration.waitForPodsReady, off "
    f"unless the stack sets it) {PODS_READY_DOCS}: raise it, or remove it to leave the start to "
    "the worker's"
)


def _preemptor_words(seen: Seen) -> str:
    found = ks.preemptor(seen.wl)
    if found is None:
        return "by a Workload Kueue did not name"
    uid, job_uid, why = found
    for snap in seen.snaps:
        for w in snap.workloads:
            if uid != "UNKNOWN" and (w.get("metadata") or {}).get("uid") == uid:
                owner = next(iter((w.get("metadata") or {}).get("ownerReferences") or []), {})
                job = f"{owner.get('kind')} {owner.get('name')}, " if owner else ""
                return (
                    f"by Workload {namespace(w)}/{name(w)} ({job}on {snap.cluster}, "
                    f"ClusterQueue {queue_of(w, snap) or '?'})" + (f", for {why}" if why else "")
                )
    return f"by the Workload with UID {uid} (Job UID {job_uid}; not among the Workloads read)" + (
        f", for {why}" if why else ""
    )


def _requeue_words(wl: Mapping[str, Any], now: dt.datetime) -> str:
    """What happens next to an evicted Workload that gave its quota back."""
    count, _ = ks.requeue_state(wl)
    backoff = ks.in_backoff(wl, now)
    parts = [f"requeued {count} time{'s' if count != 1 else ''} so far"] if count else []
    requeued = condition(wl, "Requeued") or {}
    if requeued.get("status") == "True":
        # Requeued=True: reconciler.go for a preemption, BackoffFinished after a backoff.
        when = human(age(requeued.get("lastTransitionTime"), now))
        parts.append(f"last {when} ago" if count else f"requeued {when} ago")
    tries = f" ({', '.join(parts)})" if parts else ""
    if backoff is not None:
        return (
            f"it is in requeue backoff until {at(backoff, now)}{tries}: Kueue puts it back in its "
            "queue then (status.requeueState.requeueAt)"
        )
    msg = message_of(wl, "QuotaReserved")
    if not msg or msg == message_of(wl, "Evicted"):
        # reconciler.go unsets QuotaReserved with the eviction's message; the scheduler writes
        # its own once it has tried the Workload again.
        return f"it is back in its queue{tries}; the scheduler has not tried it again yet"
    return f"it is back in its queue and waits for quota{tries}: {msg}"


def verdict(seen: Seen) -> tuple[str, str, str]:
    """(state, verdict, next) of the job's Workload where it lives."""
    home, wl = seen.home, seen.wl
    ns, wl_name, cluster = namespace(wl), name(wl), home.cluster
    show = kubectl(cluster, f"get workload -n {ns} {wl_name} -o yaml")
    ev = ks.evicted(wl)
    kind = ks.eviction_kind(wl)

    # spec.active=false: workload_controller.go evicts it (reason Deactivated[...]); nothing
    # requeues it until someone sets spec.active=true again.
    if (wl.get("spec") or {}).get("active") is False:
        why = message_of(wl, "Evicted") or message_of(wl, "DeactivationTarget") or "no reason given"
        return (
            "deactivated",
            f"The Workload is deactivated (spec.active=false): {why}. Kueue will not admit it "
            "again until spec.active is true (or the job is resubmitted).",
            show,
        )
    if is_true(wl, "Finished"):
        reason = (condition(wl, "Finished") or {}).get("reason") or "?"
        return (
            "finished",
            f"The job finished ({reason}): {message_of(wl, 'Finished') or 'no message'}",
            show,
        )

    if ev is not None:
        return _evicted(seen, ev, kind or "other", show)

    if not ks.holds_quota(wl):
        return _pending(seen, show)

    if seen.dispatch is None:
        # Not MultiKueue: a single cluster, or a worker's own queue, with its own gates.
        state, story, nxt = local_story(cluster, wl, home, seen)
        return state, story[0].upper() + story[1:].rstrip(".") + ".", nxt
    return _dispatched(seen, show)


def _pending(seen: Seen, show: str) -> tuple[str, str, str]:
    home, wl, cq, now = seen.home, seen.wl, seen.cq, seen.now
    cluster = home.cluster
    backoff = ks.in_backoff(wl, now)
    if backoff is not None:
        count, _ = ks.requeue_state(wl)
        return (
            "backoff",
            f"It is in requeue backoff on {cluster} until {at(backoff, now)} (requeued {count} "
            f"time{'s' if count != 1 else ''}): "
            f"{message_of(wl, 'Requeued') or message_of(wl, 'QuotaReserved') or 'no message'}",
            show,
        )
    blocked = ks.queue_blocked(wl)
    queue = next((q for q in home.cluster_queues if name(q) == cq), None)
    if blocked is None and queue is not None and not is_true(queue, "Active"):
        blocked = f"ClusterQueue {cq} is inactive: {message_of(queue, 'Active')}"
    if blocked is not None:
        local = (wl.get("spec") or {}).get("queueName")
        lq = next(
            (q for q in home.local_queues if namespace(q) == namespace(wl) and name(q) == local),
            None,
        )
        policy = ((lq or {}).get("spec") or {}).get("stopPolicy")
        hold = f" (LocalQueue {local} stopPolicy {policy})" if policy and policy != "None" else ""
        cq_yaml = kubectl(cluster, f"get clusterqueue {cq or '-A'} -o yaml")
        return (
            "queue-stopped",
            f"It waits on {cluster} because its queue does not admit: {blocked}{hold}. It is not "
            "waiting for quota: it moves once the queue is resumed (on a drained worker: "
            'docs/operations.md "Draining a worker").',
            kubectl(cluster, f"get localqueue -n {namespace(wl)} {local} -o yaml")
            + f" ; {cq_yaml}",
        )
    msg = message_of(wl, "QuotaReserved") or "no reason given yet (not seen by the scheduler?)"
    return (
        "pending",
        f"It waits for quota on {cluster} (ClusterQueue {cq or '?'}): {msg}; "
        f"{position(home, wl, cq)}.",
        "the ClusterQueue's usage row in `status`, then "
        + kubectl(cluster, f"get clusterqueue {cq or '-A'} -o yaml"),
    )


def _evicted(seen: Seen, ev: Mapping[str, Any], kind: str, show: str) -> tuple[str, str, str]:
    """Evicted=True: who evicted it, whether it still holds quota, and what comes next."""
    wl, cluster, now = seen.wl, seen.home.cluster, seen.now
    since = age(ev.get("lastTransitionTime"), now)
    message = str(ev.get("message") or "")
    if kind == "preempted":
        what = f"It was preempted on {cluster} {human(since)} ago {_preemptor_words(seen)}"
        state = "preempted"
    elif kind == "worker-lost":
        what = (
            f"It was evicted on {cluster} {human(since)} ago because the worker it ran on was "
            f"lost for longer than workerLostTimeout ({human(seen.timings.worker_lost_timeout)}, "
            f"{seen.timings.source}): {message}"
        )
        state = "evicted-worker-lost"
    elif kind == "evicted-on-worker":
        what = _evicted_on_worker(seen, since, message)
        state = "evicted-on-worker"
    elif kind == "pods-ready-timeout":
        timeout = seen.timings.pods_ready_timeout_on(cluster)
        bound = f" ({human(timeout)} here)" if timeout else ""
        fix = FIX_PODS_READY_MANAGER if seen.home.is_manager else FIX_PODS_READY
        what = (
            f"It was evicted on {cluster} by waitForPodsReady{bound} {human(since)} ago: its pods "
            f"were not all ready in time ({message}); {fix}"
        )
        state = "evicted-pods-ready"
    elif kind == "queue-stopped":
        what = f"It was evicted on {cluster} {human(since)} ago as its queue stopped: {message}"
        state = "evicted-queue-stopped"
    else:
        reason = ev.get("reason") or "?"
        what = f"It was evicted on {cluster} {human(since)} ago ({reason}): {message}"
        state = "evicted"

    if ks.holds_quota(wl):
        # Kueue releases the quota once the Job has no active pods (jobframework/reconciler.go,
        # eviction: !job.IsActive()); a manager Job keeps the worker's last counts.
        if since is not None and since > seen.grace and not seen.home.is_manager:
            return (
                "evicted-holding-quota",
                f"{what}. It still holds quota {human(since)} after the eviction (over "
                f"{human(seen.grace)}): its Job still has active pods on {cluster} (stuck "
                "terminating, or on a node that is gone).",
                kubectl(cluster, f"get pods -n {namespace(wl)} -o wide") + f" ; {show}",
            )
        if since is not None and since > seen.grace:
            fix = FIX_STALE_COUNTS
            return (
                "evicted-holding-quota",
                f"{what}. It still holds quota {human(since)} after the eviction (over "
                f"{human(seen.grace)}): Kueue waits for its Job to have no active pods, and the "
                f"Job still counts some. The fix: {fix}.",
                kubectl(cluster, f"get job -n {namespace(wl)} -o wide") + f" ; {show}",
            )
        return (
            state,
            f"{what}. Kueue is stopping its Job; the quota is released once no pod of it is "
            "active, then it is queued again.",
            show,
        )
    if ks.in_backoff(wl, now) is not None:
        state = "backoff"
    return state, f"{what}. Now {_requeue_words(wl, now)}.", show


def _evicted_on_worker(seen: Seen, since: float | None, message: str) -> str:
    """The manager's eviction after a worker evicted its copy: which worker, and why there."""
    found = ks.WORKER_IN_MESSAGE.search(message)
    worker = found.group(1) if found else None
    copy = seen.copies.get(worker) if worker else None
    cause = "its copy there was evicted"
    if copy is not None and (ev := ks.evicted(copy)) is not None:
        cause = f"its copy there was evicted ({ev.get('reason')}: {ev.get('message')})"
        if ks.eviction_kind(copy) == "pods-ready-timeout":
            timeout = seen.timings.pods_ready_timeout_on(worker or "")
            bound = f" ({human(timeout)})" if timeout else ""
            cause = (
                f"waitForPodsReady{bound} evicted its copy there: its pods were not all ready in "
                f"time ({ev.get('message')}); {FIX_PODS_READY}"
            )
    where = worker or "a worker"
    return (
        f"It was evicted on {where} and the manager evicted it too, {human(since)} ago, to "
        f"dispatch it again: {cause}"
    )


def _evicted_before(seen: Seen, check: str, state: str) -> str:
    """A dispatched job a worker evicted before, admitted again: what the manager remembers.

    Kueue v0.19.2 (multikueue/workload.go step 4) turns a copy's eviction on a worker into the
    check's Retry, the manager evicts (workload_controller.go reconcileCheckBasedEviction), and
    evict.go resetChecksOnEviction counts it in the check's retryCount. Once the manager's Job
    stops, step 2 deletes the copies, and the manager reserves quota and dispatches new ones at
    once: its Evicted condition turns False ("Previously: ...", workload.go SetQuotaReservation)
    and its own requeueState stays empty. The evicted copy's requeueState (the worker's
    requeuingStrategy backoff and backoffLimitCount) mostly goes with it: a new copy starts at
    count 0 (on the twin a copy was sometimes kept, requeued after its own backoff instead).
    """
    ev = condition(seen.wl, "Evicted") or {}
    message = str(ev.get("message") or "")
    found = ks.WORKER_IN_MESSAGE.search(message)
    if ev.get("status") != "False" or found is None:
        return ""
    retries = next(
        (int(c.get("retryCount") or 0) for c in check_states(seen.wl) if c.get("name") == check),
        0,
    )
    times = f"{retries} time{'s' if retries != 1 else ''}, " if retries else ""
    since = human(age(ev.get("lastTransitionTime"), seen.now))
    text = (
        f" It was evicted on a worker before ({times}last on {found.group(1)}, dispatched again "
        f"{since} ago: {check} retryCount and the manager's Evicted condition)"
    )
    if state != "starting":
        return text + "."
    return (
        f"{text}, and its pods are not ready this time either: if waitForPodsReady evicted it, "
        "the worker's requeuingStrategy may not hold it back (its backoff and "
        "backoffLimitCount count in the copy's requeueState, and the manager mostly deletes an "
        "evicted copy and dispatches a new one: each new copy starts at 0), so it can be "
        f"dispatched again each time its pods miss the timeout; {FIX_PODS_READY}."
    )


def _dispatch_note(seen: Seen) -> str:
    """What the stack's dispatcher does next for a job no worker admitted yet."""
    t, nominated, workers = seen.timings, seen.nominated, seen.config_workers
    if t.dispatcher != "Incremental":
        return f"the {t.dispatcher} dispatcher offers it to every connected worker of its set"
    rest = [w for w in workers if w not in nominated]
    if not rest:
        return "the Incremental dispatcher has offered it to every worker of its set"
    return (
        f"the Incremental dispatcher ({t.source}) adds the next {t.step_size} of "
        f"{', '.join(rest)} after each {human(t.round_seconds)} round in which no worker admits "
        "it (the round's start is in Kueue's memory, not in the Workload)"
    )


def _dispatched(seen: Seen, show: str) -> tuple[str, str, str]:
    """Quota reserved on a MultiKueue manager: where the job is among the workers."""
    home, wl, cq, dispatch, worker = seen.home, seen.wl, seen.cq, seen.dispatch, seen.worker
    assert dispatch is not None
    check, config = dispatch
    cluster, ns, wl_name, now = home.cluster, namespace(wl), name(wl), seen.now
    if worker:
        mkc = seen.mkcs.get(worker)
        snap = seen.others.get(k8s_name(worker))
        lost = mkc is not None and not is_true(mkc, "Active")
        if not lost and snap is not None and not snap.reachable:
            # Kueue still reaches it; only this command does not (credentials, network).
            return (
                "dispatched",
                f"It was dispatched to {worker}, and Kueue's connection to {worker} is Active, "
                f"but this command could not read {worker} ({snap.error}), so its copy was not "
                "looked at.",
                f"fix fleetview's access to {worker} (its kubeconfig, --login), then run again",
            )
        if lost:
            active = condition(mkc, "Active") if mkc is not None else None
            lost_for = age((active or {}).get("lastTransitionTime"), now)
            why = (
                f"MultiKueueCluster {worker} is not Active "
                f"({(active or {}).get('reason', '?')}, since {human(lost_for)})"
            )
            left = ""
            if lost_for is not None:
                remaining = seen.timings.worker_lost_timeout - lost_for
                left = (
                    f" (in about {human(remaining)})"
                    if remaining > 0
                    else f" (due {human(-remaining)} ago)"
                )
            return (
                "worker-lost",
                f"It was dispatched to {worker}, and {worker} is lost: {why}. The manager keeps "
                f"the job there until workerLostTimeout "
                f"({human(seen.timings.worker_lost_timeout)}, {seen.timings.source}) has passed"
                f"{left}, then evicts it and dispatches it again within dispatch set {config}.",
                kubectl(cluster, f"get multikueuecluster {worker} -o yaml")
                + f" ; then {worker}'s API server",
            )
        copy = seen.copies.get(worker)
        if copy is None:
            if snap is None:
                return (
                    "dispatched",
                    f"It was dispatched to {worker} (Workload {workload_phase(wl)} on {cluster}); "
                    f"{worker} was not among the clusters read, so its copy was not looked at.",
                    f"run again with --kubeconfig {worker}=PATH",
                )
            return (
                "dispatched",
                f"It was dispatched to {worker}, but {worker} holds no copy of Workload "
                f"{ns}/{wl_name}: deleted there, or the manager has not synced yet.",
                kubectl(worker, f"get workloads -n {ns}"),
            )
        state, story, nxt = local_story(worker, copy, snap or home, seen)
        return (
            state,
            f"It was dispatched to {worker} (AdmissionCheck {check}, MultiKueueConfig {config}); "
            f"{story.rstrip('.')}.{_evicted_before(seen, check, state)}",
            nxt,
        )

    # Quota reserved on the manager, no worker has admitted it yet.
    reserved = condition(wl, "QuotaReserved") or {}
    held = age(reserved.get("lastTransitionTime"), now)
    active = [
        w
        for w in seen.config_workers
        if (m := seen.mkcs.get(w)) is not None and is_true(m, "Active")
    ]
    lead = f"It holds quota on {cluster} ClusterQueue {cq} for {human(held)}"
    if not active:
        return (
            "no-worker",
            f"{lead}. No worker of dispatch set {config} is Active "
            f"({', '.join(seen.config_workers) or 'the set is empty'}), so there is nowhere to "
            "send it; Kueue nominates workers once one connects.",
            kubectl(cluster, "get multikueueclusters"),
        )
    stories = [
        (w, local_story(w, seen.copies[w], seen.others.get(k8s_name(w)) or home, seen))
        for w in (seen.nominated or seen.config_workers)
        if w in seen.copies
    ]
    read = {k8s_name(s.cluster) for s in seen.snaps if s.reachable}
    bound = seen.grace + seen.timings.dispatch_bound(len(seen.config_workers))
    if seen.nominated and not stories and set(seen.nominated) <= read and (held or 0) > bound:
        # The copies are created as the workers are nominated (multikueue/workload.go
        # nominateAndSynchronizeWorkers); none on any nominated worker means creating it fails.
        return (
            "copy-missing",
            f"{lead} and is nominated to {', '.join(seen.nominated)}, but none of them holds a "
            f"copy (over {human(bound)}): Kueue could not create it there. The manager's Kueue "
            "logs say why (the worker's namespace or LocalQueue, the MultiKueue credentials' "
            "rights).",
            kubectl(cluster, "logs -n kueue-system deploy/kueue-controller-manager")
            + f" | grep {wl_name}",
        )
    if seen.nominated or stories:
        since = human(held)
        told = "; ".join(story.rstrip(".") for _, (_, story, _) in stories)
        missing = [w for w in seen.nominated if w not in seen.copies]
        gap = f"; no copy read on {', '.join(missing)}" if missing else ""
        # A copy stuck at its gate outranks one whose gate failed, which outranks one merely
        # waiting at its gate (whatever the workers' order).
        states = {st for _, (st, _, _) in stories}
        gate = next((st for st in ("gate-stuck", "gate-retry", "at-gate") if st in states), None)
        return (
            gate or "nominated",
            f"{lead} and waits for a worker to admit it: nominated to "
            f"{', '.join(seen.nominated) or '(none)'} since quota was reserved {since} ago"
            + (f"; {told}" if told else "")
            + gap
            + f". Then {_dispatch_note(seen)}.",
            stories[0][1][2] if stories else show,
        )
    # Nothing nominated and no copy anywhere: Kueue nominates at once (AllAtOnce and the first
    # Incremental round alike), so past the grace this is the stranding of a manager restart.
    newest = max(
        (
            age((condition(seen.mkcs[w], "Active") or {}).get("lastTransitionTime"), now) or 0.0
            for w in active
        ),
        default=0.0,
    )
    waited = min(held or 0.0, newest)
    if waited > seen.grace:
        return (
            "stranded",
            f"{lead}, is nominated to no worker and has no copy on any, while {', '.join(active)} "
            f"{'has' if len(active) == 1 else 'have'} been Active for {human(newest)} (over "
            f"{human(seen.grace)}): Kueue 0.19.2 will not dispatch it by itself. The fix: "
            f"{FIX_REDISPATCH}.",
            show,
        )
    return (
        "dispatching",
        f"{lead} and is not nominated to a worker yet ({check} "
        f"{_check_state(wl, check)}); {_dispatch_note(seen)}.",
        show,
    )


def _check_state(wl: Mapping[str, Any], check: str) -> str:
    state = next((c for c in check_states(wl) if c.get("name") == check), {})
    text = str(state.get("state") or "without state")
    return text + (f": {state['message']}" if state.get("message") else "")
