"""The preflight command's code copied into a throw-away project, for tests and `scripts/bench.py`
that write their own stack files beside it."""

from __future__ import annotations

import shutil
from pathlib import Path

from constants import PROJECT_ROOT as ROOT

# What `python -m preflight` needs, copied into a throw-away project by tests that edit stacks.
PREFLIGHT_SOURCES = (
    "upstream",
    "config",
    "builders",
    "checks",
    "preflight",
    "constants.py",
    "environment.py",
)


def copy_preflight_sources(target: Path, *extra: str) -> None:
    """The preflight command's code (and `extra` files of the project) into `target`, with the
    pinned CRDs (scripts/fetch-crds) linked in: a stack with Karmada reads the Kruise CRD there."""
    for name in (*PREFLIGHT_SOURCES, *extra):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, target / name)
    crds = ROOT / ".cache" / "crds"
    if crds.is_dir() and not (target / ".cache" / "crds").exists():
        (target / ".cache").mkdir(exist_ok=True)
        (target / ".cache" / "crds").symlink_to(crds)
