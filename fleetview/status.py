"""`status`: snapshots of every cluster in, one JSON-able report out (pure; docs/observability.md).

The report's keys are stable (documented in docs/observability.md "JSON"): a script may read them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from builders.multikueue import k8s_name
from fleetview import kueuestate as ks
from fleetview.objects import (
    MULTIKUEUE_CONTROLLER,
    ORIGIN_LABEL,
    Snapshot,
    age,
    condition,
    human,
    is_true,
    name,
    namespace,
    ref,
)
from fleetview.pools import pool_rows
from fleetview.settings import DEFAULT_GRACE, Timings
from upstream.k8s import quantity_value

# How long Kueue may take for what it does at once (nominate a reserved job's workers, release an
# evicted job's quota) before `status` warns; the Incremental dispatcher's rounds come on top.
DEFAULT_STRANDED_AFTER: Final = DEFAULT_GRACE

SCHEMA_VERSION: Final = 1
# A worker's MultiKueue copy evicted at its gate and holding quota (kueuestate.stuck_copy_for).
FIX_STUCK_COPY: Final = (
    "delete the copy on that worker; the manager's Kueue makes a new one and its gate starts "
    'again (docs/operations.md "A dispatched job stuck at a worker\'s gate")'
)


def workload_phase(wl: Mapping[str, Any]) -> str:
    """One word for where a Workload is, from Kueue's conditions (most final first)."""
    if (wl.get("spec") or {}).get("active") is False:
        return "deactivated"
    if is_true(wl, "Finished"):
        return "finished"
    if is_true(wl, "Evicted"):
        return "evicted"
    if is_true(wl, "Admitted"):
        return "admitted"
    if is_true(wl, "QuotaReserved"):
        return "reserved"
    return "pending"


def check_states(wl: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list((wl.get("status") or {}).get("admissionChecks") or [])


def queue_of(wl: Mapping[str, Any], snap: Snapshot) -> str | None:
    """The ClusterQueue a Workload is in: its admission's, else its LocalQueue's."""
    status = wl.get("status") or {}
    admission = status.get("admission") or {}
    if admission.get("clusterQueue"):
        return str(admission["clusterQueue"])
    local = (wl.get("spec") or {}).get("queueName")
    for lq in snap.local_queues:
        if namespace(lq) == namespace(wl) and name(lq) == local:
            return str((lq.get("spec") or {}).get("clusterQueue") or "") or None
    return None


def queue_checks(snap: Snapshot, cluster_queue: str | None) -> list[str]:
    """The admission checks a ClusterQueue names (v1beta2: `admissionChecksStrategy`)."""
    for cq in snap.cluster_queues:
        if name(cq) == cluster_queue:
            strategy = (cq.get("spec") or {}).get("admissionChecksStrategy") or {}
            return [str(c.get("name")) for c in strategy.get("admissionChecks") or []]
    return []


def multikueue_config_of(snap: Snapshot, check: str) -> str | None:
    """The MultiKueueConfig a MultiKueue AdmissionCheck points at (None: not a MultiKueue check)."""
    for ac in snap.admission_checks:
        spec = ac.get("spec") or {}
        if name(ac) == check and spec.get("controllerName") == MULTIKUEUE_CONTROLLER:
            return str((spec.get("parameters") or {}).get("name") or "") or None
    return None


def dispatch_set_of(snap: Snapshot, wl: Mapping[str, Any]) -> tuple[str, str] | None:
    """(MultiKueue check, MultiKueueConfig) of a manager Workload, or None."""
    names = [str(c.get("name")) for c in check_states(wl)]
    names += queue_checks(snap, queue_of(wl, snap))
    for check in dict.fromkeys(names):
        config = multikueue_config_of(snap, check)
        if config is not None:
            return check, config
    return None


def worker_of(wl: Mapping[str, Any]) -> str | None:
    return (wl.get("status") or {}).get("clusterName") or None


def _percent(used: str, nominal: str) -> float | None:
    try:
        total = quantity_value(nominal)
        return None if total == 0 else float(quantity_value(used) / total * 100)
    except (ValueError, ArithmeticError):
        return None


def _usage(cq: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per flavor and resource: nominal quota, reserved and admitted usage (status strings)."""
    status = cq.get("status") or {}

    def index(key: str) -> dict[tuple[str, str], Mapping[str, Any]]:
        return {
            (str(f.get("name")), str(r.get("name"))): r
            for f in status.get(key) or []
            for r in f.get("resources") or []
        }

    reserved, used = index("flavorsReservation"), index("flavorsUsage")
    rows: list[dict[str, Any]] = []
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for res in flavor.get("resources") or []:
                key = (str(flavor.get("name")), str(res.get("name")))
                nominal = str(res.get("nominalQuota", "0"))
                in_use = str((used.get(key) or {}).get("total", "0"))
                rows.append(
                    {
                        "flavor": key[0],
                        "resource": key[1],
                        "nominal": nominal,
                        "reserved": str((reserved.get(key) or {}).get("total", "0")),
                        "used": in_use,
                        "borrowed": str((used.get(key) or {}).get("borrowed", "0")),
                        "usedPercent": _percent(in_use, nominal),
                    }
                )
    return rows


def cluster_queue_rows(snap: Snapshot) -> list[dict[str, Any]]:
    rows = []
    for cq in sorted(snap.cluster_queues, key=name):
        status = cq.get("status") or {}
        active = condition(cq, "Active") or {}
        rows.append(
            {
                "name": name(cq),
                "active": active.get("status") == "True",
                "reason": active.get("reason", ""),
                "message": active.get("message", ""),
                "pending": int(status.get("pendingWorkloads") or 0),
                "reserving": int(status.get("reservingWorkloads") or 0),
                "admitted": int(status.get("admittedWorkloads") or 0),
                "admissionChecks": queue_checks(snap, name(cq)),
                "usage": _usage(cq),
            }
        )
    return rows


def provisioning_state(pr: Mapping[str, Any]) -> str:
    """The cluster autoscaler's answer in one word (its conditions, most final first)."""
    for kind, word in (
        ("Failed", "failed"),
        ("CapacityRevoked", "revoked"),
        ("BookingExpired", "expired"),
        ("Provisioned", "provisioned"),
        ("Accepted", "accepted"),
    ):
        if is_true(pr, kind):
            return word
    return "waiting"


def workload_owner(obj: Mapping[str, Any]) -> str | None:
    """The Workload a ProvisioningRequest belongs to (Kueue makes it the controller owner)."""
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("kind") == "Workload":
            return str(owner.get("name"))
    return None


def provisioning_rows(snap: Snapshot, now: dt.datetime) -> list[dict[str, Any]]:
    rows = []
    for pr in sorted(snap.provisioning_requests, key=ref):
        state = provisioning_state(pr)
        conditions = (pr.get("status") or {}).get("conditions") or []
        last = max(conditions, key=lambda c: str(c.get("lastTransitionTime", "")), default={})
        rows.append(
            {
                "namespace": namespace(pr),
                "name": name(pr),
                "workload": workload_owner(pr),
                "class": (pr.get("spec") or {}).get("provisioningClassName", ""),
                "state": state,
                "reason": last.get("reason", ""),
                "message": last.get("message", ""),
                "ageSeconds": age(pr.get("metadata", {}).get("creationTimestamp"), now),
            }
        )
    return rows


def multikueue_cluster_rows(snap: Snapshot, now: dt.datetime) -> list[dict[str, Any]]:
    rows = []
    for mkc in sorted(snap.multikueue_clusters, key=name):
        active = condition(mkc, "Active") or {}
        rows.append(
            {
                "name": name(mkc),
                "active": active.get("status") == "True",
                "reason": active.get("reason", "") or "no Active condition yet",
                "message": active.get("message", ""),
                "sinceSeconds": age(active.get("lastTransitionTime"), now),
            }
        )
    return rows


def dispatch_rows(
    snap: Snapshot, now: dt.datetime, states: Mapping[tuple[str, str, str], str] | None = None
) -> list[dict[str, Any]]:
    """Per MultiKueueConfig: its workers and where each of its Workloads went (with `why`'s
    state of each, when the caller computed them: fleetview.why.states)."""
    by_config: dict[str, list[dict[str, Any]]] = {name(c): [] for c in snap.multikueue_configs}
    for wl in snap.workloads:
        found = dispatch_set_of(snap, wl)
        if found is None:
            continue
        check, config = found
        state = next((c for c in check_states(wl) if c.get("name") == check), {})
        reserved = condition(wl, "QuotaReserved") or {}
        by_config.setdefault(config, []).append(
            {
                "namespace": namespace(wl),
                "name": name(wl),
                "phase": workload_phase(wl),
                "state": (states or {}).get((snap.cluster, namespace(wl), name(wl))),
                "worker": worker_of(wl),
                "nominated": list((wl.get("status") or {}).get("nominatedClusterNames") or []),
                "check": check,
                "checkState": state.get("state", ""),
                "checkMessage": state.get("message", ""),
                "reservedSeconds": age(reserved.get("lastTransitionTime"), now)
                if reserved.get("status") == "True"
                else None,
            }
        )
    workers = {
        name(c): list((c.get("spec") or {}).get("clusters") or []) for c in snap.multikueue_configs
    }
    return [
        {
            "config": config,
            "workers": workers.get(config, []),
            "workloads": sorted(rows, key=lambda r: (r["namespace"], r["name"])),
        }
        for config, rows in sorted(by_config.items())
    ]


def _warning(kind: str, cluster: str, obj: str, message: str) -> dict[str, str]:
    return {"kind": kind, "cluster": cluster, "object": obj, "message": message}


def _copies(snaps: Sequence[Snapshot], ns: str, wl_name: str) -> list[str]:
    """The clusters (k8s names) that hold a MultiKueue copy of a manager Workload."""
    return [
        k8s_name(s.cluster)
        for s in snaps
        if s.reachable and not s.is_manager and (ns, wl_name) in s.workload_index
    ]


def _stranding(
    snaps: Sequence[Snapshot],
    snap: Snapshot,
    wl: Mapping[str, Any],
    now: dt.datetime,
    *,
    grace: float,
    timings: Timings,
) -> dict[str, str] | None:
    """A manager Workload Kueue will not move by itself, as a warning; None for every normal wait.

    Normal: pending for quota (backlog), nominated and waiting for a worker (inside the
    dispatcher's rounds), admitted, evicted and releasing its quota within the grace.
    """
    found = dispatch_set_of(snap, wl)
    if found is None or not ks.holds_quota(wl) or is_true(wl, "Finished"):
        return None
    check, config = found
    ref_ = f"{namespace(wl)}/{name(wl)}"
    ev = ks.evicted(wl)
    if ev is not None:
        since = age(ev.get("lastTransitionTime"), now)
        if since is None or since <= grace:
            return None
        return _warning(
            "EvictedHoldingQuota",
            snap.cluster,
            ref_,
            f"evicted {human(since)} ago ({ev.get('reason')}) and still holds quota: its Job "
            'still counts active pods (docs/operations.md "A worker cluster lost with jobs '
            'running on it": zero the stale counts)',
        )
    status = wl.get("status") or {}
    if status.get("clusterName") or is_true(wl, "Admitted"):
        return None
    workers = next(
        (
            list((c.get("spec") or {}).get("clusters") or [])
            for c in snap.multikueue_configs
            if name(c) == config
        ),
        [],
    )
    active = {
        name(c): age((condition(c, "Active") or {}).get("lastTransitionTime"), now) or 0.0
        for c in snap.multikueue_clusters
        if name(c) in workers and is_true(c, "Active")
    }
    if not active:
        return None  # nowhere to send it: MultiKueueClusterNotActive says so
    held = age((condition(wl, "QuotaReserved") or {}).get("lastTransitionTime"), now) or 0.0
    waited = min(held, max(active.values()))
    nominated = list(status.get("nominatedClusterNames") or [])
    copies = _copies(snaps, namespace(wl), name(wl))
    read = {k8s_name(s.cluster) for s in snaps if s.reachable}
    if nominated:
        # Nominated: the copies are made at once; only if no nominated worker (all of them read)
        # holds one past the dispatcher's rounds and the grace is something wrong.
        bound = grace + timings.dispatch_bound(len(workers))
        if copies or not set(nominated) <= read or waited <= bound:
            return None
        what = f"nominated to {', '.join(nominated)} but no copy on any of them"
        # multikueue/workload.go creates the copies as it nominates; none means the creation
        # fails there (the namespace, the LocalQueue, the manager's rights on the worker).
        fix = (
            "Kueue could not create its copy there: the manager's Kueue logs say why (the "
            "worker's namespace or LocalQueue, the MultiKueue credentials' rights)"
        )
    else:
        if copies or waited <= grace:
            return None
        bound = grace
        what = "nominated to no worker and no copy on any"
        fix = (
            "Kueue will not dispatch it by itself (docs/operations.md \"The manager's Kueue "
            'killed mid-dispatch")'
        )
    return _warning(
        "Undispatched",
        snap.cluster,
        ref_,
        f"quota reserved {human(held)} ago, {what}, while {', '.join(sorted(active))} "
        f"{'is' if len(active) == 1 else 'are'} Active (over {human(bound)}; dispatch set "
        f"{config}, check {check}, {timings.dispatcher} dispatcher): {fix}",
    )


def _lost_jobs(snap: Snapshot, worker: str, lost_for: float | None, timings: Timings) -> str:
    """What Kueue does to the jobs admitted on a lost worker, and when (multikueue/workload.go:
    it waits workerLostTimeout from the loss, then sets the check to Retry, which evicts)."""
    jobs = [
        w
        for w in snap.workloads
        if worker_of(w) == worker and not is_true(w, "Finished") and ks.evicted(w) is None
    ]
    if not jobs:
        return "; no job admitted there"
    bound = timings.worker_lost_timeout
    left = bound - (lost_for or 0.0)
    when = f"in about {human(left)}" if left > 0 else f"due {human(-left)} ago"
    return (
        f"; {len(jobs)} job{'s' if len(jobs) != 1 else ''} admitted there "
        f"{'are' if len(jobs) != 1 else 'is'} evicted and dispatched again once "
        f"workerLostTimeout ({human(bound)}, {timings.source}) has passed: {when}"
    )


def _request_warning(
    snap: Snapshot, pr: Mapping[str, Any], now: dt.datetime
) -> dict[str, str] | None:
    """A ProvisioningRequest worth a look, judged as Kueue judges it for its Workload
    (pkg/controller/admissionchecks/provisioning/controller.go syncCheckStates)."""
    owner = next(
        (
            w
            for w in snap.workloads
            if namespace(w) == namespace(pr) and name(w) == workload_owner(pr)
        ),
        None,
    )
    live = owner is not None and (owner.get("spec") or {}).get("active") is not False
    live = live and owner is not None and not is_true(owner, "Finished")
    admitted = owner is not None and is_true(owner, "Admitted")
    kind = None
    if is_true(pr, "Failed"):
        kind = ("failed", "Failed")
    elif is_true(pr, "CapacityRevoked") and live:
        # Kueue rejects the check, which deactivates the Workload.
        kind = ("revoked", "CapacityRevoked")
    elif is_true(pr, "BookingExpired") and live and not admitted:
        # After admission the booking's end is expected (the autoscaler's 10 min reservation,
        # or all pods scheduled); Kueue ignores it then. Before, Kueue retries or rejects.
        kind = ("expired", "BookingExpired")
    if kind is None:
        return None
    c = condition(pr, kind[1]) or {}
    return _warning(
        "ProvisioningRequestFailed",
        snap.cluster,
        f"{namespace(pr)}/{name(pr)}",
        f"{kind[0]}: {c.get('reason', '')} {c.get('message', '')}".strip()
        + f" ({human(age(c.get('lastTransitionTime'), now))} ago)",
    )


def warnings(
    snaps: Sequence[Snapshot],
    now: dt.datetime,
    stranded_after: float,
    timings: Timings | None = None,
) -> list[dict[str, str]]:
    timings = timings or Timings()
    out: list[dict[str, str]] = []
    for snap in snaps:
        if not snap.reachable:
            out.append(_warning("Unreachable", snap.cluster, "-", str(snap.error)))
            continue
        for row in cluster_queue_rows(snap):
            if not row["active"]:
                why = f"{row['reason']}: {row['message']}".strip(": ")
                out.append(_warning("InactiveClusterQueue", snap.cluster, row["name"], why))
        for row in multikueue_cluster_rows(snap, now):
            if not row["active"]:
                since = f" for {human(row['sinceSeconds'])}" if row["sinceSeconds"] else ""
                out.append(
                    _warning(
                        "MultiKueueClusterNotActive",
                        snap.cluster,
                        row["name"],
                        f"{row['reason']}{since}: {row['message']}".rstrip(": ")
                        + _lost_jobs(snap, row["name"], row["sinceSeconds"], timings),
                    )
                )
        if snap.is_manager:
            for wl in sorted(snap.workloads, key=ref):
                found = _stranding(snaps, snap, wl, now, grace=stranded_after, timings=timings)
                if found is not None:
                    out.append(found)
        else:
            for wl in sorted(snap.workloads, key=ref):
                since = ks.stuck_copy_for(wl, now)
                if since is not None and since > stranded_after:
                    ev = ks.evicted(wl) or {}
                    out.append(
                        _warning(
                            "StuckCopy",
                            snap.cluster,
                            ref(wl),
                            f"evicted at its gate {human(since)} ago and still holds quota: "
                            f"the gate does not try again here ({ev.get('message')}); "
                            + FIX_STUCK_COPY,
                        )
                    )
        for pr in sorted(snap.provisioning_requests, key=ref):
            found = _request_warning(snap, pr, now)
            if found is not None:
                out.append(found)
    return out


def role_of(snap: Snapshot, workers: Iterable[str]) -> str:
    """manager (holds MultiKueueClusters), worker (one of them, or holds dispatched copies)."""
    if snap.is_manager:
        return "manager"
    if k8s_name(snap.cluster) in set(workers) or any(
        ORIGIN_LABEL in ((w.get("metadata") or {}).get("labels") or {}) for w in snap.workloads
    ):
        return "worker"
    return "cluster"


def manager_workers(snaps: Sequence[Snapshot]) -> set[str]:
    """Every cluster a manager's MultiKueueClusters name, as fleet cluster names."""
    return {name(c) for s in snaps if s.is_manager for c in s.multikueue_clusters}


def report(
    snaps: Sequence[Snapshot],
    now: dt.datetime,
    stranded_after: float = DEFAULT_STRANDED_AFTER,
    timings: Timings | None = None,
    states: Mapping[tuple[str, str, str], str] | None = None,
) -> dict[str, Any]:
    """The whole `status` report (its JSON form; the tables render this). `states`: `why`'s
    state per manager Workload (fleetview.why.states), shown in the dispatch rows."""
    timings = timings or Timings()
    workers = manager_workers(snaps)
    clusters = []
    for snap in snaps:
        row: dict[str, Any] = {
            "name": snap.cluster,
            "role": role_of(snap, workers)
            if snap.reachable
            else ("worker" if k8s_name(snap.cluster) in workers else "unknown"),
            "reachable": snap.reachable,
            "error": snap.error,
            "seconds": round(snap.seconds, 3),
            "notServed": list(snap.missing),
            "clusterQueues": [],
            "provisioningRequests": [],
            "nodePools": [],
            "multiKueueClusters": [],
            "dispatchSets": [],
        }
        if snap.reachable:
            row["clusterQueues"] = cluster_queue_rows(snap)
            row["provisioningRequests"] = provisioning_rows(snap, now)
            row["nodePools"] = pool_rows(snap)
            if snap.is_manager:
                row["multiKueueClusters"] = multikueue_cluster_rows(snap, now)
                row["dispatchSets"] = dispatch_rows(snap, now, states)
        clusters.append(row)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "generatedAt": now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "strandedAfterSeconds": stranded_after,
        "timings": timings.as_json(),
        "clusters": clusters,
        "warnings": warnings(snaps, now, stranded_after, timings),
    }
