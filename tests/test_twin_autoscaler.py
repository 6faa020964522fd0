"""Offline: how a twin hands its AKS pools to the real cluster-autoscaler.

No tool runs here (testkit/realtier/autoscaler.py builds the objects; the real-tier
test_provisioning_gate.py runs the autoscaler on them).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from config.models import AutoscalerProfile
from testkit.realtier.autoscaler import (
    AKS_SCALE_DOWN_DELAY_AFTER_ADD,
    AKS_SCALE_DOWN_UNNEEDED_TIME,
    CONFIG_MAP,
    DESIRED_ANNOTATION,
    FAST_SCALE_DOWN,
    GROUP_ANNOTATION,
    MAX_ANNOTATION,
    MIN_ANNOTATION,
    NAMESPACE,
    TEMPLATES_MAP,
    autoscaler_args,
    nodes_at_min,
    provider_config_maps,
    provider_id,
    scale_down_flags,
    templates,
)
from testkit.realtier.harness import ControlPlane, Tools
from testkit.realtier.twin import KWOK_ANNOTATION, fleet_nodes, load_stack, stacks
from upstream.aks import AGENTPOOL_LABEL


@pytest.mark.parametrize("stack", stacks())
def test_user_pools_start_at_min_count_and_the_system_pool_is_kept(stack: str) -> None:
    fleet = load_stack(stack)
    full = fleet_nodes(fleet)
    at_min = nodes_at_min(fleet)
    for cluster in fleet.clusters:
        pools = {p.name: p for p in cluster.pools}
        for whole, kept in zip(full[cluster.name], at_min[cluster.name], strict=True):
            assert whole.pool == kept.pool
            if kept.pool not in pools:  # System pool, virtual node: as the twin has them
                assert kept.nodes == whole.nodes
                continue
            assert len(kept.nodes) == pools[kept.pool].min_count
            for node in kept.nodes:
                name = node["metadata"]["name"]
                assert node["metadata"]["annotations"][GROUP_ANNOTATION] == kept.pool
                assert node["spec"]["providerID"] == provider_id(name)
                assert node["metadata"]["labels"][AGENTPOOL_LABEL] == kept.pool


def test_prod_keeps_pools_with_a_min_count_above_zero() -> None:
    """prod has pools with minCount 1: the test above is not only about empty pools."""
    fleet = load_stack("prod")
    kept = [g for groups in nodes_at_min(fleet).values() for g in groups]
    pools = {p.name for c in fleet.clusters for p in c.pools}
    assert any(g.pool in pools and g.nodes for g in kept)


@pytest.mark.parametrize("stack", stacks())
def test_one_template_per_user_pool_with_its_bounds(stack: str) -> None:
    fleet = load_stack(stack)
    for cluster in fleet.clusters:
        found = {
            t["metadata"]["labels"][AGENTPOOL_LABEL]: t for t in templates(fleet, cluster.name)
        }
        assert set(found) == {p.name for p in cluster.pools}
        model = {g.pool: g.nodes[0] for g in fleet_nodes(fleet)[cluster.name] if g.nodes}
        for pool in cluster.pools:
            template = found[pool.name]
            notes = template["metadata"]["annotations"]
            assert notes[MIN_ANNOTATION] == str(pool.min_count)
            assert notes[MAX_ANNOTATION] == str(pool.max_count)
            assert notes[DESIRED_ANNOTATION] == str(pool.min_count)
            assert notes[KWOK_ANNOTATION[0]] == KWOK_ANNOTATION[1]  # kwok keeps it Ready
            assert "kubernetes.io/hostname" not in template["metadata"]["labels"]
            # the node the twin would register: same taints, capacity, allocatable
            assert template["status"] == model[pool.name]["status"]
            assert template.get("spec") == model[pool.name].get("spec")


def test_provider_config_reads_templates_from_its_config_map_grouped_by_agentpool() -> None:
    fleet = load_stack("dev")
    config_map, templates_map = provider_config_maps(fleet, "worker-1")
    assert (config_map["metadata"], templates_map["metadata"]) == (
        {"name": CONFIG_MAP, "namespace": NAMESPACE},
        {"name": TEMPLATES_MAP, "namespace": NAMESPACE},
    )
    config = json.loads(config_map["data"]["config"])
    assert config["readNodesFrom"] == "configmap"
    assert config["configmap"] == {"name": TEMPLATES_MAP}
    assert config["nodegroups"] == {"fromNodeLabelKey": AGENTPOOL_LABEL}
    assert config["nodes"]["skipTaint"] is True  # AKS nodes carry no `kwok-provider` taint
    listed = json.loads(templates_map["data"]["templates"])
    assert listed["kind"] == "List"
    assert [n["metadata"]["labels"][AGENTPOOL_LABEL] for n in listed["items"]] == ["batch"]


def test_autoscaler_talks_json_so_it_can_write_provisioning_requests(tmp_path: Path) -> None:
    """Found on the real tier: with the default protobuf content type every ProvisioningRequest
    status update fails (a CRD has no protobuf form) and no request is ever Accepted."""
    # Never started: the tool paths are only carried (no cache is needed offline).
    absent = tmp_path / "not-built"
    plane = ControlPlane("worker-1", tmp_path / "worker-1", Tools(*[absent] * 5))
    args = autoscaler_args(tmp_path / "cluster-autoscaler", plane, "least-waste", FAST_SCALE_DOWN)
    assert "--kube-api-content-type=application/json" in args
    assert "--enable-provisioning-requests=true" in args
    assert "--cloud-provider=kwok" in args
    assert "--expander=least-waste" in args


def test_twin_autoscalers_scale_down_on_the_stacks_own_times(tmp_path: Path) -> None:
    """The twin's autoscaler takes a cluster's autoScalerProfile scale-down times (AKS's 10m
    defaults where unset); only a test that watches nodes go asks for seconds."""
    dev = load_stack("dev")
    worker = dev.cluster("worker-1")
    assert worker is not None
    assert scale_down_flags(worker.autoscaler_profile) == (
        "--scale-down-unneeded-time=5m",
        "--scale-down-delay-after-add=5m",
    )
    assert scale_down_flags(AutoscalerProfile()) == (
        f"--scale-down-unneeded-time={AKS_SCALE_DOWN_UNNEEDED_TIME}",
        f"--scale-down-delay-after-add={AKS_SCALE_DOWN_DELAY_AFTER_ADD}",
    )
    absent = tmp_path / "not-built"
    plane = ControlPlane("worker-1", tmp_path / "worker-1", Tools(*[absent] * 5))
    binary = tmp_path / "cluster-autoscaler"
    stack_times = autoscaler_args(binary, plane, None, scale_down_flags(worker.autoscaler_profile))
    assert "--scale-down-unneeded-time=5m" in stack_times
    assert "--scale-down-unneeded-time=10s" in autoscaler_args(binary, plane, None, FAST_SCALE_DOWN)
    assert "--scale-down-unneeded-time=10s" in FAST_SCALE_DOWN
