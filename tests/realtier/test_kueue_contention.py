"""Fair sharing under contention on a twin: the documented example's weights hold when both teams
saturate.

The fleet is tests/fixtures/fair-share.yaml, the example of docs/kueue-queueing.md, as the
program renders it (its Configuration with `fairSharing` on, its Cohort tree, ClusterQueues and
LocalQueues), twinned on one plane with the real Kueue, scheduler and kwok nodes. team-a
(`fairSharing.weight: "3"`) and team-b (`"1"`) share cohort `research`; each owns 8 CPU and the
root cohort `org` owns 8 more that nobody owns. The root's CPU is withheld first (its
nominalQuota set to 0); both teams submit more 500m Jobs than they can run, interleaved, in one
go, and each fills its own 8 CPU with Jobs still pending; then the root's 8 CPU come back in one
write. Asserted: the cohort's quota fills up (24 CPU) with Jobs of both teams still pending,
and, watched for a while after, the 8 unowned CPUs are borrowed 3:1:
team-a 6 CPU (12 Jobs) and team-b 2 (4 Jobs), within one Job either way (team-a between 5.5 and
6.5 CPU: a ratio between 2.2 and 4.3), at every sample once Kueue has settled on that
split (its fair-sharing preemption first; a split seen on three polls in a row).

What it does not show: a ratio of admissions over time with Jobs finishing (each team's
nominal 8 CPU counts equally there, so admissions go about 14:10, not 3:1); the pods run for
longer than the test, so what is measured is the admission decision itself.

Cheap: one plane; 56 one-pod Jobs; nothing waits for a pod to finish.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from testkit.realtier.harness import ControlPlane, Report, Tools, apply
from testkit.realtier.shared.kueue_contention import JOB_CPU, contention_job
from testkit.realtier.twin_run import SimulationTools, Twin, fixture_twin
from testkit.realtier.wait import until

pytestmark = [pytest.mark.real]

FIXTURE: Final = Path(__file__).resolve().parents[1] / "fixtures" / "fair-share.yaml"
CLUSTER: Final = "solo"
KUEUE_API: Final = "/apis/kueue.x-k8s.io/v1beta2"
FLAVOR: Final = "batch"
# Each team submits more than it can hold: team-a holds 14 CPU (28 Jobs), team-b 10 (20).
JOBS: Final = {"team-a": 32, "team-b": 24}
WEIGHTS: Final = {"team-a": 3, "team-b": 1}
UNOWNED_CPU: Final = 8000  # millicores the root cohort `org` owns (the fixture)
ROOT_COHORT: Final = "org"
TOLERANCE: Final = JOB_CPU  # one Job either way
SATURATED_TIMEOUT: Final = 120.0
WATCH: Final = 10.0
SETTLE_SAMPLES: Final = 3
POLL: Final = 0.5
_OWN_CPU: Final = {"team-a": 8000, "team-b": 8000}  # each team's nominalQuota (the fixture)


@pytest.fixture
def twin(tools: Tools, simulation: SimulationTools, tmp_path: Path) -> Iterator[Twin]:
    with fixture_twin("fair-share", FIXTURE, tools, simulation, tmp_path) as started:
        yield started


def _millis(quantity: str | None) -> int:
    if not quantity:
        return 0
    if quantity.endswith("m"):
        return int(quantity[:-1])
    return int(float(quantity) * 1000)


def _reserved_cpu(plane: ControlPlane) -> dict[str, int]:
    """Per team ClusterQueue: the CPU (millicores) of its Workloads holding quota, from one list
    of every Workload (one consistent snapshot: two ClusterQueues' statuses read one after the
    other can straddle a preemption and add up to more than the cohort has)."""
    status, body = plane.get(f"{KUEUE_API}/workloads")
    assert status == 200, f"workloads: HTTP {status}"
    reserved = dict.fromkeys(JOBS, 0)
    for wl in json.loads(body).get("items") or []:
        st = wl.get("status") or {}
        holds = any(
            c.get("type") == "QuotaReserved" and c.get("status") == "True"
            for c in st.get("conditions") or []
        )
        admission = st.get("admission") or {}
        team = admission.get("clusterQueue")
        if not holds or team not in reserved:
            continue
        for podset in admission.get("podSetAssignments") or []:
            reserved[team] += _millis((podset.get("resourceUsage") or {}).get("cpu"))
    return reserved


def _usage(plane: ControlPlane) -> dict[str, dict[str, int]]:
    """Per team ClusterQueue: cpu `total` and `borrowed` (millicores) of the Workloads holding
    quota (`_reserved_cpu`), and `pending` Workloads and `weightedShare` from its status."""
    reserved = _reserved_cpu(plane)
    own = dict(_OWN_CPU)
    out: dict[str, dict[str, int]] = {}
    for team in JOBS:
        status, body = plane.get(f"{KUEUE_API}/clusterqueues/{team}")
        cq: dict[str, Any] = (json.loads(body).get("status") or {}) if status == 200 else {}
        out[team] = {
            "total": reserved[team],
            "borrowed": max(0, reserved[team] - own[team]),
            "pending": int(cq.get("pendingWorkloads") or 0),
            "weightedShare": int((cq.get("fairSharing") or {}).get("weightedShare") or 0),
        }
    return out


def _wait_usage(
    plane: ControlPlane,
    done: Callable[[dict[str, dict[str, int]]], bool],
    what: str,
    timeout: float,
) -> dict[str, dict[str, int]]:
    """The teams' usage once `done` holds for it (polled)."""
    last: list[dict[str, dict[str, int]]] = [{}]

    def reached() -> list[dict[str, dict[str, int]]] | None:
        last[0] = _usage(plane)
        return [last[0]] if done(last[0]) else None  # a list: truthy even for an empty usage

    return until(reached, timeout, what, seen=lambda: last[0], poll=POLL)[0]


def _root_cpu(plane: ControlPlane, quota: str) -> str:
    """Set the root cohort's CPU nominalQuota; returns the one it had."""
    status, body = plane.get(f"{KUEUE_API}/cohorts/{ROOT_COHORT}")
    assert status == 200, f"cohort {ROOT_COHORT}: HTTP {status}"
    groups = json.loads(body)["spec"]["resourceGroups"]
    paths = [
        (g, f, r, res["nominalQuota"])
        for g, group in enumerate(groups)
        for f, flavor in enumerate(group["flavors"])
        if flavor["name"] == FLAVOR
        for r, res in enumerate(flavor["resources"])
        if res["name"] == "cpu"
    ]
    assert len(paths) == 1, f"cohort {ROOT_COHORT}: no single {FLAVOR} cpu quota in {groups}"
    g, f, r, before = paths[0]
    patch = [
        {
            "op": "replace",
            "path": f"/spec/resourceGroups/{g}/flavors/{f}/resources/{r}/nominalQuota",
            "value": quota,
        }
    ]
    plane.kubectl(
        "patch", "cohorts.kueue.x-k8s.io", ROOT_COHORT, "--type=json", "-p", json.dumps(patch)
    )
    return str(before)


def test_unowned_quota_is_borrowed_three_to_one_when_both_teams_saturate(
    twin: Twin, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    plane = twin.planes[CLUSTER]
    cluster = next(c for c in twin.fleet.clusters if c.name == CLUSTER)
    weights = {
        cq.name: float(cq.fair_sharing.weight)
        for cq in cluster.queues.cluster_queues
        if cq.fair_sharing is not None and cq.fair_sharing.weight is not None
    }
    assert weights == WEIGHTS, f"the fixture's weights changed: {weights}"
    capacity = sum(
        _millis(str(r.nominal_quota))
        for group in [
            *(g for cq in cluster.queues.cluster_queues for g in cq.resource_groups),
            *(g for co in cluster.queues.cohorts for g in co.resource_groups),
        ]
        for f in group.flavors
        for r in f.resources
        if r.name == "cpu"
    )
    assert capacity == 2 * 8000 + UNOWNED_CPU, f"the fixture's CPU quota changed: {capacity}m"
    own = {
        cq.name: sum(
            _millis(str(r.nominal_quota))
            for g in cq.resource_groups
            for f in g.flavors
            for r in f.resources
            if r.name == "cpu"
        )
        for cq in cluster.queues.cluster_queues
    }
    assert own == _OWN_CPU, f"the fixture's team quotas changed: {own}"
    # Phase 1: the root cohort's CPU withheld (nominalQuota 0), every Job submitted: each team
    # fills its own 8 CPU and keeps Jobs pending. Admission order then no longer depends on
    # which team's Workloads Kueue happened to create first (on a loaded machine, a team whose
    # next Workload is not created yet loses its turn): phase 2 makes the unowned CPU appear in
    # one write, while both teams have heads pending, and the weights alone decide who gets it.
    original = _root_cpu(plane, "0")
    longest = max(JOBS.values())
    jobs = [
        contention_job(team, f"{team}-{i}")
        for i in range(longest)
        for team in JOBS
        if i < JOBS[team]
    ]
    t0 = time.monotonic()
    applied = apply(plane, jobs)
    assert not applied.rejected, applied.stderr
    owned = capacity - UNOWNED_CPU
    seen = _wait_usage(
        plane,
        lambda u: all(v["total"] == owned // 2 and v["pending"] > 0 for v in u.values()),
        f"each team at its own {owned // 2}m with Jobs pending (root cohort's CPU withheld)",
        SATURATED_TIMEOUT,
    )
    t_owned = time.monotonic() - t0
    # Phase 2: the root's 8 CPU back, in one write.
    _root_cpu(plane, original)
    t1 = time.monotonic()
    seen = _wait_usage(
        plane,
        lambda u: sum(v["total"] for v in u.values()) == capacity,
        f"the cohort's {capacity}m CPU in use once the root's {UNOWNED_CPU}m are back",
        SATURATED_TIMEOUT,
    )
    t_full = time.monotonic() - t1
    expected = UNOWNED_CPU * WEIGHTS["team-a"] // sum(WEIGHTS.values())

    def shared_by_weight(u: dict[str, dict[str, int]]) -> bool:
        borrowed = {t: v["borrowed"] for t, v in u.items()}
        return (
            sum(borrowed.values()) == UNOWNED_CPU
            and abs(borrowed["team-a"] - expected) <= TOLERANCE
        )

    # The cohort fills before fair sharing has converged: Kueue admits whoever's head comes
    # first, then preempts toward the weights. Settled means the weights' split seen on
    # SETTLE_SAMPLES polls in a row; only then does the watch start, and from there on every
    # sample must hold it. Usage is read from one list of the Workloads holding quota, not
    # from the two ClusterQueues' statuses: read one after the other, those straddled a
    # preemption and added up to 8500m of 8000m (under load, after settling, twice).
    settled_run = 0

    def settled(u: dict[str, dict[str, int]]) -> bool:
        nonlocal settled_run
        settled_run = settled_run + 1 if shared_by_weight(u) else 0
        return settled_run >= SETTLE_SAMPLES

    seen = _wait_usage(
        plane,
        settled,
        f"the {UNOWNED_CPU}m unowned CPU borrowed team-a {expected}m +- {TOLERANCE}m, "
        f"{SETTLE_SAMPLES} polls in a row",
        SATURATED_TIMEOUT,
    )
    t_settled = time.monotonic() - t1
    samples: list[dict[str, dict[str, int]]] = []
    watch_until = time.monotonic() + WATCH
    while time.monotonic() < watch_until:
        seen = _usage(plane)
        samples.append(seen)
        borrowed = {t: u["borrowed"] for t, u in seen.items()}
        assert sum(borrowed.values()) == UNOWNED_CPU, (
            f"the {UNOWNED_CPU}m unowned CPU not all borrowed while both saturate: {seen}"
        )
        assert abs(borrowed["team-a"] - expected) <= TOLERANCE, (
            f"team-a borrows {borrowed['team-a']}m of {UNOWNED_CPU}m, not {expected}m "
            f"(weights {WEIGHTS}) within {TOLERANCE}m; seen {seen}"
        )
        assert all(u["pending"] > 0 for u in seen.values()), f"a team stopped saturating: {seen}"
        time.sleep(POLL)
    mean = {t: sum(s[t]["borrowed"] for s in samples) / len(samples) for t in ("team-a", "team-b")}
    ratio = mean["team-a"] / mean["team-b"] if mean["team-b"] else float("inf")
    line = (
        f"fair sharing (tests/fixtures/fair-share.yaml, weights 3:1): {sum(JOBS.values())} Jobs "
        f"of {JOB_CPU}m, each team at its own quota in {t_owned:.1f}s, the cohort full "
        f"{t_full:.1f}s after the root's CPU came back and split by weight after "
        f"{t_settled:.1f}s; unowned {UNOWNED_CPU // 1000} CPU "
        f"borrowed team-a {mean['team-a'] / 1000:.2f} : team-b {mean['team-b'] / 1000:.2f} "
        f"(ratio {ratio:.2f}, {len(samples)} samples over {WATCH:.0f}s); totals "
        f"{ {t: u['total'] for t, u in seen.items()} }, weighted shares "
        f"{ {t: u['weightedShare'] for t, u in seen.items()} }; twin {twin.timings}"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)
