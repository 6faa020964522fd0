"""Kueue's queueing API as typed config: fair-sharing weights, Cohorts, priority classes,
preemption, managed jobs and admission fair sharing.

The example (tests/fixtures/fair-share.yaml, shown in docs/kueue-queueing.md) validates without a
warning and renders objects the pinned CRDs accept; every bad input is refused with its key path.
Field names and rules are copied by hand from Kueue v0.19.2 (apis/kueue/v1beta2 cohort_types.go,
fairsharing_types.go, workloadpriorityclass_types.go; pkg/webhooks/common.go validateFairSharing;
pkg/config/validation.go validateManagedJobsNamespaceSelector), independent of the builders.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders.fleet import kueue_objects
from builders.kueue import manager_config
from checks.stack import parse_fleet
from testkit import crdschema
from testkit.fleetvalues import fleet_issues as issues
from testkit.fleetvalues import queue_objects as objects

FIXTURE = Path(__file__).parent / "fixtures" / "fair-share.yaml"
PRIORITY = Path(__file__).parent / "fixtures" / "priority.yaml"
Q = "clusters[0].queues"


def example() -> dict[str, Any]:
    return yaml.safe_load(FIXTURE.read_text())


def test_the_example_is_clean_and_renders_what_it_says() -> None:
    raw = example()
    fleet, warnings = parse_fleet(raw)
    assert warnings == []
    objs = objects(raw)
    assert objs[("ClusterQueue", "team-a")]["spec"]["fairSharing"] == {"weight": "3"}
    assert objs[("ClusterQueue", "team-b")]["spec"]["fairSharing"] == {"weight": "1"}
    assert objs[("ClusterQueue", "team-a")]["spec"]["preemption"] == {
        "withinClusterQueue": "LowerPriority",
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
    }
    assert objs[("Cohort", "research")]["spec"] == {
        "parentName": "org",
        "fairSharing": {"weight": "2"},
    }
    assert objs[("Cohort", "org")]["spec"]["resourceGroups"][0]["flavors"][0]["resources"] == [
        {"name": "cpu", "nominalQuota": "8"},
        {"name": "memory", "nominalQuota": "32Gi"},
    ]
    urgent = objs[("WorkloadPriorityClass", "urgent")]
    assert {k: urgent[k] for k in ("value", "description")} == {
        "value": 1000,
        "description": "on-call and release work; preempts batch",
    }
    assert "spec" not in urgent
    config = manager_config(fleet.kueue, fleet.clusters[0])
    assert config["fairSharing"] == {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    }
    assert config["manageJobsWithoutQueueName"] is True
    assert config["managedJobsNamespaceSelector"] == {"matchLabels": {"kueue-managed": "true"}}


@pytest.mark.parametrize("fixture", [FIXTURE, PRIORITY], ids=lambda p: p.name)
def test_the_example_matches_the_pinned_crds(fixture: Path) -> None:
    fleet, _ = parse_fleet(yaml.safe_load(fixture.read_text()))
    kinds: set[str] = set()
    failures: list[str] = []
    for manifests in kueue_objects(fleet).values():
        for m in manifests:
            if not m.obj["apiVersion"].startswith("kueue.x-k8s.io/"):
                continue  # Namespace, PodDisruptionBudget: Kubernetes' own kinds
            kinds.add(m.kind)
            report = crdschema.validate(m.obj, "kueue", f"v{fleet.kueue.version}")
            assert report.crd is not None, m.kind
            failures += [f"{m.kind}/{m.name}: {e}" for e in [*report.errors, *report.warnings]]
    assert {"WorkloadPriorityClass", "ClusterQueue", "LocalQueue"} <= kinds
    assert fixture == PRIORITY or "Cohort" in kinds
    assert failures == []


def test_the_priority_example_is_classic_preemption_by_priority() -> None:
    """tests/fixtures/priority.yaml (tests/realtier/test_kueue_preemption.py runs it): no fair
    sharing, so Kueue's classic preemption decides by these policies and the priority values."""
    raw = yaml.safe_load(PRIORITY.read_text())
    fleet, warnings = parse_fleet(raw)
    assert warnings == []
    assert "fairSharing" not in manager_config(fleet.kueue, fleet.clusters[0])
    objs = objects(raw)
    for team in ("team-a", "team-b"):
        spec = objs[("ClusterQueue", team)]["spec"]
        assert spec["cohortName"] == "research"
        assert spec["preemption"] == {
            "withinClusterQueue": "LowerPriority",
            "reclaimWithinCohort": "LowerPriority",
        }
    values = {n: objs[("WorkloadPriorityClass", n)]["value"] for n in ("urgent", "batch")}
    assert values == {"urgent": 1000, "batch": 100}


def test_admission_fair_sharing_renders_under_kueues_names() -> None:
    raw = example()
    raw["kueue"]["configuration"]["admissionFairSharing"] = {
        "usageHalfLifeTime": "168h",
        "usageSamplingInterval": "5m",
        "resourceWeights": {"cpu": 1.0, "memory": 0.5},
    }
    raw["clusters"][0]["queues"]["clusterQueues"][0]["admissionScope"] = {
        "admissionMode": "UsageBasedAdmissionFairSharing"
    }
    raw["clusters"][0]["queues"]["localQueues"][0]["fairSharing"] = {"weight": "2"}
    fleet, warnings = parse_fleet(raw)
    assert warnings == []
    assert manager_config(fleet.kueue, fleet.clusters[0])["admissionFairSharing"] == {
        "usageHalfLifeTime": "168h",
        "usageSamplingInterval": "5m",
        "resourceWeights": {"cpu": 1.0, "memory": 0.5},
    }
    objs = objects(raw)
    assert objs[("ClusterQueue", "team-a")]["spec"]["admissionScope"] == {
        "admissionMode": "UsageBasedAdmissionFairSharing"
    }
    assert objs[("LocalQueue", "team-a")]["spec"]["fairSharing"] == {"weight": "2"}
    for key in (("ClusterQueue", "team-a"), ("LocalQueue", "team-a")):
        report = crdschema.validate(objs[key], "kueue", "v0.19.2")
        assert report.errors == [], report.errors


def _set(raw: dict[str, Any], path: list[Any], value: Any) -> None:
    node: Any = raw
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


QUEUES = ["clusters", 0, "queues"]


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (
            [*QUEUES, "clusterQueues", 0, "fairSharing", "weight"],
            "-1",
            f"{Q}.clusterQueues[0].fairSharing.weight: '-1' must be >= 0",
        ),
        (
            [*QUEUES, "cohorts", 1, "fairSharing", "weight"],
            "1n",
            f"{Q}.cohorts[1].fairSharing.weight: when not 0, must be more than 1e-9",
        ),
        (
            [*QUEUES, "clusterQueues", 1, "fairSharing", "weight"],
            "three",
            f"{Q}.clusterQueues[1].fairSharing.weight: ",
        ),
        (
            [*QUEUES, "cohorts", 0, "parentName"],
            "research",
            f"{Q}.cohorts[0].parentName: Cohort 'org' is on a parentName cycle",
        ),
        (
            [*QUEUES, "cohorts", 1, "parentName"],
            "research",
            f"{Q}.cohorts[1].parentName: a Cohort cannot be its own parent",
        ),
        (
            [*QUEUES, "cohorts", 0, "resourceGroups", 0, "flavors", 0, "resources", 0],
            {"name": "cpu", "nominalQuota": "8", "lendingLimit": "2"},
            f"{Q}.cohorts[0].resourceGroups[0].flavors[0].resources[0].lendingLimit: needs the "
            "Cohort to have a parentName",
        ),
        (
            [*QUEUES, "cohorts", 0, "resourceGroups", 0, "flavors", 0, "name"],
            "gpu",
            f"{Q}.cohorts[0].resourceGroups[0].flavors[0].name: no flavor 'gpu'",
        ),
        (
            [*QUEUES, "cohorts", 1, "name"],
            "org",
            f"{Q}.cohorts[1].name: 'org' is declared more than once",
        ),
        (
            ["kueue", "workloadPriorityClasses", 1, "name"],
            "urgent",
            "kueue.workloadPriorityClasses[1].name: 'urgent' is declared more than once",
        ),
        (
            ["kueue", "workloadPriorityClasses", 0, "value"],
            2**31,
            "kueue.workloadPriorityClasses[0].value: ",
        ),
        (
            ["kueue", "configuration", "managedJobsNamespaceSelector"],
            {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]},
            "kueue.configuration.managedJobsNamespaceSelector: selects namespace 'kube-system'",
        ),
        (
            [*QUEUES, "clusterQueues", 0, "fairSharing", "share"],
            "3",
            f"{Q}.clusterQueues[0].fairSharing.share: unknown key",
        ),
    ],
)
def test_bad_queueing_config_names_its_key(path: list[Any], value: Any, expected: str) -> None:
    raw = example()
    _set(raw, path, value)
    found = issues(raw)
    assert any(t.startswith(expected) for t in found), found


def test_weights_without_fair_sharing_are_flagged_not_silently_ignored() -> None:
    raw = copy.deepcopy(example())
    del raw["kueue"]["configuration"]["fairSharing"]
    found = issues(raw)
    assert (
        f"{Q}.clusterQueues[0].fairSharing: ignored: kueue.configuration.fairSharing is off; "
        "set kueue.configuration.fairSharing to turn it on"
    ) in found
    assert any(t.startswith(f"{Q}.cohorts[1].fairSharing: ignored") for t in found)
