"""The CRD schema harness accepts what upstream accepts and rejects what the API server would."""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from testkit import crdschema
from upstream.structural import go_regex_to_python

pytest_plugins = ["pytester"]

KUEUE = "v0.19.2"
KUEUE_VERSIONS = ["v0.17.8", "v0.19.2"]  # the v1beta2 shapes below are the same in both
KARMADA = "v1.18.2"
KRUISE = "v1.9.0"
V1BETA2 = "kueue.x-k8s.io/v1beta2"

SCRIPT = crdschema.REPO_ROOT / "scripts" / "fetch-crds"
PINS = crdschema.REPO_ROOT / "scripts" / "crd-pins.json"

Obj = dict[str, Any]


# --------------------------------------------------------------------------------------------
# Realistic objects, shaped like upstream examples (Kueue's samples at the pinned tag)


def resource_flavor() -> Obj:
    return {
        "apiVersion": V1BETA2,
        "kind": "ResourceFlavor",
        "metadata": {"name": "gpu-a100", "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
        "spec": {
            "nodeLabels": {"kubernetes.azure.com/agentpool": "gpua100"},
            "nodeTaints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
            "tolerations": [
                {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
            ],
        },
    }


def cluster_queue() -> Obj:
    return {
        "apiVersion": V1BETA2,
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a"},
        "spec": {
            "namespaceSelector": {},
            "cohortName": "fleet",
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "gpu-a100",
                            "resources": [
                                {"name": "cpu", "nominalQuota": 96, "borrowingLimit": "16"},
                                {"name": "memory", "nominalQuota": "880Gi"},
                                {"name": "nvidia.com/gpu", "nominalQuota": 8, "lendingLimit": 2},
                            ],
                        }
                    ],
                }
            ],
            "admissionChecksStrategy": {
                "admissionChecks": [{"name": "gpu-provisioning", "onFlavors": ["gpu-a100"]}]
            },
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
            "flavorFungibility": {
                "whenCanBorrow": "MayStopSearch",
                "whenCanPreempt": "TryNextFlavor",
            },
            "stopPolicy": "None",
        },
    }


def local_queue() -> Obj:
    return {
        "apiVersion": V1BETA2,
        "kind": "LocalQueue",
        "metadata": {"name": "default", "namespace": "team-a"},
        "spec": {"clusterQueue": "team-a"},
    }


def admission_check() -> Obj:
    return {
        "apiVersion": V1BETA2,
        "kind": "AdmissionCheck",
        "metadata": {"name": "gpu-provisioning"},
        "spec": {
            "controllerName": "kueue.x-k8s.io/provisioning-request",
            "parameters": {
                "apiGroup": "kueue.x-k8s.io",
                "kind": "ProvisioningRequestConfig",
                "name": "gpu-provisioning",
            },
        },
    }


def provisioning_request_config() -> Obj:
    return {
        "apiVersion": V1BETA2,
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": "gpu-provisioning"},
        "spec": {
            "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
            "managedResources": ["nvidia.com/gpu"],
            "parameters": {"ValidUntilSeconds": "600"},
            "retryStrategy": {
                "backoffLimitCount": 2,
                "backoffBaseSeconds": 60,
                "backoffMaxSeconds": 1800,
            },
        },
    }


def multikueue_cluster() -> Obj:
    return {
        "apiVersion": V1BETA2,
        "kind": "MultiKueueCluster",
        "metadata": {"name": "worker-1"},
        "spec": {
            "clusterSource": {
                "kubeConfig": {"location": "worker-1-kubeconfig", "locationType": "Secret"}
            }
        },
    }


def multikueue_config() -> Obj:
    return {
        "apiVersion": V1BETA2,
        "kind": "MultiKueueConfig",
        "metadata": {"name": "fleet"},
        "spec": {"clusters": ["worker-1", "worker-2"]},
    }


def propagation_policy() -> Obj:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "inference", "namespace": "serving"},
        "spec": {
            "resourceSelectors": [
                {
                    "apiVersion": "apps.kruise.io/v1alpha1",
                    "kind": "UnitedDeployment",
                    "name": "inference",
                }
            ],
            "placement": {
                "clusterAffinity": {"clusterNames": ["worker-1", "worker-2"]},
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {
                        "staticWeightList": [
                            {"targetCluster": {"clusterNames": ["worker-1"]}, "weight": 2},
                            {"targetCluster": {"clusterNames": ["worker-2"]}, "weight": 1},
                        ]
                    },
                },
            },
        },
    }


def united_deployment() -> Obj:
    labels = {"app": "inference"}
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {"name": "inference", "namespace": "serving"},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": labels},
            "template": {
                "cloneSetTemplate": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "selector": {"matchLabels": labels},
                        "template": {  # a pod template: preserved unknown by the CRD
                            "metadata": {"labels": labels},
                            "spec": {"containers": [{"name": "server", "image": "nginx:1.27"}]},
                        },
                        "updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": "20%"},
                    },
                }
            },
            "topology": {
                "subsets": [
                    {
                        "name": "spot",
                        "nodeSelectorTerm": {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.azure.com/scalesetpriority",
                                    "operator": "In",
                                    "values": ["spot"],
                                }
                            ]
                        },
                        "tolerations": [
                            {
                                "key": "kubernetes.azure.com/scalesetpriority",
                                "operator": "Equal",
                                "value": "spot",
                                "effect": "NoSchedule",
                            }
                        ],
                        "replicas": "50%",
                    },
                    {"name": "on-demand"},
                ]
            },
        },
    }


def karmada_cluster() -> Obj:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "worker-1", "labels": {"fleet/region": "westeurope"}},
        "spec": {
            "syncMode": "Push",
            "apiEndpoint": "https://worker-1-dns-1a2b3c.hcp.westeurope.azmk8s.io:443",
            "secretRef": {"namespace": "karmada-cluster", "name": "worker-1"},
            "impersonatorSecretRef": {
                "namespace": "karmada-cluster",
                "name": "worker-1-impersonator",
            },
            "region": "westeurope",
            "taints": [{"key": "fleet/maintenance", "effect": "NoSchedule"}],
        },
    }


KUEUE_OBJECTS: list[Callable[[], Obj]] = [
    resource_flavor,
    cluster_queue,
    local_queue,
    admission_check,
    provisioning_request_config,
    multikueue_cluster,
    multikueue_config,
]


def errors_of(obj: Obj, project: str = "kueue", version: str = KUEUE) -> list[str]:
    return crdschema.validate(obj, project, version).errors


def assert_rejected(
    obj: Obj, *fragments: str, project: str = "kueue", version: str = KUEUE
) -> None:
    """At least one error contains every fragment (a path and the reason)."""
    errors = errors_of(obj, project, version)
    assert any(all(f in e for f in fragments) for e in errors), errors


# --------------------------------------------------------------------------------------------
# Valid objects pass


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
@pytest.mark.parametrize("build", KUEUE_OBJECTS, ids=lambda f: f.__name__)
def test_valid_kueue_objects_pass(build: Callable[[], Obj], version: str) -> None:
    report = crdschema.assert_valid(build(), "kueue", version)
    assert report.warnings == []


@pytest.mark.parametrize(
    ("build", "project", "version"),
    [
        (propagation_policy, "karmada", KARMADA),
        (karmada_cluster, "karmada", KARMADA),
        (united_deployment, "kruise", KRUISE),
    ],
    ids=lambda v: getattr(v, "__name__", str(v)),
)
def test_valid_karmada_and_kruise_objects_pass(
    build: Callable[[], Obj], project: str, version: str
) -> None:
    crdschema.assert_valid(build(), project, version)


def test_validate_does_not_modify_the_input() -> None:
    obj = cluster_queue()
    del obj["spec"]["preemption"]
    before = copy.deepcopy(obj)
    crdschema.validate(obj, "kueue", KUEUE)
    assert obj == before  # defaults are applied to a private copy


def test_ledger_of_a_passing_cluster_queue_evaluates_all_four_rules() -> None:
    report = crdschema.validate(cluster_queue(), "kueue", KUEUE)
    # spec, spec.resourceGroups[0], spec.preemption, spec.flavorFungibility
    assert (report.evaluated_rules, report.skipped) == (4, [])


# --------------------------------------------------------------------------------------------
# Unknown fields: the API server drops them, so they must fail here


def test_v1beta1_admission_checks_list_is_unknown_in_v1beta2() -> None:
    obj = cluster_queue()
    obj["spec"]["admissionChecks"] = ["x"]
    assert_rejected(obj, "spec.admissionChecks:", "unknown field", "admissionChecksStrategy")


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
def test_v1beta1_cohort_is_unknown_in_v1beta2(version: str) -> None:
    obj = cluster_queue()
    obj["spec"]["cohort"] = obj["spec"].pop("cohortName")
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].pop("borrowingLimit")
    assert errors_of(obj, version=version) == [
        "spec.cohort: unknown field (did you mean 'cohortName'?)"
    ]


def test_v1beta1_multikueue_cluster_shape_is_unknown_in_v1beta2() -> None:
    obj = multikueue_cluster()
    obj["spec"] = {"kubeConfig": {"location": "w1", "locationType": "Secret"}}
    assert_rejected(obj, "spec.kubeConfig:", "unknown field")
    assert_rejected(obj, "spec.clusterSource:", "required field missing")


def test_unknown_field_deep_in_a_list_item() -> None:
    obj = cluster_queue()
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["quota"] = "1"
    assert_rejected(obj, "spec.resourceGroups[0].flavors[0].resources[1].quota:", "unknown field")


def test_unknown_metadata_field() -> None:
    obj = local_queue()
    obj["metadata"]["label"] = {"a": "b"}
    assert_rejected(obj, "metadata.label:", "unknown field", "labels")


def test_preserve_unknown_fields_allows_unknown_but_typed_siblings_stay_strict() -> None:
    obj = united_deployment()
    template = obj["spec"]["template"]["cloneSetTemplate"]["spec"]["template"]
    template["spec"]["anything"] = {
        "goes": True
    }  # pod template: x-kubernetes-preserve-unknown-fields
    assert errors_of(obj, "kruise", KRUISE) == []
    obj["spec"]["template"]["cloneSetTemplate"]["spec"]["replica"] = 3
    assert_rejected(
        obj,
        "cloneSetTemplate.spec.replica:",
        "did you mean 'replicas'",
        project="kruise",
        version=KRUISE,
    )
    obj = united_deployment()
    obj["spec"]["topology"]["subsets"][0]["nodeSelector"] = {"a": "b"}
    assert_rejected(
        obj,
        "spec.topology.subsets[0].nodeSelector:",
        "unknown field",
        project="kruise",
        version=KRUISE,
    )


def test_karmada_cluster_unknown_field_from_swagger_schema() -> None:
    obj = karmada_cluster()
    obj["spec"]["secretRef"]["key"] = "kubeconfig"
    assert_rejected(obj, "spec.secretRef.key:", "unknown field", project="karmada", version=KARMADA)


# --------------------------------------------------------------------------------------------
# Enums, required fields, types, bounds, formats


def test_wrong_enum() -> None:
    obj = cluster_queue()
    obj["spec"]["queueingStrategy"] = "FIFO"
    assert_rejected(obj, "spec.queueingStrategy:", "'FIFO' is not allowed; allowed:")


def test_value_removed_from_an_enum_in_v1beta2() -> None:
    obj = cluster_queue()
    obj["spec"]["flavorFungibility"]["whenCanBorrow"] = "Borrow"  # v1beta1 only
    assert_rejected(
        obj, "spec.flavorFungibility.whenCanBorrow:", "'Borrow' is not allowed; allowed:"
    )


def test_missing_required_field() -> None:
    obj = admission_check()
    del obj["spec"]["controllerName"]
    assert_rejected(obj, "spec.controllerName:", "required field missing")
    obj = cluster_queue()
    del obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"]
    assert_rejected(obj, "flavors[0].resources[1].nominalQuota:", "required field missing")


def test_missing_name_is_an_error() -> None:
    obj = local_queue()
    obj["metadata"] = {"generateName": "q-", "namespace": "team-a"}
    assert_rejected(obj, "metadata.name:", "required field missing")


@pytest.mark.parametrize(
    ("mutate", "fragments"),
    [
        (
            lambda o: o["spec"].update(clusters="worker-1"),
            ("spec.clusters:", "must be a list, not a string"),
        ),
        (
            lambda o: o["spec"].update(clusters=[1]),
            ("spec.clusters[0]:", "must be a string, not an integer"),
        ),
        (lambda o: o["spec"].update(clusters=[]), ("spec.clusters:", "at least 1 items, got 0")),
    ],
    ids=["string-for-list", "int-in-string-list", "below-minItems"],
)
def test_wrong_type_and_bounds(mutate: Callable[[Obj], None], fragments: tuple[str, ...]) -> None:
    obj = multikueue_config()
    mutate(obj)
    assert_rejected(obj, *fragments)


def test_int_or_string_quantity() -> None:
    obj = cluster_queue()
    resources = obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    resources[1]["nominalQuota"] = ["880Gi"]
    assert_rejected(obj, "resources[1].nominalQuota:", "must be an integer or a string, not a list")
    resources[1]["nominalQuota"] = "880 GiB"
    assert_rejected(obj, "resources[1].nominalQuota:", "does not match")


def test_string_for_integer_and_int32_overflow() -> None:
    obj = provisioning_request_config()
    obj["spec"]["retryStrategy"]["backoffLimitCount"] = "3"
    assert_rejected(
        obj, "spec.retryStrategy.backoffLimitCount:", "must be an integer, not a string"
    )
    obj["spec"]["retryStrategy"]["backoffLimitCount"] = 2**31
    assert_rejected(obj, "spec.retryStrategy.backoffLimitCount:", "signed 32-bit")


def test_minimum_and_enum_in_karmada_policy() -> None:
    obj = propagation_policy()
    scheduling = obj["spec"]["placement"]["replicaScheduling"]
    scheduling["weightPreference"]["staticWeightList"][1]["weight"] = 0
    scheduling["replicaSchedulingType"] = "Weighted"
    assert_rejected(
        obj,
        "staticWeightList[1].weight:",
        "must be >= 1",
        project="karmada",
        version=KARMADA,
    )
    assert_rejected(
        obj,
        "replicaSchedulingType:",
        "'Weighted' is not allowed; allowed:",
        project="karmada",
        version=KARMADA,
    )


def test_pattern_uses_go_end_of_text_semantics() -> None:
    obj = local_queue()
    obj["spec"]["clusterQueue"] = "team-a\n"  # Python's `$` would accept the trailing newline
    assert_rejected(obj, "spec.clusterQueue:", "does not match")


def test_go_inline_flags_after_caret_are_translated() -> None:
    python = go_regex_to_python(r"^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$")
    assert python == r"(?i)^[a-z]([-a-z0-9]*[a-z0-9])?\Z"
    assert re.search(python, "Abc")
    assert not re.search(python, "abc\n")


def test_null_in_a_non_nullable_field_is_reported() -> None:
    obj = cluster_queue()
    obj["spec"]["stopPolicy"] = None
    assert_rejected(obj, "spec.stopPolicy:", "null: the API server drops it")


def test_non_json_values_are_reported() -> None:
    obj = local_queue()
    obj["spec"]["clusterQueue"] = object()  # e.g. a pulumi.Output that leaked into a builder
    assert_rejected(obj, "spec.clusterQueue:", "not a JSON value")


# --------------------------------------------------------------------------------------------
# metadata


@pytest.mark.parametrize(
    ("meta", "fragments"),
    [
        ({"name": "Team_A"}, ("metadata.name:", "RFC 1123 subdomain")),
        ({"name": "a" * 254}, ("metadata.name:", "RFC 1123 subdomain")),
        ({"name": "q", "namespace": "team.a"}, ("metadata.namespace:", "RFC 1123 label")),
        ({"name": "q", "labels": {"app": "x" * 64}}, ("metadata.labels.app:", "label value")),
        (
            {"name": "q", "labels": {"-bad": "x"}},
            ("metadata.labels:", "key '-bad'", "qualified name"),
        ),
        (
            {"name": "q", "labels": {"a": 1}},
            ("metadata.labels.a:", "must be a string, not an integer"),
        ),
        ({"name": "q", "annotations": {"x/y/z": "v"}}, ("metadata.annotations:", "qualified name")),
    ],
    ids=["uppercase", "too-long", "ns-dot", "label-long", "label-key", "label-int", "annotation"],
)
def test_object_meta(meta: Obj, fragments: tuple[str, ...]) -> None:
    obj = local_queue()
    obj["metadata"] = {"namespace": "team-a", **meta}
    assert_rejected(obj, *fragments)


def test_namespace_on_a_cluster_scoped_kind() -> None:
    obj = cluster_queue()
    obj["metadata"]["namespace"] = "kueue-system"
    assert_rejected(obj, "metadata.namespace:", "cluster-scoped")


def test_karmada_cluster_server_side_checks() -> None:
    obj = karmada_cluster()
    obj["metadata"]["name"] = "w" * 49
    del obj["spec"]["syncMode"]
    del obj["spec"]["secretRef"]["name"]
    errors = errors_of(obj, "karmada", KARMADA)
    assert any(e.startswith("metadata.name:") and "48" in e for e in errors), errors
    assert "spec.syncMode: Unsupported value '': 'Pull', 'Push'" in errors
    assert "spec.secretRef.name: Required value" in errors


# --------------------------------------------------------------------------------------------
# List types


def test_duplicate_list_map_keys() -> None:
    obj = cluster_queue()
    checks = obj["spec"]["admissionChecksStrategy"]["admissionChecks"]
    checks.append({"name": "gpu-provisioning"})
    assert_rejected(
        obj, "admissionChecks[1]:", "duplicate entry for list-map key {'name': 'gpu-provisioning'}"
    )
    obj = cluster_queue()
    flavors = obj["spec"]["resourceGroups"][0]["flavors"]
    flavors.append(copy.deepcopy(flavors[0]))
    assert_rejected(obj, "spec.resourceGroups[0].flavors[1]:", "duplicate entry")


def test_duplicate_set_items_schema_in_0_17_and_cel_in_0_19() -> None:
    obj = multikueue_config()
    obj["spec"]["clusters"] = ["worker-1", "worker-1"]
    # v0.17.8 declares clusters a listType=set; v0.19.2 made it atomic with a CEL uniqueness rule.
    assert_rejected(obj, "spec.clusters[1]:", "(the list is a set)", version="v0.17.8")
    assert_rejected(obj, "spec.clusters:", "must be unique", version="v0.19.2")


# --------------------------------------------------------------------------------------------
# CEL


def test_cel_flavor_resources_must_match_covered_resources() -> None:
    obj = cluster_queue()
    obj["spec"]["resourceGroups"][0]["coveredResources"].append("ephemeral-storage")
    assert_rejected(
        obj, "spec.resourceGroups[0]:", "same number of resources as the coveredResources"
    )


@pytest.mark.parametrize("version", KUEUE_VERSIONS)
def test_cel_borrowing_limit_needs_a_cohort(version: str) -> None:
    obj = cluster_queue()
    del obj["spec"]["cohortName"]
    assert_rejected(
        obj, "spec:", "borrowingLimit must be nil when cohort is empty", version=version
    )


@pytest.mark.parametrize(
    "source",
    [
        {
            "kubeConfig": {"location": "worker-1-kubeconfig"},
            "clusterProfileRef": {"name": "worker-1"},
        },
        {},
    ],
    ids=["both", "neither"],
)
@pytest.mark.parametrize("version", KUEUE_VERSIONS)
def test_cel_multikueue_cluster_needs_exactly_one_source(source: Obj, version: str) -> None:
    obj = multikueue_cluster()
    obj["spec"]["clusterSource"] = source
    assert_rejected(obj, "spec.clusterSource:", "exactly one of the fields", version=version)


def test_cel_sees_schema_defaults() -> None:
    # reclaimWithinCohort is absent but defaults to Never, which the rule then forbids.
    obj = cluster_queue()
    obj["spec"]["preemption"] = {"borrowWithinCohort": {"policy": "LowerPriority"}}
    assert_rejected(obj, "spec.preemption:", "reclaimWithinCohort=Never")


def test_cel_preference_needs_try_next_flavor() -> None:
    obj = cluster_queue()
    obj["spec"]["flavorFungibility"]["preference"] = "BorrowingOverPreemption"
    assert_rejected(obj, "spec.flavorFungibility:", "preference can only be set")


def test_cel_runtime_error_fails_like_on_the_api_server() -> None:
    # No key and no operator: `x.operator` errors in the rule; the API server rejects the object.
    obj = resource_flavor()
    obj["spec"]["tolerations"] = [{"effect": "NoSchedule"}]
    assert_rejected(obj, "spec.tolerations:", "operator must be Exists", "no such member")


def test_cel_rules_on_map_items_and_nested_lists() -> None:
    obj = resource_flavor()
    obj["spec"]["nodeTaints"][0]["effect"] = "NoExecuteNow"
    assert_rejected(obj, "spec.nodeTaints:", "supported taint effect values")
    obj = resource_flavor()
    obj["spec"]["topologyName"] = "default"
    del obj["spec"]["nodeLabels"]
    assert_rejected(obj, "spec:", "at least one nodeLabel is required")


def test_transition_rules_are_skipped_for_create_and_recorded() -> None:
    report = crdschema.validate(local_queue(), "kueue", KUEUE)
    assert report.ok
    assert report.skipped == [
        crdschema.SkippedRule(
            path="spec.clusterQueue",
            rule="self == oldSelf",
            reason="transition rule (uses oldSelf): applies on update only",
            category="transition",
            schema_path=".spec.clusterQueue",
        )
    ]


@pytest.fixture
def synthetic_crds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, crdschema.ValidationLedger]]:
    """A throwaway project `synthetic/v0` in a cache dir, for rules no pinned CRD has."""
    rules = [
        {"rule": "isURL(self.endpoint)", "message": "endpoint must be a URL"},
        {"rule": "self.endpoint.size() > 3", "message": "endpoint too short"},
        {"rule": "self.endpoint ==", "message": "broken"},
        {"rule": "self.endpoint == oldSelf.endpoint", "optionalOldSelf": True},
    ]
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": {
                                    "type": "object",
                                    "properties": {"endpoint": {"type": "string"}},
                                    "x-kubernetes-validations": rules,
                                },
                            },
                        }
                    },
                }
            ],
        },
    }
    root = tmp_path / "crds"
    (root / "synthetic" / "v0").mkdir(parents=True)
    (root / "synthetic" / "v0" / "example.com_widgets.yaml").write_text(json.dumps(crd))
    monkeypatch.setattr(crdschema, "CACHE_CRDS", root)
    # A private ledger: this made-up CRD must not show up in the session summary.
    ledger = crdschema.push_ledger()
    yield "synthetic", ledger
    crdschema.pop_ledger(ledger)


def test_rules_cel_python_cannot_run_are_recorded_never_dropped(
    synthetic_crds: tuple[str, crdschema.ValidationLedger],
) -> None:
    project, ledger = synthetic_crds
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"endpoint": "ab"},
    }
    report = crdschema.validate(obj, project, "v0")
    assert report.errors == ["spec: endpoint too short (rule: self.endpoint.size() > 3)"]
    reasons = {s.rule: s.reason for s in report.skipped}
    assert all(s.category == "unsupported" and s.path == "spec" for s in report.skipped)
    assert "cel-python lacks: isURL" in reasons["isURL(self.endpoint)"]
    assert "cannot parse" in reasons["self.endpoint =="]
    assert "optionalOldSelf" in reasons["self.endpoint == oldSelf.endpoint"]
    inventory = crdschema.rule_inventory(project, "v0", "example.com/v1", "Widget")
    assert (inventory.count("evaluable"), inventory.count("unsupported")) == (1, 3)
    summary = ledger.summary_lines()
    assert summary[0] == (
        "synthetic v0 example.com/v1 Widget: 1 object(s) validated; "
        "4 CEL rule(s): 1 evaluable, 0 transition (oldSelf, update only), 3 unsupported"
    )
    assert "    skipped 1x [unsupported] .spec: isURL(self.endpoint)" in summary


# --------------------------------------------------------------------------------------------
# Rule inventories: how many CEL rules each CRD has and how many are skipped


@pytest.mark.parametrize(
    ("kind", "counts"),
    [
        # (evaluable, transition, unsupported) in kueue v0.19.2 v1beta2
        ("ClusterQueue", (4, 0, 0)),
        ("LocalQueue", (0, 1, 0)),
        ("ResourceFlavor", (7, 3, 0)),
        ("AdmissionCheck", (0, 1, 0)),
        ("MultiKueueCluster", (1, 0, 0)),
        ("MultiKueueConfig", (1, 0, 0)),
        ("ProvisioningRequestConfig", (0, 0, 0)),
        ("Topology", (2, 1, 0)),
        ("Cohort", (1, 0, 0)),
    ],
)
def test_rule_inventory_counts_per_crd(kind: str, counts: tuple[int, int, int]) -> None:
    inventory = crdschema.rule_inventory("kueue", KUEUE, V1BETA2, kind)
    got = tuple(inventory.count(s) for s in ("evaluable", "transition", "unsupported"))
    assert got == counts, inventory.summary()


def test_every_pinned_cel_rule_compiles_in_cel_python() -> None:
    unsupported: list[str] = []
    for project, version in (
        ("kueue", "v0.17.8"),
        ("kueue", KUEUE),
        ("karmada", KARMADA),
        ("kruise", KRUISE),
    ):
        for api_version, kind in crdschema.available_kinds(project, version):
            inventory = crdschema.rule_inventory(project, version, api_version, kind)
            unsupported += [
                f"{inventory.crd} {r.schema_path}: {r.rule}"
                for r in inventory.rules
                if r.status == "unsupported"
            ]
    assert unsupported == []


def test_session_summary_lists_skipped_rules_per_crd(pytester: pytest.Pytester) -> None:
    crdschema.schema_dir("kueue", KUEUE)  # skip (or fail in CI) here, not inside the inner run
    pytester.makepyfile(
        test_inner="""
        from testkit import crdschema

        def test_one():
            obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"name": "q", "namespace": "a"}, "spec": {"clusterQueue": "cq"}}
            assert crdschema.validate(obj, "kueue", "v0.19.2").ok
        """
    )
    result = pytester.runpytest_inprocess("-p", "tests.conftest_crd")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*CRD schema validation: CEL rules per CRD*",
            "kueue v0.19.2 kueue.x-k8s.io/v1beta2 LocalQueue: 1 object(s) validated; "
            "1 CEL rule(s): 0 evaluable, 1 transition (oldSelf, update only), 0 unsupported",
            "    skipped 1x [transition] .spec.clusterQueue: self == oldSelf",
            "        reason: transition rule (uses oldSelf): applies on update only",
        ]
    )


# --------------------------------------------------------------------------------------------
# Lookup, locating schemas, laziness


def test_unknown_kind_or_version_is_an_error() -> None:
    obj = cluster_queue()
    obj["apiVersion"] = "kueue.x-k8s.io/v1beta3"
    assert_rejected(
        obj,
        "no schema for kueue.x-k8s.io/v1beta3 ClusterQueue in kueue v0.19.2",
        "ClusterQueue versions: kueue.x-k8s.io/v1beta1, kueue.x-k8s.io/v1beta2",
    )
    obj["kind"] = "ClusterQueues"
    assert_rejected(obj, "known kinds:", "kueue.x-k8s.io ClusterQueue,")
    assert_rejected({"kind": "ClusterQueue"}, "apiVersion (group/version) and kind are required")


def test_deprecated_version_warns() -> None:
    obj = local_queue()
    obj["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    report = crdschema.validate(obj, "kueue", KUEUE)
    assert report.ok
    assert report.warnings == [
        "apiVersion: kueue.x-k8s.io/v1beta1 LocalQueue is deprecated in kueue v0.19.2"
    ]


def test_status_on_create_warns() -> None:
    obj = cluster_queue()
    obj["status"] = {"pendingWorkloads": 0}
    report = crdschema.validate(obj, "kueue", KUEUE)
    assert report.warnings == ["status: ignored on create (the kind has a status subresource)"]


def test_assert_valid_lists_every_error() -> None:
    obj = cluster_queue()
    obj["spec"]["queueingStrategy"] = "FIFO"
    obj["spec"]["cohort"] = "x"
    with pytest.raises(AssertionError) as failure:
        crdschema.assert_valid(obj, "kueue", KUEUE)
    message = str(failure.value)
    assert message.startswith(
        "ClusterQueue 'team-a' is invalid against kueue v0.19.2 kueue.x-k8s.io/v1beta2 "
        "ClusterQueue: 2 error(s)"
    )
    assert "spec.cohort: unknown field" in message
    assert "spec.queueingStrategy: 'FIFO'" in message


def test_missing_schemas_skip_locally_and_fail_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(crdschema.SchemaNotFoundError, match="scripts/fetch-crds"):
        crdschema.schema_dir("kueue", "v9.9.9")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="scripts/fetch-crds"):
        crdschema.schema_dir("kueue", "v9.9.9")


def test_schemas_are_read_from_the_project_cache_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "kueue" / KUEUE).mkdir(parents=True)
    monkeypatch.setattr(crdschema, "CACHE_CRDS", tmp_path)
    assert crdschema.schema_dir("kueue", KUEUE) == tmp_path / "kueue" / KUEUE
    monkeypatch.setattr(crdschema, "CACHE_CRDS", tmp_path / "absent")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=str(tmp_path / "absent" / "kueue" / KUEUE)):
        crdschema.schema_dir("kueue", KUEUE)


def test_only_the_needed_crd_file_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = crdschema._load_yaml.__wrapped__

    def spy(path: Path) -> Any:
        parsed.append(path.name)
        return real(path)

    monkeypatch.setattr(crdschema, "_load_yaml", spy)
    kind = crdschema._kind.__wrapped__  # bypass the cache so the file is loaded again
    directory = crdschema.schema_dir("kueue", KUEUE)
    assert kind(directory, "kueue", KUEUE, V1BETA2, "LocalQueue") is not None
    assert parsed == ["kueue.x-k8s.io_localqueues.yaml"]  # not the 1.4 MB workloads CRD


# --------------------------------------------------------------------------------------------
# Pins and scripts/fetch-crds


@functools.cache
def _load_script() -> ModuleType:
    """scripts/fetch-crds as a module (it has no .py suffix, so no plain import)."""
    loader = importlib.machinery.SourceFileLoader("fetch_crds", str(SCRIPT))
    spec = importlib.util.spec_from_loader("fetch_crds", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through sys.modules
    loader.exec_module(module)
    return module


def _pins() -> dict[str, Any]:
    return json.loads(PINS.read_text())["projects"]


def _pinned_versions() -> list[tuple[str, str]]:
    return [(p, v) for p, versions in _pins().items() for v in versions]


@pytest.mark.parametrize(("project", "version"), _pinned_versions())
def test_cache_holds_exactly_the_pinned_files(project: str, version: str) -> None:
    directory = crdschema.schema_dir(project, version)
    pinned = {name: f["sha256"] for name, f in _pins()[project][version]["files"].items()}
    on_disk = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in directory.iterdir()}
    assert pinned == on_disk


@pytest.mark.parametrize(("project", "version"), _pinned_versions())
def test_every_pin_names_its_module_and_the_same_file_on_github(project: str, version: str) -> None:
    entry = _pins()[project][version]
    raw = entry["repository"].replace("github.com", "raw.githubusercontent.com")
    for name, f in entry["files"].items():
        assert set(f) >= {"module", "version", "path", "sha256", "url"}, name
        assert re.fullmatch(r"[0-9a-f]{64}", f["sha256"]), name
        assert f["url"].startswith(raw + "/"), name
        assert f["url"].endswith("/" + f["path"]), name
        if "extract" not in f:
            assert f["path"].rpartition("/")[2] == name
        # A module version other than the release's is a stand-in; docs/upstream-pins.md says why.
        if f["version"] != version:
            assert (project, version) in {("kueue", "v0.17.8"), ("kruise", "v1.9.0")}, name


def test_only_two_kueue_0_17_8_files_are_stand_ins() -> None:
    """The proxy serves no v0.17.8: 9 files are byte-identical in served versions (the sha256 of
    the v0.17.8 tag); two are v0.17.1's, and the pin keeps the tag's hash beside them."""
    files = _pins()["kueue"]["v0.17.8"]["files"]
    stand_ins = {n: f for n, f in files.items() if "stand_in_for" in f}
    assert sorted(stand_ins) == [
        "kueue.x-k8s.io_provisioningrequestconfigs.yaml",
        "kueue.x-k8s.io_workloads.yaml",
    ]
    for f in stand_ins.values():
        assert f["version"] == "v0.17.1"
        assert f["stand_in_for"]["tag"] == "v0.17.8"
        assert f["stand_in_for"]["sha256"] != f["sha256"]


def test_swagger_subset_is_rebuilt_byte_for_byte() -> None:
    fetch = _load_script()
    target = (
        crdschema.schema_dir("karmada", KARMADA)
        / "cluster.karmada.io_v1alpha1.swagger-definitions.json"
    )
    subset = json.loads(target.read_text())
    upstream = {
        "swagger": subset["swagger"],
        "info": subset["info"],
        "paths": {"/apis/cluster.karmada.io/v1alpha1/clusters": {"get": {}}},
        "parameters": {"body": {"in": "body"}},
        "definitions": {
            "com.github.karmada-io.karmada.pkg.apis.policy.v1alpha1.PropagationPolicy": {
                "type": "object"
            },
            **subset["definitions"],
            "io.k8s.api.core.v1.Taint": {"type": "object"},
        },
    }
    pins = [p for p in fetch.load_pins(PINS) if p.name == target.name]
    assert len(pins) == 1
    rebuilt = fetch.extract(pins[0], json.dumps(upstream, indent=1).encode())
    assert rebuilt == target.read_bytes()


def test_fetch_dry_run_lists_every_pin(tmp_path: Path) -> None:
    assert os.access(SCRIPT, os.X_OK)
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--dry-run", "--dest", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = result.stdout.splitlines()
    expected = [
        (f"{f['module']}@{f['version']} {f['path']} (or {f['url']})", tmp_path / p / v / name)
        for p, versions in _pins().items()
        for v, entry in versions.items()
        for name, f in entry["files"].items()
    ]
    assert len(lines) == len(expected) == 37
    for source, dest in expected:
        assert any(line == f"fetch {source} -> {dest} " + line.rpartition(" ")[2] for line in lines)
    assert list(tmp_path.iterdir()) == []  # a dry run writes nothing


def _fake_proxy(root: Path, module: str, version: str, files: dict[str, bytes]) -> str:
    """A GOPROXY directory serving one module version (the layout of the module proxy)."""
    at = root / module / "@v"
    at.mkdir(parents=True)
    (at / "list").write_text(version + "\n")
    (at / f"{version}.info").write_text(json.dumps({"Version": version}))
    (at / f"{version}.mod").write_text(f"module {module}\n")
    with zipfile.ZipFile(at / f"{version}.zip", "w") as archive:
        archive.writestr(f"{module}@{version}/go.mod", f"module {module}\n")
        for path, data in files.items():
            archive.writestr(f"{module}@{version}/{path}", data)
    return root.as_uri()


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain")
def test_fetch_reads_the_go_module_and_checks_the_pin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real `go mod download` path, against a local proxy (GOSUMDB off: a made-up module)."""
    fetch = _load_script()
    crd = b"kind: CustomResourceDefinition\n"
    proxy = _fake_proxy(tmp_path / "proxy", "example.com/crds", "v1.0.0", {"crd/a.yaml": crd})
    monkeypatch.setenv("GOPROXY", proxy)
    monkeypatch.setenv("GOSUMDB", "off")
    monkeypatch.setenv("GOPATH", str(tmp_path / "gopath"))
    pin = {
        "module": "example.com/crds",
        "version": "v1.0.0",
        "path": "crd/a.yaml",
        "url": "https://unreachable.invalid/a.yaml",
        "sha256": hashlib.sha256(crd).hexdigest(),
    }
    pins = tmp_path / "pins.json"
    pins.write_text(json.dumps({"projects": {"demo": {"v1": {"files": {"a.yaml": pin}}}}}))
    args = ["--pins", str(pins), "--dest", str(tmp_path / "cache")]
    args += ["--gomodcache", str(tmp_path / "gomod")]
    assert fetch.main(args) == 0
    assert "fetch a.yaml from example.com/crds@v1.0.0" in capsys.readouterr().out
    assert (tmp_path / "cache" / "demo" / "v1" / "a.yaml").read_bytes() == crd

    pin["sha256"] = "0" * 64  # the module holds other bytes than pinned: refuse them
    pins.write_text(json.dumps({"projects": {"demo": {"v2": {"files": {"a.yaml": pin}}}}}))
    assert fetch.main(args) == 1
    assert "pinned 000" in capsys.readouterr().err
    assert not (tmp_path / "cache" / "demo" / "v2").exists()


def test_fetch_without_go_uses_the_urls_verified_atomic_and_idempotent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The URL path (--no-go) against file:// URLs, since this machine has no internet."""
    fetch = _load_script()
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    names = ["kueue.x-k8s.io_localqueues.yaml", "kueue.x-k8s.io_clusterqueues.yaml"]
    for n in names:
        (upstream / n).write_text(f"kind: CustomResourceDefinition\nmetadata: {{name: {n}}}\n")
    files = {
        n: {
            "module": "sigs.k8s.io/kueue",
            "version": KUEUE,
            "path": f"config/{n}",
            "url": (upstream / n).as_uri(),
            "sha256": hashlib.sha256((upstream / n).read_bytes()).hexdigest(),
        }
        for n in names
    }
    pins = tmp_path / "pins.json"
    pins.write_text(json.dumps({"projects": {"kueue": {KUEUE: {"files": files}}}}))
    dest = tmp_path / "cache"
    target = dest / "kueue" / KUEUE
    args = ["--no-go", "--pins", str(pins), "--dest", str(dest)]

    assert fetch.main(args) == 0
    assert "fetched 2 file(s)" in capsys.readouterr().out
    assert sorted(p.name for p in target.iterdir()) == sorted(names)

    assert fetch.main(args) == 0
    assert "up to date" in capsys.readouterr().out

    (target / names[0]).write_text("tampered")
    assert fetch.main(args) == 0
    out = capsys.readouterr().out
    assert "fetched 1 file(s)" in out
    assert f"fetch {names[0]} from {files[names[0]]['url']}" in out
    assert f"fetch {names[1]} from" not in out
    assert (target / names[0]).read_bytes() == (upstream / names[0]).read_bytes()

    files[names[1]]["sha256"] = "0" * 64  # upstream changed under a pin: refuse it
    (target / names[1]).unlink()
    pins.write_text(json.dumps({"projects": {"kueue": {KUEUE: {"files": files}}}}))
    assert fetch.main(args) == 1
    err = capsys.readouterr().err
    assert "pinned 000" in err
    assert "Run scripts/fetch-crds again" in err
