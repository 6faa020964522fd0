"""Bring-your-own clusters (`source: existing`): no Azure resources, the given kubeconfig used."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pulumi
import pytest

from builders.kubeconfig import KubeconfigError, server_of
from checks.stack import parse_fleet
from components.fleet import Fleet, FleetArgs
from config.errors import ConfigError
from config.loader import read_existing_kubeconfigs
from testkit.mocks import FAKE_KUBECONFIG, Graph, is_secret, resolve, run_program

RAW: dict[str, Any] = {
    "clusters": [
        {
            "name": "manager",
            "role": "manager",
            "source": "existing",
            "existing": {"kubeconfigPath": "kube/manager.yaml"},
        },
        {
            "name": "worker-1",
            "role": "worker",
            "source": "existing",
            "existing": {"kubeconfigSecret": "workerKubeconfig", "context": "worker-1"},
        },
    ],
}


def test_existing_clusters_need_no_location() -> None:
    fleet, _ = parse_fleet(RAW)
    assert [c.source for c in fleet.clusters] == ["existing", "existing"]


@pytest.mark.parametrize(
    ("existing", "message"),
    [
        (None, "clusters[0].existing: source: existing needs exactly one of kubeconfigPath"),
        ({"kubeconfigPath": "a", "kubeconfigSecret": "b"}, "needs exactly one of"),
        (
            {"kubeconfigSecret": "1bad"},
            "clusters[0].existing.kubeconfigSecret: String should match",
        ),
    ],
)
def test_existing_needs_one_kubeconfig_source(existing: Any, message: str) -> None:
    raw = copy.deepcopy(RAW)
    raw["clusters"][0]["existing"] = existing
    with pytest.raises(ConfigError) as info:
        parse_fleet(raw)
    assert any(message in str(i) for i in info.value.errors), info.value.errors


def test_existing_block_only_with_existing_source() -> None:
    raw = copy.deepcopy(RAW)
    raw["clusters"][0]["source"] = "aks"
    raw["location"] = "westeurope"
    with pytest.raises(
        ConfigError, match=r"clusters\[manager\]\.existing: only with source: existing"
    ):
        parse_fleet(raw)


def test_missing_kubeconfig_file_names_the_key(tmp_path: Path) -> None:
    fleet, _ = parse_fleet(RAW)
    with pytest.raises(ConfigError, match=r"clusters\[0\]\.existing\.kubeconfigPath: no such file"):
        read_existing_kubeconfigs(fleet, tmp_path)
    (tmp_path / "kube").mkdir()
    (tmp_path / "kube" / "manager.yaml").write_text("doc")
    assert read_existing_kubeconfigs(fleet, tmp_path) == {"manager": "doc"}


def test_server_of_reads_the_chosen_context() -> None:
    doc = FAKE_KUBECONFIG.format(name="kind-a")
    assert server_of(doc) == "https://kind-a.hcp.westeurope.azmk8s.io:443"
    with pytest.raises(KubeconfigError, match="no context named 'other'"):
        server_of(doc, "other")
    with pytest.raises(KubeconfigError, match="not a kubeconfig mapping"):
        server_of("- a")


def test_fleet_of_existing_clusters_creates_nothing_in_azure(graph: Graph) -> None:
    fleet_config, _ = parse_fleet(RAW)
    docs = {
        "manager": FAKE_KUBECONFIG.format(name="manager"),
        "worker-1": pulumi.Output.secret(
            FAKE_KUBECONFIG.format(name="worker-1").replace("current-context: worker-1", "")
        ),
    }
    fleet = run_program(
        lambda: Fleet(
            "fleet", FleetArgs(config=fleet_config, stack="e2e", existing_kubeconfigs=docs)
        )
    )
    assert not [r for r in graph.resources if r.type.startswith("azure-native:")]
    providers = graph.of_type("pulumi:providers:kubernetes")
    assert len(providers) == 2
    for p in providers:
        assert p.inputs["deleteUnreachable"] == "false"
        assert graph.by_urn(p.parent).type == "fleet:index:ExistingCluster"
    worker = next(p for p in providers if p.name == "fleet-worker-1-k8s")
    assert worker.inputs["context"] == "worker-1"
    url, secret = resolve(fleet.clusters["worker-1"].api_server_url)
    assert (url, secret) == ("https://worker-1.hcp.westeurope.azmk8s.io:443", False)
    _, kubeconfig_secret = resolve(fleet.clusters["manager"].kubeconfig)
    assert kubeconfig_secret is True
    assert all(is_secret(p.inputs["kubeconfig"]) for p in providers)
