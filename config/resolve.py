"""Defaults that depend on other keys: who dispatches to whom, what is mirrored, who hosts Karmada.

Shared by checks, builders, components and preflight, so each answer is computed one way.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal

from config.clock import today
from config.errors import key_path
from config.karmada import ApplicationConfig
from config.kueue import ClusterQueueConfig, KueueObjects, LocalQueueConfig
from config.models import AccessConfig, ClusterConfig, FleetConfig, GpuSettings, PoolConfig
from constants import MULTIKUEUE_CONFIG
from upstream.aks import VmShape, lookup_vm
from upstream.placement import SubsetSpec

# Cluster roles that are Karmada members by default (the manager dispatches, it runs no apps).
MEMBER_ROLES = ("worker", "standalone")


# --- MultiKueue ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DispatchSet:
    """One MultiKueueConfig and its AdmissionCheck (same name): the workers some queues reach."""

    name: str
    workers: tuple[str, ...]
    # The manager ClusterQueues that carry this set's check (Kueue allows one MultiKueue check
    # per ClusterQueue).
    queues: tuple[str, ...]


def default_workers(fleet: FleetConfig) -> list[str]:
    """The default dispatch set: `multiKueue.workers`, else every role=worker cluster."""
    settings = fleet.multi_kueue
    if settings is None:
        return []
    if settings.workers is not None:
        return list(settings.workers)
    return [c.name for c in fleet.clusters if c.role == "worker"]


def set_name(cluster_queue: str | None) -> str:
    """The default set keeps the name stacks already have; a queue's own set is named after it."""
    return MULTIKUEUE_CONFIG if cluster_queue is None else f"{MULTIKUEUE_CONFIG}-{cluster_queue}"


def dispatch_sets(fleet: FleetConfig) -> list[DispatchSet]:
    """Each MultiKueueConfig/AdmissionCheck: the default set (if a queue uses it), then own sets."""
    settings = fleet.multi_kueue
    if settings is None or fleet.manager is None:
        return []
    queues = dispatching_queues(fleet)
    own = [q for q in queues if q in settings.cluster_queue_workers]
    default_users = tuple(q for q in queues if q not in settings.cluster_queue_workers)
    out: list[DispatchSet] = []
    if default_users or not own:
        out.append(DispatchSet(set_name(None), tuple(default_workers(fleet)), default_users))
    out += [DispatchSet(set_name(q), tuple(settings.cluster_queue_workers[q]), (q,)) for q in own]
    return out


def enabled_workers(fleet: FleetConfig) -> list[str]:
    """The workers the manager dispatches to: every set's, in first-seen order."""
    return list(dict.fromkeys(w for s in dispatch_sets(fleet) for w in s.workers))


def queue_workers(fleet: FleetConfig) -> dict[str, tuple[str, ...]]:
    """Dispatching manager ClusterQueue -> the workers it reaches."""
    return {q: s.workers for s in dispatch_sets(fleet) for q in s.queues}


def drained_workers(fleet: FleetConfig) -> list[str]:
    """`multiKueue.drain` among the workers the manager dispatches to, in its order, once each."""
    settings = fleet.multi_kueue
    if settings is None:
        return []
    enabled = set(enabled_workers(fleet))
    return [w for w in dict.fromkeys(settings.drain) if w in enabled]


def dispatch_order(fleet: FleetConfig, dispatch: DispatchSet) -> tuple[str, ...]:
    """A set's workers as its MultiKueueConfig lists them: drained workers last.

    Kueue v0.19.2's Incremental dispatcher nominates workers in MultiKueueConfig order (gate
    MultiKueueIncrementalDispatcherRespectConfigOrder, beta, on; incrementaldispatcher.go
    getNextNominatedWorkers) and waits a 5-minute round on each nominee that admits nothing. A
    drained worker admits nothing new (its mirrored queues are held), so in its old place every
    new job would first wait a round on it; last, it is nominated only when every other worker
    has had its round. Undrained, it is back in its place. AllAtOnce ignores the order.
    """
    drained = set(drained_workers(fleet))
    return (
        *(w for w in dispatch.workers if w not in drained),
        *(w for w in dispatch.workers if w in drained),
    )


def held_local_queues(fleet: FleetConfig) -> dict[str, list[tuple[str, str]]]:
    """Drained worker -> (namespace, name) of its mirrored LocalQueues: `stopPolicy: Hold` there.

    Hold, not removal from the MultiKueueConfig: Kueue v0.19.2 reads a Workload's remotes from
    its config's clusters only, so a Workload admitted on a worker that leaves the config is
    reset to Retry ("Admitting remote no longer exists") and evicted, while its copy keeps
    running unseen on that worker (docs/operations.md, "Draining a worker"). A held LocalQueue
    admits nothing new and lets admitted Workloads run to completion (`Hold`, not
    `HoldAndDrain`, which evicts them).
    """
    reach = _reach(fleet)
    mirrored = mirrored_local_queues(fleet)
    return {
        worker: [
            (lq.namespace, lq.name)
            for _, lq in mirrored
            if lq.cluster_queue in reach.get(worker, set())
        ]
        for worker in drained_workers(fleet)
    }


def rotation_of(fleet: FleetConfig, worker: str, day: date | None = None) -> int:
    """The MultiKueue worker token's generation on `day` (default: config.clock.today)."""
    return credential_schedule(fleet, worker, "multikueue", day).generation


def dispatching_queues(fleet: FleetConfig) -> list[str]:
    """Manager ClusterQueues that carry a MultiKueue check."""
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


def multikueue_checks(fleet: FleetConfig) -> dict[str, dict[str, list[str]]]:
    """`{manager: {ClusterQueue: [admission check]}}`: its set's check on each dispatching queue.

    Never per flavor: Kueue deactivates a queue whose MultiKueue check has onFlavors
    (MultiKueueAdmissionCheckAppliedPerFlavor), or that has two MultiKueue checks
    (MultipleMultiKueueAdmissionChecks).
    """
    manager = fleet.manager
    if manager is None or fleet.multi_kueue is None:
        return {}
    check = {q: s.name for s in dispatch_sets(fleet) for q in s.queues}
    return {manager.name: {cq: [check[cq]] for cq in dispatching_queues(fleet) if cq in check}}


def clusters_by_name(fleet: FleetConfig) -> dict[str, tuple[int, ClusterConfig]]:
    """Name -> (index in `clusters`, cluster): one pass, for loops over many workers."""
    return {c.name: (i, c) for i, c in enumerate(fleet.clusters)}


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


def _reach(fleet: FleetConfig) -> dict[str, set[str]]:
    """Worker -> the dispatching manager ClusterQueues that reach it."""
    out: dict[str, set[str]] = {}
    for queue, workers in queue_workers(fleet).items():
        for worker in workers:
            out.setdefault(worker, set()).add(queue)
    return out


def dispatched_namespaces(fleet: FleetConfig) -> dict[str, list[str]]:
    """Worker -> the namespaces the manager dispatches Jobs into on it (its mirrored LocalQueues'
    namespaces, in the manager's order): where the worker grants MultiKueue its write verbs."""
    reach = _reach(fleet)
    mirrored = mirrored_local_queues(fleet)
    return {
        worker: list(
            dict.fromkeys(lq.namespace for _, lq in mirrored if lq.cluster_queue in queues)
        )
        for worker, queues in reach.items()
    }


def mirrored_queues(
    fleet: FleetConfig, worker: ClusterConfig, reach: dict[str, set[str]] | None = None
) -> KueueObjects:
    """A worker's queues plus the manager's LocalQueues (and namespaces) of queues reaching it."""
    manager = fleet.manager
    queues = (reach if reach is not None else _reach(fleet)).get(worker.name)
    if manager is None or not queues:
        return worker.queues
    own = worker.queues
    mirrored = [lq for _, lq in mirrored_local_queues(fleet) if lq.cluster_queue in queues]
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
    reach = _reach(fleet)
    clusters = [
        c.model_copy(update={"queues": mirrored_queues(fleet, c, reach)}) for c in fleet.clusters
    ]
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


def version_key(index: int, cluster: ClusterConfig) -> str:
    """The key that sets a cluster's version (the `index`th): its own, else the fleet's default."""
    if cluster.kubernetes_version:
        return key_path("clusters", index, "kubernetesVersion")
    return "kubernetesVersion"


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
    """The cluster's `access`, else the fleet's (a cluster's section replaces it whole).

    The fleet's `authorizedIpRanges` range every cluster that can take them: AKS virtual nodes
    cannot (`fleet_ranges_skipped`), so such a cluster gets the fleet's section without ranges,
    and everything else (groups, Entra ID, the deploy identity's role) still reaches it.
    """
    if cluster.access is not None:
        return cluster.access
    if fleet_ranges_skipped(fleet, cluster):
        return fleet.access.model_copy(update={"authorized_ip_ranges": []})
    return fleet.access


def fleet_ranges_skipped(fleet: FleetConfig, cluster: ClusterConfig) -> bool:
    """Whether the fleet's API server ranges are left off this cluster: it runs virtual nodes.

    AKS virtual nodes do not support authorized IP ranges (upstream.aks.RULE_VIRTUAL_NODE_RANGES).
    """
    return (
        cluster.access is None
        and cluster.virtual_nodes.enabled
        and bool(fleet.access.authorized_ip_ranges)
    )


def entra_clusters(fleet: FleetConfig) -> list[str]:
    """AKS clusters whose API servers take Entra tokens (the provider uses kubelogin)."""
    return [c.name for c in fleet.clusters if c.source == "aks" and access_of(fleet, c).entra_id]


def gpu_of(fleet: FleetConfig, cluster: ClusterConfig) -> GpuSettings:
    return cluster.gpu if cluster.gpu is not None else fleet.gpu


def gpu_pools(fleet: FleetConfig, cluster: ClusterConfig) -> list[PoolConfig]:
    """User pools whose VM size has GPUs (built-in table or `vmSizes`)."""
    shapes = custom_shapes(fleet)
    return [p for p in cluster.pools if (shape := lookup_vm(p.vm_size, shapes)) and shape.gpus > 0]


# --- credential rotation -------------------------------------------------------------------------

CredentialKind = Literal["multikueue", "karmada"]


@dataclass(frozen=True, slots=True)
class CredentialSchedule:
    """One token's generation on a day: the manual bump plus the whole periods of its schedule."""

    manual: int
    every_days: int | None
    start: date | None
    periods: int
    # Since when this generation is due: the last scheduled rotation (None without a schedule).
    # The first `pulumi up` on or after it mints the token, so if one ran since, the token is no
    # older than this date.
    due_since: date | None
    next_rotation: date | None

    @property
    def generation(self) -> int:
        return self.manual + self.periods


def rotation_policy(fleet: FleetConfig, cluster: str) -> tuple[int | None, str | None]:
    """(rotateEveryDays, scheduleStart) for the tokens minted on `cluster`: its own, else the
    fleet's."""
    settings = fleet.credentials
    own = settings.clusters.get(cluster)
    every = own.rotate_every_days if own and own.rotate_every_days is not None else None
    start = own.schedule_start if own and own.schedule_start is not None else None
    return (
        every if every is not None else settings.rotate_every_days,
        start if start is not None else settings.schedule_start,
    )


def manual_generation(fleet: FleetConfig, cluster: str, kind: CredentialKind) -> int:
    """`multiKueue.rotation.<worker>` or `karmada.rotation.<member>` (default 0)."""
    if kind == "multikueue":
        settings = fleet.multi_kueue
        return 0 if settings is None else settings.rotation.get(cluster, 0)
    karmada = fleet.karmada
    return 0 if karmada is None else karmada.rotation.get(cluster, 0)


def _iso(value: str | None) -> date | None:
    try:
        return None if value is None else date.fromisoformat(value)
    except ValueError:
        return None  # checks.credentials reports it; an unusable schedule rotates nothing


def credential_schedule(
    fleet: FleetConfig, cluster: str, kind: CredentialKind, day: date | None = None
) -> CredentialSchedule:
    """The generation of a token on `day`: manual + floor((day - scheduleStart) / rotateEveryDays).

    Deterministic in config and date, no live read. Periods count from scheduleStart, so
    turning a schedule on with a start in the current period changes no generation; changing
    rotateEveryDays or scheduleStart later renumbers the periods, and with them the generation
    (`preflight --against` flags every token that then rotates).
    """
    manual = manual_generation(fleet, cluster, kind)
    every, raw_start = rotation_policy(fleet, cluster)
    start = _iso(raw_start)
    if every is None or every < 1 or start is None:
        return CredentialSchedule(manual, every, start, 0, None, None)
    on = day or today()
    periods = max(0, (on - start).days // every)
    return CredentialSchedule(
        manual,
        every,
        start,
        periods,
        start + timedelta(days=periods * every) if periods else None,
        start + timedelta(days=(periods + 1) * every),
    )
