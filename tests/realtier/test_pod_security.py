"""A real API server enforces the Pod Security level the program puts on a team namespace.

On the worker-1 plane (conftest's `planes`): the dev stack's team-a Namespace as rendered
(restricted), then a privileged pod is refused by the PodSecurity admission plugin, and the pod
of the Job the real tier dispatches is admitted. Server-side dry runs: nothing is left behind.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from builders.fleet import kueue_objects
from config.models import FleetConfig
from testkit.realtier.harness import ControlPlane, Report, apply
from testkit.realtier.shared.twin_jobs import job_for
from testkit.realtier.twin import Submission

pytestmark = pytest.mark.real

WORKER = "worker-1"
TEAM = "team-a"


def _pod(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": TEAM},
        "spec": spec,
    }


def test_a_privileged_pod_is_refused_in_a_team_namespace(
    planes: dict[str, ControlPlane], dev_fleet: FleetConfig, report: Report
) -> None:
    plane = planes[WORKER]
    (namespace,) = [
        m.obj for m in kueue_objects(dev_fleet)[WORKER] if m.kind == "Namespace" and m.name == TEAM
    ]
    applied = apply(plane, [namespace])
    assert not applied.rejected, f"team namespace refused: {applied.stderr}"

    sub = Submission(WORKER, TEAM, TEAM, TEAM, dispatched=False, gpus=0)
    admitted = copy.deepcopy(job_for(sub, "psa-admitted")["spec"]["template"]["spec"])
    privileged = copy.deepcopy(admitted)
    privileged.pop("securityContext")
    privileged["containers"][0]["securityContext"] = {"privileged": True}
    privileged["hostNetwork"] = True

    refused = apply(plane, [_pod(privileged, "psa-privileged")], dry_run=True)
    assert refused.rejected == ["pod/psa-privileged"], (
        "waited for the API server to refuse a privileged pod in a restricted team namespace; "
        f"it accepted {refused.accepted} ({refused.stderr})"
    )
    assert "violates PodSecurity" in refused.stderr, refused.stderr
    assert "restricted" in refused.stderr, refused.stderr

    ok = apply(plane, [_pod(admitted, "psa-admitted")], dry_run=True)
    assert not ok.rejected, f"the real tier's Job pod was refused: {ok.stderr}"
    report(
        f"[{WORKER}] {TEAM}: privileged pod refused by PodSecurity (restricted); Job pod admitted"
    )
