"""What tests/test_readme.py shares with other test modules (they import it from here, not from a
test module): commands, shell_lines, verdict and what they need."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Final

from testkit.repo import ROOT

OFFLINE_MARK: Final = "<!-- offline"


# Programs that reach Azure or a Kubernetes API server.
CLOUD_PROGRAMS: Final = frozenset({"pulumi", "kubectl", "kubelogin", "az", "helm"})


# Set-up lines README shows that this test does not run, and why. Keys are a command's first words.
NOT_RUN: Final = {
    "git clone": "makes the clone this test already runs in",
    "cd": "enters that clone",
    "scripts/bootstrap": (
        "makes the environment this test runs in (scripts/check runs it first; ~1-2 min cold), "
        "and its `uv sync` would rewrite that environment under the running pytest"
    ),
    "scripts/check": "runs this very test: it would recurse",
}


FENCE: Final = re.compile(r"^```(?P<lang>\S*)[^\n]*\n(?P<body>.*?)^```", re.MULTILINE | re.DOTALL)
_OPERATORS: Final = frozenset({"|", "||", "&&", ";", "&", "(", ")"})


@dataclass(frozen=True, slots=True)
class Line:
    """One command line of a README shell block."""

    text: str
    offline_block: bool  # the block is marked offline


def shell_lines(markdown: str) -> list[Line]:
    """Every non-blank, non-comment line of the ```bash/```sh blocks, with its block's mark."""
    lines: list[Line] = []
    for block in FENCE.finditer(markdown):
        if block["lang"] not in {"bash", "sh"}:
            continue
        before = markdown[: block.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marked = before.startswith(OFFLINE_MARK)
        for text in block["body"].splitlines():
            if text.strip() and not text.lstrip().startswith("#"):
                lines.append(Line(text.strip(), marked))
    return lines


def commands(line: str) -> list[list[str]]:
    """The simple commands of a shell line (split at pipes and control operators)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    found: list[list[str]] = [[]]
    for token in lexer:
        if token in _OPERATORS:
            found.append([])
        else:
            found[-1].append(token)
    return [argv for argv in found if argv]


def runs_cloud_program(program: str) -> bool:
    """A cloud CLI itself, or a project script whose own lines run one."""
    if program in CLOUD_PROGRAMS:
        return True
    script = ROOT / program
    if not program.startswith("scripts/") or not script.is_file():
        return False
    for text in script.read_text().splitlines():
        code = text.split("#", 1)[0]
        if any(argv[0] in CLOUD_PROGRAMS for argv in _script_commands(code)):
            return True
    return False


def _script_commands(code: str) -> list[list[str]]:
    try:
        parsed = commands(code)
    except ValueError:  # a line continued on the next one: judge its words as they come
        parsed = [code.split()]
    # `exec pulumi up`, `command -v pulumi` (a probe, not a run: dropped), `if ! ... ; then`
    return [
        argv[1:] if argv[0] in {"exec", "then", "!", "if"} and len(argv) > 1 else argv
        for argv in parsed
        if argv[:2] != ["command", "-v"]
    ]


def verdict(line: str) -> str:
    """'cloud', 'not run: <reason>' or 'offline'."""
    argvs = commands(line)
    if any(runs_cloud_program(argv[0]) for argv in argvs):
        return "cloud"
    reasons = [
        reason
        for argv in argvs
        for key, reason in NOT_RUN.items()
        if argv[: len(key.split())] == key.split()
    ]
    if reasons and len(reasons) == len(argvs):
        return "not run: " + "; ".join(reasons)
    return "offline"
