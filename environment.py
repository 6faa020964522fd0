"""Is this Python the project's environment? `python -m preflight` and `python -m fleetview` ask
before their first third-party import, so that a bare `python` prints the command to run instead
of a ModuleNotFoundError traceback.

What it asks for is read from pyproject.toml, which `uv sync` installs from: the Python versions of
`requires-python` and the packages of `[project].dependencies`, so a dependency added there is asked
for here with no second list to keep. Standard library only, importable by any Python 3.
"""

from __future__ import annotations

import re
import shlex
import sys
from importlib import metadata
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent / "pyproject.toml"
# The exit status of a command that cannot run (preflight's and fleetview's "bad usage").
EXIT_STATUS = 2
# A requirement's distribution name (PEP 508): `pyyaml==6.0.4`, `pyright[nodejs]==...`.
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# `requires-python = ">=3.11,<3.14"`, read without tomllib (which older Pythons lack).
_REQUIRES_PYTHON = re.compile(r'^requires-python\s*=\s*"([^"]*)"', re.MULTILINE)
_BOUND = re.compile(r"^(>=|<)\s*(\d+)\.(\d+)$")


def python_range(pyproject: Path = PYPROJECT) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """`requires-python` as (oldest, first too new) minor versions, when it says `>=X.Y,<X.Z`."""
    try:
        found = _REQUIRES_PYTHON.search(pyproject.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    bounds = [_BOUND.match(part.strip()) for part in found.group(1).split(",")] if found else []
    limits = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in bounds if m}
    return (limits[">="], limits["<"]) if set(limits) == {">=", "<"} else None


def declared_dependencies(pyproject: Path = PYPROJECT) -> list[str]:
    """Distribution names in `[project].dependencies` (none when the file cannot be read)."""
    try:
        import tomllib  # noqa: PLC0415 - Python 3.11+; `problem` checks the version first

        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (ImportError, OSError, ValueError):
        return []
    names = [_NAME.match(str(r)) for r in project.get("dependencies", [])]
    return [m.group(1) for m in names if m]


def missing_dependencies(names: list[str]) -> list[str]:
    """The distributions of `names` that this Python cannot see."""
    missing: list[str] = []
    for name in names:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def problem(version: tuple[int, ...] = sys.version_info[:3]) -> str | None:
    """Why this Python cannot run the project, or None."""
    supported = python_range()
    if supported is not None and not supported[0] <= tuple(version[:2]) < supported[1]:
        (major, oldest), (_, too_new) = supported
        found = ".".join(str(part) for part in version[:3])
        return f"needs Python {major}.{oldest}-{major}.{too_new - 1}, this is {found}"
    missing = missing_dependencies(declared_dependencies())
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        return f"this Python lacks the project's packages: {', '.join(missing[:3])}{more}"
    return None


def advice(module: str, why: str, argv: list[str]) -> str:
    """The message: what is wrong and the commands to run instead, from the project directory."""
    again = shlex.join(["uv", "run", "python", "-m", module, *argv])
    return (
        f"{module}: {why}.\n"
        "Run it in the project's environment, from the project directory:\n"
        "  scripts/bootstrap    # once: uv and the locked packages in .venv\n"
        f"  {again}\n"
        "(or activate the environment first: . .venv/bin/activate)"
    )


def require(module: str) -> None:
    """Exit with `advice` (status 2) when this Python cannot run `python -m <module>`."""
    why = problem()
    if why is not None:
        print(advice(module, why, sys.argv[1:]), file=sys.stderr)
        raise SystemExit(EXIT_STATUS)
