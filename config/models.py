"""Pydantic models of one stack's fleet: `aks-batch-fleet:fleet` in Pulumi.<stack>.yaml.

Field rules that need only one value live here (types, ranges, name syntax); rules that relate
several fields or objects live in `config.validate`, so that every error is reported at once.
Keys are camelCase in YAML (`maxCount`) and snake_case in Python (`max_count`).
"""

from __future__ import annotations

import re
from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from config.base import Model
from config.karmada import KarmadaSettings
from config.kueue import ClusterQueues, KueueSettings
from config.multikueue import MultiKueueSettings

# AKS naming rules (learn.microsoft.com: create-node-pools, aks resource naming).
CLUSTER_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?$")
DNS_PREFIX = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,52}[A-Za-z0-9])?$")
POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
RESOURCE_GROUP = re.compile(r"^[-\w._()]{0,89}[-\w_()]$")
LOCATION = re.compile(r"^[a-z][a-z0-9]{1,40}$")
K8S_VERSION = re.compile(r"^1\.(\d{2})(?:\.(\d{1,3}))?$")
DNS_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
# Kubernetes label syntax: optional DNS-subdomain prefix, a name of <= 63 chars.
LABEL_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$")
LABEL_PREFIX = re.compile(
    r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$"
)
LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# AKS rejects custom labels under these prefixes, and sets `agentpool` itself.
RESERVED_LABEL_PREFIXES = ("kubernetes.azure.com/", "kubernetes.io/", "k8s.io/")


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a valid Kubernetes label key, or None."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not LABEL_PREFIX.match(prefix)):
        return f"label prefix {prefix!r} must be a lowercase DNS subdomain"
    if not LABEL_NAME.match(name):
        return (
            f"label name {name!r} must be 1-63 characters of [A-Za-z0-9_.-], "
            "starting and ending alphanumeric"
        )
    return None


def _check_label_key(key: str) -> str:
    problem = label_key_problem(key)
    if problem:
        raise ValueError(problem)
    return key


def _check_label_value(value: str) -> str:
    if len(value) > 63 or not LABEL_VALUE.match(value):
        raise ValueError(
            f"label value {value!r} must be at most 63 characters of [A-Za-z0-9_.-], "
            "starting and ending alphanumeric"
        )
    return value


def _pattern(regex: re.Pattern[str], allowed: str):
    def check(value: str) -> str:
        if not regex.match(value):
            raise ValueError(f"{value!r} is not allowed: {allowed}")
        return value

    return AfterValidator(check)


ClusterName = Annotated[
    str,
    _pattern(
        CLUSTER_NAME,
        "1-63 letters, digits, '-' and '_', starting and ending with a letter or digit",
    ),
]
DnsPrefix = Annotated[
    str,
    _pattern(
        DNS_PREFIX, "1-54 letters, digits and '-', starting and ending with a letter or digit"
    ),
]
PoolName = Annotated[
    str,
    _pattern(POOL_NAME, "1-12 lowercase letters and digits, starting with a letter (AKS, Linux)"),
]
Location = Annotated[str, _pattern(LOCATION, "an Azure region name such as 'westeurope'")]
KubernetesVersion = Annotated[
    str, _pattern(K8S_VERSION, "'1.MINOR' or '1.MINOR.PATCH', e.g. '1.33' or '1.33.2'")
]
LabelKey = Annotated[str, AfterValidator(_check_label_key)]
LabelValue = Annotated[str, AfterValidator(_check_label_value)]
Zone = Literal["1", "2", "3"]


def _check_taint(value: str) -> str:
    parse_taint(value)
    return value


def parse_taint(value: str) -> tuple[str, str | None, str]:
    """`key=value:Effect` or `key:Effect` -> (key, value, effect); ValueError with the rule."""
    body, sep, effect = value.rpartition(":")
    if not sep or effect not in TAINT_EFFECTS:
        raise ValueError(
            f"taint {value!r} must be 'key=value:Effect' or 'key:Effect' with Effect one of "
            f"{', '.join(TAINT_EFFECTS)}"
        )
    key, eq, taint_value = body.partition("=")
    problem = label_key_problem(key)
    if problem:
        raise ValueError(f"taint {value!r}: {problem}")
    if eq:
        _check_label_value(taint_value)
        return key, taint_value, effect
    return key, None, effect


Taint = Annotated[str, AfterValidator(_check_taint)]


class VmSize(Model):
    """A VM size the built-in table does not know: what one node has."""

    vcpus: int = Field(ge=1, le=1024)
    memory_gib: float = Field(gt=0, le=65536)
    gpus: int = Field(default=0, ge=0, le=16)


class SystemPoolConfig(Model):
    """The inline system pool: runs kube-system, Kueue and the other controllers."""

    name: PoolName = "system"
    vm_size: str = "Standard_D4s_v5"
    count: int = Field(default=2, ge=1, le=1000)
    autoscaling: bool = False
    min_count: int | None = Field(default=None, ge=1, le=1000)
    max_count: int | None = Field(default=None, ge=1, le=1000)
    max_pods: int | None = Field(default=None, ge=10, le=250)
    zones: list[Zone] = Field(default_factory=list[Zone])
    os_sku: Literal["AzureLinux", "Ubuntu"] = "AzureLinux"
    os_disk_size_gb: int | None = Field(default=None, ge=30, le=2048)
    # Keep application pods off the system pool (taint CriticalAddonsOnly=true:NoSchedule).
    only_critical_addons: bool = True


class PoolConfig(Model):
    """A user node pool: a separate AKS AgentPool scaled by the cluster autoscaler."""

    name: PoolName
    vm_size: str
    min_count: int = Field(default=0, ge=0, le=1000)
    max_count: int = Field(ge=1, le=1000)
    count: int | None = Field(default=None, ge=0, le=1000)
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict[str, str])
    taints: list[Taint] = Field(default_factory=list[str])
    max_pods: int | None = Field(default=None, ge=10, le=250)
    zones: list[Zone] = Field(default_factory=list[Zone])
    os_sku: Literal["AzureLinux", "Ubuntu"] = "AzureLinux"
    os_disk_size_gb: int | None = Field(default=None, ge=30, le=2048)
    priority: Literal["Regular", "Spot"] = "Regular"
    spot_max_price: float | None = None

    @property
    def initial_count(self) -> int:
        """Node count at creation; the autoscaler owns it afterwards."""
        return self.min_count if self.count is None else self.count


def _text_only(value: object) -> object:
    # pydantic would read `true` or `5` as an address (0.0.0.1); YAML users mean a typo.
    if not isinstance(value, str | IPv4Network | IPv4Address):
        raise ValueError(f"must be written as a string such as '10.0.0.0/16', got {value!r}")
    return value


Cidr = Annotated[IPv4Network, BeforeValidator(_text_only)]
IpAddress = Annotated[IPv4Address, BeforeValidator(_text_only)]


class NetworkConfig(Model):
    """Azure CNI. Overlay unless virtual nodes need a VNet node subnet (then `nodeSubnet`)."""

    mode: Literal["overlay", "nodeSubnet"] | None = None
    network_policy: Literal["none", "azure", "calico", "cilium"] = "none"
    pod_cidr: Cidr = IPv4Network("10.244.0.0/16")
    service_cidr: Cidr = IPv4Network("10.0.0.0/16")
    dns_service_ip: IpAddress = IPv4Address("10.0.0.10")
    vnet_cidr: Cidr = IPv4Network("10.224.0.0/12")
    node_subnet_cidr: Cidr = IPv4Network("10.224.0.0/16")
    aci_subnet_cidr: Cidr = IPv4Network("10.225.0.0/16")
    outbound_type: Literal["loadBalancer", "managedNATGateway"] = "loadBalancer"


class VirtualNodesConfig(Model):
    """AKS virtual nodes (the ACI connector add-on, `aciConnectorLinux`)."""

    enabled: bool = False


class AutoscalerProfile(Model):
    """Cluster-autoscaler settings (AKS `autoScalerProfile`); unset keys keep AKS defaults."""

    scan_interval: str | None = Field(default=None, pattern=r"^\d+s$")
    scale_down_unneeded_time: str | None = Field(default=None, pattern=r"^\d+m$")
    scale_down_delay_after_add: str | None = Field(default=None, pattern=r"^\d+m$")
    scale_down_unready_time: str | None = Field(default=None, pattern=r"^\d+m$")
    scale_down_utilization_threshold: float | None = Field(default=None, gt=0, le=1)
    max_graceful_termination_sec: int | None = Field(default=None, ge=0)
    max_node_provision_time: str | None = Field(default=None, pattern=r"^\d+m$")
    new_pod_scale_up_delay: str | None = Field(default=None, pattern=r"^\d+[sm]$")
    expander: Literal["least-waste", "most-pods", "priority", "random"] | None = None
    balance_similar_node_groups: bool | None = None
    skip_nodes_with_system_pods: bool | None = None
    skip_nodes_with_local_storage: bool | None = None


class ExistingCluster(Model):
    """A cluster this stack does not create (existing AKS, kind, k3d): reached by kubeconfig."""

    # One of: a file path (relative to the project), or the name of a secret stack config key
    # (`pulumi config set --secret <key> < kubeconfig`) that holds the kubeconfig document.
    kubeconfig_path: str | None = None
    kubeconfig_secret: str | None = Field(default=None, pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$")
    context: str | None = None


class ClusterConfig(Model):
    """One cluster of the fleet: created on AKS (default) or an existing one."""

    name: ClusterName
    role: Literal["manager", "worker", "standalone"]
    source: Literal["aks", "existing"] = "aks"
    existing: ExistingCluster | None = None
    kubernetes_version: KubernetesVersion | None = None
    location: Location | None = None
    dns_prefix: DnsPrefix | None = None
    sku_tier: Literal["Free", "Standard", "Premium"] = "Free"
    system_pool: SystemPoolConfig = SystemPoolConfig()
    pools: list[PoolConfig] = Field(default_factory=list[PoolConfig], max_length=99)
    virtual_nodes: VirtualNodesConfig = VirtualNodesConfig()
    network: NetworkConfig = NetworkConfig()
    autoscaler_profile: AutoscalerProfile = AutoscalerProfile()
    queues: ClusterQueues = ClusterQueues()
    tags: dict[str, str] = Field(default_factory=dict[str, str])

    @property
    def network_mode(self) -> Literal["overlay", "nodeSubnet"]:
        """The resolved CNI mode: explicit, else node subnet when virtual nodes are on."""
        if self.network.mode is not None:
            return self.network.mode
        return "nodeSubnet" if self.virtual_nodes.enabled else "overlay"

    def pool(self, name: str) -> PoolConfig | None:
        return next((p for p in self.pools if p.name == name), None)


class FleetConfig(Model):
    """The whole stack: shared settings and the clusters."""

    location: Location | None = None
    resource_group: str | None = Field(default=None, min_length=1, max_length=90)
    kubernetes_version: KubernetesVersion = "1.33"
    tags: dict[str, str] = Field(default_factory=dict[str, str])
    vm_sizes: dict[str, VmSize] = Field(default_factory=dict[str, VmSize])
    clusters: list[ClusterConfig] = Field(min_length=1, max_length=50)
    karmada: KarmadaSettings | None = None
    kueue: KueueSettings = KueueSettings()
    multi_kueue: MultiKueueSettings | None = None

    def cluster(self, name: str) -> ClusterConfig | None:
        return next((c for c in self.clusters if c.name == name), None)

    @property
    def manager(self) -> ClusterConfig | None:
        return next((c for c in self.clusters if c.role == "manager"), None)

    @property
    def workers(self) -> list[ClusterConfig]:
        return [c for c in self.clusters if c.role == "worker"]

    def version_of(self, cluster: ClusterConfig) -> str:
        return cluster.kubernetes_version or self.kubernetes_version


def version_tuple(version: str) -> tuple[int, int]:
    """'1.33.2' -> (1, 33)."""
    major, minor, *_ = version.split(".")
    return int(major), int(minor)
