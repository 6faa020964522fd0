"""The Azure twin's pure rules, offline: the stand-in plugin's replace table and the twin's
input checks (tests/realtier/azure_provider.py and azure_twin.py; docs/testing.md, "The Azure
twin")."""

from __future__ import annotations

from tests.realtier.azure_provider import diff
from tests.realtier.azure_twin import UNKNOWN, validate

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
