"""Every Azure resource and invoke a stack sends, as azure-native inputs: what preflight checks.

The requests are the lists the components register (builders/azure_resource.py): the resource
group and egress IPs (builders/azure_fleet.py, components/fleet.py), each cluster's
(builders/azure_cluster.py, components/aks.py), Managed Prometheus (builders/azure_monitor.py,
components/monitoring.py) and the Karmada address (builders/azure_fleet.py,
components/karmada.py), read here with each deploy-time value as planned: a value Azure computes
(an id, a principal id) is `KNOWN_AFTER_DEPLOY`, on which the check reads no rule. What this
module adds is which config key sets which property of each request, so a finding names the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from builders import azure_monitor as amw
from builders.azure_cluster import SUBSCRIPTION, cluster_resources
from builders.azure_fleet import EGRESS_SUFFIX, fleet_resources, karmada_resources
from builders.azure_resource import (
    AGENT_POOL,
    IDENTITY,
    KNOWN_AFTER_DEPLOY,
    MAINTENANCE,
    MANAGED_CLUSTER,
    PROMETHEUS_RULE_GROUP,
    PUBLIC_IP,
    ROLE_ASSIGNMENT,
    SUBNET,
    USER_CREDENTIALS,
    VNET,
    AzureResource,
    planned,
)
from builders.egress import admitted_callers
from config.errors import key_path
from config.models import ClusterConfig, FleetConfig
from constants import PROJECT

# Re-exported: checks and tests name the cluster's tokens and the placeholder from here.
__all__ = [
    "AGENT_POOL",
    "IDENTITY",
    "KNOWN_AFTER_DEPLOY",
    "MAINTENANCE",
    "MANAGED_CLUSTER",
    "ROLE_ASSIGNMENT",
    "SUBNET",
    "SUBSCRIPTION",
    "USER_CREDENTIALS",
    "VNET",
    "AzureRequest",
    "azure_requests",
    "egress_at",
]

# Which config keys set a list's request's properties (AzureRequest.at).
Keys = Callable[[AzureResource], Mapping[str, str]]


@dataclass(frozen=True, slots=True)
class AzureRequest:
    """One Azure resource (or invoke): type token, Pulumi name, inputs, and their config keys.

    `at` maps an ARM property path prefix (or a URL parameter, `agentPoolName (URL)`) to the
    config key path that sets it; the "" entry is where the resource as a whole comes from.
    """

    token: str
    name: str
    inputs: Mapping[str, Any]
    at: Mapping[str, str]

    def config_path(self, prop: str) -> str:
        best = ""
        for prefix in self.at:
            if prefix and (prop == prefix or prop.startswith((prefix + ".", prefix + "["))):
                best = max(best, prefix, key=len)
        return self.at[best] if best else self.at.get("", "")


# ARM property of a pool (user pool or the inline system pool) -> the pool config key that sets it.
POOL_KEYS = {
    "vmSize": "vmSize",
    "count": "count",
    "minCount": "minCount",
    "maxCount": "maxCount",
    "maxPods": "maxPods",
    "availabilityZones": "zones",
    "osSKU": "osSku",
    "osDiskSizeGB": "osDiskSizeGb",
    "nodeLabels": "labels",
    "nodeTaints": "taints",
    "scaleSetPriority": "priority",
    "spotMaxPrice": "spotMaxPrice",
    "name": "name",
}


def _pool_keys(prefix: str, at: str) -> dict[str, str]:
    return {f"{prefix}{wire}": f"{at}.{key}" for wire, key in POOL_KEYS.items()}


def _requests(prefix: str, resources: Sequence[AzureResource], keys: Keys) -> list[AzureRequest]:
    """A component's list as preflight reads it: `<prefix>-<name>`, each Ref as planned."""
    return [
        AzureRequest(r.token, f"{prefix}-{r.name}", planned(r.args), keys(r)) for r in resources
    ]


def _cluster_keys(
    fleet: FleetConfig, i: int, cfg: ClusterConfig
) -> Callable[[AzureResource], dict[str, str]]:
    """Which config key sets which property of each of a cluster's resources."""
    at = key_path("clusters", i)
    tags_at = {"tags": key_path("clusters", i, "tags"), "location": key_path("clusters", i)}
    access_at = key_path("clusters", i, "access") if cfg.access else "access"
    upgrades_at = key_path("clusters", i, "upgrades") if cfg.upgrades else "upgrades"
    net_at = key_path("clusters", i, "network")
    pools = {p.name: key_path("clusters", i, "pools", j) for j, p in enumerate(cfg.pools)}
    cluster = {
        "": at,
        **tags_at,
        "resourceName (URL)": key_path("clusters", i, "name"),
        "properties.dnsPrefix": key_path("clusters", i, "dnsPrefix"),
        "properties.kubernetesVersion": key_path("clusters", i, "kubernetesVersion"),
        "sku": key_path("clusters", i, "skuTier"),
        "properties.agentPoolProfiles": key_path("clusters", i, "systemPool"),
        **_pool_keys("properties.agentPoolProfiles[0].", key_path("clusters", i, "systemPool")),
        "properties.networkProfile": net_at,
        "properties.autoScalerProfile": key_path("clusters", i, "autoscalerProfile"),
        "properties.addonProfiles": key_path("clusters", i, "virtualNodes"),
        "properties.aadProfile": access_at,
        "properties.autoUpgradeProfile": upgrades_at,
        "properties.supportPlan": key_path("clusters", i, "supportPlan"),
        "properties.apiServerAccessProfile": access_at,
        "properties.azureMonitorProfile": "monitoring.azureMonitor",
        # The static egress others admit (builders.egress): their ranges ask for it.
        "properties.networkProfile.loadBalancerProfile": egress_at(fleet, cfg),
    }

    def keys(r: AzureResource) -> dict[str, str]:
        if r.token == MANAGED_CLUSTER:
            return cluster
        if r.token == AGENT_POOL:
            pool_at = pools[r.name]
            return {
                "": pool_at,
                "tags": tags_at["tags"],
                "agentPoolName (URL)": f"{pool_at}.name",
                **_pool_keys("properties.", pool_at),
            }
        if r.token in (VNET, IDENTITY):
            return {"": net_at if r.token == VNET else at, **tags_at}
        if r.token == SUBNET or r.name == "vnet-network":
            return {"": net_at}
        if r.token == MAINTENANCE:
            return {"": upgrades_at}
        if r.name == "egress-network":
            return {"": egress_at(fleet, cfg)}
        if r.name == "aci-network":
            return {"": key_path("clusters", i, "virtualNodes")}
        if r.token == ROLE_ASSIGNMENT:  # the access grants
            return {"": access_at}
        return {"": at}

    return keys


def _fleet_keys(fleet: FleetConfig) -> Keys:
    """The resource group's keys, and each static egress IP's (builders.azure_fleet)."""
    by_ip = {f"{c.name}{EGRESS_SUFFIX}": (i, c) for i, c in enumerate(fleet.clusters)}

    def keys(r: AzureResource) -> dict[str, str]:
        if r.token == PUBLIC_IP:
            i, cfg = by_ip[r.name]
            return {"": egress_at(fleet, cfg), "location": key_path("clusters", i)}
        return {"": "location", "tags": "tags", "resourceGroupName (URL)": "resourceGroup"}

    return keys


def _monitor_keys(r: AzureResource) -> dict[str, str]:
    """Managed Prometheus comes from `monitoring.azureMonitor`, its rule group from `alerts`."""
    at = key_path("monitoring", "azureMonitor")
    return {"": f"{at}.alerts" if r.token == PROMETHEUS_RULE_GROUP else at}


def egress_at(fleet: FleetConfig, caller: ClusterConfig) -> str:
    """The config key that asks for a cluster's static egress: the first admitting `access`."""
    for i, c in enumerate(fleet.clusters):
        if caller.name in admitted_callers(fleet, c):
            at = key_path("clusters", i, "access") if c.access is not None else "access"
            return f"{at}.admitFleetEgress"
    return key_path("clusters", fleet.clusters.index(caller), "network")


def azure_requests(
    fleet: FleetConfig, stack: str, deployer_type: str = "User"
) -> list[AzureRequest]:
    """Every Azure resource and invoke the program sends for this stack, in program order.

    `deployer_type`: the deploying identity's principal type (config.login.resolve).
    """
    aks = [(i, c) for i, c in enumerate(fleet.clusters) if c.source == "aks"]
    if not aks:
        return []
    out = _requests(PROJECT, fleet_resources(fleet, stack), _fleet_keys(fleet))
    for i, cfg in aks:
        resources = cluster_resources(fleet, cfg, stack, deployer_type=deployer_type)
        out += _requests(f"{PROJECT}-{cfg.name}", resources, _cluster_keys(fleet, i, cfg))
    out += _requests(PROJECT, amw.monitor_resources(fleet, stack), _monitor_keys)
    karmada_ip = karmada_resources(fleet, stack)
    out += _requests(f"{PROJECT}-karmada", karmada_ip, lambda _: {"": "karmada.apiServer"})
    return out
