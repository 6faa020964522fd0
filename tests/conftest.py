"""Shared fixtures: a fresh strict Pulumi mocks engine per test (`graph`; the engine itself is
testkit/mocks.py). The committed stacks (testkit/repo.py) and the helpers that parse and render
fleet values (testkit/fleetvalues.py) are testkit's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# What several test modules share moved out of them into testkit (testkit/shared,
# testkit/realtier/shared); its asserts keep pytest's rewritten messages, as in a test module.
pytest.register_assert_rewrite("testkit.shared", "testkit.realtier.shared")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest test files first (testkit/schedule.py), the rest in pytest's order (a stable sort):
    with `--no-loadscope-reorder` the two xdist processes take files in this order."""
    from testkit.schedule import rank  # noqa: PLC0415 (sys.path has ROOT only from here)

    items.sort(key=lambda item: rank(item.path))


# The AKS calendar check judges versions on a date: the tests pin it to the day the calendar was
# read (upstream/aks_versions.py READ_ON), so no test drifts with the wall clock; the one test that
# looks at the real date says so (tests/test_upgrades.py). Subprocesses inherit it.
os.environ["AKS_BATCH_FLEET_TODAY"] = "2026-12-03"

from testkit.mocks import Graph, mocked_engine  # noqa: E402


@pytest.fixture
def graph() -> Iterator[Graph]:
    """A fresh mocks engine per test; the test runs its program with `run_program`."""
    with mocked_engine() as g:
        yield g


# Lists, at the end of the run, every CEL rule the CRD schema checks could not evaluate.
pytest_plugins = ["tests.conftest_crd", "tests.conftest_report", "tests.conftest_skipped"]
