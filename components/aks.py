"""AksCluster: one AKS cluster, its user pools, optional virtual nodes, and a provider for it."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import authorization, containerservice, managedidentity, network

from builders import aks as shapes
from builders.authorization import AuthorizationWait
from builders.kubeconfig import kubelogin_noninteractive
from builders.manifest import HelmRelease
from components.authorization import authorized
from config.models import AccessConfig, ClusterConfig
from config.upgrades import UpgradeSettings
from constants import KUBERNETES_PROVIDER_VERSION, TAG_CLUSTER, TYPE_PREFIX
from upstream.aks import ROLE_CONTRIBUTOR, ROLE_NETWORK_CONTRIBUTOR


@dataclass(frozen=True, kw_only=True)
class AksClusterArgs:
    """What one cluster needs from the fleet: its config, access, and where it goes."""

    cluster: ClusterConfig
    resource_group_name: pulumi.Input[str]
    location: str
    kubernetes_version: str
    # Each user pool's orchestratorVersion by name (FleetConfig.pool_version_of).
    pool_versions: Mapping[str, str]
    access: AccessConfig = field(default_factory=AccessConfig)
    tags: dict[str, str] = field(default_factory=dict[str, str])
    # The NVIDIA device plugin (builders.gpu), when the cluster has GPU pools.
    device_plugin: HelmRelease | None = None
    # Channels, maintenance windows and pool upgrade settings (FleetConfig.upgrades_of).
    upgrades: UpgradeSettings = field(default_factory=UpgradeSettings)
    # ManagedCluster `azureMonitorProfile` (builders.monitoring); None: not sent.
    azure_monitor_profile: Mapping[str, Any] | None = None
    # Before the first object: wait until the API server authorizes the deploying identity
    # (builders.authorization.authorization_wait; None: no wait).
    authorization: AuthorizationWait | None = None
    # The static Public IP this cluster's egress leaves from, when others admit it (Fleet makes
    # it first; builders.egress), and the callers' egress ranges this API server admits.
    egress_ip_id: pulumi.Input[str] | None = None
    admitted_ranges: Sequence[pulumi.Input[str]] = ()
    # The deploying identity's principal type, sent on its grants (config.login).
    deployer_principal_type: str = "User"


def _decode_first(kubeconfigs: Any) -> str:
    return base64.b64decode(kubeconfigs[0].value).decode()


def _role(definition: str) -> pulumi.Output[str]:
    """A built-in role's id in the deploying subscription."""
    subscription = authorization.get_client_config_output().subscription_id
    return pulumi.Output.concat(
        "/subscriptions/",
        subscription,
        "/providers/Microsoft.Authorization/roleDefinitions/",
        definition,
    )


def _identity_grant(
    resource_name: str,
    principal_id: pulumi.Input[str],
    role: str,
    scope: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> authorization.RoleAssignment:
    """A built-in role for a managed identity (a service principal to Azure RBAC) on one scope."""
    return authorization.RoleAssignment(
        resource_name,
        principal_id=principal_id,
        principal_type="ServicePrincipal",
        role_definition_id=_role(role),
        scope=scope,
        opts=opts,
    )


class AksCluster(pulumi.ComponentResource):
    """A ManagedCluster (system pool inline), one AgentPool per user pool, and a k8s Provider."""

    cluster_name: pulumi.Output[str]
    fqdn: pulumi.Output[str]
    api_server_url: pulumi.Output[str]
    oidc_issuer_url: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider_kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    managed_cluster: containerservice.ManagedCluster
    pools: dict[str, containerservice.AgentPool]

    def __init__(
        self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}:AksCluster", name, None, opts)
        cfg = args.cluster
        child = pulumi.ResourceOptions(parent=self)
        tags = {**args.tags, **cfg.tags, TAG_CLUSTER: cfg.name}

        node_subnet: network.Subnet | None = None
        aci_subnet: network.Subnet | None = None
        vnet: network.VirtualNetwork | None = None
        identity: Any = {"type": containerservice.ResourceIdentityType.SYSTEM_ASSIGNED}
        cluster_after: list[pulumi.Resource] = []
        control_plane: managedidentity.UserAssignedIdentity | None = None
        self.identity_grant: authorization.RoleAssignment | None = None
        self.virtual_node_grant: authorization.RoleAssignment | None = None
        access = args.access
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
                # One at a time: parallel subnet PUTs in one VNet fail with
                # AnotherOperationInProgress (azure-native#699).
                made[spec["name"]] = network.Subnet(
                    f"{name}-{spec['name']}-subnet",
                    resource_group_name=args.resource_group_name,
                    virtual_network_name=vnet.name,
                    subnet_name=spec["name"],
                    address_prefix=spec["address_prefix"],
                    delegations=spec.get("delegations"),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=list(made.values())[-1:]),
                )
            node_subnet = made[shapes.NODE_SUBNET]
            aci_subnet = made.get(shapes.ACI_SUBNET)
        if shapes.needs_own_identity(cfg, egress=args.egress_ip_id is not None):
            # In a VNet it did not make, or with an outbound IP outside its node resource group,
            # the control plane needs rights on them from its first minute: a user-assigned
            # identity, granted first (a system-assigned one exists only after the create).
            control_plane = managedidentity.UserAssignedIdentity(
                f"{name}-identity",
                resource_name_=f"{cfg.name}-control-plane",
                resource_group_name=args.resource_group_name,
                location=args.location,
                tags=tags,
                opts=child,
            )
            identity = {
                "type": containerservice.ResourceIdentityType.USER_ASSIGNED,
                "user_assigned_identities": [control_plane.id],
            }
        if vnet is not None and control_plane is not None:
            self.identity_grant = _identity_grant(
                f"{name}-vnet-network",
                control_plane.principal_id,
                ROLE_NETWORK_CONTRIBUTOR,
                vnet.id,
                child,
            )
            cluster_after.append(self.identity_grant)
        # The cloud provider joins the outbound Public IP to the load balancer at create and
        # whenever it reconciles it: outside the node resource group, the cluster identity needs
        # join rights on that IP first (Azure/AKS#1945, LinkedAuthorizationFailed).
        self.egress_grant: authorization.RoleAssignment | None = None
        if args.egress_ip_id is not None and control_plane is not None:
            self.egress_grant = _identity_grant(
                f"{name}-egress-network",
                control_plane.principal_id,
                ROLE_NETWORK_CONTRIBUTOR,
                args.egress_ip_id,
                child,
            )
            cluster_after.append(self.egress_grant)

        # Builders return plain dicts in the SDK's TypedDict shapes; typed Any at this boundary.
        system: Any = shapes.system_pool_profile(
            cfg.system_pool,
            args.kubernetes_version,
            node_subnet.id if node_subnet is not None else None,
            args.upgrades,
        )
        auto_upgrade: Any = shapes.auto_upgrade_profile(args.upgrades)
        network_profile: Any = shapes.network_profile(cfg, args.egress_ip_id)
        scaler: Any = shapes.autoscaler_profile(cfg.autoscaler_profile) or None
        addons: Any = shapes.addon_profiles(cfg) or None
        aad: Any = shapes.aad_profile(access)
        api_access: Any = shapes.api_server_access_profile(access, args.admitted_ranges)
        monitor: Any = dict(args.azure_monitor_profile) if args.azure_monitor_profile else None
        cluster_ignore = ["agentPoolProfiles[0].count"] if cfg.system_pool.autoscaling else []
        self.managed_cluster = containerservice.ManagedCluster(
            f"{name}-aks",
            resource_name_=cfg.name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            dns_prefix=cfg.dns_prefix or cfg.name,
            kubernetes_version=args.kubernetes_version,
            identity=identity,
            sku={"name": "Base", "tier": cfg.sku_tier},
            support_plan=cfg.support_plan,
            auto_upgrade_profile=auto_upgrade,
            enable_rbac=True,
            aad_profile=aad,
            disable_local_accounts=not access.local_accounts,
            api_server_access_profile=api_access,
            agent_pool_profiles=[system],
            network_profile=network_profile,
            auto_scaler_profile=scaler,
            addon_profiles=addons,
            oidc_issuer_profile={"enabled": True},
            security_profile={"workload_identity": {"enabled": True}},
            azure_monitor_profile=monitor,
            tags=tags,
            opts=pulumi.ResourceOptions(
                parent=self, ignore_changes=cluster_ignore, depends_on=cluster_after
            ),
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
                **shapes.user_pool_args(pool, args.pool_versions[pool.name], args.upgrades),
                # The autoscaler owns the node count once the pool exists.
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=["count"]),
            )

        # Planned maintenance: when the channels may act (AKS's fixed configuration names).
        self.maintenance: dict[str, containerservice.MaintenanceConfiguration] = {}
        windows: dict[str, Any] = shapes.maintenance_configurations(args.upgrades)
        for config_name, window in windows.items():
            self.maintenance[config_name] = containerservice.MaintenanceConfiguration(
                f"{name}-{config_name}",
                config_name=config_name,
                resource_group_name=args.resource_group_name,
                resource_name_=mc.name,
                maintenance_window=window,
                opts=child,
            )

        if vnet is not None and aci_subnet is not None:
            # As `az aks enable-addons --addons virtual-node` does: Contributor on the VNet for
            # the connector's identity (it creates container groups and joins the ACI subnet).
            self.virtual_node_grant = _identity_grant(
                f"{name}-aci-network",
                mc.addon_profiles.apply(_aci_identity),
                ROLE_CONTRIBUTOR,
                vnet.id,
                child,
            )

        # Azure RBAC: the deploying identity and the configured groups (builders.aks).
        self.access_grants: dict[str, authorization.RoleAssignment] = {}
        client = authorization.get_client_config_output()
        for grant in shapes.access_grants(access, args.deployer_principal_type):
            scope = (
                mc.id
                if grant.namespace is None
                else pulumi.Output.concat(mc.id, "/namespaces/", grant.namespace)
            )
            self.access_grants[grant.key] = authorization.RoleAssignment(
                f"{name}-{grant.key}-rbac",
                principal_id=grant.principal_id or client.object_id,
                principal_type=grant.principal_type,
                role_definition_id=_role(grant.role_definition),
                scope=scope,
                opts=child,
            )

        if access.entra_id:
            # People get AKS's exec kubeconfig (no credential in it; `kubelogin
            # convert-kubeconfig` completes it); the provider gets it non-interactive.
            creds = containerservice.list_managed_cluster_user_credentials_output(
                resource_group_name=args.resource_group_name, resource_name=mc.name, format="exec"
            )
            self.kubeconfig = pulumi.Output.secret(creds.kubeconfigs.apply(_decode_first))
            login = access.provider_login
            self.provider_kubeconfig = self.kubeconfig.apply(
                lambda doc: kubelogin_noninteractive(doc, login)
            )
        else:
            # Local accounts: the user credential is a client certificate (cluster-admin).
            creds = containerservice.list_managed_cluster_user_credentials_output(
                resource_group_name=args.resource_group_name, resource_name=mc.name
            )
            self.kubeconfig = pulumi.Output.secret(creds.kubeconfigs.apply(_decode_first))
            self.provider_kubeconfig = self.kubeconfig
        deployer = self.access_grants.get("deployer")
        # A grant that exists is not yet one the API server knows (Azure: minutes): during `up`
        # the provider gets its kubeconfig only once the identity is authorized, so nothing is
        # applied before (components/authorization.py).
        facts: dict[str, pulumi.Input[str]] = {"cluster_id": mc.id}
        if deployer is not None:
            facts["grant"] = deployer.id
        self.provider_kubeconfig = authorized(
            self.provider_kubeconfig, args.authorization, facts=facts, log_to=self
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.provider_kubeconfig,
            cluster_identifier=cfg.name,
            enable_server_side_apply=True,
            # An unreachable cluster is an error, never a reason to forget its objects: with Entra
            # ID, a `pulumi refresh` without a working login finds every cluster "unreachable",
            # and with this on the provider drops every in-cluster object from state
            # (pulumi-kubernetes 4.25.0 provider.go Read/Delete). Set explicitly: the provider's
            # setting wins over PULUMI_K8S_DELETE_UNREACHABLE. Deleting a cluster on purpose:
            # docs/upgrades.md.
            delete_unreachable=False,
            # Nothing is applied in the cluster before the deploying identity may do it.
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[deployer] if deployer else [],
                version=KUBERNETES_PROVIDER_VERSION,
            ),
        )
        self.device_plugin: k8s.helm.v3.Release | None = None
        if args.device_plugin is not None:
            spec = args.device_plugin
            self.device_plugin = k8s.helm.v3.Release(
                f"{name}-nvidia-device-plugin",
                name=spec.release,
                chart=spec.chart,
                version=spec.version,
                repository_opts={"repo": spec.repo},
                namespace=spec.namespace,
                values=spec.values,
                opts=pulumi.ResourceOptions(
                    parent=self, provider=self.provider, depends_on=list(self.pools.values())
                ),
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
