"""Semantic checks: the three defects that left the committed prod stack dispatching nothing.

Each defect is reproduced by undoing one part of prod's fix; the committed prod must pass, and
dispatch team-a's CPU and GPU work to the workers its comments name.
"""

from __future__ import annotations

import copy
import runpy
from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from builders.fleet import render_fleet
from checks.stack import load_from_file, parse_fleet
from config.errors import ConfigError, Issue
from config.loader import read_stack_file
from config.resolve import dispatch_sets, mirrored_queues
from testkit.mocks import Graph, built_stack, run_program, set_stack_config
from testkit.repo import ROOT

Raw = dict[str, Any]


def prod_raw() -> Raw:
    raw, _ = read_stack_file("prod")
    return copy.deepcopy(raw)


def cluster(raw: Raw, name: str) -> Raw:
    return next(c for c in raw["clusters"] if c["name"] == name)


def errors_for(raw: Raw) -> list[str]:
    try:
        parse_fleet(raw)
    except ConfigError as err:
        return [str(i) for i in err.issues if i.severity == "error"]
    return []


def warnings_for(raw: Raw) -> list[str]:
    _, warnings = parse_fleet(raw)
    return [str(w) for w in warnings]


def no_local_queues(raw: Raw) -> None:
    queues = cluster(raw, "manager")["queues"]
    queues["localQueues"] = [lq for lq in queues["localQueues"] if lq["name"] != "team-a"]


def with_jobset(raw: Raw) -> None:
    raw["kueue"]["frameworks"].append("jobset.x-k8s.io/jobset")


def gate_manages_gpus_only(raw: Raw) -> None:
    cluster(raw, "worker-4")["queues"]["provisioningGates"][0]["managedResources"] = [
        "nvidia.com/gpu"
    ]


# The messages preflight prints for prod's three defects, key path first.
DEFECTS: list[tuple[Callable[[Raw], None], str]] = [
    (
        no_local_queues,
        "clusters[0].queues.clusterQueues[0]: dispatching ClusterQueue 'team-a' has no "
        "LocalQueue on the manager: no job can be submitted to it and none is mirrored to the "
        "workers; add {name: team-a, namespace: team-a, clusterQueue: team-a} to "
        "clusters[0].queues.localQueues",
    ),
    (
        with_jobset,
        "kueue.frameworks[1]: jobset.x-k8s.io/jobset needs the CRD jobsets.jobset.x-k8s.io on "
        "the manager and every worker, and this stack installs it on none: the manager's "
        "MultiKueue watch of it fails on each worker, no MultiKueueCluster becomes Active and "
        "nothing is dispatched; declare it run by someone else with the version on the manager "
        "and every worker (operators.installedElsewhere: {jobset.x-k8s.io/jobset: {version: "
        "...}}), or remove it from kueue.frameworks",
    ),
    (
        gate_manages_gpus_only,
        "clusters[4].queues.clusterQueues[0].resourceGroups[0].flavors[0]: flavor 'a100' is "
        "behind gate 'gpu-scaleup', which manages only nvidia.com/gpu, but ClusterQueue "
        "'team-a-gpu' also covers cpu, memory on it: a CPU-only workload passes the gate at once "
        "(NoRequestNeeded) and runs on this flavor's nodes",
    ),
]


def test_committed_prod_passes() -> None:
    assert errors_for(prod_raw()) == []
    load_from_file("prod")  # what preflight and the program do


@pytest.mark.parametrize(("defect", "message"), DEFECTS, ids=lambda d: getattr(d, "__name__", ""))
def test_each_prod_defect_is_refused_with_its_key_path(
    defect: Callable[[Raw], None], message: str
) -> None:
    raw = prod_raw()
    defect(raw)
    found = errors_for(raw)
    assert len(found) == 1, found
    assert found[0].startswith(message), found[0]


def test_all_three_defects_at_once() -> None:
    raw = prod_raw()
    for defect, _ in DEFECTS:
        defect(raw)
    paths = [e.split(": ", 1)[0] for e in errors_for(raw)]
    assert paths == [
        "clusters[0].queues.clusterQueues[0]",
        "kueue.frameworks[1]",
        "clusters[4].queues.clusterQueues[0].resourceGroups[0].flavors[0]",
    ]


def test_prod_dispatches_cpu_and_gpu_work_to_separate_workers() -> None:
    fleet, _ = load_from_file("prod")
    assert {s.name: list(s.workers) for s in dispatch_sets(fleet)} == {
        "multikueue-team-a": ["worker-1", "worker-2", "worker-3"],
        "multikueue-team-a-gpu": ["worker-4"],
    }
    local = {
        c.name: sorted(f"{lq.namespace}/{lq.name}->{lq.cluster_queue}" for lq in q.local_queues)
        for c in fleet.clusters
        for q in [mirrored_queues(fleet, c)]
    }
    assert local == {
        "manager": ["team-a/team-a->team-a", "team-a/team-a-gpu->team-a-gpu"],
        "worker-1": ["team-a/team-a->team-a", "team-b/team-b->team-b"],
        "worker-2": ["team-a/team-a->team-a"],
        "worker-3": ["team-a/team-a->team-a"],
        "worker-4": ["team-a/team-a-gpu->team-a-gpu"],
    }
    manifests, _ = render_fleet(fleet)
    queues = {
        m.name: [c["name"] for c in m.obj["spec"]["admissionChecksStrategy"]["admissionChecks"]]
        for m in manifests
        if m.target == "manager" and m.kind == "ClusterQueue"
    }
    assert queues == {"team-a": ["multikueue-team-a"], "team-a-gpu": ["multikueue-team-a-gpu"]}
    configs = {m.name: m.obj["spec"]["clusters"] for m in manifests if m.kind == "MultiKueueConfig"}
    assert configs == {
        "multikueue-team-a": ["worker-1", "worker-2", "worker-3"],
        "multikueue-team-a-gpu": ["worker-4"],
    }


@pytest.fixture(scope="module")
def prod_graph() -> Graph:
    return built_stack("prod").graph


def test_prod_graph_registers_a_config_and_check_per_dispatch_set(prod_graph: Graph) -> None:
    kinds = {
        (r.inputs["kind"], r.inputs["metadata"]["name"])
        for r in prod_graph.of_type("kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueConfig")
        + prod_graph.of_type("kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck")
    }
    assert {
        ("MultiKueueConfig", "multikueue-team-a"),
        ("MultiKueueConfig", "multikueue-team-a-gpu"),
        ("AdmissionCheck", "multikueue-team-a"),
        ("AdmissionCheck", "multikueue-team-a-gpu"),
    } <= kinds
    assert ("MultiKueueConfig", "multikueue") not in kinds


def test_queue_without_local_queue_elsewhere_is_a_warning() -> None:
    raw = prod_raw()
    cluster(raw, "worker-1")["queues"]["localQueues"] = []
    del raw["multiKueue"]["allowUnmirrored"]
    found = warnings_for(raw)
    assert (
        "clusters[1].queues.clusterQueues[1]: no LocalQueue points at ClusterQueue 'team-b' "
        "(declared or mirrored): nothing can be submitted to it"
    ) in found


def test_framework_crd_without_multikueue_is_a_warning() -> None:
    raw: Raw = {
        "location": "westeurope",
        "kueue": {"frameworks": ["batch/job", "ray.io/rayjob"]},
        "clusters": [{"name": "solo", "role": "standalone"}],
    }
    assert warnings_for(raw) == [
        "kueue.frameworks[1]: ray.io/rayjob needs the CRD rayjobs.ray.io, which this stack does "
        "not install: Kueue skips the integration until that CRD exists on the cluster; let "
        "the stack install its operator on the workers (operators.kuberay: {}, KubeRay operator "
        "1.5.0), or declare it run by someone else with the version on the manager and every "
        "worker (operators.installedElsewhere: {ray.io/rayjob: {version: ...}}), or remove it "
        "from kueue.frameworks"
    ]


@pytest.mark.parametrize(
    "managed",
    [
        [],  # the gate manages every resource: CPU work asks for a scale-up too
        ["nvidia.com/gpu", "cpu"],  # CPU work requests cpu, which the gate manages
    ],
)
def test_gates_that_cover_cpu_work_pass(managed: list[str]) -> None:
    raw = prod_raw()
    gate = cluster(raw, "worker-4")["queues"]["provisioningGates"][0]
    gate["managedResources"] = managed
    assert errors_for(raw) == []


def test_gpu_gate_on_explicit_on_flavors_only_judges_those_flavors() -> None:
    raw = prod_raw()
    gate_manages_gpus_only(raw)
    w4 = cluster(raw, "worker-4")
    w4["pools"].append({"name": "cpu", "vmSize": "Standard_D16ds_v5", "minCount": 0, "maxCount": 2})
    w4["queues"]["flavors"].append({"name": "cpu", "pool": "cpu"})
    group = w4["queues"]["clusterQueues"][0]["resourceGroups"][0]
    group["flavors"].append(
        {
            "name": "cpu",
            "resources": [
                {"name": "cpu", "nominalQuota": "10"},
                {"name": "memory", "nominalQuota": "40Gi"},
                {"name": "nvidia.com/gpu", "nominalQuota": "0"},
            ],
        }
    )
    w4["queues"]["clusterQueues"][0]["provisioningGate"]["onFlavors"] = ["cpu"]
    found = [e for e in errors_for(raw) if "behind gate" in e]
    assert [e.split(": ", 1)[0] for e in found] == [
        "clusters[4].queues.clusterQueues[0].resourceGroups[0].flavors[1]"
    ]


@pytest.mark.parametrize(
    ("workers", "expected"),
    [
        (
            {"nope": ["worker-1"]},
            "multiKueue.clusterQueueWorkers.nope: 'nope' is not a dispatching",
        ),
        (
            {"team-a": ["worker-9"]},
            "multiKueue.clusterQueueWorkers.team-a[0]: no cluster named 'worker-9'",
        ),
        ({"team-a": []}, "multiKueue.clusterQueueWorkers.team-a: a MultiKueueConfig lists 1..20"),
        (
            {"team-a": ["worker-1", "worker-1"]},
            "multiKueue.clusterQueueWorkers.team-a: 'worker-1' is listed more than once",
        ),
        (
            {"team-a-gpu": ["worker-1"]},
            "clusters[0].queues.localQueues[1].clusterQueue: mirrored to worker 'worker-1', which "
            "has no ClusterQueue 'team-a-gpu'",
        ),
    ],
)
def test_cluster_queue_workers_errors_name_their_key(
    workers: dict[str, list[str]], expected: str
) -> None:
    raw = prod_raw()
    raw["multiKueue"]["clusterQueueWorkers"].update(workers)
    found = errors_for(raw)
    assert any(e.startswith(expected) for e in found), found


def test_each_multikueue_check_waits_for_its_own_workers_clusters(prod_graph: Graph) -> None:
    # A MultiKueue AdmissionCheck is Active only once one of its MultiKueueClusters is: its
    # condition wait must not start before they exist (review L1).
    clusters = {
        r.inputs["metadata"]["name"]: r.urn
        for r in prod_graph.of_type("kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster")
    }
    checks = {
        r.inputs["metadata"]["name"]: set(r.dependencies)
        for r in prod_graph.of_type("kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck")
        if r.inputs["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue"
    }
    assert {
        name: {w for w, urn in clusters.items() if urn in deps} for name, deps in checks.items()
    } == {
        "multikueue-team-a": {"worker-1", "worker-2", "worker-3"},
        "multikueue-team-a-gpu": {"worker-4"},
    }


@pytest.mark.parametrize(("defect", "message"), DEFECTS, ids=lambda d: getattr(d, "__name__", ""))
def test_the_program_refuses_each_prod_defect_before_any_resource(
    graph: Graph, defect: Callable[[Raw], None], message: str
) -> None:
    raw, _ = read_stack_file("prod")
    defect(raw)
    set_stack_config(raw)
    with pytest.raises(pulumi.RunError) as err:
        run_program(lambda: runpy.run_path(str(ROOT / "__main__.py")))
    # The program names the items in the path, as the user wrote them (clusters[worker-4]...).
    path, text = message.split(": ", 1)
    named = ConfigError([Issue(path, text)], data=raw)
    assert str(named.named(named.issues[0])) in str(err.value)
    assert graph.resources == []
