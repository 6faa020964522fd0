"""What tests/realtier/test_faults_deploy.py shares with other test modules (they import it from
here, not from a test module): faults_job and what they need."""

from __future__ import annotations

from typing import Any, Final

from testkit.realtier.e2e import TEAM
from testkit.realtier.jobs import suspended_job

# Each Job asks 8 CPU: the manager's team-a (32 CPU) admits 4, each worker's (16 CPU) runs 2;
# the other 2 wait in the manager's queue through the upgrade.
JOB_CPU: Final = 8


def faults_job(name: str) -> dict[str, Any]:
    requests = {"cpu": str(JOB_CPU), "memory": "1Gi"}
    return suspended_job(name, TEAM, TEAM, requests, dispatched=True)
