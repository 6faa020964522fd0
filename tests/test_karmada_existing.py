"""Bring your own Karmada (`karmada.source: existing`): no chart, no address, no host cluster."""

from __future__ import annotations

import copy
import json
import runpy
from pathlib import Path
from typing import Any

import pulumi
import pytest

from builders import karmada as kb
from builders.fleet import render_fleet
from checks.stack import parse_fleet, read_files
from components.fleet import Fleet, FleetArgs
from config.errors import ConfigError
from config.loader import read_karmada_kubeconfig
from config.resolve import host_name, member_names
from constants import KUBERNETES_PROVIDER_VERSION, PROJECT
from testkit.mocks import FAKE_KUBECONFIG, Graph, is_secret, resolve, run_program, stack_outputs
from testkit.repo import ROOT
from testkit.shared.karmada_config import errors_for
from testkit.shared.karmada_existing import RAW

KARMADA_DOC = FAKE_KUBECONFIG.format(name="karmada")


def test_no_host_and_the_members_as_usual() -> None:
    fleet, warnings = parse_fleet(RAW)
    assert host_name(fleet) is None
    assert member_names(fleet) == ["worker-1", "worker-2"]
    assert warnings == []
    # Two clusters and no manager: with the chart this would need `karmada.host`.
    chart = copy.deepcopy(RAW)
    del chart["karmada"]["source"], chart["karmada"]["existing"]
    chart["karmada"]["apiServer"] = {"allowedSourceRanges": ["203.0.113.0/24"]}
    assert any(e.startswith("karmada.host: required") for e in errors_for(chart))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"existing": None}, "karmada.existing: source: existing needs exactly one of"),
        (
            {"existing": {"kubeconfigPath": "k.yaml", "kubeconfigSecret": "k"}},
            "karmada.existing: source: existing needs exactly one of",
        ),
        ({"host": "worker-1"}, "karmada.host: only with source: chart"),
        ({"apiServer": {"exposure": "public"}}, "karmada.apiServer: only with source: chart"),
        ({"etcd": {"replicas": 3}}, "karmada.etcd: only with source: chart"),
        ({"controlPlane": {"replicas": 2}}, "karmada.controlPlane: only with source: chart"),
        ({"chartVersion": "v1.18.2"}, "karmada.chartVersion: only with source: chart"),
        ({"source": "chart"}, "karmada.existing: only with source: existing"),
    ],
)
def test_combinations_that_do_not_fit(change: dict[str, Any], message: str) -> None:
    raw = copy.deepcopy(RAW)
    raw["karmada"].update(change)
    errors = errors_for(raw)
    assert any(message in e for e in errors), errors


def test_failover_on_an_existing_control_plane_warns_about_its_gate() -> None:
    raw = copy.deepcopy(RAW)
    raw["karmada"]["failover"] = {"enabled": True}
    _, warnings = parse_fleet(raw)
    assert [w.path for w in warnings] == ["karmada.failover.enabled"]
    assert "Failover=true" in warnings[0].message


def test_renders_registration_and_applications_but_no_chart() -> None:
    fleet, _ = parse_fleet(RAW)
    manifests, releases = render_fleet(fleet)
    assert [(r.target, r.release) for r in releases if r.release == "karmada"] == []
    assert sorted(r.target for r in releases if r.release == "kruise") == ["worker-1", "worker-2"]
    on_karmada = sorted(m.kind for m in manifests if m.target == "karmada")
    assert on_karmada == sorted(
        ["Secret"] * 2  # credentials per member (scoped: no impersonator)
        + ["Cluster"] * 2
        + ["ResourceInterpreterCustomization", "Namespace", "PropagationPolicy"]
        + ["UnitedDeployment", "Service"]  # a StatefulSet template's headless Service
    )


def test_missing_kubeconfig_file_names_the_key(tmp_path: Path) -> None:
    raw = copy.deepcopy(RAW)
    raw["karmada"]["existing"] = {"kubeconfigPath": "kube/karmada.yaml"}
    fleet, _ = parse_fleet(raw)
    with pytest.raises(
        ConfigError, match=r"karmada\.existing\.kubeconfigPath: no such file in the project"
    ):
        read_karmada_kubeconfig(fleet, tmp_path)
    (tmp_path / "kube").mkdir()
    (tmp_path / "kube" / "karmada.yaml").write_text("doc")
    assert read_karmada_kubeconfig(fleet, tmp_path) == "doc"
    assert read_karmada_kubeconfig(parse_fleet(RAW)[0], tmp_path) is None


def test_component_uses_the_given_kubeconfig(graph: Graph) -> None:
    fleet_config, _ = parse_fleet(RAW)
    fleet = run_program(
        lambda: Fleet(
            "fleet",
            FleetArgs(config=fleet_config, stack="test", karmada_kubeconfig=KARMADA_DOC),
        )
    )
    assert fleet.karmada is not None
    assert fleet.karmada.release is None
    # No chart, no address in Azure.
    releases = {r.inputs["name"] for r in graph.of_type("kubernetes:helm.sh/v3:Release")}
    assert kb.RELEASE not in releases
    assert "kruise" in releases
    assert graph.of_type("azure-native:network:PublicIPAddress") == []
    provider = graph.one("pulumi:providers:kubernetes", "fleet-karmada-k8s")
    assert is_secret(provider.inputs["kubeconfig"])
    assert provider.inputs["deleteUnreachable"] == "false"
    # Pinned like the program's other Kubernetes providers (the plugin the real tier builds).
    assert provider.version == KUBERNETES_PROVIDER_VERSION
    assert resolve(fleet.karmada.address) == ("karmada.hcp.westeurope.azmk8s.io", False)
    # Registration and the applications go through it.
    for name in ("fleet-karmada-worker-1-cluster", "fleet-karmada-sample-sample-ud-ud"):
        kind = "Cluster" if name.endswith("cluster") else "UnitedDeployment"
        (r,) = [r for r in graph.resources if r.name == name and r.type.endswith(kind)]
        assert r.provider.startswith(provider.urn)
    # The credentials wait for nothing of a chart that is not there.
    secret = graph.one("kubernetes:core/v1:Secret", "fleet-karmada-worker-1-credentials")
    assert not any("helm.sh" in d for d in secret.dependencies)


def test_program_reads_the_secret_key_and_exports_no_karmada_kubeconfig(graph: Graph) -> None:
    values = {
        f"{PROJECT}:fleet": json.dumps(RAW),
        f"{PROJECT}:karmadaKubeconfig": KARMADA_DOC,
        "azure-native:location": "westeurope",
    }
    pulumi.runtime.config.set_all_config(values, [f"{PROJECT}:karmadaKubeconfig"])
    run_program(lambda: runpy.run_path(str(ROOT / "__main__.py")))
    outputs = stack_outputs()
    assert "karmadaKubeconfig" not in outputs
    provider = graph.one("pulumi:providers:kubernetes", f"{PROJECT}-karmada-k8s")
    assert is_secret(provider.inputs["kubeconfig"])
    releases = {r.inputs["name"] for r in graph.of_type("kubernetes:helm.sh/v3:Release")}
    assert kb.RELEASE not in releases


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd"])
def test_karmada_kubeconfig_outside_the_project_is_refused(tmp_path: Path, path: str) -> None:
    raw = copy.deepcopy(RAW)
    raw["karmada"]["existing"] = {"kubeconfigPath": path}
    fleet, _ = parse_fleet(raw)
    with pytest.raises(ConfigError, match=r"karmada\.existing\.kubeconfigPath"):
        read_karmada_kubeconfig(fleet, tmp_path)


def test_karmada_kubeconfig_is_parsed_with_its_context_before_any_resource(tmp_path: Path) -> None:
    raw = copy.deepcopy(RAW)
    raw["karmada"]["existing"] = {"kubeconfigPath": "karmada.yaml", "context": "nope"}
    (tmp_path / "karmada.yaml").write_text(KARMADA_DOC)
    fleet, _ = parse_fleet(raw)
    with pytest.raises(ConfigError, match=r"karmada\.existing\.kubeconfigPath: .*nope"):
        read_files(fleet, tmp_path)
