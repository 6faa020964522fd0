"""The offline preflight command, run as users run it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def preflight(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "preflight", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def dev_plan() -> dict[str, object]:
    result = preflight("dev", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_plan_lists_clusters_and_pool_capacity(dev_plan: dict[str, object]) -> None:
    clusters = {c["name"]: c for c in dev_plan["clusters"]}  # type: ignore[union-attr]
    assert set(clusters) == {"manager", "worker-1", "worker-2"}
    batch = next(p for p in clusters["worker-2"]["pools"] if p["pool"] == "batch")
    # D4s_v5 (4 vCPU, 16 GiB), overlay maxPods 250: 3860m and 16384-4096-100 MiB a node, x5.
    assert batch["nodeAllocatable"] == {"cpu": "3.86", "memory": "11.9Gi"}
    assert batch["maxAllocatable"]["cpu"] == "19.3"
    assert dev_plan["idle"]["nodes"] == 3  # type: ignore[index]


def test_human_output_has_tables() -> None:
    result = preflight("dev")
    assert result.returncode == 0, result.stderr
    assert "Node pools" in result.stdout
    assert "Standard_D4s_v5" in result.stdout
    assert "Idle cost drivers" in result.stdout


def test_broken_config_lists_every_error_without_traceback(tmp_path: Path) -> None:
    for name in ("preflight", "config", "builders", "constants.py"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name)
        else:
            shutil.copy(source, tmp_path / name)
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    text = text.replace("maxCount: 5", "maxCount: 0").replace("role: worker", "role: wrker", 1)
    (tmp_path / "Pulumi.dev.yaml").write_text(text)
    result = preflight("dev", cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    assert "clusters[1].role" in result.stderr
    assert "clusters[1].pools[0].maxCount" in result.stderr
    assert "clusters[2].pools[0].maxCount" in result.stderr
    as_json = preflight("dev", "--json", cwd=tmp_path)
    assert as_json.returncode == 1
    assert len(json.loads(as_json.stdout)["errors"]) == 3


def test_unknown_stack_is_an_error() -> None:
    result = preflight("nosuchstack")
    assert result.returncode == 1
    assert "no stack file Pulumi.nosuchstack.yaml" in result.stderr


def test_render_writes_files(tmp_path: Path) -> None:
    result = preflight("dev", "--render", str(tmp_path / "out"), "--json")
    assert result.returncode == 0, result.stderr
    rendered = json.loads(result.stdout)["rendered"]
    assert all(Path(p).is_file() for p in rendered)
