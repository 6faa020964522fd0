"""`pulumi destroy` with jobs in the queues: the engine deletes a team namespace (and with it the
Jobs and their Workloads) before the ClusterQueues that admit from it.

A ClusterQueue keeps Kueue's `kueue.x-k8s.io/resource-in-use` finalizer while it has admitted
Workloads. The engine deletes a resource before the ones it depends on, so the namespace must
depend on those ClusterQueues; the other way round the ClusterQueue's delete waits on Workloads
that only the namespace's later deletion would remove (the real tier saw that deadlock:
tests/realtier/test_faults_runtime.py runs the real engine's destroy).
"""

from __future__ import annotations

import pytest

from testkit.mocks import Graph, Registered, built_stack
from testkit.repo import COMMITTED_STACKS

NAMESPACE = "kubernetes:core/v1:Namespace"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
LOCAL_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"


def depends_on(graph: Graph, r: Registered) -> set[str]:
    """URNs `r` depends on, transitively: all of them outlive `r` on destroy."""
    seen: set[str] = set()
    todo = list(r.dependencies)
    while todo:
        urn = todo.pop()
        if urn not in seen:
            seen.add(urn)
            todo += graph.by_urn(urn).dependencies
    return seen


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_team_namespace_goes_before_the_queues_that_admit_from_it(stack: str) -> None:
    graph = built_stack(stack).graph
    checked = 0
    for lq in graph.of_type(LOCAL_QUEUE):
        ns_name = lq.inputs["metadata"]["namespace"]
        siblings = [r for r in graph.resources if r.parent == lq.parent]
        [ns] = [
            r for r in siblings if r.type == NAMESPACE and r.inputs["metadata"]["name"] == ns_name
        ]
        [cq] = [
            r
            for r in siblings
            if r.type == CLUSTER_QUEUE
            and r.inputs["metadata"]["name"] == lq.inputs["spec"]["clusterQueue"]
        ]
        later = depends_on(graph, ns)
        assert cq.urn in later, f"{ns.name} is deleted after (or beside) {cq.name}"
        # and no cycle: the LocalQueue still waits for its namespace on create
        assert ns.urn in depends_on(graph, lq)
        assert ns.urn not in depends_on(graph, cq)
        checked += 1
    assert checked


MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
KUBERNETES_PROVIDER = "pulumi:providers:kubernetes"


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_what_is_applied_in_an_aks_cluster_is_deleted_with_that_cluster(stack: str) -> None:
    """`destroy` (or a cluster's removal) deletes an AKS cluster without first deleting, one by
    one, every object the stack applied in it: each carries `deleted_with` its own cluster
    (components/kube.py). Objects through any other provider (Karmada's API server, a cluster
    that exists, the retire guard) are deleted as before."""
    graph = built_stack(stack).graph
    cluster_of: dict[str, str] = {}  # a Kubernetes provider's URN -> its ManagedCluster's URN
    for provider in graph.of_type(KUBERNETES_PROVIDER):
        for cluster in graph.of_type(MANAGED_CLUSTER):
            if cluster.parent == provider.parent:  # the same AksCluster component
                cluster_of[provider.urn] = cluster.urn
    assert cluster_of, f"{stack}: no AKS cluster's Kubernetes provider"
    inside, outside = 0, 0
    for r in graph.resources:
        if not r.custom or r.type.startswith("pulumi:providers:"):
            continue
        # A provider reference is "<urn>::<id>".
        cluster = cluster_of.get(r.provider.rsplit("::", 1)[0]) if r.provider else None
        if cluster is None:
            assert not r.deleted_with, f"{r.urn} is deleted with {r.deleted_with}"
            outside += 1
        else:
            assert r.deleted_with == cluster, f"{r.urn}: deleted with {r.deleted_with!r}"
            inside += 1
    assert inside > 0, "nothing applied in an AKS cluster"
    assert outside > 0, "nothing outside the AKS clusters' providers"
