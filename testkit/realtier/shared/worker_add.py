"""What tests/realtier/test_worker_add.py shares with other test modules (they import it from here,
not from a test module): freeze_autoscalers and what they need."""

from __future__ import annotations

import os
import signal

from testkit.realtier.autoscaler import TOOL as AUTOSCALER
from testkit.realtier.twin_run import (
    Twin,
)


def freeze_autoscalers(twin: Twin, *clusters: str) -> list[int]:
    """SIGSTOP the clusters' cluster-autoscalers: their pools stop growing, and their
    provisioning gates answer no new job (on AKS: pools at their maximum, or a region out of
    capacity). The twin's stop resumes them (faults.thaw_all)."""
    frozen: list[int] = []
    for cluster in clusters:
        for process in twin.planes[cluster]._processes:
            if process.name == AUTOSCALER and process.popen.poll() is None:
                os.killpg(process.popen.pid, signal.SIGSTOP)
                frozen.append(process.popen.pid)
    assert frozen, f"no cluster-autoscaler running on {clusters}"
    return frozen
