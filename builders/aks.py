"""AKS request shapes from config: pool profiles, network, autoscaler, add-ons. Pure data.

The dicts use the azure-native SDK's snake_case TypedDict keys, so components pass them as they
are. Dict form on purpose: the `...Args` classes add defaults to the request (a network profile
Args adds podCidr/serviceCidr/outboundType to what is sent).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from config.models import (
    AccessConfig,
    AutoscalerProfile,
    ClusterConfig,
    PoolConfig,
    SystemPoolConfig,
)
from config.upgrades import MaintenanceWindow, PoolUpgradeSettings, UpgradeSettings
from constants import ACI_ADDON, ACI_DELEGATION
from upstream.aks import (
    AGENTPOOL_LABEL,
    AKS_RBAC_ROLES,
    CRITICAL_ADDONS_TAINT,
    ROLE_AKS_CLUSTER_USER,
    SPOT_LABEL,
    SPOT_TAINT,
)
from upstream.aks_versions import AUTO_UPGRADE_SCHEDULE, NODE_OS_SCHEDULE

ACI_SUBNET = "aci"
NODE_SUBNET = "nodes"


def system_pool_profile(
    pool: SystemPoolConfig,
    version: str,
    subnet_id: Any = None,
    upgrades: UpgradeSettings | None = None,
) -> dict[str, Any]:
    """The inline System pool (the only inline profile: inline User pools break on updates).

    `version` is its control plane's: sent as the pool's orchestratorVersion, so a minor moved in
    config moves the system pool in the same `up` (a control plane upgrade alone leaves it behind
    until AKS's skew rule refuses the next one; upstream.aks_rules `system-pool-version`).
    """
    profile: dict[str, Any] = {
        "name": pool.name,
        "mode": "System",
        "vm_size": pool.vm_size,
        "count": pool.count,
        "os_type": "Linux",
        "os_sku": pool.os_sku,
        "type": "VirtualMachineScaleSets",
        "orchestrator_version": version,
    }
    if pool.autoscaling:
        profile |= {
            "enable_auto_scaling": True,
            "min_count": pool.min_count,
            "max_count": pool.max_count,
        }
    if pool.only_critical_addons:
        profile["node_taints"] = [CRITICAL_ADDONS_TAINT]
    if pool.max_pods is not None:
        profile["max_pods"] = pool.max_pods
    if pool.zones:
        profile["availability_zones"] = list(pool.zones)
    if pool.os_disk_size_gb is not None:
        profile["os_disk_size_gb"] = pool.os_disk_size_gb
    if subnet_id is not None:
        profile["vnet_subnet_id"] = subnet_id
    settings = pool_upgrade_settings(sent_upgrade_settings(pool, upgrades))
    if settings:
        profile["upgrade_settings"] = settings
    return profile


def user_pool_args(
    pool: PoolConfig, version: str, upgrades: UpgradeSettings | None = None
) -> dict[str, Any]:
    """AgentPool arguments of a user pool: always autoscaled between minCount and maxCount.

    `version` is the pool's orchestratorVersion (FleetConfig.pool_version_of: a pool may lag its
    control plane, within AKS's skew: checks.upgrades).
    """
    args: dict[str, Any] = {
        "agent_pool_name": pool.name,
        "mode": "User",
        "vm_size": pool.vm_size,
        "os_type": "Linux",
        "os_sku": pool.os_sku,
        "type": "VirtualMachineScaleSets",
        "orchestrator_version": version,
        "enable_auto_scaling": True,
        "min_count": pool.min_count,
        "max_count": pool.max_count,
        # AKS requires a count on create; the autoscaler owns it after (ignore_changes=["count"]).
        "count": pool.initial_count,
        # What AKS stamps on a Spot pool itself is sent back too: a request without it is a
        # change of nodeTaints, which AKS refuses on a later update (PropertyChangeNotAllowed).
        "node_labels": pool_request_labels(pool),
        "node_taints": pool_node_taints(pool),
    }
    if pool.max_pods is not None:
        args["max_pods"] = pool.max_pods
    if pool.zones:
        args["availability_zones"] = list(pool.zones)
    if pool.os_disk_size_gb is not None:
        args["os_disk_size_gb"] = pool.os_disk_size_gb
    settings = pool_upgrade_settings(sent_upgrade_settings(pool, upgrades))
    if settings:
        args["upgrade_settings"] = settings
    if pool.priority == "Spot":
        args |= {
            "scale_set_priority": "Spot",
            "scale_set_eviction_policy": "Delete",
            "spot_max_price": -1.0 if pool.spot_max_price is None else pool.spot_max_price,
        }
    return args


def pool_request_labels(pool: PoolConfig) -> dict[str, str]:
    """The AgentPool's nodeLabels: config labels plus AKS's spot label (not `agentpool`)."""
    labels = dict(pool.labels)
    if pool.priority == "Spot":
        labels[SPOT_LABEL[0]] = SPOT_LABEL[1]
    return labels


def pool_node_labels(pool: PoolConfig) -> dict[str, str]:
    """Labels every node of the pool carries: config labels plus what AKS stamps."""
    return {AGENTPOOL_LABEL: pool.name, **pool_request_labels(pool)}


def pool_node_taints(pool: PoolConfig) -> list[str]:
    """Taints every node of the pool carries: config taints plus AKS's spot taint."""
    return [*pool.taints, *([SPOT_TAINT] if pool.priority == "Spot" else [])]


def network_profile(cluster: ClusterConfig, outbound_ip_id: Any = None) -> dict[str, Any]:
    """The cluster's network; `outbound_ip_id`: its static egress Public IP (builders.egress)."""
    n = cluster.network
    profile: dict[str, Any] = {
        "network_plugin": "azure",
        "service_cidr": str(n.service_cidr),
        "dns_service_ip": str(n.dns_service_ip),
        "outbound_type": n.outbound_type,
        "load_balancer_sku": "standard",
    }
    if cluster.network_mode == "overlay":
        profile |= {"network_plugin_mode": "overlay", "pod_cidr": str(n.pod_cidr)}
    if n.network_policy != "none":
        profile["network_policy"] = n.network_policy
    if n.network_dataplane != "azure":  # AKS's default: unset keeps today's requests unchanged
        profile["network_dataplane"] = n.network_dataplane
    if outbound_ip_id is not None:
        profile["load_balancer_profile"] = {
            "outbound_ips": {"public_ips": [{"id": outbound_ip_id}]}
        }
    return profile


def aad_profile(access: AccessConfig) -> dict[str, Any] | None:
    """AKS-managed Entra ID (the legacy client/server apps are never used)."""
    if not access.entra_id:
        return None
    profile: dict[str, Any] = {"managed": True, "enable_azure_rbac": access.azure_rbac}
    if access.admin_group_object_ids:
        profile["admin_group_object_ids"] = list(access.admin_group_object_ids)
    return profile


def api_server_access_profile(
    access: AccessConfig, admitted: Sequence[Any] = ()
) -> dict[str, Any] | None:
    """The configured ranges, then `admitted`: the fleet callers' egress /32s (builders.egress)."""
    if not access.authorized_ip_ranges:
        return None
    return {"authorized_ip_ranges": [str(r) for r in access.authorized_ip_ranges] + list(admitted)}


@dataclass(frozen=True, slots=True)
class RoleGrant:
    """One Azure role assignment on a cluster (or one of its namespaces) for a principal."""

    key: str
    role_definition: str
    principal_id: str | None  # None: the identity running `pulumi up`
    principal_type: str
    namespace: str | None = None


def access_grants(access: AccessConfig, deployer_type: str) -> list[RoleGrant]:
    """The AKS RBAC roles the deploying identity and the named groups get (Azure RBAC only).

    `deployer_type`: the deploying identity's principal type (config.login), sent as is: ARM
    refuses a mismatch, and azure-native would send `User` for none.
    """
    if not (access.entra_id and access.azure_rbac):
        return []
    grants: list[RoleGrant] = []
    if access.deploy_identity_role != "none":
        role = AKS_RBAC_ROLES[access.deploy_identity_role]
        grants.append(RoleGrant("deployer", role, None, deployer_type))
    users: set[str] = set()
    for i, group in enumerate(access.groups):
        role = AKS_RBAC_ROLES[group.role]
        grants.append(RoleGrant(f"group{i}", role, group.object_id, "Group", group.namespace))
        # Reading the (kubelogin) kubeconfig is an ARM action of its own: once per group, as
        # Azure refuses a second identical assignment (RoleAssignmentExists).
        if group.object_id.lower() not in users:
            users.add(group.object_id.lower())
            grants.append(
                RoleGrant(f"group{i}-user", ROLE_AKS_CLUSTER_USER, group.object_id, "Group")
            )
    return grants


def autoscaler_profile(profile: AutoscalerProfile) -> dict[str, Any]:
    """AKS wants strings for almost every autoscaler setting (`"true"`, `"0.5"`)."""
    out: dict[str, Any] = {}
    for field, value in profile.model_dump(exclude_none=True).items():
        if isinstance(value, bool):
            out[field] = "true" if value else "false"
        elif field == "expander":
            out[field] = value
        else:
            out[field] = str(value)
    return out


def addon_profiles(cluster: ClusterConfig) -> dict[str, Any]:
    if not cluster.virtual_nodes.enabled:
        return {}
    return {ACI_ADDON: {"enabled": True, "config": {"SubnetName": ACI_SUBNET}}}


def needs_own_identity(cluster: ClusterConfig, *, egress: bool) -> bool:
    """Whether the control plane gets a user-assigned identity, granted before the create.

    In the program's own VNet it joins subnets, and with a static egress IP (builders.egress) it
    joins that IP to its load balancer: both need rights from its first minute, and a
    system-assigned identity exists only after the create (upstream.aks_rules
    `outbound-ip-identity`).
    """
    return cluster.network_mode == "nodeSubnet" or egress


def subnets(cluster: ClusterConfig) -> list[dict[str, Any]]:
    """Subnets of the cluster VNet (node subnet mode only)."""
    n = cluster.network
    out: list[dict[str, Any]] = [{"name": NODE_SUBNET, "address_prefix": str(n.node_subnet_cidr)}]
    if cluster.virtual_nodes.enabled:
        out.append(
            {
                "name": ACI_SUBNET,
                "address_prefix": str(n.aci_subnet_cidr),
                "delegations": [
                    {
                        "name": "aci",
                        "service_name": ACI_DELEGATION,
                    }
                ],
            }
        )
    return out


def sent_upgrade_settings(
    pool: PoolConfig | SystemPoolConfig, upgrades: UpgradeSettings | None = None
) -> PoolUpgradeSettings:
    """A pool's upgrade settings as sent: its own, else its cluster's `upgrades.nodePools`.

    On a Spot pool no max surge (AKS refuses one: upstream.aks_rules `spot-max-surge`; one
    written on the pool itself is an error in checks.aks_rules). Under `batchPods: protect` an
    unset `undrainableNodeBehavior` is `Cordon`, except on a Spot pool (Cordon puts a surge node
    in a blocked node's place, and a Spot pool has none): a node whose batch pods the
    PodDisruptionBudget keeps is cordoned, so no new pod starts on its old image, and the
    upgrade goes on with the next one (docs/upgrades.md, "Batch pods through node upgrades").
    """
    up = upgrades or UpgradeSettings()
    settings = pool.upgrade_settings or up.node_pools
    spot = isinstance(pool, PoolConfig) and pool.priority == "Spot"
    update: dict[str, Any] = {}
    if spot and settings.max_surge is not None:
        update["max_surge"] = None
    if up.batch_pods == "protect" and settings.undrainable_node_behavior is None and not spot:
        update["undrainable_node_behavior"] = "Cordon"
    return settings.model_copy(update=update) if update else settings


def pool_upgrade_settings(settings: PoolUpgradeSettings) -> dict[str, Any]:
    """AgentPool `upgradeSettings`; empty keeps AKS's defaults (10% surge, 30 min drain)."""
    out: dict[str, Any] = {}
    if settings.max_surge is not None:
        out["max_surge"] = settings.max_surge
    if settings.max_unavailable is not None:
        out["max_unavailable"] = settings.max_unavailable
    if settings.drain_timeout_minutes is not None:
        out["drain_timeout_in_minutes"] = settings.drain_timeout_minutes
    if settings.node_soak_minutes is not None:
        out["node_soak_duration_in_minutes"] = settings.node_soak_minutes
    if settings.undrainable_node_behavior is not None:
        out["undrainable_node_behavior"] = settings.undrainable_node_behavior
    return out


def auto_upgrade_profile(upgrades: UpgradeSettings) -> dict[str, Any]:
    """ManagedCluster `autoUpgradeProfile`: both channels, always sent (the plan shows them)."""
    return {
        "upgrade_channel": upgrades.channel,
        "node_os_upgrade_channel": upgrades.node_os_channel,
    }


def maintenance_window(window: MaintenanceWindow) -> dict[str, Any]:
    """MaintenanceConfiguration `maintenanceWindow` in the SDK's TypedDict shape."""
    s = window.schedule
    schedule: dict[str, Any] = {}
    if s.daily is not None:
        schedule["daily"] = {"interval_days": s.daily.interval_days}
    if s.weekly is not None:
        schedule["weekly"] = {
            "day_of_week": s.weekly.day_of_week,
            "interval_weeks": s.weekly.interval_weeks,
        }
    if s.absolute_monthly is not None:
        schedule["absolute_monthly"] = {
            "day_of_month": s.absolute_monthly.day_of_month,
            "interval_months": s.absolute_monthly.interval_months,
        }
    if s.relative_monthly is not None:
        schedule["relative_monthly"] = {
            "day_of_week": s.relative_monthly.day_of_week,
            "week_index": s.relative_monthly.week_index,
            "interval_months": s.relative_monthly.interval_months,
        }
    out: dict[str, Any] = {
        "schedule": schedule,
        "duration_hours": window.duration_hours,
        "start_time": window.start_time,
        "utc_offset": window.utc_offset,
    }
    if window.not_allowed_dates:
        out["not_allowed_dates"] = [
            {"start": d.start, "end": d.end} for d in window.not_allowed_dates
        ]
    return out


def maintenance_configurations(upgrades: UpgradeSettings) -> dict[str, dict[str, Any]]:
    """AKS's fixed configuration name -> its window, for the windows the config sets."""
    out: dict[str, dict[str, Any]] = {}
    if upgrades.window is not None:
        out[AUTO_UPGRADE_SCHEDULE] = maintenance_window(upgrades.window)
    if upgrades.node_os_window is not None:
        out[NODE_OS_SCHEDULE] = maintenance_window(upgrades.node_os_window)
    return out
