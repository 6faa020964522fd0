"""Shared fixtures: a fresh strict Pulumi mocks engine per test (`graph`; the engine itself is
testkit/mocks.py), the committed stacks, and helpers that parse and render fleet values.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest test files first (tests/schedule.py), the rest in pytest's order (a stable sort):
    with `--no-loadscope-reorder` the two xdist processes take files in this order."""
    from tests.schedule import rank  # noqa: PLC0415 (sys.path has ROOT only from here)

    items.sort(key=lambda item: rank(item.path))


def committed_stacks(root: Path = ROOT) -> list[str]:
    """Every committed stack, one per `Pulumi.<stack>.yaml`, sorted. Tests of what every stack
    must satisfy are parametrized over these, so a new stack file needs no other edit."""
    files = [p for p in root.glob("Pulumi.*.yaml") if p.name.count(".") == 2]
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in files)


COMMITTED_STACKS = committed_stacks()
# The AKS calendar check judges versions on a date: the tests pin it to the day the calendar was
# read (upstream/aks_versions.py READ_ON), so no test drifts with the wall clock; the one test that
# looks at the real date says so (tests/test_upgrades.py). Subprocesses inherit it.
os.environ["AKS_BATCH_FLEET_TODAY"] = "2026-12-03"

from builders.fleet import kueue_objects  # noqa: E402
from builders.kueue_queues import AdmissionChecks, cluster_objects  # noqa: E402
from builders.manifest import Manifest  # noqa: E402
from checks.stack import parse_fleet  # noqa: E402
from config.errors import ConfigError  # noqa: E402
from config.models import FleetConfig  # noqa: E402
from testkit.mocks import Graph, mocked_engine  # noqa: E402


@pytest.fixture
def graph() -> Iterator[Graph]:
    """A fresh mocks engine per test; the test runs its program with `run_program`."""
    with mocked_engine() as g:
        yield g


# Lists, at the end of the run, every CEL rule the CRD schema checks could not evaluate.
pytest_plugins = ["tests.conftest_crd", "tests.conftest_report", "tests.conftest_skipped"]


def render_kueue(
    fleet: FleetConfig, added_checks: Mapping[str, AdmissionChecks] | None = None
) -> list[Manifest]:
    """Every cluster's queue objects, as config states them (no MultiKueue mirroring)."""
    added = added_checks or {}
    priority = fleet.kueue.workload_priority_classes
    return [
        m
        for c in fleet.clusters
        for m in cluster_objects(c, added.get(c.name), priority_classes=priority)
    ]


def fleet_issues(raw: dict[str, Any]) -> list[str]:
    """Every issue of a fleet value (its errors, or its warnings when it is valid), as
    `path: message`."""
    try:
        _, warnings = parse_fleet(raw)
    except ConfigError as err:
        return [str(i) for i in err.issues]
    return [str(w) for w in warnings]


def queue_objects(raw: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The Kueue objects a fleet value renders, by (kind, name)."""
    fleet, _ = parse_fleet(raw)
    return {(m.kind, m.name): m.obj for ms in kueue_objects(fleet).values() for m in ms}
