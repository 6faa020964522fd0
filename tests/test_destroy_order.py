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
from tests.conftest import COMMITTED_STACKS

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
