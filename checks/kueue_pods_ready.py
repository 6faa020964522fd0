"""waitForPodsReady across Kueue versions: which way of keeping it off works with which Kueue.

From Kueue 0.19 waitForPodsReady is on unless turned off, and the only switch, the
`DisableWaitForPodsReady` gate, is deprecated and planned to be removed in 0.21
(upstream/kueue.py, DISABLE_WAIT_FOR_PODS_READY_STAGE). A Kueue without the gate refuses to start
when it is set. The manager's waitForPodsReady can also be kept off without it, by a block that
never evicts (`kueue.managerConfiguration.waitForPodsReadyOff: inertBlock`); a worker's cannot.
"""

from __future__ import annotations

from collections.abc import Iterator

from builders.kueue import manager_off_form
from checks.common import Check
from config.errors import Issue
from config.models import FleetConfig
from upstream.k8s import go_duration_seconds
from upstream.kueue import (
    DISABLE_WAIT_FOR_PODS_READY,
    DISABLE_WAIT_FOR_PODS_READY_REMOVED_IN,
    DISABLE_WAIT_FOR_PODS_READY_STAGE,
    INERT_WAIT_FOR_PODS_READY,
    KUEUE_VERSIONS,
    WAIT_FOR_PODS_READY_BY_DEFAULT,
    has_disable_gate,
)

OFF = "kueue.managerConfiguration.waitForPodsReadyOff"


def _gate_versions() -> str:
    """The pinned versions with the gate, and its stage in each."""
    return ", ".join(
        f"{v} ({stage})"
        for v in KUEUE_VERSIONS
        if (stage := DISABLE_WAIT_FOR_PODS_READY_STAGE.get(v)) is not None and has_disable_gate(v)
    )


def _works_with() -> str:
    removed = DISABLE_WAIT_FOR_PODS_READY_REMOVED_IN
    return (
        f"featureGate works with Kueue 0.19 and 0.20 only (the gate, of the pinned versions: "
        f"{_gate_versions() or 'none'}; Kueue plans to remove it in {removed}); inertBlock needs "
        "no gate and works from 0.19 on (the same code at v0.19.2 and on main, 0.20-devel)"
    )


def check_manager_pods_ready_off(fleet: FleetConfig) -> Iterator[Issue]:
    """`waitForPodsReadyOff`: the form the stack's Kueue version can run, and what to change before
    upgrading Kueue past the gate."""
    s = fleet.kueue
    chosen = s.manager_configuration.wait_for_pods_ready_off
    if chosen is not None and fleet.manager is None:
        yield Issue(OFF, "applies to a cluster with role 'manager'; this stack has none", "warning")
        return
    if chosen is not None and not WAIT_FOR_PODS_READY_BY_DEFAULT[s.version]:
        yield Issue(
            OFF,
            f"Kueue {s.version} runs waitForPodsReady only where a block is written: the manager's "
            "is off with either form, and the program emits neither",
            "warning",
        )
        return
    if fleet.manager is None or manager_off_form(s) != "featureGate":
        return
    if not has_disable_gate(s.version):
        yield Issue(
            OFF,
            f"Kueue {s.version} has no {DISABLE_WAIT_FOR_PODS_READY} gate and refuses to start "
            f"with it; set inertBlock ({_works_with()})",
        )
    elif chosen == "featureGate":
        yield Issue(
            OFF,
            f"relies on the {DISABLE_WAIT_FOR_PODS_READY} gate: {_works_with()}. Before upgrading "
            f"to Kueue {DISABLE_WAIT_FOR_PODS_READY_REMOVED_IN}, set inertBlock (or omit the key: "
            "the program then picks inertBlock for a version without the gate)",
            "warning",
        )


def check_worker_pods_ready_off(fleet: FleetConfig) -> Iterator[Issue]:
    """A worker's `enable: false` needs the gate; and the manager's inert timeout stays longest."""
    s = fleet.kueue
    wait = s.configuration.wait_for_pods_ready
    path = "kueue.configuration.waitForPodsReady"
    if wait is None or not any(cl.role != "manager" for cl in fleet.clusters):
        return
    if not wait.enable and WAIT_FOR_PODS_READY_BY_DEFAULT[s.version]:
        if not has_disable_gate(s.version):
            yield Issue(
                f"{path}.enable",
                f"Kueue {s.version} has no {DISABLE_WAIT_FOR_PODS_READY} gate, so waitForPodsReady "
                "cannot be turned off there; write a timeout longer than any start instead, with "
                "recoveryTimeout: 0s",
            )
        return
    inert = go_duration_seconds(INERT_WAIT_FOR_PODS_READY["timeout"])
    if (
        fleet.manager is not None
        and manager_off_form(s) == "inertBlock"
        and wait.timeout is not None
        and go_duration_seconds(wait.timeout) >= inert
    ):
        yield Issue(
            f"{path}.timeout",
            f"{wait.timeout} is not shorter than the manager's inert timeout "
            f"({INERT_WAIT_FOR_PODS_READY['timeout']}): the manager would evict first",
            "warning",
        )


KUEUE_PODS_READY_CHECKS: tuple[Check, ...] = (
    check_manager_pods_ready_off,
    check_worker_pods_ready_off,
)
