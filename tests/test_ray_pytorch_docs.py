"""docs/ai-jobs.md works as written: its offline lines run, its kubectl lines name what exists.

The offline block copies the example in as a stack and runs preflight on it, in a copy of the
project (a `Pulumi.ai-jobs.yaml` in the real root would become a committed stack for every other
test). Every kubectl line is judged against the example: its kubeconfig is a cluster of the stack,
its namespace a team namespace there, its files exist, the kinds it gets are the pinned CRDs' (or
Kueue's and core ones), and the objects it names are the example manifests' and what their
operators name after them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from checks.stack import load_from_file
from testkit.repo import ROOT
from testkit.shared.readme import commands, shell_lines, verdict
from testkit.sources import copy_preflight_sources

PAGE: Final = ROOT / "docs" / "ai-jobs.md"
EXAMPLE: Final = ROOT / "examples" / "ai-jobs"
LINES: Final = shell_lines(PAGE.read_text())
OFFLINE: Final = [line.text for line in LINES if verdict(line.text) == "offline"]
KUBECTL: Final = [
    argv for line in LINES for argv in commands(line.text) if argv and argv[0] == "kubectl"
]
# What `kubectl get` may name: the pinned CRDs' plurals, Kueue's, the autoscaler's and core kinds.
KNOWN_KINDS: Final = {
    "rayjobs",
    "rayjob",
    "rayclusters",
    "pytorchjobs",
    "pytorchjob",
    "workloads",
    "provisioningrequests",
    "pods",
    "job",
}


def manifests() -> dict[str, dict[str, Any]]:
    docs = [yaml.safe_load(p.read_text()) for p in sorted(EXAMPLE.glob("*job.yaml"))]
    return {d["metadata"]["name"]: d for d in docs}


def test_every_line_is_offline_in_a_marked_block_or_reaches_a_cluster() -> None:
    for line in LINES:
        judged = verdict(line.text)
        assert judged == "cloud" or line.offline_block, line.text
    assert OFFLINE == [
        "cp examples/ai-jobs/Pulumi.ai-jobs.yaml Pulumi.ai-jobs.yaml",
        "uv run python -m preflight ai-jobs",
    ]


def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


@pytest.mark.parametrize("argv", KUBECTL, ids=lambda a: " ".join(a[3:7]))
def test_each_kubectl_line_names_what_the_example_has(argv: list[str]) -> None:
    fleet, _ = load_from_file("ai-jobs", EXAMPLE)
    kubeconfig = _option(argv, "--kubeconfig")
    assert kubeconfig is not None
    assert kubeconfig.endswith(".kubeconfig")
    assert fleet.cluster(kubeconfig.removesuffix(".kubeconfig")) is not None, kubeconfig
    namespace = _option(argv, "-n")
    manager = fleet.manager
    assert manager is not None
    if namespace is not None:
        assert namespace in {n.name for n in manager.queues.namespaces}
    path = _option(argv, "-f")
    if path is not None:
        assert (ROOT / path).is_file(), path
        doc = yaml.safe_load((ROOT / path).read_text())
        assert doc["metadata"]["namespace"] == "ml"
        lq = doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
        assert lq in {q.name for q in manager.queues.local_queues}
    words = [w for w in argv[1:] if not w.startswith("-")]
    skip = {kubeconfig, namespace, path, _option(argv, "-o")}
    words = [w for w in words if w not in skip and not w.startswith(("jsonpath=", "custom-"))]
    verb, rest = words[0], words[1:]
    names = manifests()
    if verb == "get" and rest:
        assert set(rest[0].split(",")) <= KNOWN_KINDS, rest[0]
        for name in rest[1:]:
            assert name in names, name
    if verb == "delete":
        kind, name = rest
        assert names[name]["kind"].lower() == kind
    if verb == "logs":
        (target,) = rest
        if target.startswith("job/"):  # KubeRay's submitter Job is named after the RayJob
            assert names[target.removeprefix("job/")]["kind"] == "RayJob"
        else:  # the training operator names pods <job>-<replica type>-<index>
            job, _, index = target.rpartition("-")
            job, _, role = job.rpartition("-")
            assert names[job]["kind"] == "PyTorchJob"
            assert role.capitalize() in names[job]["spec"]["pytorchReplicaSpecs"]
            assert index.isdigit()


def test_the_offline_lines_run_as_written_in_a_copy(tmp_path: Path) -> None:
    copy_preflight_sources(tmp_path, "pyproject.toml", "uv.lock", "examples")
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    gomod = ROOT / ".cache" / "gomod"
    if gomod.is_dir():  # the training operator's overlay is read from its pinned module
        (tmp_path / ".cache").mkdir(exist_ok=True)
        (tmp_path / ".cache" / "gomod").symlink_to(gomod)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    venv_bin = str(Path(sys.prefix) / "bin")
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    out = ""
    for line in OFFLINE:
        done = subprocess.run(
            ["bash", "-c", line],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"`{line}`:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        out = done.stdout
    assert "gpu-1" in out  # the plan names the example's workers
