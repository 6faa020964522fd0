"""Kueue v0.19.2 / ProvisioningRequest / Node objects as the API server returns them, for fleetview.

Each builder's output is checked against the pinned CRD schema (tests/test_fleetview.py
`test_every_fixture_object_is_valid_against_the_pinned_schemas`), status included, so the pure
part of fleetview is tested on Kueue's own shapes, not on shapes it invented.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

from fleetview.objects import MULTIKUEUE_CONTROLLER, PROVISIONING_CONTROLLER, Snapshot

KUEUE: Final = "kueue.x-k8s.io/v1beta2"
NOW: Final = dt.datetime(2026, 12, 3, 20, 0, 0, tzinfo=dt.UTC)
Obj = dict[str, Any]


def ago(seconds: float) -> str:
    return (NOW - dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def cond(kind: str, status: str, reason: str, message: str = "", seconds: float = 60) -> Obj:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": ago(seconds),
    }


def _meta(name: str, namespace: str | None = None, **extra: Any) -> Obj:
    meta: Obj = {"name": name, "creationTimestamp": ago(600), **extra}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def cluster_queue(
    name: str,
    *,
    nominal: str = "4",
    used: str = "0",
    pending: int = 0,
    reserving: int = 0,
    admitted: int = 0,
    checks: tuple[str, ...] = (),
    active: tuple[str, str, str] = ("True", "Ready", "Can admit new workloads"),
    flavor: str = "default",
) -> Obj:
    usage = [
        {
            "name": flavor,
            "resources": [
                {"name": "cpu", "total": used, "borrowed": "0"},
                {"name": "memory", "total": "0", "borrowed": "0"},
            ],
        }
    ]
    spec: Obj = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory"],
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [
                            {"name": "cpu", "nominalQuota": nominal},
                            {"name": "memory", "nominalQuota": "16Gi"},
                        ],
                    }
                ],
            }
        ],
    }
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": _meta(name),
        "spec": spec,
        "status": {
            "conditions": [cond("Active", *active)],
            "flavorsReservation": usage,
            "flavorsUsage": usage,
            "pendingWorkloads": pending,
            "reservingWorkloads": reserving,
            "admittedWorkloads": admitted,
        },
    }


def local_queue(namespace: str, name: str, cq: str) -> Obj:
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": _meta(name, namespace),
        "spec": {"clusterQueue": cq},
    }


def admission_check(name: str, controller: str, kind: str, params: str) -> Obj:
    return {
        "apiVersion": KUEUE,
        "kind": "AdmissionCheck",
        "metadata": _meta(name),
        "spec": {
            "controllerName": controller,
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": kind, "name": params},
        },
        "status": {
            "conditions": [cond("Active", "True", "Active", "The admission check is active")]
        },
    }


def provisioning_request_config(name: str, limit: int | None = None) -> Obj:
    """A ProvisioningRequestConfig as the API server returns it: retryStrategy defaulted by the
    CRD ({backoffLimitCount: 3, backoffBaseSeconds: 60, backoffMaxSeconds: 1800})."""
    strategy = {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
    if limit is not None:
        strategy["backoffLimitCount"] = limit
    return {
        "apiVersion": KUEUE,
        "kind": "ProvisioningRequestConfig",
        "metadata": _meta(name),
        "spec": {
            "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
            "managedResources": ["cpu"],
            "retryStrategy": strategy,
        },
    }


def multikueue_cluster(name: str, active: bool = True, seconds: float = 3600) -> Obj:
    condition = (
        cond("Active", "True", "Active", "Connected", seconds)
        if active
        else cond(
            "Active",
            "False",
            "ClientConnectionFailed",
            'Get "https://10.0.0.5:443/api": dial tcp 10.0.0.5:443: connect: connection refused',
            seconds,
        )
    )
    return {
        "apiVersion": KUEUE,
        "kind": "MultiKueueCluster",
        "metadata": _meta(name),
        "spec": {
            "clusterSource": {
                "kubeConfig": {
                    "locationType": "Secret",
                    "location": f"multikueue-{name}-kubeconfig-1",
                }
            }
        },
        "status": {"conditions": [condition]},
    }


def multikueue_config(name: str, clusters: list[str]) -> Obj:
    return {
        "apiVersion": KUEUE,
        "kind": "MultiKueueConfig",
        "metadata": _meta(name),
        "spec": {"clusters": clusters},
    }


def workload(
    namespace: str,
    job: str,
    *,
    queue: str = "team-a",
    conditions: list[Obj] | None = None,
    checks: list[Obj] | None = None,
    cluster_name: str | None = None,
    nominated: list[str] | None = None,
    admitted_to: str | None = None,
    origin: bool = False,
    uid: str = "10000000-0000-0000-0000-000000000001",
    active: bool | None = None,
    requeue: tuple[int, float] | None = None,
    evictions: list[tuple[str, str, int]] | None = None,
) -> Obj:
    """A Workload of Job `job`. `requeue`: status.requeueState (count, requeueAt seconds from NOW,
    negative in the past); `evictions`: schedulingStats.evictions (reason, underlyingCause, count).
    """
    name = f"job-{job}-1a2b3"
    meta = _meta(
        name,
        namespace,
        uid=uid,
        ownerReferences=[
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": job,
                "uid": "00000000-0000-0000-0000-000000000001",
                "controller": True,
            }
        ],
        labels={"kueue.x-k8s.io/multikueue-origin": "multikueue"} if origin else {},
    )
    status: Obj = {"conditions": conditions or []}
    if checks:
        status["admissionChecks"] = checks
    if cluster_name:
        status["clusterName"] = cluster_name
    if nominated:
        status["nominatedClusterNames"] = nominated
    if requeue is not None:
        status["requeueState"] = {"count": requeue[0], "requeueAt": ago(-requeue[1])}
    if evictions:
        status["schedulingStats"] = {
            "evictions": [{"reason": r, "underlyingCause": c, "count": n} for r, c, n in evictions]
        }
    if admitted_to:
        status["admission"] = {
            "clusterQueue": admitted_to,
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"cpu": "default", "memory": "default"},
                    "resourceUsage": {"cpu": "1", "memory": "64Mi"},
                    "count": 1,
                }
            ],
        }
    spec_extra: Obj = {} if active is None else {"active": active}
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": meta,
        "spec": {
            **spec_extra,
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                                    "resources": {"requests": {"cpu": "1", "memory": "64Mi"}},
                                }
                            ],
                        }
                    },
                }
            ],
        },
        "status": status,
    }


def check_state(
    name: str,
    state: str,
    message: str = "",
    seconds: float = 60,
    *,
    retry_count: int | None = None,
    requeue_after: int | None = None,
) -> Obj:
    """An AdmissionCheckState (retryCount and requeueAfterSeconds as Kueue sets them on Retry)."""
    out: Obj = {
        "name": name,
        "state": state,
        "message": message,
        "lastTransitionTime": ago(seconds),
    }
    if retry_count is not None:
        out["retryCount"] = retry_count
    if requeue_after is not None:
        out["requeueAfterSeconds"] = requeue_after
    return out


def pending_workloads(cq_items: list[tuple[Obj, str]]) -> list[Obj]:
    """Items of the visibility API's PendingWorkloadsSummary for one ClusterQueue, in queue order
    (apis/visibility/v1beta2/types.go PendingWorkload): (Workload, its LocalQueue)."""
    per_lq: dict[str, int] = {}
    items = []
    for position, (wl, lq) in enumerate(cq_items):
        items.append(
            {
                "metadata": {
                    "name": wl["metadata"]["name"],
                    "namespace": wl["metadata"]["namespace"],
                    "creationTimestamp": wl["metadata"]["creationTimestamp"],
                },
                "priority": 0,
                "localQueueName": lq,
                "positionInClusterQueue": position,
                "positionInLocalQueue": per_lq.get(lq, 0),
            }
        )
        per_lq[lq] = per_lq.get(lq, 0) + 1
    return items


def provisioning_request(
    namespace: str, workload_name: str, conditions: list[Obj], attempt: int = 1
) -> Obj:
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": _meta(
            f"{workload_name}-provisioning-{attempt}",
            namespace,
            ownerReferences=[
                {
                    "apiVersion": KUEUE,
                    "kind": "Workload",
                    "name": workload_name,
                    "uid": "00000000-0000-0000-0000-000000000002",
                    "controller": True,
                }
            ],
        ),
        "spec": {
            "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
            "podSets": [{"count": 1, "podTemplateRef": {"name": f"ppt-{workload_name}-main"}}],
        },
        "status": {"conditions": conditions},
    }


def node(name: str, pool: str, ready: bool = True) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.azure.com/agentpool": pool, "agentpool": pool},
        },
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady"}
            ]
        },
    }


# ---- a small fleet: a manager dispatching team-a to worker-1 and worker-2 ----------------------

TEAM = "team-a"
JOB = "train"
WL = f"job-{JOB}-1a2b3"
PENDING_MESSAGE = (
    "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
    "default, 1 more needed"
)


def manager(*workloads: Obj, down: tuple[str, ...] = (), since: float = 400) -> Snapshot:
    """The manager; each MultiKueueCluster Active (or, in `down`, not) for `since` seconds."""
    return Snapshot(
        "manager",
        cluster_queues=[
            cluster_queue(
                TEAM, nominal="4", used="3", pending=1, admitted=1, checks=("multikueue",)
            )
        ],
        local_queues=[local_queue(TEAM, TEAM, TEAM)],
        admission_checks=[
            admission_check("multikueue", MULTIKUEUE_CONTROLLER, "MultiKueueConfig", "multikueue")
        ],
        multikueue_clusters=[
            multikueue_cluster(w, active=w not in down, seconds=since)
            for w in ("worker-1", "worker-2")
        ],
        multikueue_configs=[multikueue_config("multikueue", ["worker-1", "worker-2"])],
        workloads=list(workloads),
        nodes=[node("aks-system-0", "system")],
    )


def worker(
    name: str, *workloads: Obj, prs: tuple[Obj, ...] = (), retry_limit: int | None = None
) -> Snapshot:
    return Snapshot(
        name,
        cluster_queues=[cluster_queue(TEAM, nominal="8", used="1", checks=("provisioning",))],
        local_queues=[local_queue(TEAM, TEAM, TEAM)],
        admission_checks=[
            admission_check(
                "provisioning", PROVISIONING_CONTROLLER, "ProvisioningRequestConfig", "provisioning"
            )
        ],
        provisioning_request_configs=[provisioning_request_config("provisioning", retry_limit)],
        workloads=list(workloads),
        provisioning_requests=list(prs),
        nodes=[
            node("aks-system-0", "system"),
            node("aks-batch-0", "batch"),
            node("aks-batch-1", "batch", ready=False),
        ],
    )
