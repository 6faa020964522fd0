"""A job operator (KubeRay, the Kubeflow training operator) beside each worker plane of a twin.

The stack deploys a framework's operator on the workers only (`operators.*.workers`); on the twin
each runs as a process of its worker plane, against that plane's admin kubeconfig. This module is
what the framework tests share: the fleet with the framework on, starting the twin with the
framework's CRDs, then each worker's operator (one at a time, each ready on its `/readyz` before
the next starts), then the workers' autoscalers, and waiting for every queue to be active. How
an operator is started (flags, certificates, extra CRDs) is the caller's `start`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from config.models import FleetConfig
from testkit.realtier.autoscaler import nodes_at_min, start_autoscalers
from testkit.realtier.crds import kueue_crd_paths
from testkit.realtier.harness import (
    ControlPlane,
    StartError,
    Tools,
    answers_ok,
    apply,
)
from testkit.realtier.shared.faults_runtime import queues_active
from testkit.realtier.twin import load_stack
from testkit.realtier.twin_run import SimulationTools, Twin, running_twin
from testkit.realtier.wait import until

READY_TIMEOUT = 60.0  # an operator's /readyz after start (a cert rotation included)


def with_framework(stack: str, frameworks: Sequence[str], operators: dict[str, Any]) -> FleetConfig:
    """`stack`'s fleet with `frameworks` added to `kueue.frameworks` and `operators` (fields of
    `OperatorsConfig`, e.g. `{"kuberay": KubeRaySettings(workers=[...])}`) set."""
    fleet = load_stack(stack)
    kueue = fleet.kueue.model_copy(update={"frameworks": [*fleet.kueue.frameworks, *frameworks]})
    return fleet.model_copy(
        update={"kueue": kueue, "operators": fleet.operators.model_copy(update=operators)}
    )


def apply_ok(plane: ControlPlane, objects: list[dict[str, Any]]) -> None:
    applied = apply(plane, objects)
    if applied.rejected:
        raise StartError(f"[{plane.name}] rejected {applied.rejected}: {applied.stderr}")


def log_tail(plane: ControlPlane, tool: str, lines: int = 15) -> str:
    log = plane.workdir / "logs" / f"{tool}.log"
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""


@contextmanager
def operator_twin(
    stack: str,
    fleet: FleetConfig,
    tools: Tools,
    simulation: SimulationTools,
    *,
    kueue_binary: Path,
    framework_crds: Sequence[Path],
    workdir: Path,
    autoscaler: Path,
    tool: str,
    workers: Sequence[str],
    start: Callable[[str, ControlPlane], int],
) -> Iterator[Twin]:
    """`fleet`'s twin (user pools at minCount) with `framework_crds` on every plane, and
    `start(worker, plane)` (which returns the operator's health port) run for each of `workers`;
    always stopped."""
    with running_twin(
        stack,
        tools,
        simulation,
        kueue_binary=kueue_binary,
        kueue_crds=[*kueue_crd_paths(fleet), *framework_crds],
        workdir=workdir,
        nodes=nodes_at_min,
        fleet_value=fleet,
    ) as started:
        for worker in workers:
            plane = started.planes[worker]
            port = start(worker, plane)
            until(
                lambda port=port: answers_ok(f"http://127.0.0.1:{port}/readyz"),
                READY_TIMEOUT,
                f"[{worker}] {tool} /readyz",
                alive=plane._check_alive,
                seen=lambda plane=plane: log_tail(plane, tool),
            )
        start_autoscalers({w: started.planes[w] for w in workers}, started.fleet, autoscaler)
        queues_active(started)
        yield started
