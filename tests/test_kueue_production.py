"""Kueue for production: typed Configuration settings, controller replicas with a PDB.

Field names are copied by hand from the pinned Kueue source, independent of the builders:
apis/config/v1beta2/configuration_types.go at v0.19.2 (8eab6877) for the Configuration, and
charts/kueue/values.yaml + templates/manager/manager{,-pdb}.yaml at v0.19.2 and v0.17.8 for the
chart values. Kueue drops an unknown Configuration field silently, so a wrong name would be a
setting that is never applied.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders.kueue import helm_values, kueue_releases, wait_for_pods_ready_on
from checks.stack import load_from_file
from config.models import FleetConfig
from testkit.shared.kueue_config import BASE, texts
from testkit.shared.kueue_production import (
    WAIT_FOR_PODS_READY,
    config_of,
    fleet_of,
    gates_of,
    with_manager,
)

REQUEUING_STRATEGY = {"timestamp", "backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"}
WORKLOAD_RETENTION = {"afterFinished", "afterDeactivatedByKueue"}
FAIR_SHARING = {"preemptionStrategies"}
INCREMENTAL = {"stepSize"}

EVERYTHING: dict[str, Any] = {
    "waitForPodsReady": {
        "timeout": "10m",
        "blockAdmission": False,
        "recoveryTimeout": "3m",
        "requeuingStrategy": {
            "timestamp": "Creation",
            "backoffLimitCount": 5,
            "backoffBaseSeconds": 30,
            "backoffMaxSeconds": 900,
        },
    },
    "objectRetentionPolicies": {
        "workloads": {"afterFinished": "24h", "afterDeactivatedByKueue": "1h"}
    },
    "fairSharing": {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    },
}


def test_every_setting_lands_under_kueues_own_field_names() -> None:
    raw = copy.deepcopy(BASE)
    raw["kueue"] = {"configuration": EVERYTHING}
    config = config_of(fleet_of(raw))
    wait = config["waitForPodsReady"]
    assert set(wait) == WAIT_FOR_PODS_READY
    assert set(wait["requeuingStrategy"]) == REQUEUING_STRATEGY
    assert set(config["objectRetentionPolicies"]["workloads"]) == WORKLOAD_RETENTION
    assert set(config["fairSharing"]) == FAIR_SHARING
    assert wait["timeout"] == "10m"
    assert wait["requeuingStrategy"]["backoffLimitCount"] == 5
    assert config["objectRetentionPolicies"]["workloads"]["afterFinished"] == "24h"


def test_unset_settings_are_absent_so_kueue_defaults_apply() -> None:
    raw = copy.deepcopy(BASE)
    raw["kueue"] = {"configuration": {"waitForPodsReady": {"timeout": "5m"}}}
    config = config_of(fleet_of(raw))
    assert config["waitForPodsReady"] == {"timeout": "5m"}
    for key in ("objectRetentionPolicies", "fairSharing"):
        assert key not in config


def test_wait_for_pods_ready_skips_the_manager() -> None:
    raw = with_manager(copy.deepcopy(BASE))
    raw["kueue"] = {"configuration": EVERYTHING}
    fleet = fleet_of(raw)
    manager, worker = config_of(fleet, 0), config_of(fleet, 1)
    assert "waitForPodsReady" not in manager
    assert "waitForPodsReady" in worker
    assert manager["objectRetentionPolicies"] == worker["objectRetentionPolicies"]


# Kueue 0.19.2 (apis/config/v1beta2/defaults.go) fills an absent waitForPodsReady with a 30m
# timeout, so from 0.19 only the DisableWaitForPodsReady gate turns it off
# (pkg/util/waitforpodsready/waitforpodsready.go); 0.17.8 runs it only when the block is there.
def test_the_manager_runs_without_wait_for_pods_ready_on_0_19() -> None:
    raw = with_manager(copy.deepcopy(BASE))
    fleet = fleet_of(raw)
    assert gates_of(fleet, 0) == {"DisableWaitForPodsReady": True}
    assert "waitForPodsReady" not in config_of(fleet, 0)
    # The worker keeps Kueue's default (on, 30m): no gate, no block.
    assert gates_of(fleet, 1) == {}
    assert "waitForPodsReady" not in config_of(fleet, 1)
    assert not wait_for_pods_ready_on(fleet.kueue, fleet.clusters[0])
    assert wait_for_pods_ready_on(fleet.kueue, fleet.clusters[1])


def test_the_manager_and_workers_each_get_their_own_block() -> None:
    raw = with_manager(copy.deepcopy(BASE))
    raw["kueue"] = {
        "configuration": {"waitForPodsReady": {"timeout": "2h"}},
        "managerConfiguration": {"waitForPodsReady": {"timeout": "3h", "recoveryTimeout": "0s"}},
    }
    fleet = fleet_of(raw)
    assert config_of(fleet, 0)["waitForPodsReady"] == {"timeout": "3h", "recoveryTimeout": "0s"}
    assert gates_of(fleet, 0) == {}
    assert config_of(fleet, 1)["waitForPodsReady"] == {"timeout": "2h"}
    assert gates_of(fleet, 1) == {}


def test_enable_false_turns_it_off_on_workers() -> None:
    raw = with_manager(copy.deepcopy(BASE))
    raw["kueue"] = {"configuration": {"waitForPodsReady": {"enable": False}}}
    fleet = fleet_of(raw)
    assert gates_of(fleet, 1) == {"DisableWaitForPodsReady": True}
    assert "waitForPodsReady" not in config_of(fleet, 1)
    assert not wait_for_pods_ready_on(fleet.kueue, fleet.clusters[1])


def test_on_0_17_off_is_an_absent_block_and_no_gate() -> None:
    raw = with_manager(copy.deepcopy(BASE))
    raw["kueue"] = {"version": "0.17.8", "configuration": {"waitForPodsReady": {"enable": False}}}
    raw["kubernetesVersion"] = "1.35"  # the newest minor Kueue 0.17.8 supports
    fleet = fleet_of(raw)
    for i in (0, 1):
        assert gates_of(fleet, i) == {}  # 0.17.8 has no such gate: it would not start
        assert "waitForPodsReady" not in config_of(fleet, i)
        assert not wait_for_pods_ready_on(fleet.kueue, fleet.clusters[i])
    del raw["kueue"]["configuration"]
    fleet = fleet_of(raw)
    assert not wait_for_pods_ready_on(fleet.kueue, fleet.clusters[1])


@pytest.mark.parametrize(
    ("kueue", "expected"),
    [
        (
            {"configuration": {"waitForPodsReady": {"enable": False, "timeout": "5m"}}},
            "kueue.configuration.waitForPodsReady: enable: false takes no other key",
        ),
        (
            {"managerConfiguration": {"waitForPodsReady": {"blockAdmission": True}}},
            "kueue.managerConfiguration.waitForPodsReady: timeout is required",
        ),
        (
            {"managerConfiguration": {"waitForPodsReady": {"timeout": "0s"}}},
            "kueue.managerConfiguration.waitForPodsReady.timeout: must be more than 0",
        ),
        (
            {"featureGates": {"DisableWaitForPodsReady": False}},
            "kueue.featureGates.DisableWaitForPodsReady: the manager still gets it true",
        ),
    ],
)
def test_bad_wait_for_pods_ready_names_its_key(kueue: dict[str, Any], expected: str) -> None:
    raw = with_manager(copy.deepcopy(BASE))
    raw["kueue"] = kueue
    found = texts(raw) + texts(raw, "warning")
    assert any(t.startswith(expected) for t in found), found


def test_incremental_dispatcher_step_size() -> None:
    raw = with_manager(copy.deepcopy(BASE))
    raw["multiKueue"] = {}
    raw["clusters"][0]["queues"] = {
        "namespaces": [{"name": "team-a", "labels": {"team": "a"}}],
        "flavors": [{"name": "default"}],
        "clusterQueues": [
            {
                "name": "team-a",
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "default",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "16"},
                                    {"name": "memory", "nominalQuota": "48Gi"},
                                ],
                            }
                        ],
                    }
                ],
            }
        ],
        "localQueues": [{"name": "team-a", "namespace": "team-a", "clusterQueue": "team-a"}],
    }
    worker = raw["clusters"][1]["queues"]
    del worker["localQueues"]
    raw["kueue"] = dict[str, Any](
        multiKueue={"dispatcher": "Incremental", "incrementalDispatcherConfig": {"stepSize": 1}}
    )
    config = config_of(fleet_of(raw))
    assert config["multiKueue"]["incrementalDispatcherConfig"] == {"stepSize": 1}
    assert set(config["multiKueue"]["incrementalDispatcherConfig"]) == INCREMENTAL
    raw["kueue"]["multiKueue"]["dispatcher"] = "AllAtOnce"
    assert (
        "kueue.multiKueue.incrementalDispatcherConfig: needs kueue.multiKueue.dispatcher: "
        "Incremental (Kueue refuses it else)"
    ) in texts(raw)
    raw["kueue"]["multiKueue"]["dispatcher"] = "Incremental"
    raw["kueue"]["version"] = "0.17.8"
    assert any(
        t.startswith("kueue.multiKueue.incrementalDispatcherConfig: Kueue 0.17.8 has no such")
        for t in texts(raw)
    )


@pytest.mark.parametrize(
    ("configuration", "expected"),
    [
        (
            {"waitForPodsReady": {"timeout": "0"}},
            "kueue.configuration.waitForPodsReady.timeout: must be more than 0",
        ),
        (
            {"waitForPodsReady": {"timeout": "ten minutes"}},
            "kueue.configuration.waitForPodsReady.timeout: ",
        ),
        (
            {"waitForPodsReady": {"timeout": "5m", "requeuingStrategy": {"timestamp": "Now"}}},
            "kueue.configuration.waitForPodsReady.requeuingStrategy.timestamp: ",
        ),
        (
            {
                "fairSharing": {
                    "preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]
                }
            },
            "kueue.configuration.fairSharing.preemptionStrategies: Kueue accepts only",
        ),
        (
            {"objectRetentionPolicies": {"workloads": {"afterFinish": "1h"}}},
            "kueue.configuration.objectRetentionPolicies.workloads.afterFinish: unknown key",
        ),
    ],
)
def test_bad_configuration_names_its_key(configuration: dict[str, Any], expected: str) -> None:
    raw = copy.deepcopy(BASE)
    raw["kueue"] = {"configuration": configuration}
    found = texts(raw)
    assert any(t.startswith(expected) for t in found), found


@pytest.mark.parametrize("version", ["0.19.2", "0.17.8"])
def test_two_replicas_get_a_pdb_and_a_spread(version: str) -> None:
    raw = copy.deepcopy(BASE)
    raw["kueue"] = {"version": version, "replicas": 2}
    raw["kubernetesVersion"] = "1.35" if version == "0.17.8" else "1.36"  # Kueue's tested minors
    raw["clusters"][0]["systemPool"] = {"count": 3, "zones": ["1", "2", "3"]}
    manager = helm_values(fleet_of(raw).kueue, fleet_of(raw).clusters[0])["controllerManager"]
    assert manager["replicas"] == 2
    assert manager["podDisruptionBudget"] == {"enabled": True, "minAvailable": 1}
    selector = {
        "matchLabels": {
            "app.kubernetes.io/name": "kueue",
            "app.kubernetes.io/instance": "kueue",
            "control-plane": "controller-manager",
        }
    }
    assert manager["topologySpreadConstraints"] == [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": selector,
        }
        for key in ("kubernetes.io/hostname", "topology.kubernetes.io/zone")
    ]


def test_one_replica_keeps_the_chart_defaults() -> None:
    fleet = fleet_of(copy.deepcopy(BASE))
    manager = helm_values(fleet.kueue, fleet.clusters[0])["controllerManager"]
    for key in ("replicas", "podDisruptionBudget", "topologySpreadConstraints"):
        assert key not in manager


def test_replicas_on_a_one_node_system_pool_is_a_warning() -> None:
    raw = copy.deepcopy(BASE)
    raw["kueue"] = {"replicas": 2}
    raw["clusters"][0]["systemPool"] = {"count": 1}
    assert texts(raw, "warning") == [
        "clusters[0].systemPool: 1 node: Kueue's 2 replicas share it, so draining it still stops "
        "Kueue (and its fail-closed Job webhooks)"
    ]


@pytest.mark.parametrize(
    "owned",
    [
        {"controllerManager": {"replicas": 3}},
        {"controllerManager": {"podDisruptionBudget": {"enabled": True}}},
    ],
)
def test_replica_values_are_owned(owned: dict[str, Any]) -> None:
    raw = copy.deepcopy(BASE)
    raw["kueue"] = {"values": owned}
    assert any("set by the program" in t for t in texts(raw))


def test_prod_runs_two_controllers_with_a_pdb_and_retains_workloads_a_day() -> None:
    fleet, _ = load_from_file("prod")
    for release in kueue_releases(fleet):
        manager = release.values["controllerManager"]
        assert manager["replicas"] == 2, release.target
        assert manager["podDisruptionBudget"] == {"enabled": True, "minAvailable": 1}
        config = yaml.safe_load(release.values["managerConfig"]["controllerManagerConfigYaml"])
        assert config["objectRetentionPolicies"] == {"workloads": {"afterFinished": "24h"}}


# One job, one scale-up (pkg/controller/workloaddispatcher/incrementaldispatcher.go at v0.19.2:
# stepSize workers per 5-minute round, default 3; AllAtOnce nominates the whole set).
def load_from_file_raw(stack: str) -> tuple[FleetConfig, dict[str, Any]]:
    text = (Path(__file__).resolve().parents[1] / f"Pulumi.{stack}.yaml").read_text()
    config = yaml.safe_load(text)["config"]
    raw = {"location": config["azure-native:location"], **config["aks-batch-fleet:fleet"]}
    return fleet_of(copy.deepcopy(raw)), raw


def test_prod_dispatches_one_gated_worker_at_a_time() -> None:
    fleet, raw = load_from_file_raw("prod")
    config = config_of(fleet, 0)
    assert fleet.clusters[0].role == "manager"
    assert config["multiKueue"]["dispatcherName"] == (
        "kueue.x-k8s.io/multikueue-dispatcher-incremental"
    )
    assert config["multiKueue"]["incrementalDispatcherConfig"] == {"stepSize": 1}
    # Left to Kueue's default, prod would be warned: three gated workers scale up for one job.
    del raw["kueue"]["multiKueue"]
    warnings = texts(raw, "warning")
    assert any(
        w.startswith("kueue.multiKueue.dispatcher: with no kueue.multiKueue.dispatcher")
        and "on 3 of its gated workers (worker-1, worker-2, worker-3)" in w
        for w in warnings
    ), warnings
    # Incremental at Kueue's default step (3) is the same race.
    raw["kueue"]["multiKueue"] = {"dispatcher": "Incremental"}
    assert any("nominates 3 workers per round" in w for w in texts(raw, "warning"))
    # AllAtOnce written down is a decision, not a default: no warning.
    raw["kueue"]["multiKueue"] = {"dispatcher": "AllAtOnce"}
    assert not any(w.startswith("kueue.multiKueue.dispatcher") for w in texts(raw, "warning"))
