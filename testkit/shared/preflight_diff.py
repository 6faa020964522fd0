"""What tests/test_preflight_diff.py shares with other test modules (they import it from here, not
from a test module): Fleet, edited, flags, section and what they need."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from preflight.snapshot import Snapshot, snapshot
from testkit.repo import ROOT

Fleet = dict[str, Any]


def edited(tmp_path: Path, edit: Callable[[Fleet], None], stack: str = "dev") -> Snapshot:
    """The committed stack with `edit` applied to its fleet, loaded by the same loader."""
    document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    # The workers share their queues through a YAML anchor (one object after loading, and
    # deepcopy keeps the sharing); a JSON round trip gives each worker its own to edit.
    fleet = json.loads(json.dumps(document["config"]["aks-batch-fleet:fleet"]))
    edit(fleet)
    document["config"]["aks-batch-fleet:fleet"] = fleet
    directory = tmp_path / "edited"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(document))
    return snapshot(stack, root=directory)


def section(diff: dict[str, Any], title: str) -> list[str]:
    found = [s for s in diff["sections"] if s["title"] == title]
    return [c["text"] for c in found[0]["changes"]] if found else []


def flags(diff: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["key"], c["flag"]) for s in diff["sections"] for c in s["changes"] if c["flag"]]
