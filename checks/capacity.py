"""Capacity checks: Kueue quotas against what their pools can ever provide, and manager quotas.

Pool capacity comes from AKS's reservation rules (`upstream.aks`); it ignores DaemonSets, so a
quota near it is still optimistic. These are judgement tables as well as issues: preflight prints
the rows, validation reports the errors and warnings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from checks.common import Check
from config.errors import Issue, key_path
from config.kueue import ClusterQueueConfig, KueueObjects, ResourceQuota
from config.models import ClusterConfig, FleetConfig, PoolConfig
from config.resolve import (
    clusters_by_name,
    custom_shapes,
    dispatching_queues,
    queue_workers,
    worker_queue_for,
)
from upstream.aks import DEFAULT_MAX_PODS, GPU_RESOURCE, PoolCapacity, lookup_vm, pool_capacity
from upstream.k8s import format_quantity, quantity_value

QuotaStatus = Literal["ok", "warn", "error"]
# A size of the built-in table with GPUs, named in advice (the A100 size the committed stacks use).
GPU_EXAMPLE = "Standard_NC24ads_A100_v4"


@dataclass(frozen=True, slots=True)
class QuotaRow:
    """One (cluster, ClusterQueue, flavor, resource) quota on a pool-bound flavor vs the pool."""

    cluster: str
    cluster_queue: str
    flavor: str
    pool: str
    resource: str
    nominal: str
    reachable: str  # nominal plus what borrowing can add; equals nominal without a cohort
    capacity: str  # the pool's allocatable total at maxCount
    status: QuotaStatus
    message: str
    path: str  # key path of the nominalQuota
    no_gpus: bool = False  # a GPU quota on a pool whose VM size has no GPUs


def _capacity(fleet: FleetConfig, cluster: ClusterConfig, pool: PoolConfig) -> PoolCapacity | None:
    shape = lookup_vm(pool.vm_size, custom_shapes(fleet))
    if shape is None:
        return None  # config.validate reports the unknown size
    max_pods = pool.max_pods or DEFAULT_MAX_PODS[cluster.network_mode]
    return pool_capacity(pool.vm_size, shape, max_pods, pool.min_count, pool.max_count)


def _capacity_of(
    cap: PoolCapacity, pool: PoolConfig, cluster: ClusterConfig, resource: str
) -> Decimal | None:
    """The pool's maximum allocatable of `resource` in Kubernetes base units (cores, bytes, ...)."""
    if resource == "cpu":
        return Decimal(cap.max_cpu_millis) / 1000
    if resource == "memory":
        return Decimal(cap.max_memory_mib) * 2**20
    if resource == GPU_RESOURCE:
        return Decimal(cap.max_gpus)
    if resource == "pods":
        return Decimal((pool.max_pods or DEFAULT_MAX_PODS[cluster.network_mode]) * cap.max_nodes)
    return None


def _show(resource: str, amount: Decimal) -> str:
    if resource == "memory":
        mib = amount / 2**20
        return f"{mib:.0f}Mi ({mib / 1024:.1f}Gi)"
    return format(amount.normalize(), "f")


def _per_node(cap: PoolCapacity, resource: str) -> str:
    if resource == "cpu":
        return _show("cpu", Decimal(cap.node.cpu_millis) / 1000)
    if resource == "memory":
        return _show("memory", Decimal(cap.node.memory_mib) * 2**20)
    return str(cap.node.gpus)


def _borrowable(
    queues: KueueObjects, cq: ClusterQueueConfig, flavor: str, resource: str
) -> Decimal | None:
    """What other queues of the cohort can lend this queue for flavor/resource (None: no cohort)."""
    if cq.cohort_name is None:
        return None
    total = Decimal(0)
    for other in queues.cluster_queues:
        if other.name == cq.name or other.cohort_name != cq.cohort_name:
            continue
        for group in other.resource_groups:
            for fq in group.flavors:
                for rq in fq.resources:
                    if fq.name == flavor and rq.name == resource:
                        total += quantity_value(rq.lending_limit or rq.nominal_quota)
    return total


@dataclass(frozen=True, slots=True)
class _PoolQuota:
    """One quota on a pool-bound flavor, with everything needed to judge it."""

    cluster: ClusterConfig
    cq: ClusterQueueConfig
    flavor: str
    pool: PoolConfig
    cap: PoolCapacity
    quota: ResourceQuota
    capacity: Decimal
    path: str


def _pool_quotas(fleet: FleetConfig) -> Iterator[_PoolQuota]:
    for i, cluster in enumerate(fleet.clusters):
        q = cluster.queues
        for j, cq in enumerate(q.cluster_queues):
            for k, group in enumerate(cq.resource_groups):
                for m, fq in enumerate(group.flavors):
                    flavor = q.flavor(fq.name)
                    pool = cluster.pool(flavor.pool) if flavor and flavor.pool else None
                    cap = _capacity(fleet, cluster, pool) if pool else None
                    if pool is None or cap is None:
                        continue
                    for n, rq in enumerate(fq.resources):
                        capacity = _capacity_of(cap, pool, cluster, rq.name)
                        if capacity is not None:
                            path = key_path(
                                "clusters", i, "queues", "clusterQueues", j, "resourceGroups", k
                            )
                            path += f".flavors[{m}].resources[{n}].nominalQuota"
                            yield _PoolQuota(cluster, cq, fq.name, pool, cap, rq, capacity, path)


def _row(pq: _PoolQuota) -> QuotaRow:
    rq, pool, res = pq.quota, pq.pool, pq.quota.name
    nominal = quantity_value(rq.nominal_quota)
    if rq.borrowing_limit is not None and pq.cq.cohort_name is not None:
        borrow: Decimal | None = quantity_value(rq.borrowing_limit)  # what the user allows
    else:
        borrow = _borrowable(pq.cluster.queues, pq.cq, pq.flavor, res)
    reachable = nominal + (borrow or 0)
    unit = "" if res == "memory" else f" {res}"  # memory amounts carry their own unit
    basis = f"{pool.max_count} x {pool.vm_size}"
    if res != "pods":
        basis += f", {_per_node(pq.cap, res)} allocatable each"
    capacity = f"{_show(res, pq.capacity)}{unit} at maxCount"
    status: QuotaStatus = "ok"
    message = ""
    no_gpus = nominal > pq.capacity and res == GPU_RESOURCE and pq.cap.node.gpus == 0
    if no_gpus:
        # More nodes never add GPUs: the fix is a GPU size or another pool, not maxCount.
        status = "error"
        message = (
            f"nominalQuota {rq.nominal_quota}{unit} on flavor {pq.flavor!r}, but pool "
            f"{pool.name!r} runs {pool.vm_size}, which has no GPUs: choose a GPU VM size for "
            f"pool {pool.name!r} (e.g. {GPU_EXAMPLE}), bind flavor {pq.flavor!r} to a GPU "
            f"pool, or drop {res} from this flavor"
        )
    elif nominal > pq.capacity:
        status = "error"
        message = (
            f"nominalQuota {rq.nominal_quota}{unit} exceeds what pool {pool.name!r} can ever "
            f"provide: {capacity} ({basis}); lower the quota or raise maxCount"
        )
    elif reachable > pq.capacity:
        status = "warn"
        message = (
            f"with borrowing, ClusterQueue {pq.cq.name!r} can admit {_show(res, reachable)}{unit} "
            f"on flavor {pq.flavor!r}, more than pool {pool.name!r} can ever provide ({capacity}, "
            f"{basis}); workloads admitted past it stay pending"
        )
    return QuotaRow(
        cluster=pq.cluster.name,
        cluster_queue=pq.cq.name,
        flavor=pq.flavor,
        pool=pool.name,
        resource=res,
        nominal=str(rq.nominal_quota),
        reachable=str(rq.nominal_quota) if borrow is None else _show(res, reachable),
        capacity=_show(res, pq.capacity),
        status=status,
        message=message,
        path=pq.path,
        no_gpus=no_gpus,
    )


def quota_report(fleet: FleetConfig) -> list[QuotaRow]:
    """Quota vs capacity for every quota on a flavor bound to a pool (cpu, memory, GPUs, pods)."""
    return [_row(pq) for pq in _pool_quotas(fleet)]


def pool_overcommit(fleet: FleetConfig) -> Iterator[Issue]:
    """Warnings where the nominal quotas of all queues on one pool add up past its capacity."""
    totals: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)
    capacity: dict[tuple[str, str, str], Decimal] = {}
    queues: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for pq in _pool_quotas(fleet):
        key = (pq.cluster.name, pq.pool.name, pq.quota.name)
        totals[key] += quantity_value(pq.quota.nominal_quota)
        capacity[key] = pq.capacity
        queues[key].append(pq.cq.name)
    for key, total in totals.items():
        cluster_name, pool_name, resource = key
        if total > capacity[key] and len(queues[key]) > 1:
            i = next(i for i, c in enumerate(fleet.clusters) if c.name == cluster_name)
            j = next(j for j, p in enumerate(fleet.clusters[i].pools) if p.name == pool_name)
            yield Issue(
                key_path("clusters", i, "pools", j, "maxCount"),
                f"the nominal {resource} quotas of {', '.join(sorted(set(queues[key])))} add up "
                f"to {_show(resource, total)}, more than pool {pool_name!r} can ever provide "
                f"({_show(resource, capacity[key])}); not every queue can get its guarantee",
                "warning",
            )


def check_capacity(fleet: FleetConfig) -> Iterator[Issue]:
    """Quota on pool-bound flavors vs the pool's maximum allocatable capacity."""
    rows = quota_report(fleet)
    # Follow-ons of one root cause are left out: a pool with minCount > maxCount (reported on the
    # pool), and the cpu/memory of a flavor whose pool has no GPUs for its GPU quota (a GPU
    # size is the fix; "raise maxCount" would be wrong advice for them).
    wrong_size = {(r.cluster, r.cluster_queue, r.flavor) for r in rows if r.no_gpus}
    bad_bounds = {
        (c.name, p.name) for c in fleet.clusters for p in c.pools if p.min_count > p.max_count
    }
    for row in rows:
        follow_on = (row.cluster, row.cluster_queue, row.flavor) in wrong_size and not row.no_gpus
        follow_on = follow_on or (row.cluster, row.pool) in bad_bounds
        if row.status == "ok" or follow_on:
            continue
        yield Issue(row.path, row.message, "error" if row.status == "error" else "warning")
    yield from pool_overcommit(fleet)


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


def _totals(cq: ClusterQueueConfig) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for group in cq.resource_groups:
        for flavor in group.flavors:
            for rq in flavor.resources:
                out[rq.name] = out.get(rq.name, Decimal(0)) + quantity_value(rq.nominal_quota)
    return out


def manager_quotas(fleet: FleetConfig) -> list[ManagerQuota]:
    """Per dispatching manager ClusterQueue and resource: its quota vs the sum over its workers.

    The manager's quota decides how much it admits (and so dispatches) at once; the workers'
    quotas decide what runs. The sensible default is their sum: lower leaves workers idle, higher
    dispatches workloads no worker can admit yet. Preflight prints this table.
    """
    manager = fleet.manager
    if manager is None or fleet.multi_kueue is None:
        return []
    by_name = clusters_by_name(fleet)
    m_index = by_name[manager.name][0]
    reach = queue_workers(fleet)
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
        for worker_name in reach.get(name, ()):
            worker = by_name[worker_name][1] if worker_name in by_name else None
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


CAPACITY_CHECKS: tuple[Check, ...] = (check_capacity, check_manager_quota)
