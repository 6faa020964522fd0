"""Limits come from Azure or Kueue, with their source; Azure quotas appear in the plan as totals."""

from __future__ import annotations

import pytest

from checks.stack import parse_fleet
from config.errors import ConfigError
from preflight.plan import azure_quotas, build_plan, quota_section
from testkit.fleetgen import fleet
from upstream.aks import QUOTA_SOURCE, vcpu_family


def test_no_cluster_cap_of_the_projects_own() -> None:
    value, _ = parse_fleet(fleet(60))
    assert len(value.clusters) == 61


def test_101_clusters_in_one_region_warn_with_azures_default_quota() -> None:
    value, warnings = parse_fleet(fleet(100))
    (warning,) = [w for w in warnings if w.path == "clusters"]
    assert warning.severity == "warning"
    assert "101 AKS clusters in westeurope" in warning.message
    assert "100 clusters per subscription and region" in warning.message
    assert QUOTA_SOURCE in warning.message
    plan = build_plan("gen", value, warnings)
    (region,) = plan["azureQuotas"]
    assert region["aksClusters"] == 101
    # 101 D2s_v5 system nodes always; 100 workers' batch pools add 5 D4s_v5 each at most.
    assert region["vcpus"]["DSv5 family vCPUs"] == {"min": 202, "max": 202 + 100 * 5 * 4}
    assert region["vcpus"]["Total regional vCPUs"] == {"min": 202, "max": 2202}
    rows = quota_section(plan["azureQuotas"])["rows"]
    assert rows[0][:4] == ["westeurope", "AKS clusters", 101, 101]


def test_spot_pools_count_against_the_spot_quota() -> None:
    raw = fleet(1)
    raw["clusters"][1]["pools"][0] |= {"priority": "Spot"}
    value, _ = parse_fleet(raw)
    (region,) = azure_quotas(value)
    assert region["vcpus"]["Spot vCPUs (all families)"] == {"min": 0, "max": 20}
    assert region["vcpus"]["Total regional vCPUs"] == {"min": 4, "max": 4}


def test_node_pool_limit_is_azures_and_says_so() -> None:
    raw = fleet(1, karmada=False)
    base = raw["clusters"][1]["pools"][0]
    raw["clusters"][1]["pools"] = [base | {"name": f"p{i}", "labels": {}} for i in range(100)]
    with pytest.raises(ConfigError) as info:
        parse_fleet(raw)
    messages = [str(i) for i in info.value.issues]
    assert any(
        m.startswith("clusters[1].pools: 100 user pools + the system pool: AKS allows at most 100")
        and QUOTA_SOURCE in m
        for m in messages
    ), messages


@pytest.mark.parametrize(
    ("size", "family"),
    [
        ("Standard_D4s_v5", "DSv5"),
        ("Standard_D8ads_v5", "DADSv5"),
        ("Standard_F8s_v2", "FSv2"),
        ("Standard_NC4as_T4_v3", "NCASv3_T4"),
    ],
)
def test_vcpu_family_from_the_size_name(size: str, family: str) -> None:
    assert vcpu_family(size) == family
