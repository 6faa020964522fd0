"""The loopback twin of a stack: one documented mapping from `Pulumi.<stack>.yaml` to what runs.

The real tier runs every committed stack, not a hand-written fleet. The mapping:

- every cluster becomes a `source: existing` plane (its kubeconfig: the plane's admin one);
- Kueue is `install: manifests-only` (its CRDs are applied; the pinned controller, built from the
  module proxy, runs beside the plane with the stack's frameworks);
- every AKS node pool (the System pool included) becomes simulated nodes, as many as the pool's
  `maxCount` (the System pool: its `maxCount` when autoscaled, else `count`), each with the
  labels, taints, capacity and allocatable AKS gives such a node: `agentpool` and
  `kubernetes.azure.com/agentpool`, the pool's labels and taints, the spot label and taint on
  Spot pools, `nvidia.com/gpu` on GPU sizes, allocatable from the project's capacity model;
- virtual nodes become one node `virtual-node-aci-linux` labelled `type=virtual-kubelet` with the
  `virtual-kubelet.io/provider` taint (the ACI connector's own name, labels and taint);
- `karmada` is left out (its host must be an AKS cluster of the stack);
- nothing else of the stack changes.

This module is pure (no tools, no processes): the offline tests check the mapping for every
committed stack. The project's node model is imported in ONE place (below), so a restructure of
builders/ only re-points these imports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from builders.aks import pool_node_labels, pool_node_taints
from checks.semantics import check_cpu_work_reaches_gpu_only_workers, check_queues_have_local_queues
from checks.stack import load_from_file, parse_fleet
from config.models import ClusterConfig, FleetConfig, PoolConfig, SystemPoolConfig
from config.resolve import custom_shapes, enabled_workers, with_mirrored_queues, worker_queue_for

# ---- the project's node model: the only imports of builders/ in the twin ----------------------
from upstream.aks import (
    CRITICAL_ADDONS_TAINT,
    DEFAULT_MAX_PODS,
    GPU_RESOURCE,
    VIRTUAL_NODE_LABELS,
    VIRTUAL_NODE_TOLERATION,
    VmShape,
    lookup_vm,
    node_allocatable,
)
from upstream.k8s import parse_taint

# ------------------------------------------------------------------------------------------------

ROOT: Final = Path(__file__).resolve().parents[2]
# kwok manages exactly the nodes with this annotation (its --manage-nodes-with-annotation-selector).
KWOK_ANNOTATION: Final = ("kwok.x-k8s.io/node", "fake")
# AKS labels GPU nodes with their accelerator (and the NVIDIA device plugin advertises the GPUs).
ACCELERATOR_LABEL: Final = ("kubernetes.azure.com/accelerator", "nvidia")
# The ACI connector registers one node; its taint is `virtual-kubelet.io/provider=azure`.
VIRTUAL_NODE_NAME: Final = "virtual-node-aci-linux"
VIRTUAL_NODE_TAINT: Final = f"{VIRTUAL_NODE_TOLERATION['key']}=azure:NoSchedule"
# What the ACI connector's node advertises (it is not a VM: no capacity model applies).
VIRTUAL_NODE_CAPACITY: Final = {"cpu": "10k", "memory": "4Ti", "pods": "5k"}


class TwinError(ValueError):
    """The stack cannot be mapped to a twin (e.g. a pool with a VM size nobody knows)."""


def stacks(root: Path = ROOT) -> list[str]:
    """Every committed stack: the `<stack>` of each `Pulumi.<stack>.yaml`, sorted."""
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in _stack_files(root))


def _stack_files(root: Path) -> list[Path]:
    return [p for p in root.glob("Pulumi.*.yaml") if p.name.count(".") == 2]


def load_stack(stack: str, root: Path = ROOT) -> FleetConfig:
    fleet, _ = load_from_file(stack, root)
    return fleet


# ---- the fleet --------------------------------------------------------------------------------


def twin_raw(fleet: FleetConfig, existing: Callable[[str], dict[str, str]]) -> dict[str, Any]:
    """The stack's `fleet` value as its twin runs it: `existing` clusters (`existing(name)` is
    each one's `existing` block, without a cluster's own AKS `upgrades`), manifests-only Kueue,
    no Karmada. Nothing else changes."""
    raw: dict[str, Any] = fleet.model_dump(mode="json", by_alias=True, exclude_none=True)
    raw.pop("karmada", None)
    raw["kueue"] = {**raw["kueue"], "install": "manifests-only"}
    for cluster in raw["clusters"]:
        cluster["source"] = "existing"
        cluster["existing"] = existing(cluster["name"])
        # AKS's own upgrade policy: an existing cluster keeps its owner's (checks.upgrades).
        cluster.pop("upgrades", None)
    return raw


def twin_fleet(fleet: FleetConfig, kubeconfigs: Mapping[str, Path | str]) -> FleetConfig:
    """The stack as its twin runs it (`twin_raw`, the planes' kubeconfig files).

    Parsed and validated again, as a stack file would be, so the twin is a valid stack too.
    """
    raw = twin_raw(fleet, lambda name: {"kubeconfigPath": str(kubeconfigs[name])})
    twin, _ = parse_fleet(raw, source="twin")
    return twin


# ---- nodes ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PoolNodes:
    """The simulated nodes of one pool (or of the virtual node) of one cluster."""

    cluster: str
    pool: str  # the AKS pool name; VIRTUAL_NODE_NAME for the virtual node
    vm_size: str | None
    nodes: tuple[dict[str, Any], ...]


def _taint(text: str) -> dict[str, str]:
    key, value, effect = parse_taint(text)
    return {"key": key, "effect": effect} | ({"value": value} if value is not None else {})


def _as_pool(system: SystemPoolConfig) -> PoolConfig:
    """The System pool in the shape the pool builders take (it has no labels, taints or spot)."""
    count = system.max_count if system.autoscaling and system.max_count else system.count
    return PoolConfig.model_validate(
        {"name": system.name, "vmSize": system.vm_size, "maxCount": count}
    )


def _node(
    name: str,
    labels: Mapping[str, str],
    taints: list[str],
    capacity: Mapping[str, str],
    allocatable: Mapping[str, str],
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {**labels, "kubernetes.io/hostname": name},
            "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]},
        },
        "spec": {"taints": [_taint(t) for t in taints]} if taints else {},
        "status": {"capacity": dict(capacity), "allocatable": dict(allocatable)},
    }


def _pool_nodes(
    fleet: FleetConfig,
    cluster: ClusterConfig,
    pool: PoolConfig,
    mode: str,
    extra_taints: list[str],
) -> PoolNodes:
    shape = lookup_vm(pool.vm_size, custom_shapes(fleet))
    if shape is None:
        raise TwinError(f"{cluster.name}/{pool.name}: unknown VM size {pool.vm_size!r}")
    capacity, allocatable = node_resources(
        shape, pool.max_pods or DEFAULT_MAX_PODS[cluster.network_mode]
    )
    labels = {
        **pool_node_labels(pool),
        "agentpool": pool.name,
        "kubernetes.azure.com/mode": mode,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": pool.vm_size,
    }
    if shape.gpus:
        labels[ACCELERATOR_LABEL[0]] = ACCELERATOR_LABEL[1]
    taints = [*pool_node_taints(pool), *extra_taints]
    nodes: list[dict[str, Any]] = []
    for i in range(pool.max_count):
        node_labels = dict(labels)
        if pool.zones and fleet.location:
            node_labels["topology.kubernetes.io/zone"] = (
                f"{fleet.location}-{pool.zones[i % len(pool.zones)]}"
            )
        # AKS names nodes aks-<pool>-<8 digits>-vmss<6 base-36 digits>; the digits are ours.
        name = f"aks-{pool.name}-00000000-vmss{i:06d}"
        nodes.append(_node(name, node_labels, taints, capacity, allocatable))
    return PoolNodes(cluster.name, pool.name, pool.vm_size, tuple(nodes))


def node_resources(shape: VmShape, max_pods: int) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable) of an AKS node of `shape` that runs at most `max_pods` pods: what
    AKS reserves for the system (`upstream.aks.node_allocatable`), and the shape's GPUs."""
    reserved = node_allocatable(shape, max_pods)
    capacity = {"cpu": str(shape.vcpus), "memory": f"{shape.memory_mib}Mi", "pods": str(max_pods)}
    allocatable = {
        "cpu": f"{reserved.cpu_millis}m",
        "memory": f"{reserved.memory_mib}Mi",
        "pods": str(max_pods),
    }
    if shape.gpus:
        capacity[GPU_RESOURCE] = allocatable[GPU_RESOURCE] = str(shape.gpus)
    return capacity, allocatable


def _virtual_node() -> dict[str, Any]:
    labels = {**VIRTUAL_NODE_LABELS, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    return _node(
        VIRTUAL_NODE_NAME,
        labels,
        [VIRTUAL_NODE_TAINT],
        VIRTUAL_NODE_CAPACITY,
        VIRTUAL_NODE_CAPACITY,
    )


def cluster_nodes(fleet: FleetConfig, cluster: ClusterConfig) -> list[PoolNodes]:
    """The simulated nodes of one cluster, pool by pool (System pool first)."""
    system = cluster.system_pool
    out = [
        _pool_nodes(
            fleet,
            cluster,
            _as_pool(system),
            "system",
            [CRITICAL_ADDONS_TAINT] if system.only_critical_addons else [],
        )
    ]
    out += [_pool_nodes(fleet, cluster, pool, "user", []) for pool in cluster.pools]
    if cluster.virtual_nodes.enabled:
        out.append(PoolNodes(cluster.name, VIRTUAL_NODE_NAME, None, (_virtual_node(),)))
    return out


def fleet_nodes(fleet: FleetConfig) -> dict[str, list[PoolNodes]]:
    """Cluster -> its simulated nodes."""
    return {c.name: cluster_nodes(fleet, c) for c in fleet.clusters}


def is_gpu_node(node: Mapping[str, Any]) -> bool:
    return GPU_RESOURCE in (node.get("status", {}).get("allocatable") or {})


def is_virtual_node(node: Mapping[str, Any]) -> bool:
    labels: Mapping[str, str] = node.get("metadata", {}).get("labels") or {}
    return labels.get("type") == VIRTUAL_NODE_LABELS["type"]


# ---- what a user submits ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Submission:
    """One LocalQueue a user can submit to, and where its Job must run."""

    cluster: str  # where the Job is created
    namespace: str
    local_queue: str
    cluster_queue: str
    dispatched: bool  # MultiKueue: created on the manager, runs on a worker
    gpus: int  # the Job asks for GPUs only when every pool the queue reaches is a GPU pool


def _flavor_pools(cluster: ClusterConfig, cq_name: str) -> list[tuple[str, PoolConfig | None]]:
    """(flavor, its pool or None) of every flavor a ClusterQueue of `cluster` lists."""
    cq = next((q for q in cluster.queues.cluster_queues if q.name == cq_name), None)
    if cq is None:
        raise TwinError(f"{cluster.name}: no ClusterQueue {cq_name!r}")
    flavors = {f.name: f for f in cluster.queues.flavors}
    out: list[tuple[str, PoolConfig | None]] = []
    for group in cq.resource_groups:
        for fq in group.flavors:
            flavor = flavors.get(fq.name)
            out.append((fq.name, cluster.pool(flavor.pool) if flavor and flavor.pool else None))
    return out


def _pool_is_gpu(fleet: FleetConfig, pool: PoolConfig) -> bool:
    shape = lookup_vm(pool.vm_size, custom_shapes(fleet))
    return bool(shape and shape.gpus)


def submissions(fleet: FleetConfig) -> list[Submission]:
    """Every LocalQueue a user can submit to: on the manager when MultiKueue dispatches it, else
    on the cluster that holds it (a worker's own queue allowed unmirrored, a standalone cluster).

    Mirrored copies of the manager's LocalQueues on workers are not submission points.
    """
    mirrored = with_mirrored_queues(fleet)
    manager = fleet.manager if fleet.multi_kueue is not None else None
    own = {(c.name, lq.namespace, lq.name) for c in fleet.clusters for lq in c.queues.local_queues}
    out: list[Submission] = []
    for cluster in mirrored.clusters:
        if cluster.role == "worker" and manager is not None:
            # only the worker's own (unmirrored) queues; the mirrored ones belong to the manager
            queues = [
                lq
                for lq in cluster.queues.local_queues
                if (cluster.name, lq.namespace, lq.name) in own
            ]
        else:
            queues = list(cluster.queues.local_queues)
        for lq in queues:
            dispatched = manager is not None and cluster.name == manager.name
            reach = _reachable_pools(fleet, cluster, lq.cluster_queue, dispatched)
            gpus = 1 if reach and all(_pool_is_gpu(fleet, p) for _, p in reach) else 0
            out.append(
                Submission(cluster.name, lq.namespace, lq.name, lq.cluster_queue, dispatched, gpus)
            )
    return out


def _reachable_pools(
    fleet: FleetConfig, cluster: ClusterConfig, cq: str, dispatched: bool
) -> list[tuple[str, PoolConfig]]:
    """(cluster, pool) the queue's Jobs can run on: the workers' flavors' pools when dispatched."""
    if not dispatched:
        return [(cluster.name, p) for _, p in _flavor_pools(cluster, cq) if p is not None]
    target = worker_queue_for(fleet, cq)
    out: list[tuple[str, PoolConfig]] = []
    for name in enabled_workers(fleet):
        worker = fleet.cluster(name)
        if worker is not None and any(q.name == target for q in worker.queues.cluster_queues):
            out += [(name, p) for _, p in _flavor_pools(worker, target) if p is not None]
    return out


def unserved(fleet: FleetConfig) -> list[str]:
    """Why some ClusterQueue cannot serve a user's Job on the twin (empty when all can).

    The rules are the product's (checks.semantics), so preflight says what the twin would find:
    a dispatching manager ClusterQueue no LocalQueue points at (no user can submit to it), and
    CPU-only Jobs that MultiKueue may hand to a worker queue with GPU pools only.
    """
    issues = [
        *check_queues_have_local_queues(fleet),
        *check_cpu_work_reaches_gpu_only_workers(fleet),
    ]
    return [str(i) for i in issues if i.severity == "error"]
