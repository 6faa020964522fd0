"""What tests/realtier/test_faults_runtime.py shares with other test modules (they import it from
here, not from a test module): MANAGER, WORKER_LOST_TIMEOUT, dev_twin, autoscale, completed_once,
job, queues_active, ready_to_dispatch, redispatch, running_pods, state, submit, where, workloads and
what they need."""

from __future__ import annotations

import json
import shlex
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import pytest

from config.models import FleetConfig
from config.resolve import with_mirrored_queues
from testkit.realtier.autoscaler import nodes_at_min, start_autoscalers
from testkit.realtier.crds import kueue_crd_paths
from testkit.realtier.e2e import run_documented
from testkit.realtier.engine import find_engine
from testkit.realtier.faults import (
    KUEUE_API,
    condition,
    get_json,
    items,
    thaw_all,
    timed_simulation,
)
from testkit.realtier.harness import ControlPlane, Tools, apply
from testkit.realtier.kueue import kueue_binary
from testkit.realtier.pulumi_cli import OPERATIONS, section
from testkit.realtier.shared.twin_jobs import PODS, job_for
from testkit.realtier.twin import Submission, load_stack, submissions
from testkit.realtier.twin_run import (
    SimulationTools,
    Twin,
    running_twin,
)
from testkit.realtier.wait import until

STACK: Final = "dev"
MANAGER: Final = "manager"
WORKER_LOST_TIMEOUT: Final = 20.0  # seconds; Kueue's default is 15m (kueue.multiKueue)
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"


@contextmanager
def dev_twin(
    tools: Tools,
    simulation: SimulationTools,
    tmp_path: Path,
    fleet: FleetConfig | None = None,
    visibility: Collection[str] = (),
    *,
    worker_lost_timeout: str = f"{WORKER_LOST_TIMEOUT:.0f}s",
    by_engine: bool = False,
) -> Iterator[Twin]:
    """dev's twin (or `fleet`'s, named dev), its user pools at minCount, no autoscaler yet, the
    pods' run times timed (`timed_simulation`); thawed if a test froze it, always stopped.
    `visibility`: the clusters whose Kueue serves its visibility API (running_twin's
    `kueue_visibility`); `by_engine`: its objects made by `pulumi up` of the committed stack
    (skips without the engine). Kueue's `workerLostTimeout` is the fault tests' 20 s unless
    `worker_lost_timeout` says otherwise."""
    binary = kueue_binary()
    if binary is None:
        pytest.skip("real tier: kueue not built")
    if by_engine and (why := find_engine()[1]):
        pytest.skip(f"real tier: {why}")
    sim = timed_simulation(simulation, tmp_path / "stages")
    with running_twin(
        STACK,
        tools,
        sim,
        kueue_binary=binary,
        kueue_crds=kueue_crd_paths(load_stack(STACK)),
        workdir=tmp_path,
        nodes=nodes_at_min,
        worker_lost_timeout=worker_lost_timeout,
        by_engine=by_engine,
        fleet_value=fleet,
        kueue_visibility=visibility,
    ) as started:
        try:
            yield started
        finally:
            thaw_all(started.planes.values(), started.kueues.values())


def autoscale(twin: Twin, binary: Path, *clusters: str) -> None:
    """The real cluster-autoscaler on these clusters, as a process of each plane (a lost or
    frozen plane's autoscaler stops with it and resumes with it)."""
    start_autoscalers({c: twin.planes[c] for c in clusters}, twin.fleet, binary)


def ready_to_dispatch(twin: Twin, binary: Path, *autoscaled: str) -> Submission:
    """The autoscaler on `autoscaled`, every ClusterQueue Active; the stack's one dispatched
    LocalQueue (on the manager)."""
    autoscale(twin, binary, *autoscaled)
    queues_active(twin)
    [sub] = [s for s in submissions(twin.fleet) if s.dispatched]
    return sub


def queues_active(twin: Twin) -> None:
    for cluster in with_mirrored_queues(twin.fleet).clusters:
        plane = twin.planes[cluster.name]
        for cq in cluster.queues.cluster_queues:
            path = f"{KUEUE_API}/clusterqueues/{cq.name}"
            until(
                lambda plane=plane, path=path: condition(get_json(plane, path), "Active") == "True",
                90.0,
                f"[{cluster.name}] ClusterQueue {cq.name} Active",
            )


def job(plane: ControlPlane, ns: str, name: str) -> dict[str, Any] | None:
    return get_json(plane, f"/apis/batch/v1/namespaces/{ns}/jobs/{name}")


def running_pods(plane: ControlPlane, ns: str, name: str) -> list[dict[str, Any]]:
    pods = items(plane, f"/api/v1/namespaces/{ns}/pods?labelSelector={JOB_NAME_LABEL}%3D{name}")
    return [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]


def workloads(plane: ControlPlane, ns: str) -> list[dict[str, Any]]:
    return items(plane, f"{KUEUE_API}/namespaces/{ns}/workloads")


def where(wl: dict[str, Any]) -> str | None:
    """The worker a manager Workload is dispatched to (status.clusterName, Kueue 0.19)."""
    return (wl.get("status") or {}).get("clusterName")


def state(twin: Twin, ns: str, live: list[str]) -> str:
    lines = [
        f"{w['metadata']['name']}: cluster={where(w)} "
        + json.dumps([(c["type"], c["status"], c.get("reason")) for c in w["status"]["conditions"]])
        for w in workloads(twin.planes[MANAGER], ns)
        if w.get("status", {}).get("conditions")
    ]
    for w in workloads(twin.planes[MANAGER], ns):
        checks = (w.get("status") or {}).get("admissionChecks") or []
        lines.append(
            f"  checks: {[(c.get('name'), c.get('state'), c.get('message')) for c in checks]}"
        )
    for j in items(twin.planes[MANAGER], f"/apis/batch/v1/namespaces/{ns}/jobs"):
        st = j.get("status") or {}
        lines.append(
            f"manager job {j['metadata']['name']}: suspend={j['spec'].get('suspend')} "
            f"active={st.get('active')} succeeded={st.get('succeeded')}"
        )
    for name in live:
        plane = twin.planes[name]
        result = plane.kubectl(
            "get", "jobs,workloads,pods,provisioningrequests", "-n", ns, check=False
        )
        lines.append(f"[{name}]\n{result.stdout}")
        for w in workloads(plane, ns):
            conds = (w.get("status") or {}).get("conditions") or []
            checks = (w.get("status") or {}).get("admissionChecks") or []
            lines.append(
                f"  {w['metadata']['name']}: "
                + json.dumps([(c["type"], c["status"], c.get("reason")) for c in conds])
                + f" checks {[(c.get('name'), c.get('state'), c.get('message')) for c in checks]}"
            )
    return "\n".join(lines)


def submit(twin: Twin, sub: Submission, names: list[str], run_for: str) -> None:
    applied = apply(twin.planes[MANAGER], [job_for(sub, n, run_for) for n in names])
    assert not applied.rejected, applied.stderr


def completed_once(twin: Twin, ns: str, name: str) -> bool:
    """The manager's Job Complete with exactly its completions succeeded."""
    obj = job(twin.planes[MANAGER], ns, name)
    return condition(obj, "Complete") == "True" and (obj or {})["status"].get("succeeded") == PODS


# The documented annotation for the operator step below (any metadata change does: it is an update
# event, and MultiKueue reconciles the Workload again).
REDISPATCH: Final = "aks-batch-fleet/redispatch"
KILLED_SECTION: Final = "### The manager's Kueue killed mid-dispatch"


def redispatch(manager: ControlPlane) -> list[tuple[str, str]]:
    """The documented operator step, as written: its listing line on the manager, then its annotate
    line for each (namespace, Workload) listed. Returns those listed."""
    lines = [
        line
        for line in section(OPERATIONS.read_text(), KILLED_SECTION).splitlines()
        if line.startswith("kubectl ")
    ]
    assert len(lines) == 2, (
        f"docs/operations.md, {KILLED_SECTION}: expected a listing and an annotate line"
    )
    listing, annotate = lines
    listed = [
        (ns, name)
        for ns, name in (
            row.split() for row in run_documented(manager, listing).splitlines() if row.strip()
        )
    ]
    for ns, name in listed:
        run_documented(
            manager,
            annotate.replace("NAMESPACE", shlex.quote(ns)).replace("NAME", shlex.quote(name)),
        )
    assert REDISPATCH in annotate, annotate
    return listed
