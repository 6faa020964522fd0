"""Fleet: the whole stack from one validated config; composes the other components."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import resources

from components.aks import AksCluster, AksClusterArgs
from config.models import FleetConfig
from constants import PROJECT, TYPE_PREFIX


@dataclass(frozen=True, kw_only=True)
class FleetArgs:
    """The validated fleet config and the stack it belongs to."""

    config: FleetConfig
    stack: str


class Fleet(pulumi.ComponentResource):
    """Resource group and clusters. Clusters share only the group, so they deploy in parallel."""

    resource_group_name: pulumi.Output[str]
    clusters: dict[str, AksCluster]
    kubeconfigs: pulumi.Output[dict[str, str]]

    def __init__(self, name: str, args: FleetArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{TYPE_PREFIX}:Fleet", name, None, opts)
        cfg = args.config
        location = cfg.location
        tags = {"managed-by": PROJECT, "stack": args.stack, **cfg.tags}
        group = resources.ResourceGroup(
            f"{name}-rg",
            resource_group_name=cfg.resource_group or f"{PROJECT}-{args.stack}",
            location=location,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.resource_group_name = group.name
        self.clusters = {
            c.name: AksCluster(
                f"{name}-{c.name}",
                AksClusterArgs(
                    cluster=c,
                    resource_group_name=group.name,
                    location=c.location or location or "",
                    kubernetes_version=cfg.version_of(c),
                    tags=tags,
                ),
                pulumi.ResourceOptions(parent=self),
            )
            for c in cfg.clusters
        }
        self.kubeconfigs = pulumi.Output.secret(
            pulumi.Output.all(**{n: c.kubeconfig for n, c in self.clusters.items()})
        )
        self.register_outputs({"resourceGroup": self.resource_group_name})
