"""A committed stack is just a file: adding `Pulumi.<stack>.yaml` needs no other edit for the tests,
the workflows and the render-equals-registration check to cover it.

Proved on a copy of the project with an extra stack (`staging`, a copy of dev), not by reading the
test sources: what the copy's pytest collects and runs is what a contributor would get.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.repo import COMMITTED_STACKS, ROOT, committed_stacks

NEW = "staging"


@pytest.fixture(scope="module")
def copy_with_a_new_stack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's files (tracked and new, as git sees them) plus Pulumi.staging.yaml."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    copy = tmp_path_factory.mktemp("project") / "aks"
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    (copy / ".cache").symlink_to(ROOT / ".cache")  # the pinned CRDs (scripts/fetch-crds)
    # As README's "Add a stack" says: a copy of dev with its own resource group (a copy that
    # keeps dev's is refused: test_a_copy_that_keeps_devs_resource_group_is_refused).
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    assert "resourceGroup: aks-batch-fleet-dev\n" in text
    (copy / f"Pulumi.{NEW}.yaml").write_text(
        text.replace(
            "resourceGroup: aks-batch-fleet-dev\n", f"resourceGroup: aks-batch-fleet-{NEW}\n"
        )
    )
    return copy


def _pytest(copy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", *args],
        cwd=copy,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )


def test_the_copy_has_one_stack_more() -> None:
    assert "dev" in COMMITTED_STACKS
    assert NEW not in COMMITTED_STACKS  # else the proof below proves nothing


def test_every_test_of_the_dev_stack_runs_for_a_new_stack_too(copy_with_a_new_stack: Path) -> None:
    assert committed_stacks(copy_with_a_new_stack) == sorted([*COMMITTED_STACKS, NEW])
    result = _pytest(copy_with_a_new_stack, "--collect-only", "-q", "-m", "not real", "tests")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    ids = set(result.stdout.split())
    # A test parametrized by the stack alone states what every stack must satisfy; rows with more
    # values (`[dev-worker-1-batch-19.3-76.3]`, `[dev@0.17.8]`) state facts of one stack's content.
    per_dev = [i for i in ids if i.endswith("[dev]")]
    assert len(per_dev) >= 20, per_dev  # the stack-parametrized tests were collected
    missing = [i for i in per_dev if i.removesuffix("[dev]") + f"[{NEW}]" not in ids]
    assert missing == []


def test_the_new_stack_renders_what_it_registers_and_the_program_builds_it(
    copy_with_a_new_stack: Path,
) -> None:
    result = _pytest(
        copy_with_a_new_stack,
        "-q",
        "tests/test_render_equals_registration.py",
        "tests/test_config.py",
        "-k",
        NEW,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    passed = re.search(r"(\d+) passed", result.stdout)
    assert passed is not None, result.stdout[-2000:]
    assert int(passed.group(1)) >= 2, result.stdout[-2000:]
    assert " failed" not in result.stdout
