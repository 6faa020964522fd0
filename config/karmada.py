"""Karmada + OpenKruise settings (`fleet.karmada`): control plane, members, applications.

Models only; the rules that relate keys are in `checks.karmada`, the upstream facts behind them
(Karmada v1.18.2, OpenKruise v1.9.0) in `upstream.karmada` and `upstream.placement`. A
UnitedDeployment subset takes an integer or "N%" and only its nodeSelectorTerm.matchExpressions
are used by Kruise.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StrictInt

from config.base import Model
from config.types import DnsLabel, IpAddress, Quantity
from upstream.karmada import DEFAULT_KARMADA_CHART_VERSION, DEFAULT_KRUISE_CHART_VERSION


def _replicas(value: int | str) -> int | str:
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value} must be >= 0")
    elif not re.fullmatch(r"(?:100|[1-9]?[0-9])%", value):
        raise ValueError(f"{value!r} must be an integer or a percentage 'N%' with N in 0..100")
    return value


SubsetReplicas = Annotated[StrictInt | str, AfterValidator(_replicas)]
ResourceName = Literal["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu"]


class NodeSelectorRequirement(Model):
    """One `matchExpressions` entry of a subset's nodeSelectorTerm (core/v1 shape)."""

    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = Field(default_factory=list[str])


class NodeSelectorTerm(Model):
    """Kruise uses only matchExpressions (matchFields is ignored), so only they are accepted."""

    match_expressions: list[NodeSelectorRequirement] = Field(min_length=1)


class Toleration(Model):
    """A pod toleration (core/v1 shape)."""

    key: str | None = None
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = Field(default=None, ge=0)


class SubsetConfig(Model):
    """One UnitedDeployment subset: where a share of each member's replicas runs.

    `virtualNodes: true` puts the subset on AKS virtual nodes (their `type=virtual-kubelet` label
    and `virtual-kubelet.io/provider` toleration); `false` keeps it off them explicitly; unset adds
    nothing (pods without the toleration never land on virtual nodes anyway).
    """

    name: DnsLabel
    replicas: SubsetReplicas | None = None
    node_selector_term: NodeSelectorTerm | None = None
    tolerations: list[Toleration] = Field(default_factory=list[Toleration])
    virtual_nodes: bool | None = None


class ContainerResources(Model):
    requests: dict[ResourceName, Quantity] = Field(default_factory=dict[ResourceName, str | int])
    limits: dict[ResourceName, Quantity] = Field(default_factory=dict[ResourceName, str | int])


WorkloadKind = Literal["deployment", "cloneSet", "statefulSet", "advancedStatefulSet"]


class WorkloadTemplate(Model):
    """The workload each subset runs: which Kruise template kind, and its one container."""

    kind: WorkloadKind = "deployment"
    image: str = Field(min_length=1)
    container_name: DnsLabel | None = None
    ports: list[int] = Field(default_factory=list[int])
    resources: ContainerResources = ContainerResources()
    labels: dict[str, str] = Field(default_factory=dict[str, str])


class PropagationConfig(Model):
    """Karmada placement: Divided replicas, Weighted by a static weight per member cluster."""

    weights: dict[str, StrictInt] = Field(min_length=1)


class ApplicationConfig(Model):
    """A UnitedDeployment on the Karmada API server and the PropagationPolicy that spreads it."""

    name: DnsLabel
    namespace: DnsLabel = "default"
    # Always set: Karmada's GetReplicas fails on a nil spec.replicas (its interpreter reads it).
    replicas: StrictInt = Field(ge=0, le=2**31 - 1)
    template: WorkloadTemplate
    subsets: list[SubsetConfig] = Field(min_length=1)
    propagation: PropagationConfig


class ApiServerConfig(Model):
    """How the Pulumi runner reaches the Karmada API server (port 5443 on a LoadBalancer)."""

    exposure: Literal["public", "internal"] = "public"
    # internal: a free address in the host cluster's node subnet, fixed before the first install.
    internal_ip: IpAddress | None = None
    # public: `<dnsLabel>.<location>.cloudapp.azure.com` on the static IP, also a certificate SAN.
    dns_label: DnsLabel | None = None


class EtcdConfig(Model):
    """Karmada's internal etcd. `pvc` survives node replacement; `hostPath` (chart default) not."""

    storage: Literal["pvc", "hostPath"] = "pvc"
    storage_class: str = "managed-csi"
    size: Quantity = "8Gi"


class KruiseSettings(Model):
    """OpenKruise on every Karmada member (the `kruise` chart from openkruise/charts)."""

    chart_version: str = Field(
        default=DEFAULT_KRUISE_CHART_VERSION, pattern=r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?$"
    )
    # Merged over the chart default (ImagePullJobGate=true) into its comma-separated string.
    feature_gates: dict[str, bool] = Field(default_factory=dict[str, bool])
    manager_replicas: int = Field(default=2, ge=1, le=10)


class KarmadaSettings(Model):
    """Karmada control plane (host mode) on one cluster, its members, and the applications."""

    host: str | None = None
    members: list[str] | None = None
    chart_version: str = Field(
        default=DEFAULT_KARMADA_CHART_VERSION, pattern=r"^v\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?$"
    )
    api_server: ApiServerConfig = ApiServerConfig()
    etcd: EtcdConfig = EtcdConfig()
    kruise: KruiseSettings = KruiseSettings()
    applications: list[ApplicationConfig] = Field(default_factory=list[ApplicationConfig])
