"""A twin's objects deployed by the program itself: `pulumi up` of the mapped stack.

The twin's planes (testkit/realtier/twin_run.py) are the stack's clusters as `source: existing`
(`twin.twin_raw`: each plane's kubeconfig a secret config key, as a user passes one), and the
project's `__main__.py` runs through the real engine (testkit/realtier/engine.py). So every Kueue
and MultiKueue object of the twin, worker credentials included, is what `pulumi up` of that
stack makes, in the order and with the waits it uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testkit.realtier.engine import (
    EngineRun,
    configure,
    find_engine,
    kubeconfig_key,
    workspace,
)
from testkit.realtier.harness import StartError
from testkit.realtier.pulumi_cli import op_counts
from testkit.realtier.twin import load_stack, twin_raw


def stack_raw(stack: str) -> dict[str, Any]:
    """The committed stack's fleet as its twin deploys it: each cluster `existing`, its
    kubeconfig in the secret key `kubeconfig_key(name)`."""
    return twin_raw(load_stack(stack), lambda name: {"kubeconfigSecret": kubeconfig_key(name)})


@dataclass(frozen=True, slots=True)
class EngineDeploy:
    """One twin's `pulumi up`: the stack and what its summary counted."""

    run: EngineRun
    counts: dict[str, int]


def deploy_twin(stack: str, kubeconfigs: dict[str, Path], work: Path) -> EngineDeploy:
    """`pulumi up` of the committed stack's twin on the planes; raises with the engine's error
    lines when it fails."""
    engine, why = find_engine()
    if engine is None:
        raise StartError(why)
    run = workspace(f"twin-{stack}", work, engine)
    configure(run, kubeconfigs, stack_raw(stack))
    try:
        result = run.up()
    except AssertionError as exc:
        raise StartError(f"pulumi up of the {stack} twin failed:\n{exc}") from exc
    return EngineDeploy(run, op_counts(result.summary.resource_changes))
