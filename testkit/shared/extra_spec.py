"""What tests/test_extra_spec.py shares with other test modules (they import it from here, not from
a test module): BAD_FIELDS, FIXTURE, render_unchecked and what they need."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from builders.kueue_queues import (
    cluster_queue,
    cohort,
    local_queue,
    resource_flavor,
)
from checks.stack import parse_fleet
from config.kueue import ClusterQueueConfig, CohortConfig, FlavorConfig, LocalQueueConfig

FIXTURE = Path(__file__).parents[2] / "tests" / "fixtures" / "staging-extra-spec.yaml"
Q = "clusters[0].queues"


CQ_A, CQ_B = f"{Q}.clusterQueues[0].extraSpec", f"{Q}.clusterQueues[1].extraSpec"


FLAVOR, COHORT, LQ = f"{Q}.flavors[0].extraSpec", f"{Q}.cohorts[1].extraSpec", f"{Q}.localQueues[0]"


def staging() -> dict[str, Any]:
    return yaml.safe_load(FIXTURE.read_text())


def queues(raw: dict[str, Any]) -> dict[str, Any]:
    return raw["clusters"][0]["queues"]


# (where in clusters[0].queues, the extraSpec, the issue expected), all against the staging example.
BAD_FIELDS: list[tuple[tuple[str, int], dict[str, Any], str]] = [
    (
        ("clusterQueues", 0),
        {"flavorFungibility": {"prefrence": "PreemptionOverBorrowing"}},
        f"{CQ_A}.flavorFungibility.prefrence: unknown field (did you mean 'preference'?)",
    ),
    (
        ("clusterQueues", 0),
        {"admissionChecksStrategyy": {"admissionChecks": [{"name": "x"}]}},
        f"{CQ_A}.admissionChecksStrategyy: unknown field (did you mean 'admissionChecksStrategy'?)",
    ),
    (
        ("clusterQueues", 1),
        {"stopPolicy": "Paused"},
        f"{CQ_B}.stopPolicy: 'Paused' is not allowed; allowed: None, Hold, HoldAndDrain",
    ),
    (
        ("clusterQueues", 1),
        {"stopPolicy": 1},
        f"{CQ_B}.stopPolicy: must be a string, not an integer",
    ),
    (
        ("clusterQueues", 1),
        {"stopPolicy": None},
        f"{CQ_B}.stopPolicy: null: the API server drops it",
    ),
    (
        ("clusterQueues", 1),
        {"concurrentAdmissionPolicy": {}},
        f"{CQ_B}.concurrentAdmissionPolicy.migration: required field missing",
    ),
    (
        ("clusterQueues", 1),
        {"concurrentAdmissionPolicy": {"migration": {"mode": "Eager"}}},
        f"{CQ_B}.concurrentAdmissionPolicy.migration.mode: 'Eager' is not allowed",
    ),
    (
        ("clusterQueues", 1),
        {
            "concurrentAdmissionPolicy": {
                "migration": {
                    "mode": "TryPreferredFlavors",
                    "constraints": {"lastAcceptableFlavorName": "Burst"},
                }
            }
        },
        f"{CQ_B}.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName: 'Burst' "
        "does not match",
    ),
    (
        # The CRD's CEL rule, by its twin: team-b has no typed flavorFungibility, so Kueue's
        # defaults (MayStopSearch, TryNextFlavor) apply and `preference` is refused.
        ("clusterQueues", 1),
        {"flavorFungibility": {"preference": "BorrowingOverPreemption"}},
        f"{CQ_B}.flavorFungibility: flavorFungibility.preference needs both",
    ),
    (
        ("flavors", 0),
        {"nodeTaints": [{"key": "gpu", "effect": "NoSchedul"}]},
        f"{FLAVOR}.nodeTaints: every nodeTaints entry needs effect NoSchedule",
    ),
    (
        ("flavors", 0),
        {"nodeTaints": [{"key": "gpu", "effect": "NoSchedule", "timeAdded": "yesterday"}]},
        f"{FLAVOR}.nodeTaints[0].timeAdded: 'yesterday' is not an RFC 3339 date-time",
    ),
    (
        ("flavors", 0),
        {"nodeTaints": [{"key": f"k{n}", "effect": "NoSchedule"} for n in range(9)]},
        f"{FLAVOR}.nodeTaints: at most 8 items, got 9",
    ),
    (("flavors", 0), {"nodeTaints": [{"key": "gpu"}]}, f"{FLAVOR}.nodeTaints[0].effect: required"),
    (
        ("flavors", 0),
        {"topologyName": "Default"},
        f"{FLAVOR}.topologyName: 'Default' does not match",
    ),
    (("cohorts", 1), {"weight": "2"}, f"{COHORT}.weight: unknown field"),
    (
        ("localQueues", 0),
        {"fairSharing": {"weigth": "2"}},
        f"{LQ}.extraSpec.fairSharing.weigth: unknown field (did you mean 'weight'?)",
    ),
]


def render_unchecked(where: tuple[str, int], extra: dict[str, Any]) -> dict[str, Any]:
    """The object the builders would render with `extra`, without the checks (what would reach
    the API server if preflight let it through)."""
    raw = staging()
    cluster = parse_fleet(raw)[0].clusters[0]
    item = queues(raw)[where[0]][where[1]] | {"extraSpec": copy.deepcopy(extra)}
    if where[0] == "clusterQueues":
        return cluster_queue(ClusterQueueConfig.model_validate(item), cluster.queues)
    if where[0] == "flavors":
        return resource_flavor(FlavorConfig.model_validate(item), cluster)
    if where[0] == "cohorts":
        return cohort(CohortConfig.model_validate(item))
    return local_queue(LocalQueueConfig.model_validate(item))
