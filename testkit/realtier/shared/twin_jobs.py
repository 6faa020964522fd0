"""What tests/realtier/test_twin_jobs.py shares with other test modules (they import it from here,
not from a test module): PODS, job_for and what they need."""

from __future__ import annotations

from typing import Any, Final

from testkit.realtier.jobs import suspended_job
from testkit.realtier.twin import (
    GPU_RESOURCE,
    Submission,
)

PODS: Final = 2  # parallelism = completions: more than one pod to place


def job_for(sub: Submission, name: str, run_for: str | None = None) -> dict[str, Any]:
    """A suspended Job for the queue (no Kueue webhook here suspends it); on the manager it is
    `managedBy` MultiKueue, as Kueue's webhook would make it."""
    requests = {"cpu": "500m", "memory": "256Mi"}
    if sub.gpus:
        requests[GPU_RESOURCE] = str(sub.gpus)
    return suspended_job(
        name,
        sub.namespace,
        sub.local_queue,
        requests,
        dispatched=sub.dispatched,
        pods=PODS,
        run_for=run_for,
    )
