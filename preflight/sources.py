"""Where preflight gets the objects, releases and plan sections: builders and checks, no Pulumi."""

from __future__ import annotations

from typing import Any

from builders.fleet import render_fleet
from builders.manifest import HelmRelease, Manifest
from checks.capacity import manager_quotas, quota_report
from checks.karmada import placement_report
from checks.preconditions import provisioning_warnings
from config.errors import Issue
from config.models import FleetConfig
from upstream.k8s import format_quantity

Section = dict[str, Any]


def collect(fleet: FleetConfig) -> tuple[list[Manifest], list[HelmRelease]]:
    """Every object and Helm release the stack would apply, per target API server.

    The composition the components use (builders.fleet), with credentials redacted.
    """
    return render_fleet(fleet)


def _quota_section(fleet: FleetConfig) -> dict[str, Any]:
    """`checks.capacity.quota_report` as a plan section (title, columns, rows)."""
    return {
        "title": "Kueue quota vs pool capacity (allocatable at maxCount)",
        "columns": [
            "cluster",
            "clusterQueue",
            "flavor",
            "pool",
            "resource",
            "nominal",
            "with borrowing",
            "capacity",
            "status",
        ],
        "rows": [
            [
                r.cluster,
                r.cluster_queue,
                r.flavor,
                r.pool,
                r.resource,
                r.nominal,
                r.reachable,
                r.capacity,
                r.status,
            ]
            for r in quota_report(fleet)
        ],
    }


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
    apps = placement_report(fleet)
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
    sections: list[Section] = [_quota_section(fleet)]
    for section in (_manager_quota_section(fleet), _placement_section(fleet)):
        if section is not None:
            sections.append(section)
    return sections, provisioning_warnings(fleet)
