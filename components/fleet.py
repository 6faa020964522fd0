"""Fleet: the whole stack from one validated config; composes the other components."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
from pulumi_azure_native import resources

from builders.fleet import kueue_objects
from builders.gpu import device_plugin_release
from components.aks import AksCluster, AksClusterArgs
from components.existing import ExistingCluster, ExistingClusterArgs
from components.karmada import Karmada, KarmadaArgs
from components.kueue import Kueue, KueueArgs
from components.multikueue import MultiKueue, MultiKueueArgs
from config.models import FleetConfig
from config.resolve import access_of, with_mirrored_queues
from constants import PROJECT, TAG_MANAGED_BY, TAG_STACK, TYPE_PREFIX

Cluster = AksCluster | ExistingCluster


@dataclass(frozen=True, kw_only=True)
class FleetArgs:
    """The validated fleet config, the stack, and kubeconfigs of clusters it does not create."""

    config: FleetConfig
    stack: str
    existing_kubeconfigs: Mapping[str, pulumi.Input[str]] = field(
        default_factory=dict[str, pulumi.Input[str]]
    )
    # The pinned Kueue CRD files when `kueue.install` is `manifests-only`.
    kueue_crd_files: Sequence[str] = ()
    # `kueue.values` holds a `secure:` value: the chart values go to Helm as a Pulumi secret.
    kueue_values_secret: bool = False
    # `karmada.source: existing`: the Karmada API server's kubeconfig.
    karmada_kubeconfig: pulumi.Input[str] | None = None


class Fleet(pulumi.ComponentResource):
    """Resource group and clusters. Clusters share only the group, so they deploy in parallel."""

    resource_group_name: pulumi.Output[str]
    clusters: dict[str, Cluster]
    kubeconfigs: pulumi.Output[dict[str, str]]

    def __init__(self, name: str, args: FleetArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{TYPE_PREFIX}:Fleet", name, None, opts)
        cfg = args.config
        location = cfg.location
        tags = {TAG_MANAGED_BY: PROJECT, TAG_STACK: args.stack, **cfg.tags}
        self.clusters = {}
        aks = [c for c in cfg.clusters if c.source == "aks"]
        self.resource_group_name = pulumi.Output.from_input("")
        if aks:
            group = resources.ResourceGroup(
                f"{name}-rg",
                resource_group_name=cfg.resource_group or f"{PROJECT}-{args.stack}",
                location=location,
                tags=tags,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.resource_group_name = group.name
            for c in aks:
                self.clusters[c.name] = AksCluster(
                    f"{name}-{c.name}",
                    AksClusterArgs(
                        cluster=c,
                        resource_group_name=group.name,
                        location=c.location or location or "",
                        kubernetes_version=cfg.version_of(c),
                        access=access_of(cfg, c),
                        tags=tags,
                        device_plugin=device_plugin_release(cfg, c),
                    ),
                    pulumi.ResourceOptions(parent=self),
                )
        for c in cfg.clusters:
            if c.source == "existing":
                self.clusters[c.name] = ExistingCluster(
                    f"{name}-{c.name}",
                    ExistingClusterArgs(cluster=c, kubeconfig=args.existing_kubeconfigs[c.name]),
                    pulumi.ResourceOptions(parent=self),
                )
        # Kueue on every cluster, through that cluster's provider (same version fleet-wide), with
        # its queue objects as deployed (builders.fleet: the one composition preflight renders).
        objects = kueue_objects(cfg)
        self.kueues: dict[str, Kueue] = {
            c.name: Kueue(
                f"{name}-{c.name}-kueue",
                KueueArgs(
                    cluster=c,
                    settings=cfg.kueue,
                    provider=self.clusters[c.name].provider,
                    objects=objects[c.name],
                    crd_files=args.kueue_crd_files,
                    secret_values=args.kueue_values_secret,
                ),
                pulumi.ResourceOptions(parent=self),
            )
            for c in with_mirrored_queues(cfg).clusters
        }
        # MultiKueue: least-privilege credentials on each worker, the manager's link to them.
        self.multikueue: MultiKueue | None = None
        if cfg.multi_kueue is not None:
            self.multikueue = MultiKueue(
                f"{name}-multikueue",
                MultiKueueArgs(
                    fleet=cfg,
                    providers={n: c.provider for n, c in self.clusters.items()},
                    api_servers={n: c.api_server_url for n, c in self.clusters.items()},
                    kueue_releases={n: k.ready for n, k in self.kueues.items()},
                ),
                pulumi.ResourceOptions(parent=self),
            )
        # Karmada on its host, Kruise and push-mode registration on its members, applications.
        self.karmada: Karmada | None = None
        if cfg.karmada is not None:
            self.karmada = Karmada(
                f"{name}-karmada",
                KarmadaArgs(
                    fleet=cfg,
                    clusters=self.clusters,
                    tags=tags,
                    existing_kubeconfig=args.karmada_kubeconfig,
                ),
                pulumi.ResourceOptions(parent=self),
            )
        self.kubeconfigs = pulumi.Output.secret(
            pulumi.Output.all(**{n: c.kubeconfig for n, c in self.clusters.items()})
        )
        self.register_outputs({"resourceGroup": self.resource_group_name})
