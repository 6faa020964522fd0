"""`why <namespace>/<job>`: one job's story across the fleet in plain words (pure).

It joins the manager's Workload (conditions, admission checks, nominated and chosen worker), the
worker's copy (same namespace and name: MultiKueue creates it so), that copy's ProvisioningRequests
and the MultiKueueCluster of the worker, and ends with one verdict (a `state` word and a sentence)
and the next thing to look at. Each state is derived from Kueue v0.19.2's own conditions and
reasons (fleetview/kueuestate.py names the source files; docs/observability.md has the table).
Here the job is found and the facts gathered (`Seen`, fleetview.seen); the verdict for each state
is fleetview.verdict, and the story where the pods run fleetview.localstory.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from builders.multikueue import k8s_name
from fleetview import kueuestate as ks
from fleetview.objects import (
    ORIGIN_LABEL,
    Obj,
    Snapshot,
    age,
    condition,
    human,
    name,
    namespace,
)
from fleetview.seen import (
    Seen,
    at,
    checks_text,
    conditions_text,
    kubectl,
    pr_message,
    requests_of,
)
from fleetview.settings import DEFAULT_GRACE, Timings
from fleetview.status import (
    check_states,
    dispatch_set_of,
    provisioning_state,
    queue_of,
    workload_phase,
)
from fleetview.verdict import verdict


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


def _by_cluster(snaps: Sequence[Snapshot]) -> dict[str, Snapshot]:
    """Snapshots by the name a MultiKueueCluster would give them (k8s_name of the fleet name)."""
    return {k8s_name(s.cluster): s for s in snaps}


def _fact(facts: list[dict[str, str]], cluster: str, obj: str, says: str) -> None:
    facts.append({"cluster": cluster, "object": obj, "says": says})


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
        out["next"] = kubectl(first, f"get jobs,localqueues -n {ns} --show-labels")
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
    _fact(facts, home.cluster, f"Workload {ns}/{wl_name}", conditions_text(wl))
    _fact(facts, home.cluster, "admission checks", checks_text(wl))
    count, requeue_at = ks.requeue_state(wl)
    if count or requeue_at:
        due = at(requeue_at, now) if requeue_at else "-"
        _fact(facts, home.cluster, "requeueState", f"count {count}, requeueAt {due}")
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
        _fact(facts, snap.cluster, f"Workload {ns}/{wl_name} (copy)", conditions_text(copy))
        if check_states(copy):
            _fact(facts, snap.cluster, "admission checks", checks_text(copy))
        for pr in requests_of(snap, copy):
            _fact(
                facts,
                snap.cluster,
                f"ProvisioningRequest {name(pr)}",
                f"{provisioning_state(pr)}: {conditions_text(pr)}"
                + (f" - {m}" if (m := pr_message(pr)) else ""),
            )
    if dispatch is None:
        for pr in requests_of(home, wl):
            _fact(
                facts,
                home.cluster,
                f"ProvisioningRequest {name(pr)}",
                f"{provisioning_state(pr)}: {conditions_text(pr)}"
                + (f" - {m}" if (m := pr_message(pr)) else ""),
            )
    seen = Seen(
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
    out["state"], out["verdict"], out["next"] = verdict(seen)
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
