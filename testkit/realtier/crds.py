"""The pinned CRDs on a loopback plane: the Kueue CRDs as a `manifests-only` install finds them,
the Karmada and Kruise CRDs a set of (group, kind)s needs, and their server-side install."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from config.loader import kueue_crd_files
from config.models import FleetConfig
from testkit.realtier.harness import ROOT, ControlPlane


def kueue_crd_paths(fleet: FleetConfig) -> list[Path]:
    """The pinned Kueue CRDs, found as a `manifests-only` install finds them."""
    manifests_only = fleet.model_copy(
        update={"kueue": fleet.kueue.model_copy(update={"install": "manifests-only"})}
    )
    return [Path(p) for p in kueue_crd_files(manifests_only, ROOT)]


def install_crds(plane: ControlPlane, files: list[Path]) -> list[str]:
    """Server-side apply (the workloads CRD is too large for client-side apply's annotation),
    then wait until every CRD is Established, so objects of its kinds are served."""
    args = [a for f in files for a in ("-f", str(f))]
    out = plane.kubectl("apply", "--server-side", "-o", "name", *args)
    names = out.stdout.split()
    plane.wait_established(names)
    return names


def _crd_identity(path: Path) -> tuple[str, str]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return str(doc["spec"]["group"]), str(doc["spec"]["names"]["kind"])


def karmada_crd_paths(fleet: FleetConfig, needed: set[tuple[str, str]]) -> list[Path]:
    """The pinned Karmada and Kruise CRD files that define the (group, kind)s in `needed`."""
    from testkit.crdschema import schema_dir  # noqa: PLC0415 - heavy import, only when used

    karmada = fleet.karmada
    if karmada is None:
        return []
    directories = [
        schema_dir("karmada", karmada.chart_version),
        schema_dir("kruise", f"v{karmada.kruise.chart_version}"),
    ]
    found = {
        _crd_identity(path): path
        for directory in directories
        for path in sorted(directory.glob("*.yaml"))
    }
    missing = needed - set(found)
    assert not missing, f"no pinned CRD for {sorted(missing)} in {directories}"
    return [found[key] for key in sorted(needed)]
