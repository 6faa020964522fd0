"""Kueue install checks: frameworks, feature gates, Helm values and the typed `Configuration`
(waitForPodsReady, fair-sharing strategies, MultiKueue's settings, replicas), each a rule that would
stop Kueue from starting or quietly undo a setting (every issue names its key path). The queue
objects of each cluster (names, references, quotas, fair-sharing weights): `checks.kueue_queues`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any, cast

from builders.kueue import manager_off_form
from checks.common import Check, duplicates
from config.errors import Issue, key_path
from config.kueue import MultiKueueManagerSettings
from config.models import FleetConfig
from upstream.k8s import go_duration_seconds
from upstream.kueue import (
    BATCH_JOB,
    DEFAULT_WORKER_LOST_TIMEOUT,
    DISABLE_WAIT_FOR_PODS_READY,
    FAIR_SHARING_STRATEGIES,
    FEATURE_GATES,
    FRAMEWORK_GATES,
    FRAMEWORKS,
    INCREMENTAL_CONFIG_VERSIONS,
    KUEUE_VERSIONS,
    LOCKED_GATES,
    MIN_QUIET_WORKER_LOST_TIMEOUT_SECONDS,
    OWNED_VALUES,
    REMOVED_GATES,
)


def check_kueue_settings(fleet: FleetConfig) -> Iterator[Issue]:
    """Frameworks, feature gates and Helm values that would stop Kueue from starting."""
    s = fleet.kueue
    known = FEATURE_GATES[s.version]
    for i, name in enumerate(s.frameworks):
        path = key_path("kueue", "frameworks", i)
        if name not in FRAMEWORKS:
            hint = difflib.get_close_matches(name, FRAMEWORKS, n=1)
            yield Issue(
                path,
                f"unknown integration {name!r}"
                + (f"; did you mean {hint[0]!r}?" if hint else "")
                + f" Allowed: {', '.join(FRAMEWORKS)}",
            )
        gate = FRAMEWORK_GATES.get(name)
        if gate and not s.feature_gates.get(gate):
            yield Issue(path, f"{name} is alpha in Kueue: set kueue.featureGates.{gate}: true")
    for name in duplicates(s.frameworks):
        yield Issue(key_path("kueue", "frameworks"), f"{name!r} is listed more than once")
    if BATCH_JOB not in s.frameworks:
        yield Issue(
            key_path("kueue", "frameworks"),
            f"must include {BATCH_JOB!r}: the queues and the example Job are batch Jobs",
        )
    for name, enabled in s.feature_gates.items():
        path = f"kueue.featureGates.{name}"
        if name in REMOVED_GATES:
            yield Issue(path, f"remove it: {REMOVED_GATES[name]}; Kueue fails on unknown gates")
        elif name not in known:
            other = [v for v in KUEUE_VERSIONS if name in FEATURE_GATES[v]]
            hint = difflib.get_close_matches(name, known, n=1)
            yield Issue(
                path,
                f"Kueue {s.version} has no feature gate {name!r} and would not start"
                + (f" (it exists in {', '.join(other)})" if other else "")
                + (f"; did you mean {hint[0]!r}?" if hint else ""),
            )
        elif LOCKED_GATES[s.version].get(name, enabled) != enabled:
            locked = LOCKED_GATES[s.version][name]
            yield Issue(
                path,
                f"locked to {str(locked).lower()} in Kueue {s.version}; any other value stops "
                "it at startup: remove the key",
            )
    for owned, why in OWNED_VALUES.items():
        node: Any = s.values
        for part in owned.split("."):
            node = cast("dict[str, Any]", node).get(part) if isinstance(node, dict) else None
        if node is not None:
            yield Issue(f"kueue.values.{owned}", f"set by the program ({why}); remove it here")
    if fleet.manager is None and s.multi_kueue != MultiKueueManagerSettings():
        yield Issue(
            "kueue.multiKueue",
            "applies only to a cluster with role 'manager'; this stack has none",
            "warning",
        )


def _check_worker_lost_timeout(mk: MultiKueueManagerSettings) -> Iterator[Issue]:
    """`multiKueue.workerLostTimeout`: 0 or a few seconds turn any blip into re-run jobs."""
    if mk.worker_lost_timeout is None:
        return  # Kueue's DEFAULT_WORKER_LOST_TIMEOUT
    path = "kueue.multiKueue.workerLostTimeout"
    seconds = go_duration_seconds(mk.worker_lost_timeout)
    if seconds == 0:
        yield Issue(
            path,
            "must be more than 0: the manager would re-admit a worker's running jobs elsewhere "
            f"at its first failed connection (Kueue's default: {DEFAULT_WORKER_LOST_TIMEOUT})",
        )
    elif seconds < MIN_QUIET_WORKER_LOST_TIMEOUT_SECONDS:
        yield Issue(
            path,
            f"{mk.worker_lost_timeout}: a worker API outage longer than this (an AKS upgrade, a "
            "network blip) re-admits its running jobs on another worker, where their work "
            f"starts over (Kueue's default: {DEFAULT_WORKER_LOST_TIMEOUT})",
            "warning",
        )


def _check_wait_for_pods_ready(fleet: FleetConfig) -> Iterator[Issue]:
    """`kueue.configuration` (workers, standalone) and `kueue.managerConfiguration` (manager)."""
    s = fleet.kueue
    gate = s.feature_gates.get(DISABLE_WAIT_FOR_PODS_READY)
    blocks = (
        ("kueue.configuration.waitForPodsReady", s.configuration.wait_for_pods_ready, "worker"),
        (
            "kueue.managerConfiguration.waitForPodsReady",
            s.manager_configuration.wait_for_pods_ready,
            "manager",
        ),
    )
    for path, wait, side in blocks:
        if wait is None or not wait.enable:
            continue
        if wait.timeout is not None and go_duration_seconds(wait.timeout) == 0:
            yield Issue(f"{path}.timeout", "must be more than 0 (Kueue refuses to start)")
        if gate:
            yield Issue(
                path,
                f"ignored: kueue.featureGates.{DISABLE_WAIT_FOR_PODS_READY} is true",
                "warning",
            )
        if side == "worker" and not any(cl.role != "manager" for cl in fleet.clusters):
            yield Issue(
                path, "applies to workers and standalone clusters; this stack has none", "warning"
            )
        if side == "manager" and fleet.manager is None:
            yield Issue(
                path, "applies to a cluster with role 'manager'; this stack has none", "warning"
            )
    if (
        gate is False
        and fleet.manager is not None
        and s.manager_configuration.wait_for_pods_ready is None
        and manager_off_form(s) == "featureGate"
    ):
        yield Issue(
            f"kueue.featureGates.{DISABLE_WAIT_FOR_PODS_READY}",
            "the manager still gets it true (waitForPodsReady off there); to run waitForPodsReady "
            "on the manager, set kueue.managerConfiguration.waitForPodsReady",
            "warning",
        )


def check_kueue_configuration(fleet: FleetConfig) -> Iterator[Issue]:
    """The typed Configuration settings as Kueue's own config validation would judge them."""
    s = fleet.kueue
    c = s.configuration
    yield from _check_wait_for_pods_ready(fleet)
    fair = c.fair_sharing
    if fair is not None and list(fair.preemption_strategies) not in FAIR_SHARING_STRATEGIES:
        yield Issue(
            "kueue.configuration.fairSharing.preemptionStrategies",
            "Kueue accepts only "
            + "; ".join(", ".join(x) for x in FAIR_SHARING_STRATEGIES)
            + " (in that order)",
        )
    mk = s.multi_kueue
    yield from _check_worker_lost_timeout(mk)
    if mk.incremental_dispatcher_config is not None:
        path = "kueue.multiKueue.incrementalDispatcherConfig"
        if mk.dispatcher != "Incremental":
            yield Issue(
                path, "needs kueue.multiKueue.dispatcher: Incremental (Kueue refuses it else)"
            )
        if s.version not in INCREMENTAL_CONFIG_VERSIONS:
            yield Issue(
                path,
                f"Kueue {s.version} has no such setting (from "
                f"{', '.join(INCREMENTAL_CONFIG_VERSIONS)}); it would be dropped silently",
            )
        elif s.feature_gates.get("MultiKueueIncrementalDispatcherConfig") is False:
            yield Issue(
                path,
                "ignored: kueue.featureGates.MultiKueueIncrementalDispatcherConfig is false",
                "warning",
            )
    if s.replicas >= 2:
        for i, cl in enumerate(fleet.clusters):
            pool = cl.system_pool
            nodes = pool.max_count if pool.autoscaling and pool.max_count else pool.count
            if nodes < 2:
                yield Issue(
                    key_path("clusters", i, "systemPool"),
                    f"{nodes} node: Kueue's {s.replicas} replicas share it, so draining it still "
                    "stops Kueue (and its fail-closed Job webhooks)",
                    "warning",
                )


KUEUE_CHECKS: tuple[Check, ...] = (
    check_kueue_settings,
    check_kueue_configuration,
)
