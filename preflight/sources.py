"""Where preflight gets each layer's objects, releases and plan sections (pure builders only)."""

from __future__ import annotations

from typing import Any

from builders import karmada, kueue, multikueue
from builders.manifest import HelmRelease, Manifest
from config.errors import Issue
from config.models import FleetConfig
from config.multikueue import (
    extra_checks,
    format_quantity,
    manager_quotas,
    with_mirrored_queues,
)

Section = dict[str, Any]


def collect(fleet: FleetConfig) -> tuple[list[Manifest], list[HelmRelease]]:
    """Every object and Helm release the stack would apply, per target API server.

    The same builders the components use; Kueue objects as deployed (with MultiKueue, manager
    LocalQueues mirrored to workers and the dispatch check on the manager's queues).
    """
    manifests = kueue.render_kueue(with_mirrored_queues(fleet), extra_checks(fleet))
    if fleet.multi_kueue is not None:
        manifests += multikueue.render_multikueue(fleet)
    manifests += karmada.render_karmada(fleet)
    releases = [
        *kueue.kueue_releases(fleet),
        *karmada.kruise_releases(fleet),
        *karmada.karmada_releases(fleet),
    ]
    return manifests, releases


def _manager_quota_section(fleet: FleetConfig) -> Section | None:
    rows = manager_quotas(fleet)
    if not rows:
        return None
    return {
        "title": "MultiKueue: manager quota (admission) vs the workers' quotas (execution)",
        "columns": ["clusterQueue", "resource", "manager", "workers total", "per worker", "status"],
        "rows": [
            [
                r.cluster_queue,
                r.resource,
                "-" if r.declared is None else format_quantity(r.resource, r.declared),
                r.suggested,
                ", ".join(f"{w}={format_quantity(r.resource, v)}" for w, v in r.per_worker.items()),
                r.status,
            ]
            for r in rows
        ],
    }


def _placement_section(fleet: FleetConfig) -> Section | None:
    apps = karmada.placement_report(fleet)
    if not apps:
        return None
    rows: list[list[Any]] = []
    for app in apps:
        tie = " (tie: depends on the object's UID)" if app.uid_dependent else ""
        for member, subset, count, virtual in app.rows():
            nodes = "virtual nodes" if virtual else "nodes"
            rows.append([f"{app.namespace}/{app.name}{tie}", member, subset, count, nodes])
        if not app.plan.member_subsets:
            rows += [
                [f"{app.namespace}/{app.name}", m, "-", n, "-"] for m, n in app.plan.members.items()
            ]
    return {
        "title": "Karmada placement: replicas per member (static weights) and subset (Kruise)",
        "columns": ["application", "member", "subset", "replicas", "on"],
        "rows": rows,
    }


def extra_sections(fleet: FleetConfig) -> tuple[list[Section], list[Issue]]:
    """Plan tables contributed by the Kubernetes layers, and their warnings."""
    sections: list[Section] = [kueue.quota_section(fleet)]
    for section in (_manager_quota_section(fleet), _placement_section(fleet)):
        if section is not None:
            sections.append(section)
    return sections, kueue.provisioning_warnings(fleet)
