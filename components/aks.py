"""AksCluster: one AKS cluster, its user pools, optional virtual nodes, and a provider for it."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import authorization, containerservice, network

from builders import aks as shapes
from config.models import ClusterConfig
from constants import KUBERNETES_PROVIDER_VERSION, ROLE_NETWORK_CONTRIBUTOR, TYPE_PREFIX


@dataclass(frozen=True, kw_only=True)
class AksClusterArgs:
    """What one cluster needs from the fleet: its config and where it goes."""

    cluster: ClusterConfig
    resource_group_name: pulumi.Input[str]
    location: str
    kubernetes_version: str
    tags: dict[str, str] = field(default_factory=dict[str, str])


def _decode_first(kubeconfigs: Any) -> str:
    return base64.b64decode(kubeconfigs[0].value).decode()


class AksCluster(pulumi.ComponentResource):
    """A ManagedCluster (system pool inline), one AgentPool per user pool, and a k8s Provider."""

    cluster_name: pulumi.Output[str]
    fqdn: pulumi.Output[str]
    api_server_url: pulumi.Output[str]
    oidc_issuer_url: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    managed_cluster: containerservice.ManagedCluster
    pools: dict[str, containerservice.AgentPool]

    def __init__(
        self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}:AksCluster", name, None, opts)
        cfg = args.cluster
        child = pulumi.ResourceOptions(parent=self)
        tags = {**args.tags, **cfg.tags, "aks-batch-fleet/cluster": cfg.name}

        node_subnet: network.Subnet | None = None
        aci_subnet: network.Subnet | None = None
        if cfg.network_mode == "nodeSubnet":
            vnet = network.VirtualNetwork(
                f"{name}-vnet",
                resource_group_name=args.resource_group_name,
                location=args.location,
                address_space={"address_prefixes": [str(cfg.network.vnet_cidr)]},
                tags=tags,
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=["subnets"]),
            )
            made: dict[str, network.Subnet] = {}
            for spec in shapes.subnets(cfg):
                made[spec["name"]] = network.Subnet(
                    f"{name}-{spec['name']}-subnet",
                    resource_group_name=args.resource_group_name,
                    virtual_network_name=vnet.name,
                    subnet_name=spec["name"],
                    address_prefix=spec["address_prefix"],
                    delegations=spec.get("delegations"),
                    opts=child,
                )
            node_subnet = made[shapes.NODE_SUBNET]
            aci_subnet = made.get(shapes.ACI_SUBNET)

        # Builders return plain dicts in the SDK's TypedDict shapes; typed Any at this boundary.
        system: Any = shapes.system_pool_profile(
            cfg.system_pool, node_subnet.id if node_subnet is not None else None
        )
        network_profile: Any = shapes.network_profile(cfg)
        scaler: Any = shapes.autoscaler_profile(cfg.autoscaler_profile) or None
        addons: Any = shapes.addon_profiles(cfg) or None
        cluster_ignore = ["agentPoolProfiles[0].count"] if cfg.system_pool.autoscaling else []
        self.managed_cluster = containerservice.ManagedCluster(
            f"{name}-aks",
            resource_name_=cfg.name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            dns_prefix=cfg.dns_prefix or cfg.name,
            kubernetes_version=args.kubernetes_version,
            identity={"type": containerservice.ResourceIdentityType.SYSTEM_ASSIGNED},
            sku={"name": "Base", "tier": cfg.sku_tier},
            enable_rbac=True,
            agent_pool_profiles=[system],
            network_profile=network_profile,
            auto_scaler_profile=scaler,
            addon_profiles=addons,
            oidc_issuer_profile={"enabled": True},
            security_profile={"workload_identity": {"enabled": True}},
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=cluster_ignore),
        )
        mc = self.managed_cluster

        self.pools = {}
        for pool in cfg.pools:
            self.pools[pool.name] = containerservice.AgentPool(
                f"{name}-{pool.name}",
                resource_group_name=args.resource_group_name,
                resource_name_=mc.name,
                vnet_subnet_id=node_subnet.id if node_subnet is not None else None,
                tags=tags,
                **shapes.user_pool_args(pool, args.kubernetes_version),
                # The autoscaler owns the node count once the pool exists.
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=["count"]),
            )

        if node_subnet is not None:
            subscription = authorization.get_client_config_output().subscription_id
            role = pulumi.Output.concat(
                "/subscriptions/",
                subscription,
                "/providers/Microsoft.Authorization/roleDefinitions/",
                ROLE_NETWORK_CONTRIBUTOR,
            )
            # A cluster in a subnet it did not create needs to manage it (load balancers, IPs).
            authorization.RoleAssignment(
                f"{name}-subnet-network",
                principal_id=mc.identity.apply(lambda i: i.principal_id if i else ""),
                principal_type="ServicePrincipal",
                role_definition_id=role,
                scope=node_subnet.id,
                opts=child,
            )
            if aci_subnet is not None:
                # The ACI connector creates container groups in its delegated subnet.
                authorization.RoleAssignment(
                    f"{name}-aci-network",
                    principal_id=mc.addon_profiles.apply(_aci_identity),
                    principal_type="ServicePrincipal",
                    role_definition_id=role,
                    scope=aci_subnet.id,
                    opts=child,
                )

        creds = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=args.resource_group_name, resource_name=mc.name
        )
        self.kubeconfig = pulumi.Output.secret(creds.kubeconfigs.apply(_decode_first))
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            cluster_identifier=cfg.name,
            enable_server_side_apply=True,
            delete_unreachable=True,
            opts=pulumi.ResourceOptions(parent=self, version=KUBERNETES_PROVIDER_VERSION),
        )
        self.cluster_name = mc.name
        self.fqdn = mc.fqdn
        self.api_server_url = pulumi.Output.concat("https://", mc.fqdn, ":443")
        self.oidc_issuer_url = mc.oidc_issuer_profile.apply(
            lambda p: (p.issuer_url or "") if p else ""
        )
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "fqdn": self.fqdn,
                "oidcIssuerUrl": self.oidc_issuer_url,
                "kubeconfig": self.kubeconfig,
            }
        )


def _aci_identity(addons: Mapping[str, Any] | None) -> str:
    profile: Any = (addons or {}).get(shapes.ACI_ADDON)
    identity: Any = getattr(profile, "identity", None)
    return getattr(identity, "object_id", None) or ""
