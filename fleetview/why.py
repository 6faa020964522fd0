"""`why <namespace>/<job>`: one job's story across the fleet in plain words (pure).

It joins the manager's Workload (conditions, admission checks, nominated and chosen worker), the
worker's copy (same namespace and name: MultiKueue creates it so), that copy's ProvisioningRequests
and the MultiKueueCluster of the worker, and ends with the next thing to look at.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from builders.multikueue import k8s_name
from fleetview.objects import (
    PROVISIONING_CONTROLLER,
    Obj,
    Snapshot,
    age,
    condition,
    human,
    is_true,
    name,
    namespace,
)
from fleetview.status import (
    DEFAULT_STRANDED_AFTER,
    check_states,
    dispatch_set_of,
    provisioning_state,
    queue_of,
    workload_owner,
    workload_phase,
)
from upstream.kueue import DEFAULT_WORKER_LOST_TIMEOUT


def find_workload(snap: Snapshot, ns: str, job: str) -> Obj | None:
    """The Workload of a job: owned by an object of that name, else named so (a bare Workload)."""
    mine = [w for w in snap.workloads if namespace(w) == ns]
    for wl in mine:
        if any(o.get("name") == job for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    return next((w for w in mine if name(w) == job), None)


def _conditions(obj: Mapping[str, Any]) -> str:
    parts = []
    for c in (obj.get("status") or {}).get("conditions") or []:
        text = f"{c.get('type')}={c.get('status')}"
        if c.get("reason"):
            text += f" ({c['reason']})"
        parts.append(text)
    return ", ".join(parts) or "no conditions yet"


def _checks(wl: Mapping[str, Any]) -> str:
    parts = [
        f"{c.get('name')}={c.get('state') or '?'}"
        + (f" ({c['message']})" if c.get("message") else "")
        for c in check_states(wl)
    ]
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


def explain(
    snaps: Sequence[Snapshot],
    target: str,
    now: dt.datetime,
    stranded_after: float = DEFAULT_STRANDED_AFTER,
) -> dict[str, Any]:
    """The `why` answer (its JSON form): facts per cluster, a verdict, the next thing to look at."""
    ns, _, job = target.partition("/")
    facts: list[dict[str, str]] = []
    out: dict[str, Any] = {
        "job": target,
        "cluster": None,
        "workload": None,
        "phase": None,
        "worker": None,
        "verdict": "",
        "next": "",
        "facts": facts,
    }
    down = [s for s in snaps if not s.reachable]
    for s in down:
        _fact(facts, s.cluster, "-", str(s.error))
    managers = [s for s in snaps if s.reachable and s.is_manager]
    # The Workload lives on the manager; in a fleet without one (single cluster), on any cluster.
    search = managers or [s for s in snaps if s.reachable]
    home, wl = next(
        ((s, w) for s in search if (w := find_workload(s, ns, job)) is not None), (None, None)
    )
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

    wl_name = name(wl)
    phase = workload_phase(wl)
    out |= {"cluster": home.cluster, "workload": wl_name, "phase": phase}
    status = wl.get("status") or {}
    cq = queue_of(wl, home)
    _fact(facts, home.cluster, f"Workload {ns}/{wl_name}", _conditions(wl))
    _fact(facts, home.cluster, "admission checks", _checks(wl))
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
    # Every worker the job could be on: the chosen one, else the nominated, else the whole set.
    config_workers: list[str] = []
    if dispatch is not None:
        config = next((c for c in home.multikueue_configs if name(c) == dispatch[1]), {})
        config_workers = list((config.get("spec") or {}).get("clusters") or [])
    # A Workload without quota on the manager was offered to no worker yet: nothing to look at.
    offered = phase != "pending"
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
        copy = next((x for x in snap.workloads if namespace(x) == ns and name(x) == wl_name), None)
        if copy is None:
            _fact(facts, snap.cluster, f"Workload {ns}/{wl_name}", "no copy here")
            continue
        copies[w] = copy
        _fact(facts, snap.cluster, f"Workload {ns}/{wl_name} (copy)", _conditions(copy))
        if check_states(copy):
            _fact(facts, snap.cluster, "admission checks", _checks(copy))
        for pr in snap.provisioning_requests:
            if namespace(pr) == ns and workload_owner(pr) == wl_name:
                _fact(
                    facts,
                    snap.cluster,
                    f"ProvisioningRequest {name(pr)}",
                    f"{provisioning_state(pr)}: {_conditions(pr)}"
                    + (f" - {m}" if (m := _pr_message(pr)) else ""),
                )
    verdict, nxt = _verdict(
        _Seen(
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
            now=now,
            stranded_after=stranded_after,
        )
    )
    out["verdict"], out["next"] = verdict, nxt
    return out


def _pr_message(pr: Mapping[str, Any]) -> str:
    conditions = (pr.get("status") or {}).get("conditions") or []
    last = max(conditions, key=lambda c: str(c.get("lastTransitionTime", "")), default={})
    return str(last.get("message") or "")


def _copy_story(cluster: str, copy: Mapping[str, Any], snap: Snapshot) -> tuple[str, str]:
    """What a worker's copy (or a single cluster's Workload) waits for, and where to look."""
    ns, wl = namespace(copy), name(copy)
    phase = workload_phase(copy)
    if phase == "pending":
        msg = _message(copy, "QuotaReserved") or "no reason given yet"
        return (
            f"on {cluster} it waits for quota: {msg}",
            _kubectl(cluster, f"get clusterqueue {queue_of(copy, snap) or '-A'} -o yaml"),
        )
    if phase == "reserved":
        gates = [c for c in check_states(copy) if c.get("state") != "Ready"]
        for gate in gates:
            prs = [
                p
                for p in snap.provisioning_requests
                if namespace(p) == ns and workload_owner(p) == wl
            ]
            if prs or _is_provisioning(snap, str(gate.get("name"))):
                state = provisioning_state(prs[-1]) if prs else "not created yet"
                detail = _pr_message(prs[-1]) if prs else str(gate.get("message") or "")
                return (
                    f"on {cluster} it holds quota and waits for its ProvisioningRequest "
                    f"({state}{': ' + detail if detail else ''}): the cluster autoscaler has "
                    "not provisioned the nodes yet",
                    _kubectl(cluster, f"get provisioningrequests -n {ns} -o yaml")
                    + " ; then the cluster autoscaler's events and logs",
                )
        names = ", ".join(f"{g.get('name')}={g.get('state')}" for g in gates) or "?"
        return (
            f"on {cluster} it holds quota and waits for admission checks: {names}",
            _kubectl(cluster, f"get workload -n {ns} {wl} -o yaml"),
        )
    if phase == "admitted":
        return (
            f"it is admitted on {cluster} and runs there",
            _kubectl(cluster, f"get pods -n {ns} -o wide"),
        )
    if phase == "finished":
        return (
            f"it finished on {cluster}: {_message(copy, 'Finished')}",
            _kubectl(cluster, f"get workload -n {ns} {wl} -o yaml"),
        )
    return (
        f"on {cluster} it is {phase}: {_message(copy, 'Evicted')}",
        _kubectl(cluster, f"get workload -n {ns} {wl} -o yaml"),
    )


def _is_provisioning(snap: Snapshot, check: str) -> bool:
    return any(
        name(ac) == check
        and (ac.get("spec") or {}).get("controllerName") == PROVISIONING_CONTROLLER
        for ac in snap.admission_checks
    )


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
    now: dt.datetime
    stranded_after: float


def _verdict(seen: _Seen) -> tuple[str, str]:
    home, wl, cq, dispatch, worker = seen.home, seen.wl, seen.cq, seen.dispatch, seen.worker
    nominated, config_workers, copies = seen.nominated, seen.config_workers, seen.copies
    mkcs, others, now, stranded_after = seen.mkcs, seen.others, seen.now, seen.stranded_after
    ns, wl_name, cluster = namespace(wl), name(wl), home.cluster
    phase = workload_phase(wl)
    show = _kubectl(cluster, f"get workload -n {ns} {wl_name} -o yaml")
    if phase == "deactivated":
        return (
            f"The Workload is deactivated (spec.active=false): {_message(wl, 'Evicted')}",
            show,
        )
    if phase == "finished":
        return f"The job finished: {_message(wl, 'Finished') or 'no message'}", show
    if phase == "pending":
        queue = next((q for q in home.cluster_queues if name(q) == cq), None)
        if queue is not None and not is_true(queue, "Active"):
            return (
                f"It waits on {cluster} because ClusterQueue {cq} is inactive: "
                f"{_message(queue, 'Active')}",
                _kubectl(cluster, f"get clusterqueue {cq} -o yaml"),
            )
        msg = _message(wl, "QuotaReserved") or "no reason given yet (not seen by the scheduler?)"
        return (
            f"It waits for quota on {cluster} (ClusterQueue {cq or '?'}): {msg}",
            "the ClusterQueue's usage row in `status`, then "
            + _kubectl(cluster, f"get clusterqueue {cq or '-A'} -o yaml"),
        )
    if dispatch is None:
        # Not MultiKueue: a single cluster (or a worker queue) with its own gates.
        story, nxt = _copy_story(cluster, wl, home)
        return story[0].upper() + story[1:], nxt
    check, config = dispatch
    if worker:
        mkc = mkcs.get(worker)
        snap = others.get(k8s_name(worker))
        lost = mkc is not None and not is_true(mkc, "Active")
        if lost or (snap is not None and not snap.reachable):
            active = condition(mkc, "Active") if mkc is not None else None
            since = human(age((active or {}).get("lastTransitionTime"), now))
            why = (
                f"MultiKueueCluster {worker} is not Active ({(active or {}).get('reason', '?')}, "
                f"since {since})"
                if lost
                else f"{worker} does not answer this command ({snap.error if snap else ''})"
            )
            return (
                f"It was dispatched to {worker}, and {worker} is lost: {why}. The manager keeps "
                "the job there until Kueue's workerLostTimeout passes (the stack's "
                "kueue.multiKueue.workerLostTimeout; Kueue's default "
                f"{DEFAULT_WORKER_LOST_TIMEOUT}), then evicts it and dispatches it again within "
                f"dispatch set {config}.",
                _kubectl(cluster, f"get multikueuecluster {worker} -o yaml")
                + f" ; then {worker}'s API server",
            )
        copy = copies.get(worker)
        if copy is None:
            if snap is None:
                return (
                    f"It was dispatched to {worker} (Workload {phase} on {cluster}); "
                    f"{worker} was not among the clusters read, so its copy was not looked at.",
                    f"run again with --kubeconfig {worker}=PATH",
                )
            return (
                f"It was dispatched to {worker}, but {worker} holds no copy of Workload "
                f"{ns}/{wl_name}: deleted there, or the manager has not synced yet.",
                _kubectl(worker, f"get workloads -n {ns}"),
            )
        story, nxt = _copy_story(worker, copy, snap or home)
        return (
            f"It was dispatched to {worker} (AdmissionCheck {check}, MultiKueueConfig {config}); "
            f"{story}.",
            nxt,
        )
    # Quota reserved on the manager, no worker has admitted it yet.
    reserved = condition(wl, "QuotaReserved") or {}
    held = age(reserved.get("lastTransitionTime"), now)
    state = next((c for c in check_states(wl) if c.get("name") == check), {})
    stranded = held is not None and held > stranded_after
    lead = (
        f"It holds quota on {cluster} ClusterQueue {cq} for {human(held)} and is not on any "
        f"worker yet ({check} {state.get('state') or 'without state'}"
        + (f": {state['message']}" if state.get("message") else "")
        + ")"
    )
    if stranded:
        lead += f"; that is over {human(stranded_after)}: it looks stranded"
    active = [w for w in config_workers if (m := mkcs.get(w)) is not None and is_true(m, "Active")]
    if not active:
        return (
            f"{lead}. No worker of dispatch set {config} is Active "
            f"({', '.join(config_workers) or 'the set is empty'}), so there is nowhere to send it.",
            _kubectl(cluster, "get multikueueclusters"),
        )
    stories = [
        _copy_story(w, copies[w], others.get(k8s_name(w)) or home)
        for w in (nominated or config_workers)
        if w in copies
    ]
    if stories:
        return lead + "; " + "; ".join(s for s, _ in stories) + ".", stories[0][1]
    return (
        f"{lead}. No worker holds a copy yet (nominated: {', '.join(nominated) or 'none'}).",
        show,
    )
