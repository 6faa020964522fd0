"""MultiKueue components under mocks: providers, dependencies, secrecy, RBAC, rotation."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
import yaml
from pulumi.runtime import rpc

from constants import ACTIVE_STATUS
from testkit.mocks import Graph, Registered, resolve, run_program
from testkit.shared.multikueue_builders import expected_rules, split_rules
from testkit.shared.multikueue_component import (
    CA_B64,
    CHECK,
    FRAMEWORKS,
    MKC,
    MKCONFIG,
    SECRET,
    Built,
    build,
    fake_token,
    urn_of,
)
from testkit.shared.multikueue_component import engine as engine  # noqa: PLC0414 - a fixture

ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"


def children(graph: Graph, component_urn: str) -> list[Registered]:
    return [r for r in graph.resources if component_urn in (a.urn for a in graph.ancestors(r))]


def unwrap(value: Any) -> Any:
    return rpc.unwrap_rpc_secret(value) if rpc.is_rpc_secret(value) else value


def test_worker_side_on_worker_provider_manager_side_on_managers(engine: Graph) -> None:
    built = run_program(build)
    assert isinstance(built, Built)
    for name, component in [*built.access.items(), ("manager", built.manager)]:
        provider = urn_of(built.providers[name])
        release = urn_of(built.releases[name])
        kids = children(engine, urn_of(component))
        # The credential proof (a provider on the worker and a read through it) is checked below.
        kids = [r for r in kids if not r.name.endswith("-proof")]
        # worker: SA, read role and its binding, write role and its binding in team-a, proof
        # Role and RoleBinding, token; manager: per worker a Secret and a MultiKueueCluster, and
        # the MultiKueueConfig (its AdmissionCheck is created with the manager's queues).
        assert len(kids) == (8 if name != "manager" else 2 * 2 + 1)
        for r in kids:
            assert engine.provider_urn(r) == provider, f"{r.type} {r.name} not on {name}"
            assert release in r.dependencies, f"{r.type} {r.name} does not wait for Kueue"
            assert engine.by_urn(r.parent).type.startswith("fleet:index:MultiKueue")


def test_new_token_is_proven_on_the_worker_before_the_manager_stores_it(engine: Graph) -> None:
    """Each worker's kubeconfig reads the worker's own ServiceAccount through a provider built
    from that very kubeconfig; the manager's Secret (so the MultiKueueCluster) waits for it."""
    built = run_program(build)
    for worker, access in built.access.items():
        (proof,) = [r for r in engine.reads if r.name == f"mk-manager-{worker}-proof"]
        assert proof.type == "kubernetes:core/v1:ServiceAccount"
        assert proof.inputs == {"id": "kueue-system/multikueue-sa"}
        provider = engine.by_urn(engine.provider_urn(proof))
        assert provider.type == "pulumi:providers:kubernetes"
        assert provider.name == f"mk-manager-{worker}-proof"
        secret = engine.one(SECRET, f"mk-manager-{worker}-kubeconfig")
        stored = base64.b64decode(unwrap(secret.inputs["data"])["kubeconfig"]).decode()
        assert unwrap(provider.inputs["kubeconfig"]) == stored
        assert proof.urn in secret.dependencies
        assert urn_of(access.proof_binding) in proof.dependencies
        mkc = engine.one(MKC, f"mk-manager-{worker}")
        assert secret.urn in mkc.dependencies
    role = engine.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "mk-worker-1-proof-role")
    assert role.inputs["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["serviceaccounts"],
            "resourceNames": ["multikueue-sa"],
            "verbs": ["get"],
        }
    ]
    binding = engine.one(
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "mk-worker-1-proof-binding"
    )
    assert binding.inputs["roleRef"]["name"] == role.inputs["metadata"]["name"]
    assert binding.inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": "multikueue-sa", "namespace": "kueue-system"}
    ]


def test_manager_secret_depends_on_the_worker_token(engine: Graph) -> None:
    built = run_program(build)
    for worker, access in built.access.items():
        token_urn = urn_of(access.token_secret)
        secret = engine.one(SECRET, f"mk-manager-{worker}-kubeconfig")
        assert token_urn in secret.dependencies
        other = next(a for w, a in built.access.items() if w != worker)
        assert urn_of(other.token_secret) not in secret.dependencies


def test_kubeconfig_is_secret_in_state_and_outputs(engine: Graph) -> None:
    built = run_program(build)
    secret = engine.one(SECRET, "mk-manager-worker-1-kubeconfig")
    assert rpc.is_rpc_secret(secret.inputs["data"])
    assert "data" in secret.additional_secret_outputs
    assert "stringData" not in secret.inputs
    data = unwrap(secret.inputs["data"])
    doc = yaml.safe_load(base64.b64decode(data["kubeconfig"]))
    assert doc["clusters"][0]["cluster"] == {
        "server": "https://worker-1-abc123.hcp.westeurope.azmk8s.io:443",
        "certificate-authority-data": CA_B64,
    }
    assert doc["users"][0]["user"] == {"token": fake_token("multikueue-sa-token-0")}
    kubeconfigs, is_secret = resolve(built.manager.kubeconfigs)
    assert is_secret is True
    assert set(kubeconfigs) == {"worker-1", "worker-2"}
    for output in (built.access["worker-1"].token, built.access["worker-1"].ca_data):
        value, is_secret = resolve(output)
        assert is_secret is True
        assert value
    meta = secret.inputs["metadata"]
    assert (meta["name"], meta["namespace"]) == ("multikueue-worker-1-kubeconfig-0", "kueue-system")


@pytest.mark.parametrize("version", ["v0.17.8", "v0.19.2"])
@pytest.mark.parametrize("frameworks", [["batch/job"], FRAMEWORKS, ["pod", "statefulset"]])
def test_cluster_role_rules_are_the_pinned_table(
    engine: Graph, version: str, frameworks: list[str]
) -> None:
    run_program(lambda: build(version=version, frameworks=frameworks))
    roles = engine.of_type(ROLE)
    assert len(roles) == 4
    want = {
        "multikueue-sa-role": split_rules(expected_rules(version, frameworks), reads=True),
        "multikueue-sa-write": split_rules(expected_rules(version, frameworks), reads=False),
    }
    for role in roles:
        assert role.inputs["rules"] == want[role.inputs["metadata"]["name"]]
        for rule in role.inputs["rules"]:
            assert "*" not in [*rule["apiGroups"], *rule["resources"], *rule["verbs"]]


def test_binding_and_token_secret_wait_for_the_service_account(engine: Graph) -> None:
    run_program(build)
    sa = engine.one("kubernetes:core/v1:ServiceAccount", "mk-worker-1-sa")
    token = engine.one(SECRET, "mk-worker-1-token")
    binding = engine.one(
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "mk-worker-1-binding"
    )
    assert sa.urn in token.dependencies
    assert sa.urn in binding.dependencies
    assert token.inputs["type"] == "kubernetes.io/service-account-token"
    assert token.inputs["metadata"]["annotations"]["pulumi.com/waitFor"] == "jsonpath={.data.token}"
    assert binding.inputs["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "multikueue-sa-role",
    }
    assert binding.inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": "multikueue-sa", "namespace": "kueue-system"}
    ]


def test_manager_objects_chain_and_wait_for_active(engine: Graph) -> None:
    built = run_program(build)
    clusters = {r.name: r for r in engine.of_type(MKC)}
    assert set(clusters) == {"mk-manager-worker-1", "mk-manager-worker-2"}
    for worker in ("worker-1", "worker-2"):
        mkc = clusters[f"mk-manager-{worker}"]
        secret = engine.one(SECRET, f"mk-manager-{worker}-kubeconfig")
        assert secret.urn in mkc.dependencies
        assert mkc.inputs["spec"]["clusterSource"]["kubeConfig"] == {
            "location": secret.inputs["metadata"]["name"],
            "locationType": "Secret",
        }
        # The value, not condition=Active: Kueue v0.19.2 leaves observedGeneration old after a
        # good -> good rotation (the token is proven before, see the test above).
        assert mkc.inputs["metadata"]["annotations"]["pulumi.com/waitFor"] == ACTIVE_STATUS
    config = engine.one(MKCONFIG, "mk-manager-config")
    assert config.inputs["spec"] == {"clusters": ["worker-1", "worker-2"]}
    # The AdmissionCheck is created with the manager's queues (see the Fleet test below).
    assert not engine.of_type(CHECK)
    assert built.manager.admission_check_name == "multikueue"


def test_rotation_replaces_the_token_and_rewrites_the_kubeconfig(engine: Graph) -> None:
    built = run_program(lambda: build(rotations={"worker-2": 3}))
    tokens = {
        r.name: r.inputs["metadata"]["name"] for r in engine.of_type(SECRET) if "-token" in r.name
    }
    assert tokens == {
        "mk-worker-1-token": "multikueue-sa-token-0",
        "mk-worker-2-token": "multikueue-sa-token-3",
    }
    kubeconfigs, _ = resolve(built.manager.kubeconfigs)
    assert fake_token("multikueue-sa-token-3") in kubeconfigs["worker-2"]
    assert fake_token("multikueue-sa-token-0") in kubeconfigs["worker-1"]
    # Same Pulumi resource, new object name: replaced (created before the old one is deleted).
    secret = engine.one(SECRET, "mk-manager-worker-2-kubeconfig")
    assert secret.inputs["metadata"]["name"] == "multikueue-worker-2-kubeconfig-3"
    mkc = engine.one(MKC, "mk-manager-worker-2")
    location = mkc.inputs["spec"]["clusterSource"]["kubeConfig"]["location"]
    assert location == "multikueue-worker-2-kubeconfig-3"
    assert mkc.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] == "300"


def test_custom_resources_pass_the_crd_schema(engine: Graph) -> None:
    from testkit import crdschema  # noqa: PLC0415

    run_program(build)
    for type_ in (MKC, MKCONFIG, CHECK):
        for r in engine.of_type(type_):
            obj = {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": type_.rsplit(":", 1)[1],
                "metadata": r.inputs["metadata"],
                "spec": r.inputs["spec"],
            }
            report = crdschema.validate(obj, "kueue", "v0.19.2")
            assert report.errors == [], str(report)


# --------------------------------------------------------------------------------------------
# Through the Fleet, from config


def build_fleet() -> Any:
    """The Fleet from the MultiKueue config test's BASE (needs the `engine` mocks active)."""
    from checks.stack import parse_fleet  # noqa: PLC0415
    from components.fleet import Fleet, FleetArgs  # noqa: PLC0415
    from testkit.shared.multikueue_config import BASE  # noqa: PLC0415

    config = copy.deepcopy(BASE)
    config["multiKueue"]["rotation"] = {"worker-2": 1}
    fleet_config, _ = parse_fleet(config)
    return run_program(lambda: Fleet("fleet", FleetArgs(config=fleet_config, stack="test")))


def test_fleet_wires_multikueue_on_the_right_clusters(engine: Graph) -> None:
    fleet = build_fleet()
    assert fleet.multikueue is not None
    for cluster, component in [
        *fleet.multikueue.workers.items(),
        ("manager", fleet.multikueue.manager),
    ]:
        provider = urn_of(fleet.clusters[cluster].provider)
        release = urn_of(fleet.kueues[cluster].release)
        kids = [
            r
            for r in children(engine, urn_of(component))
            if r.custom and not r.name.endswith("-proof")  # the proof talks to the worker
        ]
        assert kids
        for r in kids:
            if r.name.endswith("-retire-guard"):  # reads the manager itself (components/retire.py)
                assert cluster == "manager"
                assert release in r.dependencies
                continue
            assert engine.provider_urn(r) == provider, f"{r.type} {r.name} not on {cluster}"
            assert release in r.dependencies
    tokens = {
        r.inputs["metadata"]["name"] for r in engine.of_type(SECRET) if r.name.endswith("-token")
    }
    assert tokens == {"multikueue-sa-token-0", "multikueue-sa-token-1"}
    kubeconfigs, is_secret = resolve(fleet.multikueue.manager.kubeconfigs)
    assert is_secret is True
    server = yaml.safe_load(kubeconfigs["worker-2"])["clusters"][0]["cluster"]["server"]
    assert server == "https://worker-2-abc123.hcp.westeurope.azmk8s.io:443"


def test_fleet_puts_the_check_on_manager_queues_and_mirrors_local_queues(engine: Graph) -> None:
    build_fleet()
    queues = engine.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
    manager_cq = next(r for r in queues if r.inputs["metadata"]["name"] == "to-workers")
    assert manager_cq.inputs["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "multikueue"}]
    }
    local = engine.of_type("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue")
    assert len(local) == 3  # the manager's, mirrored to both workers
    # Destroy must delete the queue before the check it lists: Kueue's resource-in-use finalizer
    # holds a check that a ClusterQueue still names (the real engine stalled on exactly that).
    (check,) = engine.of_type(CHECK)
    assert check.inputs["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue"
    assert check.inputs["spec"]["parameters"]["name"] == "multikueue"
    assert check.inputs["metadata"]["annotations"]["pulumi.com/waitFor"] == "condition=Active"
    assert engine.provider_urn(check) == engine.provider_urn(manager_cq)
    assert check.urn in manager_cq.dependencies


DEV_MANAGER_QUEUES = """
namespaces: [{name: team-a}]
flavors: [{name: default}]
clusterQueues:
  - name: team-a
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: team-a}}
    resourceGroups:
      - coveredResources: [cpu, memory]
        flavors:
          - name: default
            resources: [{name: cpu, nominalQuota: "32"}, {name: memory, nominalQuota: 96Gi}]
localQueues: [{name: team-a, namespace: team-a, clusterQueue: team-a}]
"""


def test_dev_stack_dispatches_to_both_workers(engine: Graph) -> None:
    """Pulumi.dev.yaml with MultiKueue on (as README proposes, if the file does not yet)."""
    from checks.stack import parse_fleet  # noqa: PLC0415
    from components.fleet import Fleet, FleetArgs  # noqa: PLC0415
    from testkit.repo import ROOT  # noqa: PLC0415

    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    raw = copy.deepcopy(doc["config"]["aks-batch-fleet:fleet"])
    raw.setdefault("location", doc["config"].get("azure-native:location"))
    if "multiKueue" not in raw:
        raw["multiKueue"] = {}
        raw["clusters"][0]["queues"] = yaml.safe_load(DEV_MANAGER_QUEUES)
        for cluster in raw["clusters"][1:]:
            cluster["queues"] = {k: v for k, v in cluster["queues"].items() if k != "localQueues"}
    fleet_config, warnings = parse_fleet(raw)
    assert not [w for w in warnings if w.path.startswith(("multiKueue", "clusters[0].queues"))]
    run_program(lambda: Fleet("fleet", FleetArgs(config=fleet_config, stack="dev")))
    config = engine.one(MKCONFIG, "fleet-multikueue-manager-config")
    assert config.inputs["spec"] == {"clusters": ["worker-1", "worker-2"]}
    roles = [r for r in engine.of_type(ROLE) if r.name.startswith("fleet-multikueue-")]
    assert len(roles) == 4  # per worker: the read role (bound cluster-wide) and the write role
    # Writes only in team-a, the namespace dispatched to both workers, after that Namespace.
    binding_type = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
    writes = [r for r in engine.of_type(binding_type) if r.name.endswith("-write-team-a")]
    assert len(writes) == 2
    for w in writes:
        assert w.inputs["metadata"]["namespace"] == "team-a"
        assert w.inputs["roleRef"]["name"] == "multikueue-sa-write"
        ns = [
            r
            for r in engine.of_type("kubernetes:core/v1:Namespace")
            if r.inputs["metadata"]["name"] == "team-a"
            and engine.provider_urn(r) == engine.provider_urn(w)
        ]
        assert len(ns) == 1
        assert ns[0].urn in w.dependencies, "the write binding does not wait for its Namespace"
    assert {r.inputs["metadata"]["name"] for r in engine.of_type(MKC)} == {"worker-1", "worker-2"}
