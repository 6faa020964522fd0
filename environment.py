"""Is this Python the project's environment? The packages `preflight` and `fleetview` ask in their
`__init__`, and the Pulumi program (`__main__.py`) before its first import, so that a bare `python`
prints the command to run instead of a ModuleNotFoundError traceback.

What it asks for is read from pyproject.toml, which `uv sync` installs from: the Python versions of
`requires-python` and the packages of `[project].dependencies`, so a dependency added there is asked
for here with no second list to keep.

Standard library only, and written so that any Python from 2.7 on can read and run it (no
f-strings, no annotations but type comments, the newer modules imported where they are needed): a
system `python` too old for the project gets the advice too, not a SyntaxError. A package's
`__init__` runs before Python compiles its `__main__`, so the rest of the project may use any
syntax of the Pythons it supports.
"""

import io
import os
import re
import sys

try:
    from shlex import quote
except ImportError:  # Python 2
    from pipes import quote  # pyright: ignore[reportUnreachable]

PYPROJECT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyproject.toml")
# The exit status of a command that cannot run (preflight's and fleetview's "bad usage").
EXIT_STATUS = 2
# A requirement's distribution name (PEP 508): `pyyaml==6.0.4`, `pyright[nodejs]==...`.
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# `requires-python = ">=3.11,<3.14"`, read without tomllib (which older Pythons lack).
_REQUIRES_PYTHON = re.compile(r'^requires-python\s*=\s*"([^"]*)"', re.MULTILINE)
_BOUND = re.compile(r"^(>=|<)\s*(\d+)\.(\d+)$")
# What a package's `__init__` sees in sys.argv[0] while `python -m <package>` imports it
# (Python 3: "-m"; Python 2: "-c").
_LOCATING = ("-m", "-c")


def _read(path):
    # type: (str | os.PathLike[str]) -> str
    with io.open(path, encoding="utf-8") as text:
        return text.read()


def python_range(pyproject=PYPROJECT):
    # type: (str | os.PathLike[str]) -> tuple[tuple[int, int], tuple[int, int]] | None
    """`requires-python` as (oldest, first too new) minor versions, when it says `>=X.Y,<X.Z`."""
    try:
        found = _REQUIRES_PYTHON.search(_read(pyproject))
    except (OSError, IOError, ValueError):  # IOError is not OSError on Python 2
        return None
    bounds = [_BOUND.match(part.strip()) for part in found.group(1).split(",")] if found else []
    limits = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in bounds if m}
    return (limits[">="], limits["<"]) if set(limits) == {">=", "<"} else None


def declared_dependencies(pyproject=PYPROJECT):
    # type: (str | os.PathLike[str]) -> list[str]
    """Distribution names in `[project].dependencies` (none when the file cannot be read)."""
    try:
        import tomllib  # noqa: PLC0415 - Python 3.11+; `problem` checks the version first

        project = tomllib.loads(_read(pyproject)).get("project", {})
    except (ImportError, OSError, ValueError):
        return []
    names = [_NAME.match(str(r)) for r in project.get("dependencies", [])]
    return [m.group(1) for m in names if m]


def missing_dependencies(names):
    # type: (list[str]) -> list[str]
    """The distributions of `names` that this Python cannot see."""
    from importlib import metadata  # noqa: PLC0415 - Python 3.8+; `problem` checks the version

    missing = []  # type: list[str]
    for name in names:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def problem(version=tuple(sys.version_info[:3])):
    # type: (tuple[int, ...]) -> str | None
    """Why this Python cannot run the project, or None."""
    supported = python_range()
    if supported is not None and not supported[0] <= tuple(version[:2]) < supported[1]:
        (major, oldest), (_, too_new) = supported
        found = ".".join(str(part) for part in version[:3])
        return "needs Python {}.{}-{}.{}, this is {}".format(
            major, oldest, major, too_new - 1, found
        )
    missing = missing_dependencies(declared_dependencies())
    if missing:
        more = " and {} more".format(len(missing) - 3) if len(missing) > 3 else ""
        return "this Python lacks the project's packages: {}{}".format(", ".join(missing[:3]), more)
    return None


def advice(name, why, instead, activate=True):
    # type: (str, str, str, bool) -> str
    """The message: what is wrong and the commands to run instead, from the project directory
    (and, for a command that `python` runs, that an activated environment's `python` does)."""
    return (
        "{}: {}.\n"
        "Run it in the project's environment, from the project directory:\n"
        "  scripts/bootstrap    # once: uv and the locked packages in .venv\n"
        "  {}{}"
    ).format(
        name, why, instead, "\n(or activate the environment first: . .venv/bin/activate)" * activate
    )


def again(module, argv):
    # type: (str, list[str]) -> str
    """What was run, run by uv: `python -m <module> ARGS` when a package's `__init__` asks while
    `python -m` imports it, else the script in argv[0] (`python scripts/x.py ARGS`)."""
    words = ["uv", "run", "python"]
    words += ["-m", module] if not argv or argv[0] in _LOCATING else [argv[0]]
    return " ".join(quote(word) for word in words + argv[1:])


def require(module, instead=None):
    # type: (str, str | None) -> None
    """Exit with `advice` (status 2) when this Python cannot run the project's `module`; the
    command to run instead is `instead`, or what was run, by uv."""
    why = problem()
    if why is not None:
        command = instead if instead is not None else again(module, list(sys.argv))
        sys.stderr.write(advice(module, why, command, activate=instead is None) + "\n")
        raise SystemExit(EXIT_STATUS)


# The Pulumi program is run by the Pulumi CLI, for a stack; scripts/deploy runs preflight first.
PROGRAM = "scripts/deploy <stack>    # preflight, then `pulumi up --stack <stack>`"


def not_under_pulumi():
    # type: () -> str
    """The message of the Pulumi program run by `python` rather than by the Pulumi CLI."""
    return (
        "__main__.py is the Pulumi program: the Pulumi CLI runs it, for a stack, with that\n"
        "stack's config. From the project directory:\n"
        "  {}\n"
        "  uv run python -m preflight <stack>    # offline: validate and print the plan"
    ).format(PROGRAM)
