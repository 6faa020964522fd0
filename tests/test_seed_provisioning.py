"""The AKS "Kueue + cluster autoscaler" how-to's scenario as config.

The expected objects are the how-to's `40-autoscale-queue.yaml` (Azure/AKS examples/kueue-and-ray-
on-aks, final version: namespace cas-kueue-demo, the v1beta2 shapes, the `admissionChecksStrategy`
gate with `onFlavors`), written out here as data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from checks.stack import load_from_file, parse_fleet
from config.resolve import with_mirrored_queues
from testkit.fleetvalues import render_kueue
from testkit.shared.seed_provisioning import SEED_RAW, seed_fleet
from upstream.aks import lookup_vm, node_allocatable
from upstream.k8s import quantity_value
from upstream.kueue import QUEUE_LABEL
from upstream.podsecurity import labels as pod_security_labels

ROOT = Path(__file__).resolve().parent.parent


SEED_OBJECTS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cas-kueue-demo"}},
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "scalepool"},
        "spec": {"nodeLabels": {"agentpool": "scalepool"}},
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {"name": "cas-provisioning"},
        "spec": {
            "controllerName": "kueue.x-k8s.io/provisioning-request",
            "parameters": {
                "apiGroup": "kueue.x-k8s.io",
                "kind": "ProvisioningRequestConfig",
                "name": "cas-provreq-config",
            },
        },
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": "cas-provreq-config"},
        "spec": {
            "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
            "managedResources": ["cpu"],
        },
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cas-cluster-queue"},
        "spec": {
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "scalepool",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "100"},
                                {"name": "memory", "nominalQuota": "200Gi"},
                            ],
                        }
                    ],
                }
            ],
            "admissionChecksStrategy": {
                "admissionChecks": [{"name": "cas-provisioning", "onFlavors": ["scalepool"]}]
            },
        },
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "cas-local-queue", "namespace": "cas-kueue-demo"},
        "spec": {"clusterQueue": "cas-cluster-queue"},
    },
]


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


def test_seed_config_renders_the_seed_objects() -> None:
    rendered = [m.obj for m in render_kueue(seed_fleet())]
    assert {m.target for m in render_kueue(seed_fleet())} == {"aks-kueue"}
    assert sorted(map(_key, rendered)) == sorted(map(_key, SEED_OBJECTS))
    expected = {_key(o): o for o in SEED_OBJECTS}
    for obj in rendered:
        if obj["kind"] == "Namespace":
            # Beyond the how-to: Pod Security labels on every team namespace.
            labels = obj["metadata"].pop("labels")
            assert labels == pod_security_labels("restricted", "latest")
        assert obj == expected[_key(obj)], _key(obj)


def test_seed_config_is_accepted_with_one_hint() -> None:
    # The how-to's quota (100 CPU) is not checked against the pool: its flavor is not bound by
    # `pool:`. Config says so instead of guessing.
    _, warnings = parse_fleet(SEED_RAW)
    assert [str(w) for w in warnings] == [
        "clusters[0].queues.flavors[0].nodeLabels: selects pool 'scalepool' by label: use "
        "`pool: scalepool` to get its taints as tolerations and a capacity check"
    ]


def _job() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "examples" / "cas-batch-job.yaml").read_text())


def test_example_job_targets_a_dev_local_queue() -> None:
    job = _job()
    fleet, _ = load_from_file("dev")
    fleet = with_mirrored_queues(fleet)  # the workers' LocalQueues are the manager's, mirrored
    meta, spec = job["metadata"], job["spec"]
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    assert spec["suspend"] is True  # Kueue admits it (after the gate) by unsuspending it
    for worker in fleet.workers:
        q = worker.queues
        lq = next(
            lq
            for lq in q.local_queues
            if (lq.namespace, lq.name) == (meta["namespace"], meta["labels"][QUEUE_LABEL])
        )
        cq = q.cluster_queue(lq.cluster_queue)
        assert cq is not None
        assert cq.provisioning_gate is not None
        flavor = q.flavor(cq.resource_groups[0].flavors[0].name)
        pool = worker.pool(flavor.pool or "") if flavor else None
        assert pool is not None
        # Like the how-to's job: all pods fit the queue, but not one node, so the gate must
        # scale the pool up by more than one node at once.
        (container,) = spec["template"]["spec"]["containers"]
        cpu = quantity_value(container["resources"]["requests"]["cpu"]) * spec["parallelism"]
        quota = quantity_value(cq.resource_groups[0].flavors[0].resources[0].nominal_quota)
        shape = lookup_vm(pool.vm_size)
        assert shape is not None
        node_cpu = node_allocatable(shape, 30).cpu_millis / 1000
        assert node_cpu < cpu <= quota
