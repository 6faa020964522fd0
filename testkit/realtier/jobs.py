"""The Job every real-tier test submits, and the Workload Kueue makes for it.

The Job: one container that pauses, suspended at creation, passing Pod Security `restricted`.
Suspended because no Kueue webhook runs on the loopback planes (Kueue runs beside them, not in
them): the test suspends the Job as the webhook would, and on a MultiKueue manager sets
`managedBy` as the webhook would. Restricted because team namespaces enforce it
(`TeamNamespace.podSecurity`). kwok plays the pod's life; `run_for` sets how long it stays
Running (kwok's `pod-complete` stage delay annotation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from testkit.realtier.faults import COMPLETE_DELAY, HELD, KUEUE_API, items
from testkit.realtier.harness import ControlPlane
from upstream.kueue import MULTIKUEUE_CONTROLLER, QUEUE_LABEL
from upstream.podsecurity import (
    RESTRICTED_CONTAINER_SECURITY_CONTEXT,
    RESTRICTED_POD_SECURITY_CONTEXT,
)

IMAGE: Final = "registry.k8s.io/e2e-test-images/agnhost:2.53"


def suspended_job(
    name: str,
    namespace: str,
    queue: str,
    requests: Mapping[str, str],
    *,
    limits: bool = True,
    dispatched: bool = False,
    pods: int | None = None,
    run_for: str | None = None,
    labels: Mapping[str, str] | None = None,
    held: bool = False,
) -> dict[str, Any]:
    """A suspended, restricted Job for LocalQueue `queue` in `namespace`.

    `requests` per pod (and the same `limits` unless `limits=False`); `dispatched`: managed by
    MultiKueue (a manager's Job); `pods`: parallelism and completions (Job's default 1 when
    None); `run_for`: kwok completes each pod after that long (else the stages' default);
    `held`: its pods never get ready on a twin started with faults.held_not_ready."""
    resources: dict[str, Any] = {"requests": dict(requests)}
    if limits:
        resources["limits"] = dict(requests)
    template: dict[str, Any] = {
        "spec": {
            "restartPolicy": "Never",
            "securityContext": dict(RESTRICTED_POD_SECURITY_CONTEXT),
            "containers": [
                {
                    "name": "main",
                    "image": IMAGE,
                    "securityContext": dict(RESTRICTED_CONTAINER_SECURITY_CONTEXT),
                    "args": ["pause"],
                    "resources": resources,
                }
            ],
        }
    }
    annotations = {COMPLETE_DELAY: run_for} if run_for is not None else {}
    if held:
        annotations[HELD] = "true"
    if annotations:
        template["metadata"] = {"annotations": annotations}
    spec: dict[str, Any] = {"suspend": True, "template": template}
    if pods is not None:
        spec["parallelism"] = pods
        spec["completions"] = pods
    if dispatched:
        spec["managedBy"] = MULTIKUEUE_CONTROLLER
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {QUEUE_LABEL: queue, **(labels or {})},
        },
        "spec": spec,
    }


def workload_of_job(plane: ControlPlane, namespace: str, job: str) -> dict[str, Any] | None:
    """The Workload Kueue made for the Job named `job` (its owner), None until there is one."""
    return _owned(plane, namespace, "name", job)


def workload_owned_by(plane: ControlPlane, namespace: str, uid: str) -> dict[str, Any] | None:
    """The Workload whose owner (a Job) has `uid`, None until there is one."""
    return _owned(plane, namespace, "uid", uid)


def _owned(plane: ControlPlane, namespace: str, key: str, value: str) -> dict[str, Any] | None:
    return next(
        (
            w
            for w in items(plane, f"{KUEUE_API}/namespaces/{namespace}/workloads")
            if any(o.get(key) == value for o in w["metadata"].get("ownerReferences") or [])
        ),
        None,
    )
