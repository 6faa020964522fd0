"""The Kueue component under mocks: release inputs, providers, parents, ordering, readiness."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml

from builders.kueue import helm_values
from builders.kueue_queues import cluster_objects
from checks.stack import parse_fleet
from components.kueue import Kueue, KueueArgs
from testkit.mocks import Graph, Registered, built_stack, run_program
from testkit.shared.kueue_config import BASE
from upstream.kueue import KUEUE_CHART

RELEASE = "kubernetes:helm.sh/v3:Release"
PROVIDER = "pulumi:providers:kubernetes"
KUEUE = "fleet:index:Kueue"


def kind_of(r: Registered) -> str:
    return r.type.rsplit(":", 1)[-1]


def build(added: dict[str, list[str]] | None = None, raw: dict[str, Any] | None = None) -> Kueue:
    """One Kueue on the first cluster of `raw` (default BASE), with the fleet's priority classes;
    call it from a test that uses the `graph` fixture."""
    fleet, _ = parse_fleet(copy.deepcopy(BASE if raw is None else raw))

    def program() -> Kueue:
        provider = k8s.Provider("solo-k8s", kubeconfig="apiVersion: v1\nkind: Config\n")
        return Kueue(
            "solo-kueue",
            KueueArgs(
                cluster=fleet.clusters[0],
                settings=fleet.kueue,
                provider=provider,
                objects=cluster_objects(
                    fleet.clusters[0],
                    added,
                    priority_classes=fleet.kueue.workload_priority_classes,
                ),
            ),
        )

    return run_program(program)


@pytest.fixture
def solo(graph: Graph) -> Graph:
    build()
    return graph


def test_release_is_pinned_named_and_waited_for(solo: Graph) -> None:
    fleet, _ = parse_fleet(copy.deepcopy(BASE))
    release = solo.one(RELEASE, "solo-kueue-release")
    inputs = release.inputs
    assert inputs["chart"] == KUEUE_CHART == "oci://registry.k8s.io/kueue/charts/kueue"
    assert (inputs["version"], inputs["name"], inputs["namespace"]) == (
        "0.19.2",
        "kueue",
        "kueue-system",
    )
    assert inputs["createNamespace"] is True
    assert inputs["atomic"] is True
    assert inputs["skipAwait"] is False
    assert inputs["timeout"] == 600
    assert inputs["values"] == helm_values(fleet.kueue, fleet.clusters[0])
    assert solo.provider_urn(release) == solo.one(PROVIDER, "solo-k8s").urn


def test_every_object_uses_the_provider_and_waits_for_the_release(solo: Graph) -> None:
    component = solo.one(KUEUE, "solo-kueue")
    provider = solo.one(PROVIDER, "solo-k8s").urn
    release = solo.one(RELEASE, "solo-kueue-release").urn
    children = [r for r in solo.resources if r.parent == component.urn]
    objects = [r for r in children if r.type != RELEASE]
    assert sorted(kind_of(r) for r in objects) == sorted(
        [
            "Namespace",
            "ResourceFlavor",
            "ProvisioningRequestConfig",
            "AdmissionCheck",
            "ClusterQueue",
            "LocalQueue",
        ]
    )
    for r in objects:
        assert solo.provider_urn(r) == provider, r.name
        assert release in r.dependencies, r.name
    assert sorted(r.name for r in objects) == [
        "solo-kueue-admissioncheck-scaleup",
        "solo-kueue-clusterqueue-team-a",
        "solo-kueue-localqueue-team-a/team-a",
        "solo-kueue-namespace-team-a",
        "solo-kueue-provisioningrequestconfig-scaleup-config",
        "solo-kueue-resourceflavor-batch",
    ]
    types = {r.type for r in objects}
    assert "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue" in types
    assert "kubernetes:core/v1:Namespace" in types


def test_objects_depend_on_what_they_name(solo: Graph) -> None:
    by_kind = {kind_of(r): r for r in solo.resources if r.type.startswith("kubernetes:")}

    def deps(kind: str) -> set[str]:
        return {kind_of(solo.by_urn(u)) for u in by_kind[kind].dependencies}

    assert deps("AdmissionCheck") == {"Release", "ProvisioningRequestConfig"}
    assert deps("ClusterQueue") == {"Release", "ResourceFlavor", "AdmissionCheck"}
    assert deps("LocalQueue") == {"Release", "ClusterQueue", "Namespace"}
    assert deps("ResourceFlavor") == {"Release"}
    # made after, so deleted before, the ClusterQueue that admits from it (destroy's order)
    assert deps("Namespace") == {"Release", "ClusterQueue"}


def test_queues_and_checks_must_become_active(solo: Graph) -> None:
    for r in solo.resources:
        if not r.type.startswith("kubernetes:kueue.x-k8s.io/"):
            continue
        annotations = dict(r.inputs["metadata"].get("annotations", {}))
        assert annotations.pop("pulumi.com/patchForce") == "true", r.name  # components.kube.owned
        if kind_of(r) == "ClusterQueue":
            assert annotations == {"pulumi.com/waitFor": "condition=Active"}, r.name
        elif kind_of(r) == "AdmissionCheck":
            # A provisioning check keeps a stale observedGeneration after an in-place spec change
            # (Kueue writes its status only when the value changes), so `condition=Active` would
            # never hold then: it waits on the status value alone.
            wait = 'jsonpath={.status.conditions[?(@.type=="Active")].status}=True'
            assert annotations == {"pulumi.com/waitFor": wait}, r.name
        else:
            assert "pulumi.com/waitFor" not in annotations, r.name
    lq = next(r for r in solo.resources if kind_of(r) == "LocalQueue")
    assert lq.inputs["metadata"] == {
        "name": "team-a",
        "namespace": "team-a",
        "annotations": {"pulumi.com/patchForce": "true"},
    }
    assert lq.inputs["spec"] == {"clusterQueue": "team-a"}


def test_added_checks_reach_the_cluster_queue(graph: Graph) -> None:
    build({"team-a": ["multikueue"]})
    cq = next(r for r in graph.resources if kind_of(r) == "ClusterQueue")
    assert cq.inputs["spec"]["admissionChecksStrategy"]["admissionChecks"] == [
        {"name": "scaleup", "onFlavors": ["batch"]},
        {"name": "multikueue"},
    ]


def test_outputs(graph: Graph) -> None:
    kueue = build()
    assert graph.one(KUEUE, "solo-kueue")
    assert kueue.cluster_queues == ["team-a"]
    assert kueue.local_queues == ["team-a/team-a"]
    assert isinstance(kueue.release, pulumi.CustomResource)


def test_dev_fleet_installs_kueue_on_every_cluster_with_its_provider() -> None:
    graph = built_stack("dev").graph
    releases = graph.of_type(RELEASE)
    kueue_releases = [r for r in releases if r.inputs.get("chart") == KUEUE_CHART]
    assert sorted(r.name for r in kueue_releases) == [
        f"fleet-{c}-kueue-release" for c in ("manager", "worker-1", "worker-2")
    ]
    assert {r.inputs["version"] for r in kueue_releases} == {"0.19.2"}
    for cluster in ("manager", "worker-1", "worker-2"):
        provider = graph.one(PROVIDER, f"fleet-{cluster}-k8s").urn
        component = graph.one(KUEUE, f"fleet-{cluster}-kueue")
        children = [r for r in graph.resources if r.parent == component.urn]
        assert children, cluster
        for r in children:
            assert graph.provider_urn(r) == provider, (cluster, r.name)
    worker_cqs = [
        r
        for r in graph.resources
        if kind_of(r) == "ClusterQueue" and r.parent.endswith("fleet-worker-1-kueue")
    ]
    assert [r.inputs["metadata"]["name"] for r in worker_cqs] == ["team-a"]


def test_priority_classes_and_cohorts_register_with_their_own_fields(graph: Graph) -> None:
    """A WorkloadPriorityClass has no spec (value and description are top-level fields)."""
    raw = yaml.safe_load((Path(__file__).parent / "fixtures" / "fair-share.yaml").read_text())
    build(raw=raw)
    wpc = graph.one(
        "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass",
        "solo-kueue-workloadpriorityclass-urgent",
    )
    assert wpc.inputs["value"] == 1000
    assert wpc.inputs["metadata"]["name"] == "urgent"
    assert "spec" not in wpc.inputs
    cohort = graph.one("kubernetes:kueue.x-k8s.io/v1beta2:Cohort", "solo-kueue-cohort-research")
    assert cohort.inputs["spec"] == {"parentName": "org", "fairSharing": {"weight": "2"}}
