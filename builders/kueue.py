"""Kueue from config: Helm release and values, queue objects as dicts, quota vs pool capacity. Pure.

Object shapes are kueue.x-k8s.io/v1beta2 as served by the pinned chart (checked against the CRDs in
../shared/crds/kueue/<version>/ by tests/test_kueue_schema.py). Objects carry no Pulumi annotations:
readiness (`pulumi.com/waitFor`) is the component's business, so rendered YAML stays what
`kubectl apply` would take and the seed's objects compare equal.

Chart constants live here rather than in constants.py (the lead's file); the version pins and the
per-version facts config validates against live in config.kueue.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final, Literal, NamedTuple, cast

import yaml

from builders.aks import pool_node_labels, pool_node_taints
from builders.capacity import DEFAULT_MAX_PODS, PoolCapacity, lookup_vm, pool_capacity
from builders.manifest import HelmRelease, Manifest
from config.errors import Issue, key_path
from config.kueue import (
    ClusterQueueConfig,
    ClusterQueues,
    FlavorConfig,
    KueueSettings,
    LocalQueueConfig,
    NamespaceSelector,
    ProvisioningGate,
    ResourceQuota,
    TeamNamespace,
    Toleration,
    gate_flavors,
    quantity_value,
)
from config.models import ClusterConfig, FleetConfig, PoolConfig, parse_taint
from config.validate import custom_shapes
from constants import MIN_KUBERNETES_PROVISIONING

# The chart: upstream OCI location (promoted images registry.k8s.io/kueue/kueue:v<version>), an
# explicit release name so every chart-derived name is the documented one
# (kueue-controller-manager, kueue-webhook-service), and Kueue's default namespace.
KUEUE_CHART: Final = "oci://registry.k8s.io/kueue/charts/kueue"
KUEUE_RELEASE: Final = "kueue"
KUEUE_NAMESPACE: Final = "kueue-system"
KUEUE_API: Final = "kueue.x-k8s.io/v1beta2"
KUEUE_GROUP: Final = "kueue.x-k8s.io"
CONFIG_API: Final = "config.kueue.x-k8s.io/v1beta2"
PROVISIONING_CONTROLLER: Final = "kueue.x-k8s.io/provisioning-request"
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
AGENTPOOL_LABEL: Final = "kubernetes.azure.com/agentpool"
# Tolerates the AKS system pool taint (SystemPoolConfig.onlyCriticalAddons), as the AKS example.
CRITICAL_ADDONS_TOLERATION: Final = {
    "key": "CriticalAddonsOnly",
    "operator": "Exists",
    "effect": "NoSchedule",
}
DISPATCHERS: Final = {
    "AllAtOnce": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
    "Incremental": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
}
# The chart's default `controllerManagerConfigYaml` at each tag (charts/kueue/values.yaml), minus
# `integrations`, which config decides. The value replaces the whole document, so what we do not
# restate is lost; the two tags differ in concurrency and client QPS.
_CHART_CONFIG_BASE: Final[dict[str, Any]] = {
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
}
CHART_MANAGER_CONFIG: Final[dict[str, dict[str, Any]]] = {
    "0.19.2": {
        **_CHART_CONFIG_BASE,
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
    },
    "0.17.8": {
        **_CHART_CONFIG_BASE,
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 5,
                "LocalQueue.kueue.x-k8s.io": 1,
                "ClusterQueue.kueue.x-k8s.io": 1,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 50, "burst": 100},
    },
}


class ExtraCheck(NamedTuple):
    """An admission check another component adds to a ClusterQueue (e.g. MultiKueue's)."""

    name: str
    on_flavors: Sequence[str] | None = None


ExtraChecks = Mapping[str, Sequence[ExtraCheck | tuple[str, Sequence[str] | None]]]


# ------------------------------------------------------------------------------------------------
# Helm


def manager_config(settings: KueueSettings, cluster: ClusterConfig) -> dict[str, Any]:
    """Kueue's `Configuration` for one cluster: chart defaults, our frameworks, MultiKueue."""
    config: dict[str, Any] = {
        "apiVersion": CONFIG_API,
        "kind": "Configuration",
        **CHART_MANAGER_CONFIG[settings.version],
        "integrations": {"frameworks": list(settings.frameworks)},
    }
    mk = settings.multi_kueue
    multi: dict[str, Any] = {
        "gcInterval": mk.gc_interval,
        "origin": mk.origin,
        "workerLostTimeout": mk.worker_lost_timeout,
        "dispatcherName": DISPATCHERS[mk.dispatcher] if mk.dispatcher else None,
    }
    multi = {k: v for k, v in multi.items() if v is not None}
    if cluster.role == "manager" and multi:
        config["multiKueue"] = multi
    return config


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        current = out.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            out[key] = _merge(cast("dict[str, Any]", current), cast("Mapping[str, Any]", value))
        else:
            out[key] = value
    return out


def helm_values(settings: KueueSettings, cluster: ClusterConfig) -> dict[str, Any]:
    """Chart values: feature gates (the one place for them), placement, the manager config."""
    system = cluster.system_pool
    values: dict[str, Any] = {
        "controllerManager": {
            "featureGates": [
                {"name": name, "enabled": enabled}
                for name, enabled in sorted(settings.feature_gates.items())
            ],
            # User pools scale to zero and their nodes come and go; Kueue's webhooks fail closed
            # (failurePolicy Fail), so the controller lives on the system pool.
            "nodeSelector": {AGENTPOOL_LABEL: system.name},
            "tolerations": [dict(CRITICAL_ADDONS_TOLERATION)]
            if system.only_critical_addons
            else [],
        },
        "managerConfig": {
            "controllerManagerConfigYaml": yaml.safe_dump(
                manager_config(settings, cluster), sort_keys=False
            ),
        },
    }
    return _merge(values, settings.values)


def kueue_release(settings: KueueSettings, cluster: ClusterConfig) -> HelmRelease:
    """The Kueue release of one cluster (same chart and version fleet-wide)."""
    return HelmRelease(
        target=cluster.name,
        release=KUEUE_RELEASE,
        chart=KUEUE_CHART,
        version=settings.version,
        namespace=KUEUE_NAMESPACE,
        values=helm_values(settings, cluster),
    )


def kueue_releases(fleet: FleetConfig) -> list[HelmRelease]:
    """One Kueue release per cluster, in config order (none with `install: manifests-only`)."""
    if fleet.kueue.install != "helm":
        return []
    return [kueue_release(fleet.kueue, c) for c in fleet.clusters]


# ------------------------------------------------------------------------------------------------
# Objects


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    return {"name": name} if namespace is None else {"name": name, "namespace": namespace}


def namespace(ns: TeamNamespace) -> dict[str, Any]:
    """A team namespace (v1 Namespace)."""
    meta = _meta(ns.name)
    if ns.labels:
        meta["labels"] = dict(ns.labels)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def toleration_for_taint(taint: str) -> dict[str, str]:
    """The toleration that lets a pod onto nodes with `taint` ('k=v:Effect' or 'k:Effect')."""
    key, value, effect = parse_taint(taint)
    if value is None:
        return {"key": key, "operator": "Exists", "effect": effect}
    return {"key": key, "operator": "Equal", "value": value, "effect": effect}


def _toleration(t: Toleration) -> dict[str, str]:
    out = {"key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect}
    return {k: v for k, v in out.items() if v is not None}


def resource_flavor(flavor: FlavorConfig, cluster: ClusterConfig) -> dict[str, Any]:
    """A ResourceFlavor; a pool-bound flavor takes the pool's node labels and taints."""
    pool: PoolConfig | None = cluster.pool(flavor.pool) if flavor.pool else None
    if pool is not None:
        labels = pool_node_labels(pool)
        tolerations = [toleration_for_taint(t) for t in pool_node_taints(pool)]
    else:
        labels = dict(flavor.node_labels)
        tolerations = [_toleration(t) for t in flavor.tolerations]
    spec: dict[str, Any] = {}
    if labels:
        spec["nodeLabels"] = labels
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": _meta(flavor.name),
        "spec": spec,
    }


def provisioning_request_config(gate: ProvisioningGate) -> dict[str, Any]:
    """The ProvisioningRequestConfig behind a gate (class, managed resources, retries)."""
    spec: dict[str, Any] = {"provisioningClassName": gate.provisioning_class_name}
    if gate.parameters:
        spec["parameters"] = dict(gate.parameters)
    if gate.managed_resources:
        spec["managedResources"] = list(gate.managed_resources)
    if gate.retry_strategy is not None:
        r = gate.retry_strategy
        spec["retryStrategy"] = {
            "backoffLimitCount": r.backoff_limit_count,
            "backoffBaseSeconds": r.backoff_base_seconds,
            "backoffMaxSeconds": r.backoff_max_seconds,
        }
    if gate.pod_set_updates:
        spec["podSetUpdates"] = {
            "nodeSelector": [
                {
                    "key": u.key,
                    "valueFromProvisioningClassDetail": u.value_from_provisioning_class_detail,
                }
                for u in gate.pod_set_updates
            ]
        }
    if gate.pod_set_merge_policy is not None:
        spec["podSetMergePolicy"] = gate.pod_set_merge_policy
    return {
        "apiVersion": KUEUE_API,
        "kind": "ProvisioningRequestConfig",
        "metadata": _meta(gate.prc_name),
        "spec": spec,
    }


def provisioning_admission_check(gate: ProvisioningGate) -> dict[str, Any]:
    """The AdmissionCheck a gated ClusterQueue names; it points at the gate's config."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "AdmissionCheck",
        "metadata": _meta(gate.name),
        "spec": {
            "controllerName": PROVISIONING_CONTROLLER,
            "parameters": {
                "apiGroup": KUEUE_GROUP,
                "kind": "ProvisioningRequestConfig",
                "name": gate.prc_name,
            },
        },
    }


def _selector(selector: NamespaceSelector) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if selector.match_labels:
        out["matchLabels"] = dict(selector.match_labels)
    if selector.match_expressions:
        out["matchExpressions"] = [
            {
                "key": r.key,
                "operator": r.operator,
                **({"values": list(r.values)} if r.values else {}),
            }
            for r in selector.match_expressions
        ]
    return out


def _check_entry(name: str, on_flavors: Sequence[str] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name}
    if on_flavors:
        entry["onFlavors"] = list(on_flavors)
    return entry


def cluster_queue(
    cq: ClusterQueueConfig,
    queues: ClusterQueues,
    extra_checks: Sequence[ExtraCheck | tuple[str, Sequence[str] | None]] = (),
) -> dict[str, Any]:
    """A ClusterQueue; its provisioning gate (if any) and `extra_checks` go into the strategy."""
    spec: dict[str, Any] = {
        # Absent would admit no namespace at all; {} (the config default) admits every namespace.
        "namespaceSelector": _selector(cq.namespace_selector),
        "queueingStrategy": cq.queueing_strategy,
    }
    if cq.cohort_name is not None:
        spec["cohortName"] = cq.cohort_name
    if cq.preemption is not None:
        p = cq.preemption
        preemption: dict[str, Any] = {
            "withinClusterQueue": p.within_cluster_queue,
            "reclaimWithinCohort": p.reclaim_within_cohort,
        }
        if p.borrow_within_cohort is not None:
            b = p.borrow_within_cohort
            borrow: dict[str, Any] = {"policy": b.policy}
            if b.max_priority_threshold is not None:
                borrow["maxPriorityThreshold"] = b.max_priority_threshold
            preemption["borrowWithinCohort"] = borrow
        spec["preemption"] = preemption
    if cq.flavor_fungibility is not None:
        spec["flavorFungibility"] = {
            "whenCanBorrow": cq.flavor_fungibility.when_can_borrow,
            "whenCanPreempt": cq.flavor_fungibility.when_can_preempt,
        }
    spec["resourceGroups"] = [
        {
            "coveredResources": list(group.covered_resources),
            "flavors": [
                {
                    "name": fq.name,
                    "resources": [
                        _quota(rq.name, rq.nominal_quota, rq.borrowing_limit, rq.lending_limit)
                        for rq in fq.resources
                    ],
                }
                for fq in group.flavors
            ],
        }
        for group in cq.resource_groups
    ]
    checks: list[dict[str, Any]] = []
    if cq.provisioning_gate is not None:
        checks.append(_check_entry(cq.provisioning_gate.name, gate_flavors(queues, cq)))
    for extra in extra_checks:
        name, on_flavors = ExtraCheck(*extra)
        checks.append(_check_entry(name, on_flavors))
    names = [c["name"] for c in checks]
    if len(set(names)) != len(names):
        raise ValueError(f"ClusterQueue {cq.name!r}: admission check listed twice in {names}")
    if checks:
        # v1beta2 has only the strategy form; the v1beta1 `admissionChecks` list is gone.
        spec["admissionChecksStrategy"] = {"admissionChecks": checks}
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": _meta(cq.name),
        "spec": spec,
    }


def _quota(
    name: str, nominal: str | int, borrowing: str | int | None, lending: str | int | None
) -> dict[str, str]:
    out = {"name": name, "nominalQuota": str(nominal)}
    if borrowing is not None:
        out["borrowingLimit"] = str(borrowing)
    if lending is not None:
        out["lendingLimit"] = str(lending)
    return out


def local_queue(lq: LocalQueueConfig) -> dict[str, Any]:
    """A LocalQueue (its `clusterQueue` is immutable: changing it replaces the object)."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": _meta(lq.name, lq.namespace),
        "spec": {"clusterQueue": lq.cluster_queue},
    }


def cluster_objects(
    cluster: ClusterConfig, extra_checks: ExtraChecks | None = None
) -> list[dict[str, Any]]:
    """Every queue object of one cluster, referenced objects first (the apply order)."""
    q = cluster.queues
    extra = extra_checks or {}
    used_gates = {cq.provisioning_gate.name for cq in q.cluster_queues if cq.provisioning_gate}
    gates = [g for g in q.provisioning_gates if g.name in used_gates]
    return [
        *(namespace(ns) for ns in q.namespaces),
        *(resource_flavor(f, cluster) for f in q.flavors),
        *(provisioning_request_config(g) for g in gates),
        *(provisioning_admission_check(g) for g in gates),
        *(cluster_queue(cq, q, extra.get(cq.name, ())) for cq in q.cluster_queues),
        *(local_queue(lq) for lq in q.local_queues),
    ]


def render_kueue(
    fleet: FleetConfig, extra_checks: Mapping[str, ExtraChecks] | None = None
) -> list[Manifest]:
    """Every Kueue queue object of the fleet; `extra_checks`: cluster -> ClusterQueue -> checks."""
    extra = extra_checks or {}
    return [
        Manifest(c.name, obj)
        for c in fleet.clusters
        for obj in cluster_objects(c, extra.get(c.name))
    ]


# ------------------------------------------------------------------------------------------------
# Quota vs capacity

QuotaStatus = Literal["ok", "warn", "error"]


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
    if resource == "nvidia.com/gpu":
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
    queues: ClusterQueues, cq: ClusterQueueConfig, flavor: str, resource: str
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
    if nominal > pq.capacity:
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
    )


def quota_report(fleet: FleetConfig) -> list[QuotaRow]:
    """Quota vs capacity for every quota on a flavor bound to a pool (cpu, memory, GPUs, pods)."""
    return [_row(pq) for pq in _pool_quotas(fleet)]


def quota_section(fleet: FleetConfig) -> dict[str, Any]:
    """`quota_report` as a preflight plan section (title, columns, rows)."""
    return {
        "title": "Kueue quota vs pool capacity (allocatable at maxCount)",
        "columns": [
            "cluster",
            "clusterQueue",
            "flavor",
            "pool",
            "resource",
            "nominal",
            "with borrowing",
            "capacity",
            "status",
        ],
        "rows": [
            [
                r.cluster,
                r.cluster_queue,
                r.flavor,
                r.pool,
                r.resource,
                r.nominal,
                r.reachable,
                r.capacity,
                r.status,
            ]
            for r in quota_report(fleet)
        ],
    }


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


# ------------------------------------------------------------------------------------------------
# AKS preconditions of provisioning gates (preflight shows these; they are not config errors)


def provisioning_warnings(fleet: FleetConfig) -> list[Issue]:
    """What the AKS side must provide for each cluster's provisioning gates to work."""
    out: list[Issue] = []
    for i, cluster in enumerate(fleet.clusters):
        q = cluster.queues
        gated = [cq for cq in q.cluster_queues if cq.provisioning_gate is not None]
        if not gated:
            continue
        base = key_path("clusters", i)
        version = fleet.version_of(cluster)
        major, minor = (int(p) for p in version.split(".")[:2])
        if (major, minor) < MIN_KUBERNETES_PROVISIONING:
            lowest = ".".join(map(str, MIN_KUBERNETES_PROVISIONING))
            out.append(
                Issue(
                    f"{base}.kubernetesVersion",
                    f"provisioning gates need the AKS cluster autoscaler's ProvisioningRequest "
                    f"support, which ships with Kubernetes {lowest}; on {version} gated workloads "
                    "stay pending",
                    "warning",
                )
            )
        out.append(
            Issue(
                f"{base}.queues.provisioningGates",
                f"{cluster.name!r} needs the ProvisioningRequest API from the AKS cluster "
                "autoscaler (AKS has no setting for it; Azure/AKS#5492): check `kubectl get crd "
                "provisioningrequests.autoscaling.x-k8s.io`. Kueue sets up its ProvisioningRequest "
                "controller only if that CRD is served when it starts, and never retries: if it "
                f"appeared later, `kubectl -n {KUEUE_NAMESPACE} rollout restart "
                "deploy/kueue-controller-manager`. Until then the gate's AdmissionCheck is not "
                "Active and `pulumi up` fails waiting for it",
                "warning",
            )
        )
        for j, cq in enumerate(q.cluster_queues):
            if cq.provisioning_gate is None:
                continue
            gate = q.gate(cq.provisioning_gate.name)
            flavors = gate_flavors(q, cq) or cq.flavor_names
            path = f"{base}.queues.clusterQueues[{j}].provisioningGate"
            for name in flavors:
                flavor = q.flavor(name)
                pool = cluster.pool(flavor.pool) if flavor and flavor.pool else None
                if flavor is not None and pool is None:
                    out.append(
                        Issue(
                            path,
                            f"gated flavor {name!r} is not bound to an autoscaled pool (`pool`): "
                            "the autoscaler can only provision nodes for its own pools",
                            "warning",
                        )
                    )
                elif (
                    pool is not None
                    and gate is not None
                    and gate.provisioning_class_name.startswith("check-capacity")
                    and pool.min_count == 0
                ):
                    out.append(
                        Issue(
                            path,
                            f"check-capacity only books nodes that exist; pool {pool.name!r} "
                            "scales from 0, so use best-effort-atomic-scale-up to add nodes",
                            "warning",
                        )
                    )
    return out
