"""MultiKueue config: workers, rotation, mirroring, gate conflicts, manager quota; key paths."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest
import yaml

from checks import validate
from checks.capacity import manager_quotas
from checks.stack import parse_fleet
from config.errors import ConfigError
from config.resolve import (
    dispatching_queues,
    enabled_workers,
    mirrored_queues,
    rotation_of,
    with_mirrored_queues,
)
from testkit.repo import ROOT
from testkit.shared.multikueue_config import BASE, worker
from upstream.k8s import format_quantity


def raw(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(BASE)
    out.update(changes)
    if out.get("kueue", {}).get("version") == "0.17.8":
        out.setdefault("kubernetesVersion", "1.35")  # Kueue 0.17's newest tested minor
    return out


def issues_for(config: dict[str, Any]) -> list[str]:
    try:
        _, warnings = parse_fleet(config)
    except ConfigError as err:
        return [str(i) for i in err.issues]
    return [str(w) for w in warnings]


def test_base_is_valid_and_resolves_defaults() -> None:
    fleet, warnings = parse_fleet(BASE)
    assert warnings == []
    assert enabled_workers(fleet) == ["worker-1", "worker-2"]
    assert dispatching_queues(fleet) == ["to-workers"]
    assert rotation_of(fleet, "worker-2") == 0


def test_multikueue_off_by_default() -> None:
    config = raw()
    del config["multiKueue"]
    fleet, _ = parse_fleet(config | {"clusters": [BASE["clusters"][1] | {"role": "standalone"}]})
    assert fleet.multi_kueue is None
    assert enabled_workers(fleet) == []


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            {"workers": ["manager"]},
            "multiKueue.workers[0]: 'manager' is the manager: MultiKueue never dispatches",
        ),
        ({"workers": ["worker-9"]}, "multiKueue.workers[0]: no cluster named 'worker-9'"),
        ({"workers": ["worker-1", "worker-1"]}, "multiKueue.workers: 'worker-1' is listed more"),
        ({"workers": []}, "multiKueue.workers: List should have at least 1 item"),
        ({"rotation": {"worker-3": 1}}, "multiKueue.rotation.worker-3: 'worker-3' is not a Multi"),
        ({"rotation": {"worker-1": -1}}, "multiKueue.rotation.worker-1: must be 0..1000000"),
        ({"clusterQueues": ["nope"]}, "multiKueue.clusterQueues[0]: no ClusterQueue 'nope' on"),
        ({"workerClusterQueues": {"nope": "batch"}}, "multiKueue.workerClusterQueues.nope: 'nope'"),
        ({"connectTimeoutSeconds": 5}, "multiKueue.connectTimeoutSeconds: Input should be great"),
        ({"connectTimeoutSeconds": 7200}, "multiKueue.connectTimeoutSeconds: Input should be less"),
        ({"extra": 1}, "multiKueue.extra: unknown key"),
    ],
)
def test_worker_list_errors_name_their_key(settings: dict[str, Any], expected: str) -> None:
    config = raw(multiKueue={"workerClusterQueues": {"to-workers": "batch"}, **settings})
    found = issues_for(config)
    assert any(i.startswith(expected) for i in found), found


def test_standalone_cannot_be_a_worker() -> None:
    config = raw(multiKueue={"workers": ["solo"], "workerClusterQueues": {"to-workers": "batch"}})
    config["clusters"].append(worker("solo") | {"role": "standalone"})
    assert "multiKueue.workers[0]: 'solo' has role 'standalone'" in " ".join(issues_for(config))


def test_at_most_20_workers() -> None:
    config = raw()
    config["clusters"] += [worker(f"w{i}") for i in range(19)]
    found = issues_for(config)
    assert any(
        i.startswith("multiKueue: ClusterQueue to-workers would dispatch to 21 workers, but Kueue")
        and "maxItems: 20" in i
        for i in found
    ), found


def test_workers_needing_the_same_object_name() -> None:
    config = raw()
    config["clusters"].append(worker("Worker_1"))
    found = " ".join(issues_for(config))
    assert "would share the MultiKueueCluster name 'worker-1'" in found


def test_multikueue_needs_a_manager() -> None:
    config = raw()
    config["clusters"][0]["role"] = "standalone"
    found = issues_for(config)
    assert any(i.startswith("multiKueue: needs a cluster with role 'manager'") for i in found)


def test_framework_without_worker_rbac_is_an_error() -> None:
    config = raw(kueue={"frameworks": ["batch/job", "trainer.kubeflow.org/trainjob"]})
    found = issues_for(config)
    assert any(
        i.startswith("kueue.frameworks[1]: MultiKueue dispatches trainer.kubeflow.org/trainjob")
        for i in found
    ), found
    ok = raw(kueue={"version": "0.17.8", "frameworks": ["batch/job", "pod"]})
    assert issues_for(ok) == []
    # Ray has worker RBAC; what is left is that this stack installs no Ray CRDs.
    ray = issues_for(raw(kueue={"version": "0.17.8", "frameworks": ["batch/job", "ray.io/rayjob"]}))
    assert [i.split(" needs ")[0] for i in ray] == ["kueue.frameworks[1]: ray.io/rayjob"]


def test_rayservice_has_worker_rbac_only_from_0_19() -> None:
    frameworks = ["batch/job", "ray.io/rayservice"]
    new = issues_for(raw(kueue={"frameworks": frameworks}))
    assert not any("MultiKueue dispatches" in i for i in new), new
    old = issues_for(raw(kueue={"version": "0.17.8", "frameworks": frameworks}))
    assert any(
        i.startswith("kueue.frameworks[1]: MultiKueue dispatches ray.io/rayservice") for i in old
    )


def test_dispatching_queue_with_a_provisioning_gate_is_rejected_with_the_reason() -> None:
    config = raw()
    queues = config["clusters"][0]["queues"]
    queues["provisioningGates"] = [{"name": "cas"}]
    queues["clusterQueues"][0]["provisioningGate"] = {"name": "cas"}
    found = issues_for(config)
    hit = [i for i in found if i.startswith("clusters[0].queues.clusterQueues[0].provisioningGate")]
    assert hit, found
    assert "MultiKueueWithProvisioningRequest" in hit[0]


def test_gates_on_worker_queues_are_fine() -> None:
    config = raw()
    for w in config["clusters"][1:]:
        w["queues"]["provisioningGates"] = [{"name": "cas"}]
        w["queues"]["clusterQueues"][0]["provisioningGate"] = {"name": "cas"}
    assert [i for i in issues_for(config) if "provisioningGate" in i] == []


def test_manager_only_local_queue_needs_permission() -> None:
    config = raw()
    queues = config["clusters"][0]["queues"]
    local_cq = copy.deepcopy(queues["clusterQueues"][0]) | {"name": "local"}
    queues["clusterQueues"].append(local_cq)
    queues["localQueues"].append({"name": "ops", "namespace": "team-a", "clusterQueue": "local"})
    config["multiKueue"]["clusterQueues"] = ["to-workers"]
    found = issues_for(config)
    assert any(
        i.startswith("clusters[0].queues.localQueues[1]: LocalQueue team-a/ops stays on")
        for i in found
    )
    config["multiKueue"]["allowUnmirrored"] = [
        {"cluster": "manager", "namespace": "team-a", "name": "ops"}
    ]
    assert not any("localQueues[1]" in i for i in issues_for(config))


def test_worker_only_and_duplicated_local_queues() -> None:
    config = raw()
    w = config["clusters"][1]["queues"]
    w["namespaces"] = [{"name": "team-a"}, {"name": "scratch"}]
    w["localQueues"] = [
        {"name": "team-a", "namespace": "team-a", "clusterQueue": "batch"},
        {"name": "mine", "namespace": "scratch", "clusterQueue": "batch"},
    ]
    found = issues_for(config)
    assert any(
        i.startswith("clusters[1].queues.localQueues[0]: LocalQueue team-a/team-a is mirrored")
        for i in found
    ), found
    assert any(
        i.startswith("clusters[1].queues.localQueues[1]: LocalQueue scratch/mine exists only on")
        for i in found
    ), found
    config["multiKueue"]["allowUnmirrored"] = [
        {"cluster": "worker-1", "namespace": "scratch", "name": "mine"}
    ]
    assert not any("localQueues[1]" in i for i in issues_for(config))


def test_mirrored_local_queue_needs_the_worker_cluster_queue() -> None:
    config = raw(multiKueue={})
    found = issues_for(config)
    assert (
        "clusters[0].queues.localQueues[0].clusterQueue: mirrored to worker 'worker-1', which has "
        "no ClusterQueue 'to-workers'"
    ) in " ".join(found)


def test_worker_cluster_queue_must_select_the_namespace() -> None:
    config = raw()
    cq = config["clusters"][2]["queues"]["clusterQueues"][0]
    cq["namespaceSelector"] = {"matchLabels": {"team": "b"}}
    found = issues_for(config)
    assert any(
        i.startswith("clusters[0].queues.localQueues[0].namespace: worker 'worker-2'")
        for i in found
    ), found


def test_mirroring_adds_namespaces_and_local_queues_to_workers() -> None:
    fleet, _ = parse_fleet(BASE)
    w1 = fleet.cluster("worker-1")
    assert w1 is not None
    queues = mirrored_queues(fleet, w1)
    assert [(n.name, n.labels) for n in queues.namespaces] == [("team-a", {"team": "a"})]
    assert [(lq.namespace, lq.name, lq.cluster_queue) for lq in queues.local_queues] == [
        ("team-a", "team-a", "batch")
    ]
    deployed = with_mirrored_queues(fleet)
    manager = deployed.cluster("manager")
    assert manager is not None
    assert manager.queues == fleet.clusters[0].queues
    # The mirrored fleet is what deploys: it must pass every check the config does.
    assert [
        i for i in validate(deployed) if i.severity == "error" and "localQueues" not in i.path
    ] == []


def test_worker_namespace_is_not_duplicated() -> None:
    config = raw()
    config["clusters"][1]["queues"]["namespaces"] = [{"name": "team-a", "labels": {"x": "y"}}]
    fleet, _ = parse_fleet(config)
    w1 = fleet.cluster("worker-1")
    assert w1 is not None
    assert [(n.name, n.labels) for n in mirrored_queues(fleet, w1).namespaces] == [
        ("team-a", {"x": "y"})
    ]


def test_manager_quota_is_the_workers_sum() -> None:
    fleet, _ = parse_fleet(BASE)
    rows = {r.resource: r for r in manager_quotas(fleet)}
    assert rows["cpu"].workers_total == Decimal(16)
    assert rows["cpu"].per_worker == {"worker-1": Decimal(8), "worker-2": Decimal(8)}
    assert rows["memory"].suggested == "64Gi"
    assert {r.status for r in rows.values()} == {"ok"}
    assert rows["cpu"].path == "clusters[0].queues.clusterQueues[0].resourceGroups"


@pytest.mark.parametrize(
    ("cpu", "expected"),
    [
        (4, "cpu: manager quota 4 < the workers' 16: workers sit idle"),
        (64, "cpu: manager quota 64 > the workers' 16: the manager dispatches jobs"),
    ],
)
def test_manager_quota_mismatch_warns(cpu: int, expected: str) -> None:
    config = raw()
    flavor = config["clusters"][0]["queues"]["clusterQueues"][0]["resourceGroups"][0]["flavors"][0]
    flavor["resources"][0]["nominalQuota"] = cpu
    found = issues_for(config)
    assert any(
        i.startswith("clusters[0].queues.clusterQueues[0].resourceGroups: " + expected)
        for i in found
    ), found


@pytest.mark.parametrize(
    ("resource", "amount", "text"),
    [
        ("cpu", Decimal(16), "16"),
        ("cpu", Decimal("0.25"), "250m"),
        ("memory", Decimal(64 * 2**30), "64Gi"),
        ("memory", Decimal(1536 * 2**20), "1536Mi"),
        ("memory", Decimal(1000), "1000"),
        ("nvidia.com/gpu", Decimal(4), "4"),
    ],
)
def test_format_quantity(resource: str, amount: Decimal, text: str) -> None:
    assert format_quantity(resource, amount) == text


def test_example_job_targets_a_mirrored_local_queue() -> None:
    job = yaml.safe_load((ROOT / "examples" / "sleep-job.yaml").read_text())
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    assert (job["spec"]["completions"], job["spec"]["parallelism"]) == (3, 3)
    assert job["spec"]["suspend"] is True
    fleet, _ = parse_fleet(BASE)
    namespace = job["metadata"]["namespace"]
    queue = job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    for name in enabled_workers(fleet):
        cluster = fleet.cluster(name)
        assert cluster is not None
        local = mirrored_queues(fleet, cluster).local_queues
        assert (namespace, queue) in {(lq.namespace, lq.name) for lq in local}
