"""fleetview against a real Kueue on each plane: the command as users run it.

On the e2e fleet of test_kueue_dispatch (manager team-a: 32 CPU; each worker: 16), driven through
real states: job A (12 CPU) is admitted on the manager and dispatched to a worker; job B (24 CPU)
then waits for quota on the manager (12 + 24 > 32); then A's worker is lost (its API server
killed, the rest of it frozen: testkit/realtier/faults.py) and comes back. Each time `python -m
fleetview status --json` and `why` run as a user would, with the planes' kubeconfig files, and must
name the right cluster and cause; with a worker gone, `status` answers within its bound.

FLEETVIEW_CAPTURE=DIR keeps the human outputs (docs/observability.md shows such a capture;
testkit/realtier/fleetview_cli.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, Final

import pytest

from testkit.realtier.e2e import TEAM
from testkit.realtier.faults import cluster_active, condition_of, lose_plane, restore_plane
from testkit.realtier.fleetview_cli import fleetview
from testkit.realtier.harness import ControlPlane, Report, apply
from testkit.realtier.jobs import suspended_job, workload_of_job
from testkit.realtier.kueue import KueueManager
from testkit.realtier.shared.fleetview_real import pending_count
from testkit.realtier.shared.kueue_dispatch import Wired

# The e2e fleet's wiring as test_kueue_dispatch applies it (module-scoped: applied once here too;
# server-side apply makes a second application in one session a no-op): the fixture `wired`.
from testkit.realtier.shared.kueue_dispatch import wired as wired  # noqa: PLC0414 - a fixture
from testkit.realtier.wait import until

pytestmark = pytest.mark.real

WAIT: Final = 60.0  # every wait below; measured in seconds on 2 cores
BOUND: Final = 5.0  # fleetview's --timeout in the lost-worker test
DISPATCHED: Final = "fleetview-dispatched"
PENDING: Final = "fleetview-pending"
WORKERS: Final = ("worker-1", "worker-2")


def _job(name: str, cpu: str) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": "64Mi"}
    return suspended_job(name, TEAM, TEAM, requests, limits=False, dispatched=True)


def _json(planes: dict[str, ControlPlane], *args: str) -> tuple[dict[str, Any], float]:
    done, elapsed = fleetview(planes, *args, "--json")
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout), elapsed


@pytest.fixture(scope="module")
def jobs(
    planes: dict[str, ControlPlane], kueues: dict[str, KueueManager], wired: Wired
) -> Iterator[str]:
    """A dispatched (12 CPU) and, after it, a job pending on the manager's quota (24 CPU).
    Yields the worker A went to; deletes both jobs at the end."""
    del kueues, wired
    manager = planes["manager"]
    for w in WORKERS:
        until(
            lambda w=w: cluster_active(manager, w) == "True",
            WAIT,
            f"[manager] MultiKueueCluster {w} Active",
            seen=lambda w=w: str(cluster_active(manager, w)),
        )
    try:
        applied = apply(manager, [_job(DISPATCHED, "12")])
        assert not applied.rejected, applied.stderr
        wl = until(
            lambda: (
                (w := workload_of_job(manager, TEAM, DISPATCHED))
                and (w.get("status") or {}).get("clusterName")
                and w
            ),
            WAIT,
            f"[manager] Workload of {DISPATCHED} with status.clusterName",
            seen=lambda: json.dumps(
                (workload_of_job(manager, TEAM, DISPATCHED) or {}).get("status")
            ),
        )
        applied = apply(manager, [_job(PENDING, "24")])
        assert not applied.rejected, applied.stderr
        until(
            lambda: condition_of(workload_of_job(manager, TEAM, PENDING), "QuotaReserved").get(
                "message"
            ),
            WAIT,
            f"[manager] Workload of {PENDING} QuotaReserved=False with Kueue's reason",
            seen=lambda: json.dumps((workload_of_job(manager, TEAM, PENDING) or {}).get("status")),
        )
        # Kueue writes the ClusterQueue's counts after the Workload's condition, on its own
        # schedule: a `status` between the two would see 0 pending.
        until(
            lambda: pending_count(manager) >= 1,
            WAIT,
            f"[manager] ClusterQueue {TEAM} counts the pending Workload (status.pendingWorkloads)",
            seen=lambda: str(pending_count(manager)),
        )
        yield str(wl["status"]["clusterName"])
    finally:
        for job in (DISPATCHED, PENDING):
            manager.kubectl(
                "delete", "job", "-n", TEAM, job, "--ignore-not-found", "--wait=false", check=False
            )


def test_status_and_why_name_the_worker_and_the_quota(
    planes: dict[str, ControlPlane], jobs: str, report: Report
) -> None:
    worker = jobs
    status, took = _json(planes, "status")
    assert [c["reachable"] for c in status["clusters"]] == [True, True, True], status["clusters"]
    roles = {c["name"]: c["role"] for c in status["clusters"]}
    assert roles == {"manager": "manager", "worker-1": "worker", "worker-2": "worker"}, roles
    manager = next(c for c in status["clusters"] if c["name"] == "manager")
    [queue] = [q for q in manager["clusterQueues"] if q["name"] == TEAM]
    assert queue["pending"] >= 1, queue
    cpu = next(u for u in queue["usage"] if u["resource"] == "cpu")
    assert cpu["nominal"] == "32", cpu
    rows = {w["name"]: w for d in manager["dispatchSets"] for w in d["workloads"]}
    dispatched = next(w for w in rows.values() if w["name"].startswith(f"job-{DISPATCHED}-"))
    assert (dispatched["phase"], dispatched["worker"]) == ("admitted", worker), dispatched
    assert {m["name"]: m["active"] for m in manager["multiKueueClusters"]} == {
        "worker-1": True,
        "worker-2": True,
    }
    assert status["warnings"] == [], status["warnings"]

    why, _ = _json(planes, "why", f"{TEAM}/{DISPATCHED}")
    assert why["worker"] == worker, why
    assert f"dispatched to {worker}" in why["verdict"], why["verdict"]
    # Admitted on the worker: `running` once its pods are ready, `starting` until then (the
    # twin's kwok pods may still be before PodsReady when it is asked).
    assert why["state"] in ("running", "starting"), why
    assert f"it is admitted on {worker}" in why["verdict"], why["verdict"]
    pending, _ = _json(planes, "why", f"{TEAM}/{PENDING}")
    assert (pending["phase"], pending["state"]) == ("pending", "pending"), pending
    assert "waits for quota on manager (ClusterQueue team-a)" in pending["verdict"], pending
    assert "insufficient unused quota for cpu in flavor default" in pending["verdict"], pending

    # The human outputs: they must render (and are what docs/observability.md shows).
    for args, name in (
        (("status",), "status"),
        (("why", f"{TEAM}/{DISPATCHED}"), "why-dispatched"),
        (("why", f"{TEAM}/{PENDING}"), "why-pending"),
    ):
        done, _ = fleetview(planes, *args, capture=name)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
    report(
        f"fleetview status on 3 planes in {took:.1f}s (process included): {DISPATCHED} on "
        f"{worker}, {PENDING} pending on the manager's quota, named by why"
    )


def test_a_lost_worker_is_named_within_the_bound(
    planes: dict[str, ControlPlane], kueues: dict[str, KueueManager], jobs: str, report: Report
) -> None:
    lost = jobs
    manager = planes["manager"]
    lose_plane(planes[lost], kueues[lost])
    try:
        t0 = time.monotonic()
        until(
            lambda: cluster_active(manager, lost) == "False",
            WAIT,
            f"[manager] MultiKueueCluster {lost} Active=False",
            seen=lambda: str(cluster_active(manager, lost)),
        )
        inactive = time.monotonic() - t0
        status, took = _json(planes, "status", "--timeout", f"{BOUND:.0f}")
        assert took < BOUND + 5.0, f"status took {took:.1f}s with --timeout {BOUND:.0f}"
        row = next(c for c in status["clusters"] if c["name"] == lost)
        assert (row["reachable"], row["role"]) == (False, "worker"), row
        kinds = {(w["kind"], w["object"]) for w in status["warnings"]}
        assert ("Unreachable", "-") in kinds, status["warnings"]
        assert ("MultiKueueClusterNotActive", lost) in kinds, status["warnings"]
        why, _ = _json(planes, "why", f"{TEAM}/{DISPATCHED}", "--timeout", f"{BOUND:.0f}")
        assert f"dispatched to {lost}, and {lost} is lost" in why["verdict"], why["verdict"]
        for args, name in (
            (("status", "--timeout", f"{BOUND:.0f}"), "status-lost"),
            (("why", f"{TEAM}/{DISPATCHED}", "--timeout", f"{BOUND:.0f}"), "why-lost"),
        ):
            done, _ = fleetview(planes, *args, capture=name)
            assert "Traceback" not in done.stderr, done.stderr
    finally:
        restore_plane(planes[lost], kueues[lost])
    back = until(
        lambda: cluster_active(manager, lost) == "True",
        WAIT,
        f"[manager] MultiKueueCluster {lost} Active again after restore",
        seen=lambda: str(cluster_active(manager, lost)),
    )
    del back
    report(
        f"fleetview: {lost} lost; manager saw it inactive after {inactive:.1f}s; status named "
        f"it in {took:.1f}s (--timeout {BOUND:.0f})"
    )
