"""AKS-side checks: network combinations AKS refuses, access (Entra ID, RBAC, IP ranges), GPUs.

Each refusal here is one AKS would otherwise give minutes into `pulumi up`; the rule text comes
from `upstream.aks`, so preflight, the program and docs/configuration.md say the same thing.
"""

from __future__ import annotations

from collections.abc import Iterator

from builders.egress import callers_of
from checks.common import Check, duplicates
from config.errors import Issue, key_path
from config.models import AccessConfig, ClusterConfig, FleetConfig
from config.resolve import access_of, gpu_of, gpu_pools
from upstream.aks import (
    DEFAULT_MAX_PODS,
    GPU_RESOURCE,
    RULE_AZURE_RBAC,
    RULE_CILIUM_DATAPLANE,
    RULE_CILIUM_POLICY,
    RULE_EGRESS_OUTBOUND,
    RULE_LOCAL_ACCOUNTS,
    RULE_MANAGED_NAT,
    RULE_VIRTUAL_NODE_POLICY,
    RULE_VIRTUAL_NODE_RANGES,
)


def check_network(fleet: FleetConfig) -> Iterator[Issue]:
    for i, c in enumerate(fleet.clusters):
        base = key_path("clusters", i, "network")
        n = c.network
        if c.virtual_nodes.enabled and n.mode == "overlay":
            yield Issue(
                f"{base}.mode",
                "virtual nodes need Azure CNI with a VNet node subnet: set mode: nodeSubnet "
                "(or leave it unset); CNI Overlay does not support the ACI connector",
            )
        yield from _refused_combinations(fleet, i)
        if (
            n.dns_service_ip not in n.service_cidr
            or n.dns_service_ip == n.service_cidr.network_address + 1
        ):
            yield Issue(
                f"{base}.dnsServiceIp",
                f"must be inside serviceCidr ({n.service_cidr}) and not its first address",
            )
        mode = c.network_mode
        if mode == "overlay":
            if n.pod_cidr.overlaps(n.service_cidr):
                yield Issue(f"{base}.podCidr", f"overlaps serviceCidr ({n.service_cidr})")
            continue
        for key, subnet in (
            ("nodeSubnetCidr", n.node_subnet_cidr),
            ("aciSubnetCidr", n.aci_subnet_cidr),
        ):
            if key == "aciSubnetCidr" and not c.virtual_nodes.enabled:
                continue
            if not subnet.subnet_of(n.vnet_cidr):
                yield Issue(f"{base}.{key}", f"{subnet} must lie inside vnetCidr ({n.vnet_cidr})")
        if c.virtual_nodes.enabled and n.node_subnet_cidr.overlaps(n.aci_subnet_cidr):
            yield Issue(f"{base}.aciSubnetCidr", f"overlaps nodeSubnetCidr ({n.node_subnet_cidr})")
        if n.service_cidr.overlaps(n.vnet_cidr):
            yield Issue(f"{base}.serviceCidr", f"overlaps vnetCidr ({n.vnet_cidr})")
        max_pods = [p.max_pods or DEFAULT_MAX_PODS[mode] for p in (c.system_pool, *c.pools)]
        nodes = c.system_pool.max_count or c.system_pool.count
        nodes += sum(p.max_count for p in c.pools)
        need = nodes * (1 + max(max_pods))
        if need > n.node_subnet_cidr.num_addresses - 5:
            yield Issue(
                f"{base}.nodeSubnetCidr",
                f"{n.node_subnet_cidr} has {n.node_subnet_cidr.num_addresses - 5} usable "
                "addresses; "
                f"{nodes} nodes at maxCount with up to {max(max_pods)} pods each need {need} "
                "(Azure CNI gives every pod a subnet IP)",
            )


def _refused_combinations(fleet: FleetConfig, i: int) -> Iterator[Issue]:
    """Network settings AKS accepts one by one and refuses together."""
    c = fleet.clusters[i]
    base = key_path("clusters", i, "network")
    n = c.network
    if c.source != "aks":
        return
    if n.network_policy == "cilium" and n.network_dataplane != "cilium":
        yield Issue(f"{base}.networkPolicy", f"set networkDataplane: cilium; {RULE_CILIUM_POLICY}")
    if n.network_dataplane == "cilium" and n.network_policy in ("azure", "calico"):
        yield Issue(
            f"{base}.networkDataplane",
            f"networkPolicy {n.network_policy!r} is refused: use cilium or none; "
            + RULE_CILIUM_DATAPLANE,
        )
    if n.outbound_type == "managedNATGateway" and c.network_mode == "nodeSubnet":
        yield Issue(
            f"{base}.outboundType",
            f"use loadBalancer (or network mode overlay); {RULE_MANAGED_NAT}",
        )
    if c.virtual_nodes.enabled and n.network_policy != "none":
        yield Issue(f"{base}.networkPolicy", RULE_VIRTUAL_NODE_POLICY, "warning")


def _access_issues(access: AccessConfig, base: str) -> Iterator[Issue]:
    """One `access` section on its own (the fleet's, or a cluster's)."""
    if not access.entra_id and not access.local_accounts:
        yield Issue(
            f"{base}.localAccounts",
            f"false needs entraId: true (or set localAccounts: true); {RULE_LOCAL_ACCOUNTS}",
        )
    if access.azure_rbac and not access.entra_id:
        yield Issue(
            f"{base}.azureRbac", f"set entraId: true or azureRbac: false; {RULE_AZURE_RBAC}"
        )
    if access.admin_group_object_ids and not access.entra_id:
        yield Issue(f"{base}.adminGroupObjectIds", "Entra groups need entraId: true")
    if access.groups and not (access.entra_id and access.azure_rbac):
        yield Issue(
            f"{base}.groups",
            "AKS RBAC roles take effect only with entraId: true and azureRbac: true",
        )
    if access.entra_id and not access.azure_rbac and not access.local_accounts:
        if access.deploy_identity_role != "none":
            yield Issue(
                f"{base}.deployIdentityRole",
                "an Azure role grants nothing in a cluster without azureRbac: set "
                "deployIdentityRole: none and put the deploying identity in an "
                "adminGroupObjectIds group",
            )
        if not access.admin_group_object_ids:
            yield Issue(
                f"{base}.adminGroupObjectIds",
                "with Entra ID, Kubernetes RBAC and no local accounts, only these groups are "
                "cluster-admin: list at least the deploying identity's group",
            )
    ranges = [str(r) for r in access.authorized_ip_ranges]
    for dup in sorted(duplicates(ranges)):
        yield Issue(f"{base}.authorizedIpRanges", f"{dup} is listed twice")
    seen: set[tuple[str, str, str | None]] = set()
    for j, group in enumerate(access.groups):
        grant = (group.object_id.lower(), group.role, group.namespace)
        if grant in seen:
            yield Issue(
                f"{base}.groups[{j}]",
                "listed twice: Azure refuses a second identical role assignment",
            )
        seen.add(grant)
        if group.role == "clusterAdmin" and group.namespace is not None:
            yield Issue(
                f"{base}.groups[{j}].namespace",
                "clusterAdmin is cluster-wide; use admin, writer or reader in a namespace",
            )


def check_access(fleet: FleetConfig) -> Iterator[Issue]:
    aks = [c for c in fleet.clusters if c.source == "aks"]
    if any(c.access is None for c in aks):
        yield from _access_issues(fleet.access, "access")
    for i, c in enumerate(fleet.clusters):
        base = key_path("clusters", i, "access")
        if c.source != "aks":
            if c.access is not None:
                yield Issue(base, "only with source: aks (an existing cluster keeps its own)")
            continue
        if c.access is not None:
            yield from _access_issues(c.access, base)
        yield from _range_issues(fleet, i, c)


def _range_issues(fleet: FleetConfig, i: int, c: ClusterConfig) -> Iterator[Issue]:
    """A cluster's authorized ranges against virtual nodes and the fleet clusters that call it."""
    access = access_of(fleet, c)
    if not access.authorized_ip_ranges:
        return
    path = key_path("clusters", i, "access") if c.access is not None else "access"
    if c.virtual_nodes.enabled:  # only its own section: the fleet's ranges skip it (access_of)
        yield Issue(
            f"{path}.authorizedIpRanges",
            f"{c.name!r} has virtualNodes.enabled: {RULE_VIRTUAL_NODE_RANGES}; leave ranges out "
            "of its access, or turn virtual nodes off",
        )
    for caller, who in callers_of(fleet, c).items():
        at = fleet.cluster(caller)
        if not access.admit_fleet_egress:
            yield Issue(
                f"{path}.authorizedIpRanges",
                f"{c.name!r} is called by {who} (on {caller!r}): its egress address must be in "
                "these ranges (AKS adds only the cluster's own egress; admitFleetEgress: false)",
                "warning",
            )
        elif at is None or at.source != "aks":
            yield Issue(
                f"{path}.admitFleetEgress",
                f"{c.name!r} is called by {who} on {caller!r}, which this stack does not create: "
                "its egress is not the program's to make; list it in authorizedIpRanges and set "
                "admitFleetEgress: false",
            )
        elif at.network.outbound_type != "loadBalancer":
            j = fleet.clusters.index(at)
            yield Issue(
                key_path("clusters", j, "network", "outboundType"),
                f"{c.name!r} admits {caller!r}'s egress ({path}.admitFleetEgress): use "
                f"loadBalancer; {RULE_EGRESS_OUTBOUND}",
            )


def check_gpus(fleet: FleetConfig) -> Iterator[Issue]:
    """A GPU flavor or quota is only schedulable where the device plugin advertises GPUs."""
    for i, c in enumerate(fleet.clusters):
        pools = {p.name for p in gpu_pools(fleet, c)}
        if not pools or gpu_of(fleet, c).device_plugin:
            continue
        base = key_path("clusters", i)
        for j, flavor in enumerate(c.queues.flavors):
            if flavor.pool in pools:
                yield Issue(
                    f"{base}.queues.flavors[{j}].pool",
                    f"pool {flavor.pool!r} has GPUs but nothing advertises {GPU_RESOURCE}: "
                    "Kueue would admit jobs that never schedule; enable gpu.devicePlugin",
                )
        for j, cq in enumerate(c.queues.cluster_queues):
            if any(GPU_RESOURCE in g.covered_resources for g in cq.resource_groups):
                yield Issue(
                    f"{base}.queues.clusterQueues[{j}].resourceGroups",
                    f"{GPU_RESOURCE} quota with gpu.devicePlugin: false: no node advertises it",
                )


AKS_CHECKS: tuple[Check, ...] = (check_network, check_access, check_gpus)
