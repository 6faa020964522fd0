"""`monitoring.azureMonitor`: validated with key paths, sent to Azure as its model accepts, and
registered as preflight renders it (ConfigMap, ClusterRole, binding; the cluster's profile)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from checks.azure_api import check_request
from checks.stack import parse_fleet
from config.errors import ConfigError
from testkit.mocks import built_stack
from testkit.repo import ROOT

MC = "azure-native:containerservice:ManagedCluster"


def _dev(**monitoring: Any) -> dict[str, Any]:
    raw = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]["aks-batch-fleet:fleet"]
    raw["location"] = "westeurope"
    raw["monitoring"] = monitoring
    return raw


@pytest.mark.parametrize(
    ("monitoring", "path"),
    [
        ({"azureMonitor": {"enabled": True, "scrapeInterval": "30"}}, "scrapeInterval"),
        ({"azureMonitor": {"enabled": "yes"}}, "enabled"),
        ({"azureMonitor": {"enable": True}}, "enable"),
    ],
)
def test_bad_values_name_their_key_path(monitoring: dict[str, Any], path: str):
    with pytest.raises(ConfigError) as err:
        parse_fleet(_dev(**monitoring))
    assert [e.path for e in err.value.errors] == [f"monitoring.azureMonitor.{path}"]


def test_manifests_only_kueue_is_a_warning_at_the_key():
    raw = _dev(azureMonitor={"enabled": True})
    raw["kueue"]["install"] = "manifests-only"
    _, warnings = parse_fleet(raw)
    assert [w.path for w in warnings if "manifests-only" in w.message] == [
        "monitoring.azureMonitor.enabled"
    ]


def test_unset_sends_no_profile_and_false_turns_the_addon_off():
    from builders.azure import azure_requests  # noqa: PLC0415

    def profiles(raw: dict[str, Any]) -> list[Any]:
        fleet, _ = parse_fleet(raw)
        return [
            r.inputs.get("azure_monitor_profile")
            for r in azure_requests(fleet, "t")
            if r.token == MC
        ]

    assert profiles(_dev()) == [None, None, None]
    assert profiles(_dev(azureMonitor={"enabled": False})) == [{"metrics": {"enabled": False}}] * 3


def _registered(stack: str, type_: str) -> list[Any]:
    return [r for r in built_stack(stack).graph.resources if r.type == type_]


def test_prod_registers_the_profile_the_scrape_config_and_its_rbac():
    clusters = _registered("prod", MC)
    assert {json.dumps(r.inputs["azureMonitorProfile"]) for r in clusters} == {
        '{"metrics": {"enabled": true}}'
    }
    configmaps = [
        r.inputs["metadata"]["name"]
        for r in _registered("prod", "kubernetes:core/v1:ConfigMap")
        if r.inputs["metadata"].get("namespace") == "kube-system"
    ]
    assert configmaps == ["ama-metrics-prometheus-config"] * len(clusters)
    bindings = [
        r
        for r in _registered("prod", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
        if r.inputs["metadata"]["name"] == "aks-batch-fleet-kueue-metrics-reader"
    ]
    assert len(bindings) == len(clusters)
    assert not [r for r in _registered("dev", MC) if r.inputs.get("azureMonitorProfile")]


def test_azures_model_refuses_a_misspelled_monitor_property():
    (cluster, *_) = _registered("prod", MC)
    inputs = copy.deepcopy(json.loads(json.dumps(cluster.inputs)))
    inputs["azureMonitorProfile"]["metrics"]["enable"] = True
    findings = [str(f) for f in check_request(MC, cluster.name, inputs)]
    assert any(
        "properties.azureMonitorProfile.metrics.enable: unknown property" in f for f in findings
    ), findings
