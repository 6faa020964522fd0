"""The Kueue timings a stack runs with, which say how long a job may wait before it is a problem.

`status` and `why` judge waits against these: the MultiKueue dispatcher (AllAtOnce, or Incremental
with its step size and Kueue's fixed 5-minute round), `workerLostTimeout`, and each cluster's
waitForPodsReady timeout. They come from the stack's own file (`Pulumi.<stack>.yaml`, read by the
program's loader, offline) when fleetview knows the stack, else from Kueue v0.19.2's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from builders.kueue import wait_for_pods_ready, wait_for_pods_ready_on
from builders.multikueue import k8s_name
from config.errors import ConfigError
from config.loader import read_stack_file
from config.schema import parse_model
from upstream.k8s import go_duration_seconds
from upstream.kueue import (
    DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT,
    DEFAULT_WORKER_LOST_TIMEOUT,
    INCREMENTAL_DEFAULT_STEP_SIZE,
    INCREMENTAL_ROUND_SECONDS,
)

# How long Kueue may take to do what it does at once (nominate a reserved job's workers, release
# an evicted job's quota once its pods are gone) before a wait is worth a warning.
DEFAULT_GRACE: Final = 300.0


@dataclass(frozen=True)
class Timings:
    """The waits Kueue itself explains; anything longer is worth a look."""

    source: str = "Kueue v0.19.2 defaults"
    dispatcher: str = "AllAtOnce"
    step_size: int = INCREMENTAL_DEFAULT_STEP_SIZE
    # pkg/controller/workloaddispatcher/incrementaldispatcher.go incrementalDispatcherRoundTimeout
    round_seconds: float = float(INCREMENTAL_ROUND_SECONDS)
    worker_lost_timeout: float = go_duration_seconds(DEFAULT_WORKER_LOST_TIMEOUT)
    # waitForPodsReady timeout per cluster (k8s name); None: off there. Unlisted clusters get
    # `default_pods_ready_timeout` (Kueue 0.19 turns it on by default, 30m).
    pods_ready_timeout: Mapping[str, float | None] = field(default_factory=dict[str, float | None])
    default_pods_ready_timeout: float | None = go_duration_seconds(
        DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT
    )
    note: str = ""

    def pods_ready_timeout_on(self, cluster: str) -> float | None:
        return self.pods_ready_timeout.get(k8s_name(cluster), self.default_pods_ready_timeout)

    def dispatch_bound(self, workers: int) -> float:
        """Seconds the dispatcher may take to have offered a job to every worker of its set."""
        if self.dispatcher != "Incremental" or workers <= self.step_size:
            return 0.0
        rounds = -(-workers // self.step_size) - 1
        return rounds * self.round_seconds

    def as_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "dispatcher": self.dispatcher,
            "stepSize": self.step_size if self.dispatcher == "Incremental" else None,
            "roundSeconds": self.round_seconds if self.dispatcher == "Incremental" else None,
            "workerLostTimeoutSeconds": self.worker_lost_timeout,
            "note": self.note,
        }


def from_stack_file(stack: str, root: Path | None = None) -> Timings:
    """The timings of `Pulumi.<stack>.yaml`; Kueue's defaults (with a note why) if unreadable."""
    try:
        raw, source = read_stack_file(stack, root)
        fleet = parse_model(raw, source=source)
    except ConfigError as e:
        first = e.issues[0] if e.issues else None
        why = f"{first.path}: {first.message}".strip(": ") if first else str(e)
        return Timings(note=f"Pulumi.{stack}.yaml not used ({why})")
    kueue = fleet.kueue
    mk = kueue.multi_kueue
    step = mk.incremental_dispatcher_config
    timeouts: dict[str, float | None] = {}
    for cluster in fleet.clusters:
        chosen = wait_for_pods_ready(kueue, cluster)
        if not wait_for_pods_ready_on(kueue, cluster):
            timeouts[k8s_name(cluster.name)] = None
        else:
            timeout = (chosen.timeout if chosen else None) or DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT
            timeouts[k8s_name(cluster.name)] = go_duration_seconds(timeout)
    return Timings(
        source=source,
        dispatcher=mk.dispatcher or "AllAtOnce",
        step_size=step.step_size if step else INCREMENTAL_DEFAULT_STEP_SIZE,
        worker_lost_timeout=go_duration_seconds(
            mk.worker_lost_timeout or DEFAULT_WORKER_LOST_TIMEOUT
        ),
        pods_ready_timeout=timeouts,
    )
