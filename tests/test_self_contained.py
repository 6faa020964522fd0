"""A clone is the whole project: no file of it points into the workplace beside the repository."""

from __future__ import annotations

import os
from pathlib import Path

from testkit.repo import ROOT

# Built so that this file does not name it; a user's clone has nothing at that path.
BESIDE: str = "../" + "shared"
SKIPPED_DIRS: frozenset[str] = frozenset({".git", ".venv", ".cache", "__pycache__", "render"})


def project_files() -> list[Path]:
    found: list[Path] = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]  # never walk into the venv or caches
        found += [Path(folder) / name for name in files]
    return found


def test_no_file_reads_or_cites_the_folder_beside_the_clone() -> None:
    files = project_files()
    assert len(files) > 100, "the walk found the project's files"
    naming = [
        p.relative_to(ROOT).as_posix()
        for p in files
        if BESIDE in p.read_text(encoding="utf-8", errors="replace")
    ]
    assert naming == [], f"files that name {BESIDE} (a user's clone has none): {naming}"
