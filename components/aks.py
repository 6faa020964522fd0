"""AksCluster: one AKS cluster, its user pools, optional virtual nodes, and a provider for it.

Its Azure resources are builders.azure_cluster.cluster_resources' list (the one preflight checks),
registered in order by components/azure.py; this module adds only the wiring: the values made
outside the list, the credentials invoke, the Kubernetes provider and the device plugin.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import authorization, containerservice

from builders.authorization import AuthorizationWait
from builders.azure_cluster import (
    DEPLOYER_OBJECT_ID,
    EGRESS_IP_ID,
    SUBSCRIPTION_ID,
    admitted_range,
)
from builders.azure_resource import (
    AGENT_POOL,
    MAINTENANCE,
    RESOURCE_GROUP_NAME,
    ROLE_ASSIGNMENT,
    USER_CREDENTIALS,
    AzureResource,
)
from builders.kubeconfig import kubelogin_noninteractive
from builders.manifest import HelmRelease
from components.authorization import authorized
from components.azure import register_azure, resolved
from config.models import AccessConfig, ClusterConfig
from constants import KUBERNETES_PROVIDER_VERSION, TYPE_PREFIX


@dataclass(frozen=True, kw_only=True)
class AksClusterArgs:
    """One cluster's config and Azure resources (builders.azure_cluster), and what they name."""

    cluster: ClusterConfig
    # builders.azure_cluster.cluster_resources: every Azure resource of the cluster, in order.
    resources: Sequence[AzureResource]
    resource_group_name: pulumi.Input[str]
    access: AccessConfig = field(default_factory=AccessConfig)
    # The NVIDIA device plugin (builders.gpu), when the cluster has GPU pools.
    device_plugin: HelmRelease | None = None
    # Before the first object: wait until the API server authorizes the deploying identity
    # (builders.authorization.authorization_wait; None: no wait).
    authorization: AuthorizationWait | None = None
    # The static Public IP this cluster's egress leaves from, when others admit it (Fleet makes
    # it first; builders.egress), and the callers' egress ranges this API server admits, by
    # caller.
    egress_ip_id: pulumi.Input[str] | None = None
    admitted_ranges: Mapping[str, pulumi.Input[str]] = field(
        default_factory=dict[str, pulumi.Input[str]]
    )


def _decode_first(kubeconfigs: Any) -> str:
    return base64.b64decode(kubeconfigs[0].value).decode()


def _named(resources: Sequence[AzureResource], token: str) -> list[str]:
    return [r.name for r in resources if r.token == token]


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
    maintenance: dict[str, containerservice.MaintenanceConfiguration]
    # Role assignments of the list, by their part: the control-plane identity's on its VNet and
    # on its egress IP, the virtual-node connector's, and the access grants by key.
    identity_grant: authorization.RoleAssignment | None
    egress_grant: authorization.RoleAssignment | None
    virtual_node_grant: authorization.RoleAssignment | None
    access_grants: dict[str, authorization.RoleAssignment]

    def __init__(
        self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}:AksCluster", name, None, opts)
        cfg, access = args.cluster, args.access
        client = authorization.get_client_config_output()
        outside: dict[str, pulumi.Input[str]] = {
            RESOURCE_GROUP_NAME: args.resource_group_name,
            SUBSCRIPTION_ID: client.subscription_id,
            DEPLOYER_OBJECT_ID: client.object_id,
            **{admitted_range(c): ip for c, ip in args.admitted_ranges.items()},
        }
        if args.egress_ip_id is not None:
            outside[EGRESS_IP_ID] = args.egress_ip_id
        # The list's resources in its order, each after the ones it names; then the credential
        # invoke, which reads the cluster (builders.azure_cluster).
        requests = [r for r in args.resources if r.token != USER_CREDENTIALS]
        made = register_azure(name, requests, outside, parent=self)
        (invoke,) = [r for r in args.resources if r.token == USER_CREDENTIALS]
        credentials: Mapping[str, Any] = resolved(dict(invoke.args), made, outside)
        self.managed_cluster = mc = cast(containerservice.ManagedCluster, made["aks"])
        of = {r.name: r for r in args.resources}
        self.pools = {
            str(of[n].args["agent_pool_name"]): cast(containerservice.AgentPool, made[n])
            for n in _named(args.resources, AGENT_POOL)
        }
        self.maintenance = {
            str(of[n].args["config_name"]): cast(containerservice.MaintenanceConfiguration, made[n])
            for n in _named(args.resources, MAINTENANCE)
        }
        grants = {
            n: cast(authorization.RoleAssignment, made[n])
            for n in _named(args.resources, ROLE_ASSIGNMENT)
        }
        self.identity_grant = grants.get("vnet-network")
        self.egress_grant = grants.get("egress-network")
        self.virtual_node_grant = grants.get("aci-network")
        self.access_grants = {
            n.removesuffix("-rbac"): g for n, g in grants.items() if n.endswith("-rbac")
        }

        creds = containerservice.list_managed_cluster_user_credentials_output(**credentials)
        self.kubeconfig = pulumi.Output.secret(creds.kubeconfigs.apply(_decode_first))
        if access.entra_id:
            # People get AKS's exec kubeconfig (no credential in it; `kubelogin
            # convert-kubeconfig` completes it); the provider gets it non-interactive.
            login = access.provider_login
            self.provider_kubeconfig = self.kubeconfig.apply(
                lambda doc: kubelogin_noninteractive(doc, login)
            )
        else:
            # Local accounts: the user credential is a client certificate (cluster-admin).
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
                # Goes with the cluster (components/kube.py, deleted_with_clusters).
                opts=pulumi.ResourceOptions(
                    parent=self,
                    provider=self.provider,
                    depends_on=list(self.pools.values()),
                    deleted_with=mc,
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
