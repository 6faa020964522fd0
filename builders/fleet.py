"""The one composition of the fleet: config -> every object and Helm release, per API server.

`Fleet` (the component) and `preflight` both take their objects from here, so what preflight
renders is what the program registers (tests/test_render_equals_registration.py checks it).
Values known only at deploy time (tokens, CAs, API servers) are redacted placeholders here; the
components build the same objects with the real values.
"""

from __future__ import annotations

from builders import frameworks, karmada, kueue, kueue_queues, monitoring, multikueue
from builders.gpu import device_plugin_release
from builders.manifest import HelmRelease, Manifest
from config.models import FleetConfig
from config.resolve import (
    dispatch_sets,
    held_local_queues,
    multikueue_checks,
    with_mirrored_queues,
)


def kueue_objects(fleet: FleetConfig) -> dict[str, list[Manifest]]:
    """Per cluster, every Kueue queue object as deployed, and the scrape config of its metrics.

    With MultiKueue the manager's LocalQueues are mirrored onto the workers, and the manager's
    dispatching ClusterQueues carry their set's MultiKueue AdmissionCheck, created with them
    (before them, deleted after them: Kueue's finalizer holds a check a queue still lists). A
    drained worker's mirrored LocalQueues are held (`multiKueue.drain`).
    """
    added = multikueue_checks(fleet)
    held = held_local_queues(fleet)
    manager = fleet.manager
    out: dict[str, list[Manifest]] = {}
    for cluster in with_mirrored_queues(fleet).clusters:
        objects: list[Manifest] = []
        if manager is not None and cluster.name == manager.name:
            objects += [
                Manifest(cluster.name, multikueue.admission_check(s.name, s.name))
                for s in dispatch_sets(fleet)
            ]
        version = fleet.known_version_of(cluster)
        objects += kueue_queues.cluster_objects(
            cluster,
            added.get(cluster.name),
            version,
            fleet.kueue.workload_priority_classes,
            held=held.get(cluster.name, ()),
            protect_batch_pods=fleet.upgrades_of(cluster).batch_pods == "protect",
        )
        out[cluster.name] = objects + monitoring.monitoring_objects(fleet, cluster)
    return out


def helm_releases(fleet: FleetConfig) -> list[HelmRelease]:
    """Every Helm release: Kueue on each cluster, the NVIDIA device plugin where GPU pools are,
    KubeRay on its workers, Kruise on each member, Karmada on its host."""
    plugins = [device_plugin_release(fleet, c) for c in fleet.clusters]
    return [
        *kueue.kueue_releases(fleet),
        *(p for p in plugins if p is not None),
        *frameworks.kuberay_releases(fleet),
        *karmada.kruise_releases(fleet),
        *karmada.karmada_releases(fleet),
    ]


def render_fleet(fleet: FleetConfig) -> tuple[list[Manifest], list[HelmRelease]]:
    """Every object (credentials redacted) and Helm release the stack would apply."""
    manifests = [m for objects in kueue_objects(fleet).values() for m in objects]
    manifests += multikueue.render_multikueue(fleet)
    manifests += karmada.render_karmada(fleet)
    return manifests, helm_releases(fleet)
