"""Karmada's control plane, its policies and Kruise as the stacks harden them: propagated
dependencies, API server ranges, failover, replicas and disruption budgets, member access; pure
builders and checks.

Value names were read in karmada-io/karmada v1.18.2 (charts/karmada/values.yaml, templates/
_helpers.tpl `karmada.controllerManager.featureGates`, the `podDisruptionBudget` blocks and
`etcd.internal.replicaCount` in templates/) and openkruise/charts versions/kruise/1.9.0/values.yaml
(`webhookConfiguration.aksIntegration`). A misspelt Helm value is silently ignored, so the tests
pin the exact paths.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from builders import applications as apps
from builders import karmada as kb
from builders import karmada_access as ka
from checks.stack import load_from_file, parse_fleet
from config.models import FleetConfig
from testkit.repo import COMMITTED_STACKS, ROOT
from testkit.shared.karmada_config import BASE, errors_for

Rules = list[dict[str, list[str]]]


def fleet_of(raw: dict[str, Any]) -> FleetConfig:
    return parse_fleet(raw)[0]


def with_karmada(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(BASE)
    raw["karmada"].update(copy.deepcopy(changes))
    return raw


def values_of(raw: dict[str, Any]) -> dict[str, Any]:
    return kb.karmada_values(fleet_of(raw), address="20.1.2.3", resource_group="g")


def policy_of(raw: dict[str, Any]) -> dict[str, Any]:
    (policy,) = [m.obj for m in kb.render_karmada(fleet_of(raw)) if m.kind == "PropagationPolicy"]
    return policy


# --- M2: the dependencies distributor ---------------------------------------------------------


def test_propagate_deps_is_on_in_the_chart_and_in_every_policy() -> None:
    """The chart's default `PropagateDeps: false` overrides the binary's true; policies default to
    `propagateDeps: false`. Both must be on for GetDependencies to be used at all."""
    dev = load_from_file("dev")[0]
    gates = kb.karmada_values(dev, address="a", resource_group="g")["controllerManager"]
    assert gates["featureGates"]["PropagateDeps"] is True
    for manifest in kb.render_karmada(dev):
        if manifest.kind == "PropagationPolicy":
            assert manifest.obj["spec"]["propagateDeps"] is True


# --- M3: who may reach the API server ---------------------------------------------------------


def test_public_api_server_admits_only_the_allowed_ranges() -> None:
    raw = with_karmada(apiServer={"allowedSourceRanges": ["203.0.113.0/24", "198.51.100.7/32"]})
    annotations = values_of(raw)["apiServer"]["serviceAnnotations"]
    assert annotations["service.beta.kubernetes.io/azure-allowed-ip-ranges"] == (
        "203.0.113.0/24,198.51.100.7/32"
    )


def test_public_api_server_without_ranges_is_refused() -> None:
    raw = with_karmada(apiServer={"exposure": "public"})
    (error,) = errors_for(raw)
    assert error.startswith("karmada.apiServer.allowedSourceRanges: required with exposure: public")


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        ([], "karmada.apiServer.allowedSourceRanges: List should have at least 1 item"),
        (["10.0.0.1/8"], "karmada.apiServer.allowedSourceRanges[0]:"),
        ([True], "must be written as a string"),
    ],
)
def test_bad_source_ranges_name_their_key(ranges: list[Any], message: str) -> None:
    errors = errors_for(with_karmada(apiServer={"allowedSourceRanges": ranges}))
    assert any(message in e for e in errors), errors


def test_internal_api_server_may_also_be_restricted() -> None:
    raw = with_karmada(
        apiServer={
            "exposure": "internal",
            "internalIp": "10.224.0.50",
            "allowedSourceRanges": ["10.224.0.0/12"],
        }
    )
    raw["clusters"][0]["network"] = {"mode": "nodeSubnet"}
    (release,) = kb.karmada_releases(fleet_of(raw))
    annotations = release.values["apiServer"]["serviceAnnotations"]
    assert annotations == {
        "service.beta.kubernetes.io/azure-load-balancer-internal": "true",
        "service.beta.kubernetes.io/azure-load-balancer-ipv4": "10.224.0.50",
        "service.beta.kubernetes.io/azure-allowed-ip-ranges": "10.224.0.0/12",
    }


# --- M5: Kruise on AKS ------------------------------------------------------------------------


def test_kruise_aks_integration_on_aks_members_only_unless_configured() -> None:
    raw = copy.deepcopy(BASE)
    raw["clusters"].append(
        {
            "name": "kind-1",
            "role": "worker",
            "source": "existing",
            "existing": {"kubeconfigPath": "kind.yaml"},
        }
    )
    releases = {r.target: r.values for r in kb.kruise_releases(fleet_of(raw))}
    assert {m: v["webhookConfiguration"] for m, v in releases.items()} == {
        "worker-1": {"aksIntegration": True},
        "worker-2": {"aksIntegration": True},
        "kind-1": {"aksIntegration": False},
    }
    raw["karmada"]["kruise"] = {"aksIntegration": True}  # an existing AKS cluster
    releases = {r.target: r.values for r in kb.kruise_releases(fleet_of(raw))}
    assert releases["kind-1"]["webhookConfiguration"] == {"aksIntegration": True}


# --- M6: failover -----------------------------------------------------------------------------


def test_failover_is_off_by_default() -> None:
    values = values_of(BASE)["controllerManager"]
    assert values["featureGates"]["Failover"] is False
    assert "extraCommandArgs" not in values
    assert "failover" not in policy_of(BASE)["spec"]
    assert "clusterTolerations" not in policy_of(BASE)["spec"]["placement"]
    kinds = {m.kind for m in kb.render_karmada(fleet_of(BASE))}
    assert "ClusterTaintPolicy" not in kinds


def test_cluster_failover_taints_not_ready_members_and_evicts_after_the_toleration() -> None:
    """Karmada v1.18.2 moves nothing off a NotReady member by itself: the Failover gate, the
    controller-manager's --enable-no-execute-taint-eviction, a ClusterTaintPolicy adding a
    NoExecute taint, and (so that a short outage moves nothing) a toleration in the policy."""
    raw = with_karmada(failover={"enabled": True, "tolerationSeconds": 120})
    manager = values_of(raw)["controllerManager"]
    assert manager["extraCommandArgs"] == {"enable-no-execute-taint-eviction": "true"}
    (taints,) = [m for m in kb.render_karmada(fleet_of(raw)) if m.kind == "ClusterTaintPolicy"]
    assert taints.target == "karmada"
    assert taints.obj == {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "ClusterTaintPolicy",
        "metadata": {"name": "fleet-member-not-ready"},
        "spec": {
            "targetClusters": {"clusterNames": ["worker-1", "worker-2"]},
            "addOnConditions": [
                {"conditionType": "Ready", "operator": "NotIn", "statusValues": ["True"]}
            ],
            "removeOnConditions": [
                {"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}
            ],
            "taints": [{"key": "cluster.karmada.io/not-ready", "effect": "NoExecute"}],
        },
    }
    assert policy_of(raw)["spec"]["placement"]["clusterTolerations"] == [
        {
            "key": "cluster.karmada.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 120,
        }
    ]


def test_failover_turns_on_the_gate_and_the_policy_block() -> None:
    raw = with_karmada(failover={"enabled": True})
    assert values_of(raw)["controllerManager"]["featureGates"] == {
        "PropagateDeps": True,
        "Failover": True,
    }
    assert policy_of(raw)["spec"]["failover"] == {"cluster": {"purgeMode": "Gracefully"}}
    raw = with_karmada(
        failover={
            "enabled": True,
            "purgeMode": "Directly",
            "application": {"tolerationSeconds": 60, "gracePeriodSeconds": 300},
        }
    )
    assert policy_of(raw)["spec"]["failover"] == {
        "cluster": {"purgeMode": "Directly"},
        "application": {
            "decisionConditions": {"tolerationSeconds": 60},
            "purgeMode": "Gracefully",
            "gracePeriodSeconds": 300,
        },
    }


@pytest.mark.parametrize(
    ("failover", "message"),
    [
        (
            {"application": {}},
            "karmada.failover.application: only with failover.enabled: true",
        ),
        (
            {"enabled": True, "application": {"purgeMode": "Never", "gracePeriodSeconds": 30}},
            "karmada.failover.application.gracePeriodSeconds: only with purgeMode: Gracefully",
        ),
        (
            {"enabled": True, "purgeMode": "Never"},
            "karmada.failover.purgeMode: Input should be 'Directly' or 'Gracefully'",
        ),
    ],
)
def test_bad_failover_settings(failover: dict[str, Any], message: str) -> None:
    errors = errors_for(with_karmada(failover=failover))
    assert any(message in e for e in errors), errors


# --- M7: replicas, disruption budgets, etcd members -------------------------------------------


def test_control_plane_replicas_and_disruption_budgets() -> None:
    single = values_of(BASE)
    for component in kb.COMPONENTS:
        assert single[component]["replicaCount"] == 1
        # The chart renders a PDB only for a non-empty value: none for one replica.
        assert "podDisruptionBudget" not in single[component]
    raw = with_karmada(controlPlane={"replicas": 2}, etcd={"replicas": 3})
    raw["clusters"][0]["systemPool"] = {"count": 3}
    ha = values_of(raw)
    for component in kb.COMPONENTS:
        assert ha[component]["replicaCount"] == 2, component
        assert ha[component]["podDisruptionBudget"] == {"maxUnavailable": 1}, component
    assert ha["etcd"]["internal"]["replicaCount"] == 3


def test_etcd_members_need_a_node_each_on_the_host() -> None:
    raw = with_karmada(etcd={"replicas": 3})
    raw["clusters"][0]["systemPool"] = {"count": 2}
    (error,) = errors_for(raw)
    assert error.startswith("karmada.etcd.replicas: 3 etcd members need as many nodes on 'manager'")
    raw["clusters"][0]["pools"] = [
        {"name": "apps", "vmSize": "Standard_D4s_v5", "minCount": 1, "maxCount": 3}
    ]
    assert parse_fleet(raw)[0].karmada is not None
    errors = errors_for(with_karmada(etcd={"replicas": 2}))
    assert any("karmada.etcd.replicas: Input should be 1, 3 or 5" in e for e in errors), errors


def test_api_server_replicas_need_a_node_each_on_the_host() -> None:
    raw = with_karmada(controlPlane={"replicas": 3})  # BASE's manager: 2 system nodes
    (error,) = errors_for(raw)
    assert error.startswith(
        "karmada.controlPlane.replicas: 3 API server replicas need as many nodes on 'manager'"
    )
    raw["clusters"][0]["systemPool"] = {
        "count": 3,
        "autoscaling": True,
        "minCount": 3,
        "maxCount": 5,
    }
    assert parse_fleet(raw)[0].karmada is not None


# --- member access (the real-tier proof is separate) ------------------------------------------


def _matches(values: list[str], value: str) -> bool:
    return "*" in values or value in values


def allows(rules: Rules, verb: str, group: str, resource: str, name: str | None = None) -> bool:
    """Kubernetes RBAC for one resource request (rbac/v1 PolicyRule semantics)."""
    for rule in rules:
        if "nonResourceURLs" in rule:
            continue
        if not (
            _matches(rule["verbs"], verb)
            and _matches(rule["apiGroups"], group)
            and _matches(rule["resources"], resource)
        ):
            continue
        names = rule.get("resourceNames")
        if names and (name is None or name not in names):
            continue
        return True
    return False


def allows_url(rules: Rules, path: str) -> bool:
    for rule in rules:
        for pattern in rule.get("nonResourceURLs", []):
            if rule["verbs"] != ["get"] and "get" not in rule["verbs"]:
                continue
            if pattern == path or (pattern.endswith("*") and path.startswith(pattern[:-1])):
                return True
    return False


WRITE = ("get", "list", "watch", "create", "update", "patch", "delete")
# What the push-mode controllers of Karmada v1.18.2 do in a member for this stack's kinds:
# execution/work-status (every propagated kind and its dependencies), cluster-status (nodes,
# pods, health and discovery), unified-auth (the karmada-impersonator ClusterRole and binding).
NEEDED: list[tuple[str, str, str, str | None]] = [
    *((v, "", r, None) for v in WRITE for r in ("namespaces", "configmaps", "secrets")),
    *((v, "", r, None) for v in WRITE for r in ("serviceaccounts", "persistentvolumeclaims")),
    *((v, "apps.kruise.io", "uniteddeployments", None) for v in WRITE),
    *((v, "", r, None) for v in ("get", "list", "watch") for r in ("nodes", "pods")),
    *(
        (v, "rbac.authorization.k8s.io", r, None)
        for v in ("list", "watch", "create")
        for r in ("clusterroles", "clusterrolebindings")
    ),
    *(
        (v, "rbac.authorization.k8s.io", r, "karmada-impersonator")
        for v in ("get", "update", "patch", "delete")
        for r in ("clusterroles", "clusterrolebindings")
    ),
    # The impersonator role unified auth writes for the chart's cluster-proxy-admin binding:
    # creating it needs the permission it grants.
    ("impersonate", "", "users", "system:admin"),
]
NEEDED_URLS = ("/readyz", "/healthz", "/version", "/api", "/apis", "/apis/apps.kruise.io/v1alpha1")
# Kinds this stack never propagates, and the verbs that would make the credential cluster admin.
UNRELATED: list[tuple[str, str, str, str | None]] = [
    ("create", "apps", "deployments", None),
    ("delete", "batch", "jobs", None),
    ("update", "kueue.x-k8s.io", "clusterqueues", None),
    ("create", "", "pods", None),
    ("delete", "", "nodes", None),
    ("update", "rbac.authorization.k8s.io", "clusterroles", "cluster-admin"),
    ("delete", "rbac.authorization.k8s.io", "clusterrolebindings", "cluster-admin"),
    ("escalate", "rbac.authorization.k8s.io", "clusterroles", "karmada-impersonator"),
    ("bind", "rbac.authorization.k8s.io", "clusterroles", "cluster-admin"),
    ("impersonate", "", "users", None),
    ("impersonate", "", "users", "kubernetes-admin"),
    ("impersonate", "", "groups", "system:masters"),
    ("impersonate", "", "serviceaccounts", "kruise-manager"),
    ("create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", None),
]


def rules_for(access: str) -> Rules:
    fleet = fleet_of(with_karmada(memberAccess=access))
    role = next(
        m.obj
        for m in kb.render_karmada(fleet)
        if m.kind == "ClusterRole" and m.target == "worker-1"
    )
    return role["rules"]


def test_scoped_member_access_is_the_default() -> None:
    """The upstream wildcard is a switch, off by default (the real tier proves the scoped role
    sufficient: status, health, sync and deletion)."""
    karmada = fleet_of(BASE).karmada
    assert karmada is not None
    assert karmada.member_access == "scoped"
    assert ka.member_rules(karmada) == rules_for("scoped")


def test_wildcard_member_access_is_what_join_grants() -> None:
    rules = rules_for("wildcard")
    assert all(allows(rules, *request) for request in NEEDED + UNRELATED)


# The scoped role's can-i table (namespaced Roles included) is in tests/test_member_access.py.


def test_bad_member_access_is_named() -> None:
    errors = errors_for(with_karmada(memberAccess="admin"))
    assert any(e.startswith("karmada.memberAccess: Input should be 'wildcard'") for e in errors)


def test_policy_failover_requires_dependencies_to_move_too() -> None:
    """Upstream: with failover.application set, propagateDeps should be true."""
    raw = with_karmada(failover={"enabled": True, "application": {}})
    spec = apps.propagation_policy(
        fleet_of(raw).karmada.applications[0],  # type: ignore[union-attr]
        fleet_of(raw).karmada.failover,  # type: ignore[union-attr]
    )["spec"]
    assert spec["propagateDeps"] is True
    assert "application" in spec["failover"]


def test_the_prod_example_fits_the_prod_stack() -> None:
    """examples/karmada-prod.yaml on Pulumi.prod.yaml: internal, restricted, HA, failover."""
    example = yaml.safe_load((ROOT / "examples" / "karmada-prod.yaml").read_text())
    doc = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())
    raw = doc["config"]["aks-batch-fleet:fleet"]
    raw["location"] = doc["config"]["azure-native:location"]
    raw["clusters"][0]["network"] = example["managerNetwork"]
    raw["karmada"] = example["karmada"]
    fleet = fleet_of(raw)
    (release,) = kb.karmada_releases(fleet)
    values = release.values
    assert values["apiServer"]["serviceAnnotations"] == {
        "service.beta.kubernetes.io/azure-load-balancer-internal": "true",
        "service.beta.kubernetes.io/azure-load-balancer-ipv4": "10.16.0.10",
        "service.beta.kubernetes.io/azure-allowed-ip-ranges": "10.16.0.0/16",
    }
    assert values["etcd"]["internal"]["replicaCount"] == 3
    assert all(values[c]["replicaCount"] == 2 for c in kb.COMPONENTS)
    assert values["controllerManager"]["featureGates"] == {"PropagateDeps": True, "Failover": True}
    assert "failover" in policy_of(raw)["spec"]


# The objects the karmada chart (v1.18.2) itself applies to the Karmada API server through its
# static-resource and pre-install jobs (templates/_karmada_*.tpl): the stack must create none of
# them, or the first `pulumi up` fails with AlreadyExists (pulumi-kubernetes >= 4.29).
CHART_STATIC_OBJECTS = {
    ("Namespace", "karmada-system"),
    ("Namespace", "karmada-cluster"),
    ("ClusterRole", "karmada-view"),
    ("ClusterRole", "karmada-edit"),
    ("ClusterRole", "karmada-cluster-proxy-admin"),
    ("ClusterRoleBinding", "karmada-cluster-proxy-admin"),
    ("ConfigMap", "cluster-info"),
    ("MutatingWebhookConfiguration", "mutating-config"),
    ("ValidatingWebhookConfiguration", "validating-config"),
    ("APIService", "v1alpha1.cluster.karmada.io"),
}


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_the_committed_stack_renders_nothing_the_chart_makes(stack: str) -> None:
    fleet = load_from_file(stack)[0]
    on_karmada = {(m.kind, m.name) for m in kb.render_karmada(fleet) if m.target == "karmada"}
    assert on_karmada or stack != "dev", "dev renders Karmada objects"
    assert on_karmada & CHART_STATIC_OBJECTS == set()
