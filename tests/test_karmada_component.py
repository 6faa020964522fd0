"""Karmada and Kruise components under mocks: providers, ordering, addresses, secrecy."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
import yaml

from builders import applications as apps
from builders import karmada as kb
from checks.stack import parse_fleet
from components.tokensecret import token_field
from config.karmada import FailoverConfig
from testkit.mocks import Graph, Registered, built_stack, is_secret
from testkit.repo import ROOT
from testkit.shared.karmada_component import SECRET, Built, build
from testkit.shared.karmada_config import BASE

PROVIDER = "pulumi:providers:kubernetes"
RELEASE = "kubernetes:helm.sh/v3:Release"
CLUSTER = "kubernetes:cluster.karmada.io/v1alpha1:Cluster"
UD = "kubernetes:apps.kruise.io/v1alpha1:UnitedDeployment"
PP = "kubernetes:policy.karmada.io/v1alpha1:PropagationPolicy"
RIC = "kubernetes:config.karmada.io/v1alpha1:ResourceInterpreterCustomization"
CRDS = "kubernetes:yaml/v2:ConfigGroup"
PIP = "azure-native:network:PublicIPAddress"


@pytest.fixture(scope="module")
def public() -> Built:
    raw = copy.deepcopy(BASE)
    raw["karmada"]["apiServer"] |= {"dnsLabel": "fleet-karmada"}
    return build(raw)


@pytest.fixture(scope="module")
def internal() -> Built:
    raw = copy.deepcopy(BASE)
    raw["clusters"][0]["network"] = {"mode": "nodeSubnet"}
    raw["karmada"]["apiServer"] = {"exposure": "internal", "internalIp": "10.224.0.50"}
    return build(raw)


def provider_of(graph: Graph, r: Registered) -> Registered:
    return graph.by_urn(graph.provider_urn(r))


def named(graph: Graph, type_: str, suffix: str) -> Registered:
    found = [r for r in graph.of_type(type_) if r.name.endswith(suffix)]
    assert len(found) == 1, (type_, suffix, [r.name for r in graph.of_type(type_)])
    return found[0]


def plain(value: Any) -> Any:
    """A recorded input without its secret wrapper."""
    return value["value"] if is_secret(value) else value


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def karmada_provider(graph: Graph) -> Registered:
    return graph.one(PROVIDER, "fleet-karmada-k8s")


def test_static_ip_in_the_node_resource_group_before_the_chart(public: Built) -> None:
    graph, outputs = public
    ip = graph.one(PIP, "fleet-karmada-ip")
    assert ip.inputs["resourceGroupName"] == "MC_rg_manager_westeurope"
    assert ip.inputs["publicIpAddressName"] == "manager-karmada-apiserver"
    assert ip.inputs["publicIPAllocationMethod"] == "Static"
    assert ip.inputs["sku"] == {"name": "Standard", "tier": "Regional"}
    assert ip.inputs["dnsSettings"] == {"domainNameLabel": "fleet-karmada"}
    assert outputs["address"] == ("20.1.2.3", False)
    release = graph.one(RELEASE, "fleet-karmada-release")
    assert ip.urn in release.dependencies


def test_karmada_release_on_the_host_with_the_address_in_sans_and_service(public: Built) -> None:
    graph, _ = public
    release = graph.one(RELEASE, "fleet-karmada-release")
    assert provider_of(graph, release).name == "fleet-manager-k8s"
    inputs = release.inputs
    assert (inputs["chart"], inputs["version"]) == ("oci://docker.io/karmada/karmada", "v1.18.2")
    assert (inputs["name"], inputs["namespace"]) == ("karmada", "karmada-system")
    assert inputs["createNamespace"] is True
    values = inputs["values"]
    assert values["certs"]["auto"]["hosts"][-2:] == [
        "20.1.2.3",
        "fleet-karmada.westeurope.cloudapp.azure.com",
    ]
    assert values["apiServer"]["serviceType"] == "LoadBalancer"
    assert values["apiServer"]["serviceAnnotations"] == {
        "service.beta.kubernetes.io/azure-pip-name": "manager-karmada-apiserver",
        "service.beta.kubernetes.io/azure-load-balancer-resource-group": (
            "MC_rg_manager_westeurope"
        ),
        "service.beta.kubernetes.io/azure-allowed-ip-ranges": "203.0.113.0/24",
    }


def test_karmada_provider_reaches_the_address_and_its_kubeconfig_is_secret(public: Built) -> None:
    graph, outputs = public
    provider = karmada_provider(graph)
    assert provider.parent == graph.one("fleet:index:Karmada", "fleet-karmada").urn
    assert is_secret(provider.inputs["kubeconfig"])
    assert provider.inputs["enableServerSideApply"] == "true"
    doc = yaml.safe_load(plain(provider.inputs["kubeconfig"]))
    assert [c["cluster"]["server"] for c in doc["clusters"]] == ["https://20.1.2.3:5443"]
    value, secret = outputs["karmadaKubeconfig"]
    assert secret is True
    assert yaml.safe_load(value) == doc


def test_internal_exposure_has_no_public_ip(internal: Built) -> None:
    graph, outputs = internal
    assert graph.of_type(PIP) == []
    assert outputs["address"] == ("10.224.0.50", False)
    values = graph.one(RELEASE, "fleet-karmada-release").inputs["values"]
    assert values["apiServer"]["serviceAnnotations"] == {
        "service.beta.kubernetes.io/azure-load-balancer-internal": "true",
        "service.beta.kubernetes.io/azure-load-balancer-ipv4": "10.224.0.50",
    }
    doc = yaml.safe_load(plain(karmada_provider(graph).inputs["kubeconfig"]))
    assert doc["clusters"][0]["cluster"]["server"] == "https://10.224.0.50:5443"


def test_members_objects_on_members_providers(public: Built) -> None:
    graph, _ = public
    for member in ("worker-1", "worker-2"):
        mine = [r for r in graph.resources if r.name.startswith(f"fleet-karmada-{member}-")]
        on_member = [
            r for r in mine if r.custom and provider_of(graph, r).name == f"fleet-{member}-k8s"
        ]
        kinds = sorted(r.type.rsplit(":", 1)[-1] for r in on_member)
        # memberAccess: scoped: one account, and the application namespace with its Role.
        assert kinds == [
            "ClusterRole",
            "ClusterRoleBinding",
            "Namespace",  # karmada-cluster
            "Namespace",  # sample
            "Release",  # Kruise
            "Role",
            "RoleBinding",
            "Secret",
            "ServiceAccount",
        ]
        kruise = named(graph, RELEASE, f"{member}-kruise-release")
        assert kruise.inputs["chart"] == "kruise"
        assert kruise.inputs["repositoryOpts"] == {"repo": "https://openkruise.github.io/charts"}
        assert kruise.inputs["namespace"] == "default"


def test_karmada_objects_on_the_karmada_provider(public: Built) -> None:
    graph, _ = public
    provider = karmada_provider(graph)
    on_karmada = [r for r in graph.resources if r.custom and r.provider.startswith(provider.urn)]
    counts: dict[str, int] = {}
    for r in on_karmada:
        counts[r.type] = counts.get(r.type, 0) + 1
    assert counts == {
        "kubernetes:core/v1:Namespace": 1,  # sample (karmada-cluster is the chart's)
        SECRET: 2,  # credentials per member (scoped: no impersonator)
        CLUSTER: 2,
        RIC: 1,
        PP: 1,
        UD: 1,
        "kubernetes:core/v1:Service": 1,  # the StatefulSet template's headless Service
    }
    # The Kruise CRDs go to Karmada too (a remote component, so not `custom`).
    crds = graph.one(CRDS, "fleet-karmada-kruise-crds")
    assert crds.provider.startswith(provider.urn)
    # The pinned file (scripts/fetch-crds), never a URL fetched at deploy time.
    pinned = ROOT / ".cache" / "crds" / "kruise" / "v1.9.0"
    assert crds.inputs["files"] == [str(pinned / "apps.kruise.io_uniteddeployments.yaml")]


def test_credentials_come_from_the_member_token_secret_and_stay_secret(public: Built) -> None:
    graph, _ = public
    creds = graph.one(SECRET, "fleet-karmada-worker-1-credentials")
    assert is_secret(creds.inputs["data"])
    assert plain(creds.inputs["data"]) == {
        "token": b64("token-of-karmada-worker-1"),
        "caBundle": b64("CA"),
    }
    assert creds.inputs["metadata"]["namespace"] == "karmada-cluster"
    token = named(graph, SECRET, "worker-1-secret-karmada-worker-1")
    assert token.urn in creds.dependencies
    assert not [r for r in graph.resources if r.name.endswith("-impersonator")]


def test_token_secrets_wait_for_their_accounts(public: Built) -> None:
    graph, _ = public
    secret = named(graph, SECRET, "worker-2-secret-karmada-worker-2")
    account = named(
        graph, "kubernetes:core/v1:ServiceAccount", "worker-2-serviceaccount-karmada-worker-2"
    )
    assert account.urn in secret.dependencies


def test_cluster_objects_after_credentials_and_kruise(public: Built) -> None:
    graph, _ = public
    cluster = graph.one(CLUSTER, "fleet-karmada-worker-2-cluster")
    spec = cluster.inputs["spec"]
    assert spec == {
        "syncMode": "Push",
        "apiEndpoint": "https://worker-2-abc123.hcp.westeurope.azmk8s.io:443",
        "secretRef": {"namespace": "karmada-cluster", "name": "worker-2"},
        "region": "westeurope",
    }
    assert cluster.inputs["metadata"]["annotations"] == {
        "pulumi.com/waitFor": "condition=Ready",
        "pulumi.com/patchForce": "true",
    }
    deps = set(cluster.dependencies)
    assert graph.one(SECRET, "fleet-karmada-worker-2-credentials").urn in deps
    assert named(graph, RELEASE, "worker-2-kruise-release").urn in deps
    # Ready only once the application namespace's Role binds: nothing is propagated before.
    binding = named(
        graph,
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        "worker-2-rolebinding-karmada-controller-manager-karmada-worker-2",
    )
    assert binding.urn in deps
    assert binding.inputs["metadata"]["namespace"] == "sample"


def test_united_deployment_after_crds_members_interpreter_and_policy(public: Built) -> None:
    graph, _ = public
    ud = graph.one(UD, "fleet-karmada-sample-sample-ud-ud")
    deps = set(ud.dependencies)
    assert graph.one(CRDS, "fleet-karmada-kruise-crds").urn in deps
    assert graph.one(RIC, "fleet-karmada-ud-interpreter").urn in deps
    assert graph.one(PP, "fleet-karmada-sample-sample-ud-pp").urn in deps
    for member in ("worker-1", "worker-2"):
        assert graph.one(CLUSTER, f"fleet-karmada-{member}-cluster").urn in deps
    assert ud.inputs["spec"]["replicas"] == 6
    policy = graph.one(PP, "fleet-karmada-sample-sample-ud-pp")
    namespace = graph.one("kubernetes:core/v1:Namespace", "fleet-karmada-ns-sample")
    assert namespace.urn in policy.dependencies
    # What is applied is what the builders render (and the schema tests validate).
    (app,) = kb.settings_of(parse_fleet(BASE)[0]).applications
    assert policy.inputs["spec"] == apps.propagation_policy(app, FailoverConfig())["spec"]


def test_nothing_on_karmada_is_one_of_the_charts_static_objects(public: Built) -> None:
    """The chart's static-resource job makes karmada-system and karmada-cluster on the Karmada
    API server; pulumi-kubernetes >= 4.29 creates client-side, so creating either again fails
    with AlreadyExists and every member registration waits behind it."""
    graph, _ = public
    provider = karmada_provider(graph)
    on_karmada = [r for r in graph.resources if r.custom and r.provider.startswith(provider.urn)]
    namespaces = {r.inputs["metadata"]["name"] for r in on_karmada if r.type.endswith(":Namespace")}
    assert namespaces.isdisjoint({"karmada-system", "karmada-cluster"}), namespaces
    # The credential Secrets go into the chart's namespace once the release is done.
    release = graph.one(RELEASE, "fleet-karmada-release")
    for member in ("worker-1", "worker-2"):
        secret = graph.one(SECRET, f"fleet-karmada-{member}-credentials")
        assert secret.inputs["metadata"]["namespace"] == "karmada-cluster"
        assert release.urn in secret.dependencies


def test_a_subset_placement_change_replaces_the_united_deployment(public: Built) -> None:
    """Kruise's webhook refuses an in-place change of a subset's nodeSelectorTerm/tolerations in
    every member while the Karmada API server accepts it: Pulumi replaces the UD instead. Kruise
    pairs subsets by name, Pulumi's paths by position, so a renamed subset replaces too (two
    swapped names keep each position's term: the real webhook refuses it, test_kruise.py)."""
    graph, _ = public
    ud = graph.one(UD, "fleet-karmada-sample-sample-ud-ud")
    assert sorted(ud.replace_on_changes) == [
        "spec.topology.subsets[*].name",
        "spec.topology.subsets[*].nodeSelectorTerm",
        "spec.topology.subsets[*].tolerations",
    ]
    # Same name on both sides of the replacement: the old one must go first.
    assert ud.delete_before_replace is True
    # The paths name real inputs of the UD (a typo would silently never match).
    (subset_a, subset_b) = ud.inputs["spec"]["topology"]["subsets"]
    assert {"name", "nodeSelectorTerm"} <= set(subset_a)
    assert {"nodeSelectorTerm", "tolerations"} <= set(subset_b)
    # The policy is updated in place: nothing in it is immutable.
    policy = graph.one(PP, "fleet-karmada-sample-sample-ud-pp")
    assert policy.replace_on_changes == []


def test_kruise_on_aks_members_has_the_aks_webhook_selectors(public: Built) -> None:
    graph, _ = public
    for member in ("worker-1", "worker-2"):
        kruise = named(graph, RELEASE, f"{member}-kruise-release")
        assert kruise.inputs["values"]["webhookConfiguration"] == {"aksIntegration": True}


def test_failover_registers_what_it_renders() -> None:
    raw = copy.deepcopy(BASE)
    raw["karmada"]["failover"] = {"enabled": True}
    graph, _ = build(raw)
    provider = karmada_provider(graph)
    registered = {
        (r.type.rsplit(":", 1)[-1], r.inputs["metadata"]["name"])
        for r in graph.resources
        if r.custom and r.provider.startswith(provider.urn)
    }
    rendered = {
        (m.kind, m.name) for m in kb.render_karmada(parse_fleet(raw)[0]) if m.target == "karmada"
    }
    assert ("ClusterTaintPolicy", "fleet-member-not-ready") in registered
    assert registered == rendered
    release = graph.one(RELEASE, "fleet-karmada-release")
    assert release.inputs["values"]["controllerManager"]["extraCommandArgs"] == {
        "enable-no-execute-taint-eviction": "true"
    }


def test_interpreter_is_the_lua_customization(public: Built) -> None:
    graph, _ = public
    ric = graph.one(RIC, "fleet-karmada-ud-interpreter")
    assert ric.inputs["spec"]["target"] == {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "UnitedDeployment",
    }
    assert set(ric.inputs["spec"]["customizations"]) == {
        "replicaResource",
        "replicaRevision",
        "statusReflection",
        "statusAggregation",
        "healthInterpretation",
        "dependencyInterpretation",
    }


def test_every_karmada_child_has_a_component_parent(public: Built) -> None:
    graph, _ = public
    component = graph.one("fleet:index:Karmada", "fleet-karmada")
    children = [r for r in graph.resources if r.name.startswith("fleet-karmada-")]
    assert children
    for r in children:
        assert component in graph.ancestors(r), r.name


def test_dev_stack_registers_the_seed_application() -> None:
    graph = built_stack("dev").graph
    ud = graph.one(UD, "fleet-karmada-sample-sample-ud-ud")
    assert [s["name"] for s in ud.inputs["spec"]["topology"]["subsets"]] == [
        "subset-a",
        "subset-b",
    ]
    assert len(graph.of_type(CLUSTER)) == 2
    assert len([r for r in graph.of_type(RELEASE) if r.name.endswith("kruise-release")]) == 2


def test_an_unfilled_member_token_is_an_error_not_an_empty_credential() -> None:
    """Karmada's members and MultiKueue's workers read their token Secrets through token_field."""
    secret = "a Karmada member token Secret"
    assert token_field({"token": "dG9r"}, "token", secret=secret) == "dG9r"
    for unfilled in (None, {}, {"token": ""}):
        with pytest.raises(RuntimeError, match=r"has no data\['token'\]: the token controller"):
            token_field(unfilled, "token", secret=secret)
