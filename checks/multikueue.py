"""MultiKueue checks: a manager and 1..20 workers, worker RBAC for every framework, mirroring.

Every LocalQueue either mirrors from the manager to every worker (a dispatching ClusterQueue) or is
allowed on one side only (`multiKueue.allowUnmirrored`); the worker ClusterQueue a mirrored queue
points at must exist and select its namespace.
"""

from __future__ import annotations

from collections.abc import Iterator

from builders.multikueue import k8s_name
from checks.common import Check, duplicates
from checks.kueue import check_gate_conflicts
from config.errors import Issue, key_path
from config.models import FleetConfig
from config.multikueue import MAX_ROTATION
from config.resolve import (
    allowed_unmirrored,
    dispatch_check_name,
    dispatch_workers,
    dispatching_queues,
    enabled_workers,
    mirrored_local_queues,
    worker_queue_for,
)
from upstream.k8s import NAMESPACE_NAME_LABEL, dns_subdomain_problem
from upstream.kueue import (
    GATE_REASON,
    MAX_WORKERS,
    WORKER_RBAC,
    frameworks_without_worker_rbac,
    kueue_tag,
    supported_versions,
)


def check_multikueue_clusters(fleet: FleetConfig) -> Iterator[Issue]:
    """A manager, 1..20 distinct workers (never the manager itself), rotations of known workers."""
    settings = fleet.multi_kueue
    manager = fleet.manager
    if settings is None:
        return
    if manager is None:
        yield Issue("multiKueue", "needs a cluster with role 'manager' (the dispatcher)")
    workers = enabled_workers(fleet)
    listed = settings.workers is not None
    if not 1 <= len(workers) <= MAX_WORKERS:
        yield Issue(
            "multiKueue.workers" if listed else "multiKueue",
            f"a MultiKueueConfig lists 1..{MAX_WORKERS} workers; this stack has {len(workers)}",
        )
    for i, name in enumerate(workers):
        path = key_path("multiKueue", "workers", i) if listed else "multiKueue"
        cluster = fleet.cluster(name)
        if cluster is None:
            known = ", ".join(c.name for c in fleet.clusters if c.role == "worker") or "none"
            yield Issue(path, f"no cluster named {name!r} (workers: {known})")
        elif cluster.role == "manager":
            yield Issue(
                path,
                f"{name!r} is the manager: MultiKueue never dispatches to the manager itself; "
                "run local jobs through a ClusterQueue without the MultiKueue check",
            )
        elif cluster.role != "worker":
            yield Issue(
                path, f"{name!r} has role {cluster.role!r}; a MultiKueue worker needs role 'worker'"
            )
    for dup in duplicates(workers):
        yield Issue("multiKueue.workers", f"{dup!r} is listed more than once")
    by_object_name: dict[str, list[str]] = {}
    for name in dict.fromkeys(workers):
        by_object_name.setdefault(k8s_name(name), []).append(name)
    for object_name, names in by_object_name.items():
        if len(names) > 1:
            yield Issue(
                "multiKueue.workers",
                f"clusters {', '.join(map(repr, names))} would share the MultiKueueCluster name "
                f"{object_name!r} (lowercase, '_' -> '-'); rename one",
            )
    for name, generation in settings.rotation.items():
        path = f"multiKueue.rotation.{name}"
        if name not in workers:
            yield Issue(
                path, f"{name!r} is not a MultiKueue worker ({', '.join(workers) or 'none'})"
            )
        if not 0 <= generation <= MAX_ROTATION:
            yield Issue(path, f"must be 0..{MAX_ROTATION}")


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
    m = fleet.clusters.index(manager)
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
    workers_all = enabled_workers(fleet)
    for key, members in settings.cluster_queue_workers.items():
        path = f"multiKueue.clusterQueueWorkers.{key}"
        if key not in dispatching:
            yield Issue(
                path,
                f"{key!r} is not a dispatching manager ClusterQueue ({', '.join(dispatching)})",
            )
        if not 1 <= len(members) <= MAX_WORKERS:
            yield Issue(path, f"a MultiKueueConfig lists 1..{MAX_WORKERS} workers")
        for n, member in enumerate(members):
            if member not in workers_all:
                yield Issue(
                    f"{path}[{n}]",
                    f"{member!r} is not a MultiKueue worker ({', '.join(workers_all) or 'none'})",
                )
        for dup in duplicates(members):
            yield Issue(path, f"{dup!r} is listed more than once")
        if problem := dns_subdomain_problem(dispatch_check_name(fleet, key)):
            yield Issue(path, f"its MultiKueueConfig and AdmissionCheck name: {problem}")
    for u, entry in enumerate(settings.allow_unmirrored):
        if fleet.cluster(entry.cluster) is None:
            yield Issue(
                key_path("multiKueue", "allowUnmirrored", u, "cluster"),
                f"no cluster named {entry.cluster!r}",
            )

    workers = [w for n in enabled_workers(fleet) if (w := fleet.cluster(n)) is not None]
    # Manager LocalQueues: mirrored when their ClusterQueue dispatches, else manager-only.
    for j, lq in enumerate(mq.local_queues):
        path = key_path("clusters", m, "queues", "localQueues", j)
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
        targets = set(dispatch_workers(fleet, lq.cluster_queue))
        for w in (w for w in workers if w.name in targets):
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
    mirrored = {(lq.namespace, lq.name) for _, lq in mirrored_local_queues(fleet)}
    for w in workers:
        wi = fleet.clusters.index(w)
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


MULTIKUEUE_CHECKS: tuple[Check, ...] = (
    check_multikueue_clusters,
    check_multikueue_kueue,
    check_multikueue_queues,
)
