"""A real Kueue on each plane judges the MultiKueue wiring the program builds, and dispatches.

The objects are what the program renders for the `e2e` fleet (testkit/realtier/e2e.py), applied
server-side; the manager's kubeconfig Secrets hold `worker_kubeconfig` documents built from the
tokens the workers' real token controllers minted. If the credential, the RBAC or the object
wiring were wrong, the manager's Kueue would not report the workers Connected, and no Job would
reach a worker.
"""

from __future__ import annotations

import json
import time
from typing import Any, Final

import pytest

from builders.multikueue import (
    k8s_name,
)
from config.resolve import enabled_workers
from constants import MULTIKUEUE_ADMISSION_CHECK
from testkit.realtier.e2e import TEAM
from testkit.realtier.harness import ControlPlane, Report, apply
from testkit.realtier.jobs import workload_owned_by
from testkit.realtier.shared.kueue_dispatch import (
    JOB,
    KUEUE_API,
    Wired,
    dispatch_job,
)
from testkit.realtier.shared.kueue_dispatch import wired as wired  # noqa: PLC0414 - a fixture
from testkit.realtier.wait import until

pytestmark = pytest.mark.real

# Bounded waits: measured seconds on 2 cores; the margin is for a much busier machine.
ACTIVE_TIMEOUT: Final = 60.0
DISPATCH_TIMEOUT: Final = 60.0
# MultiKueue marks the worker's copy with the manager Workload's name: an annotation in 0.19
# (feature WorkloadIdentifierAnnotations, on by default), a label before; either counts.
PREBUILT_KEY: Final = "kueue.x-k8s.io/prebuilt-workload-name"
ORIGIN_LABEL: Final = "kueue.x-k8s.io/multikueue-origin"


def _json(plane: ControlPlane, path: str) -> dict[str, Any] | None:
    status, body = plane.get(path)
    return json.loads(body) if status == 200 else None


def _condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    if obj is None:
        return None
    conditions: list[dict[str, Any]] = obj.get("status", {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def wait_active(plane: ControlPlane, path: str, what: str) -> dict[str, Any]:
    """The object's condition Active=True; the failure message shows its conditions."""
    return until(
        lambda: (c := _condition(_json(plane, path), "Active")) and c["status"] == "True" and c,
        ACTIVE_TIMEOUT,
        f"[{plane.name}] {what} Active=True",
        seen=lambda: json.dumps((_json(plane, path) or {}).get("status", "absent")),
    )


def test_manager_kueue_reports_every_worker_connected(
    planes: dict[str, ControlPlane], wired: Wired, report: Report
) -> None:
    manager = planes["manager"]
    t0 = wired.multikueue_applied
    times: list[str] = []
    for worker in enabled_workers(wired.fleet):
        path = f"{KUEUE_API}/multikueueclusters/{k8s_name(worker)}"
        cond = wait_active(manager, path, f"MultiKueueCluster {worker}")
        assert (cond["reason"], cond["message"]) == ("Active", "Connected"), f"{worker}: {cond}"
        times.append(f"{worker} {time.monotonic() - t0:.1f}s")
    cond = wait_active(
        manager, f"{KUEUE_API}/admissionchecks/{MULTIKUEUE_ADMISSION_CHECK}", "AdmissionCheck"
    )
    assert cond["reason"] == "Active", cond
    report(
        f"e2e fleet's Kueue + MultiKueue objects applied on 3 planes in {wired.seconds:.1f}s "
        "(worker tokens included); manager Kueue: MultiKueueClusters Active/Connected after "
        + ", ".join(times)
        + " (from the apply of the manager's objects); AdmissionCheck "
        + f"{MULTIKUEUE_ADMISSION_CHECK} Active"
    )


def test_cluster_queues_active_on_every_plane(
    planes: dict[str, ControlPlane], wired: Wired, report: Report
) -> None:
    t0 = wired.queues_applied
    for cluster in wired.fleet.clusters:
        for cq in cluster.queues.cluster_queues:
            cond = wait_active(
                planes[cluster.name],
                f"{KUEUE_API}/clusterqueues/{cq.name}",
                f"ClusterQueue {cq.name}",
            )
            assert cond["reason"] == "Ready", f"[{cluster.name}] {cond}"
    report(
        f"ClusterQueue {TEAM} Active (Ready) on all 3 planes, seen {time.monotonic() - t0:.1f}s "
        "after the queues were applied"
    )


def _prebuilt(job: dict[str, Any]) -> str | None:
    meta = job["metadata"]
    return (meta.get("annotations") or {}).get(PREBUILT_KEY) or (meta.get("labels") or {}).get(
        PREBUILT_KEY
    )


def _copies(planes: dict[str, ControlPlane], workers: list[str]) -> dict[str, dict[str, Any]]:
    """Worker -> the copy of the Job it holds (MultiKueue marks it with the Workload's name)."""
    found: dict[str, dict[str, Any]] = {}
    for worker in workers:
        job = _json(planes[worker], f"/apis/batch/v1/namespaces/{TEAM}/jobs/{JOB}")
        if job is not None and _prebuilt(job):
            found[worker] = job
    return found


def test_a_suspended_job_is_admitted_on_the_manager_and_dispatched_to_a_worker(
    planes: dict[str, ControlPlane], wired: Wired, report: Report
) -> None:
    manager = planes["manager"]
    workers = enabled_workers(wired.fleet)
    # The wiring must be live first, or this test would time out on the other tests' failure.
    for worker in workers:
        wait_active(manager, f"{KUEUE_API}/multikueueclusters/{k8s_name(worker)}", worker)
    t0 = time.monotonic()
    applied = apply(manager, [dispatch_job()])
    assert not applied.rejected, applied.stderr
    uid = str(
        (_json(manager, f"/apis/batch/v1/namespaces/{TEAM}/jobs/{JOB}") or {})["metadata"]["uid"]
    )

    workload: dict[str, Any] = until(
        lambda: workload_owned_by(manager, TEAM, uid),
        DISPATCH_TIMEOUT,
        "[manager] Workload of the Job",
        seen=lambda: "no Workload owned by the Job (is Kueue's batch/job integration running?)",
    )
    name = str(workload["metadata"]["name"])
    path = f"{KUEUE_API}/namespaces/{TEAM}/workloads/{name}"

    def state() -> str:
        return json.dumps((_json(manager, path) or {}).get("status", "absent"))

    for kind in ("QuotaReserved", "Admitted"):
        until(
            lambda kind=kind: (
                (c := _condition(_json(manager, path), kind)) and c["status"] == "True"
            ),
            DISPATCH_TIMEOUT,
            f"[manager] Workload {name} {kind}=True",
            seen=state,
        )
    admitted = time.monotonic() - t0

    def remote_state() -> str:
        # What the workers hold, so a failure shows how far the dispatch got.
        return state() + "".join(
            f"\n[{w}] "
            + planes[w].kubectl("get", "jobs,workloads", "-A", "--show-labels", check=False).stdout
            for w in workers
        )

    copies: dict[str, dict[str, Any]] = until(
        lambda: _copies(planes, workers),
        DISPATCH_TIMEOUT,
        f"a copy of Job {TEAM}/{JOB} on {' or '.join(workers)}",
        seen=remote_state,
    )
    dispatched = time.monotonic() - t0
    assert len(copies) == 1, f"the Job was copied to more than one worker: {sorted(copies)}"
    [(worker, copy)] = copies.items()
    assert _prebuilt(copy) == name
    assert copy["metadata"]["labels"].get(ORIGIN_LABEL) == "multikueue", copy["metadata"]
    # managedBy cleared on the copy: the worker's own Job controller would run it.
    assert "managedBy" not in copy["spec"], copy["spec"]
    status = (_json(manager, path) or {}).get("status", {})
    checks = {c["name"]: c for c in status.get("admissionChecks") or []}
    assert checks[MULTIKUEUE_ADMISSION_CHECK]["state"] == "Ready", checks
    assert worker in str(checks[MULTIKUEUE_ADMISSION_CHECK].get("message", "")), checks
    report(
        f"Job {TEAM}/{JOB}: Workload {name} admitted on the manager {admitted:.1f}s after submit; "
        f"copy on {worker} after {dispatched:.1f}s (check message: "
        f"{checks[MULTIKUEUE_ADMISSION_CHECK].get('message')!r})"
    )
