"""One AKS cluster's Azure resources, in the order the program registers them: the one list.

components/aks.py registers this list as it is (a loop, components/azure.py: no second spelling
of any property), and preflight (builders/azure.py, checks/azure_api.py) checks the same list
against Azure's models. Its requests and references are builders/azure_resource.py's.
"""

from __future__ import annotations

from typing import Any

from builders import aks as shapes
from builders.azure_resource import (
    AGENT_POOL,
    IDENTITY,
    MAINTENANCE,
    MANAGED_CLUSTER,
    ROLE_ASSIGNMENT,
    SUBNET,
    USER_CREDENTIALS,
    VALUE,
    VNET,
    AzureResource,
    Ref,
    fleet_tags,
    resource_group,
)
from builders.egress import admitted_callers, egress_clusters
from builders.monitoring import azure_monitor_profile
from config.models import ClusterConfig, FleetConfig
from config.resolve import access_of
from constants import TAG_CLUSTER
from upstream.aks import ROLE_CONTRIBUTOR, ROLE_NETWORK_CONTRIBUTOR

# The subscription of role definition ids: the mocks' `getClientConfig` answers this one.
SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"

# Values made outside one cluster's list, by `Ref.of` (the component maps each to its Output;
# the resource group's name is builders.azure_resource.RESOURCE_GROUP_NAME).
EGRESS_IP_ID = "@egress-ip-id"  # the cluster's own static egress Public IP (builders.egress)
SUBSCRIPTION_ID = "@subscription-id"  # of the deploying identity (getClientConfig)
DEPLOYER_OBJECT_ID = "@deployer-object-id"  # the deploying identity (getClientConfig)


def admitted_range(caller: str) -> str:
    """The `Ref.of` of a fleet caller's egress /32 that this cluster's API server admits."""
    return f"@admitted-range/{caller}"


def role_definition(definition: str) -> Ref:
    """A built-in role's id in the deploying subscription."""
    prefix = "/subscriptions/"
    suffix = f"/providers/Microsoft.Authorization/roleDefinitions/{definition}"
    return Ref(SUBSCRIPTION_ID, VALUE, prefix, suffix, planned=f"{prefix}{SUBSCRIPTION}{suffix}")


def _identity_grant(name: str, principal: Ref, role: str, scope: Ref) -> AzureResource:
    """A built-in role for a managed identity (a service principal to Azure RBAC) on one scope."""
    args = {
        "principal_id": principal,
        "principal_type": "ServicePrincipal",
        "role_definition_id": role_definition(role),
        "scope": scope,
    }
    return AzureResource(ROLE_ASSIGNMENT, name, args)


def cluster_tags(fleet: FleetConfig, cfg: ClusterConfig, stack: str) -> dict[str, str]:
    """The tags of a cluster's resources: the fleet's, the cluster's, and its name."""
    return {**fleet_tags(fleet, stack), **cfg.tags, TAG_CLUSTER: cfg.name}


def cluster_resources(
    fleet: FleetConfig, cfg: ClusterConfig, stack: str, *, deployer_type: str = "User"
) -> list[AzureResource]:
    """Every Azure resource of one AKS cluster and its credential invoke, in program order.

    `deployer_type`: the deploying identity's principal type (config.login.resolve).
    """
    group = resource_group(fleet, stack)
    location = cfg.location or fleet.location or ""
    tags = cluster_tags(fleet, cfg, stack)
    access = access_of(fleet, cfg)
    out: list[AzureResource] = []
    node_subnet: Ref | None = None
    identity: dict[str, Any] = {"type": "SystemAssigned"}
    cluster_after: list[str] = []
    own_vnet = cfg.network_mode == "nodeSubnet"
    if own_vnet:
        vnet = {
            "resource_group_name": group,
            "location": location,
            "address_space": {"address_prefixes": [str(cfg.network.vnet_cidr)]},
            "tags": tags,
        }
        out.append(AzureResource(VNET, "vnet", vnet, ignore_changes=("subnets",)))
        made: list[str] = []
        for spec in shapes.subnets(cfg):
            subnet = {
                "resource_group_name": group,
                "virtual_network_name": Ref("vnet", "name"),
                "subnet_name": spec["name"],
                "address_prefix": spec["address_prefix"],
                **({"delegations": spec["delegations"]} if "delegations" in spec else {}),
            }
            # One at a time: parallel subnet PUTs in one VNet fail with
            # AnotherOperationInProgress (azure-native#699).
            name = f"{spec['name']}-subnet"
            out.append(AzureResource(SUBNET, name, subnet, depends_on=tuple(made[-1:])))
            made.append(name)
        node_subnet = Ref(f"{shapes.NODE_SUBNET}-subnet")
    egress = cfg.name in egress_clusters(fleet)
    if shapes.needs_own_identity(cfg, egress=egress):
        # In a VNet it did not make, or with an outbound IP outside its node resource group,
        # the control plane needs rights on them from its first minute: a user-assigned
        # identity, granted first (a system-assigned one exists only after the create).
        args = {
            "resource_name": f"{cfg.name}-control-plane",
            "resource_group_name": group,
            "location": location,
            "tags": tags,
        }
        out.append(AzureResource(IDENTITY, "identity", args))
        identity = {"type": "UserAssigned", "user_assigned_identities": [Ref("identity")]}
        principal = Ref("identity", "principal_id")
        if own_vnet:
            scope = Ref("vnet")
            out.append(_identity_grant("vnet-network", principal, ROLE_NETWORK_CONTRIBUTOR, scope))
            cluster_after.append("vnet-network")
        if egress:
            # The cloud provider joins the outbound Public IP to the load balancer at create and
            # whenever it reconciles it: outside the node resource group, the cluster identity
            # needs join rights on that IP first (Azure/AKS#1945, LinkedAuthorizationFailed).
            ip = Ref(EGRESS_IP_ID, VALUE)
            out.append(_identity_grant("egress-network", principal, ROLE_NETWORK_CONTRIBUTOR, ip))
            cluster_after.append("egress-network")

    upgrades = fleet.upgrades_of(cfg)
    version = fleet.version_of(cfg)
    admitted = [Ref(admitted_range(c), VALUE) for c in admitted_callers(fleet, cfg)]
    cluster: dict[str, Any] = {
        "resource_name": cfg.name,
        "resource_group_name": group,
        "location": location,
        "dns_prefix": cfg.dns_prefix or cfg.name,
        "kubernetes_version": version,
        "identity": identity,
        "sku": {"name": "Base", "tier": cfg.sku_tier},
        "support_plan": cfg.support_plan,
        "auto_upgrade_profile": shapes.auto_upgrade_profile(upgrades),
        "enable_rbac": True,
        "aad_profile": shapes.aad_profile(access),
        "disable_local_accounts": not access.local_accounts,
        "api_server_access_profile": shapes.api_server_access_profile(access, admitted),
        "agent_pool_profiles": [
            shapes.system_pool_profile(cfg.system_pool, version, node_subnet, upgrades)
        ],
        "network_profile": shapes.network_profile(
            cfg, Ref(EGRESS_IP_ID, VALUE) if egress else None
        ),
        "auto_scaler_profile": shapes.autoscaler_profile(cfg.autoscaler_profile) or None,
        "addon_profiles": shapes.addon_profiles(cfg) or None,
        "oidc_issuer_profile": {"enabled": True},
        "security_profile": {"workload_identity": {"enabled": True}},
        "azure_monitor_profile": azure_monitor_profile(fleet),
        "tags": tags,
    }
    out.append(
        AzureResource(
            MANAGED_CLUSTER,
            "aks",
            {k: v for k, v in cluster.items() if v is not None},
            depends_on=tuple(cluster_after),
            ignore_changes=("agentPoolProfiles[0].count",) if cfg.system_pool.autoscaling else (),
        )
    )
    # Every request after the cluster names it by its output: created after it.
    cluster_name = Ref("aks", "name", planned=cfg.name)
    for pool in cfg.pools:
        pool_args = {
            "resource_group_name": group,
            "resource_name": cluster_name,
            **({"vnet_subnet_id": node_subnet} if node_subnet is not None else {}),
            "tags": tags,
            **shapes.user_pool_args(pool, fleet.pool_version_of(cfg, pool), upgrades),
        }
        # The autoscaler owns the node count once the pool exists.
        out.append(AzureResource(AGENT_POOL, pool.name, pool_args, ignore_changes=("count",)))
    # Planned maintenance: when the channels may act (AKS's fixed configuration names).
    for config_name, window in shapes.maintenance_configurations(upgrades).items():
        maintenance = {
            "config_name": config_name,
            "resource_group_name": group,
            "resource_name": cluster_name,
            "maintenance_window": window,
        }
        out.append(AzureResource(MAINTENANCE, config_name, maintenance))
    if own_vnet and cfg.virtual_nodes.enabled:
        # As `az aks enable-addons --addons virtual-node` does: Contributor on the VNet for
        # the connector's identity (it creates container groups and joins the ACI subnet).
        connector = Ref("aks", "aci_object_id")
        out.append(_identity_grant("aci-network", connector, ROLE_CONTRIBUTOR, Ref("vnet")))
    # Azure RBAC: the deploying identity and the configured groups (builders.aks).
    for grant in shapes.access_grants(access, deployer_type):
        suffix = "" if grant.namespace is None else f"/namespaces/{grant.namespace}"
        rbac = {
            "principal_id": grant.principal_id or Ref(DEPLOYER_OBJECT_ID, VALUE),
            "principal_type": grant.principal_type,
            "role_definition_id": role_definition(grant.role_definition),
            "scope": Ref("aks", suffix=suffix),
        }
        out.append(AzureResource(ROLE_ASSIGNMENT, f"{grant.key}-rbac", rbac))
    # People get AKS's exec kubeconfig with Entra ID (no credential in it), else a client
    # certificate (local accounts); components/aks.py reads it through this invoke.
    credentials: dict[str, Any] = {"resource_group_name": group, "resource_name": cluster_name}
    if access.entra_id:
        credentials["format"] = "exec"
    out.append(AzureResource(USER_CREDENTIALS, "credentials", credentials))
    return out
