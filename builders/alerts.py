"""The fleet's Prometheus alert rules, as code: what pages someone when the fleet breaks. Pure data.

Rules over Kueue v0.19.2's metrics and the scrape job's own `up` (builders.monitoring: every
series carries `fleet_cluster`, the stack's name of the cluster that reported it). Each rule says
what broke, where, and what to read next (`fleetview`, docs/operations.md). checks/alerts.py
parses every expression and holds it to the pinned metric families and labels.

What Kueue 0.19.2 cannot say as a metric (upstream.kueue_metrics): a MultiKueueCluster's Active
state, a ProvisioningRequest's state, a job stranded between manager and worker. So a lost worker
is its Kueue no longer answering the scrape (the cluster, or the way to it, is gone), a failing
gate is repeated evictions by an admission check, and a stranded job stays with `fleetview status
--fail-on warning` run on a schedule (docs/observability.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from builders.monitoring import CLUSTER_LABEL, SCRAPE_JOB
from config.models import FleetConfig
from upstream.kueue import DEFAULT_WORKER_LOST_TIMEOUT

GROUP: Final = "aks-batch-fleet"
LEADER: Final = 'replica_role!="follower"'  # one series per Kueue, not per replica
# How long a queue may hold pending work without admitting any before it pages (the window of
# the rule; long batch jobs on a full quota admit nothing for a while and are not starvation).
STARVED_WINDOW: Final = "3h"
# Evictions of one kind within an hour before they page (one is Kueue doing its job).
EVICTIONS_PER_HOUR: Final = 3


@dataclass(frozen=True, slots=True)
class AlertRule:
    """One Prometheus alerting rule."""

    name: str
    expr: str
    hold: str  # the rule's `for`
    severity: str
    summary: str
    description: str

    def rule(self) -> dict[str, Any]:
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.hold,
            "labels": {"severity": self.severity},
            "annotations": {"summary": self.summary, "description": self.description},
        }


def _unreachable(fleet: FleetConfig, cluster: str, role: str) -> AlertRule:
    up = f'up{{job="{SCRAPE_JOB}", {CLUSTER_LABEL}="{cluster}"}}'
    settings = fleet.kueue.multi_kueue
    lost = settings.worker_lost_timeout or DEFAULT_WORKER_LOST_TIMEOUT
    what = {
        "worker": (
            f"worker {cluster} is lost to the fleet: the manager's MultiKueue moves the jobs "
            f"admitted there to other workers {lost} after its connection drops "
            "(kueue.multiKueue.workerLostTimeout); `fleetview status` names them"
        ),
        "manager": (
            f"the manager ({cluster}) dispatches nothing while its Kueue is down: jobs wait on "
            "it, none is lost"
        ),
    }.get(role, f"{cluster} admits nothing while its Kueue is down")
    return AlertRule(
        name="FleetKueueUnreachable",
        # Every replica down, or no scrape at all for 10 minutes (the cluster's own collector,
        # as with managed Prometheus, is gone with it).
        expr=f"max by ({CLUSTER_LABEL}) ({up}) == 0 or absent_over_time({up}[10m])",
        hold="5m",
        severity="critical",
        summary=f"Kueue on {cluster} cannot be scraped",
        description=f"{what}. Check the cluster's API server and Kueue's pods "
        f'(`fleetview status`; docs/operations.md, "When things go wrong").',
    )


def _starved() -> AlertRule:
    by = f"{CLUSTER_LABEL}, cluster_queue"
    # Both of Kueue's pending lists: a Workload whose admission failed waits in `inadmissible`
    # until something changes (Kueue v0.19.2 pkg/metrics/metrics.go, kueue_pending_workloads'
    # help), the backlog of quota no pool can give that this rule is for.
    pending = (
        f'sum by ({by}) (kueue_pending_workloads{{status=~"active|inadmissible", {LEADER}}}) > 0'
    )
    admitted = f"kueue_admitted_workloads_total{{{LEADER}}}"
    # Admitted some in the window: the counter grew, or its series is younger than the window.
    # Kueue creates a ClusterQueue's series at its first admission, with 1 (metrics.go
    # AdmittedWorkload: WithLabelValues(...).Inc()), and increase() reads a series' first
    # sample as no increase, so a queue's first admission since its Kueue started would read as
    # none (a healthy queue with a backlog then looked starved on the twin).
    recent = (
        f"(sum by ({by}) (increase({admitted}[{STARVED_WINDOW}])) > 0)"
        f" or (sum by ({by}) ({admitted})"
        f" unless sum by ({by}) ({admitted} offset {STARVED_WINDOW}))"
    )
    return AlertRule(
        name="FleetQueueStarved",
        expr=f"({pending}) unless on ({by}) ({recent})",
        hold="15m",
        severity="warning",
        summary="a ClusterQueue has pending work and admitted none for " + STARVED_WINDOW,
        description=f"ClusterQueue {{{{ $labels.cluster_queue }}}} on "
        f"{{{{ $labels.{CLUSTER_LABEL} }}}} has pending Workloads and admitted none in "
        f"{STARVED_WINDOW}: a stopped queue, quota no pool can give, or every job longer than "
        "that on a full quota. `fleetview why <namespace>/<job>` says which.",
    )


def _evictions(name: str, reason: str, what: str) -> AlertRule:
    by = f"{CLUSTER_LABEL}, cluster_queue"
    return AlertRule(
        name=name,
        expr=(
            f"sum by ({by}) (increase(kueue_evicted_workloads_total"
            f'{{reason="{reason}", {LEADER}}}[1h])) >= {EVICTIONS_PER_HOUR}'
        ),
        hold="0m",
        severity="warning",
        summary=f"{EVICTIONS_PER_HOUR} or more evictions ({reason}) in an hour",
        description=f"ClusterQueue {{{{ $labels.cluster_queue }}}} on "
        f"{{{{ $labels.{CLUSTER_LABEL} }}}}: {what}",
    )


def alert_rules(fleet: FleetConfig) -> list[AlertRule]:
    """Every rule of the stack: one per cluster for its Kueue, then the fleet-wide ones."""
    out = [_unreachable(fleet, c.name, c.role) for c in fleet.clusters]
    out.append(_starved())
    out.append(
        _evictions(
            "FleetAdmissionCheckEvictions",
            "AdmissionCheck",
            "jobs go back to the queue after an admission check (a provisioning gate whose "
            "ProvisioningRequest fails or is revoked, or MultiKueue) let them in; `fleetview why` "
            "shows the gate's retries and what the autoscaler said",
        )
    )
    out.append(
        _evictions(
            "FleetPodsReadyTimeouts",
            "PodsReadyTimeout",
            "admitted jobs whose pods did not all become ready in waitForPodsReady's timeout were "
            "evicted: nodes that never came, images that do not pull, or pods that cannot "
            "schedule (docs/kueue-queueing.md)",
        )
    )
    return out


def rule_file(fleet: FleetConfig) -> dict[str, Any]:
    """The Prometheus rule file (`rule_files:` of a Prometheus configuration)."""
    return {"groups": [{"name": GROUP, "rules": [r.rule() for r in alert_rules(fleet)]}]}
