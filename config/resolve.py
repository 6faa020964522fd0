"""Defaults that depend on other keys: who dispatches to whom, what is mirrored, who hosts Karmada.

Shared by checks, builders, components and preflight, so each answer is computed one way.
"""

from __future__ import annotations

from config.karmada import ApplicationConfig
from config.kueue import ClusterQueueConfig, KueueObjects, LocalQueueConfig
from config.models import AccessConfig, ClusterConfig, FleetConfig, GpuSettings, PoolConfig
from constants import MULTIKUEUE_ADMISSION_CHECK, MULTIKUEUE_CONFIG
from upstream.aks import VmShape, lookup_vm
from upstream.placement import SubsetSpec

# Cluster roles that are Karmada members by default (the manager dispatches, it runs no apps).
MEMBER_ROLES = ("worker", "standalone")


# --- MultiKueue ----------------------------------------------------------------------------------


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


def dispatch_workers(fleet: FleetConfig, manager_queue: str) -> list[str]:
    """The workers a dispatching manager ClusterQueue sends its workloads to."""
    settings = fleet.multi_kueue
    if settings is None:
        return []
    own = settings.cluster_queue_workers.get(manager_queue)
    return list(own) if own is not None else enabled_workers(fleet)


def dispatch_check_name(fleet: FleetConfig, manager_queue: str) -> str:
    """The MultiKueue AdmissionCheck (and MultiKueueConfig) name a dispatching queue carries."""
    settings = fleet.multi_kueue
    if settings is not None and manager_queue in settings.cluster_queue_workers:
        return f"{MULTIKUEUE_CONFIG}-{manager_queue}"
    return MULTIKUEUE_ADMISSION_CHECK


def dispatch_sets(fleet: FleetConfig) -> dict[str, list[str]]:
    """AdmissionCheck/MultiKueueConfig name -> its workers, for every dispatching queue's set.

    Queues without their own workers share the default set (every worker, `multikueue`), so a
    stack without `clusterQueueWorkers` renders as before.
    """
    if fleet.multi_kueue is None or fleet.manager is None:
        return {}
    sets: dict[str, list[str]] = {}
    for cq in dispatching_queues(fleet):
        sets.setdefault(dispatch_check_name(fleet, cq), dispatch_workers(fleet, cq))
    return sets or {MULTIKUEUE_CONFIG: enabled_workers(fleet)}


def multikueue_checks(fleet: FleetConfig) -> dict[str, dict[str, list[str]]]:
    """`{manager: {ClusterQueue: [admission check]}}`: the MultiKueue check on dispatching queues.

    Never per flavor: Kueue deactivates a queue whose MultiKueue check has onFlavors
    (MultiKueueAdmissionCheckAppliedPerFlavor).
    """
    manager = fleet.manager
    if manager is None or fleet.multi_kueue is None:
        return {}
    return {
        manager.name: {cq: [dispatch_check_name(fleet, cq)] for cq in dispatching_queues(fleet)}
    }


def allowed_unmirrored(fleet: FleetConfig, cluster: str, namespace: str, name: str) -> bool:
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


def mirrored_queues(fleet: FleetConfig, worker: ClusterConfig) -> KueueObjects:
    """A worker's queues with the manager's mirrored namespaces and LocalQueues added."""
    manager = fleet.manager
    if manager is None or worker.name not in enabled_workers(fleet):
        return worker.queues
    own = worker.queues
    mirrored = [
        lq
        for _, lq in mirrored_local_queues(fleet)
        if worker.name in dispatch_workers(fleet, lq.cluster_queue)
    ]
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


# --- Kueue ---------------------------------------------------------------------------------------


def gate_flavors(queues: KueueObjects, cq: ClusterQueueConfig) -> list[str] | None:
    """The `onFlavors` of a queue's gate: explicit, else its pool-bound flavors, else None (all)."""
    ref = cq.provisioning_gate
    if ref is None:
        return None
    if ref.on_flavors is not None:
        return list(ref.on_flavors) or None  # `[]` means what Kueue reads it as: every flavor
    bound = [n for n in cq.flavor_names if (f := queues.flavor(n)) is not None and f.pool]
    return bound or None


def custom_shapes(fleet: FleetConfig) -> dict[str, VmShape]:
    """The stack's own VM sizes (`vmSizes`), as shapes the capacity model takes."""
    return {
        name: VmShape(s.vcpus, round(s.memory_gib * 1024), s.gpus)
        for name, s in fleet.vm_sizes.items()
    }


# --- Karmada -------------------------------------------------------------------------------------


def host_name(fleet: FleetConfig) -> str | None:
    """The Karmada host: configured, else the manager, else the only cluster (none if existing)."""
    settings = fleet.karmada
    if settings is None or settings.source == "existing":
        return None
    if settings.host is not None:
        return settings.host
    if fleet.manager is not None:
        return fleet.manager.name
    return fleet.clusters[0].name if len(fleet.clusters) == 1 else None


def member_names(fleet: FleetConfig) -> list[str]:
    """The Karmada members: configured, else every worker and standalone cluster."""
    settings = fleet.karmada
    if settings is None:
        return []
    if settings.members is not None:
        return list(settings.members)
    return [c.name for c in fleet.clusters if c.role in MEMBER_ROLES]


def subset_specs(app: ApplicationConfig) -> list[SubsetSpec]:
    return [SubsetSpec(s.name, s.replicas) for s in app.subsets]


# --- Access and GPUs -----------------------------------------------------------------------------


def access_of(fleet: FleetConfig, cluster: ClusterConfig) -> AccessConfig:
    """The cluster's `access`, else the fleet's (a cluster's section replaces it whole)."""
    return cluster.access if cluster.access is not None else fleet.access


def entra_clusters(fleet: FleetConfig) -> list[str]:
    """AKS clusters whose API servers take Entra tokens (the provider uses kubelogin)."""
    return [c.name for c in fleet.clusters if c.source == "aks" and access_of(fleet, c).entra_id]


def gpu_of(fleet: FleetConfig, cluster: ClusterConfig) -> GpuSettings:
    return cluster.gpu if cluster.gpu is not None else fleet.gpu


def gpu_pools(fleet: FleetConfig, cluster: ClusterConfig) -> list[PoolConfig]:
    """User pools whose VM size has GPUs (built-in table or `vmSizes`)."""
    shapes = custom_shapes(fleet)
    return [p for p in cluster.pools if (shape := lookup_vm(p.vm_size, shapes)) and shape.gpus > 0]
