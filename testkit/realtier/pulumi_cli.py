"""The `pulumi` CLI as an operator runs it, on a stack an Automation API workspace made; and the
pure pieces the fault tests judge with (documented commands, plane snapshots, engine processes).

The recovery steps of docs/operations.md are read from that page and run as written: each line
of its `sh` block is one command. The one step this machine cannot run with the CLI is `pulumi up`
(the module proxy serves no `pulumi-language-python`, so the CLI cannot start the Python program on
its own): that step is the Automation API's `up` of the same program on the same stack, which is
`pulumi up --yes` with the language runtime served by the test process.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from testkit.realtier import phases

CLI_TIMEOUT: Final = 300.0
# The page whose "When things go wrong" steps the fault tests run as written.
OPERATIONS: Final = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
_FENCE: Final = re.compile(r"^```sh\n(?P<body>.*?)^```", re.MULTILINE | re.DOTALL)


# ---- the docs, as written ------------------------------------------------------------------------


def section(text: str, heading: str) -> str:
    """The body of the Markdown section whose heading line is `heading` (up to the next heading
    of the same or a higher level)."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines(keepends=True)
    try:
        start = next(i for i, line in enumerate(lines) if line.rstrip("\n") == heading)
    except StopIteration:
        raise ValueError(f"no section {heading!r}") from None
    body: list[str] = []
    fenced = False
    for line in lines[start + 1 :]:
        if line.startswith("```"):
            fenced = not fenced
        hashes = len(line) - len(line.lstrip("#"))
        if not fenced and 0 < hashes <= level and line[hashes : hashes + 1] == " ":
            break
        body.append(line)
    return "".join(body)


def shell_commands(markdown: str) -> list[list[str]]:
    """The commands of the first ```sh block: one per line, `#` comments and blank lines dropped."""
    found = _FENCE.search(markdown)
    if found is None:
        raise ValueError("no ```sh block")
    commands: list[list[str]] = []
    for line in found["body"].splitlines():
        argv = shlex.split(line, comments=True)
        if argv:
            commands.append(argv)
    return commands


# ---- what is on a plane --------------------------------------------------------------------------


@dataclass(frozen=True, order=True, slots=True)
class ObjectRef:
    """An object as a comparison between two runs sees it: no uid, no resourceVersion."""

    kind: str
    namespace: str
    name: str
    owners: tuple[str, ...]  # "<Kind>/<name>" of its ownerReferences, sorted

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        owned = f" (owned by {', '.join(self.owners)})" if self.owners else ""
        return f"{self.kind} {where}{self.name}{owned}"


def object_refs(items: Iterable[Mapping[str, Any]]) -> frozenset[ObjectRef]:
    """`kubectl get -o json` items as ObjectRefs."""
    refs: set[ObjectRef] = set()
    for item in items:
        meta = item.get("metadata") or {}
        owners = tuple(
            sorted(f"{o.get('kind')}/{o.get('name')}" for o in meta.get("ownerReferences") or [])
        )
        refs.add(
            ObjectRef(str(item.get("kind")), meta.get("namespace") or "", meta["name"], owners)
        )
    return frozenset(refs)


def kubectl_kinds(resource_types: Iterable[str]) -> list[str]:
    """`kubernetes:<group>/<version>:<Kind>` Pulumi types as `kubectl get` arguments
    (`<Kind>.<version>.<group>`, the Kind alone for the core group); other types dropped."""
    kinds: set[str] = set()
    for rtype in resource_types:
        parts = rtype.split(":")
        if len(parts) != 3 or parts[0] != "kubernetes" or "/" not in parts[1]:
            continue
        group, version = parts[1].rsplit("/", 1)
        kinds.add(parts[2] if group == "core" else f"{parts[2]}.{version}.{group}")
    return sorted(kinds)


def credential_refs(refs: Iterable[ObjectRef], token_secrets: Iterable[str]) -> list[ObjectRef]:
    """The credentials among `refs`: Secrets that hold a service-account token (`token_secrets`
    names them, from their type) or a kubeconfig (by name, as the program names them)."""
    tokens = set(token_secrets)
    return sorted(
        r
        for r in refs
        if r.kind == "Secret" and (f"{r.namespace}/{r.name}" in tokens or "kubeconfig" in r.name)
    )


def diff_lines(expected: Iterable[ObjectRef], got: Iterable[ObjectRef]) -> list[str]:
    """`- missing` and `+ extra` lines between two snapshots, sorted; empty when they are equal."""
    want, have = set(expected), set(got)
    return [f"- {r}" for r in sorted(want - have)] + [f"+ {r}" for r in sorted(have - want)]


def op_counts(changes: Mapping[Any, int] | None) -> dict[str, int]:
    """An update summary's operation counts with plain-string keys (OpType or str)."""
    return {str(getattr(op, "value", op)): n for op, n in (changes or {}).items()}


# ---- the engine's processes ----------------------------------------------------------------------


def children(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """Direct children of `pid` (from /proc/<pid>/stat's ppid field)."""
    found: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        fields = stat.rsplit(")", 1)[1].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


def executable(pid: int) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return None


def is_plugin(pid: int, provider: Path) -> bool:
    """A resource provider plugin the CLI starts: the kubernetes provider's binary, or the
    Python dynamic provider host (`python -m pulumi.dynamic`, the RetireGuard's provider, whose
    plugin the real-tier engine writes: testkit/realtier/engine.py)."""
    if executable(pid) == provider:
        return True
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"pulumi.dynamic" in argv and b"-m" in argv


def alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# ---- the CLI -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PulumiCli:
    """The cached CLI, in the workspace's project directory with its environment (backend,
    PULUMI_HOME, passphrase): the stack the workspace selected is the current stack."""

    binary: Path
    work_dir: Path
    env: Mapping[str, str]

    @phases.timed(phases.ENGINE)
    def run(
        self, argv: Sequence[str], timeout: float = CLI_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        """Run `pulumi <argv[1:]>` (argv as docs/operations.md writes it, `pulumi` first)."""
        if not argv or argv[0] != "pulumi":
            raise ValueError(f"not a pulumi command: {argv}")
        return subprocess.run(
            [str(self.binary), *argv[1:]],
            cwd=self.work_dir,
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
