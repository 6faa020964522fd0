"""Kueue on one cluster: the Helm release, then its namespaces, flavors, gates and queues."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from builders.kueue import kueue_release
from builders.manifest import Manifest
from components.kube import apply_manifests, owned
from config.kueue import KueueSettings
from config.models import ClusterConfig
from constants import ACTIVE_STATUS, TYPE_PREFIX, WAIT_FOR
from upstream.kueue import KUEUE_NAMESPACE, PROVISIONING_CONTROLLER

# Kueue reports Active=False (e.g. FlavorNotFound, AdmissionCheckInactive, or a queue with both a
# MultiKueue and a ProvisioningRequest check): `pulumi up` must fail then, not look green.
READY_WHEN_ACTIVE = frozenset({"ClusterQueue", "AdmissionCheck"})


@dataclass(frozen=True, kw_only=True)
class KueueArgs:
    """One cluster's config, the fleet-wide Kueue settings, and the cluster's provider."""

    cluster: ClusterConfig
    settings: KueueSettings
    provider: k8s.Provider
    # Every queue object of the cluster as deployed (builders.fleet.kueue_objects), including
    # the MultiKueue AdmissionCheck on the manager, each naming what it needs.
    objects: Sequence[Manifest] = ()
    # The pinned CRD files, for `install: manifests-only` (found by the composition root).
    crd_files: Sequence[str] = ()
    # The chart values hold a secret (from `kueue.values`): pass them as a Pulumi secret.
    secret_values: bool = False


# A provisioning AdmissionCheck waits on ACTIVE_STATUS: an in-place spec change (a gate's
# configName) does not get its Active condition rewritten by v0.19.2 (see constants).


def _wait_for(m: Manifest) -> str:
    if m.kind == "AdmissionCheck" and m.obj["spec"]["controllerName"] == PROVISIONING_CONTROLLER:
        return ACTIVE_STATUS
    return "condition=Active"


def _metadata(m: Manifest) -> dict[str, Any]:
    meta = dict(m.obj["metadata"])
    if m.kind in READY_WHEN_ACTIVE:
        meta["annotations"] = {**meta.get("annotations", {}), WAIT_FOR: _wait_for(m)}
    return meta


class Kueue(pulumi.ComponentResource):
    """Kueue's Helm release and every queue object of one cluster, all through its provider."""

    release: k8s.helm.v3.Release | None
    # What every Kueue object (and other components' objects in kueue-system) waits for: the
    # release, or with `manifests-only` the kueue-system namespace created after the CRDs.
    ready: pulumi.Resource
    objects: dict[str, pulumi.Resource]
    cluster_queues: list[str]
    local_queues: list[str]

    def __init__(self, name: str, args: KueueArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{TYPE_PREFIX}:Kueue", name, None, opts)
        cluster, settings = args.cluster, args.settings
        if settings.install == "helm":
            self.release = self.ready = self._helm(name, args)
        else:
            self.release = None
            self.ready = self._manifests_only(name, args)
        self._name, self._provider = name, args.provider
        self.objects = {}
        self.apply_objects(args.objects)
        self.cluster_queues = [cq.name for cq in cluster.queues.cluster_queues]
        self.local_queues = [f"{lq.namespace}/{lq.name}" for lq in cluster.queues.local_queues]
        self.register_outputs(
            {
                "releaseStatus": self.release.status if self.release else None,
                "clusterQueues": self.cluster_queues,
                "localQueues": self.local_queues,
            }
        )

    def apply_objects(
        self,
        objects: Sequence[Manifest],
        also_after: Mapping[str, Sequence[pulumi.Resource]] | None = None,
    ) -> None:
        """Queue objects of this cluster, each after the release (CRDs and webhooks) and what it
        needs; `also_after`: resources made elsewhere that an object (by Manifest.key) waits for,
        e.g. the MultiKueueClusters the manager's MultiKueue AdmissionChecks judge, which
        themselves need this cluster's release (so `Fleet` applies the manager's objects last).
        On destroy, the reverse order removes objects (Kueue's resource-in-use finalizers) before
        the controller. Cluster-scoped names are unique per kind; namespaced ones keep `ns/name`
        (a DNS label has no '/', so `a/b-c` and `a-b/c` stay distinct)."""
        name = self._name
        self.objects |= apply_manifests(
            objects,
            pulumi.ResourceOptions(parent=self, provider=self._provider),
            name_of=lambda m: f"{name}-{m.kind.lower()}-{m.key.split('/', 1)[1]}",
            after=[self.ready],
            metadata=_metadata,
            also_after=also_after,
        )

    def _helm(self, name: str, args: KueueArgs) -> k8s.helm.v3.Release:
        """The pinned chart, waited for: its webhooks reject queue objects until Ready."""
        chart = kueue_release(args.settings, args.cluster)
        return k8s.helm.v3.Release(
            f"{name}-release",
            name=chart.release,  # explicit: chart object names derive from it
            chart=chart.chart,
            version=chart.version,
            namespace=chart.namespace,
            create_namespace=True,
            values=pulumi.Output.secret(chart.values) if args.secret_values else chart.values,
            # Roll back a failed upgrade: a broken Kueue blocks every Job through its webhooks.
            skip_await=False,
            atomic=True,
            timeout=args.settings.timeout_seconds,
            max_history=10,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider),
        )

    def _manifests_only(self, name: str, args: KueueArgs) -> pulumi.Resource:
        """The pinned CRDs and the kueue-system namespace; Kueue's controller runs elsewhere."""
        on_cluster = pulumi.ResourceOptions(parent=self, provider=args.provider)
        # The provider reads and applies the files (server-side apply: the workloads CRD is
        # too large for client-side apply's last-applied annotation).
        crds = k8s.yaml.v2.ConfigGroup(f"{name}-crds", files=list(args.crd_files), opts=on_cluster)
        return k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=owned({"name": KUEUE_NAMESPACE}),
            opts=pulumi.ResourceOptions.merge(
                on_cluster, pulumi.ResourceOptions(depends_on=[crds])
            ),
        )
