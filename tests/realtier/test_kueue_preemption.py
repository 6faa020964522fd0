"""Priority preemption under contention on a twin: an urgent job takes its team's quota back from a
lower-priority job of the other team; the preempted job is requeued and completes later, and no job
runs to completion twice.

The fleet is tests/fixtures/priority.yaml, the priority example of docs/kueue-queueing.md, as the
program renders it (two ClusterQueues of cohort `research`, 4 CPU each, both with
`reclaimWithinCohort: LowerPriority` and `withinClusterQueue: LowerPriority`;
WorkloadPriorityClasses `urgent` 1000 and `batch` 100; no fair sharing, so Kueue's classic
preemption decides), twinned on one plane with the real Kueue v0.19.2, kube-scheduler and kwok
nodes.

1. team-b fills the whole cohort with `batch` Jobs (8 x 1 CPU: its own 4 CPU and the 4 of team-a
   it borrows); their pods stay Running for RUN_FOR (kwok's pod-complete delay).
2. Control: a `batch` Job of team-a is not admitted and preempts nothing. Its quota is borrowed,
   but only by jobs of its own priority, and `LowerPriority` lets it take back only from lower.
3. An `urgent` Job of team-a: admitted by preempting exactly one team-b Workload (Kueue's
   conditions on it: Evicted=True `Preempted` and Preempted=True `InCohortReclamation`, whose
   message names the urgent Workload's UID), while the control Job still waits.
4. The preempted Job is requeued (suspended, its quota released, admitted again once team-b's
   other Jobs finish) and completes; every Job completes exactly once (succeeded = 1, seen by a
   watch, its Workload Finished), and the preempted Workload records one eviction by preemption.

Without `reclaimWithinCohort` (Kueue's default: Never) step 3 fails: the urgent Job waits for a
team-b Job to finish like any other.

On a MultiKueue manager (dev's twin: a manager and two workers, the example's priority classes,
the manager's team-a queue cut to one Job and `withinClusterQueue: LowerPriority`): a batch Job
dispatched and Running on a worker is preempted on the manager by an urgent one (Preempted
`InClusterQueue`); its copy (Job and Workload) is removed from that worker before it completes
there; it is admitted again once the urgent Job is done, and both complete once, each on one
worker.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from checks.stack import parse_fleet
from config.models import FleetConfig
from testkit.realtier.faults import KUEUE_API, condition, items
from testkit.realtier.harness import ControlPlane, Report, Tools, apply
from testkit.realtier.jobs import suspended_job
from testkit.realtier.shared.faults_runtime import (
    MANAGER,
    completed_once,
    job,
    queues_active,
    running_pods,
    state,
    workloads,
)
from testkit.realtier.shared.kueue_preemption import FIXTURE, PRIORITY_LABEL
from testkit.realtier.shared.twin_jobs import PODS, job_for
from testkit.realtier.twin import load_stack, submissions
from testkit.realtier.twin_run import (
    JobWatch,
    SimulationTools,
    Twin,
    fixture_twin,
)
from testkit.realtier.wait import until

pytestmark = [pytest.mark.real]

CLUSTER: Final = "solo"
FLAVOR: Final = "batch"
LENDER: Final = "team-a"  # owns 4 CPU, idle at first: team-b borrows them
BORROWER: Final = "team-b"
JOB_CPU: Final = 1000  # millicores per Job (one pod)
COHORT_CPU: Final = 8000  # both teams' nominal quota (the fixture)
LOW_JOBS: Final = COHORT_CPU // JOB_CPU  # team-b's batch Jobs: the whole cohort
RUN_FOR: Final = "30s"  # each pod's Running time: past the preemption, short enough to wait for
URGENT_RUN_FOR: Final = "5s"
# Kueue's reason on a Workload that fits no flavor (flavorassigner.go).
NO_QUOTA: Final = "insufficient unused quota"
CONTROL_HELD: Final = 5.0  # seconds the control Job is watched preempting nothing
POLL: Final = 0.25
# Bounded waits (2 shared cores, a busy machine): what each is for is in its message.
SATURATED_TIMEOUT: Final = 120.0
PREEMPT_TIMEOUT: Final = 60.0
COMPLETE_TIMEOUT: Final = 240.0


@pytest.fixture
def twin(tools: Tools, simulation: SimulationTools, tmp_path: Path) -> Iterator[Twin]:
    with fixture_twin("priority", FIXTURE, tools, simulation, tmp_path) as started:
        yield started


def _job(team: str, name: str, priority: str, run_for: str) -> dict[str, Any]:
    requests = {"cpu": f"{JOB_CPU}m", "memory": "64Mi"}
    return suspended_job(
        name, team, team, requests, run_for=run_for, labels={PRIORITY_LABEL: priority}
    )


def _millis(quantity: str | None) -> int:
    if not quantity:
        return 0
    if quantity.endswith("m"):
        return int(quantity[:-1])
    return int(float(quantity) * 1000)


def _cpu(plane: ControlPlane, team: str) -> tuple[int, int, int]:
    """team's ClusterQueue: cpu in use and borrowed (millicores), Workloads pending."""
    status, body = plane.get(f"{KUEUE_API}/clusterqueues/{team}")
    cq: dict[str, Any] = (json.loads(body).get("status") or {}) if status == 200 else {}
    cpu = next(
        (
            r
            for f in cq.get("flavorsUsage") or []
            if f.get("name") == FLAVOR
            for r in f.get("resources") or []
            if r.get("name") == "cpu"
        ),
        {},
    )
    return (
        _millis(cpu.get("total")),
        _millis(cpu.get("borrowed")),
        int(cq.get("pendingWorkloads") or 0),
    )


# ---- what the Workloads went through -----------------------------------------------------------


@dataclass
class Seen:
    """One Workload as sampled: its Job, uid, and each change of its conditions, when seen."""

    job: str
    uid: str
    # (seen at, type, status, reason) whenever a condition's status or reason changed
    changes: list[tuple[float, str, str, str]] = field(
        default_factory=list[tuple[float, str, str, str]]
    )
    messages: dict[str, str] = field(default_factory=dict[str, str])  # type -> last True message
    last: dict[str, Any] = field(default_factory=dict[str, Any])

    def when(self, kind: str, status: str = "True", reason: str | None = None) -> list[float]:
        """Every time the condition was seen turning to this state (any reason when None)."""
        return [
            t
            for t, k, s, r in self.changes
            if k == kind and s == status and (reason is None or r == reason)
        ]

    def message(self, kind: str) -> str:
        """The condition's message as last sampled."""
        return next(
            (
                str(c.get("message"))
                for c in (self.last.get("status") or {}).get("conditions") or []
                if c["type"] == kind
            ),
            "",
        )


class Workloads:
    """Every Workload of the teams, sampled at each poll: transient conditions are kept."""

    def __init__(
        self, plane: ControlPlane, namespaces: tuple[str, ...] = (LENDER, BORROWER)
    ) -> None:
        self.plane = plane
        self.namespaces = namespaces
        self.by_job: dict[str, Seen] = {}  # "<namespace>/<job>"

    def sample(self) -> dict[str, Seen]:
        now = time.monotonic()
        for team in self.namespaces:
            for wl in items(self.plane, f"{KUEUE_API}/namespaces/{team}/workloads"):
                owner = next(
                    (
                        o["name"]
                        for o in wl["metadata"].get("ownerReferences") or []
                        if o.get("kind") == "Job"
                    ),
                    None,
                )
                if owner is None:
                    continue
                seen = self.by_job.setdefault(f"{team}/{owner}", Seen(owner, wl["metadata"]["uid"]))
                before = {
                    c["type"]: (c["status"], c.get("reason"))
                    for c in (seen.last.get("status") or {}).get("conditions") or []
                }
                seen.last = wl
                for c in (wl.get("status") or {}).get("conditions") or []:
                    kind, state = str(c["type"]), (str(c["status"]), str(c.get("reason")))
                    if before.get(kind) != state:
                        seen.changes.append((now, kind, *state))
                    if c["status"] == "True":
                        seen.messages[kind] = str(c.get("message"))
        return self.by_job

    def probe(self, predicate: Callable[[dict[str, Seen]], bool]) -> Callable[[], bool]:
        return lambda: predicate(self.sample())

    def describe(self) -> str:
        lines: list[str] = []
        for key, seen in sorted(self.sample().items()):
            conds = [
                (c["type"], c["status"], c.get("reason"))
                for c in (seen.last.get("status") or {}).get("conditions") or []
            ]
            lines.append(f"{key}: {conds}")
        return "\n".join(lines)


def _name(key: str) -> str:
    return key.split("/")[1]


def _submit(plane: ControlPlane, jobs: list[dict[str, Any]]) -> None:
    applied = apply(plane, jobs)
    assert not applied.rejected, applied.stderr


def _admitted(seen: Seen | None) -> bool:
    return seen is not None and condition(seen.last, "Admitted") == "True"


def _evicted(by_job: dict[str, Seen]) -> dict[str, Seen]:
    return {k: s for k, s in by_job.items() if s.when("Evicted")}


def _job_status(plane: ControlPlane, key: str) -> dict[str, Any]:
    ns, name = key.split("/")
    status, body = plane.get(f"/apis/batch/v1/namespaces/{ns}/jobs/{name}")
    return json.loads(body) if status == 200 else {}


def _completed_once(plane: ControlPlane, key: str) -> bool:
    obj = _job_status(plane, key)
    return condition(obj, "Complete") == "True" and (obj.get("status") or {}).get("succeeded") == 1


# ---- the test ----------------------------------------------------------------------------------


def test_an_urgent_job_preempts_a_batch_job_borrowing_its_quota_and_the_batch_job_completes_later(
    twin: Twin, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    plane = twin.planes[CLUSTER]
    cluster = next(c for c in twin.fleet.clusters if c.name == CLUSTER)
    policies = {cq.name: cq.preemption for cq in cluster.queues.cluster_queues}
    assert all(
        p is not None and p.reclaim_within_cohort == "LowerPriority" for p in policies.values()
    ), f"the fixture's preemption changed: {policies}"
    classes = {c.name: c.value for c in twin.fleet.kueue.workload_priority_classes}
    assert classes == {"urgent": 1000, "batch": 100}, classes

    wls = Workloads(plane)
    low = [f"{BORROWER}/low-{i}" for i in range(LOW_JOBS)]
    control, urgent = f"{LENDER}/batch-a", f"{LENDER}/urgent-a"
    every = [*low, control, urgent]
    watch = JobWatch(plane)
    try:
        # 1. team-b fills the cohort: its 4 CPU and team-a's 4, all batch.
        t0 = time.monotonic()
        _submit(plane, [_job(BORROWER, _name(k), "batch", RUN_FOR) for k in low])
        until(
            wls.probe(
                lambda s: (
                    all(_admitted(s.get(k)) for k in low)
                    and _cpu(plane, BORROWER)[:2] == (COHORT_CPU, COHORT_CPU // 2)
                )
            ),
            SATURATED_TIMEOUT,
            f"all {LOW_JOBS} batch Jobs of {BORROWER} admitted: {COHORT_CPU}m in use, "
            f"{COHORT_CPU // 2}m of it borrowed from {LENDER}",
            seen=lambda: f"{BORROWER} {_cpu(plane, BORROWER)}\n{wls.describe()}",
        )
        t_full = time.monotonic() - t0

        # 2. Control: team-a's own batch Job does not take its quota back from equal priority.
        _submit(plane, [_job(LENDER, _name(control), "batch", URGENT_RUN_FOR)])
        until(
            wls.probe(lambda s: control in s and NO_QUOTA in s[control].message("QuotaReserved")),
            PREEMPT_TIMEOUT,
            f"{control} (batch) pending for want of quota",
            seen=wls.describe,
        )
        pending_message = wls.by_job[control].message("QuotaReserved")
        held_until = time.monotonic() + CONTROL_HELD
        while time.monotonic() < held_until:
            seen = wls.sample()
            assert not _evicted(seen), (
                f"a batch Job of {LENDER} preempted a batch Job of {BORROWER} (reclaimWithinCohort "
                f"LowerPriority must not): {wls.describe()}"
            )
            assert not _admitted(seen.get(control)), f"{control} admitted: {wls.describe()}"
            time.sleep(POLL)

        # 3. The urgent Job: admitted by preempting one batch Job of team-b.
        t_urgent = time.monotonic()
        _submit(plane, [_job(LENDER, _name(urgent), "urgent", URGENT_RUN_FOR)])
        until(
            wls.probe(lambda s: _admitted(s.get(urgent))),
            PREEMPT_TIMEOUT,
            f"{urgent} (urgent) admitted",
            seen=wls.describe,
        )
        t_admitted = time.monotonic()
        seen = wls.sample()
        evicted = _evicted(seen)
        assert len(evicted) == 1, (
            f"not exactly one batch Job of {BORROWER} evicted for {urgent}: {list(evicted)}\n"
            + wls.describe()
        )
        [(victim, preempted)] = evicted.items()
        assert victim in low, f"{victim} evicted, not a batch Job of {BORROWER}"
        assert preempted.when("Evicted", "True", "Preempted"), preempted.changes
        assert preempted.when("Preempted", "True", "InCohortReclamation"), (
            f"{victim}: no Preempted=True InCohortReclamation seen: {preempted.changes}"
        )
        message = preempted.messages.get("Preempted", "")
        assert seen[urgent].uid in message, (
            f"{victim}'s Preempted message does not name {urgent} ({seen[urgent].uid}): {message}"
        )
        assert not _admitted(seen.get(control)), (
            f"{control} (batch) admitted before the urgent Job: {wls.describe()}"
        )
        t_evicted = min(preempted.when("Evicted"))

        # 4. Everything completes once; the victim after it was admitted again.
        until(
            wls.probe(lambda _: all(_completed_once(plane, k) for k in every)),
            COMPLETE_TIMEOUT,
            f"all {len(every)} Jobs complete, each once",
            seen=lambda: (
                f"incomplete: {[k for k in every if not _completed_once(plane, k)]}\n"
                + wls.describe()
            ),
        )
        t_done = time.monotonic()
        seen = wls.sample()
    finally:
        watch.stop()

    for key in every:
        assert watch.completed(*key.split("/")), f"{key} never seen Complete by the watch"
        succeeded = [
            int(f[1])
            for f in (ln.split() for ln in watch.lines)
            if f[:1] == [key] and f[1:2] and f[1].isdigit()
        ]
        assert max(succeeded, default=0) == 1, f"{key} seen with succeeded {succeeded}"
        assert condition(seen[key].last, "Finished") == "True", f"{key}: Workload not Finished"
    victim_wl = seen[victim]
    readmitted = [t for t in victim_wl.when("QuotaReserved") if t > t_evicted]
    assert readmitted, f"{victim}: not seen admitted again after its eviction: {victim_wl.changes}"
    others = {k: s.when("Evicted") for k, s in seen.items() if k != victim and s.when("Evicted")}
    assert not others, f"evicted besides {victim}: {others}"
    after = next(c for c in victim_wl.last["status"]["conditions"] if c["type"] == "Preempted")
    assert after["status"] == "False", after  # reset when it got quota again
    assert seen[urgent].uid in after["message"], after  # "Previously: Preempted to ..."
    evictions = (victim_wl.last["status"].get("schedulingStats") or {}).get("evictions") or []
    assert [(e["reason"], e["count"]) for e in evictions] == [("Preempted", 1)], evictions
    ended = {k: (_job_status(plane, k).get("status") or {}) for k in (urgent, victim)}
    assert ended[victim]["completionTime"] > ended[urgent]["completionTime"], (
        f"{victim} did not complete after {urgent}: {ended}"
    )
    line = (
        f"priority preemption (tests/fixtures/priority.yaml, reclaimWithinCohort LowerPriority): "
        f"{LOW_JOBS} batch Jobs of {BORROWER} x {JOB_CPU}m filled the {COHORT_CPU // 1000}-CPU "
        f"cohort in {t_full:.1f}s; a batch Job of {LENDER} preempted nothing in "
        f"{CONTROL_HELD:.0f}s ('{pending_message}'); the urgent Job admitted "
        f"{t_admitted - t_urgent:.1f}s after submission, {victim} evicted "
        f"{t_evicted - t_urgent:.1f}s after it (Preempted InCohortReclamation), admitted again "
        f"{readmitted[0] - t_urgent:.1f}s after; all {len(every)} Jobs complete once "
        f"{t_done - t_urgent:.1f}s after (the victim's Job: failed="
        f"{ended[victim].get('failed', 0)}, its eviction count {evictions}); twin {twin.timings}"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)


# ---- on a MultiKueue manager -------------------------------------------------------------------

MANAGER_CPU: Final = "1"  # the manager's team-a quota: one dispatched Job (PODS x 500m) at a time
MK_RUN_FOR: Final = "40s"  # the batch Job's pods on its worker: past the preemption
COPY_GONE_TIMEOUT: Final = 60.0


def multikueue_fleet() -> FleetConfig:
    """dev's fleet with the example's priority classes, its manager's team-a ClusterQueue cut to
    one Job's quota and preempting lower priority within it (`withinClusterQueue:
    LowerPriority`), and the workers' provisioning gates off (no autoscaler here: their pools
    start at maxCount). Everything else, MultiKueue included, is dev's."""
    raw: dict[str, Any] = load_stack("dev").model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    example = yaml.safe_load(FIXTURE.read_text())
    raw["kueue"]["workloadPriorityClasses"] = example["kueue"]["workloadPriorityClasses"]
    for cluster in raw["clusters"]:
        queues = cluster["queues"]
        if cluster["role"] == "manager":
            [cq] = queues["clusterQueues"]
            cq["preemption"] = {"withinClusterQueue": "LowerPriority"}
            for group in cq["resourceGroups"]:
                for flavor in group["flavors"]:
                    flavor["resources"] = [
                        {"name": "cpu", "nominalQuota": MANAGER_CPU},
                        {"name": "memory", "nominalQuota": "1Gi"},
                    ]
        else:
            queues.pop("provisioningGates", None)
            for cq in queues["clusterQueues"]:
                cq.pop("provisioningGate", None)
    fleet, _ = parse_fleet(raw, source="dev, priority on the manager")
    return fleet


@pytest.fixture
def mk_twin(tools: Tools, simulation: SimulationTools, tmp_path: Path) -> Iterator[Twin]:
    with fixture_twin("dev-priority", multikueue_fleet(), tools, simulation, tmp_path) as started:
        yield started


def _copies(twin: Twin, ns: str, name: str) -> dict[str, list[str]]:
    """Per worker, what of the Job's MultiKueue copy is there (its Job, its Workload)."""
    out: dict[str, list[str]] = {}
    for worker in (w for w in twin.planes if w != MANAGER):
        plane = twin.planes[worker]
        found = ["Job"] if job(plane, ns, name) else []
        found += [
            "Workload"
            for w in workloads(plane, ns)
            if any(o.get("name") == name for o in w["metadata"].get("ownerReferences") or [])
        ]
        if found:
            out[worker] = found
    return out


def test_a_dispatched_job_preempted_on_the_manager_loses_its_worker_copy_and_completes_later(
    mk_twin: Twin, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    twin = mk_twin
    manager = twin.planes[MANAGER]
    workers = [w for w in twin.planes if w != MANAGER]
    queues_active(twin)
    [sub] = [s for s in submissions(twin.fleet) if s.dispatched]
    ns = sub.namespace
    victim, urgent = "batch-0", "urgent-0"
    wls = Workloads(manager, (ns,))
    watches = {w: JobWatch(twin.planes[w]) for w in workers}

    def labelled(name: str, priority: str, run_for: str) -> dict[str, Any]:
        obj = job_for(sub, name, run_for)
        obj["metadata"]["labels"][PRIORITY_LABEL] = priority
        return obj

    try:
        t0 = time.monotonic()
        _submit(manager, [labelled(victim, "batch", MK_RUN_FOR)])
        until(
            lambda: any(len(running_pods(twin.planes[w], ns, victim)) == PODS for w in workers),
            SATURATED_TIMEOUT,
            f"{victim} dispatched and its {PODS} pods Running on a worker",
            seen=lambda: state(twin, ns, workers),
        )
        first = next(w for w in workers if running_pods(twin.planes[w], ns, victim))
        t_running = time.monotonic() - t0

        t_urgent = time.monotonic()
        _submit(manager, [labelled(urgent, "urgent", URGENT_RUN_FOR)])
        until(
            wls.probe(
                lambda s: bool(s.get(f"{ns}/{victim}") and s[f"{ns}/{victim}"].when("Evicted"))
            ),
            PREEMPT_TIMEOUT,
            f"{victim} preempted on the manager for {urgent}",
            seen=lambda: wls.describe() + "\n" + state(twin, ns, workers),
        )
        t_evicted = time.monotonic()
        preempted = wls.by_job[f"{ns}/{victim}"]
        assert preempted.when("Evicted", "True", "Preempted"), preempted.changes
        assert preempted.when("Preempted", "True", "InClusterQueue"), (
            f"{victim}: no Preempted=True InClusterQueue seen: {preempted.changes}"
        )
        until(
            lambda: first not in _copies(twin, ns, victim),
            COPY_GONE_TIMEOUT,
            f"{victim}'s copy removed from {first} (its Job and Workload there)",
            seen=lambda: f"copies {_copies(twin, ns, victim)}\n" + state(twin, ns, workers),
        )
        t_gone = time.monotonic()
        assert not watches[first].completed(ns, victim), f"{victim} completed on {first} first"
        until(
            wls.probe(lambda _: all(completed_once(twin, ns, n) for n in (urgent, victim))),
            COMPLETE_TIMEOUT,
            f"{urgent} and {victim} each completed once on the manager",
            seen=lambda: wls.describe() + "\n" + state(twin, ns, workers),
        )
        t_done = time.monotonic()
        seen = wls.sample()
    finally:
        for watch in watches.values():
            watch.stop()

    ran_on = {n: [w for w in workers if watches[w].completed(ns, n)] for n in (urgent, victim)}
    assert all(len(ws) == 1 for ws in ran_on.values()), (
        f"not completed on one worker each: {ran_on}"
    )
    victim_wl = seen[f"{ns}/{victim}"]
    readmitted = [t for t in victim_wl.when("QuotaReserved") if t > t_evicted]
    assert readmitted, f"{victim}: not admitted again after its eviction: {victim_wl.changes}"
    message = victim_wl.messages.get("Preempted", "")
    assert seen[f"{ns}/{urgent}"].uid in message, f"{victim}: {message}"
    evictions = (victim_wl.last["status"].get("schedulingStats") or {}).get("evictions") or []
    assert [(e["reason"], e["count"]) for e in evictions] == [("Preempted", 1)], evictions
    line = (
        f"priority preemption on a MultiKueue manager (dev's twin, manager team-a quota "
        f"{MANAGER_CPU} CPU, withinClusterQueue LowerPriority): {victim} (batch) Running on "
        f"{first} {t_running:.1f}s after submission; {urgent} submitted, {victim} preempted "
        f"on the manager {t_evicted - t_urgent:.1f}s later (Preempted InClusterQueue), its copy "
        f"gone from {first} {t_gone - t_urgent:.1f}s after, admitted again "
        f"{readmitted[0] - t_urgent:.1f}s after; both complete once {t_done - t_urgent:.1f}s "
        f"after ({urgent} on {ran_on[urgent][0]}, {victim} on {ran_on[victim][0]}); twin "
        f"{twin.timings}"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)
