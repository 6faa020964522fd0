"""The Azure twin's pure rules, offline: the stand-in plugin's replace table and the twin's
input checks (testkit/realtier/azure_provider.py and azure_twin.py; docs/testing.md, "The Azure
twin")."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from builders.azure import AzureRequest, azure_requests
from checks.azure_types import TYPES
from testkit.realtier.azure_provider import REPLACE_ON, diff
from testkit.realtier.azure_twin import (
    NAME_KEY,
    SUBSCRIPTION,
    UNKNOWN,
    ArmError,
    AzureTwin,
    Cluster,
    Relay,
    Resource,
    resolve_version,
    validate,
)
from testkit.realtier.harness import ControlPlane, Tools
from testkit.realtier.twin import load_stack

RG = "azure-native:resources:ResourceGroup"
MC = "azure-native:containerservice:ManagedCluster"

POOL = "azure-native:containerservice:AgentPool"
POOL_INPUTS = {
    "agentPoolName": "batch",
    "resourceGroupName": "rg",
    "resourceName": "worker-1",
    "vmSize": "Standard_D4s_v5",
    "count": 0,
    "minCount": 0,
    "maxCount": 5,
    "enableAutoScaling": True,
    "mode": "User",
    "osType": "Linux",
}


def test_a_pool_vm_size_change_is_a_replace_and_a_count_change_an_update() -> None:
    changed, replaces = diff(POOL, POOL_INPUTS, {**POOL_INPUTS, "vmSize": "Standard_D8s_v5"}, [])
    assert (changed, replaces) == (["vmSize"], ["vmSize"])
    changed, replaces = diff(POOL, POOL_INPUTS, {**POOL_INPUTS, "maxCount": 6}, [])
    assert (changed, replaces) == (["maxCount"], [])


def test_a_cluster_moved_to_another_group_or_location_is_replaced() -> None:
    mc = "azure-native:containerservice:ManagedCluster"
    old = {"resourceGroupName": "rg", "resourceName": "m", "location": "westeurope"}
    _, replaces = diff(mc, old, {**old, "location": "northeurope", "resourceGroupName": "rg2"}, [])
    assert replaces == ["location", "resourceGroupName"]


def test_azures_model_refuses_what_the_api_refuses_and_accepts_the_programs_pool() -> None:
    assert validate(POOL, POOL_INPUTS, "pool") == []
    bad = validate(POOL, {**POOL_INPUTS, "osDiskSizeGB": 5000}, "pool")
    assert [f["property"] for f in bad] == ["properties.osDiskSizeGB"], bad
    # Inputs not known yet (a preview) are not judged by the model.
    assert validate(POOL, {**POOL_INPUTS, "osDiskSizeGB": 5000, "vnetSubnetID": UNKNOWN}) == []


def test_aks_pool_names_are_short_lowercase_alphanumerics() -> None:
    bad = validate(POOL, {**POOL_INPUTS, "agentPoolName": "Batch-Pool"}, "pool")
    assert "agentPoolName" in [f["property"] for f in bad]


# ---- Azure Monitor (prod's `monitoring.azureMonitor`) ------------------------------------------

GROUP = "aks-batch-fleet-prod"
RG_ID = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}"
CLUSTER_ID = f"{RG_ID}/providers/Microsoft.ContainerService/managedClusters/worker-1"
WORKSPACE = "azure-native:monitor:AzureMonitorWorkspace"
ENDPOINT = "azure-native:monitor:DataCollectionEndpoint"
RULE = "azure-native:monitor:DataCollectionRule"
ASSOCIATION = "azure-native:monitor:DataCollectionRuleAssociation"
RULE_GROUP = "azure-native:alertsmanagement:PrometheusRuleGroup"


def _camel(key: str) -> str:
    first, *rest = key.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def _engine_inputs(inputs: Mapping[str, Any], ids: Mapping[str, str]) -> dict[str, Any]:
    """A builder's inputs as the engine sends them: camelCase names (a copy), the inputs named
    in `ids` set to those values (the group's name, ids known at deploy time)."""
    out = {_camel(k): json.loads(json.dumps(v)) for k, v in inputs.items()}
    return {**out, **{k: v for k, v in ids.items() if k in out}}


def _twin(tmp_path: Path) -> AzureTwin:
    twin = AzureTwin(tmp_path, cast("Tools", None), kueue_for=lambda _plane: None, kueue_crds=[])
    twin.put(RG, {"resourceGroupName": GROUP, "location": "westeurope"}, preview=False, create=True)
    # The cluster as a record only (a real create starts a plane: the real tier's business).
    twin.resources[CLUSTER_ID] = Resource(MC, CLUSTER_ID, {"resourceName": "worker-1"}, {})
    return twin


def _prod_monitor_requests() -> list[AzureRequest]:
    fleet = load_stack("prod")
    return [r for r in azure_requests(fleet, "prod") if r.token in MONITOR_TOKENS]


MONITOR_TOKENS = (WORKSPACE, ENDPOINT, RULE, ASSOCIATION, RULE_GROUP)


def test_the_twin_knows_every_azure_type_the_committed_stacks_register() -> None:
    for stack in ("dev", "prod"):
        tokens = {r.token for r in azure_requests(load_stack(stack), stack)}
        resources = {t for t in tokens if t in TYPES and TYPES[t].body is not None}
        assert resources <= set(NAME_KEY), (stack, sorted(resources - set(NAME_KEY)))
        assert resources <= set(REPLACE_ON), (stack, sorted(resources - set(REPLACE_ON)))


def test_prods_monitor_resources_get_arm_ids_and_the_association_is_the_clusters(
    tmp_path: Path,
) -> None:
    twin = _twin(tmp_path)
    requests = {r.token: r for r in reversed(_prod_monitor_requests())}  # the first cluster's
    ids: dict[str, str] = {"resourceGroupName": GROUP}
    for token, key in (
        (WORKSPACE, ""),
        (ENDPOINT, "dataCollectionEndpointId"),
        (RULE, "dataCollectionRuleId"),
    ):
        inputs = _engine_inputs(requests[token].inputs, ids)
        if token == RULE:
            inputs["destinations"]["monitoringAccounts"][0]["accountResourceId"] = ids["workspace"]
            inputs["dataCollectionEndpointId"] = ids["dataCollectionEndpointId"]
        assert validate(token, inputs, requests[token].name) == []
        answer = twin.put(token, inputs, preview=False, create=True)
        ids[key or "workspace"] = answer["id"]
    assert (
        ids["workspace"] == f"{RG_ID}/providers/Microsoft.Monitor/accounts/amw-aks-batch-fleet-prod"
    )
    assert ids["dataCollectionRuleId"].startswith(
        f"{RG_ID}/providers/Microsoft.Insights/dataCollectionRules/MSProm-"
    )
    link = _engine_inputs(requests[ASSOCIATION].inputs, ids) | {"resourceUri": CLUSTER_ID}
    assert validate(ASSOCIATION, link, "dcra") == []
    answer = twin.put(ASSOCIATION, link, preview=False, create=True)
    name = link["associationName"]
    assert answer["id"] == (
        f"{CLUSTER_ID}/providers/Microsoft.Insights/dataCollectionRuleAssociations/{name}"
    )
    rules = _engine_inputs(requests[RULE_GROUP].inputs, ids)
    rules["scopes"] = [ids["workspace"]]
    assert validate(RULE_GROUP, rules, "alerts") == []
    group = twin.put(RULE_GROUP, rules, preview=False, create=True)
    assert group["id"].startswith(
        f"{RG_ID}/providers/Microsoft.AlertsManagement/prometheusRuleGroups/"
    )
    # An extension resource goes with its cluster (the engine deletes it first anyway).
    twin.delete(CLUSTER_ID)
    assert answer["id"] not in twin.resources
    assert ids["dataCollectionRuleId"] in twin.resources


def test_a_monitor_resource_naming_one_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    twin = _twin(tmp_path)
    gone = f"{RG_ID}/providers/Microsoft.Insights/dataCollectionRules/gone"
    link = {"associationName": "a", "resourceUri": CLUSTER_ID, "dataCollectionRuleId": gone}
    with pytest.raises(ArmError, match="LinkedResourceNotFound"):
        twin.put(ASSOCIATION, link, preview=False, create=True)
    elsewhere = f"{RG_ID}/providers/Microsoft.ContainerService/managedClusters/worker-9"
    rule = {"resourceGroupName": GROUP, "dataCollectionRuleName": "r", "location": "westeurope"}
    twin.put(RULE, rule, preview=False, create=True)
    link = {
        **link,
        "resourceUri": elsewhere,
        "dataCollectionRuleId": f"{RG_ID}/providers/Microsoft.Insights/dataCollectionRules/r",
    }
    with pytest.raises(ArmError, match="ParentResourceNotFound"):
        twin.put(ASSOCIATION, link, preview=False, create=True)
    with pytest.raises(ArmError, match="Conflict"):
        twin.put(RULE, rule, preview=False, create=True)
    group = {
        "resourceGroupName": GROUP,
        "ruleGroupName": "g",
        "location": "westeurope",
        "scopes": [gone],
    }
    with pytest.raises(ArmError, match="LinkedResourceNotFound"):
        twin.put(RULE_GROUP, group, preview=False, create=True)


def test_azures_model_refuses_a_bad_monitor_value() -> None:
    rules = {
        "ruleGroupName": "g",
        "resourceGroupName": GROUP,
        "location": "westeurope",
        "scopes": ["/x"],
        "rules": [{"expression": "up", "severity": 9}],
    }
    bad = validate(RULE_GROUP, rules, "alerts")
    assert [f["property"] for f in bad] == ["properties.rules[0].severity"], bad


def test_an_association_moved_to_another_cluster_is_replaced() -> None:
    old = {"associationName": "a", "resourceUri": CLUSTER_ID, "dataCollectionRuleId": "/r"}
    _, replaces = diff(ASSOCIATION, old, {**old, "resourceUri": CLUSTER_ID + "x"}, [])
    assert replaces == ["resourceUri"]
    _, replaces = diff(ASSOCIATION, old, {**old, "dataCollectionRuleId": "/r2"}, [])
    assert replaces == []


def _versioned_twin(tmp_path: Path) -> AzureTwin:
    """A twin whose real tier has 1.36.3 and the next minor 1.37.2, with worker-1 at 1.36.3 (a
    record and a stand-in Cluster: its plane is the real tier's business)."""
    bins = {n: tmp_path / f"{n}-{v}" / "bin" / n for n, v in [("kube-apiserver", "1.36.3")]}
    tools = cast("Tools", SimpleNamespace(kube_apiserver=bins["kube-apiserver"]))
    after = (
        tmp_path / "kube-apiserver-next-1.37.2" / "bin" / "kube-apiserver",
        tmp_path / "kube-controller-manager-next-1.37.2" / "bin" / "kube-controller-manager",
    )
    twin = AzureTwin(
        tmp_path, tools, kueue_for=lambda _p: None, kueue_crds=[], next_control_plane=after
    )
    twin.put(RG, {"resourceGroupName": GROUP, "location": "westeurope"}, preview=False, create=True)
    twin.resources[CLUSTER_ID] = Resource(MC, CLUSTER_ID, {"resourceName": "worker-1"}, {})
    twin.clusters["worker-1"] = Cluster(
        cast("ControlPlane", None), None, cast("Relay", None), "v1.36.3"
    )
    return twin


def test_a_version_is_its_newest_patch_the_twin_has() -> None:
    have = ["v1.36.3", "v1.37.2"]
    assert resolve_version("1.36", have) == "v1.36.3"
    assert resolve_version("1.37", have) == "v1.37.2"
    assert resolve_version("1.37.2", have) == "v1.37.2"
    assert resolve_version("1.37.1", have) is None
    assert resolve_version("1.38", have) is None


def test_a_skip_a_downgrade_and_a_pool_above_its_control_plane_are_refused_in_aks_words(
    tmp_path: Path,
) -> None:
    twin = _versioned_twin(tmp_path)
    cluster = {"resourceGroupName": GROUP, "resourceName": "worker-1", "location": "westeurope"}
    for asked, said in [
        ("1.38", r"Upgrading Kubernetes version 1.36.3 to 1.38 is not allowed\. "),
        ("1.35", r"Downgrading Kubernetes version 1.36.3 to 1.35 is not allowed\. "),
    ]:
        with pytest.raises(ArmError, match=f"OperationNotAllowed: {said}"):
            twin.put(MC, {**cluster, "kubernetesVersion": asked}, preview=False, create=False)
    profile = {"name": "system", "vmSize": "Standard_D2s_v5", "orchestratorVersion": "1.37"}
    with pytest.raises(
        ArmError, match=r"NodePoolMcVersionIncompatible: Node pool version 1\.37\.2"
    ):
        twin.put(
            MC,
            {**cluster, "kubernetesVersion": "1.36", "agentPoolProfiles": [profile]},
            preview=False,
            create=False,
        )
    pool = {**POOL_INPUTS, "resourceGroupName": GROUP, "orchestratorVersion": "1.37"}
    with pytest.raises(ArmError, match="bigger than control plane version 36"):
        twin.put(POOL, pool, preview=False, create=True)
    with pytest.raises(ArmError, match="K8sVersionNotSupported"):
        twin.put(
            MC,
            {**cluster, "resourceName": "new", "kubernetesVersion": "1.35"},
            preview=False,
            create=True,
        )
    assert twin.clusters["worker-1"].version == "v1.36.3"
    assert CLUSTER_ID in twin.resources
