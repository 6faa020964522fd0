"""The fleet's alert rules evaluated by a real Prometheus scraping the twin's real Kueue: nothing
fires on the healthy twin, and `FleetKueueUnreachable` for a worker goes pending, then firing,
within its bound once that worker's plane stops.

The twin, its Kueues' /metrics and Prometheus' scrape of them are the dashboard test's
(tests/realtier/test_dashboard_prometheus.py, whose module docstring says what differs from the
Azure Monitor add-on): the dev stack with `monitoring.azureMonitor` on (scrape interval 2s), the
scrape job the stack ships read back from each cluster's ConfigMap. Prometheus also loads the
stack's rule file, `builders.alerts.rule_file(fleet)` written as YAML to `rule_files:`, with an
`evaluation_interval` of 1s.

What is compressed, and how (`compressed_rule_file`): only each rule's `for:`, divided by
FOR_FACTOR (30: `5m` becomes `10s`, `15m` `30s`, `0m` stays `0s`). Every `expr` is loaded exactly
as shipped (asserted), range windows included (`[10m]`, `[1h]`, `[3h]`): the paths exercised here
do not depend on them (the lost worker's `up` series stays, scraped as 0, so the `== 0` branch is
the one that fires; on the healthy twin the windows only have to hold nothing unwanted).

Healthy: work goes through the fleet as for the dashboard (a Job dispatched by the manager and
admitted on a worker after its ProvisioningRequest, a second one once Prometheus holds the first
one's admission, and a Job larger than the manager's quota left pending: a backlog); then, for
HEALTHY_CYCLES evaluations of the rule group (counted by its `lastEvaluation` advancing), every
rule is healthy (evaluated without error) and no alert is pending or firing.

Lost: the first worker's plane is lost as testkit/realtier/faults.py's `lose_plane` loses it (its
API server killed, every other process of it, its Kueue included, stopped with SIGSTOP: the
scrape of its Kueue times out). Measured from that moment: the seconds until Prometheus shows
`FleetKueueUnreachable{fleet_cluster=<worker>}` pending and firing, each within a bound (the
compressed `for` plus scrape, timeout and evaluation slack for a loaded 2-core machine), firing
no sooner than the compressed `for` after pending, and no other alert (another rule, another
cluster) pending or firing meanwhile. Then the plane is restored and the alert has to clear.
The same again for the other worker with only its Kueue killed (faults.py's `kill_kueue`: the
cluster stays up, the scrape is refused rather than timed out), then `restart_kueue`.
"""

from __future__ import annotations

import copy
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from builders.alerts import GROUP, alert_rules, rule_file
from builders.monitoring import CLUSTER_LABEL, SCRAPE_JOB, monitoring_objects
from testkit.realtier.autoscaler import start_autoscalers
from testkit.realtier.faults import kill_kueue, lose_plane, restart_kueue, restore_plane, thaw_all
from testkit.realtier.harness import Report, Tools, apply
from testkit.realtier.jobs import workload_of_job
from testkit.realtier.shared.dashboard_prometheus import (
    SCRAPE_INTERVAL,
    STACK,
    TARGETS_UP,
    TEAM,
    WORK_TIMEOUT,
    Binaries,
    Prometheus,
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
from testkit.realtier.shared.dashboard_prometheus import binaries as binaries  # noqa: PLC0414
from testkit.realtier.shared.dashboard_prometheus import twin as twin  # noqa: PLC0414
from testkit.realtier.twin_run import Twin

pytestmark = [pytest.mark.real]

LOST_ALERT: Final = "FleetKueueUnreachable"
EVALUATION_INTERVAL: Final = "1s"
FOR_FACTOR: Final = 30
HEALTHY_CYCLES: Final = 15
HEALTHY_TIMEOUT: Final = 90.0
# Slack over the compressed `for`, measured on 2 shared cores with margins for a busier machine:
# a scrape interval (2s) and its timeout (2s, the interval) before `up` is 0, an evaluation (1s)
# before pending, one more after the `for` before firing, and the machine's load.
PENDING_BOUND: Final = 25.0
FIRING_SLACK: Final = 25.0
CLEAR_BOUND: Final = 60.0
AFTER_FIRING: Final = 5.0
POLL: Final = 0.25
UP: Final = f'up{{job="{SCRAPE_JOB}"}}'

_DURATION = re.compile(r"(\d+)(ms|s|m|h|d)")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(duration: str) -> float:
    """A Prometheus duration (`5m`, `1h30m`, `0m`) in seconds."""
    parts = _DURATION.findall(duration)
    assert "".join(n + u for n, u in parts) == duration, f"not a duration: {duration}"
    assert parts, f"not a duration: {duration!r}"
    return sum(int(n) * _UNIT[u] for n, u in parts)


def compressed_rule_file(shipped: dict[str, Any], factor: int) -> dict[str, Any]:
    """The shipped rule file with every rule's `for` divided by `factor` (whole seconds, at least
    1s unless it was 0); nothing else changed (the test asserts it)."""
    out = copy.deepcopy(shipped)
    for group in out["groups"]:
        for rule in group["rules"]:
            held = seconds(rule["for"])
            rule["for"] = f"{max(1, round(held / factor)) if held else 0}s"
    return out


def _alerts(prom: Prometheus) -> list[dict[str, Any]]:
    alerts: list[dict[str, Any]] = prom.api("/api/v1/alerts")["data"]["alerts"]
    return alerts


def _show(alerts: list[dict[str, Any]]) -> str:
    return json.dumps(
        [
            {"labels": a["labels"], "state": a["state"], "activeAt": a.get("activeAt")}
            for a in alerts
        ]
    )


@dataclass
class Fired:
    """Seconds from a fault to the alert seen pending and firing, from the repair to none."""

    hold: float
    pending: float
    firing: float
    cleared: float = float("nan")

    def __str__(self) -> str:
        return (
            f"pending {self.pending:.1f}s, firing {self.firing:.1f}s after the stop (for "
            f"{self.hold:.0f}s), cleared {self.cleared:.1f}s after the repair"
        )


def watch_until_firing(prom: Prometheus, cluster: str, hold: float, t_stop: float) -> Fired:
    """Poll Prometheus' alerts from the fault on: `cluster`'s unreachable alert pending within
    PENDING_BOUND, firing within its `for` + FIRING_SLACK and no sooner than its `for` after
    pending; no other alert at any poll, until AFTER_FIRING past firing."""
    pending_at: float | None = None
    firing_at: float | None = None
    others: list[str] = []
    last: list[dict[str, Any]] = []
    deadline = t_stop + hold + FIRING_SLACK + PENDING_BOUND
    while firing_at is None or time.monotonic() < t_stop + firing_at + AFTER_FIRING:
        last = _alerts(prom)
        now = time.monotonic() - t_stop
        for a in last:
            labels = a["labels"]
            if labels.get("alertname") == LOST_ALERT and labels.get(CLUSTER_LABEL) == cluster:
                if pending_at is None:
                    pending_at = now  # the first poll that shows it (pending or firing)
                if a["state"] == "firing" and firing_at is None:
                    firing_at = now
            else:
                others.append(f"{now:.1f}s: {a['state']} {labels}")
        assert not others, f"other alerts after {cluster} stopped:\n" + "\n".join(others)
        mine = [a["state"] for a in last if a["labels"].get(CLUSTER_LABEL) == cluster]
        # Once seen, held until the repair: pending until firing, then firing.
        assert pending_at is None or mine == ["firing" if firing_at is not None else "pending"], (
            f"{cluster} at {now:.1f}s: {_show(last)} (pending at {pending_at}, firing at "
            f"{firing_at})"
        )
        assert time.monotonic() < deadline, (
            f"{LOST_ALERT} for {cluster}: pending at {pending_at}, firing at {firing_at} "
            f"(s after the stop); alerts: {_show(last)}\nup: "
            f"{prom.query(UP)}"
        )
        time.sleep(POLL)
    assert pending_at is not None
    assert firing_at is not None
    (alert,) = last
    assert alert["labels"]["severity"] == "critical", alert
    assert pending_at <= PENDING_BOUND, f"{cluster}: pending {pending_at:.1f}s after the stop"
    assert firing_at <= hold + FIRING_SLACK, (
        f"{cluster}: firing {firing_at:.1f}s after the stop (for {hold:.0f}s + "
        f"{FIRING_SLACK:.0f}s slack)"
    )
    # Firing no sooner than its `for` after it went pending (less a poll each and an evaluation).
    assert firing_at - pending_at >= hold - 2 * POLL - seconds(EVALUATION_INTERVAL), (
        cluster,
        pending_at,
        firing_at,
    )
    return Fired(hold, pending_at, firing_at)


def until_cleared(prom: Prometheus, cluster: str, t_repair: float) -> float:
    """Seconds from the repair until Prometheus holds no alert at all."""
    dashboard_until(
        f"{LOST_ALERT} for {cluster} cleared after it came back",
        lambda: not _alerts(prom),
        CLEAR_BOUND,
        lambda: _show(_alerts(prom)),
    )
    return time.monotonic() - t_repair


def test_alert_rules_quiet_on_the_healthy_twin_and_worker_lost_alert_fires_within_its_bound(  # noqa: PLR0917 - pytest fixtures
    binaries: Binaries,
    tools: Tools,
    twin: Twin,
    tmp_path: Path,
    report: Report,
    capsys: pytest.CaptureFixture[str],
) -> None:
    t0 = time.monotonic()
    fleet = twin.fleet
    manager = fleet.manager
    assert manager is not None, f"{STACK}: no manager"
    workers = [c.name for c in fleet.clusters if c.role == "worker"]
    assert len(workers) >= 2, f"{STACK}: fewer than two workers: {workers}"
    lost = workers[0]
    clusters = [c.name for c in fleet.clusters]

    # The rules as shipped, `for` compressed; the expressions untouched.
    shipped = rule_file(fleet)
    rules = compressed_rule_file(shipped, FOR_FACTOR)
    (group,) = rules["groups"]
    assert group["name"] == GROUP
    assert [(r["alert"], r["expr"], r["labels"], r["annotations"]) for r in group["rules"]] == [
        (r["alert"], r["expr"], r["labels"], r["annotations"])
        for r in shipped["groups"][0]["rules"]
    ]
    # Each cluster's unreachable rule: its compressed `for` is its shipped one / FOR_FACTOR.
    compressed = {r["expr"]: seconds(r["for"]) for r in group["rules"]}
    holds: dict[str, float] = {}
    for r in alert_rules(fleet):
        if r.name == LOST_ALERT:
            cluster = r.expr.split(f'{CLUSTER_LABEL}="')[1].split('"')[0]
            assert compressed[r.expr] == seconds(r.hold) / FOR_FACTOR, (r.hold, compressed[r.expr])
            holds[cluster] = compressed[r.expr]
    assert sorted(holds) == sorted(clusters), holds
    rule_path = tmp_path / "alerts.yml"
    rule_path.write_text(yaml.safe_dump(rules, sort_keys=False))

    # The twin scraped as in the dashboard test, the rules loaded.
    start_autoscalers(twin.planes, fleet, binaries.autoscaler)
    jobs = []
    for cluster in fleet.clusters:
        plane = twin.planes[cluster.name]
        applied = apply(plane, [m.obj for m in monitoring_objects(fleet, cluster)])
        assert not applied.rejected, f"[{cluster.name}] {applied.stderr}"
        token = scraper_token(plane, tmp_path / f"{cluster.name}.token")
        point_discovery_at(plane, twin.kueues[cluster.name].metrics_port)
        jobs.append(loopback_job(shipped_job(plane), cluster.name, plane.kubeconfig, token))
    config = {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": EVALUATION_INTERVAL},
        "rule_files": [str(rule_path)],
        "scrape_configs": jobs,
    }
    prom = start_prometheus(
        binaries.prometheus, twin.planes[manager.name], config, tmp_path / "prom"
    )
    loaded = prom.api("/api/v1/rules")["data"]["groups"]
    assert [len(g["rules"]) for g in loaded if g["name"] == GROUP] == [len(group["rules"])], loaded

    def up() -> list[str]:
        return sorted(
            s["metric"][CLUSTER_LABEL] for s in prom.query(f'up{{job="{SCRAPE_JOB}"}} == 1')
        )

    dashboard_until(
        "every cluster's Kueue scraped (up == 1)",
        lambda: up() == sorted(clusters),
        TARGETS_UP,
        lambda: f"{up()}\n{prom.tail()}",
    )

    # Healthy traffic: dispatched and admitted on a worker, twice; a backlog on the manager.
    mgr = twin.planes[manager.name]
    applied = apply(mgr, [dashboard_job("alert-run", "1")])
    assert not applied.rejected, applied.stderr
    dashboard_until(
        "alert-run admitted on the manager (a worker admitted it)",
        lambda: condition(workload_of_job(mgr, TEAM, "alert-run"), "Admitted"),
        WORK_TIMEOUT,
        lambda: dashboard_state(mgr, "alert-run"),
    )
    admitted = f'kueue_admitted_workloads_total{{{CLUSTER_LABEL}="{manager.name}"}}'
    dashboard_until(
        "the first admission scraped",
        lambda: prom.query(admitted),
        WORK_TIMEOUT,
        prom.tail,
    )
    applied = apply(mgr, [dashboard_job("alert-run-2", "1"), dashboard_job("alert-big", "40")])
    assert not applied.rejected, applied.stderr
    dashboard_until(
        "alert-run-2 admitted on the manager",
        lambda: condition(workload_of_job(mgr, TEAM, "alert-run-2"), "Admitted"),
        WORK_TIMEOUT,
        lambda: dashboard_state(mgr, "alert-run-2"),
    )
    t_work = time.monotonic() - t0

    # Healthy: HEALTHY_CYCLES evaluations of the group, every rule healthy, no alert at all.
    evaluations: set[str] = set()
    unwanted: list[str] = []

    def healthy_cycles() -> bool:
        (g,) = [g for g in prom.api("/api/v1/rules")["data"]["groups"] if g["name"] == GROUP]
        for r in g["rules"]:
            if r.get("health") != "ok":
                unwanted.append(f"{r['name']} health {r.get('health')}: {r.get('lastError')}")
            unwanted.extend(
                f"{r['name']} {a['state']} {a['labels']} (value {a.get('value')})"
                for a in r.get("alerts") or []
            )
        assert not unwanted, "on the healthy twin:\n" + "\n".join(unwanted)
        evaluations.add(g["lastEvaluation"])
        return len(evaluations) > HEALTHY_CYCLES  # the first one may predate the work

    t_healthy0 = time.monotonic()
    dashboard_until(
        f"{HEALTHY_CYCLES} evaluations",
        healthy_cycles,
        HEALTHY_TIMEOUT,
        lambda: f"{len(evaluations)} seen",
    )
    t_healthy = time.monotonic() - t_healthy0
    pending_now = prom.query(f'kueue_pending_workloads{{{CLUSTER_LABEL}="{manager.name}"}} > 0')
    backlog = {s["metric"].get("status"): s["value"][1] for s in pending_now}
    assert prom.query(f'up{{job="{SCRAPE_JOB}"}} == 1'), "the healthy window saw no scrape"

    # Lost: the worker's plane stops; its alert pending, then firing; nothing else; cleared.
    plane, kueue = twin.planes[lost], twin.kueues[lost]
    t_stop = time.monotonic()
    lose_plane(plane, kueue)
    restored = False
    try:
        lost_at = watch_until_firing(prom, lost, holds[lost], t_stop)
        t_restore0 = time.monotonic()
        restore_plane(plane, kueue)
        restored = True
        lost_at.cleared = until_cleared(prom, lost, t_restore0)
    finally:
        if not restored:
            thaw_all(twin.planes.values(), twin.kueues.values())

    # The other worker's Kueue alone killed (its cluster up): the scrape is refused, not timed out.
    killed = workers[1]
    t_stop = time.monotonic()
    kill_kueue(twin.kueues[killed])
    killed_at = watch_until_firing(prom, killed, holds[killed], t_stop)
    t_restart0 = time.monotonic()
    ready = restart_kueue(twin.kueues[killed], tools.openssl)
    killed_at.cleared = until_cleared(prom, killed, t_restart0)

    line = (
        f"alerts on Prometheus {binaries.prometheus.parent.parent.name} over the {STACK} twin's "
        f"{len(clusters)} Kueues, {len(group['rules'])} rules, `for` / {FOR_FACTOR}, evaluation "
        f"{EVALUATION_INTERVAL}, scrape {SCRAPE_INTERVAL}: healthy for {len(evaluations)} "
        f"evaluations ({t_healthy:.1f}s, backlog on {manager.name}: {backlog}), nothing pending "
        f"or firing; {LOST_ALERT}, no other alert meanwhile: {lost}'s plane lost: {lost_at} "
        f"(restore); {killed}'s Kueue killed: {killed_at} (restart, "
        f"Kueue ready {ready:.1f}s); work done {t_work:.1f}s after the twin ran"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)
