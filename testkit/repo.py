"""The repository's root and its committed stacks, as the tests find them."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def committed_stacks(root: Path = ROOT) -> list[str]:
    """Every committed stack, one per `Pulumi.<stack>.yaml`, sorted. Tests of what every stack
    must satisfy are parametrized over these, so a new stack file needs no other edit."""
    files = [p for p in root.glob("Pulumi.*.yaml") if p.name.count(".") == 2]
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in files)


COMMITTED_STACKS = committed_stacks()
