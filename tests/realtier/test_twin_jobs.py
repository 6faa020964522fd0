"""Every committed stack's loopback twin runs a Job from every LocalQueue a user can submit to.

Per stack (test ids name it): the twin starts (testkit/realtier/twin_run.py) with every user pool at
its minCount and the real cluster-autoscaler on each plane with user pools
(testkit/realtier/autoscaler.py: kwok provider, `--enable-provisioning-requests`), so every node a
Job needs beyond minCount is made by the autoscaler, and provisioning gates are answered by it, not
by a test double. The twin's Kueue and MultiKueue objects are made by `pulumi up` of the
mapped stack (testkit/realtier/twin_engine.py): the program itself, through the real engine. Every
ClusterQueue of every cluster goes Active, and for each LocalQueue a user
can submit to (on the manager when MultiKueue dispatches it, else on the cluster that holds it) a
Job shaped for that queue is created. Asserted: the Workload is admitted where it was submitted; a
dispatched Job is copied to exactly one worker; the pods are bound by the real scheduler to nodes
of the pool of the flavor Kueue assigned there (never a GPU node for a CPU-only Job, never a
virtual node unless the flavor selects one); the Job completes on the worker (kwok completes Job
pods) and, for a dispatched Job, the manager's Job and Workload show it. Then `twin.unserved` must
find no ClusterQueue that no user can reach.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest

from config.resolve import enabled_workers, with_mirrored_queues
from testkit.realtier.autoscaler import (
    GROUP_ANNOTATION,
    find_autoscaler,
    nodes_at_min,
    start_autoscalers,
)
from testkit.realtier.crds import kueue_crd_paths
from testkit.realtier.engine import find_engine
from testkit.realtier.harness import ControlPlane, Report, Tools, apply
from testkit.realtier.jobs import workload_owned_by
from testkit.realtier.kueue import kueue_binary
from testkit.realtier.shared.twin_jobs import PODS, job_for
from testkit.realtier.twin import (
    VIRTUAL_NODE_LABELS,
    Submission,
    is_gpu_node,
    is_virtual_node,
    load_stack,
    stacks,
    submissions,
    unserved,
)
from testkit.realtier.twin_run import (
    JobWatch,
    SimulationTools,
    Twin,
    running_twin,
)
from testkit.realtier.wait import until
from upstream.aks import AGENTPOOL_LABEL

pytestmark = [pytest.mark.real, pytest.mark.slow]

KUEUE_API: Final = "/apis/kueue.x-k8s.io/v1beta2"
PREBUILT_KEY: Final = "kueue.x-k8s.io/prebuilt-workload-name"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
ACTIVE_TIMEOUT: Final = 90.0
JOB_TIMEOUT: Final = 180.0
POLL: Final = 0.25


class StackDefectError(AssertionError):
    """What the stack itself gets wrong (on AKS too), not the twin: a ClusterQueue no user can
    reach, or one Kueue deactivates because the stack enables a framework whose CRD nobody
    installs."""


# Stacks with a known defect that the twin shows at run time: none. (The defects it has shown are
# refused by checks/semantics.py before a twin runs.)
KNOWN_DEFECTS: Final[dict[str, str]] = {}


def _params() -> list[Any]:
    return [
        pytest.param(
            stack,
            id=stack,
            marks=[
                pytest.mark.xfail(reason=KNOWN_DEFECTS[stack], raises=StackDefectError, strict=True)
            ]
            if stack in KNOWN_DEFECTS
            else [],
        )
        for stack in stacks()
    ]


def _json(plane: ControlPlane, path: str) -> dict[str, Any] | None:
    status, body = plane.get(path)
    return json.loads(body) if status == 200 else None


def _true(obj: dict[str, Any] | None, kind: str) -> bool:
    conditions: list[dict[str, Any]] = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _pods(plane: ControlPlane, ns: str, job: str) -> list[dict[str, Any]]:
    listing = _json(plane, f"/api/v1/namespaces/{ns}/pods?labelSelector={JOB_NAME_LABEL}%3D{job}")
    return (listing or {}).get("items") or []


@dataclass
class Run:
    """What one submission did, as observed."""

    sub: Submission
    job: str
    worker: str | None = None
    flavors: set[str] = field(default_factory=set[str])
    pods: dict[str, str] = field(default_factory=dict[str, str])  # pod -> node
    # node -> the Node as read when a pod was first seen on it (the autoscaler may remove it
    # once the Job is done)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    worker_complete: bool = False
    manager_complete: bool = False
    manager_finished: bool = False
    seconds: float = 0.0

    @property
    def done(self) -> bool:
        local = self.worker_complete and len(self.pods) >= PODS and bool(self.flavors)
        if not self.sub.dispatched:
            return local
        return local and self.manager_complete and self.manager_finished


def _prebuilt(job: dict[str, Any]) -> str | None:
    """The manager's Workload a MultiKueue copy runs as (None: not a copy)."""
    meta = job.get("metadata") or {}
    found = (meta.get("annotations") or {}).get(PREBUILT_KEY) or (meta.get("labels") or {}).get(
        PREBUILT_KEY
    )
    return str(found) if found else None


def _record_flavors(plane: ControlPlane, run: Run, job: dict[str, Any]) -> None:
    """The flavors Kueue assigned `job` where it runs, into `run`."""
    ns, prebuilt = run.sub.namespace, _prebuilt(job)
    workload = (
        _json(plane, f"{KUEUE_API}/namespaces/{ns}/workloads/{prebuilt}")
        if prebuilt
        else workload_owned_by(plane, ns, str(job["metadata"]["uid"]))
    )
    admission = ((workload or {}).get("status") or {}).get("admission") or {}
    for assignment in admission.get("podSetAssignments") or []:
        run.flavors |= set((assignment.get("flavors") or {}).values())


def _record_pods(twin: Twin, run: Run, cluster: str, pods: list[dict[str, Any]]) -> None:
    """Each bound pod's node, and that node as seen, into `run`."""
    plane = twin.planes[cluster]
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            run.pods[str(pod["metadata"]["name"])] = str(node)
            if node not in run.nodes:
                seen = twin.node(cluster, node) or _json(plane, f"/api/v1/nodes/{node}")
                if seen is not None:
                    run.nodes[node] = seen


def _observe(twin: Twin, watches: dict[str, JobWatch], run: Run, uid: str) -> None:
    sub, ns, name = run.sub, run.sub.namespace, run.job
    home = twin.planes[sub.cluster]
    if sub.dispatched and run.worker is None:
        copies: dict[str, dict[str, Any]] = {}
        for worker in enabled_workers(twin.fleet):
            job = _json(twin.planes[worker], f"/apis/batch/v1/namespaces/{ns}/jobs/{name}")
            if job is not None and _prebuilt(job):
                copies[worker] = job
        # AllAtOnce: copies go to every worker until one reserves quota; the one with pods runs it
        listed = {w: _pods(twin.planes[w], ns, name) for w in copies}
        running = [w for w, pods in listed.items() if pods]
        assert len(running) <= 1, f"{name}: pods on more than one worker: {running}"
        if running:
            run.worker = running[0]
            # Kept from this look: a copy that completes at once is deleted from its worker
            # moments later, maybe before the next look (seen under a load of 20).
            _record_flavors(twin.planes[run.worker], run, copies[run.worker])
            _record_pods(twin, run, run.worker, listed[run.worker])
    target = run.worker if sub.dispatched else sub.cluster
    if target is not None:
        plane = twin.planes[target]
        job = _json(plane, f"/apis/batch/v1/namespaces/{ns}/jobs/{name}")
        if job is not None:
            run.worker_complete = run.worker_complete or _true(job, "Complete")
            _record_flavors(plane, run, job)
        run.worker_complete = run.worker_complete or watches[target].completed(ns, name)
        _record_pods(twin, run, target, _pods(plane, ns, name))
    if sub.dispatched:
        job = _json(home, f"/apis/batch/v1/namespaces/{ns}/jobs/{name}")
        run.manager_complete = _true(job, "Complete")
        workload = workload_owned_by(home, ns, uid)
        run.manager_finished = _true(workload, "Finished")


def run_job(twin: Twin, watches: dict[str, JobWatch], sub: Submission) -> Run:
    home = twin.planes[sub.cluster]
    name = f"twin-{sub.local_queue}"
    run = Run(sub, name)
    t0 = time.monotonic()
    applied = apply(home, [job_for(sub, name)])
    assert not applied.rejected, f"[{sub.cluster}] {applied.stderr}"
    uid = str(
        (_json(home, f"/apis/batch/v1/namespaces/{sub.namespace}/jobs/{name}") or {})["metadata"][
            "uid"
        ]
    )
    where = f"[{sub.cluster}] {sub.namespace}/{sub.local_queue}"

    def home_state() -> str:
        return json.dumps(
            (workload_owned_by(home, sub.namespace, uid) or {}).get("status", "absent")
        )

    until(
        lambda: _true(workload_owned_by(home, sub.namespace, uid), "Admitted"),
        JOB_TIMEOUT,
        f"{where}: Workload admitted",
        seen=home_state,
        poll=POLL,
        alive=twin.check_alive,
    )

    def progress() -> bool:
        _observe(twin, watches, run, uid)
        return run.done

    def observed() -> str:
        workers = enabled_workers(twin.fleet) if sub.dispatched else [sub.cluster]
        return f"{run}; manager: {home_state()}" + "".join(
            f"\n[{w}] "
            + twin.planes[w]
            .kubectl(
                "get", "jobs,workloads,pods,provisioningrequests", "-A", "-o", "wide", check=False
            )
            .stdout
            for w in workers
        )

    until(
        progress,
        JOB_TIMEOUT,
        f"{where}: Job {name} ran to completion",
        seen=observed,
        poll=POLL,
        alive=twin.check_alive,
    )
    if sub.dispatched:
        others = [
            w
            for w in enabled_workers(twin.fleet)
            if w != run.worker and _pods(twin.planes[w], sub.namespace, name)
        ]
        assert not others, f"{where}: pods of {name} also on {others} (ran on {run.worker})"
    run.seconds = time.monotonic() - t0
    return run


def check_placement(twin: Twin, run: Run, made: dict[str, set[str]]) -> None:
    """Each pod on a node of its flavor's pool: one the twin registered, or one the autoscaler
    made for that pool's node group (`made`: cluster -> such nodes seen)."""
    cluster_name = run.worker if run.sub.dispatched else run.sub.cluster
    assert cluster_name is not None
    cluster = twin.fleet.cluster(cluster_name)
    assert cluster is not None
    assert len(run.flavors) == 1, f"{run.job}: one flavor expected, Kueue assigned {run.flavors}"
    [flavor_name] = run.flavors
    flavor = next(f for f in cluster.queues.flavors if f.name == flavor_name)
    for pod, node_name in run.pods.items():
        node = run.nodes.get(node_name)
        assert node is not None, f"{pod} on {node_name}, not a node of {cluster_name}"
        pool = node["metadata"]["labels"].get(AGENTPOOL_LABEL)
        if twin.node(cluster_name, node_name) is None:
            group = (node["metadata"].get("annotations") or {}).get(GROUP_ANNOTATION)
            assert group == pool, f"{node_name}: made outside the autoscaler's group {pool}"
            made.setdefault(cluster_name, set()).add(node_name)
        where = f"{run.job}: pod {pod} on {cluster_name}/{node_name} (pool {pool})"
        if flavor.pool is not None:
            assert pool == flavor.pool, f"{where}; flavor {flavor_name} is pool {flavor.pool}"
        if not run.sub.gpus:
            assert not is_gpu_node(node), f"{where}: a CPU-only Job on a GPU node"
        selects_virtual = flavor.node_labels.get("type") == VIRTUAL_NODE_LABELS["type"]
        assert not is_virtual_node(node) or selects_virtual, f"{where}: a virtual node"


def _checks_state(plane: ControlPlane) -> str:
    """Why a queue is inactive: the Active condition of each AdmissionCheck and
    MultiKueueCluster on the plane."""
    lines: list[str] = []
    for kind in ("admissionchecks", "multikueueclusters"):
        for obj in (_json(plane, f"{KUEUE_API}/{kind}") or {}).get("items") or []:
            conditions = (obj.get("status") or {}).get("conditions") or []
            active = [c for c in conditions if c.get("type") == "Active"]
            name = f"{kind}/{obj['metadata']['name']}"
            lines += [
                f"{name}: {c['status']} {c.get('reason')} {c.get('message')}" for c in active
            ] or [f"{name}: no Active condition"]
    return "\n" + "\n".join(lines)


# A MultiKueueCluster whose worker lacks the CRD of an enabled framework (Kueue 0.19.2's message).
_MISSING_KIND: Final = re.compile(r'no matches for kind "[^"]+" in version "[^"]+"')


def _missing_framework(plane: ControlPlane) -> str | None:
    """The first MultiKueueCluster on the plane that cannot connect for a missing kind."""
    for obj in (_json(plane, f"{KUEUE_API}/multikueueclusters") or {}).get("items") or []:
        for c in (obj.get("status") or {}).get("conditions") or []:
            found = _MISSING_KIND.search(str(c.get("message", "")))
            if c.get("type") == "Active" and c.get("status") == "False" and found:
                return f"MultiKueueCluster {obj['metadata']['name']}: {found.group(0)}"
    return None


def _wait_queues_active(twin: Twin) -> dict[tuple[str, str], str]:
    """Wait until every ClusterQueue is Active; returns (cluster, queue) -> stack defect for
    those Kueue keeps inactive because of the stack (anything else fails here)."""
    defects: dict[tuple[str, str], str] = {}
    for cluster in with_mirrored_queues(twin.fleet).clusters:
        plane = twin.planes[cluster.name]
        for cq in cluster.queues.cluster_queues:
            path = f"{KUEUE_API}/clusterqueues/{cq.name}"

            def settled(plane: ControlPlane = plane, path: str = path, key=(cluster.name, cq.name)):
                if _true(_json(plane, path), "Active"):
                    return True
                missing = _missing_framework(plane)
                if missing is not None:
                    defects[key] = f"[{key[0]}] ClusterQueue {key[1]} inactive: {missing}"
                return missing is not None

            until(
                settled,
                ACTIVE_TIMEOUT,
                f"[{cluster.name}] ClusterQueue {cq.name} Active",
                seen=lambda plane=plane, path=path: (
                    json.dumps(((_json(plane, path) or {}).get("status") or {}).get("conditions"))
                    + _checks_state(plane)
                ),
                poll=POLL,
                alive=twin.check_alive,
            )
    return defects


@pytest.mark.parametrize("stack", _params())
def test_every_local_queue_runs_a_job_on_its_pool(  # noqa: PLR0917 - pytest fixtures
    stack: str,
    tools: Tools,
    simulation: SimulationTools,
    tmp_path: Path,
    report: Report,
    capsys: pytest.CaptureFixture[str],
) -> None:
    binary = kueue_binary()
    if binary is None:
        pytest.skip("real tier: kueue not built")
    autoscaler, why = find_autoscaler()
    if autoscaler is None:
        pytest.skip("real tier (autoscaler): " + why)
    engine, why = find_engine()
    if engine is None:
        pytest.skip("real tier (engine): " + why)
    t0 = time.monotonic()
    crds = kueue_crd_paths(load_stack(stack))
    with running_twin(
        stack,
        tools,
        simulation,
        kueue_binary=binary,
        kueue_crds=crds,
        workdir=tmp_path,
        nodes=nodes_at_min,
        by_engine=True,
    ) as twin:
        autoscalers = start_autoscalers(twin.planes, twin.fleet, autoscaler)
        inactive = _wait_queues_active(twin)
        subs = [s for s in submissions(twin.fleet) if (s.cluster, s.cluster_queue) not in inactive]
        watches = {name: JobWatch(plane) for name, plane in twin.planes.items()}
        try:
            runs = [run_job(twin, watches, sub) for sub in subs]
        finally:
            for watch in watches.values():
                watch.stop()
        made: dict[str, set[str]] = {}
        for run in runs:
            check_placement(twin, run, made)
        elapsed = time.monotonic() - t0
        dispatched = sum(1 for r in runs if r.sub.dispatched and r.worker)
        completed = sum(1 for r in runs if r.done)
        t = twin.timings
        line = (
            f"twin {stack}: {len(twin.planes)} planes, {twin.node_count} nodes at start (user "
            f"pools at minCount), {len(autoscalers)} cluster-autoscalers, "
            f"{sum(map(len, made.values()))} nodes the Jobs ran on made by them, "
            f"{len(runs)} LocalQueue Jobs: {dispatched} dispatched, {completed} completed, "
            f"{len(inactive)} ClusterQueues inactive by a stack defect, in "
            f"{elapsed:.0f}s (planes {t['planes']:.0f}s, nodes Ready {t['nodes']:.0f}s, Kueue "
            f"{t['kueue']:.0f}s, objects by pulumi up {t['wired']:.0f}s: "
            f"{(twin.engine.counts if twin.engine else {})}); "
            + ", ".join(
                f"{r.sub.cluster}/{r.sub.namespace}/{r.sub.local_queue} -> "
                f"{r.worker or r.sub.cluster} {sorted(r.flavors)} on "
                f"{sorted(set(r.pods.values()))} {r.seconds:.1f}s"
                for r in runs
            )
        )
        report(line)
        with capsys.disabled():
            print("\n" + line)
        assert runs or inactive, f"{stack}: no LocalQueue a user can submit to"
    problems = [*unserved(twin.fleet), *inactive.values()]
    if problems:
        raise StackDefectError("; ".join(problems))
