"""The whole program (__main__.py) under mocks with the committed stack files."""

from __future__ import annotations

import runpy
from collections import Counter
from typing import Any

import pulumi
import pytest
import yaml

from testkit.mocks import (
    Graph,
    built_stack,
    mocked_engine,
    run_program,
    set_stack_config,
    stack_outputs,
)
from testkit.repo import COMMITTED_STACKS, ROOT


def stack_raw(stack: str) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    return doc["config"]["aks-batch-fleet:fleet"]


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_main_registers_the_fleet(graph: Graph, stack: str) -> None:
    raw = stack_raw(stack)
    set_stack_config(raw)
    run_program(lambda: runpy.run_path(str(ROOT / "__main__.py")))
    clusters = graph.of_type("azure-native:containerservice:ManagedCluster")
    assert sorted(c.inputs["resourceName"] for c in clusters) == sorted(
        c["name"] for c in raw["clusters"]
    )
    pools = graph.of_type("azure-native:containerservice:AgentPool")
    assert len(pools) == sum(len(c.get("pools", [])) for c in raw["clusters"])
    outputs = stack_outputs()
    names = {c["name"] for c in raw["clusters"]}
    assert set(outputs["clusterNames"][0]) == names
    kubeconfigs, secret = outputs["kubeconfigs"]
    assert secret, "kubeconfigs must be secret in the stack outputs"
    assert set(kubeconfigs) == names
    assert outputs["apiServerFqdns"] == (
        {n: f"{n}-abc123.hcp.westeurope.azmk8s.io" for n in names},
        False,
    )
    queues, _ = outputs["queues"]
    assert set(queues) == names
    if stack == "dev":  # team-a is declared on the manager and mirrored onto both workers
        assert all(q["localQueues"] == ["team-a/team-a"] for q in queues.values())
    if raw.get("karmada") is not None:
        assert outputs["karmadaKubeconfig"][1] is True
    else:
        assert "karmadaKubeconfig" not in outputs


def test_invalid_config_registers_nothing(graph: Graph) -> None:
    raw = stack_raw("dev")
    raw["clusters"][1]["pools"][0]["minCount"] = 9
    set_stack_config(raw)
    with pytest.raises(pulumi.RunError, match=r"clusters\[worker-1\]\.pools\[batch\]\.minCount"):
        run_program(lambda: runpy.run_path(str(ROOT / "__main__.py")))
    assert graph.resources == []


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_preview_registers_the_same_graph(stack: str) -> None:
    """`pulumi preview` (PRs): outputs are unknown and applies are skipped, yet the whole graph
    registers, with nothing read from a cluster that does not exist yet."""
    raw = stack_raw(stack)
    with mocked_engine(stack, preview=True) as graph:
        set_stack_config(raw)
        run_program(lambda: runpy.run_path(str(ROOT / "__main__.py")))
        previewed = Counter(r.type for r in graph.resources)
    deployed = Counter(r.type for r in built_stack(stack).graph.resources)
    assert previewed == deployed


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_no_kubernetes_default_provider(stack: str) -> None:
    """The engine refuses a Kubernetes resource without `provider=` (stack config), and none
    of the program's resources needs one: each names its cluster's provider."""
    doc = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    assert doc["config"]["pulumi:disable-default-providers"] == ["kubernetes"]
    graph = built_stack(stack).graph
    kube = [r for r in graph.resources if r.type.startswith("kubernetes:") and r.custom]
    assert kube
    for r in kube:
        provider = graph.provider_urn(r)
        assert provider, f"{r.type} {r.name} has no explicit provider"
        assert graph.by_urn(provider).type == "pulumi:providers:kubernetes"


def test_deploys_do_not_type_check_the_tests() -> None:
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert "typechecker" not in project["runtime"].get("options", {})


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_every_kubernetes_type_names_group_and_version(stack: str) -> None:
    """The provider refuses `kubernetes:v1:Service` ("apiVersion does not have both a group and a
    version") at `up`, while the SDK's mocks accept any token; core kinds must be typed classes
    (`kubernetes:core/v1:...`). Found by the real tier on dev's StatefulSet app's Service."""
    graph = built_stack(stack).graph
    kube = [r for r in graph.resources if r.type.startswith("kubernetes:") and r.custom]
    bad = sorted({r.type for r in kube if "/" not in r.type.split(":")[1]})
    assert not bad
    if stack == "dev":
        assert any(r.type == "kubernetes:core/v1:Service" for r in kube)
