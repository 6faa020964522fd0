"""Kueue on one cluster: the Helm release, then its namespaces, flavors, gates and queues."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from builders import kueue as kq
from components.kube import kube_object
from config.kueue import KueueSettings
from config.models import ClusterConfig
from constants import TYPE_PREFIX, WAIT_FOR

# Kueue reports Active=False (e.g. FlavorNotFound, AdmissionCheckInactive, or a queue with both a
# MultiKueue and a ProvisioningRequest check): `pulumi up` must fail then, not look green.
READY_WHEN_ACTIVE = frozenset({"ClusterQueue", "AdmissionCheck"})


@dataclass(frozen=True, kw_only=True)
class KueueArgs:
    """One cluster's config, the fleet-wide Kueue settings, and the cluster's provider."""

    cluster: ClusterConfig
    settings: KueueSettings
    provider: k8s.Provider
    # Admission checks other components add per ClusterQueue name (MultiKueue's on the manager).
    extra_checks: kq.ExtraChecks | None = None
    # Objects this cluster's queues name that another layer defines (the MultiKueue
    # AdmissionCheck on the manager): created here, before the queues that depend on them.
    extra_objects: Sequence[Mapping[str, Any]] = ()
    # The pinned CRD files, for `install: manifests-only` (found by the composition root).
    crd_files: Sequence[str] = ()


def _metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = dict(obj["metadata"])
    if obj["kind"] in READY_WHEN_ACTIVE:
        meta["annotations"] = {**meta.get("annotations", {}), WAIT_FOR: "condition=Active"}
    return meta


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return "/".join(p for p in (obj["kind"], meta.get("namespace"), meta["name"]) if p)


def _references(obj: Mapping[str, Any]) -> list[str]:
    """Keys of the objects `obj` names: create them first, delete them after."""
    spec: Mapping[str, Any] = obj.get("spec", {})
    kind = obj["kind"]
    if kind == "AdmissionCheck":
        return [f"ProvisioningRequestConfig/{spec['parameters']['name']}"]
    if kind == "ClusterQueue":
        flavors = [
            f"ResourceFlavor/{f['name']}" for g in spec["resourceGroups"] for f in g["flavors"]
        ]
        checks = spec.get("admissionChecksStrategy", {}).get("admissionChecks", [])
        return [*flavors, *(f"AdmissionCheck/{c['name']}" for c in checks)]
    if kind == "LocalQueue":
        return [f"Namespace/{obj['metadata']['namespace']}", f"ClusterQueue/{spec['clusterQueue']}"]
    return []


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
        self.objects = {}
        extra = args.extra_checks or {}
        for obj in [*args.extra_objects, *kq.cluster_objects(cluster, extra)]:
            key = _key(obj)
            # Every object waits for the release (CRDs and webhooks); on destroy, the reverse
            # order removes objects (Kueue's resource-in-use finalizers) before the controller.
            depends: list[pulumi.Resource] = [self.ready]
            depends += [self.objects[k] for k in _references(obj) if k in self.objects]
            child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=depends)
            # Cluster-scoped names are unique per kind; namespaced ones keep `ns/name` (a DNS
            # label has no '/', so `a/b-c` and `a-b/c` stay distinct).
            suffix = obj["kind"].lower() + "-" + key.split("/", 1)[1]
            self.objects[key] = kube_object(
                f"{name}-{suffix}", {**obj, "metadata": _metadata(obj)}, child
            )
        self.cluster_queues = [cq.name for cq in cluster.queues.cluster_queues]
        self.local_queues = [f"{lq.namespace}/{lq.name}" for lq in cluster.queues.local_queues]
        self.register_outputs(
            {
                "releaseStatus": self.release.status if self.release else None,
                "clusterQueues": self.cluster_queues,
                "localQueues": self.local_queues,
            }
        )

    def _helm(self, name: str, args: KueueArgs) -> k8s.helm.v3.Release:
        """The pinned chart, waited for: its webhooks reject queue objects until Ready."""
        chart = kq.kueue_release(args.settings, args.cluster)
        return k8s.helm.v3.Release(
            f"{name}-release",
            name=chart.release,  # explicit: chart object names derive from it
            chart=chart.chart,
            version=chart.version,
            namespace=chart.namespace,
            create_namespace=True,
            values=chart.values,
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
            metadata={"name": kq.KUEUE_NAMESPACE},
            opts=pulumi.ResourceOptions.merge(
                on_cluster, pulumi.ResourceOptions(depends_on=[crds])
            ),
        )
