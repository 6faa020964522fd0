"""The Prometheus metrics Kueue v0.19.2 exports: names, types and fixed labels. Pinned facts.

Read from sigs.k8s.io/kueue@v0.19.2 (tag commit 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb, from the
Go module proxy), file pkg/metrics/metrics.go, `InitMetricVectors` (every `prometheus.New*Vec` with
`Subsystem: constants.KueueName` ("kueue") or `constants.MultiKueueName` ("multikueue"), and its
label list), on 2026-12-03. 60 metrics; `Register()` registers them all except the local-queue
ones (gate LocalQueueMetrics) and `kueue_workload_creation_latency_seconds` (gate
MetricForWorkloadCreationLatency). The ClusterQueue resource gauges
(`kueue_cluster_queue_resource_*`, `_nominal_quota`, `_borrowing_limit`, `_lending_limit`) carry
values only with the Configuration's
`metrics.enableClusterQueueResources: true` (cmd/kueue/main.go, pkg/controller/core/core.go).
Custom labels (`metrics.customLabels`, gate CustomMetricLabels) add `custom_*` labels to most.

What v0.19.2 does not have (docs/metrics.md "What Kueue 0.19.2 cannot show"): no gauge of a
MultiKueueCluster's Active state (worker health), no ProvisioningRequest metric, no per-check
admission-check state; a worker's health is inferred from dispatched against admitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

KUEUE_METRICS_VERSION: Final = "0.19.2"


@dataclass(frozen=True, slots=True)
class KueueMetric:
    """One metric family: its Prometheus type and the labels Kueue always sets."""

    kind: Literal["counter", "gauge", "histogram"]
    labels: tuple[str, ...]


# Every label set also has `replica_role` ("leader", "follower" or "standalone"): with
# `kueue.replicas` >= 2 the followers export too, so fleet queries keep `replica_role!="follower"`.
KUEUE_METRICS: Final[dict[str, KueueMetric]] = {
    "kueue_admission_attempts_total": KueueMetric("counter", ("result", "replica_role")),
    "kueue_admission_attempt_duration_seconds": KueueMetric(
        "histogram", ("result", "replica_role")
    ),
    "multikueue_workloads_dispatched_total": KueueMetric(
        "counter", ("cluster_queue", "cluster", "replica_role")
    ),
    "multikueue_workloads_admitted_total": KueueMetric(
        "counter", ("cluster_queue", "cluster", "replica_role")
    ),
    "kueue_admission_cycle_preemption_skips": KueueMetric(
        "gauge", ("cluster_queue", "replica_role")
    ),
    "kueue_build_info": KueueMetric(
        "gauge", ("git_version", "git_commit", "build_date", "go_version", "compiler", "platform")
    ),
    "kueue_pending_workloads": KueueMetric("gauge", ("cluster_queue", "status", "replica_role")),
    "kueue_local_queue_pending_workloads": KueueMetric(
        "gauge", ("name", "namespace", "status", "replica_role")
    ),
    "kueue_finished_workloads": KueueMetric("gauge", ("cluster_queue", "replica_role")),
    "kueue_local_queue_finished_workloads": KueueMetric(
        "gauge", ("name", "namespace", "replica_role")
    ),
    "kueue_quota_reserved_workloads_total": KueueMetric(
        "counter", ("cluster_queue", "priority_class", "replica_role")
    ),
    "kueue_local_queue_quota_reserved_workloads_total": KueueMetric(
        "counter", ("name", "namespace", "priority_class", "replica_role")
    ),
    "kueue_finished_workloads_total": KueueMetric(
        "counter", ("cluster_queue", "priority_class", "replica_role")
    ),
    "kueue_local_queue_finished_workloads_total": KueueMetric(
        "counter", ("name", "namespace", "priority_class", "replica_role")
    ),
    "kueue_quota_reserved_wait_time_seconds": KueueMetric(
        "histogram", ("cluster_queue", "priority_class", "replica_role")
    ),
    "kueue_pods_ready_to_evicted_time_seconds": KueueMetric(
        "histogram", ("cluster_queue", "reason", "underlying_cause", "replica_role")
    ),
    "kueue_local_queue_quota_reserved_wait_time_seconds": KueueMetric(
        "histogram", ("name", "namespace", "priority_class", "replica_role")
    ),
    "kueue_admitted_workloads_total": KueueMetric(
        "counter", ("cluster_queue", "priority_class", "replica_role")
    ),
    "kueue_local_queue_admitted_workloads_total": KueueMetric(
        "counter", ("name", "namespace", "priority_class", "replica_role")
    ),
    "kueue_admission_wait_time_seconds": KueueMetric(
        "histogram", ("cluster_queue", "priority_class", "replica_role")
    ),
    "kueue_ready_wait_time_seconds": KueueMetric(
        "histogram", ("cluster_queue", "priority_class", "replica_role")
    ),
    "kueue_admitted_until_ready_wait_time_seconds": KueueMetric(
        "histogram", ("cluster_queue", "priority_class", "replica_role")
    ),
    "kueue_local_queue_admission_wait_time_seconds": KueueMetric(
        "histogram", ("name", "namespace", "priority_class", "replica_role")
    ),
    "kueue_admission_checks_wait_time_seconds": KueueMetric(
        "histogram", ("cluster_queue", "priority_class", "replica_role")
    ),
    "kueue_local_queue_admission_checks_wait_time_seconds": KueueMetric(
        "histogram", ("name", "namespace", "priority_class", "replica_role")
    ),
    "kueue_local_queue_ready_wait_time_seconds": KueueMetric(
        "histogram", ("name", "namespace", "priority_class", "replica_role")
    ),
    "kueue_local_queue_admitted_until_ready_wait_time_seconds": KueueMetric(
        "histogram", ("name", "namespace", "priority_class", "replica_role")
    ),
    "kueue_workload_creation_latency_seconds": KueueMetric(
        "histogram", ("job_kind", "replica_role")
    ),
    "kueue_pod_scheduling_gate_removal_seconds": KueueMetric(
        "histogram", ("name", "cluster_queue", "is_group", "replica_role")
    ),
    "kueue_evicted_workloads_total": KueueMetric(
        "counter", ("cluster_queue", "reason", "underlying_cause", "priority_class", "replica_role")
    ),
    "kueue_replaced_workload_slices_total": KueueMetric(
        "counter", ("cluster_queue", "replica_role")
    ),
    "kueue_local_queue_evicted_workloads_total": KueueMetric(
        "counter",
        ("name", "namespace", "reason", "underlying_cause", "priority_class", "replica_role"),
    ),
    "kueue_evicted_workloads_once_total": KueueMetric(
        "counter", ("cluster_queue", "reason", "underlying_cause", "priority_class", "replica_role")
    ),
    "kueue_preempted_workloads_total": KueueMetric(
        "counter", ("preempting_cluster_queue", "reason", "replica_role")
    ),
    "kueue_workload_eviction_latency_seconds": KueueMetric(
        "histogram", ("cluster_queue", "reason", "replica_role")
    ),
    "kueue_reserving_active_workloads": KueueMetric("gauge", ("cluster_queue", "replica_role")),
    "kueue_local_queue_reserving_active_workloads": KueueMetric(
        "gauge", ("name", "namespace", "replica_role")
    ),
    "kueue_admitted_active_workloads": KueueMetric("gauge", ("cluster_queue", "replica_role")),
    "kueue_local_queue_admitted_active_workloads": KueueMetric(
        "gauge", ("name", "namespace", "replica_role")
    ),
    "kueue_cluster_queue_status": KueueMetric("gauge", ("cluster_queue", "status", "replica_role")),
    "kueue_local_queue_status": KueueMetric(
        "gauge", ("name", "namespace", "active", "replica_role")
    ),
    "kueue_unadmitted_workloads": KueueMetric(
        "gauge", ("cluster_queue", "reason", "underlying_cause", "replica_role")
    ),
    "kueue_local_queue_unadmitted_workloads": KueueMetric(
        "gauge",
        ("name", "namespace", "cluster_queue", "reason", "underlying_cause", "replica_role"),
    ),
    "kueue_cluster_queue_resource_reservation": KueueMetric(
        "gauge", ("cohort", "cluster_queue", "flavor", "resource", "replica_role")
    ),
    "kueue_cluster_queue_resource_pending": KueueMetric(
        "gauge", ("cluster_queue", "resource", "replica_role")
    ),
    "kueue_cluster_queue_resource_usage": KueueMetric(
        "gauge", ("cohort", "cluster_queue", "flavor", "resource", "replica_role")
    ),
    "kueue_local_queue_resource_reservation": KueueMetric(
        "gauge", ("name", "namespace", "flavor", "resource", "replica_role")
    ),
    "kueue_local_queue_resource_usage": KueueMetric(
        "gauge", ("name", "namespace", "flavor", "resource", "replica_role")
    ),
    "kueue_local_queue_admission_fair_sharing_usage": KueueMetric(
        "gauge", ("name", "namespace", "cluster_queue", "replica_role")
    ),
    "kueue_cluster_queue_nominal_quota": KueueMetric(
        "gauge", ("cohort", "cluster_queue", "flavor", "resource", "replica_role")
    ),
    "kueue_cluster_queue_borrowing_limit": KueueMetric(
        "gauge", ("cohort", "cluster_queue", "flavor", "resource", "replica_role")
    ),
    "kueue_cluster_queue_lending_limit": KueueMetric(
        "gauge", ("cohort", "cluster_queue", "flavor", "resource", "replica_role")
    ),
    "kueue_cluster_queue_weighted_share": KueueMetric(
        "gauge", ("cluster_queue", "cohort", "replica_role")
    ),
    "kueue_cohort_weighted_share": KueueMetric("gauge", ("cohort", "replica_role")),
    "kueue_cohort_subtree_quota": KueueMetric(
        "gauge", ("cohort", "flavor", "resource", "replica_role")
    ),
    "kueue_cohort_subtree_admitted_workloads_total": KueueMetric(
        "counter", ("cohort", "priority_class", "replica_role")
    ),
    "kueue_cohort_subtree_resource_reservations": KueueMetric(
        "gauge", ("cohort", "flavor", "resource", "replica_role")
    ),
    "kueue_cohort_subtree_admitted_active_workloads": KueueMetric(
        "gauge", ("cohort", "replica_role")
    ),
    "kueue_cohort_info": KueueMetric(
        "gauge", ("cohort", "parent_cohort", "root_cohort", "replica_role")
    ),
    "kueue_cluster_queue_info": KueueMetric(
        "gauge", ("cluster_queue", "parent_cohort", "root_cohort", "replica_role")
    ),
}

# Families whose values Kueue reports only with Configuration `metrics.enableClusterQueueResources`
# (pkg/cache/scheduler/clusterqueue.go reportResourceMetrics, pkg/cache/queue/metrics.go, and the
# weighted share under fair sharing: pkg/controller/core/clusterqueue_controller.go).
CLUSTER_QUEUE_RESOURCE_METRICS: Final = frozenset(
    {
        "kueue_cluster_queue_nominal_quota",
        "kueue_cluster_queue_borrowing_limit",
        "kueue_cluster_queue_lending_limit",
        "kueue_cluster_queue_resource_reservation",
        "kueue_cluster_queue_resource_usage",
        "kueue_cluster_queue_resource_pending",
        "kueue_cluster_queue_weighted_share",
    }
)
# Families Kueue registers but fills only with a feature gate that is off by default at v0.19.2
# (pkg/features/kube_features.go: UnadmittedWorkloadsObservability, beta, default false, read by
# pkg/cache/queue/manager.go).
OFF_BY_DEFAULT_GATES: Final[dict[str, str]] = {
    "kueue_unadmitted_workloads": "UnadmittedWorkloadsObservability",
    "kueue_local_queue_unadmitted_workloads": "UnadmittedWorkloadsObservability",
}

# The series names a histogram family exposes (Prometheus text format).
HISTOGRAM_SUFFIXES: Final = ("_bucket", "_sum", "_count")


def metric_family(series: str) -> str | None:
    """The Kueue metric family a series name belongs to (a histogram's `_bucket` too), or None."""
    if series in KUEUE_METRICS:
        return series
    for suffix in HISTOGRAM_SUFFIXES:
        base = series.removesuffix(suffix)
        family = KUEUE_METRICS.get(base) if base != series else None
        if family is not None and family.kind == "histogram":
            return base
    return None
