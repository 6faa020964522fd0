"""The fleet's Grafana dashboard, from typed objects (grafana-foundation-sdk). Pure.

Every query names only metrics Kueue v0.19.2 exports (`upstream.kueue_metrics`, held so by
tests/test_dashboard.py with a real PromQL parser) and the labels the scrape job adds
(`builders.monitoring`). `python -m preflight dashboard` prints it as JSON (docs/metrics.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.builders import prometheus, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as dm

from builders.monitoring import CLUSTER_LABEL

DASHBOARD_UID = "aks-batch-fleet-kueue"
DATASOURCE_VARIABLE = "datasource"
# Every query reads the clusters the `fleet_cluster` variable selects, and no follower replica
# (with `kueue.replicas` >= 2 the followers export the same gauges).
SELECTED = f'{CLUSTER_LABEL}=~"${CLUSTER_LABEL}", replica_role!="follower"'
RATE = "5m"


@dataclass(frozen=True, slots=True)
class Query:
    """One PromQL target of a panel, and how its series are named in the legend."""

    expr: str
    legend: str


@dataclass(frozen=True, slots=True)
class PanelSpec:
    """One time-series panel: what it shows, its unit, and its queries."""

    title: str
    description: str
    unit: str
    queries: tuple[Query, ...]


def _p90(histogram: str, by: str) -> str:
    return (
        f"histogram_quantile(0.9, sum by (le, {by}) "
        f"(rate({histogram}_bucket{{{SELECTED}}}[{RATE}])))"
    )


# MultiKueue's two counters are per (ClusterQueue, worker) and exported by the manager only.
_MK = SELECTED
_CQ = f"{CLUSTER_LABEL}, cluster_queue"
_RES = f"{CLUSTER_LABEL}, cluster_queue, flavor, resource"

ROWS: tuple[tuple[str, tuple[PanelSpec, ...]], ...] = (
    (
        "MultiKueue: per worker (the manager's view)",
        (
            PanelSpec(
                "Dispatched to each worker",
                "Remote Workloads the manager created on each worker (rate). Kueue 0.19.2 has no "
                "worker health gauge: a worker that takes dispatches and never admits is the "
                "sign (next panel).",
                "ops",
                (
                    Query(
                        f"sum by (cluster) (rate(multikueue_workloads_dispatched_total{{{_MK}}}"
                        f"[{RATE}]))",
                        "{{cluster}}",
                    ),
                ),
            ),
            PanelSpec(
                "Admitted on each worker",
                "Remote Workloads each worker admitted (rate); a Workload counts again when "
                "re-admitted after an eviction.",
                "ops",
                (
                    Query(
                        f"sum by (cluster) (rate(multikueue_workloads_admitted_total{{{_MK}}}"
                        f"[{RATE}]))",
                        "{{cluster}}",
                    ),
                ),
            ),
            PanelSpec(
                "Dispatched minus admitted, last hour",
                "Per worker: dispatches the worker did not admit within the hour. With the "
                "AllAtOnce dispatcher every worker of a set gets each job and one wins, so the "
                "others grow too; a worker whose admitted stays at zero while others admit is "
                "down or full.",
                "short",
                (
                    Query(
                        f"sum by (cluster) (increase(multikueue_workloads_dispatched_total"
                        f"{{{_MK}}}[1h])) - sum by (cluster) (increase("
                        f"multikueue_workloads_admitted_total{{{_MK}}}[1h]))",
                        "{{cluster}}",
                    ),
                ),
            ),
        ),
    ),
    (
        "Quota and usage per ClusterQueue, across clusters",
        (
            PanelSpec(
                "Usage against nominal quota",
                "kueue_cluster_queue_resource_usage and _nominal_quota (needs "
                "kueue.configuration.metrics.enableClusterQueueResources, on by default).",
                "short",
                (
                    Query(
                        f"sum by ({_RES}) (kueue_cluster_queue_resource_usage{{{SELECTED}}})",
                        "usage {{fleet_cluster}}/{{cluster_queue}} {{flavor}} {{resource}}",
                    ),
                    Query(
                        f"sum by ({_RES}) (kueue_cluster_queue_nominal_quota{{{SELECTED}}})",
                        "quota {{fleet_cluster}}/{{cluster_queue}} {{flavor}} {{resource}}",
                    ),
                ),
            ),
            PanelSpec(
                "Usage / nominal quota",
                "Above 1: the queue borrows from its cohort.",
                "percentunit",
                (
                    Query(
                        f"sum by ({_RES}) (kueue_cluster_queue_resource_usage{{{SELECTED}}}) / "
                        f"sum by ({_RES}) (kueue_cluster_queue_nominal_quota{{{SELECTED}}})",
                        "{{fleet_cluster}}/{{cluster_queue}} {{flavor}} {{resource}}",
                    ),
                ),
            ),
        ),
    ),
    (
        "Pending and admitted",
        (
            PanelSpec(
                "Pending Workloads",
                "Per ClusterQueue and status: active (in the queue) or inadmissible (retried "
                "only when the cluster changes).",
                "short",
                (
                    Query(
                        f"sum by ({_CQ}, status) (kueue_pending_workloads{{{SELECTED}}})",
                        "{{fleet_cluster}}/{{cluster_queue}} {{status}}",
                    ),
                ),
            ),
            PanelSpec(
                "Admitted, running",
                "Workloads holding an admission now.",
                "short",
                (
                    Query(
                        f"sum by ({_CQ}) (kueue_admitted_active_workloads{{{SELECTED}}})",
                        "{{fleet_cluster}}/{{cluster_queue}}",
                    ),
                ),
            ),
            PanelSpec(
                "Time to admission, p90",
                "From creation to admission (quota reserved and every admission check ready).",
                "s",
                (
                    Query(
                        _p90("kueue_admission_wait_time_seconds", _CQ),
                        "{{fleet_cluster}}/{{cluster_queue}}",
                    ),
                ),
            ),
            PanelSpec(
                "ClusterQueues not active",
                "1 while a ClusterQueue is pending or terminating (e.g. a missing flavor or an "
                "inactive admission check).",
                "short",
                (
                    Query(
                        f"sum by ({_CQ}, status) (kueue_cluster_queue_status"
                        f'{{{SELECTED}, status!="active"}})',
                        "{{fleet_cluster}}/{{cluster_queue}} {{status}}",
                    ),
                ),
            ),
        ),
    ),
    (
        "Admission checks (ProvisioningRequest on workers, MultiKueue on the manager)",
        (
            PanelSpec(
                "Admission check wait, p90",
                "From quota reservation to every admission check Ready: on a gated worker, the "
                "ProvisioningRequest's scale-up; on the manager, a worker's admission.",
                "s",
                (
                    Query(
                        _p90("kueue_admission_checks_wait_time_seconds", _CQ),
                        "{{fleet_cluster}}/{{cluster_queue}}",
                    ),
                ),
            ),
            PanelSpec(
                "Evictions by reason, last hour",
                "reason AdmissionCheck: a check turned Retry or Rejected (a failed or expired "
                "ProvisioningRequest on a worker).",
                "short",
                (
                    Query(
                        f"sum by ({_CQ}, reason) (increase(kueue_evicted_workloads_total"
                        f"{{{SELECTED}}}[1h]))",
                        "{{fleet_cluster}}/{{cluster_queue}} {{reason}}",
                    ),
                ),
            ),
            PanelSpec(
                "Not admitted, by reason",
                "Workloads Kueue could not admit now, and why. Empty unless Kueue's beta gate "
                "UnadmittedWorkloadsObservability is on (kueue.featureGates; off by default).",
                "short",
                (
                    Query(
                        f"sum by ({_CQ}, reason) (kueue_unadmitted_workloads{{{SELECTED}}})",
                        "{{fleet_cluster}}/{{cluster_queue}} {{reason}}",
                    ),
                ),
            ),
        ),
    ),
    (
        "Kueue controllers",
        (
            PanelSpec(
                "Kueue replicas reporting, per cluster and version",
                "A cluster missing here is not scraped (add-on off, RBAC, or Kueue down).",
                "short",
                (
                    Query(
                        f"count by ({CLUSTER_LABEL}, git_version) (kueue_build_info{{"
                        f'{CLUSTER_LABEL}=~"${CLUSTER_LABEL}"}})',
                        "{{fleet_cluster}} {{git_version}}",
                    ),
                ),
            ),
        ),
    ),
)


def panel_queries() -> list[tuple[str, str]]:
    """Every (panel title, PromQL) of the dashboard, in order."""
    return [(p.title, q.expr) for _, panels in ROWS for p in panels for q in p.queries]


def _datasource() -> dm.DataSourceRef:
    return dm.DataSourceRef(type_val="prometheus", uid=f"${{{DATASOURCE_VARIABLE}}}")


def _panel(spec: PanelSpec) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(spec.title)
        .description(spec.description)
        .unit(spec.unit)
        .datasource(_datasource())
        .height(8)
        .span(12)
    )
    for i, q in enumerate(spec.queries):
        panel = panel.with_target(
            prometheus.Dataquery().expr(q.expr).legend_format(q.legend).ref_id(chr(ord("A") + i))
        )
    return panel


def fleet_dashboard() -> dict[str, Any]:
    """The dashboard as Grafana's JSON model."""
    board = (
        gd.Dashboard("aks-batch-fleet: Kueue and MultiKueue")
        .uid(DASHBOARD_UID)
        .tags(["aks-batch-fleet", "kueue", "multikueue"])
        .editable()
        .time("now-6h", "now")
        .refresh("1m")
        .with_variable(
            gd.DatasourceVariable(DATASOURCE_VARIABLE).label("Prometheus").type("prometheus")
        )
        .with_variable(
            gd.QueryVariable(CLUSTER_LABEL)
            .label("cluster")
            .datasource(_datasource())
            .query(f"label_values(kueue_build_info, {CLUSTER_LABEL})")
            .multi(True)
            .include_all(True)
            .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
        )
    )
    for title, panels in ROWS:
        board = board.with_row(gd.Row(title))
        for spec in panels:
            board = board.with_panel(_panel(spec))
    return cast("dict[str, Any]", json.loads(json.dumps(board.build(), cls=JSONEncoder)))
