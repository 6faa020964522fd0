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
from config.types import Cidr, DnsLabel, IpAddress, Quantity
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
    # Source CIDRs the load balancer admits (an NSG rule made by cloud-provider-azure). Required
    # with public exposure: the exported kubeconfig is system:masters, so an open port is an
    # admin endpoint on the Internet; `0.0.0.0/0` opens it on purpose.
    allowed_source_ranges: list[Cidr] | None = Field(default=None, min_length=1)
    # internal: a free address in the host cluster's node subnet, fixed before the first install.
    internal_ip: IpAddress | None = None
    # public: `<dnsLabel>.<location>.cloudapp.azure.com` on the static IP, also a certificate SAN.
    dns_label: DnsLabel | None = None


class EtcdConfig(Model):
    """Karmada's internal etcd. `pvc` survives node replacement; `hostPath` (chart default) not."""

    # The chart's etcd StatefulSet has a required pod anti-affinity per node: 3 members need 3
    # nodes the control plane may run on. An even count adds no fault tolerance.
    replicas: Literal[1, 3, 5] = 1
    storage: Literal["pvc", "hostPath"] = "pvc"
    storage_class: str = "managed-csi"
    size: Quantity = "8Gi"


class ControlPlaneConfig(Model):
    """Replicas of every Karmada component; above 1 each also gets a PodDisruptionBudget."""

    replicas: int = Field(default=1, ge=1, le=5)


class ApplicationFailover(Model):
    """`failover.application`: move an application off a member where it stays unhealthy."""

    toleration_seconds: int = Field(default=300, ge=0)
    purge_mode: Literal["Directly", "Gracefully", "Never"] = "Gracefully"
    grace_period_seconds: int | None = Field(default=None, ge=1)


class FailoverConfig(Model):
    """Karmada failover: the `Failover` gate on the controller-manager and a policy block.

    Cluster failover: a member that stays NotReady is tainted NoExecute (a ClusterTaintPolicy)
    and, after `tolerationSeconds`, its replicas are rescheduled onto the other weighted members;
    `purgeMode` says when the old ones go.
    """

    enabled: bool = False
    # How long a NotReady member keeps its share before it is moved (the policies' toleration of
    # the NoExecute taint; without one, eviction starts as soon as the taint is added).
    toleration_seconds: int = Field(default=300, ge=0)
    purge_mode: Literal["Directly", "Gracefully"] = "Gracefully"
    application: ApplicationFailover | None = None


class KubeconfigSource(Model):
    """An existing Karmada API server: its kubeconfig from a file or a secret stack config key."""

    kubeconfig_path: str | None = None
    kubeconfig_secret: str | None = Field(default=None, pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$")
    context: str | None = None


class KruiseSettings(Model):
    """OpenKruise on every Karmada member (the `kruise` chart from openkruise/charts)."""

    chart_version: str = Field(
        default=DEFAULT_KRUISE_CHART_VERSION, pattern=r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?$"
    )
    # Merged over the chart default (ImagePullJobGate=true) into its comma-separated string.
    feature_gates: dict[str, bool] = Field(default_factory=dict[str, bool])
    manager_replicas: int = Field(default=2, ge=1, le=10)
    # `webhookConfiguration.aksIntegration` (chart >= 1.9.0): keeps Kruise's webhooks off AKS's
    # managed namespaces. Unset: on for members this stack creates on AKS, off for existing ones.
    aks_integration: bool | None = None
    # `manifests-only`: Kruise is already installed on every member (as `kueue.install:
    # manifests-only` means for Kueue); the stack installs no chart there, only registers them.
    install: Literal["helm", "manifests-only"] = "helm"
    # Where the Karmada API server's Kruise CRD (apps.kruise.io_uniteddeployments.yaml) comes
    # from: this directory, relative to the project. Unset: the pinned copy of the chart's Kruise
    # release, .cache/crds/kruise/v<version> (scripts/fetch-crds; docs/upstream-pins.md).
    crd_dir: str | None = None


MemberAccess = Literal["wildcard", "scoped"]


class KarmadaSettings(Model):
    """Karmada control plane (host mode) on one cluster, its members, and the applications.

    `source: existing` uses a Karmada control plane the stack does not install (no chart, no
    address, no host): only registration, CRDs, interpreter, policies and applications.
    """

    source: Literal["chart", "existing"] = "chart"
    existing: KubeconfigSource | None = None
    host: str | None = None
    members: list[str] | None = None
    chart_version: str = Field(
        default=DEFAULT_KARMADA_CHART_VERSION, pattern=r"^v\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?$"
    )
    api_server: ApiServerConfig = ApiServerConfig()
    etcd: EtcdConfig = EtcdConfig()
    control_plane: ControlPlaneConfig = ControlPlaneConfig()
    failover: FailoverConfig = FailoverConfig()
    # What the member credential may do: `scoped` (default) covers only the kinds this stack
    # propagates (builders.karmada_access; proven sufficient and narrower by the real tier's
    # test_karmada.py); `wildcard` is `karmadactl join`'s */*/*, for stacks that propagate
    # arbitrary kinds.
    member_access: MemberAccess = "scoped"
    # Member token generation per member (default 0): raise it for a new token now; with
    # `credentials.rotateEveryDays` the schedule adds its periods (docs/security.md).
    rotation: dict[str, int] = Field(default_factory=dict[str, int])
    kruise: KruiseSettings = KruiseSettings()
    applications: list[ApplicationConfig] = Field(default_factory=list[ApplicationConfig])
