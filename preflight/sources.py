"""Where preflight gets the objects, releases and plan sections: builders and checks, no Pulumi."""

from __future__ import annotations

from typing import Any, Final

from builders.dashboard import panel_queries
from builders.egress import api_server_ranges
from builders.fleet import render_fleet
from builders.manifest import HelmRelease, Manifest
from builders.monitoring import CLUSTER_LABEL, METRICS_READER, SCRAPE_JOB
from checks.access import karmada_member_access, multikueue_worker_access
from checks.capacity import manager_quotas, quota_report
from checks.dashboard import empty_panels
from checks.karmada import placement_report
from checks.preconditions import provisioning_warnings
from config.clock import today
from config.errors import Issue
from config.models import FleetConfig
from config.resolve import (
    CredentialKind,
    credential_schedule,
    dispatch_sets,
    enabled_workers,
    held_local_queues,
    member_names,
)
from upstream.azure_monitor import AMA_NAMESPACE, AMA_SCRAPE_CONFIGMAP, AMA_SERVICE_ACCOUNT
from upstream.k8s import format_quantity

Section = dict[str, Any]

# Each plan table's kind: the id the plan diff (preflight.snapshot) keys it on, and `--json`
# carries. Titles and headings are for people and may be reworded; a kind is not.
POOL_QUOTAS: Final = "poolQuotas"
MANAGER_QUOTAS: Final = "managerQuotas"
DRAIN: Final = "drain"
PLACEMENT: Final = "placement"
CREDENTIALS: Final = "credentials"
METRICS: Final = "metrics"
API_SERVER_RANGES: Final = "apiServerRanges"
AZURE_QUOTAS: Final = "azureQuotas"  # preflight.plan
AZURE_ACCESS: Final = "azureAccess"  # preflight.access

# The tables the diff reads row by row: per column, the field it reads and the heading shown.
COLUMNS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    POOL_QUOTAS: (
        ("cluster", "cluster"),
        ("clusterQueue", "clusterQueue"),
        ("flavor", "flavor"),
        ("pool", "pool"),
        ("resource", "resource"),
        ("nominal", "nominal"),
        ("reachable", "with borrowing"),
        ("capacity", "capacity"),
        ("status", "status"),
    ),
    MANAGER_QUOTAS: (
        ("clusterQueue", "clusterQueue"),
        ("resource", "resource"),
        ("manager", "manager"),
        ("workersTotal", "workers total"),
        ("perWorker", "per worker"),
        ("status", "status"),
    ),
    DRAIN: (
        ("worker", "worker"),
        ("dispatchSets", "dispatch sets"),
        ("held", "held LocalQueues"),
        ("running", "running work"),
    ),
    PLACEMENT: (
        ("application", "application"),
        ("member", "member"),
        ("subset", "subset"),
        ("replicas", "replicas"),
        ("on", "on"),
    ),
    CREDENTIALS: (
        ("credential", "credential"),
        ("cluster", "cluster"),
        ("mayDo", "may do"),
        ("policy", "rotation policy"),
        ("generation", "generation"),
        ("ageBound", "age bound"),
        ("nextRotation", "next rotation"),
    ),
}


def headings(kind: str) -> list[str]:
    """The column headings of a table the diff reads (COLUMNS), as the plan shows them."""
    return [heading for _field, heading in COLUMNS[kind]]


def fields(kind: str) -> tuple[str, ...]:
    """The fields the diff reads a row of that table by, in column order."""
    return tuple(field for field, _heading in COLUMNS[kind])


def collect(fleet: FleetConfig) -> tuple[list[Manifest], list[HelmRelease]]:
    """Every object and Helm release the stack would apply, per target API server.

    The composition the components use (builders.fleet), with credentials redacted.
    """
    return render_fleet(fleet)


def _quota_section(fleet: FleetConfig) -> dict[str, Any]:
    """`checks.capacity.quota_report` as a plan section (title, columns, rows)."""
    return {
        "kind": POOL_QUOTAS,
        "title": "Kueue quota vs pool capacity (allocatable at maxCount)",
        "columns": headings(POOL_QUOTAS),
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
        "kind": MANAGER_QUOTAS,
        "title": "MultiKueue: manager quota (admission) vs the workers' quotas (execution)",
        "columns": headings(MANAGER_QUOTAS),
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


def _drain_section(fleet: FleetConfig) -> Section | None:
    """`multiKueue.drain`: who gets no new work, through which held LocalQueues."""
    held = held_local_queues(fleet)
    if not held:
        return None
    sets = dispatch_sets(fleet)
    return {
        "kind": DRAIN,
        "title": "MultiKueue drain: no new work, admitted work runs to completion "
        "(docs/operations.md, Draining a worker)",
        "columns": headings(DRAIN),
        "rows": [
            [
                worker,
                ", ".join(s.name for s in sets if worker in s.workers),
                ", ".join(f"{ns}/{name}" for ns, name in queues) or "-",
                "finishes there (stays in its MultiKueueConfigs)",
            ]
            for worker, queues in held.items()
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
        "kind": PLACEMENT,
        "title": "Karmada placement: replicas per member (static weights) and subset (Kruise)",
        "columns": headings(PLACEMENT),
        "rows": rows,
    }


CREDENTIAL_NAMES: dict[CredentialKind, str] = {
    "multikueue": "MultiKueue worker token",
    "karmada": "Karmada member token",
}


def _credential_row(fleet: FleetConfig, cluster: str, kind: CredentialKind) -> list[Any]:
    day = today()
    s = credential_schedule(fleet, cluster, kind, day)
    bump = "multiKueue.rotation" if kind == "multikueue" else "karmada.rotation"
    manual = f" + {s.manual} by hand" if s.manual else ""
    if s.every_days is None or s.start is None:
        policy = f"by hand ({bump})"
        age = "none (never expires)"
        upcoming = "-"
    else:
        policy = f"every {s.every_days} days from {s.start}{manual}"
        if s.due_since is None:
            age = f"none until the first rotation, {s.next_rotation}"
        else:
            since = s.due_since
            age = f"{(day - since).days} days if `up` ran on or after {since}, else older"
        upcoming = str(s.next_rotation)
    may = (
        multikueue_worker_access(fleet, cluster)
        if kind == "multikueue"
        else karmada_member_access(fleet, cluster)
    )
    return [CREDENTIAL_NAMES[kind], cluster, may, policy, s.generation, age, upcoming]


def credential_section(fleet: FleetConfig) -> Section | None:
    """Each token the stack mints: what it may do, its rotation policy, age bound, next rotation."""
    rows = [_credential_row(fleet, w, "multikueue") for w in enabled_workers(fleet)]
    rows += [_credential_row(fleet, m, "karmada") for m in member_names(fleet)]
    if not rows:
        return None
    return {
        "kind": CREDENTIALS,
        "title": f"Credentials the stack mints (on {today()})",
        "columns": headings(CREDENTIALS),
        "rows": rows,
    }


def metrics_section(fleet: FleetConfig) -> Section:
    """Per cluster: what Kueue reports, and whether and how Azure Monitor scrapes it; then the
    dashboard panels this stack's Kueue leaves empty."""
    monitor = fleet.monitoring.azure_monitor
    resources = fleet.kueue.configuration.metrics.enable_cluster_queue_resources
    rows: list[list[Any]] = []
    for c in fleet.clusters:
        if monitor.enabled is None:
            addon = "not managed"
        elif c.source == "existing":
            addon = "the cluster's own"
        else:
            addon = "on" if monitor.enabled else "off"
        scrape, rbac = "-", "-"
        if monitor.enabled:
            scrape = (
                f"{AMA_SCRAPE_CONFIGMAP} ({AMA_NAMESPACE}): job {SCRAPE_JOB} every "
                f"{monitor.scrape_interval}, {CLUSTER_LABEL}={c.name}"
            )
            rbac = f"{METRICS_READER}: get /metrics -> {AMA_SERVICE_ACCOUNT}"
        rows.append([c.name, "on" if resources else "off", addon, scrape, rbac])
    rows += [
        [
            "(dashboard)",
            "-",
            "-",
            f"panel {title!r} stays empty",
            f"set {setting}".replace(": ", ":\n", 1),
        ]
        for title, setting in empty_panels(fleet, panel_queries()).items()
    ]
    return {
        "kind": METRICS,
        "title": "Metrics (docs/metrics.md): Kueue's https :8443/metrics on every cluster",
        "columns": ["cluster", "ClusterQueue gauges", "metrics add-on", "scrape", "scraper RBAC"],
        "rows": rows,
    }


def _ranges_section(fleet: FleetConfig) -> Section | None:
    rows = api_server_ranges(fleet)
    if not rows:
        return None
    return {
        "kind": API_SERVER_RANGES,
        "title": "AKS API server authorized IP ranges (apiServerAccessProfile)",
        "columns": ["cluster", "range", "from"],
        "rows": [[r.cluster, r.range, r.source] for r in rows],
    }


def extra_sections(fleet: FleetConfig) -> tuple[list[Section], list[Issue]]:
    """Plan tables contributed by the Kubernetes layers, and their warnings."""
    sections: list[Section] = [_quota_section(fleet), metrics_section(fleet)]
    for section in (
        _manager_quota_section(fleet),
        _drain_section(fleet),
        _placement_section(fleet),
        credential_section(fleet),
        _ranges_section(fleet),
    ):
        if section is not None:
            sections.append(section)
    return sections, provisioning_warnings(fleet)
