"""The layers are enforced: `lint-imports` (import-linter, in scripts/check) keeps them and breaks
on a wrong-way import, shown on a throw-away copy of the project with one bad import added."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.repo import ROOT

PACKAGES = ("upstream", "config", "builders", "checks", "components", "preflight", "fleetview")
# Import-linter roots beside the product: the test machinery library and the tests.
TEST_PACKAGES = ("testkit", "tests")


def lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(lint), "--config", str(project / "pyproject.toml"), "--no-cache"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project)},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in (*PACKAGES, *TEST_PACKAGES):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "constants.py", "environment.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_the_project_keeps_its_contracts(project: Path) -> None:
    result = lint_imports(project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "bad_import", "contract"),
    [
        ("config/models.py", "import builders.kueue", "layers point down"),
        ("upstream/k8s.py", "import config.models", "layers point down"),
        ("builders/kueue.py", "import checks.capacity", "layers point down"),
        ("components/kueue.py", "import checks", "layers point down"),
        ("builders/aks.py", "import pulumi", "Pulumi only in components"),
        ("config/loader.py", "import pulumi_kubernetes", "Pulumi only in components"),
        ("fleetview/status.py", "import pulumi", "Pulumi only in components"),
        ("fleetview/why.py", "import kubernetes", "the Kubernetes client only in fleetview.fetch"),
        ("components/kueue.py", "import kubernetes", "the Kubernetes client only in"),
        ("builders/kueue.py", "import fleetview.status", "layers point down"),
        ("preflight/plan.py", "import fleetview.why", "layers point down"),
        ("testkit/mocks.py", "import tests.conftest", "testkit never imports tests"),
    ],
)
def test_a_wrong_way_import_breaks_the_check(
    project: Path, module: str, bad_import: str, contract: str
) -> None:
    path = project / module
    path.write_text(path.read_text() + f"\n{bad_import}  # noqa\n")
    result = lint_imports(project)
    assert result.returncode != 0
    assert "1 broken" in result.stdout
    broken = result.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, result.stdout


def _imports_of(module: str) -> set[str]:
    tree = ast.parse((ROOT / module).read_text())
    return {
        (node.module or "").split(".")[0] if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }


def test_constants_import_nothing_of_the_project() -> None:
    """constants.py is a module, so import-linter cannot hold it; this test does."""
    imported = _imports_of("constants.py")
    assert imported <= {"typing", "pathlib", "__future__"}, imported


def test_the_environment_check_imports_the_standard_library_only() -> None:
    """environment.py runs before any third-party import, in whatever Python started it."""
    imported = _imports_of("environment.py")
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_nothing_outside_tests_imports_tests() -> None:
    """Product modules, testkit and the scripts written in Python import no test module: machinery
    that others use lives in testkit/, a library (the import contract covers testkit alone)."""
    outside = [
        path
        for path in ROOT.rglob("*.py")
        if path.relative_to(ROOT).parts[0] != "tests"
        and not any(part.startswith(".") for part in path.relative_to(ROOT).parts)
    ]
    outside += [
        p
        for p in (ROOT / "scripts").iterdir()
        if p.is_file() and p.read_bytes()[:40].startswith(b"#!/usr/bin/env python")
    ]
    assert len(outside) > 50, "the walk found too few modules to be the project"
    offenders = sorted(
        str(path.relative_to(ROOT)) for path in set(outside) if "tests" in _all_imports(path)
    )
    assert not offenders, offenders


def test_no_test_module_imports_another_or_a_conftest() -> None:
    """Test modules and conftests import no module of tests/ (another test module, a conftest,
    its fixtures or helpers): what several of them share is testkit's (testkit/shared,
    testkit/realtier/shared), fixtures included, so a test module never runs, or breaks, because
    another one changed. A conftest names its plugins in `pytest_plugins`, which imports nothing."""
    modules = sorted((ROOT / "tests").rglob("*.py"))
    assert len(modules) > 100, "the walk found too few test modules to be the tests"
    offenders = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in modules
        for name in _imported_modules(path)
        if name == "tests" or name.startswith(("tests.", "."))
    )
    assert not offenders, offenders


def test_tests_holds_tests_only() -> None:
    """tests/ holds test modules, conftests and package markers; machinery is testkit's."""
    others = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("*.py")
        if not path.name.startswith(("test_", "conftest")) and path.name != "__init__.py"
    )
    assert not others, others


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports anywhere (inside functions too), by its full dotted name;
    `from a import b` counts `a.b` as well (b may be a module), a relative import starts with a
    dot."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def _all_imports(path: Path) -> set[str]:
    """Top-level packages a file imports anywhere (inside functions too)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
    return found
