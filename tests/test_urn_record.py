"""testkit/urns.py (scripts/urn-diff), the check a refactor that must keep the deployed graph
passes: a record of the program is complete and repeatable, and the comparison reports every
change but an added dependency."""

from __future__ import annotations

import copy
from collections import Counter

import pytest

from testkit.mocks import built_stack
from testkit.urns import Record, compare, record


@pytest.fixture(scope="module")
def dev() -> Record:
    return record("dev")


def test_two_records_of_one_tree_are_identical_and_hold_every_registration(dev: Record) -> None:
    assert compare(dev, record("dev")) == ([], [])
    built = built_stack("dev").graph
    assert Counter(r["type"] for r in dev["resources"]) == Counter(r.type for r in built.resources)
    assert len(dev["reads"]) == len(built.reads) > 0


def test_a_changed_input_a_moved_urn_and_a_lost_dependency_are_changes(dev: Record) -> None:
    after = copy.deepcopy(dev)
    resources = {r["name"]: r for r in after["resources"]}
    ud = resources["aks-batch-fleet-karmada-sample-sample-ud-ud"]
    lost = ud["dependencies"].pop()
    resources["aks-batch-fleet-karmada-worker-1-credentials"]["inputs"]["metadata"]["name"] = "x"
    interpreter = resources["aks-batch-fleet-karmada-ud-interpreter"]
    interpreter["urn"] += "-renamed"
    changed, added = compare(dev, after)
    assert added == []
    assert len(changed) == 4, changed
    assert any(lost in line and "no longer waits for" in line for line in changed)
    assert any(line.startswith("resources: inputs of") for line in changed)
    assert any(line.startswith("resources: gone:") for line in changed)
    assert any(line.startswith("resources: new:") for line in changed)


def test_an_added_dependency_is_reported_but_is_no_change(dev: Record) -> None:
    after = copy.deepcopy(dev)
    first, second = after["resources"][0], after["resources"][1]
    first["dependencies"].append(second["urn"])
    changed, added = compare(dev, after)
    assert changed == []
    assert added == [f"{first['urn']} now waits for {second['urn']}"]
