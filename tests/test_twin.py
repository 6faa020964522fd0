"""The loopback-twin mapping (testkit/realtier/twin.py), offline, for every committed stack.

No tool is needed: these check what the real tier would run, node by node, against the stack and
against the Kueue objects the program renders for it.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from builders.fleet import kueue_objects
from config.models import FleetConfig, PoolConfig
from testkit.realtier.twin import (
    GPU_RESOURCE,
    VIRTUAL_NODE_NAME,
    PoolNodes,
    fleet_nodes,
    is_gpu_node,
    is_virtual_node,
    load_stack,
    stacks,
    submissions,
    twin_fleet,
    unserved,
)
from upstream.aks import AGENTPOOL_LABEL

STACKS = stacks()


def _twin(stack: str) -> FleetConfig:
    fleet = load_stack(stack)
    return twin_fleet(fleet, {c.name: Path(f"/twin/{c.name}.kubeconfig") for c in fleet.clusters})


def _cpu(text: str) -> Decimal:
    return Decimal(text[:-1]) / 1000 if text.endswith("m") else Decimal(text)


def _mib(text: str) -> int:
    assert text.endswith("Mi"), text
    return int(text[:-2])


def test_every_committed_stack_is_found() -> None:
    assert {"dev", "prod"} <= set(STACKS), STACKS


@pytest.mark.parametrize("stack", STACKS)
def test_twin_changes_only_source_kueue_install_and_karmada(stack: str) -> None:
    fleet = load_stack(stack)
    mapped = _twin(stack)

    def dump(f: FleetConfig) -> dict[str, Any]:
        return f.model_dump(mode="json", by_alias=True, exclude_none=True)

    before, after = dump(fleet), dump(mapped)
    for cluster in after["clusters"]:
        assert cluster.pop("source") == "existing"
        existing = cluster.pop("existing")
        # the twin keeps the default: no authorization wait on an existing cluster
        assert existing.pop("authorizationTimeoutSeconds", 0) == 0
        assert existing == {"kubeconfigPath": f"/twin/{cluster['name']}.kubeconfig"}
    for cluster in before["clusters"]:
        assert cluster.pop("source") == "aks"
        cluster.pop("upgrades", None)  # AKS's upgrade policy, which an existing cluster has not
    assert after["kueue"].pop("install") == "manifests-only"
    before["kueue"].pop("install")
    before.pop("karmada", None)
    assert "karmada" not in after
    assert after == before


@pytest.mark.parametrize("stack", STACKS)
def test_every_pool_becomes_max_count_nodes_with_aks_labels_and_taints(stack: str) -> None:
    fleet = _twin(stack)
    nodes = fleet_nodes(fleet)
    for cluster in fleet.clusters:
        by_pool = {p.pool: p for p in nodes[cluster.name]}
        system = cluster.system_pool
        assert len(by_pool[system.name].nodes) == (system.max_count or system.count)
        for node in by_pool[system.name].nodes:
            taints = {t["key"] for t in node["spec"].get("taints", [])}
            assert ("CriticalAddonsOnly" in taints) == system.only_critical_addons
            assert node["metadata"]["labels"]["kubernetes.azure.com/mode"] == "system"
        for pool in cluster.pools:
            group = by_pool[pool.name]
            assert len(group.nodes) == pool.max_count, (cluster.name, pool.name)
            for node in group.nodes:
                _check_pool_node(node, pool)
        names = [n["metadata"]["name"] for p in nodes[cluster.name] for n in p.nodes]
        assert len(names) == len(set(names)), f"{cluster.name}: node names repeat"


def _check_pool_node(node: dict[str, Any], pool: PoolConfig) -> None:
    labels: dict[str, str] = node["metadata"]["labels"]
    assert labels["agentpool"] == labels[AGENTPOOL_LABEL] == pool.name
    assert labels.items() >= pool.labels.items()
    assert labels["kubernetes.azure.com/mode"] == "user"
    taints = {(t["key"], t.get("value"), t["effect"]) for t in node["spec"].get("taints", [])}
    for text in pool.taints:
        key_value, effect = text.rsplit(":", 1)
        key, _, value = key_value.partition("=")
        assert (key, value or None, effect) in taints, text
    spot = ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")
    if pool.priority == "Spot":
        assert spot in taints
        assert labels["kubernetes.azure.com/scalesetpriority"] == "spot"
    else:
        assert spot not in taints
        assert "kubernetes.azure.com/scalesetpriority" not in labels
    assert not is_virtual_node(node)
    assert node["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}


@pytest.mark.parametrize("stack", STACKS)
def test_gpu_resources_only_on_gpu_sizes(stack: str) -> None:
    fleet = _twin(stack)
    for groups in fleet_nodes(fleet).values():
        for group in groups:
            gpu_size = group.vm_size is not None and "_N" in group.vm_size
            for node in group.nodes:
                assert is_gpu_node(node) == gpu_size, (group.cluster, group.pool)
                if gpu_size:
                    assert int(node["status"]["allocatable"][GPU_RESOURCE]) >= 1
                    assert (
                        node["status"]["capacity"][GPU_RESOURCE]
                        == (node["status"]["allocatable"][GPU_RESOURCE])
                    )


@pytest.mark.parametrize("stack", STACKS)
def test_virtual_nodes_carry_the_aci_label_and_taint(stack: str) -> None:
    fleet = _twin(stack)
    nodes = fleet_nodes(fleet)
    for cluster in fleet.clusters:
        virtual = [n for p in nodes[cluster.name] for n in p.nodes if is_virtual_node(n)]
        if not cluster.virtual_nodes.enabled:
            assert virtual == []
            continue
        [node] = virtual
        assert node["metadata"]["name"] == VIRTUAL_NODE_NAME
        assert node["metadata"]["labels"]["type"] == "virtual-kubelet"
        assert {"key": "virtual-kubelet.io/provider", "value": "azure", "effect": "NoSchedule"} in (
            node["spec"]["taints"]
        )


def _pool_totals(group: PoolNodes) -> tuple[Decimal, Decimal]:
    cpu = sum((_cpu(n["status"]["allocatable"]["cpu"]) for n in group.nodes), Decimal(0))
    mib = sum(_mib(n["status"]["allocatable"]["memory"]) for n in group.nodes)
    return cpu, Decimal(mib) / 1024


# Totals at maxCount that the stack files state in their comments (from preflight's plan).
@pytest.mark.parametrize(
    ("stack", "cluster", "pool", "cpu", "gib"),
    [
        ("dev", "worker-1", "batch", "19.3", "76.3"),
        ("prod", "worker-1", "cpu", "314.8", "1234"),
        ("prod", "worker-1", "mem", "157.4", "1257"),
    ],
)
def test_allocatable_adds_up_to_the_capacity_the_stack_states(
    stack: str, cluster: str, pool: str, cpu: str, gib: str
) -> None:
    if stack not in STACKS:
        pytest.skip(f"no stack {stack}")
    [group] = [g for g in fleet_nodes(_twin(stack))[cluster] if g.pool == pool]
    total_cpu, total_gib = _pool_totals(group)
    assert total_cpu == Decimal(cpu)
    assert round(total_gib, 1 if "." in gib else 0) == Decimal(gib)


def _matches(node: dict[str, Any], selector: dict[str, str]) -> bool:
    return node["metadata"]["labels"].items() >= selector.items()


def _tolerates(tolerations: list[dict[str, str]], taint: dict[str, str]) -> bool:
    for tol in tolerations:
        if tol.get("key") != taint["key"] or tol.get("effect", taint["effect"]) != taint["effect"]:
            continue
        if tol.get("operator") == "Exists" or tol.get("value") == taint.get("value"):
            return True
    return False


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_flavors_select_exactly_their_pools_nodes(stack: str) -> None:
    """The twin's nodes and the program's ResourceFlavors agree: a pool-bound flavor's nodeLabels
    pick that pool's nodes and no other, and its tolerations cover their taints."""
    fleet = _twin(stack)
    nodes = fleet_nodes(fleet)
    manifests = [m for objects in kueue_objects(fleet).values() for m in objects]
    checked = 0
    for cluster in fleet.clusters:
        all_nodes = [(g.pool, n) for g in nodes[cluster.name] for n in g.nodes]
        for flavor in cluster.queues.flavors:
            if flavor.pool is None:
                continue
            [obj] = [
                m.obj
                for m in manifests
                if m.target == cluster.name
                and m.kind == "ResourceFlavor"
                and m.obj["metadata"]["name"] == flavor.name
            ]
            selector: dict[str, str] = obj["spec"].get("nodeLabels", {})
            picked = {pool for pool, node in all_nodes if _matches(node, selector)}
            assert picked == {flavor.pool}, (cluster.name, flavor.name, picked)
            for pool, node in all_nodes:
                if pool == flavor.pool:
                    for taint in node["spec"].get("taints", []):
                        assert _tolerates(obj["spec"].get("tolerations", []), taint), taint
            checked += 1
    assert checked, f"{stack}: no pool-bound flavor to check"


@pytest.mark.parametrize("stack", STACKS)
def test_every_cluster_queue_can_serve_a_users_job(stack: str) -> None:
    fleet = _twin(stack)
    assert unserved(fleet) == []
    assert submissions(fleet), f"{stack}: no LocalQueue a user can submit to"


def test_dev_submissions_go_to_the_manager_and_dispatch() -> None:
    [sub] = submissions(_twin("dev"))
    assert (sub.cluster, sub.namespace, sub.local_queue, sub.dispatched, sub.gpus) == (
        "manager",
        "team-a",
        "team-a",
        True,
        0,
    )
