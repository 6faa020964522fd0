"""MultiKueue dispatch sets: a config and check per set, within Kueue's limit of 20 workers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from builders.fleet import render_fleet
from checks.stack import load_from_file, parse_fleet
from config.errors import ConfigError
from config.resolve import dispatch_sets, enabled_workers, with_mirrored_queues
from testkit import crdschema
from testkit.fleetgen import fleet, worker_name
from testkit.mocks import Graph, run_program
from testkit.shared.multikueue_component import CHECK, MKCONFIG, engine  # noqa: F401 - fixture
from testkit.shared.multikueue_config import BASE, worker

KINDS = ("MultiKueueConfig", "AdmissionCheck")


def objects(value: Any, kind: str) -> list[dict[str, Any]]:
    manifests, _ = render_fleet(value)
    return [m.obj for m in manifests if m.obj["kind"] == kind]


def errors(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_fleet(raw)
    return [str(i) for i in info.value.issues if i.severity == "error"]


def test_a_sets_order_is_the_config_order_the_incremental_dispatchers_preference() -> None:
    """Kueue v0.19.2's Incremental dispatcher nominates in the MultiKueueConfig's order
    (docs/kueue-queueing.md, "Worker preference"): the program keeps the config's order and
    never sorts it."""
    raw = fleet(3, split=False)
    for order in (
        [worker_name(3), worker_name(1), worker_name(2)],
        [worker_name(2), worker_name(3), worker_name(1)],
    ):
        raw["multiKueue"] = {**raw.get("multiKueue", {}), "workers": order}
        value, _ = parse_fleet(raw)
        (config,) = objects(value, "MultiKueueConfig")
        assert config["spec"]["clusters"] == order


@pytest.mark.parametrize("n", [2, 20])
def test_one_set_renders_the_objects_stacks_have_today(n: int) -> None:
    """<= 20 workers in one set: exactly the `multikueue` config and check of before."""
    value, _ = parse_fleet(fleet(n, split=False))
    workers = [worker_name(i) for i in range(1, n + 1)]
    labels = {
        "app.kubernetes.io/part-of": "aks-batch-fleet",
        "app.kubernetes.io/component": "multikueue",
    }
    assert objects(value, "MultiKueueConfig") == [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "MultiKueueConfig",
            "metadata": {"name": "multikueue", "labels": labels},
            "spec": {"clusters": workers},
        }
    ]
    assert objects(value, "AdmissionCheck")[0] == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {
            "name": "multikueue",
            "labels": labels,
            "annotations": {"pulumi.com/waitFor": "condition=Active"},
        },
        "spec": {
            "controllerName": "kueue.x-k8s.io/multikueue",
            "parameters": {
                "apiGroup": "kueue.x-k8s.io",
                "kind": "MultiKueueConfig",
                "name": "multikueue",
            },
        },
    }
    (queue,) = [
        o
        for o in objects(value, "ClusterQueue")
        if o["metadata"]["name"] == "batch-1" and "admissionChecksStrategy" in o["spec"]
    ]
    assert queue["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "multikueue"}]}


def test_dev_stack_keeps_one_multikueue_config_and_check() -> None:
    value, _ = load_from_file("dev")
    assert [s.name for s in dispatch_sets(value)] == ["multikueue"]
    assert [o["metadata"]["name"] for o in objects(value, "MultiKueueConfig")] == ["multikueue"]


def test_one_queue_to_more_than_20_workers_is_refused_naming_kueues_limit() -> None:
    found = errors(fleet(100, split=False))
    (issue,) = [i for i in found if "would dispatch to 100 workers" in i]
    assert issue.startswith("multiKueue: ClusterQueue batch-1 would dispatch to 100 workers")
    assert "at most 20" in issue
    assert "spec.clusters maxItems: 20" in issue
    assert "MultipleMultiKueueAdmissionChecks" in issue
    assert "5 dispatching manager ClusterQueues" in issue
    assert "multiKueue.clusterQueueWorkers: {batch-1-1: [worker-001, ..., worker-020]" in issue


def test_a_listed_set_over_20_names_its_key() -> None:
    raw = fleet(22)  # batch-1: 20 workers, batch-2: 2
    raw["multiKueue"]["clusterQueueWorkers"]["batch-2"] = [worker_name(i) for i in range(1, 23)]
    found = errors(raw)
    assert any(
        i.startswith("multiKueue.clusterQueueWorkers.batch-2: ClusterQueue batch-2") for i in found
    )


def test_1_plus_100_in_five_sets_is_valid_and_renders_valid_kueue_objects() -> None:
    value, warnings = parse_fleet(fleet(100))
    assert [w for w in warnings if w.severity == "error"] == []
    sets = dispatch_sets(value)
    assert [s.name for s in sets] == [f"multikueue-batch-{k}" for k in range(1, 6)]
    assert all(len(s.workers) == 20 and len(s.queues) == 1 for s in sets)
    assert len(enabled_workers(value)) == 100
    manifests, _ = render_fleet(value)
    kueue = [m.obj for m in manifests if m.obj["apiVersion"].startswith("kueue.x-k8s.io/")]
    for obj in kueue:
        report = crdschema.validate(obj, "kueue", "v0.19.2")
        assert report.errors == [], (obj["kind"], obj["metadata"]["name"], report.errors)
    # One MultiKueue check per ClusterQueue: Kueue deactivates a queue with two.
    dispatching = [
        o
        for o in kueue
        if o["kind"] == "ClusterQueue"
        and "admissionChecksStrategy" in o["spec"]
        and o["metadata"]["name"].startswith("batch-")
    ]
    assert {o["metadata"]["name"]: o["spec"]["admissionChecksStrategy"] for o in dispatching} == {
        f"batch-{k}": {"admissionChecks": [{"name": f"multikueue-batch-{k}"}]} for k in range(1, 6)
    }


def test_each_worker_gets_only_the_local_queues_of_queues_reaching_it() -> None:
    value, _ = parse_fleet(fleet(41))
    deployed = {c.name: c for c in with_mirrored_queues(value).clusters}
    names = {n: [lq.name for lq in c.queues.local_queues] for n, c in deployed.items()}
    assert names[worker_name(1)] == ["batch-1"]
    assert names[worker_name(21)] == ["batch-2"]
    assert names[worker_name(41)] == ["batch-3"]


def gpu_cpu_config() -> dict[str, Any]:
    """Two manager queues: `to-workers` (CPU) to worker-1/2, `gpu` to worker-3 only."""
    raw = copy.deepcopy(BASE)
    manager = raw["clusters"][0]["queues"]
    gpu = copy.deepcopy(manager["clusterQueues"][0]) | {"name": "gpu"}
    manager["clusterQueues"].append(gpu)
    manager["localQueues"].append({"name": "gpu", "namespace": "team-a", "clusterQueue": "gpu"})
    raw["clusters"].append(worker("worker-3"))
    raw["multiKueue"] = {
        "workers": ["worker-1", "worker-2"],
        "clusterQueueWorkers": {"gpu": ["worker-3"]},
        "workerClusterQueues": {"to-workers": "batch", "gpu": "batch"},
    }
    return raw


def test_per_queue_sets_send_gpu_and_cpu_work_to_different_workers() -> None:
    value, _ = parse_fleet(gpu_cpu_config())
    assert [(s.name, s.workers, s.queues) for s in dispatch_sets(value)] == [
        ("multikueue", ("worker-1", "worker-2"), ("to-workers",)),
        ("multikueue-gpu", ("worker-3",), ("gpu",)),
    ]
    deployed = {c.name: c for c in with_mirrored_queues(value).clusters}
    assert [lq.name for lq in deployed["worker-1"].queues.local_queues] == ["team-a"]
    assert [lq.name for lq in deployed["worker-3"].queues.local_queues] == ["gpu"]


def test_queue_workers_key_must_be_a_dispatching_queue_with_a_usable_name() -> None:
    raw = gpu_cpu_config()
    raw["multiKueue"]["clusterQueueWorkers"]["nope"] = ["worker-3"]
    assert any(
        i.startswith("multiKueue.clusterQueueWorkers.nope: 'nope' is not a dispatching")
        for i in errors(raw)
    )
    raw = gpu_cpu_config()
    raw["multiKueue"]["clusterQueueWorkers"]["gpu"] = ["worker-9", "manager"]
    found = errors(raw)
    assert any(
        i.startswith("multiKueue.clusterQueueWorkers.gpu[0]: no cluster named 'worker-9'")
        for i in found
    )
    assert any(
        i.startswith("multiKueue.clusterQueueWorkers.gpu[1]: 'manager' is the manager")
        for i in found
    )


def test_program_registers_one_config_per_set_and_keeps_the_default_urn(engine: Graph) -> None:  # noqa: F811
    from components.fleet import Fleet, FleetArgs  # noqa: PLC0415

    value, _ = parse_fleet(gpu_cpu_config())
    run_program(lambda: Fleet("fleet", FleetArgs(config=value, stack="test")))
    configs = {r.name: r.inputs["spec"]["clusters"] for r in engine.of_type(MKCONFIG)}
    assert configs == {
        "fleet-multikueue-manager-config": ["worker-1", "worker-2"],
        "fleet-multikueue-manager-config-multikueue-gpu": ["worker-3"],
    }
    checks = {r.inputs["metadata"]["name"]: r for r in engine.of_type(CHECK)}
    assert {n: c.inputs["spec"]["parameters"]["name"] for n, c in checks.items()} == {
        "multikueue": "multikueue",
        "multikueue-gpu": "multikueue-gpu",
    }
    queues = engine.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
    gpu = next(r for r in queues if r.inputs["metadata"]["name"] == "gpu")
    assert checks["multikueue-gpu"].urn in gpu.dependencies


def test_validation_compares_no_cluster_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """`clusters.index(worker)` per worker compared clusters N^2/2 times; a name index does not."""
    from checks import validate  # noqa: PLC0415
    from config.models import ClusterConfig  # noqa: PLC0415

    value, _ = parse_fleet(fleet(60))
    calls = []
    original = ClusterConfig.__eq__

    def counting(self: ClusterConfig, other: object) -> bool:
        calls.append(1)
        return original(self, other)

    monkeypatch.setattr(ClusterConfig, "__eq__", counting)
    validate(value)
    assert len(calls) < 60


def test_an_unused_default_set_warns() -> None:
    raw = gpu_cpu_config()
    raw["multiKueue"]["clusterQueueWorkers"]["to-workers"] = ["worker-1"]
    _, warnings = parse_fleet(raw)
    assert [w.path for w in warnings if "default set" in w.message] == ["multiKueue.workers"]
