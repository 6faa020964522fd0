"""Every Azure resource and invoke a stack sends, as azure-native inputs: what preflight checks.

A cluster's resources are the list components/aks.py registers (builders/azure_cluster.py), read
here with each deploy-time value as planned. The resource group, the egress and Karmada Public
IPs and Managed Prometheus are still spelled here beside their components (fleet.py, karmada.py,
monitoring.py); tests/test_azure_api.py holds every request equal to what is registered. Values
Azure computes at deploy time (ids, principal ids) are `KNOWN_AFTER_DEPLOY` here; the check reads
no rule on them. Each request says which config key sets which of its properties, so a finding
names the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from builders import azure_monitor as amw
from builders import karmada as kb
from builders.azure_cluster import SUBSCRIPTION, cluster_resources
from builders.azure_resource import (
    AGENT_POOL,
    IDENTITY,
    KNOWN_AFTER_DEPLOY,
    MAINTENANCE,
    MANAGED_CLUSTER,
    ROLE_ASSIGNMENT,
    SUBNET,
    USER_CREDENTIALS,
    VNET,
    AzureResource,
    planned,
)
from builders.egress import admitted_callers, egress_clusters, egress_ip_name
from config.errors import key_path
from config.models import ClusterConfig, FleetConfig
from constants import PROJECT, TAG_MANAGED_BY, TAG_STACK, resource_group_of

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

RG = "azure-native:resources:ResourceGroup"
PUBLIC_IP = "azure-native:network:PublicIPAddress"
MONITOR_WORKSPACE = "azure-native:monitor:AzureMonitorWorkspace"
DATA_COLLECTION_ENDPOINT = "azure-native:monitor:DataCollectionEndpoint"
DATA_COLLECTION_RULE = "azure-native:monitor:DataCollectionRule"
DATA_COLLECTION_ASSOCIATION = "azure-native:monitor:DataCollectionRuleAssociation"
PROMETHEUS_RULE_GROUP = "azure-native:alertsmanagement:PrometheusRuleGroup"


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


def _cluster_requests(
    fleet: FleetConfig, i: int, cfg: ClusterConfig, stack: str, *, deployer_type: str
) -> list[AzureRequest]:
    """One cluster's resources (builders/azure_cluster.py), each with the config keys it reads."""
    keys = _cluster_keys(fleet, i, cfg)
    return [
        AzureRequest(
            r.token,
            f"{PROJECT}-{cfg.name}-{r.name}",
            planned(r.args),
            keys(r),
        )
        for r in cluster_resources(fleet, cfg, stack, deployer_type=deployer_type)
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


def _monitor_requests(
    fleet: FleetConfig, stack: str, group: str, tags: dict[str, str]
) -> list[AzureRequest]:
    """Managed Prometheus ingestion and alerts (builders/azure_monitor.py), in program order."""
    clusters = amw.ingested(fleet)
    if not clusters:
        return []
    at = key_path("monitoring", "azureMonitor")
    settings = fleet.monitoring.azure_monitor
    out: list[AzureRequest] = []
    workspace_id: str = KNOWN_AFTER_DEPLOY
    if settings.workspace is None:
        inputs = amw.workspace_inputs(fleet, stack, group, tags)
        out.append(AzureRequest(MONITOR_WORKSPACE, f"{PROJECT}-amw", inputs, {"": at}))
    else:
        workspace_id = settings.workspace.resource_id
    for cluster in clusters:
        name = f"{PROJECT}-{cluster.name}"
        endpoint = amw.endpoint_inputs(fleet, cluster, group, tags)
        rule = amw.rule_inputs(fleet, cluster, group, tags, KNOWN_AFTER_DEPLOY, workspace_id)
        link = amw.association_inputs(fleet, cluster, KNOWN_AFTER_DEPLOY, KNOWN_AFTER_DEPLOY)
        out += [
            AzureRequest(DATA_COLLECTION_ENDPOINT, f"{name}-prom-dce", endpoint, {"": at}),
            AzureRequest(DATA_COLLECTION_RULE, f"{name}-prom-dcr", rule, {"": at}),
            AzureRequest(DATA_COLLECTION_ASSOCIATION, f"{name}-prom-dcra", link, {"": at}),
        ]
    rules = amw.rule_group_inputs(fleet, stack, group, tags, workspace_id)
    if rules is not None:
        out.append(
            AzureRequest(PROMETHEUS_RULE_GROUP, f"{PROJECT}-alerts", rules, {"": f"{at}.alerts"})
        )
    return out


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
    tags = {TAG_MANAGED_BY: PROJECT, TAG_STACK: stack, **fleet.tags}
    group = resource_group_of(fleet.resource_group, stack)
    out = [
        AzureRequest(
            RG,
            f"{PROJECT}-rg",
            {
                "resource_group_name": group,
                **({"location": fleet.location} if fleet.location else {}),
                "tags": tags,
            },
            {"": "location", "tags": "tags", "resourceGroupName (URL)": "resourceGroup"},
        )
    ]
    for caller in egress_clusters(fleet):
        i, cfg = next((i, c) for i, c in aks if c.name == caller)
        out.append(
            AzureRequest(
                PUBLIC_IP,
                f"{PROJECT}-{caller}-egress",
                {
                    "public_ip_address_name": egress_ip_name(caller),
                    "resource_group_name": group,
                    "location": cfg.location or fleet.location or "",
                    "sku": {"name": "Standard", "tier": "Regional"},
                    "public_ip_allocation_method": "Static",
                    "public_ip_address_version": "IPv4",
                    "tags": tags,
                },
                {"": egress_at(fleet, cfg), "location": key_path("clusters", i)},
            )
        )
    for i, cluster in aks:
        out += _cluster_requests(fleet, i, cluster, stack, deployer_type=deployer_type)
    out += _monitor_requests(fleet, stack, group, tags)
    settings = fleet.karmada
    if settings is not None and settings.source != "existing":
        host = kb.host_cluster(fleet)
        if kb.internal_address(settings) is None and host.source == "aks":
            label = settings.api_server.dns_label
            inputs: dict[str, Any] = {
                "public_ip_address_name": kb.public_ip_name(host.name),
                "resource_group_name": KNOWN_AFTER_DEPLOY,
                "location": kb.location_of(fleet, host),
                "sku": {"name": "Standard", "tier": "Regional"},
                "public_ip_allocation_method": "Static",
                "public_ip_address_version": "IPv4",
                "tags": tags,
            }
            if label:
                inputs["dns_settings"] = {"domain_name_label": label}
            out.append(
                AzureRequest(PUBLIC_IP, f"{PROJECT}-karmada-ip", inputs, {"": "karmada.apiServer"})
            )
    return out
