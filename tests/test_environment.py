"""`python -m preflight`, `python -m fleetview` and `python __main__.py` run by a Python without the
project's packages, or too old to read the project, print the commands to run instead (exit 2),
never a traceback; the packages asked for are the ones pyproject.toml declares, and every package
the product imports is one of them."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import environment
from testkit.repo import ROOT

PRODUCT = ("upstream", "config", "builders", "checks", "components", "preflight", "fleetview")
PROJECT_MODULES = {*PRODUCT, "constants", "environment", "tests"}


def bare_python(*args: str) -> subprocess.CompletedProcess[str]:
    """This interpreter with no site-packages (-S) and no PYTHON* variables or user site (-E -s):
    the standard library only, as a `python` outside the project's environment has."""
    return subprocess.run(
        [sys.executable, "-S", "-E", "-s", "-m", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("argv", "again"),
    [
        (["preflight", "dev"], "uv run python -m preflight dev"),
        (["preflight", "prod", "--json"], "uv run python -m preflight prod --json"),
        (["fleetview", "status"], "uv run python -m fleetview status"),
    ],
)
def test_preflight_without_the_environment_prints_the_command_to_run(
    argv: list[str], again: str
) -> None:
    result = bare_python(*argv)
    assert result.returncode == environment.EXIT_STATUS, result.stderr
    assert "Traceback" not in result.stderr
    assert "this Python lacks the project's packages: " in result.stderr
    assert "scripts/bootstrap" in result.stderr
    assert f"\n  {again}\n" in result.stderr
    assert result.stdout == ""


def test_the_program_run_by_python_without_the_environment_prints_the_commands() -> None:
    result = subprocess.run(
        [sys.executable, "-S", "-E", "-s", "__main__.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == environment.EXIT_STATUS, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("__main__.py: this Python lacks the project's packages: ")
    assert "\n  scripts/bootstrap    # once: uv and the locked packages" in result.stderr
    assert result.stderr.endswith(f"\n  {environment.PROGRAM}\n")  # not "activate": python
    # in an activated environment runs no Pulumi program either


def test_the_program_run_by_python_outside_pulumi_names_the_pulumi_command() -> None:
    """The environment's Python, but no Pulumi CLI: no stack, no config, so no "fleet required"."""
    result = subprocess.run(
        [sys.executable, "__main__.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr == environment.not_under_pulumi() + "\n"
    assert "scripts/deploy <stack>" in result.stderr


def test_the_guard_runs_before_anything_else_of_the_program_and_the_packages() -> None:
    """The program asks first; preflight and fleetview ask in their `__init__`, which Python runs
    before it compiles any module of the package, so no import order inside them matters."""
    program = ast.parse((ROOT / "__main__.py").read_text()).body
    assert [ast.unparse(node) for node in program[1:3]] == [
        "import environment",
        "environment.require('__main__.py', instead=environment.PROGRAM)",
    ]
    for package in ("preflight", "fleetview"):
        body = ast.parse((ROOT / package / "__init__.py").read_text()).body
        assert [ast.unparse(node) for node in body[1:]] == [
            "import environment",
            f"environment.require('{package}')",
        ]


@pytest.mark.parametrize(
    "path", ["environment.py", "preflight/__init__.py", "fleetview/__init__.py"]
)
def test_what_runs_before_the_check_reads_in_any_python_from_2_7(path: str) -> None:
    """No f-string, no annotation (type comments instead), nothing Python 3.4's grammar lacks."""
    tree = ast.parse((ROOT / path).read_text(), feature_version=(3, 4))
    annotated = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign | ast.JoinedStr)
        or (isinstance(node, ast.arg) and node.annotation is not None)
        or (isinstance(node, ast.FunctionDef) and node.returns is not None)
    ]
    assert annotated == []


def _older_pythons() -> list[str]:
    """Interpreters on this machine older than the project supports (pyenv's, or on PATH)."""
    found = {shutil.which(f"python{v}") for v in ("2.7", "3.6", "3.7", "3.8", "3.9", "3.10")}
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found |= {
        str(p)
        for p in versions.glob("[23].*/bin/python")
        if not re.match(r"3\.1[1-9]", p.parts[-3])
    }
    return sorted(p for p in found if p and "/shims/" not in p)  # pyenv's shims are not Pythons


def test_pythons_older_than_the_project_get_the_advice_not_a_syntax_error() -> None:
    older = _older_pythons()
    if not older:
        pytest.skip("no Python older than 3.11 on this machine")
    for python in older:
        result = subprocess.run(
            [python, "-m", "preflight", "dev"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYENV"))},
        )
        assert result.returncode == environment.EXIT_STATUS, (python, result.stderr)
        assert re.match(r"preflight: needs Python 3\.11-3\.13, this is [23]\.", result.stderr)
        assert "\n  uv run python -m preflight dev\n" in result.stderr, (python, result.stderr)


def test_the_command_to_run_again_is_what_was_run() -> None:
    # `python -m preflight ...`: argv[0] is "-m" (Python 2: "-c") while the package is imported.
    assert environment.again("preflight", ["-m", "prod", "--json"]) == (
        "uv run python -m preflight prod --json"
    )
    assert environment.again("fleetview", ["-c", "why", "team a/job"]) == (
        "uv run python -m fleetview why 'team a/job'"
    )
    # A script that imports the package: that script, run by uv.
    assert environment.again("preflight", ["scripts/bench.py", "--workers", "3"]) == (
        "uv run python scripts/bench.py --workers 3"
    )


def test_the_packages_asked_for_are_pyprojects_dependencies(tmp_path: Path) -> None:
    names = environment.declared_dependencies()
    assert {"pydantic", "pyyaml", "rich", "pulumi", "grafana-foundation-sdk"} <= set(names)
    assert environment.missing_dependencies(names) == []
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\ndependencies = ["pydantic==2.14.4", "no-such-package-here[extra]>=1"]\n'
    )
    added = environment.declared_dependencies(pyproject)
    assert added == ["pydantic", "no-such-package-here"]
    assert environment.missing_dependencies(added) == ["no-such-package-here"]


def test_a_python_outside_pyprojects_versions_is_named(tmp_path: Path) -> None:
    assert environment.python_range() == ((3, 11), (3, 14))  # requires-python = ">=3.11,<3.14"
    assert environment.problem((3, 10, 12)) == "needs Python 3.11-3.13, this is 3.10.12"
    assert environment.problem((3, 14, 0)) == "needs Python 3.11-3.13, this is 3.14.0"
    assert environment.problem(sys.version_info[:3]) is None
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nrequires-python = ">=3.12, <3.15"\n')
    assert environment.python_range(pyproject) == ((3, 12), (3, 15))


def _imported_top_levels(paths: list[Path]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _with_requirements(names: list[str]) -> set[str]:
    """`names` and, transitively, what they require (extras left out), as installed."""
    seen: set[str] = set()
    pending = [_normal(n) for n in names]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requirements = metadata.requires(name) or []
        except metadata.PackageNotFoundError:  # a requirement for another Python or platform
            continue
        for requirement in requirements:
            if "extra ==" not in requirement:
                pending += [_normal(m.group(1)) for m in [_REQUIREMENT.match(requirement)] if m]
    return seen


_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def test_every_package_the_product_imports_comes_with_a_declared_dependency() -> None:
    """So the guard, which asks for the declared ones, cannot miss a package the product needs."""
    files = [p for name in PRODUCT for p in (ROOT / name).rglob("*.py")]
    files += [ROOT / "__main__.py", ROOT / "constants.py", ROOT / "environment.py"]
    third_party = _imported_top_levels(files) - PROJECT_MODULES - set(sys.stdlib_module_names)
    assert {"pydantic", "yaml", "rich", "pulumi"} <= third_party
    provided = _with_requirements(environment.declared_dependencies())
    owners = metadata.packages_distributions()
    undeclared = {
        module: owners.get(module, [])
        for module in third_party
        if not provided & {_normal(d) for d in owners.get(module, [])}
    }
    assert undeclared == {}
