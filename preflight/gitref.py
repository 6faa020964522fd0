"""A stack file as committed at a git ref, loaded with the same loader as the working tree, for
the plan diff; the ref to compare against by default, and how to name it to a reader."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from constants import PROJECT_ROOT
from preflight.snapshot import Snapshot, empty, snapshot


class RefError(Exception):
    """The ref to compare against cannot be resolved (exit status 2)."""


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
    )


def default_ref(root: Path = PROJECT_ROOT) -> str:
    """The merge base of HEAD with `main`, else with `origin/main`."""
    for branch in ("main", "origin/main"):
        result = _git(root, "merge-base", "HEAD", branch)
        if result.returncode == 0:
            return result.stdout.strip()
    raise RefError(
        "no merge base with main or origin/main: give --against <ref> "
        "(in CI, fetch the base branch first)"
    )


def stack_at_ref(stack: str, ref: str, root: Path = PROJECT_ROOT) -> Snapshot:
    """`Pulumi.<stack>.yaml` as committed at `ref`; absent there gives an empty snapshot."""
    if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise RefError(f"unknown git ref {ref!r}")
    # `./` makes the path relative to `root`, which may sit below the repository's top.
    shown = _git(root, "show", f"{ref}:./Pulumi.{stack}.yaml")
    if shown.returncode != 0:
        return empty(stack, exists=False)
    with tempfile.TemporaryDirectory(prefix="preflight-ref-") as tmp:
        (Path(tmp) / f"Pulumi.{stack}.yaml").write_text(shown.stdout)
        # Only the stack file is here: files its keys name (kubeconfigs, CRDs) are not checked.
        return snapshot(stack, root=Path(tmp), files=False)


def short_ref(ref: str, root: Path = PROJECT_ROOT) -> str:
    """`main (1a2b3c4)` for a name, `1a2b3c4` for a commit id: what a reader recognises."""
    result = _git(root, "rev-parse", "--short", f"{ref}^{{commit}}")
    sha = result.stdout.strip() if result.returncode == 0 else ""
    if not sha or ref == sha:
        return ref
    return sha if ref.startswith(sha) else f"{ref} ({sha})"
