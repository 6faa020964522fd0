"""`upgrades.batchPods`: the pods Kueue admitted are kept through AKS's node drains.

What is rendered (a budget per team namespace per cluster, mirrored queues included), what each
pool sends (`undrainableNodeBehavior`), what the program registers, and preflight's warnings. The
budget against a real kube-apiserver, disruption controller and an AKS-ordered drain:
tests/realtier/test_worker_maintenance.py.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi_kubernetes as k8s
import pytest

from builders.aks import sent_upgrade_settings
from builders.batch_pods import BUDGET_NAME, NO_EVICTION, batch_pod_budget
from builders.fleet import kueue_objects
from checks.stack import parse_fleet
from config.loader import read_stack_file
from config.models import FleetConfig
from config.resolve import with_mirrored_queues
from testkit.mocks import built_stack
from testkit.repo import COMMITTED_STACKS
from upstream.kueue import POD_SET_LABEL

Raw = dict[str, Any]


def committed(stack: str) -> Raw:
    raw, _ = read_stack_file(stack)
    return json.loads(json.dumps(raw))  # prod's workers share sections through YAML anchors


def budgets(fleet: FleetConfig) -> dict[str, set[str]]:
    """Cluster -> the namespaces that have the budget."""
    return {
        cluster: {m.obj["metadata"]["namespace"] for m in ms if m.kind == "PodDisruptionBudget"}
        for cluster, ms in kueue_objects(fleet).items()
    }


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_every_team_namespace_of_every_cluster_gets_the_budget(stack: str) -> None:
    fleet, _ = parse_fleet(committed(stack))
    namespaces = {
        c.name: {n.name for n in c.queues.namespaces} for c in with_mirrored_queues(fleet).clusters
    }
    got = budgets(fleet)
    assert got == namespaces
    # Workers run the manager's jobs: their mirrored team namespaces are covered.
    workers = [c.name for c in fleet.clusters if c.role == "worker"]
    assert all(got[w] for w in workers)


def test_the_budget_selects_kueues_pods_and_allows_no_eviction() -> None:
    budget = batch_pod_budget("team-a")
    spec = budget["spec"]
    assert budget["apiVersion"] == "policy/v1"
    assert budget["metadata"]["name"] == BUDGET_NAME
    assert spec["selector"] == {"matchExpressions": [{"key": POD_SET_LABEL, "operator": "Exists"}]}
    # An integer (a percentage or maxUnavailable would send the disruption controller looking for
    # a Job's scale, which fails) above any pod count: disruptionsAllowed is always 0.
    assert isinstance(spec["minAvailable"], int)
    assert spec["minAvailable"] == NO_EVICTION
    assert "maxUnavailable" not in spec
    assert spec["unhealthyPodEvictionPolicy"] == "IfHealthyBudget"
    # Every field is one the pinned Kubernetes SDK types know (an unknown one is a TypeError).
    snake = {"minAvailable": "min_available", "selector": "selector",
             "unhealthyPodEvictionPolicy": "unhealthy_pod_eviction_policy"}  # fmt: skip
    k8s.policy.v1.PodDisruptionBudgetSpecArgs(**{snake[k]: v for k, v in spec.items()})


def test_the_budget_is_made_after_its_namespace_and_deleted_before_it() -> None:
    fleet, _ = parse_fleet(committed("dev"))
    for ms in kueue_objects(fleet).values():
        for m in ms:
            if m.kind == "PodDisruptionBudget":
                assert m.needs == (f"Namespace/{m.obj['metadata']['namespace']}",)


def test_evict_renders_no_budget_and_a_cluster_may_choose_its_own() -> None:
    raw = committed("dev")
    raw.setdefault("upgrades", {})["batchPods"] = "evict"
    fleet, _ = parse_fleet(raw)
    assert not any(budgets(fleet).values())
    raw["clusters"][1]["upgrades"] = {"batchPods": "protect"}
    fleet, _ = parse_fleet(raw)
    name = fleet.clusters[1].name
    assert {c for c, ns in budgets(fleet).items() if ns} == {name}


def test_the_program_registers_the_budgets_on_each_clusters_provider() -> None:
    graph = built_stack("dev").graph
    registered = graph.of_type("kubernetes:policy/v1:PodDisruptionBudget")
    fleet, _ = parse_fleet(committed("dev"))
    assert len(registered) == sum(len(ns) for ns in budgets(fleet).values()) > 0
    for r in registered:
        assert r.inputs["spec"]["minAvailable"] == NO_EVICTION
        kinds = {graph.by_urn(d).type for d in r.dependencies}
        assert "kubernetes:core/v1:Namespace" in kinds


# --- what each pool sends -------------------------------------------------------------------


def _pools(stack: str, fleet_upgrades: Raw | None = None) -> FleetConfig:
    raw = committed(stack)
    if fleet_upgrades is not None:
        raw.setdefault("upgrades", {}).update(fleet_upgrades)
    fleet, _ = parse_fleet(raw)
    return fleet


def test_protect_sends_cordon_except_on_spot_pools() -> None:
    fleet = _pools("prod")
    seen_spot = 0
    for c in fleet.clusters:
        up = fleet.upgrades_of(c)
        for pool in (c.system_pool, *c.pools):
            sent = sent_upgrade_settings(pool, up)
            if getattr(pool, "priority", "Regular") == "Spot":
                seen_spot += 1
                assert sent.undrainable_node_behavior is None
                assert sent.max_surge is None
            else:
                assert sent.undrainable_node_behavior == "Cordon", (c.name, pool.name)
    assert seen_spot == 1


def test_evict_sends_aks_defaults_and_a_written_behaviour_is_sent_as_written() -> None:
    fleet = _pools("dev", {"batchPods": "evict"})
    c = fleet.clusters[0]
    assert (
        sent_upgrade_settings(c.system_pool, fleet.upgrades_of(c)).undrainable_node_behavior is None
    )
    fleet = _pools(
        "dev", {"nodePools": {"undrainableNodeBehavior": "Schedule", "maxUnavailable": "1"}}
    )
    sent = sent_upgrade_settings(c.system_pool, fleet.upgrades_of(fleet.clusters[0]))
    assert (sent.undrainable_node_behavior, sent.max_unavailable) == ("Schedule", "1")


# --- preflight ------------------------------------------------------------------------------


def test_schedule_under_protect_warns_at_the_key_that_set_it() -> None:
    raw = committed("dev")
    raw.setdefault("upgrades", {})["nodePools"] = {"undrainableNodeBehavior": "Schedule"}
    _, issues = parse_fleet(raw)
    hits = [i for i in issues if i.path == "upgrades.nodePools.undrainableNodeBehavior"]
    assert hits
    assert all(i.severity == "warning" for i in hits)
    assert "schedulable again" in hits[0].message


def test_cordon_on_a_spot_pool_warns() -> None:
    raw = committed("prod")
    index = next(
        i
        for i, c in enumerate(raw["clusters"])
        for p in c.get("pools", [])
        if p.get("priority") == "Spot"
    )
    pools = raw["clusters"][index]["pools"]
    j = next(j for j, p in enumerate(pools) if p.get("priority") == "Spot")
    pools[j]["upgradeSettings"] = {"undrainableNodeBehavior": "Cordon", "drainTimeoutMinutes": 60}
    _, issues = parse_fleet(raw)
    path = f"clusters[{index}].pools[{j}].upgradeSettings.undrainableNodeBehavior"
    (hit,) = [i for i in issues if i.path == path]
    assert hit.severity == "warning"
    assert "Spot" in hit.message


def test_evict_in_production_warns_and_not_in_development() -> None:
    raw = committed("prod")
    raw["upgrades"]["batchPods"] = "evict"
    for c in raw["clusters"]:
        if "upgrades" in c:
            c["upgrades"]["batchPods"] = "evict"
    _, issues = parse_fleet(raw)
    hits = [i for i in issues if i.path.endswith("batchPods")]
    assert hits
    assert all(i.severity == "warning" and "backoffLimit" in i.message for i in hits)
    # The manager runs no batch pods of its own in prod (its queues dispatch): no warning for it.
    assert not any("'manager'" in i.message for i in hits)
    raw = committed("dev")
    raw.setdefault("upgrades", {})["batchPods"] = "evict"
    _, issues = parse_fleet(raw)
    assert not [i for i in issues if i.path.endswith("batchPods")]


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_the_committed_stacks_protect_batch_pods_without_a_warning(stack: str) -> None:
    fleet, issues = parse_fleet(committed(stack))
    assert all(fleet.upgrades_of(c).batch_pods == "protect" for c in fleet.clusters)
    assert not [
        i for i in issues if "undrainableNodeBehavior" in i.path or i.path.endswith("batchPods")
    ]
