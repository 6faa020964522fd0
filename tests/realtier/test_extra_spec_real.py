"""`extraSpec` on a live API server and a live Kueue (docs/kueue-queueing.md).

Offline, preflight checks each `extraSpec` against the pinned CRDs with its own schema walker and
CEL twins (tests/test_extra_spec.py). Here the staging example (tests/fixtures/staging-extra-spec
.yaml) runs on a twin with the pinned Kueue CRDs and the real Kueue v0.19.2, and the claims meet
the systems they are about:

- the fields set through `extraSpec` are stored as written (a field the API server did not know
  would be pruned without a word; these are not), and Kueue acts on them: team-b's
  `stopPolicy: Hold` makes its ClusterQueue inactive with Kueue's reason `Stopped`, and a Job
  queued there waits while team-a's is admitted;
- every `extraSpec` preflight refuses for its schema (tests/test_extra_spec.py BAD_FIELDS), sent
  to the API server as the builders would render it without the checks, is refused there too
  (server-side dry run, strict field validation: kubectl's default), so preflight invents no rule
  and the API server does not let through what preflight stops.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, Final

import pytest

from testkit.realtier.faults import condition, get_json
from testkit.realtier.harness import FIELD_MANAGER, ControlPlane, Report, Tools, apply, object_ref
from testkit.realtier.jobs import workload_of_job
from testkit.realtier.shared.kueue_contention import contention_job
from testkit.realtier.twin_run import SimulationTools, Twin, fixture_twin
from testkit.realtier.wait import holds, until
from testkit.shared.extra_spec import BAD_FIELDS, FIXTURE, render_unchecked
from upstream.kueue import QUEUE_LABEL

pytestmark = [pytest.mark.real]

CLUSTER: Final = "staging"
KUEUE_API: Final = "/apis/kueue.x-k8s.io/v1beta2"
ACTIVE_TIMEOUT: Final = 60.0
ADMIT_TIMEOUT: Final = 60.0
HELD_FOR: Final = 5.0  # team-b's Job stays unadmitted this long after team-a's was admitted
# `stopPolicy: null` is refused by preflight because the API server *drops* a null, not because
# it refuses it: the one BAD_FIELDS entry the server accepts (the CRD's default stands).
DROPPED_BY_THE_SERVER: Final = {"stopPolicy": None}


@pytest.fixture(scope="module")
def twin(
    tools: Tools, simulation: SimulationTools, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Twin]:
    """One twin for the module: the refusals are server-side dry runs, which store nothing, and
    the other test only adds Jobs in its teams' namespaces, which no dry run reads; either order
    judges the same objects."""
    work = tmp_path_factory.mktemp("extra-spec")
    with fixture_twin("staging-extra-spec", FIXTURE, tools, simulation, work) as started:
        yield started


def _cq(plane: ControlPlane, name: str) -> dict[str, Any]:
    return get_json(plane, f"{KUEUE_API}/clusterqueues/{name}") or {}


def _active(plane: ControlPlane, name: str) -> dict[str, Any] | None:
    """The ClusterQueue's Active condition, once Kueue has written one."""
    conds = (_cq(plane, name).get("status") or {}).get("conditions") or []
    return next((c for c in conds if c.get("type") == "Active"), None)


def test_extra_spec_fields_are_stored_and_kueue_acts_on_them(twin: Twin, report: Report) -> None:
    plane = twin.planes[CLUSTER]
    team_a, team_b = _cq(plane, "team-a"), _cq(plane, "team-b")
    # Stored as written: the API server kept the hatch's fields (it prunes unknown ones).
    assert team_a["spec"]["flavorFungibility"] == {
        "whenCanBorrow": "TryNextFlavor",
        "whenCanPreempt": "TryNextFlavor",
        "preference": "PreemptionOverBorrowing",
    }, team_a["spec"]
    assert team_b["spec"].get("stopPolicy") == "Hold", team_b["spec"]

    t0 = time.monotonic()
    a_active = until(
        lambda: _active(plane, "team-a"), ACTIVE_TIMEOUT, "team-a's ClusterQueue has Active"
    )
    b_active = until(
        lambda: _active(plane, "team-b"), ACTIVE_TIMEOUT, "team-b's ClusterQueue has Active"
    )
    assert a_active["status"] == "True", a_active
    assert (b_active["status"], b_active["reason"]) == ("False", "Stopped"), b_active

    jobs = [contention_job("team-a", "extra-spec-a"), contention_job("team-b", "extra-spec-b")]
    for job in jobs:
        assert job["metadata"]["labels"][QUEUE_LABEL] == job["metadata"]["namespace"]
    applied = apply(plane, jobs)
    assert applied.rejected == [], applied.stderr

    def admitted(namespace: str, job: str) -> bool:
        wl = workload_of_job(plane, namespace, job)
        return bool(wl) and condition(wl, "Admitted") == "True"

    until(
        lambda: admitted("team-a", "extra-spec-a"),
        ADMIT_TIMEOUT,
        "team-a's Job admitted",
        seen=lambda: workload_of_job(plane, "team-a", "extra-spec-a"),
    )
    t_admitted = time.monotonic() - t0
    until(
        lambda: workload_of_job(plane, "team-b", "extra-spec-b"),
        ADMIT_TIMEOUT,
        "team-b's Job has a Workload",
    )
    holds(
        lambda: not admitted("team-b", "extra-spec-b"),
        HELD_FOR,
        "team-b's Job stays unadmitted (its ClusterQueue holds)",
        seen=lambda: workload_of_job(plane, "team-b", "extra-spec-b"),
    )
    held = workload_of_job(plane, "team-b", "extra-spec-b") or {}
    report(
        f"extraSpec on a live Kueue: fields stored as written; team-b Active=False "
        f"({b_active['reason']}: {b_active.get('message', '')}); team-a's Job admitted "
        f"{t_admitted:.1f}s after the check began, team-b's still waiting {HELD_FOR:.0f}s later "
        f"(QuotaReserved={condition(held, 'QuotaReserved')})"
    )


def test_what_preflight_refuses_in_extra_spec_the_api_server_refuses(
    twin: Twin, report: Report
) -> None:
    plane = twin.planes[CLUSTER]
    refused: list[str] = []
    let_through: list[str] = []
    dropped: list[str] = []
    for where, extra, expected in BAD_FIELDS:
        obj = render_unchecked(where, extra)
        result = apply(plane, [obj], dry_run=True)
        label = f"{where[0]}[{where[1]}] {json.dumps(extra)[:70]} ({expected.split(': ', 1)[-1]})"
        if extra == DROPPED_BY_THE_SERVER:
            # Accepted, and stored without the field: what preflight's message says.
            assert result.rejected == [], result.stderr
            shown = plane.kubectl(
                "apply", "--server-side", "--dry-run=server", f"--field-manager={FIELD_MANAGER}",
                "-o", "json", "-f", "-", stdin=json.dumps(obj),
            )  # fmt: skip
            # The null is dropped and the CRD's default (`None`) stands: not the `Hold` the
            # example had, and not what a user writing null may have meant.
            stored = json.loads(shown.stdout)["spec"].get("stopPolicy")
            assert stored == "None", shown.stdout
            dropped.append(label)
        elif result.rejected == [object_ref(obj)]:
            refused.append(label)
        else:
            let_through.append(f"{label}: {result.stderr or 'accepted'}")
    assert let_through == [], "the API server took what preflight refuses:\n" + "\n".join(
        let_through
    )
    report(
        f"extraSpec refusals on a live API server: {len(refused)} of {len(BAD_FIELDS)} refused "
        f"by it too; {len(dropped)} accepted with the null dropped, as preflight says "
        "(stopPolicy: null; the CRD's default None stored)"
    )
