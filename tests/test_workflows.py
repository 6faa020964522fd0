"""GitHub workflows: valid (actionlint), actions pinned by commit, deploys never cancelled."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml

from testkit.repo import COMMITTED_STACKS, ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
TOOLS = Path(os.environ.get("AKS_BATCH_FLEET_TOOLS", Path.home() / ".cache/aks-batch-fleet/bin"))


def load(name: str) -> dict[Any, Any]:
    return yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())


def steps(workflow: dict[Any, Any]) -> list[dict[str, Any]]:
    return [s for job in workflow["jobs"].values() for s in job.get("steps", [])]


def test_actionlint_passes() -> None:
    binary = TOOLS / "actionlint" if (TOOLS / "actionlint").exists() else shutil.which("actionlint")
    if binary is None:
        message = "actionlint not installed: run scripts/bootstrap"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    result = subprocess.run(
        [str(binary), "-color=false", *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_action_is_pinned_to_a_commit() -> None:
    for path in WORKFLOWS:
        for step in steps(yaml.safe_load(path.read_text())):
            uses = step.get("uses")
            if uses and not uses.startswith("./"):
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses), f"{path.name}: {uses}"


def test_up_is_never_cancelled_and_runs_per_environment() -> None:
    up = load("up.yml")["jobs"]["up"]
    assert up["concurrency"]["cancel-in-progress"] is False
    assert up["environment"] == "${{ inputs.stack }}"
    deploy = load("deploy.yml")
    assert deploy["jobs"]["prod"]["needs"] == "dev"
    assert "concurrency" not in deploy or deploy["concurrency"].get("cancel-in-progress") is False


def _listed_stacks(directory: Path, output: Path) -> list[str]:
    """What preview.yml's `stacks` job outputs when run in `directory`."""
    (script,) = [s["run"] for s in load("preview.yml")["jobs"]["stacks"]["steps"] if "run" in s]
    subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=directory,
        env={**os.environ, "GITHUB_OUTPUT": str(output)},
        check=True,
    )
    key, _, value = output.read_text().strip().partition("=")
    assert key == "stacks"
    return json.loads(value)


def test_preview_comments_on_pull_requests_for_every_stack(tmp_path: Path) -> None:
    preview = load("preview.yml")
    job = preview["jobs"]["preview"]
    assert job["needs"] == "stacks"
    assert job["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    assert _listed_stacks(ROOT, tmp_path / "repo-output") == COMMITTED_STACKS
    # A new stack file is previewed with no edit to the workflow.
    copy = tmp_path / "copy"
    copy.mkdir()
    for stack in [*COMMITTED_STACKS, "staging"]:
        shutil.copy2(ROOT / "Pulumi.dev.yaml", copy / f"Pulumi.{stack}.yaml")
    assert _listed_stacks(copy, tmp_path / "copy-output") == sorted([*COMMITTED_STACKS, "staging"])
    pulumi_step = next(s for s in job["steps"] if "pulumi/actions" in s.get("uses", ""))
    assert pulumi_step["with"]["command"] == "preview"
    assert pulumi_step["with"]["comment-on-pr"] is True


def test_cli_version_matches_the_locked_sdk() -> None:
    for name in ("preview.yml", "up.yml"):
        for step in steps(load(name)):
            if "pulumi/actions" in step.get("uses", ""):
                assert step["with"]["pulumi-version"] == version("pulumi")


def test_previews_run_in_their_own_environment_for_same_repository_prs() -> None:
    job = load("preview.yml")["jobs"]["preview"]
    assert job["environment"] == "preview-${{ matrix.stack }}"
    assert job["if"] == "github.event.pull_request.head.repo.full_name == github.repository"


@pytest.mark.parametrize(("name", "job"), [("preview.yml", "preview"), ("up.yml", "up")])
def test_kubelogin_is_pinned_and_logged_in_before_pulumi(name: str, job: str) -> None:
    spec = load(name)["jobs"][job]
    assert re.fullmatch(r"v\d+\.\d+\.\d+", spec["env"]["KUBELOGIN_VERSION"])
    names = [s.get("name", s.get("uses", s.get("run", ""))) for s in spec["steps"]]
    login = names.index("kubelogin and Azure CLI login")
    pulumi_step = next(i for i, n in enumerate(names) if "pulumi/actions" in n)
    assert login < pulumi_step
    run = spec["steps"][login]["run"]
    assert "github.com/Azure/kubelogin@${KUBELOGIN_VERSION}" in run
    assert "--federated-token" in run
