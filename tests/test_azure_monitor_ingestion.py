"""Managed Prometheus metrics arrive: with `monitoring.azureMonitor.enabled` each AKS cluster the
stack creates is wired to an Azure Monitor workspace as Azure's own template wires it (data
collection endpoint, rule, association on the cluster), and the fleet's alert rules ship as an
Azure Monitor Prometheus rule group on that workspace. Under the mocks: the wiring (which id goes
where), what Azure's models accept, and what preflight says.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from builders.alerts import alert_rules
from builders.azure_monitor import azure_rule, iso_duration
from checks.azure_api import check_request
from checks.stack import parse_fleet
from config.errors import ConfigError
from testkit.mocks import Graph, built_stack, mocked_engine, run_program
from testkit.repo import ROOT

MC = "azure-native:containerservice:ManagedCluster"
WORKSPACE = "azure-native:monitor:AzureMonitorWorkspace"
DCE = "azure-native:monitor:DataCollectionEndpoint"
DCR = "azure-native:monitor:DataCollectionRule"
DCRA = "azure-native:monitor:DataCollectionRuleAssociation"
RULES = "azure-native:alertsmanagement:PrometheusRuleGroup"
GIVEN = "/subscriptions/s/resourceGroups/obs/providers/Microsoft.Monitor/accounts/central"
PAGER = "/subscriptions/s/resourceGroups/obs/providers/microsoft.insights/actionGroups/oncall"


def _raw(stack: str = "dev", **azure_monitor: Any) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    raw = doc["config"]["aks-batch-fleet:fleet"]
    raw.setdefault("location", "westeurope")
    raw["monitoring"] = {"azureMonitor": azure_monitor} if azure_monitor else {}
    return raw


def _build(raw: dict[str, Any]) -> Graph:
    from components.fleet import Fleet, FleetArgs  # noqa: PLC0415 - Pulumi only here

    config, _ = parse_fleet(raw)
    with mocked_engine("t") as g:
        run_program(lambda: Fleet("fleet", FleetArgs(config=config, stack="t")))
    return g


def _id(r: Any) -> str:
    return f"{r.name}_id"  # the mocks' id of a resource (tests/conftest.py)


def test_prod_wires_every_aks_cluster_to_the_workspace_it_creates():
    g = built_stack("prod").graph
    clusters = {r.inputs["resourceName"]: r for r in g.of_type(MC)}
    [workspace] = g.of_type(WORKSPACE)
    endpoints = {r.name: r for r in g.of_type(DCE)}
    rules = {r.name: r for r in g.of_type(DCR)}
    links = g.of_type(DCRA)
    assert len(endpoints) == len(rules) == len(links) == len(clusters) > 1
    scoped = {}
    for link in links:
        [cluster] = [c for c in clusters.values() if _id(c) == link.inputs["resourceUri"]]
        [rule] = [r for r in rules.values() if _id(r) == link.inputs["dataCollectionRuleId"]]
        [endpoint] = [
            e for e in endpoints.values() if _id(e) == rule.inputs["dataCollectionEndpointId"]
        ]
        scoped[cluster.inputs["resourceName"]] = (rule, endpoint)
        assert rule.inputs["destinations"]["monitoringAccounts"][0]["accountResourceId"] == _id(
            workspace
        )
        assert rule.inputs["dataSources"]["prometheusForwarder"][0]["streams"] == [
            "Microsoft-PrometheusMetrics"
        ]
        assert (
            rule.inputs["location"] == endpoint.inputs["location"] == workspace.inputs["location"]
        )
    # One association per cluster, each naming that cluster's own rule (not a neighbour's).
    assert sorted(scoped) == sorted(clusters)
    assert len({id(rule) for rule, _ in scoped.values()}) == len(clusters)
    for name, (rule, _) in scoped.items():
        assert rule.inputs["dataCollectionRuleName"].endswith(name), (name, rule.inputs)


def test_prod_ships_the_alert_rules_on_the_workspace_in_azures_form():
    g = built_stack("prod").graph
    [workspace] = g.of_type(WORKSPACE)
    [group] = g.of_type(RULES)
    assert group.inputs["scopes"] == [_id(workspace)]
    fleet, _ = parse_fleet(_raw("prod", enabled=True))
    names = [r.name for r in alert_rules(fleet)]
    assert [r["alert"] for r in group.inputs["rules"]] == names
    sent = group.inputs["rules"]
    assert [r["expression"] for r in sent] == [r.expr for r in alert_rules(fleet)]
    for rule, azure in zip(alert_rules(fleet), sent, strict=True):
        assert azure["severity"] == {"critical": 0, "warning": 2}[rule.severity], azure
        assert azure.get("for") == iso_duration(rule.hold), azure


def test_every_ingestion_and_alert_request_passes_azures_model():
    g = built_stack("prod").graph
    sent = [r for t in (WORKSPACE, DCE, DCR, DCRA, RULES) for r in g.of_type(t)]
    assert sent
    findings = [str(f) for r in sent for f in check_request(r.type, r.name, r.inputs)]
    assert findings == []


@pytest.mark.parametrize(
    ("token", "change", "where"),
    [
        (DCE, lambda i: i.update(kind="Linus"), "kind"),
        (DCR, lambda i: i["dataSources"].update(prometheusForwarders=[]), "prometheusForwarders"),
        (RULES, lambda i: i["rules"][0].update(severity=7), "severity"),
        (RULES, lambda i: i.update(scopes=[GIVEN, GIVEN]), "scopes"),
        (RULES, lambda i: i["rules"][0].pop("expression"), "expression"),
    ],
)
def test_azures_model_refuses_a_wrong_ingestion_or_alert_body(token, change, where):
    g = built_stack("prod").graph
    resource = g.of_type(token)[0]
    inputs = copy.deepcopy(resource.inputs)
    change(inputs)
    findings = [str(f) for f in check_request(token, resource.name, inputs)]
    assert any(where in f for f in findings), findings


def test_a_given_workspace_is_used_not_created_and_alerts_notify_its_action_groups():
    g = _build(
        _raw(
            enabled=True,
            workspace={"resourceId": GIVEN, "location": "northeurope"},
            actionGroups=[PAGER],
        )
    )
    assert g.of_type(WORKSPACE) == []
    rules = g.of_type(DCR)
    assert len(rules) == len(g.of_type(MC)) == len(g.of_type(DCRA))
    for rule in rules:
        assert rule.inputs["destinations"]["monitoringAccounts"][0]["accountResourceId"] == GIVEN
        assert rule.inputs["location"] == "northeurope"
    [group] = g.of_type(RULES)
    assert group.inputs["scopes"] == [GIVEN]
    assert all(r["actions"] == [{"actionGroupId": PAGER}] for r in group.inputs["rules"])


def test_alerts_false_ships_no_rule_group_and_unset_wires_nothing():
    quiet = _build(_raw(enabled=True, alerts=False))
    assert quiet.of_type(RULES) == []
    assert len(quiet.of_type(DCRA)) == len(quiet.of_type(MC))
    unset = built_stack("dev").graph
    assert [r for t in (WORKSPACE, DCE, DCR, DCRA, RULES) for r in unset.of_type(t)] == []


def test_production_alerts_that_notify_no_one_are_a_warning_at_the_key():
    raw = _raw("prod", enabled=True)
    _, warnings = parse_fleet(raw)
    assert "monitoring.azureMonitor.actionGroups" in [w.path for w in warnings]
    raw = _raw("prod", enabled=True, actionGroups=[PAGER])
    _, warnings = parse_fleet(raw)
    assert "monitoring.azureMonitor.actionGroups" not in [w.path for w in warnings]


@pytest.mark.parametrize(
    ("azure_monitor", "path"),
    [
        (
            {"enabled": True, "workspace": {"resourceId": "central", "location": "westeurope"}},
            "workspace.resourceId",
        ),
        ({"enabled": True, "workspace": {"resourceId": GIVEN}}, "workspace.location"),
        ({"enabled": True, "actionGroups": ["oncall"]}, "actionGroups[0]"),
    ],
)
def test_a_bad_workspace_or_action_group_names_its_key(azure_monitor, path):
    with pytest.raises(ConfigError) as err:
        parse_fleet(_raw(**azure_monitor))
    assert [e.path for e in err.value.errors] == [f"monitoring.azureMonitor.{path}"]


def test_durations_and_severities_are_azures():
    assert iso_duration("5m") == "PT5M"
    assert iso_duration("1h") == "PT1H"
    assert iso_duration("0m") is None
    with pytest.raises(ValueError, match="not a Prometheus duration"):
        iso_duration("5d")
    fleet, _ = parse_fleet(_raw("prod", enabled=True))
    immediate = next(r for r in alert_rules(fleet) if r.hold == "0m")
    assert "for" not in azure_rule(immediate, [])


def test_the_scrape_configmap_on_an_existing_cluster_is_never_taken_over_silently():
    raw = _raw(enabled=True)
    worker = raw["clusters"][1]
    for aks_only in ("systemPool", "autoscalerProfile"):
        worker.pop(aks_only)
    worker["source"] = "existing"
    worker["existing"] = {"kubeconfigPath": "worker-1.kubeconfig"}
    _, warnings = parse_fleet(raw)
    said = [w for w in warnings if "ama-metrics-prometheus-config" in w.message]
    assert [w.path for w in said] == ["clusters[worker-1].source"], [str(w) for w in warnings]
    assert "taken over" in said[0].message
