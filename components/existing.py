"""ExistingCluster: a cluster the stack does not create, reached through a given kubeconfig."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from builders.authorization import AuthorizationWait
from builders.kubeconfig import host_of, server_of
from components.authorization import authorized
from config.models import ClusterConfig
from constants import KUBERNETES_PROVIDER_VERSION, TYPE_PREFIX


@dataclass(frozen=True, kw_only=True)
class ExistingClusterArgs:
    """The cluster's config and its kubeconfig document (made secret here if it is not)."""

    cluster: ClusterConfig
    kubeconfig: pulumi.Input[str]
    # `existing.authorizationTimeoutSeconds`: wait for the identity's rights before the first
    # object (builders.authorization.authorization_wait; None: no wait).
    authorization: AuthorizationWait | None = None


class ExistingCluster(pulumi.ComponentResource):
    """Same surface as AksCluster (provider, kubeconfig, fqdn, api_server_url), nothing in Azure."""

    cluster_name: pulumi.Output[str]
    fqdn: pulumi.Output[str]
    api_server_url: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider_kubeconfig: pulumi.Output[str]
    provider: k8s.Provider

    def __init__(
        self, name: str, args: ExistingClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}:ExistingCluster", name, None, opts)
        cfg = args.cluster
        context = cfg.existing.context if cfg.existing else None
        self.kubeconfig = pulumi.Output.secret(args.kubeconfig)
        self.provider_kubeconfig = authorized(
            self.kubeconfig, args.authorization, context=context, log_to=self
        )
        # The server URL is not a credential; unsecret it so it can appear in outputs and logs.
        self.api_server_url = pulumi.Output.unsecret(
            self.kubeconfig.apply(lambda doc: server_of(doc, context))
        )
        self.fqdn = self.api_server_url.apply(host_of)
        self.cluster_name = pulumi.Output.from_input(cfg.name)
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.provider_kubeconfig,
            context=context,
            cluster_identifier=cfg.name,
            enable_server_side_apply=True,
            delete_unreachable=False,  # we do not own this cluster: never forget it silently
            opts=pulumi.ResourceOptions(parent=self, version=KUBERNETES_PROVIDER_VERSION),
        )
        self.register_outputs({"apiServerUrl": self.api_server_url, "kubeconfig": self.kubeconfig})
