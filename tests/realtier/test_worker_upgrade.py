"""Upgrading a worker's Kubernetes minor with work in it, on the dev stack's twin, deployed by the
real engine.

worker-2's control plane moves from the twins' minor (KUBERNETES_VERSION of
scripts/build-real-tier-tools) to the next (KUBERNETES_NEXT_VERSION): its kube-apiserver and
kube-controller-manager are stopped and started again from the next minor's binaries, on the
same etcd data, certificates and port (`ControlPlane.swap_control_plane`), which is what an AKS
control plane upgrade is to everything outside it. Its scheduler, kwok (the nodes and their
kubelets), its Kueue and the manager's Kueue keep running and reconnect by themselves.

- Jobs run on worker-2 (only its cluster-autoscaler answers provisioning gates at first);
  docs/upgrades.md's listing, run as written, names them;
- worker-2's cluster-autoscaler is then stopped (SIGSTOP: on AKS the managed autoscaler is part
  of the control plane being upgraded) and more Jobs are submitted: the manager reserves them
  and copies them to the workers, where they wait at the gate, admitted nowhere;
- the swap; the autoscaler resumes once the new control plane serves;
- asserted: every Job completes exactly once (the manager's Job, one worker copy seen
  completing, none evicted, the running ones' Workloads the same objects as before), all on
  worker-2 (worker-1 has no autoscaler: its gate never opens), so the upgraded worker took the
  waiting work; the MultiKueueCluster is Active again; the page's lines, run as written, say
  so and that worker-2 reports the next minor; the next `pulumi up` changes nothing.

The line with the timings goes to the run's report ("real tier: measured").
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest

from testkit.realtier.faults import cluster_active, condition
from testkit.realtier.harness import ControlPlane, Report, Tools, find_next_control_plane
from testkit.realtier.kueue import TWIN_WORKER_LOST_TIMEOUT
from testkit.realtier.pulumi_cli import op_counts
from testkit.realtier.shared.faults_runtime import (
    MANAGER,
    autoscale,
    completed_once,
    dev_twin,
    queues_active,
    running_pods,
    state,
    submit,
    where,
    workloads,
)
from testkit.realtier.shared.twin_jobs import PODS
from testkit.realtier.shared.worker_add import freeze_autoscalers
from testkit.realtier.shared.worker_upgrade import version_of
from testkit.realtier.twin import submissions
from testkit.realtier.twin_run import (
    JobWatch,
    SimulationTools,
    Twin,
)
from testkit.realtier.upgrade_worker import documented_line
from testkit.realtier.wait import until

pytestmark = [pytest.mark.real, pytest.mark.slow]

STACK: Final = "dev"
UPGRADED: Final = "worker-2"
OTHER: Final = "worker-1"
RUNNING: Final = 2  # Jobs running on worker-2 through the upgrade
QUEUED: Final = 4  # Jobs waiting on the manager through the upgrade
RUN_FOR: Final = "60s"  # how long the running Jobs' pods stay Running (kwok): past the swap
QUEUED_RUN_FOR: Final = "5s"


@pytest.fixture(scope="module")
def next_minor() -> tuple[Path, Path]:
    found, why = find_next_control_plane()
    if found is None:
        pytest.skip(f"real tier (next minor): {why}")
    return found


@pytest.fixture
def twin(tools: Tools, simulation: SimulationTools, tmp_path: Path) -> Iterator[Twin]:
    """dev's twin, its objects made by `pulumi up` of the committed stack; user pools at
    minCount, no autoscaler yet."""
    with dev_twin(
        tools,
        simulation,
        tmp_path,
        worker_lost_timeout=TWIN_WORKER_LOST_TIMEOUT,
        by_engine=True,
    ) as started:
        yield started


# ---- the page, as written ----------------------------------------------------------------------


def run_documented(twin: Twin, containing: str) -> str:
    """The page's line containing `containing`, run as written on the cluster it names."""
    target, line = documented_line(containing)
    plane = twin.planes[target]
    kubectl = plane.tools.kubectl if plane.tools is not None else Path("kubectl")
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {line}"],
        capture_output=True,
        text=True,
        env={
            "PATH": f"{Path(kubectl).parent}:/usr/bin:/bin",
            "KUBECONFIG": str(plane.kubeconfig),
            "HOME": str(plane.workdir),
        },
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"[{target}] {line}\n{done.stderr}"
    return done.stdout


def _rows(out: str) -> set[tuple[str, str]]:
    return {(row.split()[0], row.split()[1]) for row in out.splitlines() if row.strip()}


# ---- watching the swap -------------------------------------------------------------------------


@dataclass
class Outage:
    """Sampled in the background while the swap runs: when worker-2's API server stopped and
    served again, and when the manager's MultiKueueCluster for it went inactive and Active."""

    plane: ControlPlane
    manager: ControlPlane
    down: float | None = None
    up: float | None = None
    inactive: float | None = None
    active: float | None = None
    reasons: list[str] = field(default_factory=list[str])
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._sample, name="outage", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            serving = self.plane.get("/readyz", timeout=1.0)[0] == 200
            if not serving and self.down is None:
                self.down = now
            if serving and self.down is not None and self.up is None:
                self.up = now
            obj = self.manager.get(f"/apis/kueue.x-k8s.io/v1beta2/multikueueclusters/{UPGRADED}")
            if obj[0] == 200:
                active = condition(json.loads(obj[1]), "Active")
                reason = next(
                    (
                        f"{c.get('reason')}: {c.get('message')}"
                        for c in json.loads(obj[1]).get("status", {}).get("conditions") or []
                        if c.get("type") == "Active"
                    ),
                    "",
                )
                if reason and reason not in self.reasons:
                    self.reasons.append(reason)
                if active != "True" and self.inactive is None:
                    self.inactive = now
                if active == "True" and self.inactive is not None and self.active is None:
                    self.active = now
            self._stop.wait(0.2)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


def test_a_worker_upgraded_to_the_next_minor_with_work_in_it_loses_nothing(
    twin: Twin,
    autoscaler: Path,
    next_minor: tuple[Path, Path],
    report: Report,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert twin.engine is not None
    run, created = twin.engine.run, twin.engine.counts["create"]
    manager, plane = twin.planes[MANAGER], twin.planes[UPGRADED]
    # kube-apiserver-next-<version>/bin/kube-apiserver: the version the swap must report
    next_version = "v" + next_minor[0].parent.parent.name.rsplit("-", 1)[1]
    before = version_of(plane)
    assert before != next_version, f"{UPGRADED} already runs {before}"

    autoscale(twin, autoscaler, UPGRADED)  # only worker-2's gate opens: the first Jobs run there
    queues_active(twin)
    [sub] = [s for s in submissions(twin.fleet) if s.dispatched]
    ns = sub.namespace
    running = [f"upgrade-run-{i}" for i in range(RUNNING)]
    queued = [f"upgrade-wait-{i}" for i in range(QUEUED)]
    watches = {w: JobWatch(twin.planes[w]) for w in (UPGRADED, OTHER)}
    outage = Outage(plane, manager)

    def seen() -> str:
        return state(twin, ns, [UPGRADED, OTHER])

    def owner(wl: dict[str, Any]) -> str:
        refs = wl["metadata"].get("ownerReferences") or []
        return next((str(o["name"]) for o in refs if o.get("kind") == "Job"), "")

    try:
        t0 = time.monotonic()
        submit(twin, sub, running, RUN_FOR)
        until(
            lambda: all(len(running_pods(plane, ns, n)) == PODS for n in running),
            180.0,
            f"every first Job Running on {UPGRADED}",
            seen=seen,
        )
        on_worker = {
            owner(w): w["metadata"]["uid"] for w in workloads(manager, ns) if where(w) == UPGRADED
        }
        assert sorted(on_worker) == sorted(running), seen()
        listed = _rows(run_documented(twin, f'clusterName=="{UPGRADED}"'))
        assert listed == {
            (ns, w["metadata"]["name"]) for w in workloads(manager, ns) if where(w) == UPGRADED
        }, listed

        # More Jobs, waiting: reserved on the manager, copied to both workers, admitted nowhere.
        frozen = freeze_autoscalers(twin, UPGRADED)
        submit(twin, sub, queued, QUEUED_RUN_FOR)

        def waiting() -> bool:
            mine = [w for w in workloads(manager, ns) if owner(w) in queued]
            copies = {w["metadata"]["name"] for w in workloads(plane, ns)}  # the manager's names
            return (
                len(mine) == QUEUED
                and not any(where(w) for w in mine)
                and {w["metadata"]["name"] for w in mine} <= copies
            )

        until(
            waiting,
            90.0,
            f"every new Job waiting on the manager, its copy on {UPGRADED}",
            seen=seen,
        )
        still = [n for n in running if len(running_pods(plane, ns, n)) == PODS]
        assert still == running, f"finished before the upgrade; raise RUN_FOR: {seen()}"

        # The upgrade: worker-2's control plane to the next minor, etcd kept.
        outage.start()
        t_swap = time.monotonic()
        swap = plane.swap_control_plane(*next_minor)
        t_swapped = time.monotonic()
        # `kubectl get --watch` ends with its API server: watch worker-2's Jobs again.
        rewatch = watches[f"{UPGRADED} after the swap"] = JobWatch(plane)
        for pid in frozen:
            os.killpg(pid, signal.SIGCONT)
        after = version_of(plane)
        assert after == next_version, f"{UPGRADED} reports {after}, not {next_version}"
        until(
            lambda: (
                cluster_active(manager, UPGRADED) == "True"
                and (outage.inactive is None or outage.active is not None)
            ),
            180.0,
            f"MultiKueueCluster {UPGRADED} Active again",
            seen=lambda: f"Active reasons seen: {outage.reasons}\n{seen()}",
        )
        t_active = time.monotonic()
        until(
            lambda: all(completed_once(twin, ns, n) for n in running + queued),
            300.0,
            "every Job completed once",
            seen=seen,
        )
        t_done = time.monotonic()
        outage.stop()

        finished = {owner(w): w for w in workloads(manager, ns)}
        assert sorted(finished) == sorted(running + queued), seen()
        for name, wl in finished.items():
            assert condition(wl, "Finished") == "True", seen()
            assert condition(wl, "Evicted") is None, f"{name} was evicted: {seen()}"
            assert where(wl) == UPGRADED, f"{name} finished on {where(wl)}: {seen()}"
            assert watches[UPGRADED].completed(ns, name) or rewatch.completed(ns, name), (
                f"{name} not seen completing on {UPGRADED}"
            )
            assert not watches[OTHER].completed(ns, name), f"{name} also ran on {OTHER}"
        # The running Jobs' Workloads are the ones admitted before: never re-created.
        assert {n: finished[n]["metadata"]["uid"] for n in running} == on_worker

        # The page's lines, as written: connected, the new minor, nothing left running there.
        assert run_documented(twin, "multikueuecluster").strip() == "True Active Connected"
        reported = json.loads(run_documented(twin, "/version"))["gitVersion"]
        assert reported == next_version, reported
        assert run_documented(twin, f'clusterName=="{UPGRADED}"').strip() == ""

        # The next `up` changes nothing (the credential proofs read both workers again).
        t_up = time.monotonic()
        again = op_counts(run.up().summary.resource_changes)
        up_seconds = time.monotonic() - t_up
        assert again.pop("read", 0) == 2, again
        assert again == {"same": created}, f"the up after the upgrade changed: {again}"
        t_end = time.monotonic()
    finally:
        outage.stop()
        for watch in watches.values():
            watch.stop()
        run.save()

    def since_swap(t: float | None) -> str:
        return f"{t - t_swap:.1f}s" if t is not None else "never"

    unavailable = (
        f"{outage.up - outage.down:.1f}s"
        if outage.up is not None and outage.down is not None
        else "not seen"
    )
    reconnect = (
        f"inactive at {since_swap(outage.inactive)}, Active again at {since_swap(t_active)} "
        f"({t_active - t_swapped:.1f}s after the swap)"
        if outage.inactive is not None
        else f"never seen inactive, Active at {since_swap(t_active)}"
    )
    line = (
        f"upgrade {UPGRADED} {before} -> {after} ({STACK} twin, engine) with {RUNNING} Jobs "
        f"running there and {QUEUED} waiting on the manager: swap {swap:.1f}s (API server "
        f"unavailable {unavailable}); MultiKueueCluster {reconnect} (reasons {outage.reasons}); "
        f"all {RUNNING + QUEUED} complete once on {UPGRADED} {t_done - t_swapped:.1f}s after the "
        f"swap, none evicted; next up {up_seconds:.1f}s, {created} same; test "
        f"{t_end - t0:.0f}s (twin start {twin.timings.get('wired', 0.0):.0f}s)"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)
