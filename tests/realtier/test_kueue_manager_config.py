"""The Configuration the twin's Kueues actually run is the program's (issue 25, item 1).

The dev twin (tests/realtier/twin_run.py) starts each cluster's Kueue with the Configuration and
feature gates the program renders for that cluster (builders.kueue manager_config and
feature_gates). Asserted on the running processes, not on the rendered file:

- the manager's Kueue logged, at start, a loaded Configuration that carries the program's
  settings (the dispatcher dev states);
- waitForPodsReady is off on the manager and on (Kueue 0.19's default) on a worker. Kueue's job
  reconciler gives a Workload a `PodsReady` condition (False, `WaitForStart` until admitted) on
  every reconcile when, and only when, waitForPodsReady is on (pkg/controller/jobframework/
  reconciler.go at v0.19.2, step 5). A Job on worker-1 must get one (the control: the mechanism
  works here); a Job dispatched from the manager, reconciled there for at least as long, must
  not. Before the manager got the DisableWaitForPodsReady gate it did, and its 30-minute timeout
  evicted and re-dispatched jobs still starting on a worker.

Cheap: dev's twin with every pool at maxCount, no autoscaler, no engine; nothing waits for a Job
to run (a gated worker would need the autoscaler).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Final

import pytest

from builders.kueue import manager_config
from tests.realtier.conftest import kueue_crd_paths
from tests.realtier.harness import ControlPlane, Tools, apply
from tests.realtier.kueue import kueue_binary
from tests.realtier.twin import load_stack
from tests.realtier.twin_run import SimulationTools, find_simulation_tools, running_twin

pytestmark = [pytest.mark.real]

STACK: Final = "dev"
NAMESPACE: Final = "team-a"
QUEUE: Final = "team-a"
KUEUE_API: Final = "/apis/kueue.x-k8s.io/v1beta2"
TIMEOUT: Final = 60.0
POLL: Final = 0.25


@pytest.fixture(scope="module")
def simulation() -> SimulationTools:
    found, missing = find_simulation_tools()
    if found is None:
        pytest.skip("real tier (twin): " + "; ".join(missing))
    return found


def _job(name: str, dispatched: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "suspend": True,  # no Kueue webhook here: the test suspends it, as the webhook would
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                        "args": ["pause"],
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    }
                ],
            }
        },
    }
    if dispatched:
        spec["managedBy"] = "kueue.x-k8s.io/multikueue"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": QUEUE},
        },
        "spec": spec,
    }


def _workload(plane: ControlPlane, job: str) -> dict[str, Any] | None:
    status, body = plane.get(f"{KUEUE_API}/namespaces/{NAMESPACE}/workloads")
    items: list[dict[str, Any]] = (json.loads(body).get("items") or []) if status == 200 else []
    return next(
        (
            w
            for w in items
            if any(o.get("name") == job for o in w["metadata"].get("ownerReferences") or [])
        ),
        None,
    )


def _condition(wl: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    conditions: list[dict[str, Any]] = ((wl or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def _until(what: str, probe: Any, state: Any) -> Any:
    deadline = time.monotonic() + TIMEOUT
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {TIMEOUT:.0f}s; last seen: {state()}")
        time.sleep(POLL)


def test_manager_runs_without_wait_for_pods_ready_and_a_worker_with_it(
    tools: Tools, simulation: SimulationTools, tmp_path: Path
) -> None:
    binary = kueue_binary()
    if binary is None:
        pytest.skip("real tier: kueue not built")
    stack = load_stack(STACK)
    with running_twin(
        STACK,
        tools,
        simulation,
        kueue_binary=binary,
        kueue_crds=kueue_crd_paths(stack),
        workdir=tmp_path,
    ) as twin:
        manager = twin.fleet.manager
        assert manager is not None, "dev has a MultiKueue manager"
        worker = "worker-1"
        rendered = manager_config(twin.fleet.kueue, manager)
        loaded = twin.kueues[manager.name].loaded_configuration()
        assert loaded["multiKueue"]["dispatcherName"] == rendered["multiKueue"]["dispatcherName"], (
            f"the manager's Kueue loaded {loaded.get('multiKueue')}, the program renders "
            f"{rendered.get('multiKueue')}"
        )
        home, remote = twin.planes[manager.name], twin.planes[worker]
        t0 = time.monotonic()
        for plane, name, dispatched in ((home, "mgr-job", True), (remote, "wkr-job", False)):
            applied = apply(plane, [_job(name, dispatched)])
            assert not applied.rejected, f"[{plane.name}] {applied.stderr}"
        # Both Workloads exist and the manager's reserved quota: its job reconciler has run.
        _until(
            f"[{manager.name}] Workload of mgr-job reserves quota",
            lambda: (
                (_condition(_workload(home, "mgr-job"), "QuotaReserved") or {}).get("status")
                == "True"
            ),
            lambda: _workload(home, "mgr-job"),
        )
        control = _until(
            f"[{worker}] Workload of wkr-job gets a PodsReady condition (waitForPodsReady on "
            "there, Kueue's default)",
            lambda: _condition(_workload(remote, "wkr-job"), "PodsReady"),
            lambda: _workload(remote, "wkr-job"),
        )
        # Give the manager at least as long again as the worker took.
        time.sleep(max(2.0, time.monotonic() - t0))
        on_manager = _condition(_workload(home, "mgr-job"), "PodsReady")
        assert on_manager is None, (
            f"[{manager.name}] the dispatched job's Workload has {on_manager}: waitForPodsReady "
            f"runs on the manager (worker control: {control})"
        )
