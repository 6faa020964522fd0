"""Which fleet clusters call another's API server, their static egress, and each range's source.

A worker's API server is called by the MultiKueue manager, a Karmada member's by the Karmada host.
With authorized IP ranges on the called cluster, the caller's egress must be admitted. The program
gives each such caller a Standard static Public IP (created first, cheap) as its load balancer's
outbound IP, so the called cluster's ranges can name it before any cluster exists: the clusters
still deploy in parallel, none waits on another.
"""

from __future__ import annotations

from dataclasses import dataclass

from config.errors import key_path
from config.models import ClusterConfig, FleetConfig
from config.resolve import (
    access_of,
    enabled_workers,
    fleet_ranges_skipped,
    host_name,
    member_names,
)

MULTIKUEUE_CALLER = "the MultiKueue manager"
KARMADA_CALLER = "the Karmada control plane"
ANY_ADDRESS = "any (no ranges)"
# Why a cluster under the fleet's ranges has none (config.resolve.fleet_ranges_skipped).
VIRTUAL_NODES_SKIP = (
    "AKS virtual nodes take no authorized ranges: access.authorizedIpRanges skip it"
)


def egress_ip_name(cluster: str) -> str:
    """The Azure Public IP a cluster's egress leaves from (in the fleet's resource group)."""
    return f"{cluster}-egress"


def callers_of(fleet: FleetConfig, cluster: ClusterConfig) -> dict[str, str]:
    """Fleet clusters whose pods call this cluster's API server -> who calls from there.

    A name absent from the fleet's clusters (an existing Karmada control plane) is "karmada".
    """
    out: dict[str, str] = {}
    if fleet.manager is not None and cluster.name in enabled_workers(fleet):
        out[fleet.manager.name] = MULTIKUEUE_CALLER
    if fleet.karmada is not None and cluster.name in member_names(fleet):
        host = host_name(fleet) or "karmada"
        if host != cluster.name:  # AKS admits a cluster's own egress by itself
            out[host] = f"{out[host]} and {KARMADA_CALLER}" if host in out else KARMADA_CALLER
    return out


def admits_fleet_egress(fleet: FleetConfig, cluster: ClusterConfig) -> bool:
    """Whether this cluster's ranges name its callers' egress automatically."""
    access = access_of(fleet, cluster)
    return (
        cluster.source == "aks" and bool(access.authorized_ip_ranges) and access.admit_fleet_egress
    )


def admitted_callers(fleet: FleetConfig, cluster: ClusterConfig) -> list[str]:
    """The callers whose static egress this cluster's ranges include, in fleet order."""
    if not admits_fleet_egress(fleet, cluster):
        return []
    return [c for c in callers_of(fleet, cluster) if fleet.cluster(c) is not None]


def egress_clusters(fleet: FleetConfig) -> list[str]:
    """The AKS clusters that get a static egress Public IP: some other cluster admits them."""
    wanted = {c for cluster in fleet.clusters for c in admitted_callers(fleet, cluster)}
    return [c.name for c in fleet.clusters if c.name in wanted and c.source == "aks"]


@dataclass(frozen=True, slots=True)
class ApiServerRange:
    """One range in a cluster's `apiServerAccessProfile.authorizedIPRanges`, and its source."""

    cluster: str
    range: str
    source: str


def api_server_ranges(fleet: FleetConfig) -> list[ApiServerRange]:
    """Every AKS API server's authorized ranges (none: open to any address), with their source."""
    out: list[ApiServerRange] = []
    for i, c in enumerate(fleet.clusters):
        if c.source != "aks":
            continue
        access = access_of(fleet, c)
        at = key_path("clusters", i, "access") if c.access is not None else "access"
        if fleet_ranges_skipped(fleet, c):
            why = f"{key_path('clusters', i, 'virtualNodes', 'enabled')}: {VIRTUAL_NODES_SKIP}"
            out.append(ApiServerRange(c.name, ANY_ADDRESS, why))
            continue
        if not access.authorized_ip_ranges:
            out.append(ApiServerRange(c.name, ANY_ADDRESS, f"{at}.authorizedIpRanges"))
            continue
        for r in access.authorized_ip_ranges:
            out.append(ApiServerRange(c.name, str(r), f"{at}.authorizedIpRanges"))
        callers = callers_of(fleet, c)
        for caller in admitted_callers(fleet, c):
            out.append(
                ApiServerRange(
                    c.name,
                    f"<{egress_ip_name(caller)}>/32",
                    f"{caller}'s static egress ({callers[caller]}; {at}.admitFleetEgress)",
                )
            )
        out.append(ApiServerRange(c.name, "its own egress", "added by AKS"))
    return out
