"""Karmada config: host and members, API exposure, applications; every error names its key path."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from checks.stack import load_from_file, parse_fleet
from config.resolve import host_name, member_names
from testkit.shared.config import with_change
from testkit.shared.karmada_config import APP, BASE, RUNNER, errors_for


def changed(path: str, value: Any) -> dict[str, Any]:
    """Copy of BASE with `a.b[0].c` set, or deleted when value is `...`."""
    return with_change(path, value, BASE)


def test_base_is_valid_and_resolves_host_and_members() -> None:
    fleet, warnings = parse_fleet(BASE)
    assert warnings == []
    assert host_name(fleet) == "manager"
    assert member_names(fleet) == ["worker-1", "worker-2"]
    settings = fleet.karmada
    assert settings is not None
    assert settings.chart_version == "v1.18.2"
    assert settings.kruise.chart_version == "1.9.0"
    assert settings.api_server.exposure == "public"
    assert settings.etcd.storage == "pvc"


def test_dev_stack_carries_the_seed_application() -> None:
    fleet, _ = load_from_file("dev")
    assert fleet.karmada is not None
    (app,) = fleet.karmada.applications
    assert app.replicas == 6
    assert app.propagation.weights == {"worker-1": 1, "worker-2": 2}
    assert [(s.name, s.replicas, s.virtual_nodes) for s in app.subsets] == [
        ("subset-a", "50%", False),
        ("subset-b", None, True),
    ]
    # Both members receive the virtual-node subset, so both have virtual nodes in dev.
    assert all(c.virtual_nodes.enabled for c in fleet.workers)


def test_karmada_is_optional() -> None:
    raw = copy.deepcopy(BASE)
    del raw["karmada"]
    fleet, _ = parse_fleet(raw)
    assert fleet.karmada is None
    assert host_name(fleet) is None
    assert member_names(fleet) == []


def test_single_cluster_hosts_and_joins_itself() -> None:
    raw = {
        "location": "westeurope",
        "clusters": [{"name": "solo", "role": "standalone", "virtualNodes": {"enabled": True}}],
        "karmada": {
            "apiServer": {"allowedSourceRanges": [RUNNER]},
            "applications": [{**APP, "propagation": {"weights": {"solo": 1}}}],
        },
    }
    fleet, _ = parse_fleet(raw)
    assert host_name(fleet) == "solo"
    assert member_names(fleet) == ["solo"]


def test_explicit_members_override_the_default() -> None:
    raw = changed("karmada.members", ["worker-2"])
    raw["karmada"]["applications"][0]["propagation"]["weights"] = {"worker-2": 1}
    fleet, _ = parse_fleet(raw)
    assert member_names(fleet) == ["worker-2"]


BAD: list[tuple[str, Any, str]] = [
    ("karmada.host", "nope", "karmada.host: no cluster named 'nope' in clusters"),
    (
        "karmada.members",
        ["manager", "worker-1", "worker-2"],
        "karmada.members[0]: 'manager' has role 'manager'; members must be worker or standalone",
    ),
    (
        "karmada.members",
        ["worker-1", "worker-1", "worker-2"],
        "karmada.members: 'worker-1' is listed more than once",
    ),
    ("karmada.members", [], "karmada.members: Karmada needs at least one member"),
    (
        "karmada.chartVersion",
        "1.18.2",
        "karmada.chartVersion: String should match pattern '^v\\d+",
    ),
    (
        "karmada.kruise.chartVersion",
        "v1.9.0",
        "karmada.kruise.chartVersion: String should match pattern '^\\d+",
    ),
    (
        "karmada.kruise.featureGates",
        {"imagePullJobGate": True},
        "karmada.kruise.featureGates.imagePullJobGate: feature gate names are CamelCase",
    ),
    (
        "karmada.kruise.managerReplicas",
        0,
        "karmada.kruise.managerReplicas: Input should be greater",
    ),
    (
        "karmada.apiServer.exposure",
        "Public",
        "karmada.apiServer.exposure: Input should be 'public' or 'internal' (got 'Public')",
    ),
    (
        "karmada.apiServer.internalIp",
        "10.224.0.50",
        "karmada.apiServer.internalIp: only with exposure: internal",
    ),
    ("karmada.etcd.storage", "disk", "karmada.etcd.storage: Input should be 'pvc' or 'hostPath'"),
    ("karmada.etcd.size", "8GB", "karmada.etcd.size: '8GB' is not a Kubernetes quantity"),
    (
        "karmada.applications[0].namespace",
        "kube-system",
        "karmada.applications[0].namespace: Karmada never propagates objects in 'kube-system'",
    ),
    (
        "karmada.applications[0].namespace",
        "karmada-es-worker-1",
        "karmada.applications[0].namespace: Karmada never propagates objects in",
    ),
    (
        "karmada.applications[0].name",
        "Sample_UD",
        "karmada.applications[0].name: 'Sample_UD' must be a DNS-1123 label",
    ),
    (
        "karmada.applications[0].replicas",
        -1,
        "karmada.applications[0].replicas: Input should be greater than or equal to 0",
    ),
    (
        "karmada.applications[0].template.kind",
        "Deployment",
        "karmada.applications[0].template.kind: Input should be 'deployment', 'cloneSet', "
        "'statefulSet' or 'advancedStatefulSet' (got 'Deployment')",
    ),
    (
        "karmada.applications[0].template.resources.requests",
        {"cpu": "lots"},
        "karmada.applications[0].template.resources.requests.cpu: 'lots' is not a Kubernetes",
    ),
    (
        "karmada.applications[0].template.ports",
        [0],
        "karmada.applications[0].template.ports: port 0 is not in 1..65535",
    ),
    (
        "karmada.applications[0].propagation.weights",
        {"worker-1": 1, "worker-3": 2},
        "karmada.applications[0].propagation.weights.worker-3: 'worker-3' is not a Karmada "
        "member (members: worker-1, worker-2)",
    ),
    (
        "karmada.applications[0].propagation.weights",
        {"worker-1": 0, "worker-2": 2},
        "karmada.applications[0].propagation.weights.worker-1: weight must be >= 1",
    ),
    (
        "karmada.applications[0].propagation.weights",
        {},
        "karmada.applications[0].propagation.weights: Dictionary should have at least 1 item",
    ),
    (
        "karmada.applications[0].subsets[0].replicas",
        "150%",
        "karmada.applications[0].subsets[0].replicas: '150%' must be an integer or a percentage",
    ),
    (
        "karmada.applications[0].subsets[0].replicas",
        "50",
        "karmada.applications[0].subsets[0].replicas: '50' must be an integer or a percentage",
    ),
    (
        "karmada.applications[0].subsets[0].replicas",
        -2,
        "karmada.applications[0].subsets[0].replicas: -2 must be >= 0",
    ),
    (
        "karmada.applications[0].subsets[0].replicas",
        True,
        "karmada.applications[0].subsets[0].replicas",
    ),
    (
        "karmada.applications[0].propagation.weights",
        {"worker-1": True},
        "karmada.applications[0].propagation.weights.worker-1: Input should be a valid integer",
    ),
    (
        "karmada.applications[0].subsets[0].name",
        "subset_a",
        "karmada.applications[0].subsets[0].name: 'subset_a' must be a DNS-1123 label",
    ),
    (
        "karmada.applications[0].subsets[1].name",
        "subset-a",
        "karmada.applications[0].subsets[1].name: subset 'subset-a' is declared more than once",
    ),
    (
        "karmada.applications[0].subsets",
        [{"name": "a", "replicas": 4}, {"name": "b", "replicas": 4}],
        "karmada.applications[0].subsets: OpenKruise would reject this placement: member "
        "worker-1 (2 replicas): sum of subset replicas (8) is greater than the UnitedDeployment "
        "replicas (2)",
    ),
    (
        "karmada.applications[0].subsets[0].tolerations",
        [{"key": "k", "operator": "exists"}],
        "karmada.applications[0].subsets[0].tolerations[0].operator: Input should be 'Equal' or "
        "'Exists' (got 'exists')",
    ),
    (
        "karmada.applications[0].subsets[0].tolerations",
        [{"key": "k", "operator": "Exists", "value": "v"}],
        "karmada.applications[0].subsets[0].tolerations[0].value: must be empty with operator "
        "Exists",
    ),
    (
        "karmada.applications[0].subsets[0].nodeSelectorTerm",
        {"matchExpressions": [{"key": "zone", "operator": "in", "values": ["1"]}]},
        "karmada.applications[0].subsets[0].nodeSelectorTerm.matchExpressions[0].operator: "
        "Input should be 'In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt' or 'Lt' (got 'in')",
    ),
    (
        "karmada.applications[0].subsets[0].nodeSelectorTerm",
        {"matchExpressions": [{"key": "zone", "operator": "In"}]},
        "karmada.applications[0].subsets[0].nodeSelectorTerm.matchExpressions[0].values: "
        "operator In needs at least one value",
    ),
    (
        "karmada.applications[0].subsets[0].nodeSelectorTerm",
        {"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["many"]}]},
        "karmada.applications[0].subsets[0].nodeSelectorTerm.matchExpressions[0].values: "
        "operator Gt needs exactly one integer value",
    ),
    (
        "karmada.applications[0].subsets[0].nodeSelectorTerm",
        {"matchExpressions": [{"key": "-bad", "operator": "Exists"}]},
        "karmada.applications[0].subsets[0].nodeSelectorTerm.matchExpressions[0].key: label key",
    ),
    (
        "karmada.applications[0].subsets[0].nodeSelectorTerm",
        {"matchExpressions": [{"key": "type", "operator": "Exists"}]},
        "karmada.applications[0].subsets[0].nodeSelectorTerm: virtualNodes already sets the "
        "'type' expression",
    ),
    (
        "karmada.applications[0].subsets[0].nodeSelectorTerm",
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]},
        "karmada.applications[0].subsets[0].nodeSelectorTerm.matchFields: unknown key",
    ),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD, ids=[b[2][:60] for b in BAD])
def test_bad_values_are_reported_with_their_key_path(path: str, value: Any, message: str) -> None:
    errors = errors_for(changed(path, value))
    assert any(e.startswith(message) for e in errors), errors


def test_virtual_subset_needs_virtual_nodes_on_every_receiving_member() -> None:
    raw = changed("clusters[2].virtualNodes.enabled", False)
    errors = errors_for(raw)
    assert errors == [
        "karmada.applications[0].subsets[1].virtualNodes: member 'worker-2' receives this subset "
        "but has no virtual nodes: set virtualNodes.enabled on 'worker-2' or drop its weight"
    ]
    # Weighting only the member with virtual nodes is the other way out.
    raw["karmada"]["applications"][0]["propagation"]["weights"] = {"worker-1": 1}
    parse_fleet(raw)


def test_host_is_required_without_a_manager_among_several_clusters() -> None:
    raw = copy.deepcopy(BASE)
    raw["clusters"][0]["role"] = "standalone"
    raw["clusters"][1]["role"] = "standalone"
    raw["clusters"][2]["role"] = "standalone"
    assert "karmada.host: required: there is no manager and more than one cluster" in " ".join(
        errors_for(raw)
    )
    raw["karmada"]["host"] = "manager"
    fleet, _ = parse_fleet(raw)
    assert host_name(fleet) == "manager"
    assert member_names(fleet) == ["manager", "worker-1", "worker-2"]


def test_karmada_cluster_names_are_short_lowercase_labels() -> None:
    raw = copy.deepcopy(BASE)
    long_name = "worker-" + "x" * 45  # 52 characters: a fine AKS name, too long for Karmada
    raw["clusters"][2]["name"] = long_name
    raw["clusters"][2]["dnsPrefix"] = "w2"
    raw["karmada"]["applications"][0]["propagation"]["weights"] = {"worker-1": 1}
    errors = errors_for(raw)
    assert errors == [
        f"karmada.members: {long_name!r} cannot be a Karmada cluster name: a lowercase DNS-1123 "
        "label of at most 48 characters (the namespace karmada-es-<name> must stay a label)"
    ]


def test_internal_exposure_needs_an_address_in_the_hosts_node_subnet() -> None:
    raw = changed("karmada.apiServer", {"exposure": "internal"})
    raw["clusters"][0]["network"] = {"mode": "nodeSubnet"}
    assert errors_for(raw) == [
        "karmada.apiServer.internalIp: required with exposure: internal: a free address in the "
        "host cluster's node subnet; the certificate is issued for it at the first install"
    ]
    for reserved in ("10.224.0.0", "10.224.0.3", "10.224.255.255", "10.99.0.10"):
        raw["karmada"]["apiServer"]["internalIp"] = reserved
        assert errors_for(raw) == [
            f"karmada.apiServer.internalIp: {reserved} must be a usable address of 'manager''s "
            "node subnet 10.224.0.0/16 (Azure reserves the first four and the last)"
        ]
    raw["karmada"]["apiServer"]["internalIp"] = "10.224.0.50"
    fleet, _ = parse_fleet(raw)
    assert fleet.karmada is not None
    assert str(fleet.karmada.api_server.internal_ip) == "10.224.0.50"


def test_overlay_host_cannot_be_internal() -> None:
    raw = changed("karmada.apiServer", {"exposure": "internal", "internalIp": "10.224.0.50"})
    assert errors_for(raw) == [
        "karmada.apiServer.exposure: internal needs host 'manager' in a VNet node subnet we "
        "manage (network.mode: nodeSubnet); with overlay the AKS-managed subnet is not ours"
    ]


def test_dns_label_is_for_public_exposure_only() -> None:
    raw = changed(
        "karmada.apiServer",
        {"exposure": "internal", "internalIp": "10.224.0.50", "dnsLabel": "fleet-karmada"},
    )
    raw["clusters"][0]["network"] = {"mode": "nodeSubnet"}
    assert errors_for(raw) == [
        "karmada.apiServer.dnsLabel: only with exposure: public (a public IP's DNS name)"
    ]


def test_duplicate_application_is_reported() -> None:
    raw = copy.deepcopy(BASE)
    raw["karmada"]["applications"].append(copy.deepcopy(APP))
    errors = errors_for(raw)
    assert (
        errors.count("karmada.applications[0].name: sample/sample-ud is declared more than once")
        == 1
    )
    assert "karmada.applications[1].name: sample/sample-ud is declared more than once" in errors


def test_existing_cluster_cannot_host_karmada() -> None:
    raw = copy.deepcopy(BASE)
    raw["clusters"][0] |= {"source": "existing", "existing": {"kubeconfigPath": "kind.yaml"}}
    errors = errors_for(raw)
    assert errors == [
        "karmada: the Karmada host 'manager' must be an AKS cluster of this stack (source: aks): "
        "its API server is bound to an Azure load balancer address"
    ]


def test_all_errors_at_once() -> None:
    raw = copy.deepcopy(BASE)
    raw["karmada"]["host"] = "nope"
    raw["karmada"]["applications"][0]["namespace"] = "karmada-system"
    raw["karmada"]["applications"][0]["propagation"]["weights"] = {"worker-9": 1}
    errors = errors_for(raw)
    assert [e.split(":")[0] for e in errors] == [
        "karmada.host",
        "karmada.applications[0].namespace",
        "karmada.applications[0].propagation.weights.worker-9",
    ]
