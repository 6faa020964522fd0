"""Every Azure resource and invoke a stack sends, as azure-native inputs: what preflight checks.

The components register the same inputs (components/aks.py, fleet.py, karmada.py); the test
tests/test_azure_api.py holds the two equal for every committed stack. Values Azure computes at
deploy time (ids, principal ids) are `KNOWN_AFTER_DEPLOY` here; the check reads no rule on them.
Each request says which config key sets which of its properties, so a finding names the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from builders import aks as shapes
from builders import azure_monitor as amw
from builders import karmada as kb
from builders.egress import admitted_callers, egress_clusters, egress_ip_name
from builders.monitoring import azure_monitor_profile
from config.errors import key_path
from config.models import ClusterConfig, FleetConfig
from config.resolve import access_of
from constants import PROJECT, TAG_CLUSTER, TAG_MANAGED_BY, TAG_STACK, resource_group_of
from upstream.aks import ROLE_CONTRIBUTOR, ROLE_NETWORK_CONTRIBUTOR

KNOWN_AFTER_DEPLOY = "(known after deploy)"
# The subscription of role definition ids: the mocks' `getClientConfig` answers this one.
SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"

RG = "azure-native:resources:ResourceGroup"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"
MAINTENANCE = "azure-native:containerservice:MaintenanceConfiguration"
USER_CREDENTIALS = "azure-native:containerservice:listManagedClusterUserCredentials"
VNET = "azure-native:network:VirtualNetwork"
SUBNET = "azure-native:network:Subnet"
PUBLIC_IP = "azure-native:network:PublicIPAddress"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
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


def role_definition_id(definition: str) -> str:
    return (
        f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/"
        f"{definition}"
    )


def _cluster_requests(
    fleet: FleetConfig,
    i: int,
    cfg: ClusterConfig,
    group: str,
    tags: dict[str, str],
    *,
    deployer_type: str,
) -> list[AzureRequest]:
    at = key_path("clusters", i)
    name = f"{PROJECT}-{cfg.name}"
    location = cfg.location or fleet.location or ""
    tags = {**tags, **cfg.tags, TAG_CLUSTER: cfg.name}
    tags_at = {"tags": key_path("clusters", i, "tags"), "location": key_path("clusters", i)}
    access = access_of(fleet, cfg)
    access_at = key_path("clusters", i, "access") if cfg.access else "access"
    out: list[AzureRequest] = []
    node_subnet: str | None = None
    identity: dict[str, Any] = {"type": "SystemAssigned"}
    if cfg.network_mode == "nodeSubnet":
        net_at = key_path("clusters", i, "network")
        vnet_name = f"{name}-vnet"
        out.append(
            AzureRequest(
                VNET,
                vnet_name,
                {
                    "resource_group_name": group,
                    "location": location,
                    "address_space": {"address_prefixes": [str(cfg.network.vnet_cidr)]},
                    "tags": tags,
                },
                {"": net_at, **tags_at},
            )
        )
        for spec in shapes.subnets(cfg):
            out.append(
                AzureRequest(
                    SUBNET,
                    f"{name}-{spec['name']}-subnet",
                    {
                        "resource_group_name": group,
                        "virtual_network_name": KNOWN_AFTER_DEPLOY,
                        "subnet_name": spec["name"],
                        "address_prefix": spec["address_prefix"],
                        **({"delegations": spec["delegations"]} if "delegations" in spec else {}),
                    },
                    {"": net_at},
                )
            )
        node_subnet = KNOWN_AFTER_DEPLOY
    egress = cfg.name in egress_clusters(fleet)
    if shapes.needs_own_identity(cfg, egress=egress):
        out.append(
            AzureRequest(
                IDENTITY,
                f"{name}-identity",
                {
                    "resource_name": f"{cfg.name}-control-plane",
                    "resource_group_name": group,
                    "location": location,
                    "tags": tags,
                },
                {"": at, **tags_at},
            )
        )
        identity = {"type": "UserAssigned", "user_assigned_identities": [KNOWN_AFTER_DEPLOY]}
    if cfg.network_mode == "nodeSubnet":
        out.append(
            AzureRequest(
                ROLE_ASSIGNMENT,
                f"{name}-vnet-network",
                {
                    "principal_id": KNOWN_AFTER_DEPLOY,
                    "principal_type": "ServicePrincipal",
                    "role_definition_id": role_definition_id(ROLE_NETWORK_CONTRIBUTOR),
                    "scope": KNOWN_AFTER_DEPLOY,
                },
                {"": key_path("clusters", i, "network")},
            )
        )
    if egress:
        # Join rights on its egress Public IP for the control-plane identity, before the cluster
        # (components/aks.py; upstream.aks_rules `outbound-ip-identity`).
        out.append(
            AzureRequest(
                ROLE_ASSIGNMENT,
                f"{name}-egress-network",
                {
                    "principal_id": KNOWN_AFTER_DEPLOY,
                    "principal_type": "ServicePrincipal",
                    "role_definition_id": role_definition_id(ROLE_NETWORK_CONTRIBUTOR),
                    "scope": KNOWN_AFTER_DEPLOY,
                },
                {"": egress_at(fleet, cfg)},
            )
        )
    upgrades = fleet.upgrades_of(cfg)
    upgrades_at = key_path("clusters", i, "upgrades") if cfg.upgrades else "upgrades"
    system = shapes.system_pool_profile(
        cfg.system_pool, fleet.version_of(cfg), node_subnet, upgrades
    )
    cluster: dict[str, Any] = {
        "resource_name": cfg.name,
        "resource_group_name": group,
        "location": location,
        "dns_prefix": cfg.dns_prefix or cfg.name,
        "kubernetes_version": fleet.version_of(cfg),
        "identity": identity,
        "sku": {"name": "Base", "tier": cfg.sku_tier},
        "enable_rbac": True,
        "support_plan": cfg.support_plan,
        "auto_upgrade_profile": shapes.auto_upgrade_profile(upgrades),
        "aad_profile": shapes.aad_profile(access),
        "disable_local_accounts": not access.local_accounts,
        "api_server_access_profile": shapes.api_server_access_profile(
            access, [KNOWN_AFTER_DEPLOY for _ in admitted_callers(fleet, cfg)]
        ),
        "agent_pool_profiles": [system],
        "network_profile": shapes.network_profile(
            cfg, KNOWN_AFTER_DEPLOY if cfg.name in egress_clusters(fleet) else None
        ),
        "auto_scaler_profile": shapes.autoscaler_profile(cfg.autoscaler_profile) or None,
        "addon_profiles": shapes.addon_profiles(cfg) or None,
        "oidc_issuer_profile": {"enabled": True},
        "security_profile": {"workload_identity": {"enabled": True}},
        "azure_monitor_profile": azure_monitor_profile(fleet),
        "tags": tags,
    }
    out.append(
        AzureRequest(
            MANAGED_CLUSTER,
            f"{name}-aks",
            {k: v for k, v in cluster.items() if v is not None},
            {
                "": at,
                **tags_at,
                "resourceName (URL)": key_path("clusters", i, "name"),
                "properties.dnsPrefix": key_path("clusters", i, "dnsPrefix"),
                "properties.kubernetesVersion": key_path("clusters", i, "kubernetesVersion"),
                "sku": key_path("clusters", i, "skuTier"),
                "properties.agentPoolProfiles": key_path("clusters", i, "systemPool"),
                **_pool_keys(
                    "properties.agentPoolProfiles[0].", key_path("clusters", i, "systemPool")
                ),
                "properties.networkProfile": key_path("clusters", i, "network"),
                "properties.autoScalerProfile": key_path("clusters", i, "autoscalerProfile"),
                "properties.addonProfiles": key_path("clusters", i, "virtualNodes"),
                "properties.aadProfile": access_at,
                "properties.autoUpgradeProfile": upgrades_at,
                "properties.supportPlan": key_path("clusters", i, "supportPlan"),
                "properties.apiServerAccessProfile": access_at,
                "properties.azureMonitorProfile": "monitoring.azureMonitor",
                # The static egress others admit (builders.egress): their ranges ask for it.
                "properties.networkProfile.loadBalancerProfile": egress_at(fleet, cfg),
            },
        )
    )
    for j, pool in enumerate(cfg.pools):
        pool_at = key_path("clusters", i, "pools", j)
        inputs = {
            "resource_group_name": group,
            "resource_name": cfg.name,
            **({"vnet_subnet_id": node_subnet} if node_subnet else {}),
            "tags": tags,
            **shapes.user_pool_args(pool, fleet.pool_version_of(cfg, pool), upgrades),
        }
        out.append(
            AzureRequest(
                AGENT_POOL,
                f"{name}-{pool.name}",
                inputs,
                {
                    "": pool_at,
                    "tags": tags_at["tags"],
                    "agentPoolName (URL)": f"{pool_at}.name",
                    **_pool_keys("properties.", pool_at),
                },
            )
        )
    for config_name, window in shapes.maintenance_configurations(upgrades).items():
        out.append(
            AzureRequest(
                MAINTENANCE,
                f"{name}-{config_name}",
                {
                    "config_name": config_name,
                    "resource_group_name": group,
                    "resource_name": cfg.name,
                    "maintenance_window": window,
                },
                {"": upgrades_at},
            )
        )
    if cfg.network_mode == "nodeSubnet" and cfg.virtual_nodes.enabled:
        out.append(
            AzureRequest(
                ROLE_ASSIGNMENT,
                f"{name}-aci-network",
                {
                    "principal_id": KNOWN_AFTER_DEPLOY,
                    "principal_type": "ServicePrincipal",
                    "role_definition_id": role_definition_id(ROLE_CONTRIBUTOR),
                    "scope": KNOWN_AFTER_DEPLOY,
                },
                {"": key_path("clusters", i, "virtualNodes")},
            )
        )
    for grant in shapes.access_grants(access, deployer_type):
        inputs = {
            "principal_id": grant.principal_id or KNOWN_AFTER_DEPLOY,
            "role_definition_id": role_definition_id(grant.role_definition),
            "scope": KNOWN_AFTER_DEPLOY,
            "principal_type": grant.principal_type,
        }
        out.append(
            AzureRequest(ROLE_ASSIGNMENT, f"{name}-{grant.key}-rbac", inputs, {"": access_at})
        )
    credentials = {"resource_group_name": group, "resource_name": cfg.name}
    if access.entra_id:
        credentials["format"] = "exec"
    out.append(AzureRequest(USER_CREDENTIALS, f"{name}-credentials", credentials, {"": at}))
    return out


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
        out += _cluster_requests(fleet, i, cluster, group, tags, deployer_type=deployer_type)
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
