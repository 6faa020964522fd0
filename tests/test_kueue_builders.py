"""Kueue builders: Helm values, queue objects, quota vs capacity, AKS preconditions. Pure data."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from builders.kueue import helm_values, kueue_releases
from builders.kueue_queues import cluster_queue
from checks.capacity import quota_report
from checks.preconditions import provisioning_warnings
from checks.stack import load_from_file, parse_fleet
from config.models import FleetConfig
from config.resolve import multikueue_checks, with_mirrored_queues
from preflight.sources import _quota_section as quota_section  # pyright: ignore[reportPrivateUsage]
from testkit.fleetvalues import render_kueue
from testkit.repo import ROOT
from testkit.shared.kueue_config import BASE
from upstream.kueue import KUEUE_CHART


def stack(name: str) -> FleetConfig:
    return load_from_file(name)[0]


def fleet_of(raw: dict[str, Any]) -> FleetConfig:
    return parse_fleet(raw)[0]


# The chart default Configuration at v0.19.2 (charts/kueue/values.yaml), our frameworks added,
# and the ClusterQueue resource gauges on (kueue.configuration.metrics, docs/metrics.md).
DEV_MANAGER_CONFIG_0_19_2 = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 10,
            "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "clientConnection": {"qps": 300, "burst": 500},
    "integrations": {"frameworks": ["batch/job"]},
}


def test_cluster_queue_resource_metrics_can_be_turned_off() -> None:
    raw = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]["aks-batch-fleet:fleet"]
    raw["kueue"]["configuration"] = {"metrics": {"enableClusterQueueResources": False}}
    raw["location"] = "westeurope"
    fleet = fleet_of(raw)
    config = yaml.safe_load(
        kueue_releases(fleet)[1].values["managerConfig"]["controllerManagerConfigYaml"]
    )
    assert config["metrics"] == {"bindAddress": ":8443"}  # the chart's, Kueue's default: off


def test_dev_helm_values_are_pinned() -> None:
    releases = kueue_releases(stack("dev"))
    assert [(r.target, r.release, r.chart, r.version, r.namespace) for r in releases] == [
        (c, "kueue", KUEUE_CHART, "0.19.2", "kueue-system")
        for c in ("manager", "worker-1", "worker-2")
    ]
    for release in releases:
        values = copy.deepcopy(release.values)
        config = yaml.safe_load(values["managerConfig"].pop("controllerManagerConfigYaml"))
        # Dev states Kueue's default dispatcher on purpose (Pulumi.dev.yaml); only the
        # manager has a multiKueue block.
        dispatch = (
            {"multiKueue": {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"}}
            if release.target == "manager"
            else {}
        )
        assert config == {**DEV_MANAGER_CONFIG_0_19_2, **dispatch}
        # Kueue 0.19 runs waitForPodsReady unless told otherwise: the manager is told.
        gates = (
            [{"name": "DisableWaitForPodsReady", "enabled": True}]
            if release.target == "manager"
            else []
        )
        assert values == {
            "controllerManager": {
                "featureGates": gates,
                "nodeSelector": {"kubernetes.azure.com/agentpool": "system"},
                "tolerations": [
                    {"key": "CriticalAddonsOnly", "operator": "Exists", "effect": "NoSchedule"}
                ],
            },
            "managerConfig": {},
        }


def test_values_follow_the_config() -> None:
    raw = copy.deepcopy(BASE)
    # Kueue 0.17 runs on Kubernetes up to 1.35 (checks.upgrades).
    raw["kubernetesVersion"] = "1.35"
    raw["kueue"] = {
        "version": "0.17.8",
        "frameworks": ["batch/job", "jobset.x-k8s.io/jobset"],
        "featureGates": {"TopologyAwareScheduling": False, "MultiKueueClusterProfile": True},
        "multiKueue": {"gcInterval": "2m", "dispatcher": "Incremental", "origin": "fleet-a"},
        "replicas": 2,
        "values": {"enablePrometheus": True},
    }
    raw["clusters"][0]["systemPool"] = {"name": "sys", "onlyCriticalAddons": False}
    fleet = fleet_of(raw)
    values = helm_values(fleet.kueue, fleet.clusters[0])
    manager = values["controllerManager"]
    # The one place for gates: the chart turns this list into --feature-gates.
    assert manager["featureGates"] == [
        {"name": "MultiKueueClusterProfile", "enabled": True},
        {"name": "TopologyAwareScheduling", "enabled": False},
    ]
    assert manager["tolerations"] == []  # the system pool is not tainted
    assert manager["nodeSelector"] == {"kubernetes.azure.com/agentpool": "sys"}
    assert manager["replicas"] == 2
    assert values["enablePrometheus"] is True
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert "featureGates" not in config  # both places at once stops Kueue
    assert config["integrations"] == {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]}
    assert config["clientConnection"] == {"qps": 50, "burst": 100}  # the 0.17.8 chart default
    assert "multiKueue" not in config  # standalone: no dispatcher settings
    raw["clusters"][0]["role"] = "manager"
    raw["clusters"].append({"name": "w", "role": "worker"})
    fleet = fleet_of(raw)
    config = yaml.safe_load(
        helm_values(fleet.kueue, fleet.clusters[0])["managerConfig"]["controllerManagerConfigYaml"]
    )
    assert config["multiKueue"] == {
        "gcInterval": "2m",
        "origin": "fleet-a",
        "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
    }


def test_dev_worker_objects() -> None:
    # As deployed: the manager's team-a LocalQueue is mirrored onto each worker (MultiKueue).
    deployed = with_mirrored_queues(stack("dev"))
    manifests = [m for m in render_kueue(deployed) if m.target == "worker-1"]
    assert [(m.kind, m.name) for m in manifests] == [
        ("ResourceFlavor", "batch"),
        ("ProvisioningRequestConfig", "batch-scaleup-config"),
        ("AdmissionCheck", "batch-scaleup"),
        ("ClusterQueue", "team-a"),
        ("Namespace", "team-a"),  # after its ClusterQueue: deleted before it (destroy)
        ("LocalQueue", "team-a"),
    ]
    objs = {m.kind: m.obj for m in manifests}
    assert objs["ResourceFlavor"]["spec"] == {
        "nodeLabels": {"kubernetes.azure.com/agentpool": "batch", "workload": "batch"}
    }
    assert objs["ProvisioningRequestConfig"]["spec"] == {
        "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
        "managedResources": ["cpu"],
    }
    assert objs["AdmissionCheck"]["spec"] == {
        "controllerName": "kueue.x-k8s.io/provisioning-request",
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "ProvisioningRequestConfig",
            "name": "batch-scaleup-config",
        },
    }
    spec = objs["ClusterQueue"]["spec"]
    assert "admissionChecks" not in spec  # the removed v1beta1 list
    assert spec["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "batch-scaleup", "onFlavors": ["batch"]}]
    }
    assert spec["resourceGroups"][0]["flavors"][0]["resources"] == [
        {"name": "cpu", "nominalQuota": "16"},
        {"name": "memory", "nominalQuota": "48Gi"},
    ]
    assert objs["LocalQueue"]["metadata"] == {"name": "team-a", "namespace": "team-a"}
    # The manager has no gate (Kueue deactivates a queue with both): only the MultiKueue check.
    manager = {
        m.kind: m.obj
        for m in render_kueue(deployed, multikueue_checks(stack("dev")))
        if m.target == "manager"
    }
    assert sorted(manager) == ["ClusterQueue", "LocalQueue", "Namespace", "ResourceFlavor"]
    assert manager["ClusterQueue"]["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "multikueue"}]
    }


def test_flavors_tolerate_their_pools_taints() -> None:
    flavors = {
        (m.target, m.name): m.obj["spec"]
        for m in render_kueue(stack("prod"))
        if m.kind == "ResourceFlavor"
    }
    assert flavors[("worker-1", "mem")]["tolerations"] == [
        {"key": "workload", "operator": "Equal", "value": "batch-mem", "effect": "NoSchedule"}
    ]
    spot = flavors[("worker-3", "spot")]
    assert spot["nodeLabels"]["kubernetes.azure.com/scalesetpriority"] == "spot"
    assert spot["tolerations"] == [
        {
            "key": "kubernetes.azure.com/scalesetpriority",
            "operator": "Equal",
            "value": "spot",
            "effect": "NoSchedule",
        }
    ]
    assert flavors[("worker-4", "a100")] == {
        "nodeLabels": {"kubernetes.azure.com/agentpool": "gpu", "accelerator": "nvidia"},
        "tolerations": [
            {
                "key": "nvidia.com/gpu",
                "operator": "Equal",
                "value": "present",
                "effect": "NoSchedule",
            }
        ],
    }
    assert "tolerations" not in flavors[("worker-1", "cpu")]


def test_added_checks_join_the_strategy() -> None:
    fleet = fleet_of(copy.deepcopy(BASE))
    q = fleet.clusters[0].queues
    cq = q.cluster_queues[0]
    obj = cluster_queue(cq, q, ["multikueue", "other"])
    assert obj["spec"]["admissionChecksStrategy"]["admissionChecks"] == [
        {"name": "scaleup", "onFlavors": ["batch"]},
        {"name": "multikueue"},
        {"name": "other"},
    ]
    with pytest.raises(ValueError, match="admission check listed twice"):
        cluster_queue(cq, q, ["scaleup"])
    by_cluster = render_kueue(fleet, {"solo": {"team-a": ["multikueue"]}})
    (rendered,) = [m.obj for m in by_cluster if m.kind == "ClusterQueue"]
    assert rendered["spec"]["admissionChecksStrategy"]["admissionChecks"][-1] == {
        "name": "multikueue"
    }


def test_queue_without_gate_or_extra_checks_has_no_strategy() -> None:
    raw = copy.deepcopy(BASE)
    queues = raw["clusters"][0]["queues"]
    queues["clusterQueues"][0].pop("provisioningGate")
    queues["clusterQueues"][0]["cohortName"] = "shared"
    queues["clusterQueues"][0]["preemption"] = {
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
    }
    queues["provisioningGates"] = []
    fleet = fleet_of(raw)
    objs = render_kueue(fleet)
    assert "AdmissionCheck" not in {m.kind for m in objs}
    (cq,) = [m.obj["spec"] for m in objs if m.kind == "ClusterQueue"]
    assert "admissionChecksStrategy" not in cq
    assert cq["cohortName"] == "shared"
    assert cq["preemption"] == {
        "withinClusterQueue": "Never",
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
    }
    assert cq["namespaceSelector"] == {"matchLabels": {"team": "a"}}


def test_gate_options_reach_the_provisioning_request_config() -> None:
    raw = copy.deepcopy(BASE)
    raw["clusters"][0]["queues"]["provisioningGates"][0] = {
        "name": "scaleup",
        "configName": "scaleup-prc",
        "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
        "parameters": {"ValidUntilSeconds": "600"},
        "retryStrategy": {"backoffLimitCount": 0},
        "podSetUpdates": [{"key": "zone", "valueFromProvisioningClassDetail": "zone"}],
        "podSetMergePolicy": "IdenticalPodTemplates",
    }
    (prc,) = [m.obj for m in render_kueue(fleet_of(raw)) if m.kind == "ProvisioningRequestConfig"]
    assert prc == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": "scaleup-prc"},
        "spec": {
            "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
            "parameters": {"ValidUntilSeconds": "600"},
            "retryStrategy": {
                "backoffLimitCount": 0,
                "backoffBaseSeconds": 60,
                "backoffMaxSeconds": 1800,
            },
            "podSetUpdates": {
                "nodeSelector": [{"key": "zone", "valueFromProvisioningClassDetail": "zone"}]
            },
            "podSetMergePolicy": "IdenticalPodTemplates",
        },
    }


def test_dev_quota_report() -> None:
    rows = quota_report(stack("dev"))
    assert [(r.cluster, r.cluster_queue, r.flavor, r.resource) for r in rows] == [
        (w, "team-a", "batch", res) for w in ("worker-1", "worker-2") for res in ("cpu", "memory")
    ]
    cpu, memory = rows[0], rows[1]
    # 5 x Standard_D4s_v5 with node-subnet CNI (30 pods): 3860m and 15634Mi allocatable a node.
    assert (cpu.nominal, cpu.capacity, cpu.status) == ("16", "19.3", "ok")
    assert (memory.nominal, memory.capacity, memory.status) == ("48Gi", "78170Mi (76.3Gi)", "ok")
    assert cpu.path == (
        "clusters[1].queues.clusterQueues[0].resourceGroups[0].flavors[0].resources[0].nominalQuota"
    )


def test_prod_quota_report_covers_every_pool_flavor() -> None:
    rows = quota_report(stack("prod"))
    assert {r.status for r in rows} == {"ok"}
    gpu = next(r for r in rows if r.resource == "nvidia.com/gpu")
    assert (gpu.cluster, gpu.flavor, gpu.pool, gpu.nominal, gpu.capacity) == (
        "worker-4",
        "a100",
        "gpu",
        "8",
        "8",
    )
    shared = next(
        r
        for r in rows
        if (r.cluster, r.cluster_queue, r.flavor, r.resource)
        == ("worker-1", "team-a", "cpu", "cpu")
    )
    assert shared.reachable == "300"  # 150 own + 150 the cohort lends


def test_quota_section_for_preflight() -> None:
    section = quota_section(stack("dev"))
    assert section["columns"][0] == "cluster"
    assert section["rows"][0] == [
        "worker-1",
        "team-a",
        "batch",
        "batch",
        "cpu",
        "16",
        "16",
        "19.3",
        "ok",
    ]
    assert len(section["rows"]) == len(quota_report(stack("dev")))


def test_provisioning_warnings() -> None:
    # dev's gated workers run 1.36: the AKS-managed autoscaler serves ProvisioningRequest from 1.33
    # (upstream/aks.py), so nothing is left to warn about.
    assert provisioning_warnings(stack("dev")) == []

    raw = copy.deepcopy(BASE)
    raw["kubernetesVersion"] = "1.32"
    # 1.32 is past AKS's end of life on the tests' date: only LTS still serves it.
    raw["clusters"][0] |= {"skuTier": "Premium", "supportPlan": "AKSLongTermSupport"}
    queues = raw["clusters"][0]["queues"]
    queues["provisioningGates"][0]["provisioningClassName"] = "check-capacity.autoscaling.x-k8s.io"
    queues["flavors"].append({"name": "virtual", "nodeLabels": {"type": "virtual-kubelet"}})
    group = queues["clusterQueues"][0]["resourceGroups"][0]
    group["flavors"].append(
        {"name": "virtual", "resources": copy.deepcopy(group["flavors"][0]["resources"])}
    )
    queues["clusterQueues"][0]["provisioningGate"]["onFlavors"] = ["batch", "virtual"]
    found = {w.message.split(";")[0].split(":")[0] for w in provisioning_warnings(fleet_of(raw))}
    warnings = provisioning_warnings(fleet_of(raw))
    (old,) = [w for w in warnings if w.path.endswith("kubernetesVersion")]
    assert "only from 1.33 (Azure/AKS#5867)" in old.message
    assert "rollout restart deploy/kueue-controller-manager" in old.message
    assert "check-capacity only books nodes that exist" in found
    assert "gated flavor 'virtual' is not bound to an autoscaled pool (`pool`)" in found
