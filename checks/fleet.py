"""Fleet-wide checks: location, names, roles, versions, pools, sources (network: checks.aks).

A check here is something a platform engineer would otherwise learn from a failed `pulumi up`
ten minutes in (AKS rejects it) or from a cluster that deploys but cannot work as configured.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterator

from checks.common import Check, duplicates
from config.errors import Issue, key_path
from config.models import FleetConfig, PoolConfig
from config.resolve import custom_shapes
from constants import MIN_KUBERNETES, PROGRAM_TAGS
from upstream.aks import (
    CLUSTERS_PER_REGION,
    CLUSTERS_PER_SUBSCRIPTION,
    MAX_NODE_POOLS,
    MAX_TAGS,
    QUOTA_SOURCE,
    RESERVED_LABEL_PREFIXES,
    SPOT_LABEL,
    VM_SIZES,
    VmShape,
    is_plausible_size,
    lookup_vm,
)
from upstream.k8s import minor_of


def check_location(fleet: FleetConfig) -> Iterator[Issue]:
    if fleet.location is None and any(
        c.location is None for c in fleet.clusters if c.source == "aks"
    ):
        yield Issue(
            "location",
            "required: set fleet.location or `azure-native:location` in the stack config "
            "(or a location on every cluster)",
        )


def check_resource_group(fleet: FleetConfig) -> Iterator[Issue]:
    name = fleet.resource_group
    if name is not None and (
        name.endswith(".") or not all(ch.isalnum() or ch in "-_.()" for ch in name)
    ):
        yield Issue(
            "resourceGroup",
            f"{name!r} is not allowed: 1-90 letters, digits, '-', '_', '.', '(' and ')', "
            "not ending with '.'",
        )


def check_roles(fleet: FleetConfig) -> Iterator[Issue]:
    managers = [i for i, c in enumerate(fleet.clusters) if c.role == "manager"]
    for i in managers[1:]:
        yield Issue(
            key_path("clusters", i, "role"),
            f"at most one manager per stack; clusters[{managers[0]}] is already the manager",
        )
    if not managers:
        for i, c in enumerate(fleet.clusters):
            if c.role == "worker":
                yield Issue(
                    key_path("clusters", i, "role"),
                    f"worker {c.name!r} needs a cluster with role 'manager' in the same stack "
                    "(or use role 'standalone')",
                )
    elif not fleet.workers:
        i = managers[0]
        yield Issue(
            key_path("clusters", i, "role"),
            "a manager with no workers dispatches nowhere; add a worker or use role 'standalone'",
            "warning",
        )


def check_names(fleet: FleetConfig) -> Iterator[Issue]:
    for name in duplicates([c.name for c in fleet.clusters]):
        for i, c in enumerate(fleet.clusters):
            if c.name == name:
                yield Issue(
                    key_path("clusters", i, "name"), f"{name!r} is used by more than one cluster"
                )
    prefixes = [c.dns_prefix or c.name for c in fleet.clusters]
    for i, c in enumerate(fleet.clusters):
        prefix = prefixes[i]
        if c.dns_prefix is None and (len(prefix) > 54 or "_" in prefix):
            yield Issue(
                key_path("clusters", i, "dnsPrefix"),
                f"cluster name {c.name!r} cannot serve as DNS prefix (1-54 letters, digits and "
                "'-'); set dnsPrefix",
            )
    for prefix in duplicates([p.lower() for p in prefixes]):
        for i, p in enumerate(prefixes):
            if p.lower() == prefix:
                yield Issue(key_path("clusters", i, "dnsPrefix"), f"DNS prefix {p!r} is not unique")


def check_versions(fleet: FleetConfig) -> Iterator[Issue]:
    lowest = ".".join(map(str, MIN_KUBERNETES))
    if minor_of(fleet.kubernetes_version) < MIN_KUBERNETES:
        yield Issue("kubernetesVersion", f"must be >= {lowest} (Kueue's minimum)")
    for i, c in enumerate(fleet.clusters):
        if c.kubernetes_version and minor_of(c.kubernetes_version) < MIN_KUBERNETES:
            yield Issue(
                key_path("clusters", i, "kubernetesVersion"),
                f"must be >= {lowest} (Kueue's minimum)",
            )


def _same_size_name(a: str, b: str) -> bool:
    """Two spellings of one size, were `_` and case not significant (Azure's names are exact)."""
    return a.replace("_", "").lower() == b.replace("_", "").lower()


def _check_vm(fleet: FleetConfig, path: str, size: str) -> Iterator[Issue]:
    if not is_plausible_size(size):
        yield Issue(path, f"{size!r} is not an Azure VM size name (e.g. 'Standard_D4s_v5')")
        return
    known = lookup_vm(size) is not None
    if size in fleet.vm_sizes and not known:
        # A declared shape makes the checks pass, but Azure knows no such size: a typo of a
        # size in the table must not get through because its shape was declared.
        near = next((k for k in VM_SIZES if _same_size_name(k, size)), None)
        if near is not None:
            yield Issue(
                path,
                f"unknown VM size {size!r}; did you mean {near!r}? (Azure refuses {size!r} at "
                f"deploy; drop it from vmSizes)",
            )
        return
    if known:
        return
    # Compared without the `Standard_` every name shares, which would make any two look alike.
    stems = {k.removeprefix("Standard_").lower(): k for k in VM_SIZES}
    stem = size.removeprefix("Standard_").lower()
    hint = [stems[s] for s in difflib.get_close_matches(stem, list(stems), n=3, cutoff=0.8)]
    if hint:
        others = f" (or {', '.join(repr(h) for h in hint[1:])})" if len(hint) > 1 else ""
        yield Issue(path, f"unknown VM size {size!r}; did you mean {hint[0]!r}?{others}")
        return
    yield Issue(
        path,
        f"unknown VM size {size!r}: not in the project's table, and capacity checks need its "
        "shape; check the name against `az vm list-sizes --location <region>`; a size Azure "
        "offers there can be declared under vmSizes with its vCPUs, memory and GPUs",
    )


def _check_pool_bounds(path: str, pool: PoolConfig, shape: VmShape | None) -> Iterator[Issue]:
    if pool.min_count > pool.max_count:
        yield Issue(f"{path}.minCount", f"must be <= maxCount ({pool.max_count})")
    if pool.count is not None and not pool.min_count <= pool.count <= pool.max_count:
        yield Issue(
            f"{path}.count",
            f"initial count {pool.count} must be within minCount..maxCount "
            f"({pool.min_count}..{pool.max_count})",
        )
    if shape is not None and (shape.vcpus < 2 or shape.memory_mib < 2 * 1024):
        yield Issue(f"{path}.vmSize", "AKS user pools need VM sizes with >= 2 vCPU and >= 2 GiB")
    for key in pool.labels:
        if key == "agentpool" or key.startswith(RESERVED_LABEL_PREFIXES):
            yield Issue(
                f"{path}.labels.{key}",
                "reserved: AKS sets 'agentpool' and owns the prefixes "
                + ", ".join(RESERVED_LABEL_PREFIXES),
            )
    taint_keys = Counter(
        (t.partition("=")[0].partition(":")[0], t.rpartition(":")[2]) for t in pool.taints
    )
    for key, _ in taint_keys:
        if key == SPOT_LABEL[0]:
            yield Issue(
                f"{path}.taints",
                f"{key} is AKS's own Spot taint: set priority: Spot and the program sends it",
            )
    for (key, effect), n in taint_keys.items():
        if n > 1:
            yield Issue(f"{path}.taints", f"taint {key}:{effect} appears {n} times")
    if pool.priority == "Spot":
        if (
            pool.spot_max_price is not None
            and pool.spot_max_price != -1
            and pool.spot_max_price <= 0
        ):
            yield Issue(f"{path}.spotMaxPrice", "must be -1 (pay up to on-demand) or a price > 0")
    elif pool.spot_max_price is not None:
        yield Issue(f"{path}.spotMaxPrice", "only allowed with priority: Spot")


def check_pools(fleet: FleetConfig) -> Iterator[Issue]:
    shapes = custom_shapes(fleet)
    for i, c in enumerate(fleet.clusters):
        base = key_path("clusters", i)
        sp = c.system_pool
        yield from _check_vm(fleet, f"{base}.systemPool.vmSize", sp.vm_size)
        # Its VM floor and B-series: checks.aks_rules (`system-pool-vm`).
        if sp.autoscaling:
            if sp.min_count is None or sp.max_count is None:
                yield Issue(f"{base}.systemPool", "autoscaling needs minCount and maxCount")
            elif not sp.min_count <= sp.count <= sp.max_count:
                yield Issue(
                    f"{base}.systemPool.count",
                    f"must be within minCount..maxCount ({sp.min_count}..{sp.max_count})",
                )
        elif sp.min_count is not None or sp.max_count is not None:
            yield Issue(f"{base}.systemPool", "minCount/maxCount need autoscaling: true")
        if len(c.pools) + 1 > MAX_NODE_POOLS:
            yield Issue(
                f"{base}.pools",
                f"{len(c.pools)} user pools + the system pool: AKS allows at most "
                f"{MAX_NODE_POOLS} node pools per cluster (Azure limit, {QUOTA_SOURCE})",
            )
        names = [sp.name, *(p.name for p in c.pools)]
        for dup in duplicates(names):
            for j, p in enumerate(c.pools):
                if p.name == dup:
                    yield Issue(
                        f"{base}.pools[{j}].name",
                        f"pool name {dup!r} is used twice in cluster {c.name!r}"
                        + (" (the system pool has it)" if dup == sp.name else ""),
                    )
        for j, p in enumerate(c.pools):
            path = f"{base}.pools[{j}]"
            yield from _check_vm(fleet, f"{path}.vmSize", p.vm_size)
            yield from _check_pool_bounds(path, p, lookup_vm(p.vm_size, shapes))


def check_sources(fleet: FleetConfig) -> Iterator[Issue]:
    for i, c in enumerate(fleet.clusters):
        base = key_path("clusters", i)
        if c.source == "aks":
            if c.existing is not None:
                yield Issue(f"{base}.existing", "only with source: existing")
            continue
        e = c.existing
        if e is None or (e.kubeconfig_path is None) == (e.kubeconfig_secret is None):
            yield Issue(
                f"{base}.existing",
                "source: existing needs exactly one of kubeconfigPath (a file) or "
                "kubeconfigSecret (a secret stack config key holding the kubeconfig)",
            )


def check_tags(fleet: FleetConfig) -> Iterator[Issue]:
    """Azure's 50 tags a resource count the fleet's, the cluster's and the program's own."""
    for i, c in enumerate(fleet.clusters):
        names = {*fleet.tags, *c.tags, *PROGRAM_TAGS}
        if len(names) > MAX_TAGS:
            yield Issue(
                key_path("clusters", i, "tags"),
                f"{len(names)} tags on this cluster's Azure resources (tags, clusters[{i}].tags "
                f"and the program's {', '.join(PROGRAM_TAGS)}); Azure allows {MAX_TAGS}",
            )


def aks_clusters_per_region(fleet: FleetConfig) -> dict[str, int]:
    """How many AKS clusters this stack creates in each region (existing ones not counted)."""
    out: dict[str, int] = {}
    for c in fleet.clusters:
        if c.source == "aks":
            region = c.location or fleet.location or "?"
            out[region] = out.get(region, 0) + 1
    return out


def check_azure_quotas(fleet: FleetConfig) -> Iterator[Issue]:
    """Warn when the stack alone passes a default AKS quota (raisable, so not an error)."""
    for region, count in aks_clusters_per_region(fleet).items():
        if count > CLUSTERS_PER_REGION:
            yield Issue(
                "clusters",
                f"{count} AKS clusters in {region}: Azure's default quota is "
                f"{CLUSTERS_PER_REGION} clusters per subscription and region (raisable on "
                f"request; {QUOTA_SOURCE}); ask for more before `pulumi up`, or spread regions",
                "warning",
            )
    total = sum(aks_clusters_per_region(fleet).values())
    if total > CLUSTERS_PER_SUBSCRIPTION:
        yield Issue(
            "clusters",
            f"{total} AKS clusters: Azure allows {CLUSTERS_PER_SUBSCRIPTION} per subscription "
            f"({QUOTA_SOURCE}); split the fleet over subscriptions",
        )


FLEET_CHECKS: tuple[Check, ...] = (
    check_sources,
    check_tags,
    check_location,
    check_resource_group,
    check_roles,
    check_names,
    check_versions,
    check_pools,
    check_azure_quotas,
)
