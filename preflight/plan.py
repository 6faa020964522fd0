"""The offline plan of a stack: plain data (JSON-ready) computed from the validated config."""

from __future__ import annotations

from typing import Any

from config.errors import Issue
from config.models import ClusterConfig, FleetConfig
from config.resolve import custom_shapes
from preflight.sources import AZURE_QUOTAS
from preflight.upgrades import add_pool_upgrades, upgrade_fields
from upstream.aks import (
    CLUSTERS_PER_REGION,
    DEFAULT_MAX_PODS,
    GPU_RESOURCE,
    QUOTA_SOURCE,
    VCPU_QUOTA_HINT,
    format_mib,
    format_millis,
    lookup_vm,
    pool_capacity,
    vcpu_family,
)


def _pool_rows(fleet: FleetConfig, cluster: ClusterConfig) -> list[dict[str, Any]]:
    shapes = custom_shapes(fleet)
    mode = cluster.network_mode
    rows: list[dict[str, Any]] = []
    sp = cluster.system_pool
    pools: list[tuple[str, str, str, int, int, int | None]] = [
        (
            sp.name,
            "System",
            sp.vm_size,
            sp.min_count or sp.count if sp.autoscaling else sp.count,
            sp.max_count or sp.count if sp.autoscaling else sp.count,
            sp.max_pods,
        ),
        *((p.name, "User", p.vm_size, p.min_count, p.max_count, p.max_pods) for p in cluster.pools),
    ]
    for name, mode_name, size, low, high, max_pods in pools:
        shape = lookup_vm(size, shapes)
        if shape is None:  # validation already reported it
            continue
        pods = max_pods or DEFAULT_MAX_PODS[mode]
        cap = pool_capacity(size, shape, pods, low, high)
        rows.append(
            {
                "pool": name,
                "mode": mode_name,
                "vmSize": size,
                "vcpus": shape.vcpus,
                "memoryMiB": shape.memory_mib,
                "gpus": shape.gpus,
                "minNodes": low,
                "maxNodes": high,
                "maxPods": pods,
                "nodeAllocatable": {
                    "cpu": format_millis(cap.node.cpu_millis),
                    "memory": format_mib(cap.node.memory_mib),
                },
                "maxAllocatable": {
                    "cpu": format_millis(cap.max_cpu_millis),
                    "memory": format_mib(cap.max_memory_mib),
                    GPU_RESOURCE: cap.max_gpus,
                },
                "idleVcpus": low * shape.vcpus,
            }
        )
    return rows


def azure_quotas(fleet: FleetConfig) -> list[dict[str, Any]]:
    """Per region, what the stack draws from Azure's per-subscription quotas: AKS clusters, and
    vCPUs (regional total, per VM family, Spot) at minimum and at maximum node counts."""
    shapes = custom_shapes(fleet)
    regions: dict[str, dict[str, Any]] = {}
    for cluster in fleet.clusters:
        if cluster.source != "aks":
            continue
        region = cluster.location or fleet.location or "?"
        entry = regions.setdefault(region, {"region": region, "aksClusters": 0, "vcpus": {}})
        entry["aksClusters"] += 1
        sp = cluster.system_pool
        low = (sp.min_count or sp.count) if sp.autoscaling else sp.count
        high = (sp.max_count or sp.count) if sp.autoscaling else sp.count
        pools = [(sp.vm_size, low, high, False)]
        pools += [
            (p.vm_size, p.min_count, p.max_count, p.priority == "Spot") for p in cluster.pools
        ]
        for size, low, high, spot in pools:
            shape = lookup_vm(size, shapes)
            if shape is None:
                continue
            keys = (
                ["Spot vCPUs (all families)"]
                if spot
                else [
                    "Total regional vCPUs",
                    f"{vcpu_family(size)} family vCPUs",
                ]
            )
            for key in keys:
                row = entry["vcpus"].setdefault(key, {"min": 0, "max": 0})
                row["min"] += low * shape.vcpus
                row["max"] += high * shape.vcpus
    return list(regions.values())


def quota_section(quotas: list[dict[str, Any]]) -> dict[str, Any]:
    """`azure_quotas` as a plan table: totals to hold against the subscription's quotas."""
    rows: list[list[Any]] = []
    for q in quotas:
        rows.append(
            [
                q["region"],
                "AKS clusters",
                q["aksClusters"],
                q["aksClusters"],
                f"{CLUSTERS_PER_REGION} per subscription and region by default ({QUOTA_SOURCE})",
            ]
        )
        rows += [
            [q["region"], key, v["min"], v["max"], VCPU_QUOTA_HINT] for key, v in q["vcpus"].items()
        ]
    return {
        "kind": AZURE_QUOTAS,
        "title": "Azure quotas this stack draws on (at min nodes / at max nodes)",
        "columns": ["region", "quota", "at min", "at max", "compare with"],
        "rows": rows,
    }


def build_plan(stack: str, fleet: FleetConfig, warnings: list[Issue]) -> dict[str, Any]:
    """Everything preflight prints, as data; `--json` prints exactly this."""
    clusters: list[dict[str, Any]] = []
    idle_nodes = 0
    idle_vcpus = 0
    for index, cluster in enumerate(fleet.clusters):
        pools = _pool_rows(fleet, cluster)
        add_pool_upgrades(fleet, cluster, pools)
        idle_nodes += sum(p["minNodes"] for p in pools)
        idle_vcpus += sum(p["idleVcpus"] for p in pools)
        clusters.append(
            {
                "name": cluster.name,
                "role": cluster.role,
                "location": cluster.location or fleet.location,
                "kubernetesVersion": fleet.version_of(cluster),
                "skuTier": cluster.sku_tier,
                "network": cluster.network_mode,
                "virtualNodes": cluster.virtual_nodes.enabled,
                "pools": pools,
                **upgrade_fields(fleet, index, cluster),
            }
        )
    return {
        "stack": stack,
        "resourceGroup": fleet.resource_group,
        "location": fleet.location,
        "clusters": clusters,
        "idle": {
            "nodes": idle_nodes,
            "vcpus": idle_vcpus,
            "controlPlanes": [c.name for c in fleet.clusters if c.sku_tier != "Free"],
            "note": "nodes that stay up at zero load (system pools, user pools' minCount) "
            "and paid control-plane tiers",
        },
        "azureQuotas": azure_quotas(fleet),
        "warnings": [{"path": w.path, "message": w.message} for w in warnings],
    }
