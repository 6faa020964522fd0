"""`why <namespace>/<job>`: one job's story across the fleet in plain words (pure).

It joins the manager's Workload (conditions, admission checks, nominated and chosen worker), the
worker's copy (same namespace and name: MultiKueue creates it so), that copy's ProvisioningRequests
and the MultiKueueCluster of the worker, and ends with one verdict (a `state` word and a sentence)
and the next thing to look at. Each state is derived from Kueue v0.19.2's own conditions and
reasons (fleetview/kueuestate.py names the source files; docs/observability.md has the table).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from builders.multikueue import k8s_name
from fleetview import kueuestate as ks
from fleetview.objects import (
    ORIGIN_LABEL,
    PROVISIONING_CONTROLLER,
    Obj,
    Snapshot,
    age,
    condition,
    human,
    is_true,
    name,
    namespace,
    parse_time,
)
from fleetview.settings import DEFAULT_GRACE, Timings
from fleetview.status import (
    check_states,
    dispatch_set_of,
    provisioning_state,
    queue_of,
    workload_owner,
    workload_phase,
)

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


def find_workload(snap: Snapshot, ns: str, job: str) -> Obj | None:
    """The Workload of a job: owned by an object of that name, else named so (a bare Workload)."""
    mine = [w for w in snap.workloads if namespace(w) == ns]
    for wl in mine:
        if any(o.get("name") == job for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    return next((w for w in mine if name(w) == job), None)


def _is_copy(wl: Mapping[str, Any]) -> bool:
    """A MultiKueue copy on a worker (the manager labels what it creates there)."""
    return ORIGIN_LABEL in ((wl.get("metadata") or {}).get("labels") or {})


def _conditions(obj: Mapping[str, Any]) -> str:
    parts = []
    for c in (obj.get("status") or {}).get("conditions") or []:
        text = f"{c.get('type')}={c.get('status')}"
        if c.get("reason"):
            text += f" ({c['reason']})"
        parts.append(text)
    return ", ".join(parts) or "no conditions yet"


def _checks(wl: Mapping[str, Any]) -> str:
    parts = []
    for c in check_states(wl):
        text = f"{c.get('name')}={c.get('state') or '?'}"
        if c.get("retryCount"):
            text += f" retry {c['retryCount']}"
        if c.get("message"):
            text += f" ({c['message']})"
        parts.append(text)
    return "; ".join(parts) or "none"


def _message(obj: Mapping[str, Any], kind: str) -> str:
    return str((condition(obj, kind) or {}).get("message") or "")


def _by_cluster(snaps: Sequence[Snapshot]) -> dict[str, Snapshot]:
    """Snapshots by the name a MultiKueueCluster would give them (k8s_name of the fleet name)."""
    return {k8s_name(s.cluster): s for s in snaps}


def _fact(facts: list[dict[str, str]], cluster: str, obj: str, says: str) -> None:
    facts.append({"cluster": cluster, "object": obj, "says": says})


def _kubectl(cluster: str, args: str) -> str:
    return f"kubectl --kubeconfig {cluster}.kubeconfig {args}"


def _at(t: dt.datetime, now: dt.datetime) -> str:
    when = t.astimezone(dt.UTC).strftime("%H:%M:%SZ")
    left = (t - now).total_seconds()
    return f"{when} (in {human(left)})" if left > 0 else f"{when} ({human(-left)} ago)"


@dataclass(frozen=True)
class _Seen:
    """Everything `explain` found about one job, for the verdict."""

    home: Snapshot
    wl: Obj
    cq: str | None
    dispatch: tuple[str, str] | None
    worker: str | None
    nominated: list[str]
    config_workers: list[str]
    copies: Mapping[str, Obj]
    mkcs: Mapping[str, Obj]
    others: Mapping[str, Snapshot]
    snaps: Sequence[Snapshot]
    now: dt.datetime
    grace: float
    timings: Timings = field(default_factory=Timings)


def explain(
    snaps: Sequence[Snapshot],
    target: str,
    now: dt.datetime,
    stranded_after: float = DEFAULT_GRACE,
    timings: Timings | None = None,
) -> dict[str, Any]:
    """The `why` answer (its JSON form): facts per cluster, a verdict, the next thing to look at."""
    timings = timings or Timings()
    ns, _, job = target.partition("/")
    facts: list[dict[str, str]] = []
    out: dict[str, Any] = {
        "job": target,
        "cluster": None,
        "workload": None,
        "phase": None,
        "state": "not-found",
        "worker": None,
        "verdict": "",
        "next": "",
        "facts": facts,
    }
    down = [s for s in snaps if not s.reachable]
    for s in down:
        _fact(facts, s.cluster, "-", str(s.error))
    up = [s for s in snaps if s.reachable]
    managers = [s for s in up if s.is_manager]
    # The manager first (a dispatched job's Workload lives there); then every other cluster, for
    # jobs queued on a worker's own queue (multiKueue.allowUnmirrored) or in a single cluster. A
    # MultiKueue copy found on a worker means the manager's Workload is gone: still say so.
    search = managers + [s for s in up if not s.is_manager]
    found = [(s, w) for s in search if (w := find_workload(s, ns, job)) is not None]
    own = [(s, w) for s, w in found if s.is_manager or not _is_copy(w)]
    home, wl = (own or found or [(None, None)])[0]
    if home is None or wl is None:
        where = ", ".join(s.cluster for s in search) or "no reachable cluster"
        out["verdict"] = (
            f"No Workload for {target} on {where}: Kueue has not taken the job in. Either it does "
            f"not exist in namespace {ns}, it has no `kueue.x-k8s.io/queue-name` label, or Kueue's "
            "integration for its kind is off."
        )
        if down:
            out["verdict"] += " Unreachable: " + ", ".join(s.cluster for s in down) + "."
        first = search[0].cluster if search else "manager"
        out["next"] = _kubectl(first, f"get jobs,localqueues -n {ns} --show-labels")
        return out

    return explain_workload(
        snaps, home, wl, now=now, stranded_after=stranded_after, timings=timings, out=out
    )


def states(
    snaps: Sequence[Snapshot],
    now: dt.datetime,
    stranded_after: float = DEFAULT_GRACE,
    timings: Timings | None = None,
) -> dict[tuple[str, str, str], str]:
    """The verdict's `state` of every Workload on a manager, by (cluster, namespace, name), for
    `status`'s dispatch rows: the same judgement as `why`, for all jobs at once."""
    out: dict[tuple[str, str, str], str] = {}
    for snap in snaps:
        if not snap.reachable or not snap.is_manager:
            continue
        for wl in snap.workloads:
            answer = explain_workload(
                snaps, snap, wl, now=now, stranded_after=stranded_after, timings=timings
            )
            out[(snap.cluster, namespace(wl), name(wl))] = answer["state"]
    return out


def explain_workload(
    snaps: Sequence[Snapshot],
    home: Snapshot,
    wl: Obj,
    *,
    now: dt.datetime,
    stranded_after: float = DEFAULT_GRACE,
    timings: Timings | None = None,
    out: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The `why` answer for a Workload already found on `home`."""
    timings = timings or Timings()
    ns, wl_name = namespace(wl), name(wl)
    if out is None:
        out = {"job": f"{ns}/{wl_name}", "worker": None, "verdict": "", "next": "", "facts": []}
        for s in snaps:
            if not s.reachable:
                _fact(out["facts"], s.cluster, "-", str(s.error))
    facts: list[dict[str, str]] = out["facts"]
    managers = [s for s in snaps if s.reachable and s.is_manager]
    out |= {"cluster": home.cluster, "workload": wl_name, "phase": workload_phase(wl)}
    status = wl.get("status") or {}
    cq = queue_of(wl, home)
    _fact(facts, home.cluster, f"Workload {ns}/{wl_name}", _conditions(wl))
    _fact(facts, home.cluster, "admission checks", _checks(wl))
    count, requeue_at = ks.requeue_state(wl)
    if count or requeue_at:
        at = _at(requeue_at, now) if requeue_at else "-"
        _fact(facts, home.cluster, "requeueState", f"count {count}, requeueAt {at}")
    nominated = list(status.get("nominatedClusterNames") or [])
    worker = status.get("clusterName") or None
    if nominated:
        _fact(facts, home.cluster, "nominated workers", ", ".join(nominated))
    if worker:
        _fact(facts, home.cluster, "chosen worker (status.clusterName)", str(worker))
    out["worker"] = worker

    dispatch = dispatch_set_of(home, wl) if home.is_manager else None
    others = _by_cluster(snaps)
    mkcs = {name(c): c for c in home.multikueue_clusters}
    config_workers: list[str] = []
    if dispatch is not None:
        config = next((c for c in home.multikueue_configs if name(c) == dispatch[1]), {})
        config_workers = list((config.get("spec") or {}).get("clusters") or [])
    # Every worker the job could be on: the chosen one, else the nominated, else the whole set
    # (a copy may outlive its nomination: eviction clears the nominations first).
    offered = dispatch is not None and (ks.holds_quota(wl) or ks.evicted(wl) is not None)
    candidates = [worker] if worker else (nominated or config_workers) if offered else []
    copies: dict[str, Obj] = {}
    for w in candidates:
        mkc = mkcs.get(w)
        if mkc is not None:
            active = condition(mkc, "Active") or {}
            since = human(age(active.get("lastTransitionTime"), now))
            _fact(
                facts,
                home.cluster,
                f"MultiKueueCluster {w}",
                f"Active={active.get('status', '?')} ({active.get('reason', '')}) since {since}"
                + (f": {active['message']}" if active.get("message") else ""),
            )
        snap = others.get(w)
        if snap is None or not snap.reachable:
            continue
        copy = snap.workload_index.get((ns, wl_name))
        if copy is None:
            if w == worker or w in nominated:
                _fact(facts, snap.cluster, f"Workload {ns}/{wl_name}", "no copy here")
            continue
        copies[w] = copy
        _fact(facts, snap.cluster, f"Workload {ns}/{wl_name} (copy)", _conditions(copy))
        if check_states(copy):
            _fact(facts, snap.cluster, "admission checks", _checks(copy))
        for pr in _requests(snap, copy):
            _fact(
                facts,
                snap.cluster,
                f"ProvisioningRequest {name(pr)}",
                f"{provisioning_state(pr)}: {_conditions(pr)}"
                + (f" - {m}" if (m := _pr_message(pr)) else ""),
            )
    if dispatch is None:
        for pr in _requests(home, wl):
            _fact(
                facts,
                home.cluster,
                f"ProvisioningRequest {name(pr)}",
                f"{provisioning_state(pr)}: {_conditions(pr)}"
                + (f" - {m}" if (m := _pr_message(pr)) else ""),
            )
    seen = _Seen(
        home=home,
        wl=wl,
        cq=cq,
        dispatch=dispatch,
        worker=worker,
        nominated=nominated,
        config_workers=config_workers,
        copies=copies,
        mkcs=mkcs,
        others=others,
        snaps=snaps,
        now=now,
        grace=stranded_after,
        timings=timings,
    )
    out["state"], out["verdict"], out["next"] = _verdict(seen)
    if home.is_manager is False and _is_copy(wl):
        out["verdict"] = (
            f"Only a MultiKueue copy was found (on {home.cluster}); the manager's Workload is "
            "gone or the manager was not read. " + out["verdict"]
        )
    elif not home.is_manager and managers:
        local = (wl.get("spec") or {}).get("queueName")
        out["verdict"] = (
            f"It is queued on {home.cluster}'s own LocalQueue {local} (not through the manager). "
            + out["verdict"]
        )
    return out


def _requests(snap: Snapshot, wl: Mapping[str, Any]) -> list[Obj]:
    ns, wl_name = namespace(wl), name(wl)
    return [
        p for p in snap.provisioning_requests if namespace(p) == ns and workload_owner(p) == wl_name
    ]


def _pr_message(pr: Mapping[str, Any]) -> str:
    conditions = (pr.get("status") or {}).get("conditions") or []
    last = max(conditions, key=lambda c: str(c.get("lastTransitionTime", "")), default={})
    return str(last.get("message") or "")


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


def _position(snap: Snapshot, wl: Mapping[str, Any], cq: str | None) -> str:
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


def _preemptor_words(seen: _Seen) -> str:
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
            f"it is in requeue backoff until {_at(backoff, now)}{tries}: Kueue puts it back in its "
            "queue then (status.requeueState.requeueAt)"
        )
    msg = _message(wl, "QuotaReserved")
    if not msg or msg == _message(wl, "Evicted"):
        # reconciler.go unsets QuotaReserved with the eviction's message; the scheduler writes
        # its own once it has tried the Workload again.
        return f"it is back in its queue{tries}; the scheduler has not tried it again yet"
    return f"it is back in its queue and waits for quota{tries}: {msg}"


def _verdict(seen: _Seen) -> tuple[str, str, str]:
    """(state, verdict, next) of the job's Workload where it lives."""
    home, wl = seen.home, seen.wl
    ns, wl_name, cluster = namespace(wl), name(wl), home.cluster
    show = _kubectl(cluster, f"get workload -n {ns} {wl_name} -o yaml")
    ev = ks.evicted(wl)
    kind = ks.eviction_kind(wl)

    # spec.active=false: workload_controller.go evicts it (reason Deactivated[...]); nothing
    # requeues it until someone sets spec.active=true again.
    if (wl.get("spec") or {}).get("active") is False:
        why = _message(wl, "Evicted") or _message(wl, "DeactivationTarget") or "no reason given"
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
            f"The job finished ({reason}): {_message(wl, 'Finished') or 'no message'}",
            show,
        )

    if ev is not None:
        return _evicted(seen, ev, kind or "other", show)

    if not ks.holds_quota(wl):
        return _pending(seen, show)

    if seen.dispatch is None:
        # Not MultiKueue: a single cluster, or a worker's own queue, with its own gates.
        state, story, nxt = _local_story(cluster, wl, home, seen)
        return state, story[0].upper() + story[1:].rstrip(".") + ".", nxt
    return _dispatched(seen, show)


def _pending(seen: _Seen, show: str) -> tuple[str, str, str]:
    home, wl, cq, now = seen.home, seen.wl, seen.cq, seen.now
    cluster = home.cluster
    backoff = ks.in_backoff(wl, now)
    if backoff is not None:
        count, _ = ks.requeue_state(wl)
        return (
            "backoff",
            f"It is in requeue backoff on {cluster} until {_at(backoff, now)} (requeued {count} "
            f"time{'s' if count != 1 else ''}): "
            f"{_message(wl, 'Requeued') or _message(wl, 'QuotaReserved') or 'no message'}",
            show,
        )
    blocked = ks.queue_blocked(wl)
    queue = next((q for q in home.cluster_queues if name(q) == cq), None)
    if blocked is None and queue is not None and not is_true(queue, "Active"):
        blocked = f"ClusterQueue {cq} is inactive: {_message(queue, 'Active')}"
    if blocked is not None:
        local = (wl.get("spec") or {}).get("queueName")
        lq = next(
            (q for q in home.local_queues if namespace(q) == namespace(wl) and name(q) == local),
            None,
        )
        policy = ((lq or {}).get("spec") or {}).get("stopPolicy")
        hold = f" (LocalQueue {local} stopPolicy {policy})" if policy and policy != "None" else ""
        cq_yaml = _kubectl(cluster, f"get clusterqueue {cq or '-A'} -o yaml")
        return (
            "queue-stopped",
            f"It waits on {cluster} because its queue does not admit: {blocked}{hold}. It is not "
            "waiting for quota: it moves once the queue is resumed (on a drained worker: "
            'docs/operations.md "Draining a worker").',
            _kubectl(cluster, f"get localqueue -n {namespace(wl)} {local} -o yaml")
            + f" ; {cq_yaml}",
        )
    msg = _message(wl, "QuotaReserved") or "no reason given yet (not seen by the scheduler?)"
    return (
        "pending",
        f"It waits for quota on {cluster} (ClusterQueue {cq or '?'}): {msg}; "
        f"{_position(home, wl, cq)}.",
        "the ClusterQueue's usage row in `status`, then "
        + _kubectl(cluster, f"get clusterqueue {cq or '-A'} -o yaml"),
    )


def _evicted(seen: _Seen, ev: Mapping[str, Any], kind: str, show: str) -> tuple[str, str, str]:
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
        what = (
            f"It was evicted on {cluster} by waitForPodsReady{bound} {human(since)} ago: its pods "
            f"were not all ready in time ({message})"
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
                _kubectl(cluster, f"get pods -n {namespace(wl)} -o wide") + f" ; {show}",
            )
        if since is not None and since > seen.grace:
            fix = FIX_STALE_COUNTS
            return (
                "evicted-holding-quota",
                f"{what}. It still holds quota {human(since)} after the eviction (over "
                f"{human(seen.grace)}): Kueue waits for its Job to have no active pods, and the "
                f"Job still counts some. The fix: {fix}.",
                _kubectl(cluster, f"get job -n {namespace(wl)} -o wide") + f" ; {show}",
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


def _evicted_on_worker(seen: _Seen, since: float | None, message: str) -> str:
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
                f"time ({ev.get('message')}); if they need longer (a GPU pool from zero, a large "
                "image), raise kueue.configuration.waitForPodsReady.timeout "
                '(docs/kueue-queueing.md "waitForPodsReady: what each cluster runs")'
            )
    where = worker or "a worker"
    return (
        f"It was evicted on {where} and the manager evicted it too, {human(since)} ago, to "
        f"dispatch it again: {cause}"
    )


def _dispatch_note(seen: _Seen) -> str:
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


def _dispatched(seen: _Seen, show: str) -> tuple[str, str, str]:
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
                _kubectl(cluster, f"get multikueuecluster {worker} -o yaml")
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
                _kubectl(worker, f"get workloads -n {ns}"),
            )
        state, story, nxt = _local_story(worker, copy, snap or home, seen)
        return (
            state,
            f"It was dispatched to {worker} (AdmissionCheck {check}, MultiKueueConfig {config}); "
            f"{story.rstrip('.')}.",
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
            _kubectl(cluster, "get multikueueclusters"),
        )
    stories = [
        (w, _local_story(w, seen.copies[w], seen.others.get(k8s_name(w)) or home, seen))
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
            _kubectl(cluster, "logs -n kueue-system deploy/kueue-controller-manager")
            + f" | grep {wl_name}",
        )
    if seen.nominated or stories:
        since = human(held)
        told = "; ".join(story.rstrip(".") for _, (_, story, _) in stories)
        missing = [w for w in seen.nominated if w not in seen.copies]
        gap = f"; no copy read on {', '.join(missing)}" if missing else ""
        gate = next((st for _, (st, _, _) in stories if st in ("at-gate", "gate-retry")), None)
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


def _local_story(
    cluster: str, wl: Mapping[str, Any], snap: Snapshot, seen: _Seen
) -> tuple[str, str, str]:
    """(state, story, next) of a Workload on the cluster where its pods would run."""
    ns, wl_name, now = namespace(wl), name(wl), seen.now
    show = _kubectl(cluster, f"get workload -n {ns} {wl_name} -o yaml")
    ev = ks.evicted(wl)
    if is_true(wl, "Finished"):
        return "finished", f"it finished on {cluster}: {_message(wl, 'Finished')}", show
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
            return _gate_story(cluster, wl, snap, seen)
        return (
            "evicted",
            f"on {cluster} it is evicted ({ev.get('reason')}): {ev.get('message')}",
            show,
        )
    if not ks.holds_quota(wl):
        if ks.in_backoff(wl, now) is not None:
            return _gate_story(cluster, wl, snap, seen)
        blocked = ks.queue_blocked(wl)
        if blocked:
            return (
                "queue-stopped",
                f"on {cluster} its queue does not admit: {blocked}",
                _kubectl(cluster, f"get localqueues -n {ns} -o yaml"),
            )
        msg = _message(wl, "QuotaReserved") or "no reason given yet"
        return (
            "pending",
            f"on {cluster} it waits for quota: {msg}; {_position(snap, wl, queue_of(wl, snap))}",
            _kubectl(cluster, f"get clusterqueue {queue_of(wl, snap) or '-A'} -o yaml"),
        )
    if not is_true(wl, "Admitted"):
        return _gate_story(cluster, wl, snap, seen)
    ready = condition(wl, "PodsReady")
    if ready is not None and ready.get("status") == "True":
        return (
            "running",
            f"it is admitted on {cluster} and runs there (PodsReady since "
            f"{human(age(ready.get('lastTransitionTime'), now))})",
            _kubectl(cluster, f"get pods -n {ns} -o wide"),
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
        _kubectl(cluster, f"get pods -n {ns} -o wide")
        + " ; then the pods' events (image pulls, scheduling, node scale-up)",
    )


def _gate_story(
    cluster: str, wl: Mapping[str, Any], snap: Snapshot, seen: _Seen
) -> tuple[str, str, str]:
    """Quota reserved on the cluster, an admission check (the provisioning gate) not Ready."""
    ns, now = namespace(wl), seen.now
    gates = [c for c in check_states(wl) if c.get("state") != "Ready"]
    prs = _requests(snap, wl)
    newest = max(
        prs, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp")), default=None
    )
    for gate in gates:
        if not (prs or _is_provisioning(snap, str(gate.get("name")))):
            continue
        state = str(gate.get("state") or "Pending")
        retries = int(gate.get("retryCount") or 0)
        # Retry (or Pending after the eviction a Retry causes, retryCount kept): the next
        # attempt is lastTransitionTime + requeueAfterSeconds (workload_types.go
        # AdmissionCheckState; provisioning/controller.go UpdateAdmissionCheckRequeueState).
        after = gate.get("requeueAfterSeconds")
        next_try = ""
        changed = parse_time(gate.get("lastTransitionTime"))
        if after and changed is not None and (state == "Retry" or retries):
            next_try = f", next attempt at {_at(changed + dt.timedelta(seconds=int(after)), now)}"
        _, requeue_at = ks.requeue_state(wl)
        if not next_try and requeue_at is not None and requeue_at > now:
            next_try = f", next attempt at {_at(requeue_at, now)}"
        said = (
            f"{provisioning_state(newest)}: {_pr_message(newest)}".rstrip(": ")
            if newest is not None
            else "no ProvisioningRequest yet"
        )
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
            f"({state}, {tried}{next_try}{last}); the cluster autoscaler says {said}",
            _kubectl(cluster, f"get provisioningrequests -n {ns} -o yaml")
            + " ; then the cluster autoscaler's events and logs",
        )
    names = ", ".join(f"{g.get('name')}={g.get('state')}" for g in gates) or "none pending"
    return (
        "at-gate",
        f"on {cluster} it holds quota and waits for admission checks: {names}",
        _kubectl(cluster, f"get workload -n {ns} {name(wl)} -o yaml"),
    )
