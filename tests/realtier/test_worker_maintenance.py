"""A worker's batch pool reimaged with batch work on it, on dev's twin.

The node image upgrade is testkit/realtier/reimage.py's stand-in for AKS's (surge, cordon, drain
through the real Eviction API, reimage or quarantine; docs/testing.md says what differs), over
worker-2's `batch` pool, with the pool's `upgradeSettings` as the program renders them for the
committed dev stack (maxSurge, `undrainableNodeBehavior`; AKS's defaults where it sends none) and
the drain timeout compressed to seconds. The PodDisruptionBudgets are the ones the program
renders into `kueue_objects` (`upgrades.batchPods: protect`), applied to the twin with the rest
of its queue objects.

- Protected: jobs run on worker-2's batch nodes (pods Running longer than the drain timeout),
  a plain pod (not admitted by Kueue) runs beside them, more jobs are queued on the manager as
  the reimage starts. Asserted: the plain pod is evicted (the drain is real), no Kueue pod is;
  the blocked nodes are Quarantined and cordoned and take no new pod; every job completes
  exactly once with no failure counted and no pod with a DisruptionTarget condition; the queued
  jobs run before the quarantined nodes are free (their wait is reported); the next run (the
  next window), once the jobs are done, reimages the quarantined nodes and removes every surge
  node.
- Contrast: the same reimage with the budgets deleted (what `batchPods: evict` renders) evicts
  the running Kueue pods and their Job counts failures: the protected test's assertions can fail.

One twin per module; each test leaves the budgets as rendered and its jobs finished or deleted.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest

from builders.aks import user_pool_args
from builders.fleet import kueue_objects
from testkit.realtier.autoscaler import TOOL as AUTOSCALER_TOOL
from testkit.realtier.faults import condition, get_json
from testkit.realtier.harness import ControlPlane, Report, Tools, apply
from testkit.realtier.jobs import IMAGE
from testkit.realtier.kueue import TWIN_WORKER_LOST_TIMEOUT
from testkit.realtier.reimage import (
    NODE_IMAGE_LABEL,
    QUARANTINED,
    UPGRADE_STATUS_LABEL,
    PoolUpgrade,
    ReimageRecord,
    pods_on,
    pool_nodes,
    reimage_pool,
    request,
)
from testkit.realtier.shared.faults_runtime import (
    MANAGER,
    autoscale,
    completed_once,
    dev_twin,
    job,
    queues_active,
    running_pods,
    state,
    submit,
    where,
    workloads,
)
from testkit.realtier.shared.twin_jobs import PODS, job_for
from testkit.realtier.twin import Submission, fleet_nodes, load_stack, submissions
from testkit.realtier.twin_run import PodWatch, SimulationTools, Twin
from testkit.realtier.wait import until
from upstream.kueue import POD_SET_LABEL
from upstream.podsecurity import (
    RESTRICTED_CONTAINER_SECURITY_CONTEXT,
    RESTRICTED_POD_SECURITY_CONTEXT,
)

pytestmark = [pytest.mark.real]

STACK: Final = "dev"
REIMAGED: Final = "worker-2"
OTHER: Final = "worker-1"
POOL: Final = "batch"
RUNNING: Final = 2  # jobs running on the pool when its reimage starts
QUEUED: Final = 3  # jobs submitted to the manager as it starts
RUN_FOR: Final = "45s"  # the running jobs' pods stay Running (kwok) past the first pass
QUEUED_RUN_FOR: Final = "5s"
# A running job's pod takes most of half a batch node (Standard_D4s_v5, 3860m allocatable): the
# nodes they run on keep less room than a queued job's pod (500m) needs, beside the 50m pod, so
# the queued jobs can only go to surge or new nodes (a pod bound to an old node just before its
# drain is Pending, which no budget holds: docs/testing.md, "The node reimage stand-in").
RUNNING_CPU: Final = "1800m"
# AKS's `drainTimeoutInMinutes` (default 30) compressed to seconds: long enough for several
# eviction rounds, short against the jobs' RUN_FOR.
DRAIN_TIMEOUT: Final = 6.0
# AKS's defaults for what an AgentPool's `upgradeSettings` leaves out (AKS API reference,
# AgentPoolUpgradeSettings: maxSurge "10%" on new pools, undrainableNodeBehavior "Schedule").
AKS_MAX_SURGE: Final = "10%"
AKS_UNDRAINABLE: Final = "Schedule"
PDB_KIND: Final = "PodDisruptionBudget"
PLAIN_POD: Final = "not-admitted"


# ---- the twin ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def twin(
    tools: Tools,
    simulation: SimulationTools,
    autoscaler: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Twin]:
    """dev's twin for the module: user pools at minCount, worker-2's autoscaler running (its
    gate answers first), worker-1's started by the test that wants it."""
    workdir = tmp_path_factory.mktemp("maintenance")
    with dev_twin(
        tools, simulation, workdir, worker_lost_timeout=TWIN_WORKER_LOST_TIMEOUT
    ) as started:
        autoscale(started, autoscaler, REIMAGED)
        queues_active(started)
        yield started


def other_autoscaler(twin: Twin, binary: Path, running: bool) -> None:
    """worker-1's autoscaler on (started the first time) or frozen (SIGSTOP): while it is
    frozen, worker-1's gate answers no job, so new jobs run on worker-2."""
    processes = [
        p
        for p in twin.planes[OTHER]._processes
        if p.name == AUTOSCALER_TOOL and p.popen.poll() is None
    ]
    if not processes and running:
        autoscale(twin, binary, OTHER)
    for process in processes:
        os.killpg(process.popen.pid, signal.SIGCONT if running else signal.SIGSTOP)


# ---- what the program renders and the stack says -----------------------------------------------


def rendered_budgets(twin: Twin, cluster: str) -> list[dict[str, Any]]:
    return [m.obj for m in kueue_objects(twin.fleet)[cluster] if m.obj["kind"] == PDB_KIND]


def stack_pool_upgrade(cluster: str, pool: str) -> tuple[PoolUpgrade, dict[str, Any]]:
    """The pool's upgrade settings as the program sends them to AKS for the committed stack
    (the twin's clusters are `existing`: their AgentPools are the stack's), AKS's defaults for
    what it leaves out, the drain timeout compressed."""
    stack = load_stack(STACK)
    config = stack.cluster(cluster)
    assert config is not None
    [spec] = [p for p in config.pools if p.name == pool]
    args = user_pool_args(spec, stack.pool_version_of(config, spec), stack.upgrades_of(config))
    sent: dict[str, Any] = dict(args.get("upgrade_settings") or {})
    settings = PoolUpgrade(
        max_surge=str(sent.get("max_surge") or AKS_MAX_SURGE),
        drain_timeout=DRAIN_TIMEOUT,
        undrainable=sent.get("undrainable_node_behavior") or AKS_UNDRAINABLE,
    )
    return settings, sent


def template(twin: Twin, pool: str) -> dict[str, Any]:
    """The node the twin registers for the pool (at maxCount): the shape of a surge node."""
    [group] = [g for g in fleet_nodes(twin.fleet)[REIMAGED] if g.pool == pool]
    return dict(group.nodes[0])


# ---- helpers -----------------------------------------------------------------------------------


def node(plane: ControlPlane, name: str) -> dict[str, Any]:
    found = get_json(plane, f"/api/v1/nodes/{name}")
    assert found is not None, f"[{plane.name}] node {name} not found"
    return found


def nodes_of_jobs(plane: ControlPlane, ns: str, jobs: list[str]) -> set[str]:
    return {str(p["spec"]["nodeName"]) for j in jobs for p in running_pods(plane, ns, j)}


def plain_pod(ns: str, on: str) -> dict[str, Any]:
    """A pod Kueue did not admit (no queue, no podset label), bound to node `on`; kwok runs it
    until it is deleted (its pod-complete Stage takes only Jobs' pods)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": PLAIN_POD, "namespace": ns},
        "spec": {
            "nodeName": on,
            "securityContext": dict(RESTRICTED_POD_SECURITY_CONTEXT),
            "containers": [
                {
                    "name": "main",
                    "image": IMAGE,
                    "args": ["pause"],
                    "securityContext": dict(RESTRICTED_CONTAINER_SECURITY_CONTEXT),
                    "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}},
                }
            ],
        },
    }


def job_failed(plane: ControlPlane, ns: str, name: str) -> int:
    return int(((job(plane, ns, name) or {}).get("status") or {}).get("failed") or 0)


def budget_status(plane: ControlPlane, ns: str, name: str) -> dict[str, Any]:
    pdb = get_json(plane, f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{name}")
    assert pdb is not None, f"[{plane.name}] no PodDisruptionBudget {ns}/{name}"
    return {"generation": pdb["metadata"].get("generation"), **(pdb.get("status") or {})}


@dataclass
class Clock:
    t0: float = field(default_factory=time.monotonic)

    def __call__(self, t: float | None = None) -> float:
        return round((time.monotonic() if t is None else t) - self.t0, 1)


def start_running_jobs(twin: Twin, autoscaler: Path, names: list[str], ns: str) -> None:
    """`names` submitted to the manager and Running on worker-2 (worker-1's gate frozen)."""
    other_autoscaler(twin, autoscaler, running=False)
    sub = dispatched(twin)
    jobs = [job_for(sub, n, RUN_FOR) for n in names]
    for obj in jobs:  # one job per node: the pool has as many old nodes as running jobs
        [container] = obj["spec"]["template"]["spec"]["containers"]
        for kind in ("requests", "limits"):
            container["resources"][kind]["cpu"] = RUNNING_CPU
    applied = apply(twin.planes[MANAGER], jobs)
    assert not applied.rejected, applied.stderr
    plane = twin.planes[REIMAGED]
    until(
        lambda: all(len(running_pods(plane, ns, n)) == PODS for n in names),
        120.0,
        f"every job Running on {REIMAGED}",
        seen=lambda: state(twin, ns, [REIMAGED]),
    )


def owner(wl: dict[str, Any]) -> str:
    refs = wl["metadata"].get("ownerReferences") or []
    return next((str(o["name"]) for o in refs if o.get("kind") == "Job"), "")


def dispatched(twin: Twin) -> Submission:
    [sub] = [s for s in submissions(twin.fleet) if s.dispatched]
    return sub


# ---- the tests ---------------------------------------------------------------------------------


def test_a_reimage_with_jobs_running_quarantines_their_nodes_and_every_job_finishes_once(
    twin: Twin, autoscaler: Path, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    manager, plane = twin.planes[MANAGER], twin.planes[REIMAGED]
    sub = dispatched(twin)
    ns = sub.namespace
    settings, sent = stack_pool_upgrade(REIMAGED, POOL)
    assert settings.undrainable == "Cordon", (
        f"{REIMAGED}/{POOL}: the program sends upgradeSettings {sent}: AKS would play "
        f"{settings.undrainable} (blocked nodes uncordoned, not upgraded)"
    )
    budgets = rendered_budgets(twin, REIMAGED)
    assert [(b["metadata"]["namespace"]) for b in budgets] == [ns], (
        f"the program renders no PodDisruptionBudget for {REIMAGED}'s team namespace: {budgets}"
    )
    [budget] = budgets
    running = [f"reimage-run-{i}" for i in range(RUNNING)]
    queued = [f"reimage-queued-{i}" for i in range(QUEUED)]
    clock = Clock()
    watches = {w: PodWatch(twin.planes[w], ns) for w in (REIMAGED, OTHER)}
    try:
        start_running_jobs(twin, autoscaler, running, ns)
        t_running = clock()
        blocked = nodes_of_jobs(plane, ns, running)
        # The pool is the running jobs' nodes. A node the autoscaler made beyond them (its race,
        # testkit/realtier/autoscaler.py) is removed, empty, as its scale-down would remove it
        # 5 minutes later: a queued job's pod bound to an old node moments before that node's
        # drain is Pending, which no budget holds (docs/testing.md, "The node reimage stand-in").
        extra = [
            str(n["metadata"]["name"])
            for n in pool_nodes(plane, POOL)
            if n["metadata"]["name"] not in blocked and not pods_on(plane, n["metadata"]["name"])
        ]
        for name_ in extra:
            status, body = request(plane, "DELETE", f"/api/v1/nodes/{name_}")
            assert status in {200, 404}, body
        pool = {str(n["metadata"]["name"]) for n in pool_nodes(plane, POOL)}
        assert pool == blocked, f"pool {sorted(pool)}, running jobs on {sorted(blocked)}"
        assert blocked <= pool, f"jobs off the {POOL} pool: {blocked} vs {pool}"
        # Beside them, on one of their nodes, a pod Kueue did not admit.
        beside = sorted(blocked)[0]
        applied = apply(plane, [plain_pod(ns, beside)])
        assert not applied.rejected, applied.stderr
        until(
            lambda: (
                (get_json(plane, f"/api/v1/namespaces/{ns}/pods/{PLAIN_POD}") or {})
                .get("status", {})
                .get("phase")
                == "Running"
            ),
            30.0,
            f"pod {PLAIN_POD} Running on {beside}",
        )
        kueue_pods = {
            f"{ns}/{p['metadata']['name']}": p for n in running for p in running_pods(plane, ns, n)
        }
        assert all(POD_SET_LABEL in p["metadata"]["labels"] for p in kueue_pods.values()), (
            "Kueue labelled no podset on its pods"
        )
        # The budget, computed by the disruption controller: no disruption allowed.
        name = budget["metadata"]["name"]
        until(
            lambda: (
                (s := budget_status(plane, ns, name)).get("observedGeneration") == s["generation"]
                and s.get("currentHealthy") == len(kueue_pods)
            ),
            30.0,
            f"[{REIMAGED}] PodDisruptionBudget {ns}/{name} counts the {len(kueue_pods)} pods",
            seen=lambda: budget_status(plane, ns, name),
        )
        assert budget_status(plane, ns, name).get("disruptionsAllowed") == 0
        before = {n: {f"{ns}/{p['metadata']['name']}" for p in pods_on(plane, n)} for n in blocked}

        # More jobs queued on the manager as the window opens; worker-1's gate answers too.
        other_autoscaler(twin, autoscaler, running=True)
        t_queued = time.monotonic()
        submit(twin, sub, queued, QUEUED_RUN_FOR)
        first = reimage_pool(plane, POOL, template(twin, POOL), "reimage-1", settings)
        t_first = clock()

        # The drain was real: the pod Kueue did not admit was evicted, no Kueue pod was.
        evicted = {e.pod for e in first.evicted}
        assert f"{ns}/{PLAIN_POD}" in evicted, first.summary()
        assert not [e.pod for e in first.evicted if POD_SET_LABEL in e.labels], first.summary()
        assert get_json(plane, f"/api/v1/namespaces/{ns}/pods/{PLAIN_POD}") is None
        messages = {m for d in first.drains for m in d.blocked.values()}
        assert messages, first.summary()
        assert all(m.startswith("429") for m in messages), messages
        assert all(f"disruption budget {name} " in m for m in messages), messages
        still = [n for n in running if len(running_pods(plane, ns, n)) == PODS]
        assert still == running, f"finished before the first pass ended; raise RUN_FOR: {first}"
        # The blocked nodes: quarantined, cordoned, a surge node kept for each; Failed.
        assert sorted(first.quarantined) == sorted(blocked), first.summary()
        for name_ in blocked:
            spec, labels = node(plane, name_)["spec"], node(plane, name_)["metadata"]["labels"]
            assert spec.get("unschedulable") is True, f"{name_} not cordoned"
            assert labels.get(UPGRADE_STATUS_LABEL) == QUARANTINED, labels
            assert labels.get(NODE_IMAGE_LABEL) != "reimage-1", labels
        assert sorted(first.retained_surge.values()) == sorted(blocked), first.summary()
        assert not first.succeeded
        assert sorted(first.reimaged) == sorted(pool - blocked), first.summary()
        assert sorted(first.old_nodes) == sorted(pool), first.summary()

        until(
            lambda: all(completed_once(twin, ns, n) for n in running + queued),
            180.0,
            "every job completed once",
            seen=lambda: state(twin, ns, [REIMAGED, OTHER]),
        )
        t_done = clock()
        seen = {p: s for w in watches.values() for p, s in w.pods().items()}
        assert set(kueue_pods) <= set(seen), f"the pod watch missed {set(kueue_pods) - set(seen)}"
        for n in running + queued:
            assert job_failed(manager, ns, n) == 0, f"{n} counts a failure: {job(manager, ns, n)}"
        finished = {w["metadata"]["name"]: w for w in workloads(manager, ns)}
        assert all(condition(w, "Evicted") is None for w in finished.values()), finished
        disrupted = sorted({p for p, ss in seen.items() for s in ss if s.disruption and s.podset})
        assert disrupted == [], f"Kueue pods with a DisruptionTarget condition: {disrupted}"
        # No new pod on a quarantined node; the queued jobs ran before those nodes were free.
        landed = {
            p for p, ss in seen.items() for s in ss if s.node in blocked and p not in before[s.node]
        }
        assert landed == set(), f"pods placed on quarantined nodes: {landed}"
        # The first moment any capacity on the quarantined nodes came free: the first of their
        # Kueue pods to finish.
        freed = min(
            s.at for p in kueue_pods for s in seen.get(p, []) if s.phase in {"Succeeded", "Failed"}
        )
        waits: dict[str, float] = {}
        ran_on: dict[str, str] = {}
        for n in queued:
            started = [w.running_since(n, PODS) for w in watches.values()]
            at = min(t for t in started if t is not None)
            waits[n] = round(at - t_queued, 1)
            ran_on[n] = next((str(where(w)) for w in finished.values() if owner(w) == n), "?")
            assert at < freed, f"{n} Running {at - freed:.1f}s after the quarantined nodes freed"
        queued_nodes = sorted(
            {s.node for ss in seen.values() for s in ss if s.job in queued and s.node}
        )

        # The next window: the quarantined nodes, empty now, are reimaged; no surge node stays.
        # (Nodes the autoscaler made after the first pass are on its template, not on the new
        # image: the stand-in takes them too. On AKS they would have the new image already.)
        second = reimage_pool(plane, POOL, template(twin, POOL), "reimage-1", settings)
        assert blocked <= set(second.reimaged), second.summary()
        assert second.quarantined == [], second.summary()
        assert second.succeeded, second.summary()
        assert second.kept_surge == [], second.summary()
        for name_ in pool_nodes(plane, POOL):
            labels = name_["metadata"]["labels"]
            assert labels.get(NODE_IMAGE_LABEL) == "reimage-1", labels
            assert UPGRADE_STATUS_LABEL not in labels, labels
            assert not name_["spec"].get("unschedulable"), name_["metadata"]["name"]
        t_end = clock()
    finally:
        for watch in watches.values():
            watch.stop()
    line = (
        f"reimage {STACK} {REIMAGED}/{POOL} (maxSurge {settings.max_surge}, drain timeout "
        f"{settings.drain_timeout:.0f}s for AKS's {sent.get('drain_timeout_in_minutes', 30)} min, "
        f"{settings.undrainable}): {RUNNING} jobs Running at {t_running}s on {sorted(blocked)} "
        f"({len(extra)} idle node of the autoscaler's removed); "
        f"first pass {first.seconds:.1f}s: {first.summary()}; {QUEUED} queued jobs Running "
        f"{waits} s after submission (on {ran_on}, nodes {queued_nodes}), before the quarantined "
        f"nodes were free; "
        f"all {RUNNING + QUEUED} complete once at {t_done}s, 0 failures, 0 disrupted Kueue pods; "
        f"second pass {second.seconds:.1f}s: {second.summary()}; test {t_end}s (first pass "
        f"ended {t_first}s; twin start {twin.timings.get('wired', 0.0):.0f}s)"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)


def test_without_the_budgets_the_same_reimage_evicts_the_jobs_and_they_count_failures(
    twin: Twin, autoscaler: Path, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    """What `upgrades.batchPods: evict` renders (no budget): the contrast that shows the
    protected test's assertions can fail."""
    manager, plane = twin.planes[MANAGER], twin.planes[REIMAGED]
    ns = dispatched(twin).namespace
    settings, _ = stack_pool_upgrade(REIMAGED, POOL)
    budgets = rendered_budgets(twin, REIMAGED)
    names = ["contrast-0"]
    watch = PodWatch(plane, ns)
    record: ReimageRecord | None = None
    kueue_evicted: list[str] = []
    failed = 0
    try:
        for b in budgets:
            meta = b["metadata"]
            status, body = request(
                plane,
                "DELETE",
                f"/apis/policy/v1/namespaces/{meta['namespace']}/poddisruptionbudgets/{meta['name']}",
            )
            assert status in {200, 404}, body
        start_running_jobs(twin, autoscaler, names, ns)
        record = reimage_pool(plane, POOL, template(twin, POOL), "contrast", settings)
        kueue_evicted = sorted(e.pod for e in record.evicted if POD_SET_LABEL in e.labels)
        assert len(kueue_evicted) >= PODS, record.summary()
        assert record.quarantined == [], record.summary()
        assert record.succeeded, record.summary()
        until(
            lambda: job_failed(manager, ns, names[0]) >= PODS,
            60.0,
            f"the manager's Job {names[0]} counting its evicted pods as failures",
            seen=lambda: job(manager, ns, names[0]),
        )
        until(
            lambda: any(s.disruption for p in kueue_evicted for s in watch.pods().get(p, [])),
            30.0,
            "a DisruptionTarget condition on an evicted Kueue pod",
            seen=lambda: {p: watch.pods().get(p) for p in kueue_evicted},
        )
        failed = job_failed(manager, ns, names[0])
    finally:
        watch.stop()
        manager.kubectl("delete", "job", *names, f"--namespace={ns}", "--wait=false", check=False)
        applied = apply(plane, budgets)
        assert not applied.rejected, applied.stderr
    line = (
        f"reimage {STACK} {REIMAGED}/{POOL} without budgets (batchPods: evict): "
        f"{len(kueue_evicted)} Kueue pods evicted, Job {names[0]} failed={failed}; "
        f"{record.summary() if record else ''}"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)
