"""Job operators for Kueue frameworks: what each worker installs and what the manager holds. Pure.

The operator runs on the workers only (`operators.<key>.workers`, default every `role: worker`
cluster): KubeRay as its Helm chart, the training operator as its upstream kustomize overlay. The
manager gets only the CRDs of the enabled kinds, from the pinned files: MultiKueue needs the kinds
there (a RayJob is submitted to the manager) but no controller may run them, or the manager's copy
would run beside the worker's (`managedBy` keeps a supporting operator off it, no operator at all
keeps it off for certain).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from builders.manifest import HelmRelease
from config.frameworks import KubeRaySettings, OperatorSettings, TrainingOperatorSettings
from config.models import ClusterConfig, FleetConfig
from upstream.frameworks import (
    KUBERAY,
    KUBERAY_CHART,
    KUBERAY_REPO,
    TRAINING_OPERATOR,
    TRAINING_OPERATOR_OVERLAY,
    Operator,
)
from upstream.k8s import toleration_for_taint

# The system pool's taint (config.models.SystemPoolConfig.only_critical_addons): operators are
# controllers, like Kueue, and belong there.
CRITICAL_ADDONS_TAINT = "CriticalAddonsOnly=true:NoSchedule"


@dataclass(frozen=True, slots=True)
class Kustomization:
    """An upstream kustomize overlay inside a pinned Go module, applied on one cluster."""

    target: str
    module: str
    version: str  # the module version, 'v1.9.3'
    path: str  # the overlay inside the module
    namespace: str


def configured(fleet: FleetConfig) -> list[tuple[Operator, OperatorSettings]]:
    """The operators the stack installs, each with its settings."""
    ops = fleet.operators
    found: list[tuple[Operator, OperatorSettings]] = []
    if ops.kuberay is not None:
        found.append((KUBERAY, ops.kuberay))
    if ops.training_operator is not None:
        found.append((TRAINING_OPERATOR, ops.training_operator))
    return found


def version_of(settings: OperatorSettings) -> str:
    """The operator's release, without a leading 'v'."""
    if isinstance(settings, KubeRaySettings):
        return settings.chart_version.removeprefix("v")
    assert isinstance(settings, TrainingOperatorSettings)
    return settings.version.removeprefix("v")


def operator_workers(fleet: FleetConfig, settings: OperatorSettings) -> list[str]:
    """The clusters that run the operator: as written, else every `role: worker` cluster."""
    if settings.workers is not None:
        return list(dict.fromkeys(settings.workers))
    return [c.name for c in fleet.workers]


def installed_by_stack(fleet: FleetConfig) -> dict[str, Operator]:
    """Kueue framework name -> the operator this stack installs for it."""
    return {fw: op for op, _ in configured(fleet) for fw in op.frameworks}


def manager_crd_files(fleet: FleetConfig) -> list[tuple[str, str, str]]:
    """(project, 'v<version>', file) of each enabled kind's pinned CRD, for the manager."""
    out: list[tuple[str, str, str]] = []
    if fleet.manager is None:
        return out
    for op, settings in configured(fleet):
        for fw in op.frameworks:
            if fw in fleet.kueue.frameworks:
                out.append((op.project, f"v{version_of(settings)}", op.crd_files[fw]))
    return out


def _values(cluster: ClusterConfig, settings: KubeRaySettings) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if cluster.system_pool.only_critical_addons:
        values["tolerations"] = [toleration_for_taint(CRITICAL_ADDONS_TAINT)]
    if settings.resources is not None:
        values["resources"] = settings.resources.model_dump(mode="json", exclude_none=True)
    return values


def kuberay_releases(fleet: FleetConfig) -> list[HelmRelease]:
    """The `kuberay-operator` chart on each worker that runs KubeRay (its chart brings the CRDs)."""
    settings = fleet.operators.kuberay
    if settings is None:
        return []
    out: list[HelmRelease] = []
    for name in operator_workers(fleet, settings):
        cluster = fleet.cluster(name)
        if cluster is None or cluster.role == "manager":  # checks.frameworks refuses both
            continue
        out.append(
            HelmRelease(
                target=name,
                release=KUBERAY_CHART,
                chart=KUBERAY_CHART,
                version=version_of(settings),
                namespace=KUBERAY.namespace,
                repo=KUBERAY_REPO,
                values=_values(cluster, settings),
            )
        )
    return out


def training_operator_installs(fleet: FleetConfig) -> list[Kustomization]:
    """The training operator's upstream overlay on each worker that runs it."""
    settings = fleet.operators.training_operator
    if settings is None:
        return []
    out: list[Kustomization] = []
    for name in operator_workers(fleet, settings):
        cluster = fleet.cluster(name)
        if cluster is None or cluster.role == "manager":
            continue
        out.append(
            Kustomization(
                target=name,
                module=TRAINING_OPERATOR.module,
                version=f"v{version_of(settings)}",
                path=TRAINING_OPERATOR_OVERLAY,
                namespace=TRAINING_OPERATOR.namespace,
            )
        )
    return out
