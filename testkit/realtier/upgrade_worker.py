"""docs/upgrades.md's "Upgrading a worker's Kubernetes minor": its commands and its quote.

Pure (no tools): the real-tier test (tests/realtier/test_worker_upgrade.py) runs the section's
`kubectl` lines as written, each on the cluster its comment names; the offline test
(tests/test_upgrades.py) holds the section's quoted preflight refusal to what preflight says.
"""

from __future__ import annotations

from typing import Final

from testkit.realtier.pulumi_cli import section
from testkit.realtier.twin import ROOT

PAGE: Final = ROOT / "docs" / "upgrades.md"
SECTION: Final = "### Upgrading a worker's Kubernetes minor"
MANAGER: Final = "manager"


def page() -> str:
    return section(PAGE.read_text(), SECTION)


def documented(text: str | None = None) -> list[tuple[str, str]]:
    """The `kubectl` lines of the section's `sh` block with the cluster each runs on: a comment
    `# on the manager...` or `# on <cluster>: ...` says where the lines after it run."""
    body = page() if text is None else text
    block = body.split("```sh\n", 1)[1].split("```", 1)[0]
    target, out = "", []
    for line in block.splitlines():
        if line.startswith("# on "):
            words = [w.rstrip(":,") for w in line.removeprefix("# on ").split()]
            target = MANAGER if words[:2] == ["the", "manager"] else words[0]
        elif line.startswith("kubectl "):
            out.append((target, line))
    return out


def documented_line(containing: str) -> tuple[str, str]:
    """(cluster, line): the one documented `kubectl` line that contains `containing`."""
    found = [(t, ln) for t, ln in documented() if containing in ln]
    if len(found) != 1:
        raise ValueError(f"{PAGE.name}, {SECTION}: one kubectl line with {containing!r}: {found}")
    return found[0]


def quoted_refusal() -> str:
    """The preflight error the section quotes (its one unlabelled fenced block)."""
    return page().split("   ```\n", 2)[1].strip()
