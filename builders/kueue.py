"""Kueue's install from config: waitForPodsReady per cluster, feature gates, the manager's
`Configuration`, the Helm values and the release of each cluster. Pure. Every queue object of a
cluster (namespaces, flavors, gates, ClusterQueues, Cohorts, LocalQueues, priority classes, and
what extraSpec may set) is builders.kueue_queues; it takes `deep_merge` and `namespace_selector`
from here. The chart and per-version facts live in `upstream.kueue`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

import yaml

from builders.manifest import HelmRelease
from config.kueue import KueueSettings, NamespaceSelector, WaitForPodsReady
from config.models import ClusterConfig, FleetConfig
from upstream.aks import AGENTPOOL_LABEL
from upstream.kueue import (
    CHART_MANAGER_CONFIG,
    CONFIG_API,
    CRITICAL_ADDONS_TOLERATION,
    DISABLE_WAIT_FOR_PODS_READY,
    DISPATCHERS,
    INERT_WAIT_FOR_PODS_READY,
    KUEUE_CHART,
    KUEUE_NAMESPACE,
    KUEUE_RELEASE,
    KUEUE_SELECTOR_LABELS,
    WAIT_FOR_PODS_READY_BY_DEFAULT,
    has_disable_gate,
)


def _fields(**values: Any) -> dict[str, Any]:
    """The set values only, so Kueue's defaults apply to the rest."""
    return {k: v for k, v in values.items() if v is not None}


def _wait_for_pods_ready(w: WaitForPodsReady) -> dict[str, Any]:
    r = w.requeuing_strategy
    requeuing = None
    if r is not None:
        requeuing = _fields(
            timestamp=r.timestamp,
            backoffLimitCount=r.backoff_limit_count,
            backoffBaseSeconds=r.backoff_base_seconds,
            backoffMaxSeconds=r.backoff_max_seconds,
        )
    return _fields(
        timeout=w.timeout,
        blockAdmission=w.block_admission,
        recoveryTimeout=w.recovery_timeout,
        requeuingStrategy=requeuing,
    )


def manager_off_form(settings: KueueSettings) -> Literal["featureGate", "inertBlock"] | None:
    """How the manager's waitForPodsReady is kept off; None: nothing to keep off.

    None when the manager's is asked on, or when the version has it off unless written (0.17).
    Otherwise `kueue.managerConfiguration.waitForPodsReadyOff`, or by default the gate where the
    version has it and the inert block where it does not (Kueue 0.21 removes the gate).
    """
    chosen = settings.manager_configuration.wait_for_pods_ready
    if (chosen is not None and chosen.enable) or not WAIT_FOR_PODS_READY_BY_DEFAULT[
        settings.version
    ]:
        return None
    form = settings.manager_configuration.wait_for_pods_ready_off
    if form is not None:
        return form
    return "featureGate" if has_disable_gate(settings.version) else "inertBlock"


def wait_for_pods_ready(settings: KueueSettings, cluster: ClusterConfig) -> WaitForPodsReady | None:
    """The waitForPodsReady the program asks of one cluster; None: Kueue's version default.

    The manager of a MultiKueue fleet runs no pods of the jobs it dispatches: its PodsReady
    timeout would evict and re-dispatch a job still starting on a worker (and cap every worker's
    longer timeout). So the manager's is off unless `kueue.managerConfiguration` says otherwise
    (by the gate, or by a block that never evicts: `manager_off_form`); workers and standalone
    clusters get `kueue.configuration`'s, as written.
    """
    if cluster.role == "manager":
        chosen = settings.manager_configuration.wait_for_pods_ready
        if manager_off_form(settings) == "inertBlock":
            return WaitForPodsReady.model_validate(INERT_WAIT_FOR_PODS_READY, by_alias=True)
        return chosen if chosen is not None else WaitForPodsReady(enable=False)
    return settings.configuration.wait_for_pods_ready


def wait_for_pods_ready_on(settings: KueueSettings, cluster: ClusterConfig) -> bool:
    """Whether that cluster's Kueue can evict for waitForPodsReady (all gates considered)."""
    if settings.feature_gates.get(DISABLE_WAIT_FOR_PODS_READY):
        return False
    if cluster.role == "manager" and manager_off_form(settings) == "inertBlock":
        return False
    w = wait_for_pods_ready(settings, cluster)
    return WAIT_FOR_PODS_READY_BY_DEFAULT[settings.version] if w is None else w.enable


def feature_gates(settings: KueueSettings, cluster: ClusterConfig) -> dict[str, bool]:
    """One cluster's feature gates: `kueue.featureGates`, plus what turns waitForPodsReady off.

    From 0.19 an absent `waitForPodsReady` block means on, so off needs the gate; never on a
    version without it (preflight refuses a stack that would need it there).
    """
    gates = dict(settings.feature_gates)
    w = wait_for_pods_ready(settings, cluster)
    if (
        w is not None
        and not w.enable
        and WAIT_FOR_PODS_READY_BY_DEFAULT[settings.version]
        and has_disable_gate(settings.version)
    ):
        gates[DISABLE_WAIT_FOR_PODS_READY] = True
    return gates


def namespace_selector(selector: NamespaceSelector) -> dict[str, Any]:
    """A namespace selector from config: the Configuration's `managedJobsNamespaceSelector` here,
    a ClusterQueue's `namespaceSelector` in builders.kueue_queues."""
    out: dict[str, Any] = {}
    if selector.match_labels:
        out["matchLabels"] = dict(selector.match_labels)
    if selector.match_expressions:
        out["matchExpressions"] = [
            {
                "key": r.key,
                "operator": r.operator,
                **({"values": list(r.values)} if r.values else {}),
            }
            for r in selector.match_expressions
        ]
    return out


def _production_settings(settings: KueueSettings, cluster: ClusterConfig) -> dict[str, Any]:
    c = settings.configuration
    out: dict[str, Any] = {}
    wait = wait_for_pods_ready(settings, cluster)
    if wait is not None and wait.enable:
        out["waitForPodsReady"] = _wait_for_pods_ready(wait)
    retention = c.object_retention_policies
    if retention is not None:
        w = retention.workloads
        out["objectRetentionPolicies"] = _fields(
            workloads=None
            if w is None
            else _fields(
                afterFinished=w.after_finished, afterDeactivatedByKueue=w.after_deactivated_by_kueue
            )
        )
    if c.fair_sharing is not None:
        out["fairSharing"] = {"preemptionStrategies": list(c.fair_sharing.preemption_strategies)}
    afs = c.admission_fair_sharing
    if afs is not None:
        out["admissionFairSharing"] = _fields(
            usageHalfLifeTime=afs.usage_half_life_time,
            usageSamplingInterval=afs.usage_sampling_interval,
            resourceWeights=dict(afs.resource_weights) or None,
        )
    if c.metrics.enable_cluster_queue_resources:
        # The chart's `metrics` block (bind address) with the ClusterQueue resource gauges.
        out["metrics"] = {
            **CHART_MANAGER_CONFIG[settings.version]["metrics"],
            "enableClusterQueueResources": True,
        }
    if c.manage_jobs_without_queue_name is not None:
        out["manageJobsWithoutQueueName"] = c.manage_jobs_without_queue_name
    if c.managed_jobs_namespace_selector is not None:
        out["managedJobsNamespaceSelector"] = namespace_selector(c.managed_jobs_namespace_selector)
    return out


def manager_config(settings: KueueSettings, cluster: ClusterConfig) -> dict[str, Any]:
    """Kueue's `Configuration` for one cluster: chart defaults, our frameworks, MultiKueue."""
    config: dict[str, Any] = {
        "apiVersion": CONFIG_API,
        "kind": "Configuration",
        **CHART_MANAGER_CONFIG[settings.version],
        "integrations": {"frameworks": list(settings.frameworks)},
        **_production_settings(settings, cluster),
    }
    mk = settings.multi_kueue
    incremental = mk.incremental_dispatcher_config
    multi = _fields(
        gcInterval=mk.gc_interval,
        origin=mk.origin,
        workerLostTimeout=mk.worker_lost_timeout,
        dispatcherName=DISPATCHERS[mk.dispatcher] if mk.dispatcher else None,
        incrementalDispatcherConfig=None
        if incremental is None
        else {"stepSize": incremental.step_size},
    )
    if cluster.role == "manager" and multi:
        config["multiKueue"] = multi
    return config


def _high_availability(replicas: int, cluster: ClusterConfig) -> dict[str, Any]:
    """Replicas, and with 2+ a PodDisruptionBudget and a spread (chart keys at both tags)."""
    if replicas < 2:
        return {}
    keys = ["kubernetes.io/hostname"]
    if cluster.system_pool.zones:
        keys.append("topology.kubernetes.io/zone")
    return {
        "replicas": replicas,
        "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
        # ScheduleAnyway: a smaller system pool still runs every replica.
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": key,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": dict(KUEUE_SELECTOR_LABELS)},
            }
            for key in keys
        ],
    }


def deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `extra` merged in: mappings key by key, anything else replaced."""
    out = dict(base)
    for key, value in extra.items():
        current = out.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            out[key] = deep_merge(cast("dict[str, Any]", current), cast("Mapping[str, Any]", value))
        else:
            out[key] = value
    return out


def helm_values(settings: KueueSettings, cluster: ClusterConfig) -> dict[str, Any]:
    """Chart values: feature gates (the one place for them), placement, the manager config."""
    system = cluster.system_pool
    values: dict[str, Any] = {
        "controllerManager": {
            "featureGates": [
                {"name": name, "enabled": enabled}
                for name, enabled in sorted(feature_gates(settings, cluster).items())
            ],
            # User pools scale to zero and their nodes come and go; Kueue's webhooks fail closed
            # (failurePolicy Fail), so the controller lives on the system pool.
            "nodeSelector": {AGENTPOOL_LABEL: system.name},
            "tolerations": [dict(CRITICAL_ADDONS_TOLERATION)]
            if system.only_critical_addons
            else [],
            **_high_availability(settings.replicas, cluster),
        },
        "managerConfig": {
            "controllerManagerConfigYaml": yaml.safe_dump(
                manager_config(settings, cluster), sort_keys=False
            ),
        },
    }
    return deep_merge(values, settings.values)


def kueue_release(settings: KueueSettings, cluster: ClusterConfig) -> HelmRelease:
    """The Kueue release of one cluster (same chart and version fleet-wide)."""
    return HelmRelease(
        target=cluster.name,
        release=KUEUE_RELEASE,
        chart=KUEUE_CHART,
        version=settings.version,
        namespace=KUEUE_NAMESPACE,
        values=helm_values(settings, cluster),
    )


def kueue_releases(fleet: FleetConfig) -> list[HelmRelease]:
    """One Kueue release per cluster, in config order (none with `install: manifests-only`)."""
    if fleet.kueue.install != "helm":
        return []
    return [kueue_release(fleet.kueue, c) for c in fleet.clusters]
