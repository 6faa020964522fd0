"""Adding a worker under load on the dev stack's twin: worker-3 joins while jobs wait on the
manager, through `pulumi up` of the stack as docs/operations.md ("Adding a worker") edits it, run by
the real engine against the running twin.

The twin's objects are made by `pulumi up` of the committed dev stack (tests/realtier/
twin_engine.py). worker-3 is one more loopback plane (testkit/realtier/twin_run.py `add_cluster`:
its nodes, scheduler, kwok, cluster-autoscaler and Kueue running, no Kueue objects yet: on AKS
the same `up` would create the cluster first). Then:

- jobs run on worker-1 and worker-2, then their cluster-autoscalers are frozen (SIGSTOP): their
  pools stop growing and their provisioning gates answer no new job, as on AKS for pools at
  their maximum (full) or a region out of capacity. More jobs are submitted: the manager
  reserves them and copies them to worker-1 and worker-2, where they wait at the gate; the
  page's first listing line, run as written, names them;
- the stack gets the page's two YAML blocks (worker-3's entry, the manager's quota raised to the
  workers' sum) and `up` runs on the same engine stack, while the test watches the manager;
- asserted: `up` succeeds; worker-3's MultiKueueCluster is Active and only then does the
  MultiKueueConfig list it (components/multikueue.py, `_joined`: listed earlier, Kueue v0.19.2
  would copy none of the waiting jobs there); every waiting job runs on worker-3 and completes
  there; every job submitted completes exactly once, on one worker, none evicted; no process
  of any plane, no Kueue, was restarted; the page's other lines, run as written, say worker-3
  is Active, in the config, and name the Workloads admitted there.

Why not worker-1 and worker-2 full by quota: in the twin the real cluster-autoscaler keeps the
capacity it booked for a Provisioned ProvisioningRequest while the job's own pods run on it
(seen on the first run: a worker's 4th job of 3.8 CPU got "Capacity is not found" with 3 running
in a pool of 5 nodes), so a pool never holds its ClusterQueue's whole quota of running pods.

Measured times go to the run's report ("real tier: measured"): the time from `up` finishing to
the first Job on worker-3 among them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from checks.capacity import manager_quotas
from constants import MULTIKUEUE_CONFIG
from testkit.realtier.add_worker import NEW_WORKER, added_stack, command
from testkit.realtier.autoscaler import nodes_at_min, start_autoscalers
from testkit.realtier.crds import kueue_crd_paths
from testkit.realtier.e2e import run_documented
from testkit.realtier.engine import configure, find_engine, kubeconfig_key
from testkit.realtier.faults import (
    KUEUE_API,
    cluster_active,
    condition,
    get_json,
    thaw_all,
    timed_simulation,
)
from testkit.realtier.harness import Report, Tools, apply
from testkit.realtier.kueue import kueue_binary
from testkit.realtier.pulumi_cli import op_counts
from testkit.realtier.shared.faults_runtime import (
    MANAGER,
    completed_once,
    queues_active,
    running_pods,
    state,
    where,
    workloads,
)
from testkit.realtier.shared.twin_jobs import PODS, job_for
from testkit.realtier.shared.worker_add import freeze_autoscalers
from testkit.realtier.twin import load_stack, submissions, twin_raw
from testkit.realtier.twin_run import (
    JobWatch,
    SimulationTools,
    Twin,
    add_cluster,
    running_twin,
)
from testkit.realtier.wait import until

pytestmark = [pytest.mark.real, pytest.mark.slow]

STACK: Final = "dev"
OLD_WORKERS: Final = ("worker-1", "worker-2")
RUNNING: Final = 4  # running on worker-1 and worker-2 when their pools stop growing
QUEUED: Final = 6  # then waiting: the manager reserved them, no worker admits them
RUN_FOR: Final = "60s"  # how long the first jobs' pods stay Running (kwok)
QUEUED_RUN_FOR: Final = "5s"
FIRST_JOB_TIMEOUT: Final = 120.0  # from the end of `up` to worker-3's first job


@dataclass(frozen=True, slots=True)
class Running:
    """dev's twin deployed by the engine, and what starting one more of its clusters takes."""

    twin: Twin
    tools: Tools
    sim: SimulationTools
    kueue: Path
    crds: list[Path]


@pytest.fixture
def running(tools: Tools, simulation: SimulationTools, tmp_path: Path) -> Iterator[Running]:
    """dev's twin, its objects made by `pulumi up` of the committed stack; user pools at
    minCount, no autoscaler yet."""
    binary = kueue_binary()
    if binary is None:
        pytest.skip("real tier: kueue not built")
    _, why = find_engine()
    if why:
        pytest.skip(f"real tier: {why}")
    sim = timed_simulation(simulation, tmp_path / "stages")
    crds = kueue_crd_paths(load_stack(STACK))
    with running_twin(
        STACK,
        tools,
        sim,
        kueue_binary=binary,
        kueue_crds=crds,
        workdir=tmp_path,
        nodes=nodes_at_min,
        by_engine=True,
    ) as twin:
        try:
            yield Running(twin, tools, sim, binary, crds)
        finally:
            thaw_all(twin.planes.values(), twin.kueues.values())


def _rows(out: str) -> set[tuple[str, str]]:
    return {(row.split()[0], row.split()[1]) for row in out.splitlines() if row.strip()}


def _owner(wl: dict[str, Any]) -> str | None:
    refs = wl["metadata"].get("ownerReferences") or []
    return next((str(o["name"]) for o in refs if o.get("kind") == "Job"), None)


def _processes(twin: Twin) -> dict[str, int]:
    """Every process of every plane and every Kueue: `<plane>/<name>` -> pid (alive only)."""
    out = {
        f"{name}/{p.name}": p.popen.pid
        for name, plane in twin.planes.items()
        for p in plane._processes
        if p.popen.poll() is None
    }
    for name, kueue in twin.kueues.items():
        process = kueue._process
        if process is not None and process.popen.poll() is None:
            out[f"{name}/kueue"] = process.popen.pid
    return out


@dataclass
class Seen:
    """What the manager showed while `up` ran: when each thing was first seen (monotonic)."""

    active: float | None = None  # MultiKueueCluster worker-3 Active=True
    listed: float | None = None  # the MultiKueueConfig lists worker-3
    listed_before_active: bool = False  # seen listed while the cluster was not Active yet
    quota: float | None = None  # the manager's team-a ClusterQueue has the new cpu quota
    copy: float | None = None  # a Workload copy on worker-3
    admitted: float | None = None  # a manager Workload admitted on worker-3

    def look(self, twin: Twin, ns: str, cpu_quota: str) -> None:
        manager, added = twin.planes[MANAGER], twin.planes[NEW_WORKER]
        now = time.monotonic
        config = get_json(manager, f"{KUEUE_API}/multikueueconfigs/{MULTIKUEUE_CONFIG}")
        listed = NEW_WORKER in ((config or {}).get("spec") or {}).get("clusters", [])
        # The cluster is read after the config: listed there but not Active here means the
        # config named worker-3 before Kueue was connected to it.
        active = cluster_active(manager, NEW_WORKER) == "True"
        if active and self.active is None:
            self.active = now()
        if listed and self.listed is None:
            self.listed = now()
            self.listed_before_active = not active
        cq = get_json(manager, f"{KUEUE_API}/clusterqueues/team-a") or {}
        quotas = [
            r.get("nominalQuota")
            for g in (cq.get("spec") or {}).get("resourceGroups") or []
            for f in g.get("flavors") or []
            for r in f.get("resources") or []
            if r.get("name") == "cpu"
        ]
        if cpu_quota in quotas and self.quota is None:
            self.quota = now()
        if self.copy is None and workloads(added, ns):
            self.copy = now()
        if self.admitted is None and any(where(w) == NEW_WORKER for w in workloads(manager, ns)):
            self.admitted = now()


def test_a_worker_added_under_load_takes_the_waiting_jobs(
    running: Running,
    autoscaler: Path,
    report: Report,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    twin = running.twin
    assert twin.engine is not None
    run = twin.engine.run
    manager = twin.planes[MANAGER]
    # The stack as the page edits it; the sizes this test relies on, from both stacks.
    stack_after = added_stack(STACK, tmp_path / "stack")
    (new_cpu,) = [str(r.declared) for r in manager_quotas(stack_after) if r.resource == "cpu"]

    queues_active(twin)
    # worker-3 exists before `up` (on AKS, `up` creates the cluster first): its Kueue runs.
    t_start = time.monotonic()
    added = add_cluster(
        twin,
        stack_after,
        NEW_WORKER,
        running.tools,
        running.sim,
        kueue_binary=running.kueue,
        kueue_crds=running.crds,
        workdir=tmp_path,
        nodes=nodes_at_min,
    )
    t_added = time.monotonic() - t_start
    [sub] = [s for s in submissions(twin.fleet) if s.dispatched]
    ns = sub.namespace
    first = [f"load-{i}" for i in range(RUNNING)]
    waiting = [f"wait-{i}" for i in range(QUEUED)]
    watches = {w: JobWatch(twin.planes[w]) for w in (*OLD_WORKERS, NEW_WORKER)}

    def seen() -> str:
        return state(twin, ns, [*OLD_WORKERS, NEW_WORKER])

    try:
        start_autoscalers({w: twin.planes[w] for w in OLD_WORKERS}, twin.fleet, autoscaler)
        applied = apply(manager, [job_for(sub, n, RUN_FOR) for n in first])
        assert not applied.rejected, applied.stderr
        until(
            lambda: all(
                any(len(running_pods(twin.planes[w], ns, n)) == PODS for w in OLD_WORKERS)
                for n in first
            ),
            180.0,
            "the first jobs Running on worker-1 and worker-2",
            seen=seen,
        )
        t_full = time.monotonic()
        frozen = len(freeze_autoscalers(twin, *OLD_WORKERS))
        start_autoscalers({NEW_WORKER: added}, twin.fleet, autoscaler)
        applied = apply(manager, [job_for(sub, n, QUEUED_RUN_FOR) for n in waiting])
        assert not applied.rejected, applied.stderr
        listing = command('Admitted")].status}|')

        def queued() -> set[tuple[str, str]]:
            return {
                (ns, w["metadata"]["name"]) for w in workloads(manager, ns) if _owner(w) in waiting
            }

        until(
            lambda: len(queued()) == QUEUED and _rows(run_documented(manager, listing)) == queued(),
            60.0,
            "every new job waiting, as the page's listing shows",
            seen=lambda: f"listing: {run_documented(manager, listing)}\n{seen()}",
        )
        assert not any(where(w) for w in workloads(manager, ns) if _owner(w) in waiting), seen()
        pids = _processes(twin)

        # `up` of the edited stack, on the engine stack that deployed the twin; watched.
        raw = twin_raw(stack_after, lambda name: {"kubeconfigSecret": kubeconfig_key(name)})
        configure(run, {n: p.kubeconfig for n, p in twin.planes.items()}, raw)
        outcome: dict[str, Any] = {}

        def up() -> None:
            try:
                outcome["result"] = run.stack.up(on_output=run.add, color="never")
            except Exception as exc:  # re-raised in the test's thread
                outcome["error"] = exc

        look = Seen()
        engine = threading.Thread(target=up, name="pulumi-up-worker-3", daemon=True)
        t_up = time.monotonic()
        engine.start()
        while engine.is_alive():
            engine.join(0.25)
            look.look(twin, ns, new_cpu)
            assert time.monotonic() - t_up < 600, f"up still running after 600s\n{run.tail()}"
        t_up_end = time.monotonic()
        if "error" in outcome:
            run.save()
            raise AssertionError(f"up failed: {outcome['error']}\n{run.errors()}")
        changes = op_counts(outcome["result"].summary.resource_changes)
        assert run_documented(manager, command("multikueuecluster worker-3")).strip() == (
            "True Active Connected"
        )
        assert run_documented(manager, command("multikueueconfig")).strip() == (
            '["worker-1","worker-2","worker-3"]'
        )
        assert look.active is not None
        assert look.listed is not None
        assert not look.listed_before_active, "the MultiKueueConfig listed worker-3 first"

        until(
            lambda: look.look(twin, ns, new_cpu) or look.admitted is not None,
            FIRST_JOB_TIMEOUT,
            f"a waiting job admitted on {NEW_WORKER}",
            seen=seen,
        )
        until(
            lambda: any(f"{ns}/{n}" in watches[NEW_WORKER].first_seen for n in waiting),
            FIRST_JOB_TIMEOUT,
            f"the first Job on {NEW_WORKER}",
            seen=seen,
        )
        # The watch's own time for it: the Job may have come before `up` ended.
        t_first_job = min(
            t
            for k, t in watches[NEW_WORKER].first_seen.items()
            if k in {f"{ns}/{n}" for n in waiting}
        )

        until(
            lambda: all(completed_once(twin, ns, n) for n in first + waiting),
            300.0,
            "every job completed once",
            seen=seen,
        )
        t_done = time.monotonic()
        finished = {_owner(w): w for w in workloads(manager, ns)}
        assert len(finished) == RUNNING + QUEUED, seen()
        ran_on: dict[str, str] = {}
        for name in first + waiting:
            wl = finished[name]
            assert condition(wl, "Finished") == "True", seen()
            assert condition(wl, "Evicted") is None, f"{name} was evicted: {seen()}"
            done = [w for w, watch in watches.items() if watch.completed(ns, name)]
            assert done == [where(wl)], f"{name} completed on {done}, admitted on {where(wl)}"
            ran_on[name] = done[0]
        assert all(ran_on[n] in OLD_WORKERS for n in first), ran_on
        on_new = sorted(n for n in waiting if ran_on[n] == NEW_WORKER)
        # worker-1 and worker-2 cannot grow: every waiting job ran on worker-3.
        assert on_new == sorted(waiting), ran_on
        admitted_there = _rows(run_documented(manager, command('clusterName=="worker-3"')))
        assert admitted_there == {(ns, finished[n]["metadata"]["name"]) for n in on_new}, (
            admitted_there
        )
        # Nothing restarted: every process that ran before `up` is the same one, still running.
        after = _processes(twin)
        assert {k: after.get(k) for k in pids} == pids, "a process was restarted or died"
        t_end = time.monotonic()
    finally:
        for watch in watches.values():
            watch.stop()
        run.save()

    def at(t: float | None) -> str:
        return f"{t - t_up:.1f}s" if t is not None else "never"

    line = (
        f"add worker-3 under load ({STACK} twin, engine): worker-3's plane with Kueue up in "
        f"{t_added:.0f}s; {RUNNING} jobs x {PODS} pods running on worker-1/2 "
        f"({t_full - t_start:.0f}s from the start), their {frozen} autoscalers then frozen, "
        f"{QUEUED} jobs waiting; up "
        f"{t_up_end - t_up:.1f}s ({changes}): cluster Active at {at(look.active)}, config "
        f"listed it at {at(look.listed)}, manager quota {new_cpu} at {at(look.quota)}, first "
        f"copy there at {at(look.copy)}, first admitted at {at(look.admitted)}; first Job on "
        f"worker-3 {t_first_job - t_up_end:+.1f}s from the end of up; all {QUEUED} waiting jobs "
        f"ran there; "
        f"all {RUNNING + QUEUED} complete once {t_done - t_up_end:.0f}s after up, none evicted, "
        f"no process restarted; test {t_end - t_start:.0f}s (twin start "
        f"{twin.timings.get('wired', 0.0):.0f}s)"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)
