"""`kueue.install: manifests-only`: the pinned CRDs from a directory, no Helm, no controller."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pulumi_kubernetes as k8s
import pytest

from builders.kueue import kueue_releases
from builders.kueue_queues import cluster_objects
from checks.stack import parse_fleet
from components.kueue import Kueue, KueueArgs
from config.errors import ConfigError
from config.loader import kueue_crd_dir, kueue_crd_files
from config.models import FleetConfig
from testkit.mocks import Graph, run_program
from testkit.repo import ROOT
from testkit.shared.kueue_config import BASE

CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"
PROVIDER = "pulumi:providers:kubernetes"


def manifests_only(crd_dir: str | None = None) -> FleetConfig:
    raw: dict[str, Any] = copy.deepcopy(BASE)
    raw["kueue"] = {"install": "manifests-only", **({"crdDir": crd_dir} if crd_dir else {})}
    fleet, _ = parse_fleet(raw)
    return fleet


def test_finds_the_pinned_crds() -> None:
    fleet = manifests_only()
    files = [Path(f).name for f in kueue_crd_files(fleet, ROOT)]
    assert kueue_crd_dir(fleet, ROOT).name == "v0.19.2"
    assert len(files) == 11
    assert "kueue.x-k8s.io_clusterqueues.yaml" in files
    assert "kueue.x-k8s.io_multikueueclusters.yaml" in files


def test_helm_install_reads_nothing() -> None:
    fleet, _ = parse_fleet(copy.deepcopy(BASE))
    assert kueue_crd_files(fleet, Path("/nonexistent")) == []


def test_missing_crds_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"kueue\.crdDir: no such directory .*nothing"):
        kueue_crd_files(manifests_only("nothing"), tmp_path)
    (tmp_path / "nothing").mkdir()
    with pytest.raises(ConfigError, match=r"kueue\.crdDir: no Kueue CRDs in .*nothing"):
        kueue_crd_files(manifests_only("nothing"), tmp_path)


def test_component_applies_crds_then_namespace_then_objects(graph: Graph) -> None:
    fleet = manifests_only()
    files = kueue_crd_files(fleet, ROOT)

    def program() -> Kueue:
        provider = k8s.Provider("solo-k8s", kubeconfig="apiVersion: v1\nkind: Config\n")
        return Kueue(
            "solo-kueue",
            KueueArgs(
                cluster=fleet.clusters[0],
                settings=fleet.kueue,
                provider=provider,
                crd_files=files,
                objects=cluster_objects(fleet.clusters[0]),
            ),
        )

    kueue = run_program(program)
    assert kueue.release is None
    assert not graph.of_type("kubernetes:helm.sh/v3:Release")
    group = graph.one(CONFIG_GROUP, "solo-kueue-crds")
    assert group.inputs["files"] == files
    assert graph.provider_urn(group) == graph.one(PROVIDER, "solo-k8s").urn
    namespace = graph.one("kubernetes:core/v1:Namespace", "solo-kueue-namespace")
    assert namespace.inputs["metadata"]["name"] == "kueue-system"
    assert group.urn in namespace.dependencies
    queue_objects = [r for r in graph.resources if r.type.startswith("kubernetes:kueue.x-k8s.io/")]
    assert queue_objects
    for r in queue_objects:
        assert namespace.urn in r.dependencies, r.name


def test_no_release_is_rendered() -> None:
    assert kueue_releases(manifests_only()) == []
    fleet, _ = parse_fleet(copy.deepcopy(BASE))
    assert len(kueue_releases(fleet)) == len(fleet.clusters)
