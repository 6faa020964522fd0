"""Pydantic models of one stack's fleet: `aks-batch-fleet:fleet` in Pulumi.<stack>.yaml.

Field rules that need only one value live here (types, ranges, name syntax); rules that relate
several fields or objects live in `checks`, so that every error is reported at once.
Keys are camelCase in YAML (`maxCount`) and snake_case in Python (`max_count`).
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network
from typing import Literal

from pydantic import Field

from config.base import Model
from config.credentials import CredentialSettings
from config.frameworks import OperatorsSettings
from config.karmada import KarmadaSettings
from config.kueue import KueueObjects, KueueSettings
from config.monitoring import MonitoringSettings
from config.multikueue import MultiKueueSettings
from config.types import (
    Cidr,
    ClusterName,
    DnsLabel,
    DnsPrefix,
    EntraObjectId,
    IpAddress,
    KubernetesVersion,
    LabelKey,
    LabelValue,
    Location,
    PoolName,
    TagName,
    TagValue,
    Taint,
    Zone,
)
from config.upgrades import PoolUpgradeSettings, UpgradeSettings
from upstream.aks import MAX_TAGS, NVIDIA_DEVICE_PLUGIN_CHART_VERSION


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
    # How AKS replaces this pool's nodes in an upgrade (else the cluster's upgrades.nodePools).
    upgrade_settings: PoolUpgradeSettings | None = None


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
    # The pool's orchestratorVersion when it is to lag its control plane (else the cluster's):
    # never newer, at most 3 minors behind (checks.upgrades).
    kubernetes_version: KubernetesVersion | None = None
    # How AKS replaces this pool's nodes in an upgrade (else the cluster's upgrades.nodePools).
    upgrade_settings: PoolUpgradeSettings | None = None

    @property
    def initial_count(self) -> int:
        """Node count at creation; the autoscaler owns it afterwards."""
        return self.min_count if self.count is None else self.count


class NetworkConfig(Model):
    """Azure CNI. Overlay unless virtual nodes need a VNet node subnet (then `nodeSubnet`)."""

    mode: Literal["overlay", "nodeSubnet"] | None = None
    network_policy: Literal["none", "azure", "calico", "cilium"] = "none"
    # Azure CNI Powered by Cilium; `networkPolicy: cilium` needs it (checks.aks).
    network_dataplane: Literal["azure", "cilium"] = "azure"
    pod_cidr: Cidr = IPv4Network("10.244.0.0/16")
    service_cidr: Cidr = IPv4Network("10.0.0.0/16")
    dns_service_ip: IpAddress = IPv4Address("10.0.0.10")
    vnet_cidr: Cidr = IPv4Network("10.224.0.0/12")
    node_subnet_cidr: Cidr = IPv4Network("10.224.0.0/16")
    aci_subnet_cidr: Cidr = IPv4Network("10.225.0.0/16")
    outbound_type: Literal["loadBalancer", "managedNATGateway"] = "loadBalancer"


class GroupAccess(Model):
    """An Entra ID group and the AKS RBAC role it gets on the cluster (or one namespace)."""

    object_id: EntraObjectId
    role: Literal["clusterAdmin", "admin", "writer", "reader"]
    namespace: DnsLabel | None = None


class AccessConfig(Model):
    """Who reaches a cluster's API server, and how (docs/configuration.md, "Access").

    The default is AKS-managed Entra ID with Azure RBAC and no local accounts: no certificate
    credential exists, and every person and the deploying identity is an Azure role assignment.
    """

    entra_id: bool = True
    azure_rbac: bool = True
    local_accounts: bool = False
    # Entra groups that are cluster-admin through Kubernetes RBAC (AKS aadProfile).
    admin_group_object_ids: list[EntraObjectId] = Field(default_factory=list[str])
    # Empty: the public API server takes any source address. AKS adds the cluster's own egress.
    authorized_ip_ranges: list[Cidr] = Field(default_factory=list[IPv4Network], max_length=200)
    # With ranges set: the fleet clusters that call this API server (the MultiKueue manager for a
    # worker, the Karmada host for a member) get a static egress Public IP, admitted here as /32
    # in the same `up` (builders.egress). False: list their egress in the ranges yourself.
    admit_fleet_egress: bool = True
    groups: list[GroupAccess] = Field(default_factory=list[GroupAccess])
    # The identity running `pulumi up` gets AKS RBAC Cluster Admin on the cluster (Azure RBAC).
    deploy_identity_role: Literal["clusterAdmin", "none"] = "clusterAdmin"
    # How the program's Kubernetes provider gets its Entra token (kubelogin `--login`).
    provider_login: Literal["azurecli", "workloadidentity", "msi", "spn"] = "azurecli"
    # How long `up` waits, before the first Kubernetes object, for the API server to authorize
    # the deploying identity (Entra ID clusters; 0: no wait). Azure: up to 5 minutes.
    authorization_timeout_seconds: int = Field(default=600, ge=0, le=3600)


class GpuSettings(Model):
    """The NVIDIA device plugin, so GPU nodes advertise `nvidia.com/gpu` (docs/configuration.md)."""

    device_plugin: bool = True
    # Chart nvidia-device-plugin (pin: upstream/aks.py).
    device_plugin_version: str = Field(
        default=NVIDIA_DEVICE_PLUGIN_CHART_VERSION, pattern=r"^\d+\.\d+\.\d+$"
    )


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
    # How long `up` waits, before the first Kubernetes object, for the API server to authorize
    # the kubeconfig's identity (a binding made just before `up`); 0: no check.
    authorization_timeout_seconds: int = Field(default=0, ge=0, le=3600)


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
    # AKSLongTermSupport (needs skuTier Premium) keeps a minor a year past its end of life.
    support_plan: Literal["KubernetesOfficial", "AKSLongTermSupport"] = "KubernetesOfficial"
    # Replaces the fleet's `upgrades` for this cluster (whole, not merged).
    upgrades: UpgradeSettings | None = None
    system_pool: SystemPoolConfig = SystemPoolConfig()
    # At most 99 (AKS: 100 node pools a cluster): checks.fleet says so with Azure's source.
    pools: list[PoolConfig] = Field(default_factory=list[PoolConfig])
    virtual_nodes: VirtualNodesConfig = VirtualNodesConfig()
    network: NetworkConfig = NetworkConfig()
    autoscaler_profile: AutoscalerProfile = AutoscalerProfile()
    queues: KueueObjects = KueueObjects()
    tags: dict[TagName, TagValue] = Field(default_factory=dict[str, str], max_length=MAX_TAGS)
    # Replaces the fleet's `access` for this cluster (whole, not merged).
    access: AccessConfig | None = None
    gpu: GpuSettings | None = None

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
    # What the stack is for: `production` turns placeholder and non-public authorized ranges from
    # warnings into errors (checks.aks_rules); unset is judged like development.
    environment: Literal["development", "staging", "production"] | None = None
    # The deploying identity's Azure principal type, sent on its role assignments (ARM refuses a
    # mismatch, UnmatchedPrincipalType). auto: read from the login (config.login).
    deployer_principal_type: Literal["auto", "User", "ServicePrincipal"] = "auto"
    # A minor AKS serves and the pinned Kueue is tested on (docs/upgrades.md says why 1.36).
    kubernetes_version: KubernetesVersion = "1.36"
    tags: dict[TagName, TagValue] = Field(default_factory=dict[str, str], max_length=MAX_TAGS)
    vm_sizes: dict[str, VmSize] = Field(default_factory=dict[str, VmSize])
    clusters: list[ClusterConfig] = Field(min_length=1)
    karmada: KarmadaSettings | None = None
    kueue: KueueSettings = KueueSettings()
    multi_kueue: MultiKueueSettings | None = None
    access: AccessConfig = AccessConfig()
    gpu: GpuSettings = GpuSettings()
    upgrades: UpgradeSettings = UpgradeSettings()
    credentials: CredentialSettings = CredentialSettings()
    monitoring: MonitoringSettings = MonitoringSettings()
    # Job operators for kueue.frameworks beyond the built-in kinds (docs/ai-jobs.md).
    operators: OperatorsSettings = OperatorsSettings()

    def cluster(self, name: str) -> ClusterConfig | None:
        return next((c for c in self.clusters if c.name == name), None)

    @property
    def manager(self) -> ClusterConfig | None:
        return next((c for c in self.clusters if c.role == "manager"), None)

    @property
    def workers(self) -> list[ClusterConfig]:
        return [c for c in self.clusters if c.role == "worker"]

    def version_of(self, cluster: ClusterConfig) -> str:
        """A cluster's control plane version: its own, else the fleet's."""
        return cluster.kubernetes_version or self.kubernetes_version

    def known_version_of(self, cluster: ClusterConfig) -> str | None:
        """`version_of` for an AKS cluster the stack creates; None for an existing one, whose
        version is not the stack's to know (its namespaces' Pod Security labels say `latest`)."""
        return self.version_of(cluster) if cluster.source == "aks" else None

    def upgrades_of(self, cluster: ClusterConfig) -> UpgradeSettings:
        """The cluster's `upgrades`, else the fleet's (a cluster's section replaces it whole)."""
        return cluster.upgrades if cluster.upgrades is not None else self.upgrades

    def pool_version_of(self, cluster: ClusterConfig, pool: PoolConfig | SystemPoolConfig) -> str:
        """A pool's orchestratorVersion: a user pool's own, else its cluster's, else the fleet's.

        The system pool has no version of its own: it moves with its control plane.
        """
        own = pool.kubernetes_version if isinstance(pool, PoolConfig) else None
        return own or self.version_of(cluster)
