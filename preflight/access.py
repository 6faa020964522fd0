"""Who the stack gives Azure access: every role assignment (scope, role, principal), as data.

The same grants the components make (`builders.aks.access_grants`, the VNet grants of
`components.aks`), plus AKS admin groups (cluster-admin through Kubernetes RBAC). The plan prints
them; the plan diff flags a new grant or a wider role as widened access.
"""

from __future__ import annotations

from typing import Any

from builders.aks import access_grants
from config.login import DeployerLogin
from config.models import FleetConfig
from config.resolve import access_of
from preflight.sources import AZURE_ACCESS
from upstream.aks import (
    AKS_RBAC_ROLES,
    ROLE_AKS_CLUSTER_USER,
    ROLE_CONTRIBUTOR,
    ROLE_NAMES,
    ROLE_NETWORK_CONTRIBUTOR,
)

DEPLOYER = "the identity running pulumi up"
ADMIN_GROUP_ROLE = "cluster-admin (Kubernetes RBAC, AKS aadProfile.adminGroupObjectIDs)"
# How far a role reaches on its scope: a principal gaining a role above all it held widens access.
ROLE_RANK = {
    ROLE_NAMES[ROLE_AKS_CLUSTER_USER]: 1,
    ROLE_NAMES[AKS_RBAC_ROLES["reader"]]: 2,
    ROLE_NAMES[AKS_RBAC_ROLES["writer"]]: 3,
    ROLE_NAMES[AKS_RBAC_ROLES["admin"]]: 4,
    ROLE_NAMES[AKS_RBAC_ROLES["clusterAdmin"]]: 5,
    ADMIN_GROUP_ROLE: 5,
    ROLE_NAMES[ROLE_NETWORK_CONTRIBUTOR]: 5,
    ROLE_NAMES[ROLE_CONTRIBUTOR]: 6,
}


def widens(old: list[str], new: list[str]) -> bool:
    """Whether `new` holds a role reaching further than every role of `old` (unknown: yes)."""
    top = max((ROLE_RANK.get(r, 99) for r in old), default=0)
    return any(ROLE_RANK.get(r, 99) > top for r in new if r not in old)


def azure_access(fleet: FleetConfig, deployer: DeployerLogin | None = None) -> list[dict[str, Any]]:
    """One row per grant the stack makes: cluster, scope, role, principal, config key.

    `deployer`: the login `up` would use here (config.login), whose principal type the deployer's
    grants carry; None (the plan diff) names the deployer without one.
    """
    deployer_type = deployer.principal_type if deployer is not None else "User"
    who = DEPLOYER if deployer is None else f"{DEPLOYER} ({deployer.principal_type})"
    rows: list[dict[str, Any]] = []
    for cluster in fleet.clusters:
        if cluster.source != "aks":
            continue
        access = access_of(fleet, cluster)
        # Named as the user wrote it (`clusters[worker-1].access`), like error paths.
        at = f"clusters[{cluster.name}]"
        key = f"{at}.access" if cluster.access is not None else "access"
        for grant in access_grants(access, deployer_type):
            scope = f"cluster {cluster.name}"
            if grant.namespace is not None:
                scope += f", namespace {grant.namespace}"
            principal = (
                who
                if grant.principal_id is None
                else f"{grant.principal_type} {grant.principal_id}"
            )
            where = "deployIdentityRole" if grant.principal_id is None else "groups"
            role = ROLE_NAMES[grant.role_definition]
            rows.append(_row(cluster.name, scope, role, principal, f"{key}.{where}"))
        for group in access.admin_group_object_ids:
            rows.append(
                _row(
                    cluster.name,
                    f"cluster {cluster.name}",
                    ADMIN_GROUP_ROLE,
                    f"Group {group}",
                    f"{key}.adminGroupObjectIds",
                )
            )
        if cluster.network_mode == "nodeSubnet":
            vnet = f"VNet of cluster {cluster.name}"
            rows.append(
                _row(
                    cluster.name,
                    vnet,
                    ROLE_NAMES[ROLE_NETWORK_CONTRIBUTOR],
                    f"control-plane identity of {cluster.name}",
                    f"{at}.network",
                )
            )
            if cluster.virtual_nodes.enabled:
                rows.append(
                    _row(
                        cluster.name,
                        vnet,
                        ROLE_NAMES[ROLE_CONTRIBUTOR],
                        f"ACI connector identity of {cluster.name}",
                        f"{at}.virtualNodes",
                    )
                )
    return rows


def _row(cluster: str, scope: str, role: str, principal: str, key: str) -> dict[str, Any]:
    return {"cluster": cluster, "scope": scope, "role": role, "principal": principal, "key": key}


def access_section(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """`azure_access` as a plan table."""
    return {
        "kind": AZURE_ACCESS,
        "title": "Azure access this stack grants (role assignments and AKS admin groups)",
        "columns": ["scope", "role", "principal", "config key"],
        "rows": [[r["scope"], r["role"], r["principal"], r["key"]] for r in rows],
    }
