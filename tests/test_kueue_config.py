"""Kueue config: models, checks and capacity rules; every problem names its camelCase key path."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from checks.kueue_queues import check_gate_conflicts
from checks.stack import load_from_file, parse_fleet
from config.resolve import with_mirrored_queues
from testkit.repo import COMMITTED_STACKS
from testkit.shared.kueue_config import base, issues, texts
from upstream.k8s import quantity_value
from upstream.kueue import FEATURE_GATES, FRAMEWORKS, KUEUE_VERSIONS, LOCKED_GATES

Q = "clusters[0].queues"
CQ = f"{Q}.clusterQueues[0]"
RES = f"{CQ}.resourceGroups[0].flavors[0].resources"


def queues(raw: dict[str, Any]) -> dict[str, Any]:
    return raw["clusters"][0]["queues"]


def cq(raw: dict[str, Any]) -> dict[str, Any]:
    return queues(raw)["clusterQueues"][0]


def test_base_is_clean() -> None:
    fleet, warnings = parse_fleet(base())
    assert warnings == []
    assert fleet.kueue.version == "0.19.2"
    assert fleet.kueue.frameworks == ["batch/job"]
    assert fleet.clusters[0].queues.cluster_queues[0].queueing_strategy == "BestEffortFIFO"


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_committed_stacks_have_no_kueue_findings(stack: str) -> None:
    fleet, warnings = load_from_file(stack)
    assert [w for w in warnings if "queues" in w.path or w.path.startswith("kueue")] == []
    gated = [c for c in fleet.clusters if any(q.provisioning_gate for q in c.queues.cluster_queues)]
    assert gated or stack not in {"dev", "prod"}  # both gate their worker queues
    assert {c.role for c in gated} <= {"worker", "standalone"}


def test_dev_workers_are_cheap_and_gated() -> None:
    fleet, _ = load_from_file("dev")
    fleet = with_mirrored_queues(fleet)  # LocalQueues come from the manager (MultiKueue)
    for worker in fleet.workers:
        q = worker.queues
        assert [f.pool for f in q.flavors] == ["batch"]
        pool = worker.pool("batch")
        assert pool is not None
        assert pool.vm_size == "Standard_D4s_v5"
        ref = q.cluster_queues[0].provisioning_gate
        assert ref is not None
        gate = q.gate(ref.name)
        assert gate is not None
        assert gate.provisioning_class_name == "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
        assert [lq.namespace for lq in q.local_queues] == [n.name for n in q.namespaces]


# (what to change, expected error text). Each names the key path and what is allowed.
def _set(raw: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    node: Any = raw
    for part in path[:-1]:
        node = node[part] if isinstance(part, int) else node.setdefault(part, {})
    node[path[-1]] = value
    return raw


QP = ["clusters", 0, "queues"]
CP = [*QP, "clusterQueues", 0]
RP = [*CP, "resourceGroups", 0, "flavors", 0, "resources"]

BAD: list[tuple[list[Any], Any, str]] = [
    (["kueue", "version"], "0.18.0", "kueue.version: Input should be '0.19.2' or '0.17.8'"),
    (["kueue", "frameworks"], ["batch/jobs"], "did you mean 'batch/job'?"),
    (["kueue", "frameworks"], ["pod"], "kueue.frameworks: must include 'batch/job'"),
    (["kueue", "frameworks"], ["batch/job", "batch/job"], "listed more than once"),
    (
        ["kueue", "frameworks"],
        ["batch/job", "sparkoperator.k8s.io/sparkapplication"],
        "kueue.frameworks[1]: sparkoperator.k8s.io/sparkapplication is alpha in Kueue: set "
        "kueue.featureGates.SparkApplicationIntegration: true",
    ),
    (
        ["kueue", "featureGates"],
        {"ProvisioningACC": True},
        "kueue.featureGates.ProvisioningACC: remove it: GA in 0.14 and removed in 0.15",
    ),
    (
        ["kueue", "featureGates"],
        {"LendingLimit": True},
        "Kueue 0.19.2 has no feature gate 'LendingLimit' and would not start (it exists in 0.17.8)",
    ),
    (["kueue", "featureGates"], {"MultiKueu": True}, "did you mean 'MultiKueue'?"),
    (
        ["kueue", "featureGates"],
        {"HierarchicalCohorts": False},
        "kueue.featureGates.HierarchicalCohorts: locked to true in Kueue 0.19.2",
    ),
    (
        ["kueue", "values"],
        {"controllerManager": {"featureGates": [{"name": "X", "enabled": True}]}},
        "kueue.values.controllerManager.featureGates: set by the program (use kueue.featureGates)",
    ),
    (
        ["kueue", "values"],
        {"managerConfig": {"controllerManagerConfigYaml": "featureGates: {}"}},
        "kueue.values.managerConfig: set by the program",
    ),
    (["kueue", "values"], {"fullnameOverride": "kq"}, "kueue.values.fullnameOverride"),
    (["kueue", "multiKueue", "gcInterval"], "1 minute", "kueue.multiKueue.gcInterval: '1 minute'"),
    (["kueue", "timeoutSeconds"], 5, "kueue.timeoutSeconds: Input should be greater"),
    (
        [*QP, "namespaces", 0, "name"],
        "Team_A",
        f"{Q}.namespaces[0].name: 'Team_A' must be a DNS-1123",
    ),
    ([*QP, "namespaces", 0, "name"], "kube-system", "is not a team namespace (reserved"),
    ([*QP, "flavors", 0, "pool"], "gpu", f"{Q}.flavors[0].pool: no user pool 'gpu' in cluster"),
    ([*QP, "flavors", 0, "pool"], "system", "(that is the system pool)"),
    ([*QP, "flavors", 0, "nodeLabels"], {"x": "y"}, "come from pool 'batch' when `pool` is set"),
    (
        [*QP, "flavors", 0, "name"],
        "Batch",
        f"{Q}.flavors[0].name: 'Batch' must be a DNS",
    ),
    (
        [*QP, "flavors", 0, "tolerations"],
        [{"operator": "Equal", "value": "x"}],
        f"{Q}.flavors[0].tolerations[0]: a toleration without key needs operator: Exists",
    ),
    ([*CP, "name"], "team a", f"{CQ}.name: 'team a' must be a DNS-1123 subdomain"),
    ([*CP, "cohort"], "x", f"{CQ}.cohort: unknown key; did you mean 'cohortName'?"),
    ([*CP, "admissionChecks"], ["scaleup"], f"{CQ}.admissionChecks: unknown key"),
    ([*CP, "queueingStrategy"], "FIFO", "Input should be 'BestEffortFIFO' or 'StrictFIFO'"),
    (
        [*CP, "resourceGroups", 0, "flavors", 0, "name"],
        "spot",
        f"{CQ}.resourceGroups[0].flavors[0].name: no flavor 'spot' in clusters[].queues.flavors "
        "of 'solo' (declared: batch)",
    ),
    (
        [*CP, "resourceGroups", 0, "coveredResources"],
        ["memory", "cpu"],
        "must list memory, cpu in that order (the group's coveredResources); got cpu, memory",
    ),
    (
        [*CP, "resourceGroups", 0, "coveredResources"],
        ["cpu", "memory", "pods"],
        "must list cpu, memory, pods in that order",
    ),
    ([*RP, 0, "nominalQuota"], "-1", f"{RES}[0].nominalQuota: '-1' must be >= 0"),
    ([*RP, 0, "nominalQuota"], "lots", "'lots' is not a Kubernetes quantity"),
    ([*RP, 0, "name"], "Bad Name", "resource name 'Bad Name'"),
    (
        [*RP, 0, "borrowingLimit"],
        "4",
        f"{RES}[0].borrowingLimit: needs cohortName on the ClusterQueue",
    ),
    ([*RP, 0, "lendingLimit"], "4", f"{RES}[0].lendingLimit: needs cohortName"),
    (
        [*CP, "provisioningGate"],
        {"name": "missing"},
        f"{CQ}.provisioningGate.name: no provisioning gate 'missing' in cluster 'solo' "
        "(declared: scaleup)",
    ),
    (
        [*CP, "provisioningGate"],
        {"name": "scaleup", "onFlavors": ["spot"]},
        f"{CQ}.provisioningGate.onFlavors[0]: 'spot' is not a flavor of this ClusterQueue",
    ),
    (
        [*QP, "provisioningGates", 0, "provisioningClassName"],
        "queued-provisioning.gke.io",
        "Input should be 'best-effort-atomic-scale-up.autoscaling.x-k8s.io' or",
    ),
    (
        [*QP, "provisioningGates", 0, "configName"],
        "a.b",
        f"{Q}.provisioningGates[0].configName: 'a.b' must be a DNS-1123 label: 1-63 lowercase",
    ),
    (
        [*QP, "provisioningGates", 0, "podSetUpdates"],
        [{"key": "zone"}],
        "podSetUpdates[0].valueFromProvisioningClassDetail: required",
    ),
    (
        [*QP, "localQueues", 0, "clusterQueue"],
        "team-b",
        f"{Q}.localQueues[0].clusterQueue: no ClusterQueue 'team-b' in cluster 'solo' "
        "(declared: team-a)",
    ),
    (
        [*QP, "localQueues", 0, "namespace"],
        "team-b",
        f"{Q}.localQueues[0].namespace: no team namespace 'team-b'",
    ),
    (
        [*CP, "namespaceSelector"],
        {"matchLabels": {"team": "b"}},
        f"{Q}.localQueues[0].namespace: ClusterQueue 'team-a' does not select namespace 'team-a'",
    ),
    (
        [*CP, "namespaceSelector"],
        {"matchExpressions": [{"key": "team", "operator": "In"}]},
        "matchExpressions[0]: operator In needs values",
    ),
    (
        [*CP, "preemption"],
        {"borrowWithinCohort": {"policy": "LowerPriority"}},
        f"{CQ}.preemption: borrowWithinCohort.policy other than Never needs reclaimWithinCohort",
    ),
    # Capacity: 5 x Standard_D4s_v5 give 19.3 CPU and 78170Mi; both numbers are in the message.
    (
        [*RP, 0, "nominalQuota"],
        "100",
        f"{RES}[0].nominalQuota: nominalQuota 100 cpu exceeds what pool 'batch' can ever "
        "provide: 19.3 cpu at maxCount (5 x Standard_D4s_v5, 3.86 allocatable each)",
    ),
    ([*RP, 1, "nominalQuota"], "80Gi", "nominalQuota 80Gi exceeds what pool 'batch' can ever"),
]


@pytest.mark.parametrize(("path", "value", "expected"), BAD, ids=[b[2][:60] for b in BAD])
def test_bad_kueue_config_names_the_key(path: list[Any], value: Any, expected: str) -> None:
    raw = _set(base(), path, value)
    found = texts(raw)
    assert any(expected in e for e in found), "\n".join(found)


def test_every_error_is_reported_at_once() -> None:
    raw = base()
    raw["kueue"] = {"featureGates": {"ProvisioningACC": True}}
    q = queues(raw)
    q["flavors"][0]["pool"] = "gpu"
    q["localQueues"][0]["clusterQueue"] = "nope"
    q["clusterQueues"][0]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "1"
    paths = {i.path for i in issues(raw) if i.severity == "error"}
    assert {
        "kueue.featureGates.ProvisioningACC",
        f"{Q}.flavors[0].pool",
        f"{Q}.localQueues[0].clusterQueue",
        f"{RES}[0].lendingLimit",
    } <= paths


def test_duplicate_names_point_at_each_entry() -> None:
    raw = base()
    q = queues(raw)
    q["localQueues"].append(dict(q["localQueues"][0]))
    q["provisioningGates"].append({"name": "other", "configName": "scaleup-config"})
    found = texts(raw)
    assert f"{Q}.localQueues[0].name: 'team-a/team-a' is declared more than once" in found
    assert f"{Q}.localQueues[1].name: 'team-a/team-a' is declared more than once" in found
    assert any(
        f"{Q}.provisioningGates[1].configName: ProvisioningRequestConfig" in e for e in found
    )


def test_flavor_and_resource_belong_to_one_group() -> None:
    raw = base()
    group = copy.deepcopy(cq(raw)["resourceGroups"][0])
    cq(raw)["resourceGroups"].append(group)
    found = texts(raw)
    assert any(
        f"{CQ}.resourceGroups[1].coveredResources[0]: 'cpu' is already covered by" in e
        for e in found
    )
    assert any(
        f"{CQ}.resourceGroups[1].flavors[0].name: flavor 'batch' is already" in e for e in found
    )


def test_lending_limit_at_most_nominal() -> None:
    raw = base()
    cq(raw)["cohortName"] = "shared"
    cq(raw)["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "17"
    assert f"{RES}[0].lendingLimit: 17 must be <= nominalQuota (16)" in texts(raw)


def test_quota_beyond_capacity_only_by_borrowing_is_a_warning() -> None:
    raw = base()
    cq(raw)["cohortName"] = "shared"
    cq(raw)["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = "8"
    fleet, warnings = parse_fleet(raw)  # accepted
    assert fleet.clusters[0].queues.cluster_queues[0].cohort_name == "shared"
    (warning,) = [w for w in warnings if w.path.endswith("nominalQuota")]
    assert warning.path == f"{RES}[0].nominalQuota"
    assert "can admit 24 cpu on flavor 'batch'" in warning.message
    assert "(19.3 cpu at maxCount" in warning.message


def test_cohort_members_lend_to_each_other() -> None:
    # No borrowingLimit: a queue can borrow what the rest of the cohort does not keep.
    raw = base()
    cq(raw)["cohortName"] = "shared"
    other = copy.deepcopy(cq(raw))
    other["name"] = "team-b"
    other.pop("provisioningGate")
    other["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "2"
    other["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "2"
    other["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"] = "8Gi"
    queues(raw)["clusterQueues"].append(other)
    _, warnings = parse_fleet(raw)
    assert not [w for w in warnings if "nominalQuota" in w.path]  # 16 + 2 <= 19.3
    other["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "4"
    other["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "4"
    paths = [w.path for w in parse_fleet(raw)[1]]
    assert f"{RES}[0].nominalQuota" in paths  # team-a: 16 + 4 > 19.3
    assert "clusters[0].pools[0].maxCount" in paths  # 16 + 4 nominal on one pool


def test_unused_flavor_and_gate_are_warnings() -> None:
    raw = base()
    queues(raw)["flavors"].append({"name": "spare", "nodeLabels": {"x": "y"}})
    queues(raw)["provisioningGates"].append({"name": "idle"})
    _, warnings = parse_fleet(raw)
    assert {str(w) for w in warnings} >= {
        f"{Q}.flavors[1].name: not used by any ClusterQueue",
        f"{Q}.provisioningGates[1].name: not used by any ClusterQueue (provisioningGate.name)",
    }


def test_label_selected_pool_suggests_pool_binding() -> None:
    raw = base()
    queues(raw)["flavors"][0] = {"name": "batch", "nodeLabels": {"agentpool": "batch"}}
    _, warnings = parse_fleet(raw)
    assert any("selects pool 'batch' by label: use `pool: batch`" in str(w) for w in warnings)


def test_too_many_flavor_labels_from_the_pool() -> None:
    raw = base()
    raw["clusters"][0]["pools"][0]["labels"] = {f"l{i}": "x" for i in range(8)}
    assert any(
        f"{Q}.flavors[0]: the ResourceFlavor would get 9 nodeLabels; Kueue allows at most 8" in e
        for e in texts(raw)
    )


def test_gate_conflict_hook_for_multikueue() -> None:
    fleet, _ = parse_fleet(base())
    found = list(check_gate_conflicts(fleet, {"solo": ["team-a"]}))
    assert [i.path for i in found] == [f"{CQ}.provisioningGate"]
    assert "MultiKueue" in found[0].message
    assert list(check_gate_conflicts(fleet, {"solo": ["other"]})) == []


def test_managed_resource_not_covered_is_a_warning() -> None:
    raw = base()
    queues(raw)["provisioningGates"][0]["managedResources"] = ["nvidia.com/gpu"]
    _, warnings = parse_fleet(raw)
    assert any(
        "manages 'nvidia.com/gpu', which this queue does not cover" in str(w) for w in warnings
    )


def test_feature_gate_tables_are_consistent() -> None:
    assert set(FEATURE_GATES) == set(LOCKED_GATES) == set(KUEUE_VERSIONS)
    for version, locked in LOCKED_GATES.items():
        assert set(locked) <= FEATURE_GATES[version]
    assert "ProvisioningACC" not in FEATURE_GATES["0.19.2"] | FEATURE_GATES["0.17.8"]
    assert len(FRAMEWORKS) == len(set(FRAMEWORKS)) == 18


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", "0.5"),
        ("2Gi", str(2**31)),
        ("1e3", "1000"),
        ("16", "16"),
        (8, "8"),
        ("1.5k", "1500"),
    ],
)
def test_quantity_value(text: str | int, value: str) -> None:
    assert quantity_value(text) == quantity_value(value)
