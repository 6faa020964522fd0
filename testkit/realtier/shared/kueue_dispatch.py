"""What tests/realtier/test_kueue_dispatch.py shares with other test modules (they import it from
here, not from a test module): KUEUE_API, Wired, dispatch_job, wired and what they need."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from typing import Any, Final

import pytest

from builders.fleet import kueue_objects
from builders.multikueue import (
    encode,
    k8s_name,
    manager_objects,
    token_secret_name,
    worker_kubeconfig,
    worker_objects,
    write_role_bindings,
)
from config.models import FleetConfig
from config.resolve import dispatch_sets, enabled_workers, rotation_of
from testkit.realtier.e2e import TEAM, e2e_fleet
from testkit.realtier.harness import ControlPlane, apply, namespace
from testkit.realtier.jobs import suspended_job
from testkit.realtier.kueue import KUEUE_NAMESPACE, KueueManager, wait_for_token

KUEUE_API: Final = "/apis/kueue.x-k8s.io/v1beta2"


# batch/v1 Job.spec.managedBy: without Kueue's webhook nobody sets it, and the manager's
# MultiKueue check rejects a Job it does not manage ("The owner is not managed by Kueue").
JOB: Final = "realtier-dispatch"


@dataclass(frozen=True, slots=True)
class Wired:
    fleet: FleetConfig
    seconds: float  # to apply everything (tokens included)
    # monotonic clock when the manager's MultiKueue objects / the last queues were applied:
    # time to Active is measured from there, not from when a test began to wait.
    multikueue_applied: float
    queues_applied: float


@pytest.fixture(scope="module")
def wired(planes: dict[str, ControlPlane], kueues: dict[str, KueueManager]) -> Wired:
    """The e2e fleet's worker side, the manager side with real credentials, then the queues."""
    del kueues  # running before anything is applied: they must react to changes, not to a start
    t0 = time.monotonic()
    fleet = e2e_fleet(planes)
    manager = fleet.manager
    assert manager is not None
    version, frameworks = fleet.kueue.version, fleet.kueue.frameworks
    links: list[tuple[str, Any, int]] = []
    for worker in enabled_workers(fleet):
        plane = planes[worker]
        rotation = rotation_of(fleet, worker)
        applied = apply(
            plane, [namespace(KUEUE_NAMESPACE), *worker_objects(version, frameworks, rotation)]
        )
        assert not applied.rejected, f"[{worker}] {applied.stderr}"
        data = wait_for_token(plane, token_secret_name(rotation))
        token = base64.b64decode(data["token"]).decode()
        doc = worker_kubeconfig(k8s_name(worker), plane.url, data["ca.crt"], token)
        links.append((worker, encode(doc), rotation))
    configs = [(s.name, s.workers) for s in dispatch_sets(fleet)]
    applied = apply(
        planes[manager.name],
        [namespace(KUEUE_NAMESPACE), *manager_objects(links, configs=configs)],
    )
    assert not applied.rejected, f"[{manager.name}] {applied.stderr}"
    multikueue_applied = time.monotonic()
    # The queues as the program deploys them (builders.fleet): mirrored LocalQueues on the workers,
    # the MultiKueue AdmissionCheck(s) on the manager before the queues that name them.
    manifests = [m for objects in kueue_objects(fleet).values() for m in objects]
    # The workers' write RoleBindings, in the dispatched namespaces the queue objects create.
    manifests += [m for w in enabled_workers(fleet) for m in write_role_bindings(fleet, w)]
    for target in dict.fromkeys(m.target for m in manifests):
        objects = [m.obj for m in manifests if m.target == target]
        applied = apply(planes[target], objects)
        assert not applied.rejected, f"[{target}] {applied.stderr}"
    done = time.monotonic()
    return Wired(fleet, done - t0, multikueue_applied, done)


def dispatch_job() -> dict[str, Any]:
    requests = {"cpu": "100m", "memory": "64Mi"}
    return suspended_job(JOB, TEAM, TEAM, requests, limits=False, dispatched=True, pods=1)
