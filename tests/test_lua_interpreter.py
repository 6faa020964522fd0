"""The UnitedDeployment ResourceInterpreterCustomization, run on Lua 5.1 like Karmada runs it.

Objects are shaped like real OpenKruise v1.9.0 UnitedDeployments (and checked against its CRD);
member statuses carry only fields the v1.9.0 status has. Every script runs with a strict _G.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from builders.interpreter import (
    CUSTOMIZATIONS,
    LUA_DIR,
    TARGET,
    lua_script,
    united_deployment_interpreter,
)
from testkit import crdschema
from testkit.lua_kube import LuaInterpreter, LuaVM

KINDS = [
    "statefulSetTemplate",
    "advancedStatefulSetTemplate",
    "cloneSetTemplate",
    "deploymentTemplate",
]
TEMPLATE_GENERATION = "resourcetemplate.karmada.io/generation"
NAMESPACE = "batch"
LABELS = {"app": "sample"}


@pytest.fixture(scope="module")
def lua() -> LuaInterpreter:
    ric = united_deployment_interpreter()
    return LuaInterpreter({k: v["luaScript"] for k, v in ric["spec"]["customizations"].items()})


def pod_template() -> dict[str, Any]:
    """A pod template that uses every kind of reference and node constraint the helpers read."""
    return {
        "metadata": {"labels": dict(LABELS)},
        "spec": {
            "serviceAccountName": "batch-runner",
            "imagePullSecrets": [{"name": "acr-pull"}],
            "nodeSelector": {"kubernetes.azure.com/mode": "user"},
            "tolerations": [
                {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
            ],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/arch",
                                        "operator": "In",
                                        "values": ["amd64"],
                                    }
                                ]
                            }
                        ]
                    },
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 1,
                            "preference": {
                                "matchExpressions": [
                                    {"key": "zone", "operator": "In", "values": ["1"]}
                                ]
                            },
                        }
                    ],
                }
            },
            "initContainers": [
                {
                    "name": "warmup",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "1", "memory": "128Mi"}},
                }
            ],
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.27",
                    "env": [
                        {
                            "name": "MODE",
                            "valueFrom": {"configMapKeyRef": {"name": "app-config", "key": "mode"}},
                        }
                    ],
                    "envFrom": [{"secretRef": {"name": "app-secret"}}],
                    "resources": {
                        "requests": {"cpu": "250m", "memory": "256Mi"},
                        "limits": {"cpu": "500m", "memory": "512Mi", "nvidia.com/gpu": "1"},
                    },
                    "volumeMounts": [{"name": "files", "mountPath": "/etc/app"}],
                },
                {
                    "name": "sidecar",
                    "image": "envoy",
                    "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}},
                },
            ],
            "volumes": [
                {"name": "files", "configMap": {"name": "app-files"}},
                {"name": "tls", "projected": {"sources": [{"secret": {"name": "tls-cert"}}]}},
                {"name": "scratch", "persistentVolumeClaim": {"claimName": "scratch"}},
            ],
        },
    }


# What Karmada's helpers make of pod_template(): requests default to limits (sidecar, GPU), the
# init container's 1 CPU beats the 350m of the app containers, memory sums to 320Mi.
POD_REQUIREMENTS = {
    "nodeClaim": {
        "hardNodeAffinity": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                    ]
                }
            ]
        },
        "nodeSelector": {"kubernetes.azure.com/mode": "user"},
        "tolerations": [
            {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
        ],
    },
    "resourceRequest": {"cpu": "1", "memory": "320Mi", "nvidia.com/gpu": "1"},
}
POD_DEPENDENCIES = sorted(
    [
        ("ConfigMap", "app-config"),
        ("ConfigMap", "app-files"),
        ("Secret", "acr-pull"),
        ("Secret", "app-secret"),
        ("Secret", "tls-cert"),
        ("ServiceAccount", "batch-runner"),
        ("PersistentVolumeClaim", "scratch"),
    ]
)


def united_deployment(kind: str = "statefulSetTemplate", **spec: Any) -> dict[str, Any]:
    """A UnitedDeployment as a user applies it to karmada-apiserver (the topology of the Karmada +
    OpenKruise walk-through)."""
    workload_spec: dict[str, Any] = {
        "selector": {"matchLabels": dict(LABELS)},
        "template": pod_template(),
    }
    if kind == "cloneSetTemplate":
        workload_spec["updateStrategy"] = {"type": "InPlaceIfPossible", "maxUnavailable": "20%"}
    elif kind == "advancedStatefulSetTemplate":
        workload_spec["podManagementPolicy"] = "Parallel"
    elif kind == "deploymentTemplate":
        workload_spec["strategy"] = {"type": "RollingUpdate"}
    obj: dict[str, Any] = {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {"name": "sample-ud", "namespace": NAMESPACE, "generation": 4, "uid": "u-1"},
        "spec": {
            "replicas": 6,
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": dict(LABELS)},
            "template": {kind: {"metadata": {"labels": dict(LABELS)}, "spec": workload_spec}},
            "topology": {
                "subsets": [
                    {
                        "name": "subset-a",
                        "replicas": "50%",
                        "nodeSelectorTerm": {
                            "matchExpressions": [
                                {"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]}
                            ]
                        },
                    },
                    {
                        "name": "subset-b",
                        "nodeSelectorTerm": {
                            "matchExpressions": [
                                {"key": "type", "operator": "In", "values": ["virtual-kubelet"]}
                            ]
                        },
                        "tolerations": [
                            {"key": "virtual-kubelet.io/provider", "operator": "Exists"}
                        ],
                    },
                ]
            },
            "updateStrategy": {
                "type": "Manual",
                "manualUpdate": {"partitions": {"subset-a": 0, "subset-b": 0}},
            },
        },
    }
    obj["spec"].update(spec)
    return obj


def member_status(
    subsets: dict[str, int],
    *,
    observed_generation: int = 1,
    revision: str = "sample-ud-5d8f7c9b4",
    ready: int | None = None,
    updated: int | None = None,
    partitions: dict[str, int] | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Kruise v1.9.0 UnitedDeployment status (zero ints omitted, as Go's omitempty does)."""
    replicas = sum(subsets.values())
    ready = replicas if ready is None else ready
    updated = replicas if updated is None else updated
    status: dict[str, Any] = {
        "observedGeneration": observed_generation,
        "replicas": replicas,
        "readyReplicas": ready,
        "updatedReplicas": updated,
        "updatedReadyReplicas": min(ready, updated),
        "currentRevision": revision,
        "collisionCount": 0,
        "subsetReplicas": dict(subsets),
        "subsetStatuses": [
            {"name": name, "replicas": count, "readyReplicas": count}
            for name, count in subsets.items()
        ],
        "updateStatus": {
            "updatedRevision": revision,
            "currentPartitions": partitions or dict.fromkeys(subsets, 0),
        },
        "conditions": conditions
        or [
            {
                "type": "SubsetProvisioned",
                "status": "True",
                "lastTransitionTime": "2026-07-01T10:00:00Z",
            },
            {
                "type": "UnitedDeploymentUpdated",
                "status": "True",
                "reason": "UnitedDeploymentRevisionUpdated",
                "message": f"updated to revision {revision}",
                "lastTransitionTime": "2026-07-01T10:00:00Z",
            },
        ],
        "labelSelector": "app=sample",
    }
    return {k: v for k, v in status.items() if v != 0}


def member_object(
    share: int, status: dict[str, Any] | None, *, generation: int = 1, template_generation: int = 4
) -> dict[str, Any]:
    """The member's copy: spec.replicas revised by Karmada, Karmada's generation annotation."""
    obj = united_deployment(replicas=share)
    obj["metadata"] = {
        "name": "sample-ud",
        "namespace": NAMESPACE,
        "generation": generation,
        "annotations": {TEMPLATE_GENERATION: str(template_generation)},
    }
    if status is not None:
        obj["status"] = status
    return obj


# --- the RIC object ------------------------------------------------------------------------------


def test_ric_has_every_operation_and_the_right_target() -> None:
    ric = united_deployment_interpreter()
    assert ric["apiVersion"] == "config.karmada.io/v1alpha1"
    assert ric["kind"] == "ResourceInterpreterCustomization"
    assert ric["spec"]["target"] == {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "UnitedDeployment",
    }
    assert ric["spec"]["target"] == TARGET
    customizations = ric["spec"]["customizations"]
    # All that Karmada's built-in UnitedDeployment customization defines: none falls back to it.
    assert set(customizations) == {
        "replicaResource",
        "replicaRevision",
        "statusReflection",
        "statusAggregation",
        "healthInterpretation",
        "dependencyInterpretation",
    }
    for key, (file_name, function) in CUSTOMIZATIONS.items():
        script = customizations[key]["luaScript"]
        assert script == lua_script(file_name)
        assert script.endswith((LUA_DIR / file_name).read_text(encoding="utf-8"))
        assert f"\nfunction {function}(" in script


def test_ric_is_valid_against_the_pinned_crd() -> None:
    crdschema.assert_valid(united_deployment_interpreter("fleet-ud"), "karmada", "v1.18.2")


@pytest.mark.parametrize("name", ["Declarative-UnitedDeployment", "", "-x", "a" * 254])
def test_ric_name_must_be_a_dns_subdomain(name: str) -> None:
    with pytest.raises(ValueError, match="DNS-1123"):
        united_deployment_interpreter(name)


@pytest.mark.parametrize(("file_name", "function"), list(CUSTOMIZATIONS.values()))
def test_each_script_defines_only_its_function(file_name: str, function: str) -> None:
    baseline = LuaVM("function Probe() end", "Probe").global_names() - {"Probe"}
    vm = LuaVM(lua_script(file_name), function)  # strict: any other global write fails here
    assert vm.global_names() - baseline == {function}


@pytest.mark.parametrize("file_name", [f for f, _ in CUSTOMIZATIONS.values()])
def test_scripts_use_no_field_a_uniteddeployment_lacks(file_name: str) -> None:
    code = re.sub(r"--[^\n]*", "", lua_script(file_name))  # comments may name them
    assert "availableReplicas" not in code
    assert "gmatch" not in code  # Karmada's safe string library has no gmatch


def test_strict_mode_catches_the_seeds_accidental_globals() -> None:
    # The Karmada + OpenKruise walk-through's GetReplicas: `replica`/`requirement` are globals,
    # and it hands accuratePodRequirements the workload wrapper instead of the pod template.
    seed = """
    local kube = require("kube")
    function GetReplicas(obj)
      replica = obj.spec.replicas
      requirement = kube.accuratePodRequirements(obj.spec.template)
      return replica, requirement
    end
    """
    with pytest.raises(Exception, match="undeclared global 'replica'"):
        LuaInterpreter({"replicaResource": seed}).get_replicas(united_deployment())
    lenient = LuaInterpreter({"replicaResource": seed}, strict=False)
    assert lenient.get_replicas(united_deployment()) == (6, None)


# --- GetReplicas ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_united_deployments_of_every_kind_are_valid_objects(kind: str) -> None:
    crdschema.assert_valid(united_deployment(kind), "kruise", "v1.9.0")


@pytest.mark.parametrize("kind", KINDS)
def test_get_replicas_reads_the_nested_pod_template(lua: LuaInterpreter, kind: str) -> None:
    assert lua.get_replicas(united_deployment(kind)) == (6, POD_REQUIREMENTS)


def test_get_replicas_seed_template(lua: LuaInterpreter) -> None:
    obj = united_deployment()
    pod = obj["spec"]["template"]["statefulSetTemplate"]["spec"]["template"]["spec"]
    pod.clear()
    pod["containers"] = [
        {
            "name": "nginx",
            "image": "swr.cn-north-4.myhuaweicloud.com/testapp/nginx:v2",
            "resources": {
                "limits": {"cpu": "50m", "memory": "50Mi"},
                "requests": {"cpu": "50m", "memory": "50Mi"},
            },
        }
    ]
    assert lua.get_replicas(obj) == (6, {"resourceRequest": {"cpu": "50m", "memory": "50Mi"}})


def test_get_replicas_statefulset_wins_like_kruise(lua: LuaInterpreter) -> None:
    obj = united_deployment("statefulSetTemplate")
    other = copy.deepcopy(obj["spec"]["template"]["statefulSetTemplate"])
    other["spec"]["template"]["spec"] = {"containers": [{"name": "x", "image": "x"}]}
    obj["spec"]["template"]["deploymentTemplate"] = other
    assert lua.get_replicas(obj)[1] == POD_REQUIREMENTS


def test_get_replicas_without_requests_or_claims(lua: LuaInterpreter) -> None:
    obj = united_deployment("cloneSetTemplate")
    pod = obj["spec"]["template"]["cloneSetTemplate"]["spec"]["template"]
    pod["spec"] = {"containers": [{"name": "app", "image": "nginx"}]}
    assert lua.get_replicas(obj) == (6, None)


def test_get_replicas_zero(lua: LuaInterpreter) -> None:
    assert lua.get_replicas(united_deployment(replicas=0)) == (0, POD_REQUIREMENTS)


def test_get_replicas_unset_replicas_sums_integer_subsets(lua: LuaInterpreter) -> None:
    obj = united_deployment()
    del obj["spec"]["replicas"]
    obj["spec"]["topology"]["subsets"][0]["replicas"] = 3
    obj["spec"]["topology"]["subsets"][1]["replicas"] = 2
    assert lua.get_replicas(obj)[0] == 5


def test_get_replicas_unset_replicas_without_topology(lua: LuaInterpreter) -> None:
    obj = united_deployment()
    del obj["spec"]["replicas"]
    del obj["spec"]["topology"]
    assert lua.get_replicas(obj)[0] == 0


def test_get_replicas_without_a_template(lua: LuaInterpreter) -> None:
    obj = united_deployment()
    del obj["spec"]["template"]
    assert lua.get_replicas(obj) == (6, None)


# --- ReviseReplica -------------------------------------------------------------------------------


@pytest.mark.parametrize("replicas", [0, 2, 4])
def test_revise_replica_changes_only_spec_replicas(lua: LuaInterpreter, replicas: int) -> None:
    obj = united_deployment("cloneSetTemplate")
    # Empty maps and lists must survive Karmada's Lua round trip (it uses obj as the reference).
    obj["metadata"]["annotations"] = {}
    obj["spec"]["topology"]["subsets"][0]["tolerations"] = []
    revised = lua.revise_replica(obj, replicas)
    expected = copy.deepcopy(obj)
    expected["spec"]["replicas"] = replicas
    assert revised == expected


def test_revise_replica_sets_unset_replicas(lua: LuaInterpreter) -> None:
    obj = united_deployment()
    del obj["spec"]["replicas"]
    assert lua.revise_replica(obj, 3)["spec"]["replicas"] == 3


# --- ReflectStatus -------------------------------------------------------------------------------


REFLECTED = {
    "replicas",
    "readyReplicas",
    "updatedReplicas",
    "updatedReadyReplicas",
    "reservedPods",
    "observedGeneration",
    "currentRevision",
    "labelSelector",
    "subsetReplicas",
    "subsetStatuses",
    "updateStatus",
    "conditions",
    "generation",
    "resourceTemplateGeneration",
}


def test_reflect_status_of_a_real_member(lua: LuaInterpreter) -> None:
    status = member_status({"subset-a": 2, "subset-b": 2}, observed_generation=3)
    reflected = lua.reflect_status(member_object(4, status, generation=3))
    expected = {k: v for k, v in status.items() if k != "collisionCount"}
    assert reflected == {**expected, "generation": 3, "resourceTemplateGeneration": 4}
    assert set(reflected) <= REFLECTED


def test_reflect_status_ignores_fields_kruise_does_not_have(lua: LuaInterpreter) -> None:
    status = member_status({"subset-a": 1}) | {"availableReplicas": 1, "unavailableReplicas": 0}
    assert "availableReplicas" not in lua.reflect_status(member_object(1, status))


def test_reflect_status_member_without_status(lua: LuaInterpreter) -> None:
    assert lua.reflect_status(member_object(2, None)) == {}
    assert lua.reflect_status(None) == {}


def test_reflect_status_without_karmada_annotation(lua: LuaInterpreter) -> None:
    obj = member_object(1, member_status({"subset-a": 1}))
    del obj["metadata"]["annotations"]
    reflected = lua.reflect_status(obj)
    assert "resourceTemplateGeneration" not in reflected
    assert reflected["generation"] == 1


# --- AggregateStatus -----------------------------------------------------------------------------


def _item(lua: LuaInterpreter, cluster: str, member: dict[str, Any]) -> dict[str, Any]:
    """An AggregatedStatusItem, its status made by our ReflectStatus."""
    return {
        "clusterName": cluster,
        "status": lua.reflect_status(member),
        "applied": True,
        "health": "Healthy",
    }


def _seed_items(lua: LuaInterpreter, **test_ucs: Any) -> list[dict[str, Any]]:
    idc1 = member_object(2, member_status({"subset-a": 1, "subset-b": 1}))
    other = member_object(4, member_status({"subset-a": 2, "subset-b": 2}, **test_ucs))
    return [_item(lua, "idc1", idc1), _item(lua, "test-ucs", other)]


def test_aggregate_status_of_the_seed_members(lua: LuaInterpreter) -> None:
    template = united_deployment()
    aggregated = lua.aggregate_status(template, _seed_items(lua))
    revision = "sample-ud-5d8f7c9b4"
    assert aggregated["status"] == {
        "observedGeneration": 4,
        "replicas": 6,
        "readyReplicas": 6,
        "updatedReplicas": 6,
        "updatedReadyReplicas": 6,
        "reservedPods": 0,
        "currentRevision": revision,
        "labelSelector": "app=sample",
        "subsetReplicas": {"subset-a": 3, "subset-b": 3},
        "subsetStatuses": [
            {
                "name": "subset-a",
                "replicas": 3,
                "readyReplicas": 3,
                "partition": 0,
                "reservedPods": 0,
            },
            {
                "name": "subset-b",
                "replicas": 3,
                "readyReplicas": 3,
                "partition": 0,
                "reservedPods": 0,
            },
        ],
        "updateStatus": {
            "updatedRevision": revision,
            "currentPartitions": {"subset-a": 0, "subset-b": 0},
        },
        "conditions": [
            {
                "type": "SubsetProvisioned",
                "status": "True",
                "lastTransitionTime": "2026-07-01T10:00:00Z",
            },
            {
                "type": "UnitedDeploymentUpdated",
                "status": "True",
                "reason": "UnitedDeploymentRevisionUpdated",
                "message": f"idc1: updated to revision {revision}",
                "lastTransitionTime": "2026-07-01T10:00:00Z",
            },
        ],
    }
    assert {k: v for k, v in aggregated.items() if k != "status"} == template
    crdschema.assert_valid(aggregated, "kruise", "v1.9.0")


def test_aggregate_status_mixed_generations_keep_the_old_observed_generation(
    lua: LuaInterpreter,
) -> None:
    # test-ucs has the new template (annotation 4) but its Kruise has not caught up (gen 2 vs 1).
    template = united_deployment()
    template["status"] = {"observedGeneration": 3, "replicas": 6, "updatedReplicas": 6}
    idc1 = member_object(2, member_status({"subset-a": 1, "subset-b": 1}, observed_generation=2))
    idc1["metadata"]["generation"] = 2
    stale = member_object(4, member_status({"subset-a": 2, "subset-b": 2}))
    stale["metadata"]["generation"] = 2
    items = [_item(lua, "idc1", idc1), _item(lua, "test-ucs", stale)]
    assert lua.aggregate_status(template, items)["status"]["observedGeneration"] == 3


def test_aggregate_status_member_still_on_an_older_template(lua: LuaInterpreter) -> None:
    template = united_deployment()
    old = member_object(4, member_status({"subset-a": 2, "subset-b": 2}), template_generation=3)
    idc1 = member_object(2, member_status({"subset-a": 1, "subset-b": 1}))
    items = [_item(lua, "idc1", idc1), _item(lua, "test-ucs", old)]
    status = lua.aggregate_status(template, items)["status"]
    assert status["observedGeneration"] == 0  # the template never had an aggregated status


def test_aggregate_status_member_without_status(lua: LuaInterpreter) -> None:
    template = united_deployment()
    template["status"] = {"observedGeneration": 3, "replicas": 0, "updatedReplicas": 0}
    idc1 = member_object(2, member_status({"subset-a": 1, "subset-b": 1}))
    items = [_item(lua, "idc1", idc1), {"clusterName": "test-ucs", "applied": False}]
    status = lua.aggregate_status(template, items)["status"]
    assert (status["replicas"], status["observedGeneration"]) == (2, 3)
    assert status["currentRevision"] == ""  # test-ucs has not confirmed any revision
    assert "updatedRevision" not in status["updateStatus"]
    crdschema.assert_valid(lua.aggregate_status(template, items), "kruise", "v1.9.0")


def test_aggregate_status_member_reflected_before_kruise_wrote_status(lua: LuaInterpreter) -> None:
    items = [
        _item(lua, "idc1", member_object(2, None)),
        _item(lua, "test-ucs", member_object(4, member_status({"subset-a": 2, "subset-b": 2}))),
    ]
    status = lua.aggregate_status(united_deployment(), items)["status"]
    assert status["replicas"] == 4
    assert (status["observedGeneration"], status["currentRevision"]) == (0, "")


@pytest.mark.parametrize("items", [None, []])
def test_aggregate_status_without_members(
    lua: LuaInterpreter, items: list[dict[str, Any]] | None
) -> None:
    aggregated = lua.aggregate_status(united_deployment(), items)
    assert aggregated["status"] == {
        "observedGeneration": 4,
        "replicas": 0,
        "readyReplicas": 0,
        "updatedReplicas": 0,
        "updatedReadyReplicas": 0,
        "reservedPods": 0,
        "currentRevision": "",
    }
    crdschema.assert_valid(aggregated, "kruise", "v1.9.0")


def test_aggregate_status_replaces_stale_fields(lua: LuaInterpreter) -> None:
    template = united_deployment()
    template["status"] = {
        "observedGeneration": 4,
        "replicas": 9,
        "updatedReplicas": 9,
        "currentRevision": "old",
        "subsetReplicas": {"gone": 9},
    }
    status = lua.aggregate_status(template, _seed_items(lua))["status"]
    assert status["subsetReplicas"] == {"subset-a": 3, "subset-b": 3}
    assert status["replicas"] == 6


def test_aggregate_status_members_on_different_revisions(lua: LuaInterpreter) -> None:
    status = lua.aggregate_status(united_deployment(), _seed_items(lua, revision="sample-ud-new"))[
        "status"
    ]
    assert status["currentRevision"] == ""
    assert "updatedRevision" not in status["updateStatus"]


def test_aggregate_status_condition_that_needs_attention_wins(lua: LuaInterpreter) -> None:
    failure = {
        "type": "SubsetFailure",
        "status": "True",
        "reason": "Error",
        "message": "subset-b: pods pending",
        "lastTransitionTime": "2026-07-01T11:00:00Z",
    }
    updating = {
        "type": "UnitedDeploymentUpdated",
        "status": "False",
        "reason": "UnitedDeploymentRevisionUpdating",
        "message": "updating to revision sample-ud-new",
        "lastTransitionTime": "2026-07-01T11:00:00Z",
    }
    status = lua.aggregate_status(
        united_deployment(), _seed_items(lua, conditions=[updating, failure])
    )["status"]
    by_type = {c["type"]: c for c in status["conditions"]}
    assert [c["type"] for c in status["conditions"]] == [
        "SubsetProvisioned",
        "UnitedDeploymentUpdated",
        "SubsetFailure",
    ]
    assert by_type["UnitedDeploymentUpdated"]["status"] == "False"
    assert by_type["UnitedDeploymentUpdated"]["message"].startswith("test-ucs: updating")
    assert by_type["SubsetFailure"]["message"] == "test-ucs: subset-b: pods pending"


def test_aggregate_status_sums_partitions_and_not_ready_pods(lua: LuaInterpreter) -> None:
    items = _seed_items(lua, ready=3, updated=2, partitions={"subset-a": 1, "subset-b": 1})
    status = lua.aggregate_status(united_deployment(), items)["status"]
    assert (status["readyReplicas"], status["updatedReplicas"]) == (5, 4)
    assert status["updatedReadyReplicas"] == 4
    assert status["updateStatus"]["currentPartitions"] == {"subset-a": 1, "subset-b": 1}


# --- InterpretHealth -----------------------------------------------------------------------------


def test_health_of_a_rolled_out_member(lua: LuaInterpreter) -> None:
    obj = member_object(4, member_status({"subset-a": 2, "subset-b": 2}))
    assert lua.interpret_health(obj) is True


@pytest.mark.parametrize(
    ("status", "healthy"),
    [
        pytest.param({"observed_generation": 0}, False, id="generation not observed"),
        pytest.param({"updated": 3}, False, id="rollout not complete"),
        pytest.param({"ready": 3}, False, id="updated pod not ready"),
        pytest.param(
            {"updated": 2, "partitions": {"subset-a": 1, "subset-b": 1}},
            True,
            id="manual partitions hold pods back",
        ),
        pytest.param(
            {"updated": 2, "partitions": {"subset-a": 1, "subset-b": 0}},
            False,
            id="partitions hold fewer than missing",
        ),
        pytest.param(
            {"conditions": [{"type": "SubsetFailure", "status": "True", "reason": "Error"}]},
            False,
            id="subset failure",
        ),
        pytest.param(
            {"conditions": [{"type": "SubsetFailure", "status": "False"}]},
            True,
            id="subset failure cleared",
        ),
    ],
)
def test_health_rules(lua: LuaInterpreter, status: dict[str, Any], healthy: bool) -> None:
    obj = member_object(4, member_status({"subset-a": 2, "subset-b": 2}, **status))
    assert lua.interpret_health(obj) is healthy


def test_health_without_status_or_object(lua: LuaInterpreter) -> None:
    assert lua.interpret_health(member_object(4, None)) is False
    assert lua.interpret_health(None) is False


def test_health_scaling_up_is_unhealthy_until_pods_exist(lua: LuaInterpreter) -> None:
    obj = member_object(6, member_status({"subset-a": 2, "subset-b": 2}))
    assert lua.interpret_health(obj) is False


def test_health_with_unset_spec_replicas_uses_status(lua: LuaInterpreter) -> None:
    obj = member_object(4, member_status({"subset-a": 2, "subset-b": 2}))
    del obj["spec"]["replicas"]
    assert lua.interpret_health(obj) is True


def test_health_minimal_status(lua: LuaInterpreter) -> None:
    # Scaled to zero: Kruise omits every zero counter, the required ones included.
    obj = member_object(0, {"observedGeneration": 1, "currentRevision": "r"})
    assert lua.interpret_health(obj) is True


# --- GetDependencies -----------------------------------------------------------------------------


def _deps(found: list[dict[str, Any]], namespace: str = NAMESPACE) -> list[tuple[str, str]]:
    assert all(d["apiVersion"] == "v1" and d["namespace"] == namespace for d in found)
    return sorted((d["kind"], d["name"]) for d in found)


@pytest.mark.parametrize("kind", KINDS)
def test_dependencies_of_the_nested_template(lua: LuaInterpreter, kind: str) -> None:
    assert _deps(lua.get_dependencies(united_deployment(kind))) == POD_DEPENDENCIES


def test_dependencies_from_subset_patches(lua: LuaInterpreter) -> None:
    obj = united_deployment()
    obj["spec"]["topology"]["subsets"][1]["patch"] = {
        "metadata": {"labels": {"tier": "burst"}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "env": [
                        {
                            "name": "TOKEN",
                            "valueFrom": {"secretKeyRef": {"name": "aci-token", "key": "t"}},
                        },
                        {
                            "name": "MODE",
                            "valueFrom": {"configMapKeyRef": {"name": "app-config", "key": "m"}},
                        },
                    ],
                }
            ],
            "$setElementOrder/containers": [{"name": "app"}],
        },
    }
    assert _deps(lua.get_dependencies(obj)) == sorted([*POD_DEPENDENCIES, ("Secret", "aci-token")])


def test_dependencies_skip_a_patch_that_is_not_a_pod_template(lua: LuaInterpreter) -> None:
    obj = united_deployment()
    obj["spec"]["topology"]["subsets"][0]["patch"] = {"spec": {"containers": "not-a-list"}}
    assert _deps(lua.get_dependencies(obj)) == POD_DEPENDENCIES


def test_no_dependencies_is_an_empty_list_not_an_error(lua: LuaInterpreter) -> None:
    obj = united_deployment("deploymentTemplate")
    pod = obj["spec"]["template"]["deploymentTemplate"]["spec"]["template"]
    pod["spec"] = {"serviceAccountName": "default", "containers": [{"name": "a", "image": "a"}]}
    assert lua.get_dependencies(obj) == []


def test_dependencies_default_namespace(lua: LuaInterpreter) -> None:
    obj = united_deployment()
    del obj["metadata"]["namespace"]
    assert _deps(lua.get_dependencies(obj), "default") == POD_DEPENDENCIES


def test_dependencies_without_a_template(lua: LuaInterpreter) -> None:
    obj = united_deployment()
    del obj["spec"]["template"]
    assert lua.get_dependencies(obj) == []
