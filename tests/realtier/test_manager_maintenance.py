"""The manager's upgrade with work queued, reserved and dispatched, on the dev stack's twin, under
each MultiKueue dispatcher: dev's AllAtOnce (the twin deployed by the real engine) and prod's
Incremental (dev's twin with prod's `kueue.multiKueue`, applied by kubectl).

What an AKS manager upgrade is to the fleet, in the order AKS does it:
- its control plane to the next minor: the manager's kube-apiserver and kube-controller-manager
  stopped and started again from the next minor's binaries on the same etcd
  (`ControlPlane.swap_control_plane`, as tests/realtier/test_worker_upgrade.py does to a worker);
  its scheduler, kwok, Kueue and the workers go on and reconnect by themselves;
- its node image (or the system pool's minor): AKS drains the node the Kueue controller runs on
  and it starts on another node. Here: the manager's Kueue stopped (SIGTERM, as a drain's
  eviction does) and started again after DRAIN_GAP.

With, when it starts:
- dispatched: RUNNING Jobs running on the workers (their pods Running for RUN_FOR);
- reserved: RESERVED Jobs holding the manager's quota, copied to the workers (nominated), held
  at the workers' provisioning gates (their cluster-autoscalers stopped, SIGSTOP) or waiting
  for a worker's quota; together with the running ones they fill the manager's team-a quota;
- queued: QUEUED Jobs pending on the manager for quota (QuotaReserved False).

Then docs/upgrades.md's "Upgrading the manager" as written: its check lines (every
MultiKueueCluster Active before and after; the reserved Workloads listed before), and
docs/operations.md's listing + annotate step for stranded Workloads (`redispatch`), run as
written. Asserted: every Job completes exactly once (the manager's Job Complete with its
completions, its Workload Finished and never Evicted, one worker seen completing it, not the
other); the running Jobs keep their Workloads (same uid) and their worker; every
MultiKueueCluster Active again; the listing names no Workload that was dispatched; with the
engine, the next `pulumi up` changes nothing.

The line with the timings goes to the run's report ("real tier: measured").
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from testkit.realtier.e2e import run_documented
from testkit.realtier.faults import cluster_active, condition
from testkit.realtier.harness import Report, Tools, apply, find_next_control_plane
from testkit.realtier.jobs import suspended_job
from testkit.realtier.kueue import TWIN_WORKER_LOST_TIMEOUT
from testkit.realtier.pulumi_cli import op_counts, section
from testkit.realtier.shared.faults_runtime import (
    MANAGER,
    autoscale,
    completed_once,
    dev_twin,
    queues_active,
    redispatch,
    running_pods,
    state,
    submit,
    where,
    workloads,
)
from testkit.realtier.shared.twin_jobs import PODS
from testkit.realtier.shared.worker_add import freeze_autoscalers
from testkit.realtier.shared.worker_upgrade import version_of
from testkit.realtier.twin import Submission, load_stack, submissions
from testkit.realtier.twin_run import (
    JobWatch,
    SimulationTools,
    Twin,
)
from testkit.realtier.upgrade_worker import PAGE
from testkit.realtier.wait import until
from upstream.kueue import DISPATCHERS

pytestmark = [pytest.mark.real, pytest.mark.slow]

STACK: Final = "dev"
WORKERS: Final = ("worker-1", "worker-2")
SECTION: Final = "### Upgrading the manager"
RUNNING: Final = 2  # small Jobs (2 x 500m) running on the workers through the upgrade
RESERVED: Final = 5  # big Jobs (2 x 3 CPU): with the running ones, the manager's 32 CPU
RESERVED_CPU: Final = "3"  # per pod: one per 4-vCPU batch node (D4s_v5)
QUEUED: Final = 2  # small Jobs the full quota keeps pending on the manager
RUN_FOR: Final = "55s"  # the running Jobs' pods: past the swap and the Kueue restart
SHORT_RUN: Final = "5s"
DRAIN_GAP: Final = 5.0  # seconds the manager's Kueue is away (the pod rescheduled elsewhere)
SETTLE: Final = 10.0  # after the restart, before the documented listing (the page says a minute)


@pytest.fixture(scope="module")
def next_minor() -> tuple[Path, Path]:
    found, why = find_next_control_plane()
    if found is None:
        pytest.skip(f"real tier (next minor): {why}")
    return found


def _twin(
    dispatcher: str, tools: Tools, simulation: SimulationTools, workdir: Path
) -> Iterator[Twin]:
    """dev's twin, user pools at minCount. AllAtOnce: deployed by `pulumi up` of the committed
    stack. Incremental: dev's fleet with prod's `kueue.multiKueue` (the engine deploys only a
    committed stack file, so kubectl applies the program's objects)."""
    fleet = None
    if dispatcher == "Incremental":
        dev = load_stack(STACK)
        prod = load_stack("prod").kueue.multi_kueue
        fleet = dev.model_copy(update={"kueue": dev.kueue.model_copy(update={"multi_kueue": prod})})
    with dev_twin(
        tools,
        simulation,
        workdir,
        fleet,
        worker_lost_timeout=TWIN_WORKER_LOST_TIMEOUT,
        by_engine=fleet is None,
    ) as started:
        yield started


# One twin per dispatcher, each torn down before the next starts (two twins at once would not fit
# this 2-core machine); each test uses its twin once.
@pytest.fixture(params=["AllAtOnce", "Incremental"])
def twin(
    request: pytest.FixtureRequest,
    tools: Tools,
    simulation: SimulationTools,
    tmp_path: Path,
) -> Iterator[Twin]:
    yield from _twin(str(request.param), tools, simulation, tmp_path)


# ---- the page, as written ----------------------------------------------------------------------


def page_lines() -> list[str]:
    """The `kubectl` lines of the section's `sh` block (each runs on the manager)."""
    body = section(PAGE.read_text(), SECTION)
    block = body.split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [line.strip() for line in block.splitlines()]  # the block is indented in a list
    return [line for line in lines if line.startswith("kubectl ")]


def page_line(containing: str) -> str:
    found = [line for line in page_lines() if containing in line]
    assert len(found) == 1, f"{PAGE.name}, {SECTION}: one kubectl line with {containing!r}"
    return found[0]


def clusters_active(twin: Twin) -> dict[str, str]:
    """The page's MultiKueueCluster line, run as written: name -> Active status."""
    out = run_documented(twin.planes[MANAGER], page_line("multikueueclusters"))
    return {row.split()[0]: " ".join(row.split()[1:]) for row in out.splitlines() if row.strip()}


def reserved_listed(twin: Twin) -> set[tuple[str, str]]:
    out = run_documented(twin.planes[MANAGER], page_line("QuotaReserved"))
    return {(row.split()[0], row.split()[1]) for row in out.splitlines() if row.strip()}


# ---- helpers -----------------------------------------------------------------------------------


def owner(wl: dict[str, Any]) -> str:
    refs = wl["metadata"].get("ownerReferences") or []
    return next((str(o["name"]) for o in refs if o.get("kind") == "Job"), "")


def submit_big(twin: Twin, sub: Submission, names: list[str]) -> None:
    jobs = [
        suspended_job(
            n,
            sub.namespace,
            sub.local_queue,
            {"cpu": RESERVED_CPU, "memory": "1Gi"},
            dispatched=True,
            pods=PODS,
            run_for=SHORT_RUN,
        )
        for n in names
    ]
    applied = apply(twin.planes[MANAGER], jobs)
    assert not applied.rejected, applied.stderr


def test_manager_maintenance_upgrade_keeps_queued_reserved_and_dispatched_work_whole(
    twin: Twin,
    *,
    autoscaler: Path,
    next_minor: tuple[Path, Path],
    tools: Tools,
    report: Report,
    capsys: pytest.CaptureFixture[str],
) -> None:
    manager = twin.planes[MANAGER]
    kueue = twin.kueues[MANAGER]
    dispatcher = next(k for k, v in DISPATCHERS.items() if v == _dispatcher_name(twin))
    engine = twin.engine
    next_version = "v" + next_minor[0].parent.parent.name.rsplit("-", 1)[1]
    before_version = version_of(manager)
    assert before_version != next_version, f"the manager already runs {before_version}"

    autoscale(twin, autoscaler, *WORKERS)
    queues_active(twin)
    [sub] = [s for s in submissions(twin.fleet) if s.dispatched]
    ns = sub.namespace
    running = [f"mgr-run-{i}" for i in range(RUNNING)]
    reserved = [f"mgr-held-{i}" for i in range(RESERVED)]
    queued = [f"mgr-queued-{i}" for i in range(QUEUED)]
    everything = running + reserved + queued
    watches = {w: JobWatch(twin.planes[w]) for w in WORKERS}

    def seen() -> str:
        return state(twin, ns, list(WORKERS))

    def mine(names: list[str]) -> list[dict[str, Any]]:
        return [w for w in workloads(manager, ns) if owner(w) in names]

    try:
        t0 = time.monotonic()
        # Dispatched: running on the workers.
        submit(twin, sub, running, RUN_FOR)

        def all_running() -> bool:
            return all(
                sum(len(running_pods(twin.planes[w], ns, n)) for w in WORKERS) == PODS
                for n in running
            )

        until(all_running, 180.0, "every first Job Running on a worker", seen=seen)
        ran_at = {owner(w): (w["metadata"]["uid"], where(w)) for w in mine(running)}
        assert sorted(ran_at) == sorted(running), seen()
        assert all(c for _, c in ran_at.values()), seen()

        # Reserved: the gates answer nothing now; the manager holds their quota, copies wait.
        frozen = freeze_autoscalers(twin, *WORKERS)
        submit_big(twin, sub, reserved)

        def held(*, nominated: bool = True) -> bool:
            wls = mine(reserved)
            return len(wls) == RESERVED and all(
                condition(w, "QuotaReserved") == "True"
                and condition(w, "Admitted") != "True"
                and not where(w)
                and (not nominated or (w.get("status") or {}).get("nominatedClusterNames"))
                for w in wls
            )

        until(held, 90.0, "every big Job reserved on the manager, nominated", seen=seen)
        # Queued: the manager's quota is full.
        submit(twin, sub, queued, SHORT_RUN)

        def pending() -> bool:
            wls = mine(queued)
            # Kueue marks the head it tried Pending (QuotaReserved False); the ones behind it may
            # carry no condition yet. None holds quota.
            return (
                len(wls) == QUEUED
                and not any(condition(w, "QuotaReserved") == "True" for w in wls)
                and any(condition(w, "QuotaReserved") == "False" for w in wls)
            )

        until(pending, 60.0, "every small Job pending on the manager for quota", seen=seen)

        def nominated() -> dict[str, list[str]]:
            return {
                owner(w): sorted((w.get("status") or {}).get("nominatedClusterNames") or [])
                for w in mine(reserved)
            }

        # AllAtOnce nominates every connected worker; Incremental (stepSize 1) one per 5-minute
        # round (Kueue v0.19.2 workloaddispatcher/incrementaldispatcher.go), so the first.
        nominated_before = nominated()
        first = [sorted(WORKERS)] if dispatcher == "AllAtOnce" else [[w] for w in WORKERS]
        assert all(n in first for n in nominated_before.values()), nominated_before

        # Before: the page's checks, as written.
        assert clusters_active(twin) == dict.fromkeys(WORKERS, "True"), clusters_active(twin)
        assert reserved_listed(twin) == {(ns, w["metadata"]["name"]) for w in mine(reserved)}
        assert all_running(), f"finished before the upgrade; raise RUN_FOR: {seen()}"
        t_before = time.monotonic()

        # The upgrade: the control plane, then the node the Kueue controller runs on.
        swap = manager.swap_control_plane(*next_minor)
        t_swapped = time.monotonic()
        after_version = version_of(manager)
        assert after_version == next_version, f"the manager reports {after_version}"
        kueue.stop()  # SIGTERM: the drain's eviction of its pod
        time.sleep(DRAIN_GAP)
        t_kueue = time.monotonic()
        kueue.launch(tools.openssl)
        until(kueue.ready, 60.0, "the manager's Kueue ready again", seen=kueue.tail)
        t_ready = time.monotonic()
        until(
            lambda: all(cluster_active(manager, w) == "True" for w in WORKERS),
            120.0,
            "every MultiKueueCluster Active again",
            seen=seen,
        )
        t_active = time.monotonic()
        # The dispatched Jobs ran through it all; nothing started meanwhile: every big Job still
        # reserved, the small ones still pending.
        assert all_running(), f"a running Job ended before the restart; raise RUN_FOR: {seen()}"
        # Their nominations may be empty for a moment: AllAtOnce nominates the workers the new
        # process is connected to, none yet when it first reconciles (waited for below).
        unnominated = sorted(n for n, names in nominated().items() if not names)
        assert held(nominated=False), f"a reserved Job changed through the upgrade: {seen()}"
        assert pending(), f"a queued Job changed through the upgrade: {seen()}"

        # Incremental keeps its round start times in memory: the restarted Kueue starts a new
        # round at once, nominating the next worker too. AllAtOnce nominates all again.
        until(
            lambda: all(n == sorted(WORKERS) for n in nominated().values()),
            30.0,
            "every reserved Workload nominated to every worker after the restart",
            seen=lambda: f"{nominated()}\n{seen()}",
        )
        t_nominated = time.monotonic()

        # After: the operations page's listing + annotate, as written, then the gates open.
        time.sleep(SETTLE)
        listed = redispatch(manager)
        assert {n for _, n in listed} <= {w["metadata"]["name"] for w in mine(reserved + queued)}
        for pid in frozen:
            os.killpg(pid, signal.SIGCONT)
        until(
            lambda: all(completed_once(twin, ns, n) for n in everything),
            300.0,
            "every Job completed once",
            seen=seen,
        )
        t_done = time.monotonic()

        finished = {owner(w): w for w in workloads(manager, ns)}
        assert sorted(finished) == sorted(everything), seen()
        for name, wl in finished.items():
            assert condition(wl, "Finished") == "True", f"{name}: {seen()}"
            assert condition(wl, "Evicted") is None, f"{name} was evicted: {seen()}"
            ran_on = [w for w, watch in watches.items() if watch.completed(ns, name)]
            assert ran_on == [where(wl)], f"{name} completed on {ran_on}, admitted on {where(wl)}"
        # The running Jobs' Workloads are the ones admitted before, on the same worker.
        assert {n: (finished[n]["metadata"]["uid"], where(finished[n])) for n in running} == ran_at
        assert clusters_active(twin) == dict.fromkeys(WORKERS, "True")
        per_worker = {w: sorted(n for n, wl in finished.items() if where(wl) == w) for w in WORKERS}

        up_line = ""
        if engine is not None:
            created = engine.counts["create"]
            t_up = time.monotonic()
            again = op_counts(engine.run.up().summary.resource_changes)
            assert again.pop("read", 0) == 2, again
            assert again == {"same": created}, f"the up after the upgrade changed: {again}"
            up_line = f"; next up {time.monotonic() - t_up:.1f}s, {created} same"
        t_end = time.monotonic()
    finally:
        for watch in watches.values():
            watch.stop()
        if engine is not None:
            engine.run.save()

    line = (
        f"manager maintenance ({STACK} twin, {dispatcher}"
        + (", engine" if engine is not None else "")
        + f"): {RUNNING} Jobs running, {RESERVED} reserved at the gates, {QUEUED} queued; "
        f"control plane {before_version} -> {after_version} in {swap:.1f}s, Kueue away "
        f"{DRAIN_GAP:.0f}s and ready {t_ready - t_kueue:.1f}s after its start; every "
        f"MultiKueueCluster Active {t_active - t_ready:.1f}s after; reserved nominated "
        f"{sorted({tuple(n) for n in nominated_before.values()})} before, every worker "
        f"{t_nominated - t_ready:.1f}s after Kueue was ready (none at first: "
        f"{unnominated or 'none'}); listed by the operator step: "
        f"{[n for _, n in listed] or 'none'}; all {len(everything)} complete once "
        f"{t_done - t_swapped:.1f}s after the swap "
        f"({ {w: len(v) for w, v in per_worker.items()} }), "
        f"none evicted, none twice{up_line}; test {t_end - t0:.0f}s (setup {t_before - t0:.0f}s, "
        f"twin start {twin.timings.get('wired', 0.0):.0f}s)"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)


def _dispatcher_name(twin: Twin) -> str:
    loaded = twin.kueues[MANAGER].loaded_configuration()
    return str((loaded.get("multiKueue") or {}).get("dispatcherName") or DISPATCHERS["AllAtOnce"])
