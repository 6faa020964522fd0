"""Every panel of the fleet dashboard returns series from a real Prometheus scraping the twin's
real Kueue.

The twin is the dev stack's (manager, worker-1, worker-2; user pools at minCount and the real
cluster-autoscaler answering the workers' ProvisioningRequests), with two settings of the stack
turned on as a user would turn them on for the dashboard: `monitoring.azureMonitor` (scrape
interval 2s instead of 30s, so the test waits seconds, not minutes) and Kueue's beta gate
`UnadmittedWorkloadsObservability` (the "Not admitted, by reason" panel needs it; docs/metrics.md).
Each cluster's Kueue serves /metrics over HTTPS on a loopback port of its own and authorizes every
scrape against its cluster's API server, as in a cluster.

Prometheus (the pinned `cmd/prometheus` of the tool cache) scrapes every cluster with the job the
stack ships: the `prometheus-config` of the rendered `ama-metrics-prometheus-config` ConfigMap,
read from the ConfigMap applied to each cluster, with pod discovery against that cluster's API
server, the shipped relabelling (keep Kueue's controller pods' `metrics` port, `pod`,
`fleet_cluster`), HTTPS with the shipped TLS settings and the bearer token of the add-on's
ServiceAccount bound by the rendered ClusterRoleBinding. What differs from the add-on, and why:

- no Kueue pod exists on a loopback plane, so each cluster gets a stand-in Pod in kueue-system
  with the chart's selector labels and a container port named `metrics`, whose status (podIP
  127.0.0.1) points discovery at the Kueue process: the shipped `keep` rule has to select it;
- `kubernetes_sd_configs` gets `kubeconfig_file` (the plane's; the add-on uses in-cluster config),
  `authorization.credentials_file` a file holding a token minted for `ama-metrics-serviceaccount`
  (the add-on reads its pod's mounted token);
- one Prometheus scrapes three clusters (the Azure Monitor workspace joins three add-ons), and
  job names must be unique in one Prometheus: the job is `kueue-<cluster>`, with one more relabel
  rule setting `job="kueue"` back, so series carry the labels the add-on's would.

Work goes through the fleet: a Job dispatched by the manager and admitted on a worker after its
ProvisioningRequest, a Job deactivated on the manager after its quota reservation (an eviction),
a Job larger than the manager's quota that stays pending, and, once Prometheus holds the first
Job's series, a second dispatched Job (so rates and quantiles have an increase to show). Then
every target of every panel of the generated dashboard JSON is evaluated through Prometheus' HTTP
API (`/api/v1/query`), with `$fleet_cluster` substituted as Grafana substitutes the variable with
"All" selected (the values of its own `label_values` query), until each returns at least one
series and one of them a number (not NaN: Grafana draws NaN as nothing), within a bound. A
failure names each panel, its query and what Prometheus returned.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from builders.dashboard import DATASOURCE_VARIABLE, fleet_dashboard
from builders.monitoring import CLUSTER_LABEL, SCRAPE_JOB, monitoring_objects
from testkit.realtier.autoscaler import start_autoscalers
from testkit.realtier.harness import (
    Report,
    apply,
)
from testkit.realtier.jobs import workload_of_job
from testkit.realtier.shared.dashboard_prometheus import (
    SCRAPE_INTERVAL,
    STACK,
    TARGETS_UP,
    TEAM,
    WORK_TIMEOUT,
    Binaries,
    condition,
    dashboard_job,
    dashboard_state,
    dashboard_until,
    loopback_job,
    point_discovery_at,
    scraper_token,
    shipped_job,
    start_prometheus,
)
from testkit.realtier.shared.dashboard_prometheus import binaries as binaries  # noqa: PLC0414 - a fixture
from testkit.realtier.shared.dashboard_prometheus import twin as twin  # noqa: PLC0414 - a fixture
from testkit.realtier.twin_run import Twin

pytestmark = [pytest.mark.real]

KUEUE_API: Final = "/apis/kueue.x-k8s.io/v1beta2"
SERIES_TIMEOUT: Final = 120.0


@dataclass(frozen=True, slots=True)
class Target:
    """One query of one panel, as Grafana's JSON model holds it."""

    panel: str
    ref: str
    expr: str


def dashboard_targets(board: dict[str, Any]) -> list[Target]:
    """Every target of every panel, rows' nested panels (a collapsed row holds them) included."""
    found: list[Target] = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            found.extend(
                Target(str(panel.get("title")), str(t.get("refId")), str(t["expr"]))
                for t in panel.get("targets") or []
                if t.get("expr")
            )
            walk(panel.get("panels") or [])

    walk(board.get("panels") or [])
    return found


def grafana_all(values: list[str]) -> str:
    """A multi-value variable with "All" selected, as Grafana writes it into a Prometheus
    query that has no custom all value: the values joined into a regex group. Grafana escapes
    regex metacharacters in each value; the values here are asserted to have none."""
    plain = re.compile(r"^[a-z0-9-]+$")
    assert all(plain.match(v) for v in values), f"values needing regex escapes: {values}"
    return "(" + "|".join(values) + ")"


def _finite(series: dict[str, Any]) -> bool:
    return math.isfinite(float(series["value"][1]))


def plotted(result: list[dict[str, Any]] | None) -> bool:
    """At least one series, and one with a number (NaN, as a quantile of zero rates gives, is
    drawn as nothing)."""
    return bool(result) and any(_finite(s) for s in result or [])


def substitute(expr: str, variables: dict[str, str]) -> str:
    out = expr
    for name, value in variables.items():
        out = out.replace(f"${{{name}}}", value).replace(f"${name}", value)
    assert "$" not in out, f"a template variable left in {out!r} (known: {sorted(variables)})"
    return out


# ---- the twin's fleet ---------------------------------------------------------------------------


# ---- Prometheus ---------------------------------------------------------------------------------


# ---- the work -----------------------------------------------------------------------------------


# ---- the test -----------------------------------------------------------------------------------


def test_every_dashboard_panel_returns_series_from_prometheus_scraping_the_twins_kueue(
    binaries: Binaries,
    twin: Twin,
    tmp_path: Path,
    report: Report,
    capsys: pytest.CaptureFixture[str],
) -> None:
    t0 = time.monotonic()
    fleet = twin.fleet
    start_autoscalers(twin.planes, fleet, binaries.autoscaler)
    manager = fleet.manager
    assert manager is not None, f"{STACK}: no manager"
    # The stack's monitoring objects on every cluster, and what the scraper needs to reach Kueue.
    jobs = []
    for cluster in fleet.clusters:
        plane = twin.planes[cluster.name]
        objects = [m.obj for m in monitoring_objects(fleet, cluster)]
        assert objects, f"{cluster.name}: monitoring.azureMonitor renders nothing"
        applied = apply(plane, objects)
        assert not applied.rejected, f"[{cluster.name}] {applied.stderr}"
        token = scraper_token(plane, tmp_path / f"{cluster.name}.token")
        point_discovery_at(plane, twin.kueues[cluster.name].metrics_port)
        jobs.append(loopback_job(shipped_job(plane), cluster.name, plane.kubeconfig, token))
    config = {"global": {"scrape_interval": SCRAPE_INTERVAL}, "scrape_configs": jobs}
    host = twin.planes[manager.name]
    prom = start_prometheus(binaries.prometheus, host, config, tmp_path / "prom")
    t_prom = time.monotonic() - t0

    # Every cluster's Kueue scraped, through discovery and the shipped relabelling.
    clusters = [c.name for c in fleet.clusters]

    def targets() -> dict[str, str]:
        active = prom.api("/api/v1/targets", state="active")["data"]["activeTargets"]
        return {
            t["labels"].get(CLUSTER_LABEL, "?"): f"{t['health']} {t.get('lastError') or ''}"
            for t in active
        }

    dashboard_until(
        "every cluster's Kueue target up",
        lambda: sorted(k for k, v in targets().items() if v.startswith("up")) == sorted(clusters),
        TARGETS_UP,
        lambda: f"{targets()}\n{prom.tail()}",
    )
    up = prom.query(f'up{{job="{SCRAPE_JOB}"}} == 1')
    assert sorted(s["metric"].get(CLUSTER_LABEL) for s in up) == sorted(clusters), up

    # The work: dispatched and admitted on a worker; evicted (deactivated); pending on quota.
    mgr = twin.planes[manager.name]
    applied = apply(
        mgr,
        [
            dashboard_job("dash-run", "1"),
            dashboard_job("dash-evict", "1"),
            dashboard_job("dash-big", "40"),
        ],
    )
    assert not applied.rejected, applied.stderr
    dashboard_until(
        "dash-evict's Workload QuotaReserved on the manager",
        lambda: condition(workload_of_job(mgr, TEAM, "dash-evict"), "QuotaReserved"),
        WORK_TIMEOUT,
        lambda: dashboard_state(mgr, "dash-evict"),
    )
    wl = workload_of_job(mgr, TEAM, "dash-evict")
    assert wl is not None
    mgr.kubectl(
        "patch",
        "workloads.kueue.x-k8s.io",
        wl["metadata"]["name"],
        f"--namespace={TEAM}",
        "--type=merge",
        "-p",
        json.dumps({"spec": {"active": False}}),
    )
    dashboard_until(
        "dash-evict's Workload Evicted on the manager",
        lambda: condition(workload_of_job(mgr, TEAM, "dash-evict"), "Evicted"),
        WORK_TIMEOUT,
        lambda: dashboard_state(mgr, "dash-evict"),
    )
    dashboard_until(
        "dash-run admitted on the manager (a worker admitted it after its ProvisioningRequest)",
        lambda: condition(workload_of_job(mgr, TEAM, "dash-run"), "Admitted"),
        WORK_TIMEOUT,
        lambda: dashboard_state(mgr, "dash-run"),
    )
    # A second dispatched Job once Prometheus holds the first one's series: the rates and the
    # p90s then have an increase to show (a series Prometheus first sees at 1 has rate 0, and a
    # quantile of zero rates is NaN, which Grafana plots as nothing).
    first = (
        'kueue_admission_wait_time_seconds_count{fleet_cluster="manager"}',
        'kueue_admission_checks_wait_time_seconds_count{fleet_cluster="manager"}',
        "multikueue_workloads_admitted_total",
    )
    dashboard_until(
        "the first Job's admission scraped from the manager",
        lambda: all(prom.query(q) for q in first),
        SERIES_TIMEOUT,
        lambda: str({q: prom.query(q) for q in first}),
    )
    applied = apply(mgr, [dashboard_job("dash-run-2", "1")])
    assert not applied.rejected, applied.stderr
    dashboard_until(
        "dash-run-2 admitted on the manager",
        lambda: condition(workload_of_job(mgr, TEAM, "dash-run-2"), "Admitted"),
        WORK_TIMEOUT,
        lambda: dashboard_state(mgr, "dash-run-2"),
    )
    t_work = time.monotonic() - t0

    # The variable as Grafana resolves it, then every target of every panel.
    board = fleet_dashboard()
    variable = next(v for v in board["templating"]["list"] if v["name"] == CLUSTER_LABEL)
    metric = re.fullmatch(rf"label_values\((\w+), {CLUSTER_LABEL}\)", variable["query"])
    assert metric is not None, f"variable query changed: {variable['query']}"
    values = prom.api(f"/api/v1/label/{CLUSTER_LABEL}/values", **{"match[]": metric.group(1)})
    assert sorted(values["data"]) == sorted(clusters), f"{variable['query']}: {values['data']}"
    variables = {CLUSTER_LABEL: grafana_all(sorted(values["data"]))}
    found = dashboard_targets(board)
    assert len({t.panel for t in found}) == sum(
        1 for p in board["panels"] if p.get("type") != "row"
    ), "a panel without a query"
    assert not any(DATASOURCE_VARIABLE in t.expr for t in found)

    answers: dict[Target, list[dict[str, Any]]] = {}

    def all_return_data() -> bool:
        for target in found:
            if not plotted(answers.get(target)):
                answers[target] = prom.query(substitute(target.expr, variables))
        return all(plotted(a) for a in answers.values())

    try:
        dashboard_until("every panel returns data", all_return_data, SERIES_TIMEOUT, lambda: "")
    except AssertionError:
        empty = [
            f"- panel {t.panel!r} ({t.ref}): {substitute(t.expr, variables)}\n  returned: "
            f"{answers.get(t)}"
            for t in found
            if not plotted(answers.get(t))
        ]
        names = prom.api("/api/v1/label/__name__/values")["data"]
        kueue = [n for n in names if n.startswith(("kueue_", "multikueue_"))]
        raise AssertionError(
            f"{len(empty)} of {len(found)} panel queries returned no series with a number "
            f"after {SERIES_TIMEOUT:.0f}s:\n" + "\n".join(empty) + f"\nKueue metric names in "
            f"Prometheus: {kueue}"
        ) from None
    t_all = time.monotonic() - t0
    counts = {
        f"{t.panel} ({t.ref})": f"{len(answers[t])}/{sum(map(_finite, answers[t]))}" for t in found
    }
    line = (
        f"dashboard on Prometheus {binaries.prometheus.parent.parent.name} scraping the {STACK} "
        f"twin's {len(clusters)} Kueues: {len(found)} queries of {len({t.panel for t in found})} "
        f"panels all return series with a number (series/with a number: {counts}); "
        f"Prometheus up {t_prom:.1f}s, work done "
        f"{t_work:.1f}s, every query answered {t_all:.1f}s after the twin ran; twin "
        f"{ {k: round(v, 1) for k, v in twin.timings.items()} }"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)
