"""MultiKueue settings (`fleet.multiKueue`), queue mirroring, manager quota defaults, checks.

With `multiKueue` set, the manager dispatches its ClusterQueues' workloads to the workers. Queues
are stated once, on the manager (`clusters[<manager>].queues`): the namespaces and LocalQueues of
the dispatching ClusterQueues are mirrored to every worker, because MultiKueue copies a job to a
worker under the same namespace and LocalQueue name (../shared/notes/kueue.md 5.1; the seed).
The worker ClusterQueue a mirrored LocalQueue points at has the manager queue's name unless
`workerClusterQueues` maps it; worker ClusterQueues (flavors, quotas, provisioning gates) stay
per worker.

`config.models` imports this module for `FleetConfig.multi_kueue`, so `config.models` is imported
for type checking only (as in config.karmada and config.kueue).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Final, Literal

from pydantic import Field

from builders import multikueue as mk
from config.base import Model
from config.errors import Issue, key_path
from config.kueue import (
    NAMESPACE_NAME_LABEL,
    ClusterQueueConfig,
    ClusterQueues,
    LocalQueueConfig,
    check_gate_conflicts,
    quantity_value,
)

if TYPE_CHECKING:
    from config.models import ClusterConfig, FleetConfig

MAX_ROTATION: Final = 1_000_000
MIN_CONNECT_TIMEOUT: Final = 10
MAX_CONNECT_TIMEOUT: Final = 3600
GATE_REASON: Final = "MultiKueueWithProvisioningRequest"


class UnmirroredQueue(Model):
    """A LocalQueue allowed on one side only: a manager-local queue, or a worker's own."""

    cluster: str
    namespace: str
    name: str


class MultiKueueSettings(Model):
    """Which workers the manager dispatches to, their credentials' generation, what is mirrored."""

    # Default: every cluster with role worker, in config order (the Incremental dispatcher's order).
    workers: list[str] | None = Field(default=None, min_length=1)
    # Credential generation per worker (default 0): raise it to issue a new token (README).
    rotation: dict[str, int] = Field(default_factory=dict[str, int])
    # How long `pulumi up` waits for each MultiKueueCluster to be Active (Kueue connected to the
    # worker with the credential) before it fails, naming the worker.
    connect_timeout_seconds: int = Field(
        default=mk.DEFAULT_CONNECT_TIMEOUT, ge=MIN_CONNECT_TIMEOUT, le=MAX_CONNECT_TIMEOUT
    )
    # Manager ClusterQueues that get the MultiKueue admission check. Default: all of them.
    cluster_queues: list[str] | None = None
    # Manager ClusterQueue -> the workers' ClusterQueue its mirrored LocalQueues point at.
    worker_cluster_queues: dict[str, str] = Field(default_factory=dict[str, str])
    allow_unmirrored: list[UnmirroredQueue] = Field(default_factory=list[UnmirroredQueue])


# --- resolution (shared by checks, the Fleet, the renderer and preflight) ----------------------


def enabled_workers(fleet: FleetConfig) -> list[str]:
    """The workers the manager dispatches to: configured, else every role=worker cluster."""
    settings = fleet.multi_kueue
    if settings is None:
        return []
    if settings.workers is not None:
        return list(settings.workers)
    return [c.name for c in fleet.clusters if c.role == "worker"]


def rotation_of(fleet: FleetConfig, worker: str) -> int:
    settings = fleet.multi_kueue
    return 0 if settings is None else settings.rotation.get(worker, 0)


def dispatching_queues(fleet: FleetConfig) -> list[str]:
    """Manager ClusterQueues that carry the MultiKueue check."""
    settings, manager = fleet.multi_kueue, fleet.manager
    if settings is None or manager is None:
        return []
    if settings.cluster_queues is not None:
        return list(settings.cluster_queues)
    return [cq.name for cq in manager.queues.cluster_queues]


def worker_queue_for(fleet: FleetConfig, manager_queue: str) -> str:
    settings = fleet.multi_kueue
    mapping = settings.worker_cluster_queues if settings is not None else {}
    return mapping.get(manager_queue, manager_queue)


def extra_checks(fleet: FleetConfig) -> dict[str, dict[str, list[tuple[str, None]]]]:
    """`{manager: {ClusterQueue: [(check, onFlavors)]}}` for the Kueue component and renderer.

    No onFlavors: Kueue deactivates a queue whose MultiKueue check is per flavor
    (MultiKueueAdmissionCheckAppliedPerFlavor).
    """
    manager = fleet.manager
    if manager is None or fleet.multi_kueue is None:
        return {}
    return {manager.name: {cq: [(mk.ADMISSION_CHECK, None)] for cq in dispatching_queues(fleet)}}


def _allowed(fleet: FleetConfig, cluster: str, namespace: str, name: str) -> bool:
    settings = fleet.multi_kueue
    return settings is not None and any(
        (u.cluster, u.namespace, u.name) == (cluster, namespace, name)
        for u in settings.allow_unmirrored
    )


def mirrored_local_queues(fleet: FleetConfig) -> list[tuple[int, LocalQueueConfig]]:
    """(index in the manager's localQueues, LocalQueue) for those of dispatching queues."""
    manager = fleet.manager
    if manager is None or fleet.multi_kueue is None:
        return []
    dispatching = set(dispatching_queues(fleet))
    return [
        (j, lq)
        for j, lq in enumerate(manager.queues.local_queues)
        if lq.cluster_queue in dispatching
    ]


def mirrored_queues(fleet: FleetConfig, worker: ClusterConfig) -> ClusterQueues:
    """A worker's queues with the manager's mirrored namespaces and LocalQueues added."""
    manager = fleet.manager
    if manager is None or worker.name not in enabled_workers(fleet):
        return worker.queues
    own = worker.queues
    mirrored = [lq for _, lq in mirrored_local_queues(fleet)]
    namespaces = list(own.namespaces)
    for ns_name in dict.fromkeys(lq.namespace for lq in mirrored):
        source = manager.queues.namespace(ns_name)
        if own.namespace(ns_name) is None and source is not None:
            namespaces.append(source)
    local_queues = list(own.local_queues)
    for lq in mirrored:
        target = worker_queue_for(fleet, lq.cluster_queue)
        local_queues.append(lq.model_copy(update={"cluster_queue": target}))
    return own.model_copy(update={"namespaces": namespaces, "local_queues": local_queues})


def with_mirrored_queues(fleet: FleetConfig) -> FleetConfig:
    """The fleet as deployed: every enabled worker also declares the mirrored queues."""
    if fleet.multi_kueue is None or fleet.manager is None:
        return fleet
    clusters = [c.model_copy(update={"queues": mirrored_queues(fleet, c)}) for c in fleet.clusters]
    return fleet.model_copy(update={"clusters": clusters})


# --- manager quota: admission happens on the manager, execution on a worker -------------------


@dataclass(frozen=True, slots=True)
class ManagerQuota:
    """One resource of one dispatching manager ClusterQueue: declared vs what the workers hold."""

    cluster_queue: str
    resource: str
    declared: Decimal | None
    workers_total: Decimal
    per_worker: dict[str, Decimal] = field(default_factory=dict[str, Decimal])
    path: str = ""

    @property
    def status(self) -> Literal["ok", "low", "high", "missing"]:
        if self.declared is None:
            return "missing"
        if self.declared < self.workers_total:
            return "low"
        if self.declared > self.workers_total:
            return "high"
        return "ok"

    @property
    def suggested(self) -> str:
        return format_quantity(self.resource, self.workers_total)


def format_quantity(resource: str, amount: Decimal) -> str:
    """A quantity Kueue accepts: memory in Gi/Mi when exact, CPU in millicores when fractional."""
    if resource == "memory" or resource.startswith("hugepages-") or "storage" in resource:
        for suffix, unit in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount >= unit and amount % unit == 0:
                return f"{int(amount // unit)}{suffix}"
    if amount == amount.to_integral_value():
        return str(int(amount))
    return f"{int(amount * 1000)}m"


def _totals(cq: ClusterQueueConfig) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for group in cq.resource_groups:
        for flavor in group.flavors:
            for rq in flavor.resources:
                out[rq.name] = out.get(rq.name, Decimal(0)) + quantity_value(rq.nominal_quota)
    return out


def manager_quotas(fleet: FleetConfig) -> list[ManagerQuota]:
    """Per dispatching manager ClusterQueue and resource: its quota vs the sum over workers.

    The manager's quota decides how much it admits (and so dispatches) at once; the workers'
    quotas decide what runs. The sensible default is their sum: lower leaves workers idle, higher
    dispatches workloads no worker can admit yet. Preflight prints this table.
    """
    manager = fleet.manager
    if manager is None or fleet.multi_kueue is None:
        return []
    m_index = fleet.clusters.index(manager)
    rows: list[ManagerQuota] = []
    for name in dispatching_queues(fleet):
        j, cq = next(
            ((j, q) for j, q in enumerate(manager.queues.cluster_queues) if q.name == name),
            (-1, None),
        )
        if cq is None:
            continue
        declared = _totals(cq)
        target = worker_queue_for(fleet, name)
        per_resource: dict[str, dict[str, Decimal]] = {}
        for worker_name in enabled_workers(fleet):
            worker = fleet.cluster(worker_name)
            wcq = worker.queues.cluster_queue(target) if worker is not None else None
            for resource, amount in (_totals(wcq) if wcq is not None else {}).items():
                per_resource.setdefault(resource, {})[worker_name] = amount
        path = key_path("clusters", m_index, "queues", "clusterQueues", j, "resourceGroups")
        for resource in dict.fromkeys([*declared, *per_resource]):
            per_worker = per_resource.get(resource, {})
            rows.append(
                ManagerQuota(
                    cluster_queue=name,
                    resource=resource,
                    declared=declared.get(resource),
                    workers_total=sum(per_worker.values(), Decimal(0)),
                    per_worker=per_worker,
                    path=path,
                )
            )
    return rows


def suggested_resource_groups(fleet: FleetConfig, cluster_queue: str) -> list[dict[str, object]]:
    """A `resourceGroups` block for a manager ClusterQueue with the workers' summed quotas.

    It keeps the queue's own groups and flavors and spreads nothing: the first flavor of each group
    gets the total (a manager's flavors are accounting buckets; it runs no pods of these queues).
    """
    manager = fleet.manager
    if manager is None:
        return []
    cq = manager.queues.cluster_queue(cluster_queue)
    totals = {q.resource: q for q in manager_quotas(fleet) if q.cluster_queue == cluster_queue}
    if cq is None:
        return []
    groups: list[dict[str, object]] = []
    for group in cq.resource_groups:
        flavors: list[dict[str, object]] = []
        for k, flavor in enumerate(group.flavors):
            resources: list[dict[str, str]] = []
            for res in group.covered_resources:
                row = totals.get(res)
                amount = row.workers_total if row is not None and k == 0 else Decimal(0)
                resources.append({"name": res, "nominalQuota": format_quantity(res, amount)})
            flavors.append({"name": flavor.name, "resources": resources})
        groups.append({"coveredResources": list(group.covered_resources), "flavors": flavors})
    return groups


# --- checks ------------------------------------------------------------------------------------


def _dupes(names: Sequence[str]) -> set[str]:
    return {n for n, c in Counter(names).items() if c > 1}


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
    if not 1 <= len(workers) <= mk.MAX_WORKERS:
        yield Issue(
            "multiKueue.workers" if listed else "multiKueue",
            f"a MultiKueueConfig lists 1..{mk.MAX_WORKERS} workers; this stack has {len(workers)}",
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
    for dup in _dupes(workers):
        yield Issue("multiKueue.workers", f"{dup!r} is listed more than once")
    by_object_name: dict[str, list[str]] = {}
    for name in dict.fromkeys(workers):
        by_object_name.setdefault(mk.k8s_name(name), []).append(name)
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
    if mk.kueue_tag(version) not in mk.WORKER_RBAC:
        yield Issue(
            "kueue.version",
            f"MultiKueue worker RBAC is known for Kueue {', '.join(mk.supported_versions())}, "
            f"not {version}",
        )
        return
    missing = set(mk.frameworks_without_worker_rbac(version, fleet.kueue.frameworks))
    for i, name in enumerate(fleet.kueue.frameworks):
        if name in missing:
            yield Issue(
                key_path("kueue", "frameworks", i),
                f"MultiKueue dispatches {name} but Kueue {version}'s worker RBAC "
                "(create-multikueue-kubeconfig.sh) grants nothing for it: the manager could not "
                "watch it on a worker, which would never become Active; remove it",
            )


def check_multikueue_queues(fleet: FleetConfig) -> Iterator[Issue]:
    """Dispatching queues exist, carry no provisioning gate, and their LocalQueues mirror."""
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
            if not _allowed(fleet, manager.name, lq.namespace, lq.name):
                yield Issue(
                    path,
                    f"LocalQueue {lq.namespace}/{lq.name} stays on the manager (ClusterQueue "
                    f"{lq.cluster_queue!r} does not dispatch): allow it in "
                    "multiKueue.allowUnmirrored, or dispatch its ClusterQueue",
                )
            continue
        target = worker_queue_for(fleet, lq.cluster_queue)
        ns = mq.namespace(lq.namespace)
        for w in workers:
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
            elif not _allowed(fleet, w.name, lq.namespace, lq.name):
                yield Issue(
                    path,
                    f"LocalQueue {lq.namespace}/{lq.name} exists only on worker {w.name!r}: "
                    "MultiKueue never dispatches to it; declare it on the manager, or allow it "
                    "in multiKueue.allowUnmirrored",
                )


def check_manager_quota(fleet: FleetConfig) -> Iterator[Issue]:
    """Warn when a dispatching queue's quota is not the workers' sum (preflight shows the table)."""
    for row in manager_quotas(fleet):
        where = row.path
        if row.status == "missing":
            yield Issue(
                where,
                f"{row.resource}: the workers hold {row.suggested} but the manager queue covers "
                "none: workloads requesting it are never dispatched",
                "warning",
            )
        elif row.status == "low":
            yield Issue(
                where,
                f"{row.resource}: manager quota "
                f"{format_quantity(row.resource, row.declared or Decimal(0))} < "
                f"the workers' {row.suggested}: workers sit idle while jobs wait on the manager",
                "warning",
            )
        elif row.status == "high":
            yield Issue(
                where,
                f"{row.resource}: manager quota "
                f"{format_quantity(row.resource, row.declared or Decimal(0))} > "
                f"the workers' {row.suggested}: the manager dispatches jobs no worker can admit "
                "yet (they wait there)",
                "warning",
            )


MULTIKUEUE_CHECKS: Final = (
    check_multikueue_clusters,
    check_multikueue_kueue,
    check_multikueue_queues,
    check_manager_quota,
)
