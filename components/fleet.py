"""Fleet: the whole stack from one validated config; composes the other components."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import pulumi
from pulumi_azure_native import network, resources

from builders.authorization import authorization_wait
from builders.azure_cluster import cluster_resources
from builders.azure_fleet import EGRESS_SUFFIX, GROUP, fleet_resources, karmada_resources
from builders.azure_monitor import cluster_id, monitor_resources
from builders.azure_resource import PUBLIC_IP, RESOURCE_GROUP_NAME
from builders.egress import admitted_callers
from builders.fleet import kueue_objects
from builders.frameworks import kuberay_releases, training_operator_installs
from builders.gpu import device_plugin_release
from components.aks import AksCluster, AksClusterArgs
from components.azure import register_azure
from components.existing import ExistingCluster, ExistingClusterArgs
from components.frameworks import JobOperators, JobOperatorsArgs
from components.karmada import Karmada, KarmadaArgs
from components.kube import deleted_with_clusters
from components.kueue import Kueue, KueueArgs
from components.monitoring import AzureMonitor, AzureMonitorArgs
from components.multikueue import MultiKueue, MultiKueueArgs
from config.models import FleetConfig
from config.resolve import access_of, dispatch_sets, with_mirrored_queues
from constants import TYPE_PREFIX

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
    # The Karmada API server's Kruise CRD files, when read locally (`karmada.kruise`).
    kruise_crd_files: Sequence[str] = ()
    # The deploying identity's Azure principal type (config.login.resolve, in __main__.py).
    deployer_principal_type: str = "User"
    # `operators`: the manager's pinned CRD files of the enabled kinds, and the training
    # operator's overlay directory (checks.frameworks.operator_files).
    operator_crd_files: Sequence[str] = ()
    training_operator_overlay: str | None = None


class Fleet(pulumi.ComponentResource):
    """Resource group and clusters. Clusters share only the group, so they deploy in parallel."""

    resource_group_name: pulumi.Output[str]
    # The static egress Public IPs of the clusters others admit (builders.egress).
    egress_ips: dict[str, network.PublicIPAddress]
    clusters: dict[str, Cluster]
    kubeconfigs: pulumi.Output[dict[str, str]]

    def __init__(self, name: str, args: FleetArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{TYPE_PREFIX}:Fleet", name, None, opts)
        cfg = args.config
        self.clusters = {}
        self.egress_ips = {}
        aks = [c for c in cfg.clusters if c.source == "aks"]
        self.resource_group_name = pulumi.Output.from_input("")
        if aks:
            # The resource group, then the static egress IPs of the clusters others admit: a
            # worker's ranges name the manager's egress IP, and no cluster waits on another
            # cluster (builders.azure_fleet, builders.egress).
            azure = fleet_resources(cfg, args.stack)
            made = register_azure(name, azure, {}, parent=self)
            self.resource_group_name = cast(resources.ResourceGroup, made[GROUP]).name
            self.egress_ips = {
                r.name.removesuffix(EGRESS_SUFFIX): cast(network.PublicIPAddress, made[r.name])
                for r in azure
                if r.token == PUBLIC_IP
            }
            for c in aks:
                egress_ip = self.egress_ips.get(c.name)
                self.clusters[c.name] = AksCluster(
                    f"{name}-{c.name}",
                    AksClusterArgs(
                        cluster=c,
                        resources=cluster_resources(
                            cfg, c, args.stack, deployer_type=args.deployer_principal_type
                        ),
                        resource_group_name=self.resource_group_name,
                        access=access_of(cfg, c),
                        device_plugin=device_plugin_release(cfg, c),
                        authorization=authorization_wait(cfg, c),
                        egress_ip_id=egress_ip.id if egress_ip is not None else None,
                        admitted_ranges={
                            caller: self.egress_ips[caller].ip_address.apply(_slash32)
                            for caller in admitted_callers(cfg, c)
                        },
                    ),
                    pulumi.ResourceOptions(parent=self),
                )
            # Where each cluster's metrics add-on sends (beside the clusters' Kubernetes half).
            self.azure_monitor: AzureMonitor | None = None
            monitor = monitor_resources(cfg, args.stack)
            if monitor:
                self.azure_monitor = AzureMonitor(
                    f"{name}-azure-monitor",
                    AzureMonitorArgs(
                        config=cfg,
                        prefix=name,
                        resources=monitor,
                        outside={
                            RESOURCE_GROUP_NAME: self.resource_group_name,
                            **{
                                cluster_id(n): c.managed_cluster.id
                                for n, c in self.clusters.items()
                                if isinstance(c, AksCluster)
                            },
                        },
                    ),
                    pulumi.ResourceOptions(parent=self),
                )
        for c in cfg.clusters:
            if c.source == "existing":
                self.clusters[c.name] = ExistingCluster(
                    f"{name}-{c.name}",
                    ExistingClusterArgs(
                        cluster=c,
                        kubeconfig=args.existing_kubeconfigs[c.name],
                        authorization=authorization_wait(cfg, c),
                    ),
                    pulumi.ResourceOptions(parent=self),
                )
        # What the components below apply in an AKS cluster goes with that cluster when it is
        # deleted (components/kube.py, deleted_with_clusters); clusters that exist stay.
        in_clusters = pulumi.ResourceOptions(
            parent=self,
            transformations=[
                deleted_with_clusters(
                    [
                        (c.provider, c.managed_cluster)
                        for c in self.clusters.values()
                        if isinstance(c, AksCluster)
                    ]
                )
            ],
        )
        # Job operators (operators): on their workers, and the kinds' CRDs alone on the manager.
        self.job_operators: dict[str, JobOperators] = {}
        releases, overlays = kuberay_releases(cfg), training_operator_installs(cfg)
        for c in cfg.clusters:
            mine = [r for r in releases if r.target == c.name]
            kustomizations = [k for k in overlays if k.target == c.name]
            crds = list(args.operator_crd_files) if c.role == "manager" else []
            if not (mine or kustomizations or crds):
                continue
            self.job_operators[c.name] = JobOperators(
                f"{name}-{c.name}-operators",
                JobOperatorsArgs(
                    provider=self.clusters[c.name].provider,
                    releases=mine,
                    kustomizations=kustomizations,
                    overlay_dir=args.training_operator_overlay,
                    crd_files=crds,
                ),
                in_clusters,
            )
        # Kueue on every cluster, through that cluster's provider (same version fleet-wide), with
        # its queue objects as deployed (builders.fleet: the one composition preflight renders).
        objects = kueue_objects(cfg)
        deployed = with_mirrored_queues(cfg).clusters
        manager = cfg.manager.name if cfg.manager is not None else None
        # MultiKueue: least-privilege credentials on each worker, the manager's link to them.
        # It needs every cluster's Kueue release and the workers' queue objects, and the
        # manager's MultiKueue AdmissionChecks wait for their MultiKueueClusters: a check is
        # Active only once a cluster is, and its default 10-minute wait would otherwise start
        # before the workers exist. So: every Kueue, MultiKueue, then the manager's objects.
        dispatching = cfg.multi_kueue is not None and manager is not None
        self.kueues: dict[str, Kueue] = {}
        for c in deployed:
            last = dispatching and c.name == manager
            self.kueues[c.name] = Kueue(
                f"{name}-{c.name}-kueue",
                KueueArgs(
                    cluster=c,
                    settings=cfg.kueue,
                    provider=self.clusters[c.name].provider,
                    objects=() if last else objects[c.name],
                    crd_files=args.kueue_crd_files,
                    secret_values=args.kueue_values_secret,
                ),
                in_clusters,
            )
        self.multikueue: MultiKueue | None = None
        if dispatching and manager is not None:
            self.multikueue = MultiKueue(
                f"{name}-multikueue",
                MultiKueueArgs(
                    fleet=cfg,
                    providers={n: c.provider for n, c in self.clusters.items()},
                    api_servers={n: c.api_server_url for n, c in self.clusters.items()},
                    kubeconfigs={n: c.provider_kubeconfig for n, c in self.clusters.items()},
                    kueue_releases={n: k.ready for n, k in self.kueues.items()},
                    kueue_objects={n: k.objects for n, k in self.kueues.items() if n != manager},
                ),
                in_clusters,
            )
            linked = self.multikueue.manager.clusters
            self.kueues[manager].apply_objects(
                objects[manager],
                also_after={
                    f"AdmissionCheck/{s.name}": [linked[w] for w in s.workers]
                    for s in dispatch_sets(cfg)
                },
            )
        # Karmada on its host, Kruise and push-mode registration on its members, applications.
        self.karmada: Karmada | None = None
        if cfg.karmada is not None:
            self.karmada = Karmada(
                f"{name}-karmada",
                KarmadaArgs(
                    fleet=cfg,
                    clusters=self.clusters,
                    resources=karmada_resources(cfg, args.stack),
                    existing_kubeconfig=args.karmada_kubeconfig,
                    kruise_crd_files=args.kruise_crd_files,
                ),
                in_clusters,
            )
        self.kubeconfigs = pulumi.Output.secret(
            pulumi.Output.all(**{n: c.kubeconfig for n, c in self.clusters.items()})
        )
        self.register_outputs({"resourceGroup": self.resource_group_name})


def _slash32(address: str | None) -> str:
    return f"{address or ''}/32"
