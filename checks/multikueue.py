"""MultiKueue checks: a manager, 1..20 workers per dispatch set, worker RBAC, mirroring.

Every LocalQueue either mirrors from the manager to every worker (a dispatching ClusterQueue) or is
allowed on one side only (`multiKueue.allowUnmirrored`); the worker ClusterQueue a mirrored queue
points at must exist and select its namespace.
"""

from __future__ import annotations

from collections.abc import Iterator

from builders.multikueue import k8s_name
from checks.common import Check, duplicates
from checks.kueue_queues import check_gate_conflicts
from config.errors import Issue, key_path
from config.models import FleetConfig
from config.multikueue import MAX_ROTATION
from config.resolve import (
    DispatchSet,
    allowed_unmirrored,
    clusters_by_name,
    dispatch_sets,
    dispatching_queues,
    enabled_workers,
    mirrored_local_queues,
    queue_workers,
    set_name,
    worker_queue_for,
)
from upstream.k8s import NAMESPACE_NAME_LABEL, dns_label_problem
from upstream.kueue import (
    GATE_REASON,
    INCREMENTAL_DEFAULT_STEP_SIZE,
    INCREMENTAL_ROUND_SECONDS,
    MAX_WORKERS,
    MULTIPLE_CHECKS_REASON,
)
from upstream.kueue_rbac import (
    WORKER_RBAC,
    frameworks_without_worker_rbac,
    kueue_tag,
    supported_versions,
)


def _split_hint(queues: tuple[str, ...], workers: tuple[str, ...]) -> str:
    """The config that works: the set split over enough dispatching ClusterQueues."""
    base = queues[0] if queues else "batch"
    chunks = [workers[i : i + MAX_WORKERS] for i in range(0, len(workers), MAX_WORKERS)]
    shown = ", ".join(
        f"{base}-{k + 1}: [{c[0]}, ..., {c[-1]}]" if len(c) > 1 else f"{base}-{k + 1}: [{c[0]}]"
        for k, c in enumerate(chunks[:2])
    )
    more = ", ..." if len(chunks) > 2 else ""
    return (
        f"split them over {len(chunks)} dispatching manager ClusterQueues of at most "
        f"{MAX_WORKERS} workers each, e.g. multiKueue.clusterQueueWorkers: {{{shown}{more}}} "
        "with a manager ClusterQueue and LocalQueue per entry (jobs pick one by LocalQueue), "
        "or split the fleet into several stacks (docs/scale.md: Fleets beyond one stack)"
    )


def _set_issues(fleet: FleetConfig, dispatch: DispatchSet, path: str) -> Iterator[Issue]:
    """One dispatch set: 1..20 workers (Kueue), each a distinct role=worker cluster."""
    settings = fleet.multi_kueue
    n = len(dispatch.workers)
    if n > MAX_WORKERS:
        who = ", ".join(dispatch.queues) or "the manager"
        yield Issue(
            path,
            f"ClusterQueue {who} would dispatch to {n} workers, but Kueue reaches at most "
            f"{MAX_WORKERS} from one ClusterQueue: a MultiKueueConfig lists at most {MAX_WORKERS} "
            f"clusters (its CRD's spec.clusters maxItems: {MAX_WORKERS}, Kueue "
            f"{fleet.kueue.version}) and Kueue deactivates a ClusterQueue with two MultiKueue "
            f"admission checks (reason {MULTIPLE_CHECKS_REASON}); "
            + _split_hint(dispatch.queues, dispatch.workers),
        )
    elif n == 0:
        yield Issue(path, f"a MultiKueueConfig lists 1..{MAX_WORKERS} workers; this set has none")
    listed = dispatch.name != set_name(None) or (settings is not None and settings.workers)
    by_name = clusters_by_name(fleet)
    for i, name in enumerate(dispatch.workers):
        where = key_path(path, i) if listed else path
        found = by_name.get(name)
        if found is None:
            known = [c.name for c in fleet.clusters if c.role == "worker"]
            shown = ", ".join(known[:5]) + (", ..." if len(known) > 5 else "") or "none"
            yield Issue(where, f"no cluster named {name!r} (workers: {shown})")
        elif found[1].role == "manager":
            yield Issue(
                where,
                f"{name!r} is the manager: MultiKueue never dispatches to the manager itself; "
                "run local jobs through a ClusterQueue without the MultiKueue check",
            )
        elif found[1].role != "worker":
            yield Issue(
                where,
                f"{name!r} has role {found[1].role!r}; a MultiKueue worker needs role 'worker'",
            )
    for dup in sorted(duplicates(dispatch.workers)):
        yield Issue(path, f"{dup!r} is listed more than once")


def check_multikueue_clusters(fleet: FleetConfig) -> Iterator[Issue]:
    """A manager; per dispatch set 1..20 distinct workers (never the manager); known rotations."""
    settings = fleet.multi_kueue
    manager = fleet.manager
    if settings is None:
        return
    if manager is None:
        yield Issue("multiKueue", "needs a cluster with role 'manager' (the dispatcher)")
    dispatching = dispatching_queues(fleet)
    for queue in settings.cluster_queue_workers:
        path = f"multiKueue.clusterQueueWorkers.{queue}"
        if queue not in dispatching:
            known = ", ".join(dispatching)
            yield Issue(path, f"{queue!r} is not a dispatching manager ClusterQueue ({known})")
        elif (problem := dns_label_problem(set_name(queue))) is not None:
            # The AdmissionCheck names its MultiKueueConfig in spec.parameters.name, a DNS label.
            yield Issue(
                path,
                f"its MultiKueueConfig would be named {set_name(queue)!r}, which Kueue rejects "
                f"(AdmissionCheck spec.parameters.name: {problem}); use a shorter ClusterQueue "
                "name",
            )
    sets = dispatch_sets(fleet)
    if settings.workers is not None and all(d.name != set_name(None) for d in sets):
        yield Issue(
            "multiKueue.workers",
            "no dispatching ClusterQueue uses this default set (each has its own in "
            "clusterQueueWorkers): these workers get nothing dispatched from it",
            "warning",
        )
    for dispatch in sets:
        if dispatch.name == set_name(None):
            path = "multiKueue.workers" if settings.workers is not None else "multiKueue"
        else:
            path = f"multiKueue.clusterQueueWorkers.{dispatch.queues[0]}"
        yield from _set_issues(fleet, dispatch, path)
    workers = enabled_workers(fleet)
    by_object_name: dict[str, list[str]] = {}
    for name in workers:
        by_object_name.setdefault(k8s_name(name), []).append(name)
    for object_name, names in by_object_name.items():
        if len(names) > 1:
            yield Issue(
                "multiKueue.workers",
                f"clusters {', '.join(map(repr, names))} would share the MultiKueueCluster name "
                f"{object_name!r} (lowercase, '_' -> '-'); rename one",
            )
    enabled = set(workers)
    for name, generation in settings.rotation.items():
        path = f"multiKueue.rotation.{name}"
        if name not in enabled:
            yield Issue(
                path, f"{name!r} is not a MultiKueue worker ({', '.join(workers) or 'none'})"
            )
        if not 0 <= generation <= MAX_ROTATION:
            yield Issue(path, f"must be 0..{MAX_ROTATION}")


def check_drain(fleet: FleetConfig) -> Iterator[Issue]:
    """`multiKueue.drain` names workers the manager dispatches to, and leaves each dispatch set
    at least one worker that takes new work (else its queues would dispatch nowhere)."""
    settings = fleet.multi_kueue
    if settings is None or not settings.drain:
        return
    workers = enabled_workers(fleet)
    enabled = set(workers)
    first: dict[str, int] = {}
    for i, name in enumerate(settings.drain):
        path = key_path("multiKueue", "drain", i)
        if name in first:
            yield Issue(path, f"{name!r} is listed more than once (first at drain[{first[name]}])")
            continue
        first[name] = i
        if name not in enabled:
            shown = ", ".join(workers) or "none"
            yield Issue(path, f"{name!r} is not a worker the manager dispatches to ({shown})")
    drained = set(first)
    for dispatch in dispatch_sets(fleet):
        if not dispatch.workers or any(w not in drained for w in dispatch.workers):
            continue
        last = max(first[w] for w in dispatch.workers)
        queues = ", ".join(dispatch.queues) or "no ClusterQueue yet"
        yield Issue(
            key_path("multiKueue", "drain", last),
            f"drains the last worker of dispatch set {dispatch.name!r} "
            f"({', '.join(dispatch.workers)}; ClusterQueues {queues}): its queues would dispatch "
            "nowhere and every new job would wait; add a worker to the set first, or keep one "
            "undrained",
        )
    gate = "MultiKueueIncrementalDispatcherRespectConfigOrder"
    if (
        fleet.kueue.multi_kueue.dispatcher == "Incremental"
        and fleet.kueue.feature_gates.get(gate) is False
    ):
        yield Issue(
            "multiKueue.drain",
            f"with kueue.featureGates.{gate} false, Kueue's Incremental dispatcher nominates "
            "workers by name, not in the order that puts drained workers last: a drained worker "
            "may cost each new job a 5-minute round",
            "warning",
        )


def check_force_retire(fleet: FleetConfig) -> Iterator[Issue]:
    """`multiKueue.forceRetire` names workers being removed, not ones the manager dispatches to."""
    settings = fleet.multi_kueue
    if settings is None:
        return
    enabled = set(enabled_workers(fleet))
    for i, name in enumerate(settings.force_retire):
        if name in enabled:
            yield Issue(
                key_path("multiKueue", "forceRetire", i),
                f"{name!r} is still a worker the manager dispatches to: forceRetire is for a "
                "worker removed in the same change (a dead one); take it out of forceRetire",
            )


def check_multikueue_kueue(fleet: FleetConfig) -> Iterator[Issue]:
    """The pinned Kueue has a worker RBAC table, and it covers every enabled framework.

    Manager and workers run the same Kueue version and frameworks by construction: `fleet.kueue`
    is one install for every cluster of the stack.
    """
    if fleet.multi_kueue is None:
        return
    version = fleet.kueue.version
    if kueue_tag(version) not in WORKER_RBAC:
        yield Issue(
            "kueue.version",
            f"MultiKueue worker RBAC is known for Kueue {', '.join(supported_versions())}, "
            f"not {version}",
        )
        return
    missing = set(frameworks_without_worker_rbac(version, fleet.kueue.frameworks))
    for i, name in enumerate(fleet.kueue.frameworks):
        if name in missing:
            yield Issue(
                key_path("kueue", "frameworks", i),
                f"MultiKueue dispatches {name} but Kueue {version}'s worker RBAC "
                "(create-multikueue-kubeconfig.sh) grants nothing for it: the manager could not "
                "watch it on a worker, which would never become Active; remove it",
            )


def check_multikueue_queues(fleet: FleetConfig) -> Iterator[Issue]:
    """Dispatching queues exist, carry no provisioning gate, and their LocalQueues mirror.

    A LocalQueue mirrors to the workers its ClusterQueue dispatches to
    (`multiKueue.clusterQueueWorkers`, default: every worker).
    """
    settings, manager = fleet.multi_kueue, fleet.manager
    if settings is None or manager is None:
        return
    by_name = clusters_by_name(fleet)
    m = by_name[manager.name][0]
    mq = manager.queues
    dispatching = dispatching_queues(fleet)
    for i, name in enumerate(settings.cluster_queues or []):
        if mq.cluster_queue(name) is None:
            known = ", ".join(q.name for q in mq.cluster_queues) or "none declared"
            yield Issue(
                key_path("multiKueue", "clusterQueues", i),
                f"no ClusterQueue {name!r} on the manager {manager.name!r} (declared: {known})",
            )
    if not dispatching:
        yield Issue(
            key_path("clusters", m, "queues", "clusterQueues"),
            "MultiKueue needs at least one manager ClusterQueue to dispatch from",
        )
    for issue in check_gate_conflicts(fleet, {manager.name: dispatching}):
        yield Issue(issue.path, f"{issue.message} (Kueue reason {GATE_REASON})", issue.severity)
    for key in settings.worker_cluster_queues:
        if key not in dispatching:
            yield Issue(
                f"multiKueue.workerClusterQueues.{key}",
                f"{key!r} is not a dispatching manager ClusterQueue ({', '.join(dispatching)})",
            )
    for u, entry in enumerate(settings.allow_unmirrored):
        if fleet.cluster(entry.cluster) is None:
            yield Issue(
                key_path("multiKueue", "allowUnmirrored", u, "cluster"),
                f"no cluster named {entry.cluster!r}",
            )

    reach = queue_workers(fleet)
    workers = [by_name[n][1] for n in enabled_workers(fleet) if n in by_name]
    # Manager LocalQueues: mirrored when their ClusterQueue dispatches, else manager-only.
    for j, lq in enumerate(mq.local_queues):
        path = key_path("clusters", m, "queues", "localQueues", j)
        if mq.cluster_queue(lq.cluster_queue) is None:
            continue  # check_local_queues names the missing ClusterQueue; nothing to add here
        if lq.cluster_queue not in dispatching:
            if not allowed_unmirrored(fleet, manager.name, lq.namespace, lq.name):
                yield Issue(
                    path,
                    f"LocalQueue {lq.namespace}/{lq.name} stays on the manager (ClusterQueue "
                    f"{lq.cluster_queue!r} does not dispatch): allow it in "
                    "multiKueue.allowUnmirrored, or dispatch its ClusterQueue",
                )
            continue
        target = worker_queue_for(fleet, lq.cluster_queue)
        ns = mq.namespace(lq.namespace)
        for w in (by_name[n][1] for n in reach.get(lq.cluster_queue, ()) if n in by_name):
            wcq = w.queues.cluster_queue(target)
            if wcq is None:
                yield Issue(
                    f"{path}.clusterQueue",
                    f"mirrored to worker {w.name!r}, which has no ClusterQueue {target!r}: declare "
                    "it there, or map it in multiKueue.workerClusterQueues",
                )
                continue
            wns = w.queues.namespace(lq.namespace) or ns
            labels = {**(wns.labels if wns else {}), NAMESPACE_NAME_LABEL: lq.namespace}
            if not wcq.namespace_selector.matches(labels):
                yield Issue(
                    f"{path}.namespace",
                    f"worker {w.name!r}'s ClusterQueue {target!r} does not select namespace "
                    f"{lq.namespace!r}: dispatched jobs would never be admitted there",
                )
    # Worker LocalQueues: the mirrored ones come from the manager; others are worker-only.
    # Every mirrored queue, whether or not it reaches this worker: declaring one on a worker
    # is a mistake either way (stated once, on the manager).
    mirrored = {(lq.namespace, lq.name) for _, lq in mirrored_local_queues(fleet)}
    for w in workers:
        wi = by_name[w.name][0]
        for j, lq in enumerate(w.queues.local_queues):
            path = key_path("clusters", wi, "queues", "localQueues", j)
            if (lq.namespace, lq.name) in mirrored:
                yield Issue(
                    path,
                    f"LocalQueue {lq.namespace}/{lq.name} is mirrored from the manager; remove "
                    "it here (it is stated once, on the manager)",
                )
            elif not allowed_unmirrored(fleet, w.name, lq.namespace, lq.name):
                yield Issue(
                    path,
                    f"LocalQueue {lq.namespace}/{lq.name} exists only on worker {w.name!r}: "
                    "MultiKueue never dispatches to it; declare it on the manager, or allow it "
                    "in multiKueue.allowUnmirrored",
                )


def gated_workers(fleet: FleetConfig, dispatch: DispatchSet) -> list[str]:
    """The workers of a set whose ClusterQueue for the set's queues has a provisioning gate."""
    clusters = clusters_by_name(fleet)
    out: list[str] = []
    for worker in dispatch.workers:
        if worker not in clusters:
            continue
        queues = clusters[worker][1].queues
        targets = {worker_queue_for(fleet, q) for q in dispatch.queues}
        if any((cq := queues.cluster_queue(t)) and cq.provisioning_gate for t in targets):
            out.append(worker)
    return out


def dispatch_fan_out(fleet: FleetConfig) -> int:
    """How many workers one job is nominated to at once (AllAtOnce: all of its set)."""
    mk = fleet.kueue.multi_kueue
    if mk.dispatcher != "Incremental":
        return MAX_WORKERS
    step = mk.incremental_dispatcher_config
    return step.step_size if step is not None else INCREMENTAL_DEFAULT_STEP_SIZE


def check_gated_dispatch(fleet: FleetConfig) -> Iterator[Issue]:
    """One job, one scale-up: a job nominated to several gated workers at once opens a
    ProvisioningRequest on each, and each autoscaler scales its pool up for the same job."""
    if fleet.multi_kueue is None or fleet.manager is None:
        return
    if fleet.kueue.multi_kueue.dispatcher == "AllAtOnce":
        return  # chosen, not defaulted: the first worker to admit wins, the others' PRs go
    fan_out = dispatch_fan_out(fleet)
    for dispatch in dispatch_sets(fleet):
        gated = gated_workers(fleet, dispatch)
        at_once = min(fan_out, len(gated))
        if at_once < 2:
            continue
        how = (
            "with no kueue.multiKueue.dispatcher, Kueue's AllAtOnce nominates every worker"
            if fleet.kueue.multi_kueue.dispatcher is None
            else f"the Incremental dispatcher nominates {fan_out} workers per round"
        )
        yield Issue(
            "kueue.multiKueue.dispatcher",
            f"{how}: a job of {', '.join(dispatch.queues)} opens a ProvisioningRequest on "
            f"{at_once} of its gated workers ({', '.join(gated)}) at once, and each scales up "
            "for it; set kueue.multiKueue.dispatcher: Incremental and "
            "kueue.multiKueue.incrementalDispatcherConfig.stepSize: 1 (one worker per "
            f"{INCREMENTAL_ROUND_SECONDS // 60}-minute round), or dispatcher: AllAtOnce to "
            "keep the race on purpose (docs/kueue-queueing.md)",
            "warning",
        )


MULTIKUEUE_CHECKS: tuple[Check, ...] = (
    check_multikueue_clusters,
    check_drain,
    check_force_retire,
    check_multikueue_kueue,
    check_multikueue_queues,
    check_gated_dispatch,
)
