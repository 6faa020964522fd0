"""The offline preflight command, run as users run it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.repo import ROOT
from testkit.sources import copy_preflight_sources


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
    # D4s_v5 (4 vCPU, 16 GiB) on a node subnet (maxPods 30): 3860m and 16384-650-100 MiB, x5.
    assert batch["maxPods"] == 30
    assert batch["nodeAllocatable"] == {"cpu": "3.86", "memory": "15.3Gi"}
    assert batch["maxAllocatable"]["cpu"] == "19.3"
    assert dev_plan["idle"]["nodes"] == 3  # type: ignore[index]


def test_human_output_has_tables() -> None:
    result = preflight("dev")
    assert result.returncode == 0, result.stderr
    assert "Node pools" in result.stdout
    assert "Standard_D4s_v5" in result.stdout
    assert "Idle cost drivers" in result.stdout


def test_broken_config_lists_every_error_without_traceback(tmp_path: Path) -> None:
    copy_preflight_sources(tmp_path)
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    text = text.replace("maxCount: 5", "maxCount: 0").replace("role: worker", "role: wrker", 1)
    (tmp_path / "Pulumi.dev.yaml").write_text(text)
    result = preflight("dev", cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    # Paths name the clusters and pools as the file does (the JSON keeps positions in `path`).
    assert "clusters[worker-1].role" in result.stderr
    assert "clusters[worker-1].pools[batch].maxCount" in result.stderr
    assert "clusters[worker-2].pools[batch].maxCount" in result.stderr
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


def test_placement_what_if_seed_case() -> None:
    result = preflight(
        "placement",
        "--replicas",
        "6",
        "--weights",
        "idc1=1,test-ucs=2",
        "--subsets",
        "subset-a=50%,subset-b",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "replicas": 6,
        "members": {"idc1": 2, "test-ucs": 4},
        "subsets": {"subset-a": 3, "subset-b": 3},
        "memberSubsets": {
            "idc1": {"subset-a": 1, "subset-b": 1},
            "test-ucs": {"subset-a": 2, "subset-b": 2},
        },
    }


def test_placement_weights_only_and_subsets_only() -> None:
    weights = preflight("placement", "--replicas", "7", "--weights", "a=1,b=1,c=1", "--json")
    assert sum(json.loads(weights.stdout)["members"].values()) == 7
    subsets = preflight("placement", "--replicas", "5", "--subsets", "x=2,y", "--json")
    assert json.loads(subsets.stdout) == {"replicas": 5, "subsets": {"x": 2, "y": 3}}
    table = preflight("placement", "--replicas", "6", "--weights", "idc1=1,test-ucs=2")
    assert "test-ucs" in table.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--replicas", "6", "--weights", "idc1=0"], "must be an integer >= 1"),
        (["--replicas", "6", "--subsets", "a=150%"], "placement:"),
        (["--replicas", "6"], "give --weights, --subsets or both"),
    ],
)
def test_placement_errors_are_clean(args: list[str], message: str) -> None:
    result = preflight("placement", *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
