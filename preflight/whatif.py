"""`python -m preflight placement`: where replicas land, without a stack."""

from __future__ import annotations

from rich.console import Console


def run_placement(argv: list[str], console: Console) -> int:
    console.print("placement what-if is not wired yet")
    return 2
