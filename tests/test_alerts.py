"""The fleet's alert rules (builders/alerts.py): a Prometheus rule file whose every expression
parses and selects only Kueue v0.19.2's metric families (and the scrape's `up`), with their
labels; one unreachable-Kueue rule per cluster, the worker's naming when MultiKueue moves its work.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import yaml

from builders.alerts import alert_rules, rule_file
from checks.alerts import rule_problems
from checks.stack import load_from_file, parse_fleet
from config.loader import read_stack_file
from preflight.__main__ import main
from testkit.repo import COMMITTED_STACKS


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_every_rule_parses_and_names_only_what_kueue_and_the_scrape_export(stack: str) -> None:
    fleet, _ = load_from_file(stack)
    rules = alert_rules(fleet)
    assert rule_problems(rules) == []
    unreachable = [r for r in rules if r.name == "FleetKueueUnreachable"]
    assert [r.summary for r in unreachable] == [
        f"Kueue on {c.name} cannot be scraped" for c in fleet.clusters
    ]
    assert {r.name for r in rules} >= {
        "FleetQueueStarved",
        "FleetAdmissionCheckEvictions",
        "FleetPodsReadyTimeouts",
    }


def test_a_wrong_label_or_metric_is_refused() -> None:
    fleet, _ = load_from_file("dev")
    rule = alert_rules(fleet)[0]
    wrong_label = replace(rule, expr='up{job="kueue", cluster_name="worker-1"} == 0')
    (problem,) = rule_problems([wrong_label])
    assert problem.endswith("up has no label 'cluster_name'")
    unknown = replace(rule, expr="kueue_multikueue_cluster_active == 0")
    (problem,) = rule_problems([unknown])
    assert "'kueue_multikueue_cluster_active' is not a metric of Kueue v0.19.2" in problem
    grouped = replace(rule, expr="sum by (worker) (kueue_pending_workloads) > 0")
    assert rule_problems([grouped]) == [
        f"alert {rule.name} ({rule.summary}): groups by 'worker', which no selected metric has"
    ]
    broken = replace(rule, expr="sum by (")
    assert "does not parse" in rule_problems([broken])[0]


def test_a_lost_workers_rule_says_when_multikueue_moves_its_jobs() -> None:
    raw, _ = read_stack_file("dev")
    raw = json.loads(json.dumps(raw))
    raw["kueue"]["multiKueue"] = {**raw["kueue"].get("multiKueue", {}), "workerLostTimeout": "7m"}
    fleet, _ = parse_fleet(raw)
    worker = next(
        r for r in alert_rules(fleet) if r.summary == "Kueue on worker-1 cannot be scraped"
    )
    assert "moves the jobs admitted there to other workers 7m after" in worker.description
    assert 'up{job="kueue", fleet_cluster="worker-1"}' in worker.expr
    default, _ = load_from_file("dev")
    worker = next(
        r for r in alert_rules(default) if r.summary == "Kueue on worker-1 cannot be scraped"
    )
    assert "other workers 15m after" in worker.description  # Kueue's default


def test_preflight_alerts_prints_a_prometheus_rule_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["alerts", "prod"]) == 0
    document = yaml.safe_load(capsys.readouterr().out)
    fleet, _ = load_from_file("prod")
    assert document == rule_file(fleet)
    (group,) = document["groups"]
    for rule in group["rules"]:
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}
        assert rule["labels"]["severity"] in ("critical", "warning")
        assert set(rule["annotations"]) == {"summary", "description"}


def test_preflight_alerts_refuses_rules_that_name_what_kueue_does_not_export(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from builders import alerts  # noqa: PLC0415

    real = alerts.alert_rules
    monkeypatch.setattr(
        alerts,
        "alert_rules",
        lambda fleet: [replace(r, expr="kueue_no_such_metric > 0") for r in real(fleet)[:1]],
    )
    assert main(["alerts", "dev"]) == 1
    assert "'kueue_no_such_metric' is not a metric of Kueue v0.19.2" in capsys.readouterr().err
