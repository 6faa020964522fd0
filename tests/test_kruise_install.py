"""`karmada.kruise.install: manifests-only` and `karmada.kruise.crdDir`: Kruise already runs on the
members, and the Karmada API server's UnitedDeployment CRD comes from local files, not a URL."""

from __future__ import annotations

import copy
import json
import runpy
from pathlib import Path
from typing import Any

import pulumi
import pytest

from builders.fleet import render_fleet
from checks.stack import parse_fleet, read_files
from config.errors import ConfigError
from config.loader import kruise_crd_files
from constants import PROJECT
from testkit import crdschema
from testkit.mocks import FAKE_KUBECONFIG, Graph, run_program
from testkit.repo import ROOT
from testkit.shared.karmada_config import errors_for
from testkit.shared.karmada_existing import RAW as EXISTING
from upstream.karmada import KARMADA_CRD_FILES

UD_CRD = KARMADA_CRD_FILES[0]
PINNED = crdschema.CACHE_CRDS / "kruise" / "v1.9.0" / UD_CRD  # scripts/fetch-crds
RELEASE = "kubernetes:helm.sh/v3:Release"
CRDS = "kubernetes:yaml/v2:ConfigGroup"
CLUSTER = "kubernetes:cluster.karmada.io/v1alpha1:Cluster"


def with_kruise(**kruise: Any) -> dict[str, Any]:
    raw = copy.deepcopy(EXISTING)
    raw["karmada"]["kruise"] = kruise
    return raw


def test_default_is_the_helm_release_and_the_pinned_crd() -> None:
    fleet, _ = parse_fleet(EXISTING)
    assert fleet.karmada is not None
    assert fleet.karmada.kruise.install == "helm"
    crdschema.schema_dir("kruise", "v1.9.0")  # skip (fail in CI) without scripts/fetch-crds
    assert kruise_crd_files(fleet, ROOT) == [str(PINNED)]


def test_a_kruise_version_without_pinned_crds_names_the_key_and_the_command(
    tmp_path: Path,
) -> None:
    fleet, _ = parse_fleet(with_kruise(chartVersion="1.9.1"))
    with pytest.raises(ConfigError) as failure:
        kruise_crd_files(fleet, tmp_path)
    (issue,) = failure.value.issues
    assert issue.path == "karmada.kruise.chartVersion"
    assert f"no pinned {UD_CRD} for Kruise v1.9.1" in issue.message
    assert "run scripts/fetch-crds" in issue.message
    assert "karmada.kruise.crdDir" in issue.message


@pytest.mark.parametrize(
    ("kruise", "key"),
    [
        ({"install": "operator"}, "karmada.kruise.install"),
        ({"crdDir": 5}, "karmada.kruise.crdDir"),
        ({"crdDirectory": "crds"}, "karmada.kruise.crdDirectory"),
    ],
)
def test_bad_values_name_their_key(kruise: dict[str, Any], key: str) -> None:
    errors = errors_for(with_kruise(**kruise))
    assert any(e.startswith(key) for e in errors), errors


def test_manifests_only_renders_no_kruise_release() -> None:
    helm, _ = parse_fleet(EXISTING)
    only, _ = parse_fleet(with_kruise(install="manifests-only"))
    assert [r.target for r in render_fleet(helm)[1] if r.release == "kruise"] == [
        "worker-1",
        "worker-2",
    ]
    assert [r for r in render_fleet(only)[1] if r.release == "kruise"] == []


def test_manifests_only_reads_the_pinned_crd_by_default() -> None:
    fleet, _ = parse_fleet(with_kruise(install="manifests-only"))
    crdschema.schema_dir("kruise", "v1.9.0")
    assert kruise_crd_files(fleet, ROOT) == [str(PINNED)]


def test_crd_dir_inside_the_project(tmp_path: Path) -> None:
    (tmp_path / "crds").mkdir()
    fleet, _ = parse_fleet(with_kruise(crdDir="crds"))
    with pytest.raises(ConfigError, match=rf"karmada\.kruise\.crdDir: no {UD_CRD} in "):
        kruise_crd_files(fleet, tmp_path)
    (tmp_path / "crds" / UD_CRD).write_text("kind: CustomResourceDefinition\n")
    assert kruise_crd_files(fleet, tmp_path) == [str(tmp_path.resolve() / "crds" / UD_CRD)]


@pytest.mark.parametrize("crd_dir", ["../crds", "/etc", "missing"])
def test_crd_dir_outside_the_project_or_missing_is_refused(tmp_path: Path, crd_dir: str) -> None:
    fleet, _ = parse_fleet(with_kruise(crdDir=crd_dir))
    with pytest.raises(ConfigError, match=r"karmada\.kruise\.crdDir"):
        read_files(fleet, tmp_path)


def test_crd_dir_of_a_link_out_of_the_project_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / UD_CRD).write_text("kind: CustomResourceDefinition\n")
    project = tmp_path / "project"
    (project / "crds").mkdir(parents=True)
    (project / "crds" / UD_CRD).symlink_to(outside / UD_CRD)
    fleet, _ = parse_fleet(with_kruise(crdDir="crds"))
    with pytest.raises(ConfigError, match=r"karmada\.kruise\.crdDir: must stay inside"):
        kruise_crd_files(fleet, project)


def _program(raw: dict[str, Any]) -> None:
    values = {
        f"{PROJECT}:fleet": json.dumps(raw),
        f"{PROJECT}:karmadaKubeconfig": FAKE_KUBECONFIG.format(name="karmada"),
        "azure-native:location": "westeurope",
    }
    pulumi.runtime.config.set_all_config(values, [f"{PROJECT}:karmadaKubeconfig"])
    run_program(lambda: runpy.run_path(str(ROOT / "__main__.py")))


def test_program_with_manifests_only_installs_no_kruise_and_applies_the_local_crd(
    graph: Graph,
) -> None:
    _program(with_kruise(install="manifests-only"))
    assert {r.inputs["name"] for r in graph.of_type(RELEASE)} & {"kruise"} == set()
    (crds,) = [r for r in graph.of_type(CRDS) if r.name.endswith("kruise-crds")]
    assert crds.inputs["files"] == kruise_crd_files(
        parse_fleet(with_kruise(install="manifests-only"))[0], ROOT
    )
    assert all(not f.startswith("http") for f in crds.inputs["files"])
    # The Clusters wait for their credentials only: no Kruise release to wait for.
    for cluster in graph.of_type(CLUSTER):
        assert not any("Kruise" in d or "helm.sh" in d for d in cluster.dependencies), cluster


def test_program_with_helm_installs_kruise_and_applies_the_pinned_crd(graph: Graph) -> None:
    """Never a URL at deploy time: the file would be neither pinned nor hashed."""
    crdschema.schema_dir("kruise", "v1.9.0")
    _program(EXISTING)
    assert [r.inputs["name"] for r in graph.of_type(RELEASE)].count("kruise") == 2
    (crds,) = [r for r in graph.of_type(CRDS) if r.name.endswith("kruise-crds")]
    assert crds.inputs["files"] == [str(PINNED)]
