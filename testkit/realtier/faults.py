"""Faults on a running twin (testkit/realtier/twin_run.py): jobs that run for a while, a worker
plane lost and back, a Kueue manager killed -9 and restarted, and what the planes show.

- `timed_simulation`: kwok's Stages with the pod-complete Stage delayed by the pod's own
  `pod-complete.stage.kwok.x-k8s.io/delay` annotation (kwok's convention; a Go duration), so a
  Job's pods stay Running that long. Without the annotation pods complete at once, as in the
  twin's default Stages.
- `held_not_ready`: kwok's Stages with pod-ready skipping pods annotated HELD: such a pod is
  bound to its node and stays Pending, never ready (a slow image pull), for waitForPodsReady.
- `lose_plane` / `restore_plane`: a worker cluster gone as its manager sees it. Its API server
  is killed (connections refused, as for an AKS API server that is down or unreachable) and
  every other process of it (etcd, controller manager, scheduler, kwok, its Kueue) is stopped
  with SIGSTOP, so nothing on it moves while it is gone. Restoring resumes them and starts the
  API server again on the same port, with the same etcd data: the cluster comes back as it was.
- `freeze_plane`: a worker unreachable without a refusal (a partition that drops packets): every
  process of it, its API server included, is stopped with SIGSTOP; connections stay open and
  nothing answers. `thaw_all` resumes it as it was.
- `kill_kueue` / `restart_kueue`: SIGKILL to the Kueue manager's process group, then the same
  binary and Configuration again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from testkit.realtier.harness import ControlPlane, StartError, _Process, _terminate
from testkit.realtier.kueue import KueueManager
from testkit.realtier.twin_run import SimulationTools

KUEUE_API: Final = "/apis/kueue.x-k8s.io/v1beta2"
# kwok's own per-pod delay annotation for its pod-complete Stage.
COMPLETE_DELAY: Final = "pod-complete.stage.kwok.x-k8s.io/delay"
APISERVER: Final = "kube-apiserver"
APISERVER_TIMEOUT: Final = 60.0


def timed_simulation(sim: SimulationTools, workdir: Path) -> SimulationTools:
    """The twin's Stages, with pod-complete delayed by the pod's COMPLETE_DELAY annotation."""
    workdir.mkdir(parents=True, exist_ok=True)
    stages: list[Path] = []
    for path in sim.kwok_stages:
        doc: dict[str, Any] = yaml.safe_load(path.read_text())
        if doc.get("metadata", {}).get("name") == "pod-complete":
            doc["spec"]["delay"] = {
                "durationMilliseconds": 0,
                "durationFrom": {"expressionFrom": f'.metadata.annotations["{COMPLETE_DELAY}"]'},
            }
        out = workdir / path.name
        out.write_text(yaml.safe_dump(doc, sort_keys=False))
        stages.append(out)
    if not any("delay" in yaml.safe_load(p.read_text())["spec"] for p in stages):
        raise StartError(f"no pod-complete Stage among {[p.name for p in sim.kwok_stages]}")
    return dataclasses.replace(sim, kwok_stages=tuple(stages))


# A pod annotated so is bound to its node but never made ready: `held_not_ready`'s pod-ready Stage
# skips it, as a pod pulling a slow image would wait (jobs.suspended_job(held=True) sets it).
HELD: Final = "pod-ready.stage.kwok.x-k8s.io/hold"


def held_not_ready(sim: SimulationTools, workdir: Path) -> SimulationTools:
    """The twin's Stages, pod-ready skipping the pods annotated HELD (they stay Pending, bound to
    their node, not ready); every other pod is made ready at once, as before."""
    workdir.mkdir(parents=True, exist_ok=True)
    stages: list[Path] = []
    held = False
    for path in sim.kwok_stages:
        doc: dict[str, Any] = yaml.safe_load(path.read_text())
        if doc.get("metadata", {}).get("name") == "pod-ready":
            # kwok v0.8.0 pkg/utils/expression/selector.go: DoesNotExist matches a missing key.
            doc["spec"]["selector"]["matchExpressions"].append(
                {"key": f'.metadata.annotations["{HELD}"]', "operator": "DoesNotExist"}
            )
            held = True
        out = workdir / path.name
        out.write_text(yaml.safe_dump(doc, sort_keys=False))
        stages.append(out)
    if not held:
        raise StartError(f"no pod-ready Stage among {[p.name for p in sim.kwok_stages]}")
    return dataclasses.replace(sim, kwok_stages=tuple(stages))


# ---- a plane lost and back ---------------------------------------------------------------------


def _processes(plane: ControlPlane) -> list[_Process]:
    return plane._processes


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)  # every process leads its own group (start_new_session)


def lose_plane(plane: ControlPlane, kueue: KueueManager | None) -> None:
    """Kill the plane's API server; freeze everything else of it (its Kueue included, if any)."""
    for process in _processes(plane):
        if process.name != APISERVER:
            _signal(process.popen.pid, signal.SIGSTOP)
    if kueue is not None and kueue.pid is not None:
        _signal(kueue.pid, signal.SIGSTOP)
    for process in [p for p in _processes(plane) if p.name == APISERVER]:
        _signal(process.popen.pid, signal.SIGKILL)
        process.popen.wait(timeout=10)
        _terminate(process)  # closes its log
        _processes(plane).remove(process)


def restore_plane(plane: ControlPlane, kueue: KueueManager | None) -> None:
    """Resume etcd, start the API server again (same port, same data), resume the rest."""
    frozen = list(_processes(plane))
    for process in frozen:
        if process.name == "etcd":
            _signal(process.popen.pid, signal.SIGCONT)
    plane._launch_apiserver()
    deadline = time.monotonic() + APISERVER_TIMEOUT
    while plane.get("/readyz", timeout=2.0)[0] != 200:
        if time.monotonic() > deadline:
            raise StartError(f"[{plane.name}] API server not ready again in {APISERVER_TIMEOUT}s")
        time.sleep(0.25)
    for process in frozen:
        _signal(process.popen.pid, signal.SIGCONT)
    if kueue is not None and kueue.pid is not None:
        _signal(kueue.pid, signal.SIGCONT)


def freeze_plane(plane: ControlPlane, kueue: KueueManager) -> None:
    """SIGSTOP every process of the plane, its API server and its Kueue included."""
    for process in _processes(plane):
        _signal(process.popen.pid, signal.SIGSTOP)
    if kueue.pid is not None:
        _signal(kueue.pid, signal.SIGSTOP)


def thaw_all(planes: Iterable[ControlPlane], kueues: Iterable[KueueManager]) -> None:
    """SIGCONT everything (a stopped process ignores SIGTERM: the twin's stop would hang)."""
    for plane in planes:
        for process in _processes(plane):
            _signal(process.popen.pid, signal.SIGCONT)
    for kueue in kueues:
        if kueue.pid is not None:
            _signal(kueue.pid, signal.SIGCONT)


# ---- Kueue killed ----------------------------------------------------------------------------


def kill_kueue(kueue: KueueManager) -> None:
    """SIGKILL the manager's group: no shutdown, no lease release, mid-reconcile."""
    if kueue.pid is None:
        raise StartError(f"[{kueue.name}] kueue is not running")
    _signal(kueue.pid, signal.SIGKILL)
    process = kueue._process
    if process is not None:
        process.popen.wait(timeout=10)
        process.log.close()
    kueue._process = None


def restart_kueue(kueue: KueueManager, openssl: Path, timeout: float = 60.0) -> float:
    """Start it again; returns the seconds until it is ready."""
    t0 = time.monotonic()
    kueue.launch(openssl)
    while not kueue.ready():
        if time.monotonic() - t0 > timeout:
            raise StartError(f"[{kueue.name}] kueue not ready again:\n{kueue.tail()}")
        time.sleep(0.25)
    return time.monotonic() - t0


# ---- what the planes show --------------------------------------------------------------------


def get_json(plane: ControlPlane, path: str) -> dict[str, Any] | None:
    try:
        status, body = plane.get(path, timeout=3.0)
    except OSError:
        return None
    return json.loads(body) if status == 200 else None


def items(plane: ControlPlane, path: str) -> list[dict[str, Any]]:
    return (get_json(plane, path) or {}).get("items") or []


def condition(obj: Mapping[str, Any] | None, kind: str) -> str | None:
    """The status ("True"/"False") of a condition, None when absent."""
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return str(c.get("status"))
    return None


def condition_of(obj: Mapping[str, Any] | None, kind: str) -> dict[str, Any]:
    """The whole condition of that type (status, reason, message, times); {} when absent."""
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return next((dict(c) for c in conditions if c.get("type") == kind), {})


def cluster_active(manager: ControlPlane, worker: str) -> str | None:
    """The Active condition of the manager's MultiKueueCluster for `worker`."""
    return condition(get_json(manager, f"{KUEUE_API}/multikueueclusters/{worker}"), "Active")


def wait_for(what: str, probe: Callable[[], Any], timeout: float, poll: float = 0.25) -> float:
    """Poll until `probe()` is truthy; returns the time.monotonic() it was first seen."""
    deadline = time.monotonic() + timeout
    while True:
        if probe():
            return time.monotonic()
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout:.0f}s")
        time.sleep(poll)
