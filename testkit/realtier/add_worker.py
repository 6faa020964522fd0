"""The stack as docs/operations.md's "Adding a worker" edits it, and that page's commands.

Pure (no tools): the page's two `yaml` blocks are pasted into the committed `Pulumi.<stack>.yaml`
text where the page says (the new worker's entry at the end of `clusters`, the manager's quota
lines over the manager's), and the result is loaded by the project's own loader. The offline
test holds the page's plan-diff excerpt to that stack; the real-tier test deploys it and runs
the page's `kubectl` lines on the manager as written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from checks.stack import load_from_file
from config.models import FleetConfig
from testkit.realtier.pulumi_cli import OPERATIONS, section
from testkit.realtier.twin import ROOT

ADDING: Final = "## Adding a worker"
NEW_WORKER: Final = "worker-3"
TAKING_WORK: Final = "**Is it taking work?**"
_YAML: Final = re.compile(r"^```yaml\n(?P<body>.*?)^```", re.MULTILINE | re.DOTALL)
_SH: Final = re.compile(r"^```sh\n(?P<body>.*?)^```", re.MULTILINE | re.DOTALL)
# A quota line as the committed stacks write them: `- {name: cpu, nominalQuota: "32"}`.
_QUOTA: Final = re.compile(r"^\s*- \{name: (?P<resource>[\w./-]+), nominalQuota: .*\}\s*(#.*)?$")
_CLUSTER: Final = re.compile(r"^      - name: (?P<name>\S+)\s*$")


def page() -> str:
    return section(OPERATIONS.read_text(), ADDING)


def documented_yaml(text: str | None = None) -> tuple[str, str]:
    """The page's two `yaml` blocks: the new worker's `clusters` entry, the manager's quota."""
    blocks = [m["body"] for m in _YAML.finditer(page() if text is None else text)]
    if len(blocks) != 2:
        raise ValueError(f'docs/operations.md, "{ADDING}": expected 2 yaml blocks, {len(blocks)}')
    return blocks[0], blocks[1]


def documented_commands(text: str | None = None) -> list[str]:
    """The `kubectl` lines of the `sh` block after TAKING_WORK, as written."""
    body = (page() if text is None else text).split(TAKING_WORK, 1)
    if len(body) != 2:
        raise ValueError(f'docs/operations.md, "{ADDING}": no {TAKING_WORK}')
    found = _SH.search(body[1])
    if found is None:
        raise ValueError(f'docs/operations.md, "{ADDING}": no sh block after {TAKING_WORK}')
    return [ln for ln in found["body"].splitlines() if ln.startswith("kubectl ")]


def command(containing: str, text: str | None = None) -> str:
    """The one documented `kubectl` line that contains `containing`."""
    lines = [ln for ln in documented_commands(text) if containing in ln]
    if len(lines) != 1:
        raise ValueError(f"expected one documented kubectl line with {containing!r}: {lines}")
    return lines[0]


def _entries(lines: list[str], start: int) -> tuple[dict[str, tuple[int, int]], int]:
    """`clusters` entries (name -> line span) from the `clusters:` line at `start`, and the
    index of the first line after the list."""
    spans: dict[str, tuple[int, int]] = {}
    current: tuple[str, int] | None = None
    end = len(lines)
    for i in range(start + 1, len(lines)):
        line = lines[i]
        indent = len(line) - len(line.lstrip(" "))
        if line.strip() and indent <= 4:
            end = i
            break
        found = _CLUSTER.match(line)
        if found:
            if current is not None:
                spans[current[0]] = (current[1], i)
            current = (found["name"], i)
    if current is not None:
        spans[current[0]] = (current[1], end)
    return spans, end


def edited_text(stack_text: str, entry: str, quota: str, manager: str = "manager") -> str:
    """`stack_text` with `entry` pasted at the end of `clusters` and each quota line of `quota`
    in place of the manager's line for the same resource."""
    lines = stack_text.splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.rstrip() == "    clusters:")
    spans, end = _entries(lines, start)
    first, last = spans[manager]
    for new in quota.splitlines():
        found = _QUOTA.match(new)
        if found is None:
            continue
        resource = found["resource"]
        at = [
            i
            for i in range(first, last)
            if (old := _QUOTA.match(lines[i])) and old["resource"] == resource
        ]
        if len(at) != 1:
            raise ValueError(f"{manager}: expected one quota line for {resource}, found {len(at)}")
        lines[at[0]] = new + "\n"
    return "".join([*lines[:end], entry, *lines[end:]])


def added_stack(stack: str, directory: Path, *, quota: bool = True) -> FleetConfig:
    """The committed stack with the page's edits, written to `directory` and loaded from there
    (`quota=False`: the new worker alone, the manager's quota as committed)."""
    entry, quota_lines = documented_yaml()
    text = edited_text(
        (ROOT / f"Pulumi.{stack}.yaml").read_text(), entry, quota_lines if quota else ""
    )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"Pulumi.{stack}.yaml").write_text(text)
    fleet, _ = load_from_file(stack, directory)
    return fleet
