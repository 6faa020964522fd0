"""Pods Kueue admitted through AKS's node upgrades: a PodDisruptionBudget per team namespace.

AKS upgrades a pool (a node image, a patch, a minor) by surging, cordoning and draining its nodes
through the Eviction API, which honours PodDisruptionBudgets: `drainTimeoutInMinutes` is how long
it waits on one. A batch Job has none of its own, so its pods are evicted at once and each
eviction counts against the Job's `backoffLimit`. Under `upgrades.batchPods: protect` each team
namespace of a cluster gets a budget that allows no eviction of the pods Kueue admitted there; at
the drain timeout AKS, with `undrainableNodeBehavior: Cordon` (builders.aks
`sent_upgrade_settings`), leaves the node cordoned and labelled Quarantined with a surge node in
its place, and goes on. The pods run to their end on the old node; the node is upgraded at a later
run, once it is empty. docs/upgrades.md, "Batch pods through node upgrades".
"""

from __future__ import annotations

from typing import Any, Final

from upstream.kueue import POD_SET_LABEL

BUDGET_NAME: Final = "kueue-admitted-pods"
# An integer minAvailable above any pod count: disruptionsAllowed is always 0. Not `maxUnavailable:
# 0` nor a percentage: either makes the disruption controller look up each pod's controller's
# scale, which a Job does not serve, so it fails ("found no controllers for pod"); an integer
# minAvailable counts the pods as they are (kubernetes v1.36.3,
# pkg/controller/disruption/disruption.go, getExpectedPodCount).
NO_EVICTION: Final = 2**31 - 1


def batch_pod_budget(namespace: str) -> dict[str, Any]:
    """The PodDisruptionBudget that keeps Kueue-admitted pods of `namespace` from eviction.

    `unhealthyPodEvictionPolicy: IfHealthyBudget` (Kubernetes' default, written out): a pod that
    runs but is not Ready (a container restarting under `restartPolicy: OnFailure`) is held too,
    as its eviction would count against the Job's backoffLimit like any other; a node it keeps
    is quarantined at the drain timeout like one with healthy pods. Pending and finished pods are
    never held by a budget (the Eviction API lets them go: pkg/registry/core/pod/storage/
    eviction.go `canIgnorePDB`, v1.36.3); a Pending pod of an admitted Job deleted there counts
    as a failure unless the Job's `podFailurePolicy` ignores `DisruptionTarget`.
    """
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": BUDGET_NAME, "namespace": namespace},
        "spec": {
            "minAvailable": NO_EVICTION,
            "selector": {"matchExpressions": [{"key": POD_SET_LABEL, "operator": "Exists"}]},
            "unhealthyPodEvictionPolicy": "IfHealthyBudget",
        },
    }
