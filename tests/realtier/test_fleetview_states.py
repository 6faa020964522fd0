"""fleetview on the real Kueue and autoscaler: the states `why` names, driven on one twin, and
`status`'s warnings in each (none where the fleet is healthy).

The twin: dev's fleet (a manager dispatching team-a, 32 CPU, to two gated workers of 16 CPU each,
their user pools at minCount) with the priority classes of docs/kueue-queueing.md's example
(tests/fixtures/priority.yaml: `urgent` 1000, `batch` 100), the manager's ClusterQueue preempting
lower priority within itself, and prod's dispatcher (Incremental, stepSize 1: every job is offered
to worker-1 first, to worker-2 only after a 5-minute round in which worker-1 did not admit it).
The real cluster-autoscaler runs on worker-1 only; worker-2 has none, so its ProvisioningRequests
are never answered. fleetview runs as users run it (`python -m fleetview ... --json`, the planes'
kubeconfig files, `--timings-from prod`), with `--stranded-after 5`: a grace shorter than every
wait here, so a healthy wait that fleetview took for a stranding would warn within this module,
not only after the default 5 minutes.

Driven, one after the other (the jobs stay for the later steps, `fv-starting` excepted):

1. A healthy fleet under backlog, and an Incremental round: `fv-running` (urgent, 500m, Running
   on worker-1 for the whole module) is `running`; `fv-finished` is `finished`; `fv-starting`
   (step 3) is admitted on worker-1. Then `fv-running`'s booking ends (step 2), and worker-1's
   autoscaler is paused (SIGSTOP). `fv-waiting` (no priority class, 8 x 2 CPU) holds the
   manager's quota but not worker-1's, which has 16 CPU: `nominated`, in the first round of the
   Incremental dispatcher, worker-2 next.
   `fv-gated` (batch, 3 CPU) holds worker-1's quota and its ProvisioningRequest stays unanswered:
   `at-gate`. `fv-backlog` and `fv-behind` (16 CPU each, no priority class, created in that
   order in two later seconds) do not fit the manager's remaining quota: both `pending`,
   `fv-backlog` with Kueue's message and "0 Workloads ahead of it", `fv-behind` "1 Workload ahead
   of it" (Kueue's scheduler may not have tried it yet, and then it has no message). The
   positions are what fleetview reads from Kueue's visibility API, which the manager's Kueue
   serves through its plane's aggregation layer (testkit/realtier/kueue.py), checked against that
   API read with kubectl as admin, as fleetview's read-only role and as roles granting only
   `get` (read) or only `list` (refused). `fv-local`, on worker-2's own LocalQueue, is found
   there and is `at-gate`. No warning.
2. A gated job past its booking expiry: the cluster-autoscaler ends a booking (BookingExpired,
   CapacityReservationTimeExpired) 10 minutes after its request's Provisioned condition, a
   constant of the autoscaler with no flag. Instead of waiting, the fixture moves the
   Provisioned `lastTransitionTime` of `fv-running`'s request 11 minutes back (status
   subresource, as admin) while worker-1's autoscaler runs, and waits for the autoscaler to set
   BookingExpired on its next scan (about a second). Kueue leaves the admitted job alone; `why`
   says `running` (it reads the request as expired), and `status` raises no warning.
3. `fv-starting` (urgent, 500m) is admitted on worker-1 but its pod, bound to a node, never gets
   ready: the twin's kwok pod-ready Stage skips pods annotated `HELD` (faults.held_not_ready, as
   a slow image pull would hold them). Kueue's PodsReady is False (WaitForStart): `starting`,
   with the time the workers' waitForPodsReady (Kueue's 30 minutes) leaves it counted from its
   Admitted; no warning. Then it is deleted, so the later steps see worker-1's quota as before.
4. The manager's LocalQueue `stopPolicy: Hold`: `fv-backlog` is `queue-stopped` (not waiting for
   quota); no warning (an operator's hold). Resumed.
5. The manager's ClusterQueue `stopPolicy: Hold`: `fv-backlog` is `queue-stopped`, and `status`
   warns InactiveClusterQueue (and nothing else). Resumed.
6. `fv-backlog`'s Workload `spec.active=false`: `deactivated`; no warning.
7. `fv-urgent` (urgent, 16 CPU) preempts `fv-waiting` (the lowest priority): `preempted`, naming
   the urgent Workload; `fv-urgent` is `nominated` (worker-1's quota is taken); no warning.
8. A dispatch set of worker-1 alone for a namespace only the manager has: `fv-orphan-job` is
   nominated to worker-1, where Kueue cannot create its copy: `copy-missing`, and `status`
   warns Undispatched. Its objects are deleted after (the tests run in file order).
9. worker-1 lost (its API server killed, the rest of it frozen: faults.lose_plane). After the
   twin's workerLostTimeout (20 s) the manager evicts `fv-running`, and as its manager Job keeps
   the lost worker's pod count it keeps its quota: past the grace `evicted-holding-quota`, and
   `status` warns EvictedHoldingQuota besides Unreachable and MultiKueueClusterNotActive.

Proven only offline (tests/test_fleetview_why.py), because on this twin they need minutes or a
fault another module already drives:
- `evicted-on-worker` (the manager's side of a copy evicted on a worker): on the real Kueue it
  lasts about a second, the manager dispatching the job again at once
  (test_fleetview_pods_ready.py drives that eviction on a twin whose workers' waitForPodsReady is
  20 s, and `evicted-pods-ready` and `backoff` with it; here the workers keep Kueue's 30 minutes);
- `worker-lost` (before the eviction) is test_fleetview_real.py's: 20 s of workerLostTimeout
  here leave too little room for fleetview's processes on a loaded machine;
  `evicted-worker-lost` lasts only the grace after the eviction (5 s here), and step 8 asks after
  it; `stranded` needs the manager's Kueue killed mid-dispatch, and test_faults_runtime.py,
  which drives that, asks fleetview there;
- `gate-retry` and `gate-stuck`: a ProvisioningRequest the autoscaler fails, for a worker's own
  job and for a dispatched one, are test_fleetview_gate_retry.py's (a twin of their own, whose
  gates retry after 30 s).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from checks.stack import parse_fleet
from config.models import FleetConfig
from fleetview.objects import VISIBILITY_GROUP
from fleetview.rbac import reader_binding, reader_role
from testkit.realtier.autoscaler import TOOL
from testkit.realtier.faults import (
    KUEUE_API,
    cluster_active,
    condition,
    condition_of,
    get_json,
    held_not_ready,
    items,
    lose_plane,
)
from testkit.realtier.fleetview_cli import fleetview
from testkit.realtier.harness import ControlPlane, Report, Tools, apply
from testkit.realtier.jobs import suspended_job, workload_of_job
from testkit.realtier.shared.faults_runtime import (
    MANAGER,
    WORKER_LOST_TIMEOUT,
    dev_twin,
    ready_to_dispatch,
    state,
)
from testkit.realtier.shared.fleetview_real import pending_count
from testkit.realtier.shared.kueue_preemption import FIXTURE, PRIORITY_LABEL
from testkit.realtier.shared.provisioning_gate import provisioning_requests
from testkit.realtier.twin import Submission, load_stack
from testkit.realtier.twin_run import PROVISIONING_API, SimulationTools, Twin
from testkit.realtier.wait import until
from upstream.kueue import MULTIKUEUE_CONTROLLER

pytestmark = [pytest.mark.real]

STACK: Final = "dev"
AUTOSCALED: Final = "worker-1"  # the only worker whose autoscaler runs (until it is paused)
UNSCALED: Final = "worker-2"  # no autoscaler: its ProvisioningRequests stay unanswered
WORKERS: Final = (AUTOSCALED, UNSCALED)
GRACE: Final = "5"  # --stranded-after: shorter than every wait below (see the docstring)
LOST_BOUND: Final = "5"  # --timeout per cluster while worker-1 is lost
WAIT: Final = 90.0  # every wait below; a scale-up on worker-1 is the longest (2 shared cores)
# cluster-autoscaler 1.33.0 processors/provreq/processor.go: `defaultReservationTime` (a constant,
# no flag) after a request's Provisioned condition, BookingExpired=True with this reason
# (provisioningrequest/conditions/conditions.go CapacityReservationTimeExpiredReason).
RESERVATION: Final = dt.timedelta(minutes=10)
BOOKING_EXPIRED: Final = "CapacityReservationTimeExpired"
PODS_READY_TIMEOUT: Final = 1800.0  # the workers' waitForPodsReady: Kueue's 30m (dev and prod)
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"

RUNNING, STARTING, FINISHED, WAITING, GATED, BACKLOG, BEHIND, URGENT, LOCAL = (
    "fv-running",
    "fv-starting",
    "fv-finished",
    "fv-waiting",
    "fv-gated",
    "fv-backlog",
    "fv-behind",
    "fv-urgent",
    "fv-local",
)


def states_fleet() -> FleetConfig:
    """dev's fleet with the example's priority classes, the manager's team-a ClusterQueue
    preempting lower priority within itself, and prod's `kueue.multiKueue` (Incremental)."""
    raw: dict[str, Any] = load_stack(STACK).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    example = yaml.safe_load(FIXTURE.read_text())
    raw["kueue"]["workloadPriorityClasses"] = example["kueue"]["workloadPriorityClasses"]
    raw["kueue"]["multiKueue"] = load_stack("prod").kueue.multi_kueue.model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    [manager] = [c for c in raw["clusters"] if c["role"] == "manager"]
    [cq] = manager["queues"]["clusterQueues"]
    cq["preemption"] = {"withinClusterQueue": "LowerPriority"}
    fleet, _ = parse_fleet(raw, source="dev, priority classes and prod's dispatcher")
    return fleet


@pytest.fixture(scope="module")
def twin(
    tools: Tools, simulation: SimulationTools, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Twin]:
    workdir = tmp_path_factory.mktemp("fleetview-states")
    held = held_not_ready(simulation, workdir / "held-stages")
    # The manager's Kueue serves its visibility API (fv-backlog's position); the workers' not.
    with dev_twin(tools, held, workdir, states_fleet(), visibility=(MANAGER,)) as started:
        yield started


# ---- driving and reading -------------------------------------------------------------------


def _job(
    sub: Submission,
    name: str,
    cpu: str,
    *,
    pods: int = 1,
    priority: str | None = None,
    run_for: str | None = None,
    dispatched: bool = True,
    held: bool = False,
) -> dict[str, Any]:
    labels = {PRIORITY_LABEL: priority} if priority else None
    requests = {"cpu": cpu, "memory": "64Mi"}
    return suspended_job(
        name,
        sub.namespace,
        sub.local_queue,
        requests,
        dispatched=dispatched,
        pods=pods,
        run_for=run_for,
        labels=labels,
        held=held,
    )


def _submit(plane: ControlPlane, *jobs: dict[str, Any]) -> None:
    applied = apply(plane, list(jobs))
    assert not applied.rejected, applied.stderr


def _patch(plane: ControlPlane, kind: str, name: str, body: dict[str, Any], ns: str = "") -> None:
    where = ["-n", ns] if ns else []
    plane.kubectl("patch", kind, name, *where, "--type=merge", "-p", json.dumps(body))


def _pause(plane: ControlPlane, process: str) -> None:
    """SIGSTOP one process of the plane (the twin's teardown resumes every process of it)."""
    [found] = [p for p in plane._processes if p.name == process]  # pyright: ignore[reportPrivateUsage]
    os.killpg(found.popen.pid, signal.SIGSTOP)


def _copy(worker: ControlPlane, ns: str, wl_name: str) -> dict[str, Any] | None:
    """The MultiKueue copy of a manager Workload on a worker (same namespace and name)."""
    return get_json(worker, f"{KUEUE_API}/namespaces/{ns}/workloads/{wl_name}")


def _pods(plane: ControlPlane, ns: str, job: str) -> list[dict[str, Any]]:
    return items(plane, f"/api/v1/namespaces/{ns}/pods?labelSelector={JOB_NAME_LABEL}%3D{job}")


def _held_admitted(plane: ControlPlane, ns: str, wl_name: str) -> bool:
    """fv-starting's copy admitted, its pod bound to a node but Pending, PodsReady False."""
    copy = _copy(plane, ns, wl_name)
    pods = _pods(plane, ns, STARTING)
    return (
        condition(copy, "Admitted") == "True"
        and condition(copy, "PodsReady") == "False"
        and len(pods) == 1
        and bool(pods[0]["spec"].get("nodeName"))
        and pods[0]["status"].get("phase") == "Pending"
    )


def _message(wl: dict[str, Any] | None, kind: str) -> str:
    return str(condition_of(wl, kind).get("message") or "")


def _await_offered(twin: Twin, ns: str, names: dict[str, str]) -> None:
    """fv-waiting and fv-gated hold the manager's quota and are offered to worker-1: the first
    waits for worker-1's quota, the second's copy holds it and waits at the gate."""
    manager, w1 = twin.planes[MANAGER], twin.planes[AUTOSCALED]

    def offered() -> bool:
        return (
            condition(workload_of_job(manager, ns, WAITING), "QuotaReserved") == "True"
            and "insufficient unused quota"
            in _message(_copy(w1, ns, names[WAITING]), "QuotaReserved")
            and condition(_copy(w1, ns, names[GATED]), "QuotaReserved") == "True"
            and bool(provisioning_requests(w1, ns, names[GATED]))
        )

    until(
        offered,
        WAIT,
        f"{WAITING} waiting for {AUTOSCALED}'s quota, {GATED}'s copy at its gate there",
        seen=lambda: state(twin, ns, list(WORKERS)),
    )


def _stamp(when: str) -> dt.datetime:
    return dt.datetime.fromisoformat(when.replace("Z", "+00:00"))


@dataclass(frozen=True)
class Booking:
    """fv-running's ProvisioningRequest on worker-1, its Provisioned time moved back."""

    name: str
    provisioned: dt.datetime  # the autoscaler's own Provisioned time, before the move
    moved_at: dt.datetime  # when the test moved it (whole seconds, as conditions are stamped)


def _move_booking_back(plane: ControlPlane, ns: str, workload: str) -> Booking:
    """Move the Provisioned condition's lastTransitionTime of the Workload's one request back by
    more than the autoscaler's reservation time (status subresource, as admin): on its next
    scan the real autoscaler finds the booking over, as it would 10 minutes after Provisioned."""
    [pr] = provisioning_requests(plane, ns, workload)
    provisioned = condition_of(pr, "Provisioned")
    assert provisioned.get("status") == "True", pr["status"]
    assert not condition_of(pr, "BookingExpired"), pr["status"]  # nothing ended it before the move
    stamp = _stamp(str(provisioned["lastTransitionTime"]))
    moved_at = dt.datetime.now(dt.UTC).replace(microsecond=0)
    assert moved_at - stamp < RESERVATION, stamp  # unmoved, the booking would still run
    back = (stamp - RESERVATION - dt.timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [
        {**c, "lastTransitionTime": back} if c.get("type") == "Provisioned" else c
        for c in pr["status"]["conditions"]
    ]
    # resourceVersion: the patch fails rather than overwrite a condition written since the read.
    body = {
        "metadata": {"resourceVersion": pr["metadata"]["resourceVersion"]},
        "status": {"conditions": conditions},
    }
    name = str(pr["metadata"]["name"])
    plane.kubectl(
        "patch",
        "provisioningrequest",
        name,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(body),
    )
    return Booking(name, stamp, moved_at)


def _booking(plane: ControlPlane, ns: str, name: str) -> dict[str, Any] | None:
    return get_json(plane, f"{PROVISIONING_API}/namespaces/{ns}/provisioningrequests/{name}")


@dataclass
class Fleetview:
    """fleetview as users run it against the twin's planes (JSON), with the stack's timings."""

    planes: dict[str, ControlPlane]
    options: tuple[str, ...] = ()
    exit_code: int = 0  # 2 while a cluster cannot be read

    def run(self, *args: str) -> dict[str, Any]:
        done, _ = fleetview(
            self.planes,
            *args,
            *self.options,
            "--json",
            "--timings-from",
            "prod",
            "--stranded-after",
            GRACE,
        )
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode == self.exit_code, (
            f"fleetview {args}: exit {done.returncode}: {done.stderr}"
        )
        return json.loads(done.stdout)

    def read(self, ns: str, *jobs: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        """`why` of each job and `status`, run side by side (each a process reading every
        plane): what each says, and `status`'s report."""
        commands = [("why", f"{ns}/{j}") for j in jobs] + [("status",)]
        with ThreadPoolExecutor(max_workers=len(commands)) as pool:
            *answers, status = pool.map(lambda c: self.run(*c), commands)
        return dict(zip(jobs, answers, strict=True)), status


def _warnings(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(w["kind"], w["cluster"], w["object"]) for w in status["warnings"]]


def _row_states(status: dict[str, Any]) -> dict[str, str]:
    """`status`'s state of each manager Workload, by Workload name."""
    manager = next(c for c in status["clusters"] if c["name"] == MANAGER)
    return {w["name"]: w["state"] for d in manager["dispatchSets"] for w in d["workloads"]}


VISIBILITY: Final = "/apis/visibility.kueue.x-k8s.io/v1beta2"
READERS: Final = "fleetview-readers"  # the group fleetview's role is bound to here


def _pending_workloads(
    plane: ControlPlane, cq: str, *impersonate: str
) -> list[tuple[str, str, str, int, int]]:
    """`kubectl get --raw` of a ClusterQueue's pendingworkloads through the plane's aggregation
    layer (as admin, or as `--as`/`--as-group` in `impersonate`): namespace, name, LocalQueue
    and the two positions of each item, in Kueue's order."""
    done = plane.kubectl(
        "get", "--raw", f"{VISIBILITY}/clusterqueues/{cq}/pendingworkloads", *impersonate
    )
    return [
        (
            i["metadata"]["namespace"],
            i["metadata"]["name"],
            i["localQueueName"],
            i["positionInClusterQueue"],
            i["positionInLocalQueue"],
        )
        for i in json.loads(done.stdout)["items"]
    ]


def _visibility_verbs(
    plane: ControlPlane, cq: str, listed: list[tuple[str, str, str, int, int]]
) -> str:
    """What the real visibility API asks of a reader: fleetview's read-only role (`python -m
    fleetview rbac`, bound to a group) reads the list admin read; a role granting only `get` on
    clusterqueues/pendingworkloads does too, one granting only `list` is refused (403). A read
    passes twice: the API server authorizes it before its aggregator proxies it, and Kueue's
    visibility server asks the API server again about the proxied user (SubjectAccessReview)."""
    only = {
        verb: {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"fv-visibility-{verb}"},
            "rules": [
                {
                    "apiGroups": [VISIBILITY_GROUP],
                    "resources": ["clusterqueues/pendingworkloads"],
                    "verbs": [verb],
                }
            ],
        }
        for verb in ("get", "list")
    }
    bindings = [
        {
            **reader_binding(group),
            "metadata": {"name": f"fv-visibility-{group}"},
            "roleRef": {**reader_binding(group)["roleRef"], "name": role},
        }
        for group, role in (("fv-get", "fv-visibility-get"), ("fv-list", "fv-visibility-list"))
    ]
    _submit(plane, reader_role(), reader_binding(READERS), *only.values(), *bindings)
    as_reader = ("--as=fleetview-user", f"--as-group={READERS}")
    assert _pending_workloads(plane, cq, *as_reader) == listed
    assert _pending_workloads(plane, cq, "--as=get-user", "--as-group=fv-get") == listed
    refused = plane.kubectl(
        "get",
        "--raw",
        f"{VISIBILITY}/clusterqueues/{cq}/pendingworkloads",
        "--as=list-user",
        "--as-group=fv-list",
        check=False,
    )
    assert refused.returncode != 0, refused.stdout
    assert "forbidden" in refused.stderr.lower(), refused.stderr
    return "read as fleetview's role and with get alone; list alone refused"


def _says(answer: dict[str, Any], state_: str, *parts: str) -> None:
    assert answer["state"] == state_, answer
    for part in parts:
        assert part in answer["verdict"], f"{part!r} not in: {answer['verdict']}"


@dataclass
class Driven:
    """The twin with step 1's jobs in their states."""

    twin: Twin
    sub: Submission  # the manager's dispatched LocalQueue
    fv: Fleetview
    names: dict[str, str]  # job -> its manager Workload's name (fv-local: its Workload on worker-2)
    gate: str  # the provisioning gate (AdmissionCheck) of worker-1's copies
    booking: Booking  # fv-running's request, ended by the autoscaler (BookingExpired)
    took: dict[str, float]

    @property
    def manager(self) -> ControlPlane:
        return self.twin.planes[MANAGER]

    def wl(self, job: str) -> dict[str, Any] | None:
        return workload_of_job(self.manager, self.sub.namespace, job)

    def seen(self) -> str:
        return state(self.twin, self.sub.namespace, list(WORKERS))


def _named(manager: ControlPlane, ns: str, job: str) -> str:
    wl = until(
        lambda: workload_of_job(manager, ns, job),
        WAIT,
        f"[manager] Workload of {job}",
    )
    return str(wl["metadata"]["name"])


def _after_creation_second(obj: dict[str, Any] | None) -> None:
    """Sleep until the wall clock (the loopback planes') is past the second an object was created
    in, so that whatever is created next sorts after it."""
    assert obj is not None
    stamp = str(obj["metadata"]["creationTimestamp"]).replace("Z", "+00:00")
    created = datetime.fromisoformat(stamp).timestamp()
    time.sleep(max(0.0, created + 1.05 - time.time()))


@pytest.fixture(scope="module")
def driven(autoscaler: Path, twin: Twin) -> Driven:
    t0 = time.monotonic()
    sub = ready_to_dispatch(twin, autoscaler, AUTOSCALED)
    manager, w1, w2 = (twin.planes[n] for n in (MANAGER, *WORKERS))
    ns = sub.namespace
    for w in WORKERS:
        until(
            lambda w=w: cluster_active(manager, w) == "True",
            WAIT,
            f"[manager] MultiKueueCluster {w} Active",
        )
    took = {"ready": time.monotonic() - t0}
    names: dict[str, str] = {}

    def seen() -> str:
        return state(twin, ns, list(WORKERS))

    # A job running on worker-1 for the whole module, one whose pod never gets ready there (its
    # step deletes it), and one that finished there.
    _submit(
        manager,
        _job(sub, RUNNING, "500m", priority="urgent", run_for="10m"),
        _job(sub, STARTING, "500m", priority="urgent", held=True),
        _job(sub, FINISHED, "500m"),
    )
    names[RUNNING], names[STARTING], names[FINISHED] = (
        _named(manager, ns, j) for j in (RUNNING, STARTING, FINISHED)
    )
    until(
        lambda: condition(_copy(w1, ns, names[RUNNING]), "PodsReady") == "True",
        WAIT,
        f"[{AUTOSCALED}] {RUNNING}'s copy PodsReady (scaled up by the autoscaler)",
        seen=seen,
    )
    until(
        lambda: condition(workload_of_job(manager, ns, FINISHED), "Finished") == "True",
        WAIT,
        f"[manager] {FINISHED}'s Workload Finished",
        seen=seen,
    )
    until(
        lambda: _held_admitted(w1, ns, names[STARTING]),
        WAIT,
        f"[{AUTOSCALED}] {STARTING}'s copy admitted, its pod bound and not ready",
        seen=seen,
    )
    took["running"] = time.monotonic() - t0

    # fv-running's booking ends: its Provisioned time moved back past the reservation, the
    # running autoscaler sets BookingExpired on its next scan (every 2 s here).
    moved = time.monotonic()
    booking = _move_booking_back(w1, ns, names[RUNNING])
    until(
        lambda: condition(_booking(w1, ns, booking.name), "BookingExpired") == "True",
        WAIT,
        f"[{AUTOSCALED}] {booking.name} BookingExpired (by the autoscaler)",
        seen=lambda: json.dumps((_booking(w1, ns, booking.name) or {}).get("status")),
    )
    took["booking"] = time.monotonic() - moved

    # worker-1's autoscaler stops answering: a copy at its gate stays there.
    _pause(w1, TOOL)
    _submit(
        manager,
        _job(sub, WAITING, "2", pods=8),
        _job(sub, GATED, "3", priority="batch"),
    )
    _submit(w2, _job(sub, LOCAL, "500m", dispatched=False))
    names[WAITING], names[GATED] = (_named(manager, ns, j) for j in (WAITING, GATED))
    _await_offered(twin, ns, names)

    def local_at_gate() -> dict[str, Any] | None:
        wl = workload_of_job(w2, ns, LOCAL)
        if wl is None or condition(wl, "QuotaReserved") != "True":
            return None
        return wl if provisioning_requests(w2, ns, wl["metadata"]["name"]) else None

    local = until(
        local_at_gate,
        WAIT,
        f"[{UNSCALED}] {LOCAL} holds quota, its ProvisioningRequest made",
        seen=seen,
    )
    names[LOCAL] = str(local["metadata"]["name"])
    [gate] = [c["name"] for c in (_copy(w1, ns, names[GATED]) or {})["status"]["admissionChecks"]]

    # The backlog: more than the manager's quota left, fv-backlog then fv-behind, each created in
    # a later second than the Workload before, so that Kueue requeues fv-waiting first whenever
    # they all lose their reservation (the holds below) and orders fv-backlog before fv-behind:
    # Kueue 0.19.2 orders equal priorities by creationTimestamp, whole seconds, and breaks a tie
    # by UID (pkg/cache/queue/cluster_queue.go baseCompareFunc), a coin toss that a quiet
    # machine, driving these jobs within one second, lost half the time. fv-backlog is the head:
    # the steps below wait for its messages. (Made the other way round, in one run the job
    # behind had no QuotaReserved condition after 90 s: Kueue had not tried it yet.)
    before = WAITING
    for job in (BACKLOG, BEHIND):
        _after_creation_second(workload_of_job(manager, ns, before))
        _submit(manager, _job(sub, job, "2", pods=8))
        names[job] = _named(manager, ns, job)
        before = job
    until(
        lambda: (
            "insufficient unused quota"
            in _message(workload_of_job(manager, ns, BACKLOG), "QuotaReserved")
            and pending_count(manager) >= 2
        ),
        WAIT,
        f"[manager] {BACKLOG} pending for quota, {BEHIND} behind it, counted by ClusterQueue "
        f"{sub.cluster_queue}",
        seen=seen,
    )
    took["driven"] = time.monotonic() - t0
    fv = Fleetview(dict(twin.planes))
    return Driven(twin, sub, fv, names, str(gate), booking, took)


# ---- the tests ----------------------------------------------------------------------------


def test_fleetview_names_each_state_of_a_healthy_fleet_under_backlog_with_no_warning(
    driven: Driven, report: Report
) -> None:
    ns, fv, names = driven.sub.namespace, driven.fv, driven.names
    t0 = time.monotonic()
    answers, status = fv.read(ns, RUNNING, FINISHED, WAITING, GATED, BACKLOG, BEHIND, LOCAL)
    took = time.monotonic() - t0
    assert [c["reachable"] for c in status["clusters"]] == [True, True, True], status["clusters"]
    assert status["timings"]["dispatcher"] == "Incremental", status["timings"]
    assert status["warnings"] == [], status["warnings"]
    [queue] = [
        q
        for c in status["clusters"]
        if c["name"] == MANAGER
        for q in c["clusterQueues"]
        if q["name"] == driven.sub.cluster_queue
    ]
    assert queue["pending"] >= 1, queue

    _says(
        answers[RUNNING],
        "running",
        f"It was dispatched to {AUTOSCALED} (AdmissionCheck ",
        f"it is admitted on {AUTOSCALED} and runs there (PodsReady since",
    )
    finished = condition_of(driven.wl(FINISHED), "Finished")
    _says(
        answers[FINISHED],
        "finished",
        f"The job finished ({finished['reason']}): {finished['message']}",
    )
    waiting_on_worker = _message(
        _copy(driven.twin.planes[AUTOSCALED], ns, names[WAITING]), "QuotaReserved"
    )
    incremental = (
        f"the Incremental dispatcher (Pulumi.prod.yaml) adds the next 1 of {UNSCALED} after each "
        "5m00s round in which no worker admits it"
    )
    _says(
        answers[WAITING],
        "nominated",
        f"and waits for a worker to admit it: nominated to {AUTOSCALED} since quota was reserved",
        f"on {AUTOSCALED} it waits for quota: {waiting_on_worker}",
        incremental,
    )
    _says(
        answers[GATED],
        "at-gate",
        f"nominated to {AUTOSCALED} since quota was reserved",
        f"on {AUTOSCALED} it holds quota and waits at its provisioning gate {driven.gate} "
        "(Pending, first attempt); the cluster autoscaler has not answered ProvisioningRequest ",
        incremental,
    )
    # Kueue's own order of the manager's ClusterQueue, read as admin: fv-backlog first.
    cq, local = driven.sub.cluster_queue, driven.sub.local_queue
    listed = _pending_workloads(driven.manager, cq)
    assert listed == [
        (ns, names[BACKLOG], local, 0, 0),
        (ns, names[BEHIND], local, 1, 1),
    ], listed
    _says(
        answers[BACKLOG],
        "pending",
        f"It waits for quota on {MANAGER} (ClusterQueue {cq}): "
        + _message(driven.wl(BACKLOG), "QuotaReserved"),
        f"; 0 Workloads ahead of it in ClusterQueue {cq} (0 in LocalQueue {local}), of 2 pending.",
    )
    _says(
        answers[BEHIND],
        "pending",
        f"It waits for quota on {MANAGER} (ClusterQueue {cq}): ",
        f"; 1 Workload ahead of it in ClusterQueue {cq} (1 in LocalQueue {local}), of 2 pending.",
    )
    assert answers[BACKLOG]["phase"] == "pending", answers[BACKLOG]
    assert answers[LOCAL]["cluster"] == UNSCALED, answers[LOCAL]
    _says(
        answers[LOCAL],
        "at-gate",
        f"It is queued on {UNSCALED}'s own LocalQueue {driven.sub.local_queue} (not through the "
        f"manager). On {UNSCALED} it holds quota and waits at its provisioning gate",
        "(Pending, first attempt); the cluster autoscaler has not answered ProvisioningRequest ",
    )
    # `status` shows `why`'s judgement of every manager Workload.
    rows = _row_states(status)
    for job in (RUNNING, FINISHED, WAITING, GATED, BACKLOG, BEHIND):
        assert rows[names[job]] == answers[job]["state"], (job, rows)
    verbs = _visibility_verbs(driven.manager, cq, listed)
    report(
        f"fleetview states on the twin: running, finished, nominated, at-gate, pending (0 and 1 "
        f"ahead, from Kueue's visibility API; {verbs}) and a worker-only at-gate job, no "
        f"warning; twin ready + jobs driven in {driven.took['driven']:.0f}s (running at "
        f"{driven.took['running']:.0f}s), status and {len(answers)} whys in {took:.1f}s"
    )


def test_fleetview_says_a_gated_job_past_its_booking_expiry_runs_without_a_warning(
    driven: Driven, report: Report
) -> None:
    """fv-running passed worker-1's provisioning gate; the autoscaler has since ended its booking
    (the driven fixture moved the Provisioned time back): the job still runs, and no warning."""
    ns, names, booking = driven.sub.namespace, driven.names, driven.booking
    w1 = driven.twin.planes[AUTOSCALED]
    pr = _booking(w1, ns, booking.name)
    expired = condition_of(pr, "BookingExpired")
    # The real autoscaler ended it, after the move and not before: its reason, its time.
    assert (expired.get("status"), expired.get("reason")) == ("True", BOOKING_EXPIRED), expired
    assert _stamp(str(expired["lastTransitionTime"])) >= booking.moved_at, (expired, booking)
    assert _stamp(str(expired["lastTransitionTime"])) - booking.provisioned < RESERVATION
    # Kueue ignores BookingExpired once the Workload is admitted: v0.19.2
    # pkg/controller/admissionchecks/provisioning/controller.go:642-643 (syncCheckStates:
    # `case isBookingExpired(pr): if !workload.IsAdmitted(wl) {`, no retry, no rejection) and
    # :291-292 (no new ProvisioningRequest for an admitted Workload). The copy stays admitted,
    # its gate Ready, on its first and only request; the manager's Workload stays admitted.
    copy = _copy(w1, ns, names[RUNNING])
    assert condition(copy, "Admitted") == "True", (copy or {}).get("status")
    assert condition(copy, "PodsReady") == "True", (copy or {}).get("status")
    assert [(c["name"], c["state"]) for c in (copy or {})["status"]["admissionChecks"]] == [
        (driven.gate, "Ready")
    ], (copy or {})["status"]["admissionChecks"]
    assert [r["metadata"]["name"] for r in provisioning_requests(w1, ns, names[RUNNING])] == [
        booking.name
    ]
    wl = driven.wl(RUNNING)
    assert condition(wl, "Admitted") == "True", (wl or {}).get("status")
    assert condition(wl, "Evicted") != "True", (wl or {}).get("status")

    answers, status = driven.fv.read(ns, RUNNING)
    answer = answers[RUNNING]
    _says(
        answer,
        "running",
        f"It was dispatched to {AUTOSCALED} (AdmissionCheck ",
        f"it is admitted on {AUTOSCALED} and runs there (PodsReady since",
    )
    assert "expired" not in answer["verdict"], answer["verdict"]
    # fleetview read the ended booking (its fact says so) and judged the job by its Workload.
    [fact] = [f for f in answer["facts"] if f["object"] == f"ProvisioningRequest {booking.name}"]
    assert (fact["cluster"], fact["says"].split(":")[0]) == (AUTOSCALED, "expired"), fact
    [row] = [
        r
        for c in status["clusters"]
        if c["name"] == AUTOSCALED
        for r in c["provisioningRequests"]
        if r["name"] == booking.name
    ]
    assert (row["state"], row["reason"]) == ("expired", BOOKING_EXPIRED), row
    assert status["warnings"] == [], status["warnings"]
    assert _row_states(status)[names[RUNNING]] == "running", _row_states(status)
    report(
        f"fleetview past a booking's expiry: {booking.name}'s Provisioned time moved back "
        f"{RESERVATION.seconds // 60 + 1} min, BookingExpired ({BOOKING_EXPIRED}) from the "
        f"autoscaler {driven.took['booking']:.1f}s later; still admitted, running, no warning"
    )


def test_fleetview_says_an_admitted_job_whose_pods_are_not_ready_is_starting_without_a_warning(
    driven: Driven, report: Report
) -> None:
    """fv-starting is admitted on worker-1, its pod bound there and not ready: `starting`, with
    the time waitForPodsReady leaves it, and no warning. Then it is deleted (the later steps
    count worker-1's quota without it)."""
    ns, names, manager = driven.sub.namespace, driven.names, driven.manager
    w1 = driven.twin.planes[AUTOSCALED]
    try:
        copy = _copy(w1, ns, names[STARTING])
        ready = condition_of(copy, "PodsReady")
        assert condition(copy, "Admitted") == "True", (copy or {}).get("status")
        assert ready.get("status") == "False", ready
        [pod] = _pods(w1, ns, STARTING)
        assert (pod["status"]["phase"], bool(pod["spec"].get("nodeName"))) == ("Pending", True)
        admitted = _stamp(str(condition_of(copy, "Admitted")["lastTransitionTime"]))
        before = dt.datetime.now(dt.UTC)
        answers, status = driven.fv.read(ns, STARTING)
        after = dt.datetime.now(dt.UTC)
        answer = answers[STARTING]
        _says(
            answer,
            "starting",
            f"It was dispatched to {AUTOSCALED} (AdmissionCheck ",
            f"it is admitted on {AUTOSCALED} ",
            f"and its pods are not all ready yet ({ready['reason']}: {ready['message']}); "
            "waitForPodsReady (30m00s) evicts it in ",
        )
        # The time left counts from the copy's Admitted (Kueue's WaitForStart), read when
        # fleetview ran (whole seconds either way).
        found = re.search(r"evicts it in (\d+)m(\d\d)s if they are not", answer["verdict"])
        assert found, answer["verdict"]
        left = int(found[1]) * 60 + int(found[2])
        low = PODS_READY_TIMEOUT - (after - admitted).total_seconds() - 1
        high = PODS_READY_TIMEOUT - (before - admitted).total_seconds() + 1
        assert low <= left <= high, (left, low, high)
        assert status["warnings"] == [], status["warnings"]
        assert _row_states(status)[names[STARTING]] == "starting", _row_states(status)
    finally:
        manager.kubectl("delete", "job", STARTING, "-n", ns, "--wait=false")
    until(
        lambda: _copy(w1, ns, names[STARTING]) is None and driven.wl(STARTING) is None,
        WAIT,
        f"{STARTING}'s Workload gone from the manager and its copy from {AUTOSCALED}",
        seen=driven.seen,
    )
    report(
        f"fleetview on a job whose pods are not ready: {STARTING} starting "
        f"({ready['reason']}), {left}s of waitForPodsReady left, no warning"
    )


def test_fleetview_says_a_held_local_queue_stops_the_job_not_quota_without_a_warning(
    driven: Driven, report: Report
) -> None:
    manager, ns, local = driven.manager, driven.sub.namespace, driven.sub.local_queue

    def held() -> str:
        return _message(driven.wl(BACKLOG), "QuotaReserved")

    _patch(manager, "localqueue", local, {"spec": {"stopPolicy": "Hold"}}, ns)
    try:
        until(
            lambda: f"LocalQueue {local} is" in held(),
            WAIT,
            f"[manager] {BACKLOG}: held by its LocalQueue",
            seen=lambda: f"{held()}\n{driven.seen()}",
        )
        message = held()
        answers, status = driven.fv.read(ns, BACKLOG)
        answer = answers[BACKLOG]
    finally:
        _patch(manager, "localqueue", local, {"spec": {"stopPolicy": "None"}}, ns)
    # The hold also returned the jobs holding quota but not admitted to the queue: they are
    # offered to worker-1 again once it is resumed.
    _await_offered(driven.twin, ns, driven.names)
    _says(
        answer,
        "queue-stopped",
        f"because its queue does not admit: {message} (LocalQueue {local} stopPolicy Hold)",
        "It is not waiting for quota",
    )
    assert status["warnings"] == [], status["warnings"]
    report(f"fleetview on a held LocalQueue: {BACKLOG}'s condition said {message!r}")


def test_fleetview_warns_of_a_stopped_cluster_queue_and_says_it_holds_the_job(
    driven: Driven, report: Report
) -> None:
    manager, ns, cq = driven.manager, driven.sub.namespace, driven.sub.cluster_queue
    path = f"{KUEUE_API}/clusterqueues/{cq}"
    _patch(manager, "clusterqueue", cq, {"spec": {"stopPolicy": "Hold"}})
    try:
        # Kueue 0.19.2 rewrites the condition of the Workloads the stop touches (those holding
        # quota); a Workload already pending may keep the scheduler's message (seen on this twin),
        # so `why` must read the ClusterQueue's own Active condition too.
        until(
            lambda: condition(get_json(manager, path), "Active") == "False",
            WAIT,
            f"[manager] ClusterQueue {cq} inactive",
            seen=lambda: json.dumps((get_json(manager, path) or {}).get("status")),
        )
        message = _message(driven.wl(BACKLOG), "QuotaReserved")
        answers, status = driven.fv.read(ns, BACKLOG)
        answer = answers[BACKLOG]
    finally:
        _patch(manager, "clusterqueue", cq, {"spec": {"stopPolicy": "None"}})
    _says(
        answer,
        "queue-stopped",
        f"because its queue does not admit: ClusterQueue {cq} is",
        "It is not waiting for quota",
    )
    assert _warnings(status) == [("InactiveClusterQueue", MANAGER, cq)], status["warnings"]
    report(f"fleetview on a stopped ClusterQueue: {BACKLOG}'s own condition said {message!r}")
    until(
        lambda: condition(get_json(manager, path), "Active") == "True",
        WAIT,
        f"[manager] ClusterQueue {cq} Active again",
    )
    _await_offered(driven.twin, ns, driven.names)


def test_fleetview_says_a_deactivated_job_waits_for_spec_active_without_a_warning(
    driven: Driven,
) -> None:
    manager, ns = driven.manager, driven.sub.namespace
    _patch(manager, "workload", driven.names[BACKLOG], {"spec": {"active": False}}, ns)
    until(
        lambda: str(condition_of(driven.wl(BACKLOG), "Evicted").get("reason", "")).startswith(
            "Deactivated"
        ),
        WAIT,
        f"[manager] {BACKLOG} evicted as deactivated",
        seen=driven.seen,
    )
    answers, status = driven.fv.read(ns, BACKLOG)
    answer = answers[BACKLOG]
    _says(
        answer,
        "deactivated",
        "The Workload is deactivated (spec.active=false): "
        + _message(driven.wl(BACKLOG), "Evicted"),
        "until spec.active is true",
    )
    assert status["warnings"] == [], status["warnings"]


def test_fleetview_names_the_workload_that_preempted_a_job_without_a_warning(
    driven: Driven,
) -> None:
    manager, ns, names = driven.manager, driven.sub.namespace, driven.names
    _submit(manager, _job(driven.sub, URGENT, "2", pods=8, priority="urgent"))
    names[URGENT] = _named(manager, ns, URGENT)
    until(
        lambda: (
            (wl := driven.wl(WAITING))
            and condition_of(wl, "Evicted").get("reason") == "Preempted"
            and condition(wl, "QuotaReserved") == "False"
            and condition(driven.wl(URGENT), "QuotaReserved") == "True"
            and _copy(driven.twin.planes[AUTOSCALED], ns, names[URGENT]) is not None
        ),
        WAIT,
        f"[manager] {WAITING} preempted by {URGENT} and its quota released; {URGENT} offered "
        f"to {AUTOSCALED}",
        seen=driven.seen,
    )
    answers, status = driven.fv.read(ns, WAITING)
    answer = answers[WAITING]
    _says(
        answer,
        "preempted",
        f"It was preempted on {MANAGER} ",
        f"by Workload {ns}/{names[URGENT]} (Job {URGENT}, on {MANAGER}, ClusterQueue "
        f"{driven.sub.cluster_queue}), for prioritization in the ClusterQueue.",
        "Now it is back in its queue",
    )
    assert "holds quota" not in answer["verdict"], answer["verdict"]
    assert status["warnings"] == [], status["warnings"]
    rows = _row_states(status)
    assert rows[names[WAITING]] == "preempted", rows
    assert rows[names[GATED]] == "at-gate", rows
    # worker-1's quota is taken (fv-running, fv-gated): the urgent job waits there, in its round.
    assert rows[names[URGENT]] == "nominated", rows


# ---- a copy no worker can take ------------------------------------------------------------------

ORPHAN: Final = "fv-orphan"  # namespace, LocalQueue, ClusterQueue, check and config: manager only
ORPHAN_JOB: Final = "fv-orphan-job"
ORPHAN_WORKER: Final = AUTOSCALED


def _orphan_objects(manager: ControlPlane, sub: Submission) -> list[dict[str, Any]]:
    """A dispatch set of one worker (worker-1) for a namespace only the manager has: its own
    MultiKueueConfig and AdmissionCheck, and a ClusterQueue shaped as the program renders the
    manager's (its quota, its check renamed, no cohort) for that namespace alone."""
    live = get_json(manager, f"{KUEUE_API}/clusterqueues/{sub.cluster_queue}")
    assert live is not None
    checks = [
        c["name"]
        for c in (live["spec"].get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    ] + list(live["spec"].get("admissionChecks") or [])
    assert len(checks) == 1, checks
    spec = json.loads(json.dumps(live["spec"]).replace(f'"{checks[0]}"', f'"{ORPHAN}"'))
    for key in ("cohort", "cohortName", "fairSharing", "preemption"):
        spec.pop(key, None)
    spec["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": ORPHAN}}
    api = "kueue.x-k8s.io/v1beta2"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ORPHAN}},
        {
            "apiVersion": api,
            "kind": "MultiKueueConfig",
            "metadata": {"name": ORPHAN},
            "spec": {"clusters": [ORPHAN_WORKER]},
        },
        {
            "apiVersion": api,
            "kind": "AdmissionCheck",
            "metadata": {"name": ORPHAN},
            "spec": {
                "controllerName": MULTIKUEUE_CONTROLLER,
                "parameters": {
                    "apiGroup": "kueue.x-k8s.io",
                    "kind": "MultiKueueConfig",
                    "name": ORPHAN,
                },
            },
        },
        {"apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": ORPHAN}, "spec": spec},
        {
            "apiVersion": api,
            "kind": "LocalQueue",
            "metadata": {"name": ORPHAN, "namespace": ORPHAN},
            "spec": {"clusterQueue": ORPHAN},
        },
    ]


def _delete_orphans(manager: ControlPlane) -> None:
    """The job, then its Workload (no finalizer holds a queue), then the rest; each gone."""
    gone = ("--ignore-not-found", "--wait=true", "--timeout=60s")
    manager.kubectl("delete", "job", ORPHAN_JOB, "-n", ORPHAN, *gone, check=False)
    manager.kubectl("delete", "workloads", "--all", "-n", ORPHAN, *gone, check=False)
    for kind, where in (
        ("localqueue", ("-n", ORPHAN)),
        ("clusterqueue", ()),
        ("admissioncheck", ()),
        ("multikueueconfig", ()),
        ("namespace", ()),
    ):
        manager.kubectl("delete", kind, ORPHAN, *where, *gone, check=False)
    assert get_json(manager, f"{KUEUE_API}/clusterqueues/{ORPHAN}") is None, "left behind"


def test_fleetview_says_a_job_no_nominated_worker_holds_a_copy_of_is_copy_missing_and_warns(
    driven: Driven, report: Report
) -> None:
    """Kueue 0.19.2 creates a Workload's copies as it nominates workers
    (multikueue/workload.go nominateAndSynchronizeWorkers); one it cannot create (here: the
    namespace is on the manager alone) leaves the job nominated with no copy anywhere and an
    error in the manager's log. `why` says `copy-missing` and where to look; `status` warns."""
    manager, worker = driven.manager, driven.twin.planes[ORPHAN_WORKER]
    try:
        _submit(manager, *_orphan_objects(manager, driven.sub))
        until(
            lambda: (
                condition(get_json(manager, f"{KUEUE_API}/admissionchecks/{ORPHAN}"), "Active")
                == "True"
            ),
            WAIT,
            f"[manager] AdmissionCheck {ORPHAN} Active",
        )
        job = suspended_job(
            ORPHAN_JOB, ORPHAN, ORPHAN, {"cpu": "500m", "memory": "64Mi"}, dispatched=True
        )
        _submit(manager, job)

        def nominated() -> dict[str, Any] | None:
            w = workload_of_job(manager, ORPHAN, ORPHAN_JOB)
            names = ((w or {}).get("status") or {}).get("nominatedClusterNames") or []
            return w if ORPHAN_WORKER in names else None

        wl = until(nominated, WAIT, f"[manager] {ORPHAN_JOB} nominated to {ORPHAN_WORKER}")
        wl_name = str(wl["metadata"]["name"])
        # Past fleetview's grace (a one-worker set: no dispatcher round on top).
        time.sleep(float(GRACE) + 2.0)
        assert _copy(worker, ORPHAN, wl_name) is None, "the copy exists: nothing is missing"
        answers, status = driven.fv.read(ORPHAN, ORPHAN_JOB)
    finally:
        _delete_orphans(manager)
    answer = answers[ORPHAN_JOB]
    _says(answer, "copy-missing", f"nominated to {ORPHAN_WORKER}", "none of them holds a copy")
    warned = [w for w in status["warnings"] if ORPHAN in w["object"]]
    assert [(w["kind"], w["cluster"]) for w in warned] == [("Undispatched", MANAGER)], warned
    assert "but no copy on any of them" in warned[0]["message"], warned
    report(f"fleetview on a copy no worker could take: why {answer['state']}; status warned")


def test_fleetview_follows_a_job_on_a_lost_worker_to_its_eviction_still_holding_quota(
    driven: Driven, report: Report
) -> None:
    """Last: worker-1 stays lost (the twin's teardown stops it as it is)."""
    twin, manager, ns, names = driven.twin, driven.manager, driven.sub.namespace, driven.names
    fv = dataclasses.replace(driven.fv, options=("--timeout", LOST_BOUND), exit_code=2)
    t0 = time.monotonic()
    lose_plane(twin.planes[AUTOSCALED], twin.kueues[AUTOSCALED])
    until(
        lambda: cluster_active(manager, AUTOSCALED) == "False",
        WAIT,
        f"[manager] MultiKueueCluster {AUTOSCALED} Active=False",
        seen=lambda: str(cluster_active(manager, AUTOSCALED)),
    )
    inactive = time.monotonic() - t0
    # `worker-lost`, before the eviction, is test_fleetview_real's (the session planes' 2m
    # workerLostTimeout leaves room for fleetview's processes on a loaded machine; 20 s here
    # does not: a read took 16 s beside a full run).
    gone = {("Unreachable", AUTOSCALED, "-"), ("MultiKueueClusterNotActive", MANAGER, AUTOSCALED)}

    # After the twin's workerLostTimeout the manager evicts it; its manager Job keeps the lost
    # worker's pod count, so Kueue 0.19.2 does not release its quota.
    def evicted() -> bool:
        wl = driven.wl(RUNNING)
        return condition(wl, "Evicted") == "True" and condition(wl, "QuotaReserved") == "True"

    until(
        evicted,
        WORKER_LOST_TIMEOUT + WAIT,
        f"[manager] {RUNNING} evicted after workerLostTimeout, still holding quota",
        seen=driven.seen,
    )
    seen_evicted = time.monotonic()
    time.sleep(float(GRACE) + 1.0)  # past the grace: a warning now, not a wait
    answers, status = fv.read(ns, RUNNING)
    held = answers[RUNNING]
    _says(
        held,
        "evicted-holding-quota",
        f"evicted on {MANAGER} ",
        "because the worker it ran on was lost for longer than workerLostTimeout",
        "It still holds quota",
        "zero the Job's stale pod counts",
    )
    assert set(_warnings(status)) == {
        *gone,
        ("EvictedHoldingQuota", MANAGER, f"{ns}/{names[RUNNING]}"),
    }, status["warnings"]
    report(
        f"fleetview on a lost worker: {AUTOSCALED} inactive on the manager after {inactive:.1f}s, "
        f"{RUNNING} evicted {seen_evicted - t0:.1f}s after the loss (workerLostTimeout "
        f"{WORKER_LOST_TIMEOUT:.0f}s), named evicted-holding-quota with its warning"
    )
