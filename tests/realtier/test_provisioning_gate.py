"""Provisioning gates for real: the real cluster-autoscaler answers Kueue's ProvisioningRequests.

On the twin of the committed stack whose ClusterQueue has a provisioning gate (dev: worker-1's
team-a, gate `batch-scaleup` on pool `batch`, minCount 0, maxCount 5), with every user pool at its
minCount and the real cluster-autoscaler (kwok provider, testkit/realtier/autoscaler.py) on each
plane, a Job is submitted to the gated queue on the worker itself (its mirrored LocalQueue), with
one pod per node (each pod asks for more than half a node's CPU) and every pod Running for
`RUN_FOR` (kwok's pod-complete delay, `faults.timed_simulation`): pods that completed at once would
free their node, and a pod still waiting for its own new node to turn Ready could then be
scheduled onto a finished pod's node. Asserted:

- the Workload is not admitted before the autoscaler marks its ProvisioningRequest Provisioned
  (the gate held: it was seen with quota reserved and not admitted first);
- the scale-up is atomic: when the Workload is first seen admitted, all the nodes the Job needs
  already exist, created in one scale-up (creation times within one second);
- the Job then runs on exactly those new nodes (members of the pool's node group) and completes;
- a Job with one pod more than the pool's maxCount is never admitted, and its Workload's check
  and ProvisioningRequest say why;
- the new nodes are removed again (short scale-down flags: `autoscaler.FAST_SCALE_DOWN`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import pytest

from config.models import FleetConfig
from config.resolve import with_mirrored_queues
from testkit.realtier.autoscaler import (
    GROUP_ANNOTATION,
    find_autoscaler,
    nodes_at_min,
    start_autoscalers,
)
from testkit.realtier.crds import kueue_crd_paths
from testkit.realtier.faults import timed_simulation
from testkit.realtier.harness import ControlPlane, Report, Tools, apply
from testkit.realtier.kueue import kueue_binary
from testkit.realtier.shared.provisioning_gate import Gated, gate_json, job, provisioning_requests
from testkit.realtier.twin import fleet_nodes, load_stack
from testkit.realtier.twin_run import (
    SimulationTools,
    find_simulation_tools,
    running_twin,
)
from testkit.realtier.wait import until
from upstream.aks import AGENTPOOL_LABEL

pytestmark = [pytest.mark.real, pytest.mark.slow]

STACK: Final = "dev"
KUEUE_API: Final = "/apis/kueue.x-k8s.io/v1beta2"
POLL: Final = 0.2
ACTIVE_TIMEOUT: Final = 60.0
JOB_TIMEOUT: Final = 90.0
REFUSED_WINDOW: Final = 25.0  # how long the too-large Job is watched (never admitted)
SCALE_DOWN_TIMEOUT: Final = 90.0


def gated_queue(fleet: FleetConfig) -> Gated | None:
    """The first LocalQueue (mirrored ones included) whose ClusterQueue has a provisioning gate
    and whose first flavor is a user pool."""
    nodes = fleet_nodes(fleet)
    for cluster in with_mirrored_queues(fleet).clusters:
        flavors = {f.name: f for f in cluster.queues.flavors}
        for cq in cluster.queues.cluster_queues:
            if cq.provisioning_gate is None:
                continue
            flavor = flavors.get(cq.resource_groups[0].flavors[0].name)
            pool = cluster.pool(flavor.pool) if flavor and flavor.pool else None
            lq = next((q for q in cluster.queues.local_queues if q.cluster_queue == cq.name), None)
            if pool is None or lq is None:
                continue
            group = next(g for g in nodes[cluster.name] if g.pool == pool.name)
            cpu = str(group.nodes[0]["status"]["allocatable"]["cpu"])
            millis = int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000
            return Gated(cluster.name, lq.namespace, lq.name, cq.name, pool, millis)
    return None


# ---- reading the plane --------------------------------------------------------------------


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    conditions: list[dict[str, Any]] = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def _true(obj: dict[str, Any], kind: str) -> bool:
    found = _condition(obj, kind)
    return found is not None and found.get("status") == "True"


def _workload(plane: ControlPlane, ns: str, job_uid: str) -> dict[str, Any]:
    items = gate_json(plane, f"{KUEUE_API}/namespaces/{ns}/workloads").get("items") or []
    return next(
        (
            w
            for w in items
            if any(o.get("uid") == job_uid for o in w["metadata"].get("ownerReferences") or [])
        ),
        {},
    )


def _pool_nodes(plane: ControlPlane, pool: str) -> dict[str, dict[str, Any]]:
    items = gate_json(plane, f"/api/v1/nodes?labelSelector={AGENTPOOL_LABEL}={pool}").get("items")
    return {str(n["metadata"]["name"]): n for n in items or []}


def _created(obj: dict[str, Any]) -> float:
    stamp = str(obj["metadata"]["creationTimestamp"]).replace("Z", "+00:00")
    return datetime.fromisoformat(stamp).timestamp()


def _create(plane: ControlPlane, obj: dict[str, Any]) -> str:
    applied = apply(plane, [obj])
    assert not applied.rejected, applied.stderr
    meta = obj["metadata"]
    return str(
        gate_json(plane, f"/apis/batch/v1/namespaces/{meta['namespace']}/jobs/{meta['name']}")[
            "metadata"
        ]["uid"]
    )


# ---- one gated Job --------------------------------------------------------------------------


@dataclass
class Observed:
    """First times (monotonic) each state was seen, and what was seen then."""

    submitted: float
    reserved_not_admitted: float | None = None
    provisioned: float | None = None
    admitted: float | None = None
    nodes_at_admission: set[str] = field(default_factory=set[str])
    completed: float | None = None
    workload: dict[str, Any] = field(default_factory=dict[str, Any])
    request: dict[str, Any] = field(default_factory=dict[str, Any])


def observe(
    plane: ControlPlane, gated: Gated, uid: str, observed: Observed, before: set[str]
) -> None:
    """One poll. Workload first, then its request: an admitted Workload's request must already be
    Provisioned (the gate), and all the new nodes must exist."""
    ns = gated.namespace
    wl = _workload(plane, ns, uid)
    if not wl:
        return
    observed.workload = wl
    admitted = _true(wl, "Admitted")
    requests = provisioning_requests(plane, ns, wl["metadata"]["name"])
    if requests:
        observed.request = requests[-1]
    provisioned = any(_true(pr, "Provisioned") for pr in requests)
    now = time.monotonic()
    if provisioned and observed.provisioned is None:
        observed.provisioned = now
    if _true(wl, "QuotaReserved") and not admitted and observed.reserved_not_admitted is None:
        observed.reserved_not_admitted = now
    if admitted and observed.admitted is None:
        observed.admitted = now
        observed.nodes_at_admission = set(_pool_nodes(plane, gated.pool.name)) - before
        assert provisioned, (
            f"Workload admitted before its ProvisioningRequest is Provisioned: {requests}"
        )


def _job_state(plane: ControlPlane, ns: str, name: str) -> dict[str, Any]:
    return gate_json(plane, f"/apis/batch/v1/namespaces/{ns}/jobs/{name}")


def _pods_nodes(plane: ControlPlane, ns: str, name: str) -> dict[str, str]:
    items = gate_json(
        plane, f"/api/v1/namespaces/{ns}/pods?labelSelector=batch.kubernetes.io/job-name={name}"
    ).get("items")
    return {str(p["metadata"]["name"]): str(p["spec"].get("nodeName") or "") for p in items or []}


def _state(plane: ControlPlane) -> str:
    result = plane.kubectl(
        "get", "jobs,workloads,provisioningrequests,nodes", "-A", "-o", "wide", check=False
    )
    return result.stdout + result.stderr


# ---- the test -------------------------------------------------------------------------------


def test_autoscaler_answers_the_gate(
    tools: Tools, tmp_path: Path, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    found, missing = find_simulation_tools()
    if found is None:
        pytest.skip("real tier (twin): " + "; ".join(missing))
    sim: SimulationTools = timed_simulation(found, tmp_path / "stages")
    autoscaler, why = find_autoscaler()
    if autoscaler is None:
        pytest.skip("real tier (autoscaler): " + why)
    binary = kueue_binary()
    if binary is None:
        pytest.skip("real tier: kueue not built")
    stack = load_stack(STACK)
    gated = gated_queue(stack)
    assert gated is not None, f"{STACK}: no ClusterQueue with a provisioning gate on a user pool"
    pods = 3
    assert pods <= gated.pool.max_count < 200
    crds = kueue_crd_paths(stack)
    t0 = time.monotonic()
    with running_twin(
        STACK,
        tools,
        sim,
        kueue_binary=binary,
        kueue_crds=crds,
        workdir=tmp_path,
        nodes=nodes_at_min,
    ) as twin:
        plane = twin.planes[gated.cluster]
        started = start_autoscalers(twin.planes, twin.fleet, autoscaler, fast_scale_down=True)
        t_started = time.monotonic() - t0
        until(
            lambda: _true(
                gate_json(plane, f"{KUEUE_API}/clusterqueues/{gated.cluster_queue}"), "Active"
            ),
            ACTIVE_TIMEOUT,
            f"ClusterQueue {gated.cluster_queue} Active",
            seen=lambda: _state(plane),
            poll=POLL,
        )
        before = set(_pool_nodes(plane, gated.pool.name))
        assert len(before) == gated.pool.min_count, f"pool starts at minCount: {sorted(before)}"

        # -- a Job that fits: gate, atomic scale-up, run, complete
        uid = _create(plane, job(gated, "gated", pods))
        seen = Observed(submitted=time.monotonic())

        def completed() -> bool:
            observe(plane, gated, uid, seen, before)
            return _true(_job_state(plane, gated.namespace, "gated"), "Complete")

        until(completed, JOB_TIMEOUT, "gated Job Complete", seen=lambda: _state(plane), poll=POLL)
        seen.completed = time.monotonic()
        assert seen.reserved_not_admitted is not None, "the gate never held the Workload"
        assert seen.provisioned is not None
        assert seen.admitted is not None
        assert seen.reserved_not_admitted <= seen.provisioned <= seen.admitted
        new = {n: v for n, v in _pool_nodes(plane, gated.pool.name).items() if n not in before}
        assert len(seen.nodes_at_admission) == pods, (
            f"nodes of the pool when admitted: {sorted(seen.nodes_at_admission)}, want {pods}"
        )
        assert set(new) == seen.nodes_at_admission, "nodes came after the admission"
        assert all(
            n["metadata"]["annotations"].get(GROUP_ANNOTATION) == gated.pool.name
            for n in new.values()
        )
        created = [_created(n) for n in new.values()]
        assert max(created) - min(created) <= 1.0, f"not one scale-up: {sorted(created)}"
        ran_on = _pods_nodes(plane, gated.namespace, "gated")
        assert len(ran_on) == pods, ran_on
        assert set(ran_on.values()) == set(new), ran_on

        # -- the new nodes go once unneeded
        until(
            lambda: not set(_pool_nodes(plane, gated.pool.name)) - before,
            SCALE_DOWN_TIMEOUT,
            f"pool {gated.pool.name} back at minCount",
            seen=lambda: _state(plane),
            poll=POLL,
        )
        scaled_down = time.monotonic() - seen.completed

        # -- a Job larger than the pool: never admitted, no node made for it, and said why
        big = gated.pool.max_count + 1
        big_uid = _create(plane, job(gated, "too-large", big))
        refused = Observed(submitted=time.monotonic())
        deadline = time.monotonic() + REFUSED_WINDOW
        most = 0
        while time.monotonic() < deadline:
            observe(plane, gated, big_uid, refused, before)
            assert refused.admitted is None, f"a Job of {big} pods was admitted: {_state(plane)}"
            most = max(most, len(set(_pool_nodes(plane, gated.pool.name)) - before))
            time.sleep(POLL)
        assert most == 0, f"{most} nodes created for the Job the pool cannot hold"
        checks = (refused.workload.get("status") or {}).get("admissionChecks") or []
        said = [c.get("message") for c in checks if c.get("message")]
        pr_said = [
            f"{c['type']}={c['status']} {c.get('reason')}: {c.get('message')}"
            for c in (refused.request.get("status") or {}).get("conditions") or []
            if c["type"] in {"Provisioned", "Failed"} and c.get("message")
        ]
        assert refused.request, "no ProvisioningRequest for the too-large Job"
        assert pr_said, f"the ProvisioningRequest says nothing: {refused.request.get('status')}"
        assert not any(s.startswith("Provisioned=True") for s in pr_said), pr_said
        assert said, f"the Workload's check says nothing: {checks}"

    elapsed = time.monotonic() - t0
    line = (
        f"provisioning gate ({STACK} {gated.cluster}/{gated.cluster_queue}, pool {gated.pool.name} "
        f"{gated.pool.min_count}..{gated.pool.max_count}, {len(started)} autoscalers): "
        f"{pods}-pod Job: Provisioned {seen.provisioned - seen.submitted:.1f}s after submit, "
        f"admitted {seen.admitted - seen.provisioned:.1f}s after Provisioned, complete "
        f"{seen.completed - seen.submitted:.1f}s after submit; scale-down to "
        f"{gated.pool.min_count} {scaled_down:.1f}s after completion; "
        f"{big}-pod Job refused: "
        f"{pr_said[0][:160]!r}; twin+autoscalers up in {t_started:.0f}s, total {elapsed:.0f}s"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)
