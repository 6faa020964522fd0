"""Kueue v0.19.2 / ProvisioningRequest / Node objects as the API server returns them, for fleetview.

Each builder's output is checked against the pinned CRD schema (tests/test_fleetview.py
`test_every_fixture_object_is_valid_against_the_pinned_schemas`), status included, so the pure
part of fleetview is tested on Kueue's own shapes, not on shapes it invented.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

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
) -> Obj:
    name = f"job-{job}-1a2b3"
    meta = _meta(
        name,
        namespace,
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
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": meta,
        "spec": {
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


def check_state(name: str, state: str, message: str = "", seconds: float = 60) -> Obj:
    return {"name": name, "state": state, "message": message, "lastTransitionTime": ago(seconds)}


def provisioning_request(namespace: str, workload_name: str, conditions: list[Obj]) -> Obj:
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": _meta(
            f"{workload_name}-provisioning-1",
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
