"""What tests/realtier/test_kueue_contention.py shares with other test modules (they import it from
here, not from a test module): contention_job and what they need."""

from __future__ import annotations

from typing import Any, Final

from testkit.realtier.jobs import suspended_job

JOB_CPU: Final = 500  # millicores per Job (one pod)
RUN_FOR: Final = "10m"  # every pod outlives the test: no Job finishes while it is watched


def contention_job(team: str, name: str) -> dict[str, Any]:
    return suspended_job(
        name, team, team, {"cpu": f"{JOB_CPU}m", "memory": "64Mi"}, run_for=RUN_FOR
    )
