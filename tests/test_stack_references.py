"""The stack-references pattern (examples/stack-references): a dispatch stack over other stacks.

Under mocks: the cluster stacks' `kubeconfigs` outputs come from StackReferences; the dispatch
stack builds MultiKueue on those clusters and nothing in Azure.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pulumi
import pytest
import yaml

from config.errors import ConfigError
from testkit.mocks import FAKE_KUBECONFIG, Graph, is_secret, run_program
from testkit.repo import ROOT
from testkit.shared.multikueue_component import CHECK, MKCONFIG, engine  # noqa: F401 - fixture

EXAMPLE = ROOT / "examples" / "stack-references"
REF = "pulumi:pulumi:StackReference"
STACKS = {
    "acme/aks-batch-fleet/eu-manager": ["manager"],
    "acme/aks-batch-fleet/eu-workers-1": ["worker-001", "worker-002"],
    "acme/aks-batch-fleet/eu-workers-2": ["worker-021"],
}


@pytest.fixture
def dispatch() -> Iterator[ModuleType]:
    """The example's program module (it lives outside the project's packages)."""
    spec = importlib.util.spec_from_file_location("dispatch", EXAMPLE / "dispatch.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["dispatch"] = module  # pydantic resolves the models' annotations through it
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules["dispatch"]


def settings() -> dict[str, Any]:
    doc = yaml.safe_load((EXAMPLE / "Pulumi.example.yaml").read_text())
    return doc["config"]["dispatch:settings"]


@pytest.fixture
def stacks(engine: Graph) -> Graph:  # noqa: F811
    """Mocks that answer a StackReference with that stack's exported kubeconfigs."""
    base = engine.mocks.new_resource

    def new_resource(args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        if args.typ == REF:
            name = args.inputs["name"]
            docs = {c: FAKE_KUBECONFIG.format(name=c) for c in STACKS[name]}
            return name, {"name": name, "outputs": {"kubeconfigs": docs}}
        return base(args)

    engine.mocks.new_resource = new_resource  # type: ignore[method-assign]
    return engine


def test_dispatch_stack_builds_multikueue_on_referenced_clusters(
    stacks: Graph, dispatch: Any
) -> None:
    value = dispatch.parse(settings())
    run_program(lambda: dispatch.dispatch_program(value))
    every = {r.name: r for r in stacks.resources if r.type == "pulumi:providers:kubernetes"}
    providers = {n: r for n, r in every.items() if not n.endswith("-proof")}
    assert set(providers) == {f"{c}-k8s" for cs in STACKS.values() for c in cs}
    # One more per worker: its new token's proof (components.multikueue), from the kubeconfig
    # the manager stores.
    workers = ("worker-001", "worker-002", "worker-021")
    assert set(every) - set(providers) == {f"dispatch-{w}-proof" for w in workers}
    for provider in every.values():
        assert is_secret(provider.inputs["kubeconfig"])  # read from another stack, kept secret
    tokens = [r for r in stacks.of_type("kubernetes:core/v1:Secret") if r.name.endswith("-token")]
    assert {stacks.provider_urn(t) for t in tokens} == {
        providers[f"{w}-k8s"].urn for w in ("worker-001", "worker-002", "worker-021")
    }
    configs = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]["clusters"] for r in stacks.of_type(MKCONFIG)
    }
    assert configs == {
        "multikueue-batch-1": ["worker-001", "worker-002"],
        "multikueue-batch-2": ["worker-021"],
    }
    queues = {
        r.inputs["metadata"]["name"]: r
        for r in stacks.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
    }
    assert queues["batch-2"].inputs["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "multikueue-batch-2"}]
    }
    checks = {r.inputs["metadata"]["name"]: r for r in stacks.of_type(CHECK)}
    assert checks["multikueue-batch-2"].urn in queues["batch-2"].dependencies
    manager = providers["manager-k8s"].urn
    assert {stacks.provider_urn(r) for r in [*queues.values(), *checks.values()]} == {manager}
    assert not [r for r in stacks.resources if r.type.startswith("azure-native:")]


def test_a_dispatch_set_over_20_names_kueues_limit(dispatch: Any) -> None:
    raw = settings()
    raw["workers"][0]["clusters"] = [f"w{i}" for i in range(21)]
    raw["dispatch"]["batch-1"] = [f"w{i}" for i in range(21)]
    with pytest.raises(ConfigError) as info:
        dispatch.parse(raw)
    (issue,) = info.value.issues
    assert issue.path == "dispatch.batch-1"
    assert "1..20 clusters" in issue.message
    assert "MultipleMultiKueueAdmissionChecks" in issue.message


def test_cluster_stacks_export_what_the_dispatch_stack_reads() -> None:
    program = (ROOT / "__main__.py").read_text()
    assert "pulumi.export(c.OUT_KUBECONFIGS, fleet.kubeconfigs)" in program
    assert Path(EXAMPLE / "__main__.py").is_file()
