"""AKS facts: naming rules, labels and taints AKS sets, VM shapes and node reservations.

Node and pool capacity follow AKS's published reservation rules (pure functions).

Source: AKS "Node resource reservations" (learn.microsoft.com, node-resource-reservations, 2026-06),
as they stood at that date:
- CPU kube-reserved by core count: 1->60m, 2->100m, 4->140m, 8->180m, 16->260m, 32->420m, 64->740m.
  Between and beyond the published points we use the line through them (+20m a core from 2 to 4,
  +10m a core above 4), which hits every published point exactly.
- Memory on Kubernetes >= 1.29: kube-reserved = min(20 MiB x maxPods + 50 MiB, 25% of RAM), plus the
  hard eviction threshold of 100 MiB. (The doc writes MB and computes with MiB; so do we.)
- Default maxPods: Azure CNI Overlay 250, Azure CNI with a node subnet 30.
The result is the most a pool can ever give pods: it ignores DaemonSets and OS overhead beyond the
reservation, so quotas near it are still optimistic (docs/capacity.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

# ------------------------------------------------------------------------------------------------
# Names AKS and ARM accept (learn.microsoft.com: create-node-pools, AKS resource naming rules).
CLUSTER_NAME: Final = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?$")
DNS_PREFIX: Final = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,52}[A-Za-z0-9])?$")
POOL_NAME: Final = re.compile(r"^[a-z][a-z0-9]{0,11}$")
LOCATION: Final = re.compile(r"^[a-z][a-z0-9]{1,40}$")
K8S_VERSION: Final = re.compile(r"^1\.(\d{2})(?:\.(\d{1,3}))?$")
# Entra ID object ids (groups, users, service principals) are GUIDs.
ENTRA_OBJECT_ID: Final = re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")

# The NVIDIA device plugin chart (https://nvidia.github.io/k8s-device-plugin): AKS GPU node images
# carry the driver, but a node advertises `nvidia.com/gpu` only with the plugin.
NVIDIA_DEVICE_PLUGIN_CHART_VERSION: Final = "0.17.1"
# The extended resource the plugin advertises a node's GPUs as, and what a pod or quota asks for.
GPU_RESOURCE: Final = "nvidia.com/gpu"
# The label AKS puts on a node it could not drain in an upgrade with `undrainableNodeBehavior:
# Cordon` (AgentPool upgradeSettings, API 2024-07-01 and on: "The blocked nodes will have label
# 'kubernetes.azure.com/upgrade-status:Quarantined'"); the node stays cordoned until a later run.
QUARANTINE_LABEL: Final = ("kubernetes.azure.com/upgrade-status", "Quarantined")

# The AKS-managed cluster autoscaler serves the ProvisioningRequest API from Kubernetes 1.33 (read
# 2026-12-03): Azure/AKS pull request #5867 (merged 2026-09, the "Kueue and Cluster Autoscaler Gang
# Scheduling on AKS" example), whose authors set the minimum to 1.33 "when ProvisioningRequest
# support shipped in the AKS cluster autoscaler". Azure/AKS#5492 (a 1.33.3 cluster without it,
# 2025-12 to 2026-02) predates that rollout. AKS exposes no setting for it either way.
PROVISIONING_REQUEST_SINCE: Final = (1, 33)
PROVISIONING_REQUEST_SOURCE: Final = "Azure/AKS#5867"

# Azure tags (learn.microsoft.com: tag-resources, "Limitations"): at most 50 name/value pairs on a
# resource, names up to 512 characters (without < > % & \ ? /, and not starting with the prefixes
# Azure keeps for itself), values up to 256. ARM refuses others (InvalidTagNameCharacters).
MAX_TAGS: Final = 50
MAX_TAG_NAME: Final = 512
MAX_TAG_VALUE: Final = 256
TAG_NAME_FORBIDDEN: Final = frozenset("<>%&\\?/")
TAG_NAME_RESERVED_PREFIXES: Final = ("microsoft", "azure", "windows")


def tag_name_problem(name: str) -> str | None:
    """Why Azure refuses `name` as a tag name, or None."""
    if not name or len(name) > MAX_TAG_NAME:
        return f"a tag name has 1 to {MAX_TAG_NAME} characters"
    bad = sorted(TAG_NAME_FORBIDDEN.intersection(name))
    if bad:
        return f"a tag name cannot contain {' '.join(bad)}"
    if name.lower().startswith(TAG_NAME_RESERVED_PREFIXES):
        return f"tag names starting with {', '.join(TAG_NAME_RESERVED_PREFIXES)} are Azure's"
    return None


def tag_value_problem(value: str) -> str | None:
    """Why Azure refuses `value` as a tag value, or None."""
    if len(value) > MAX_TAG_VALUE:
        return f"a tag value has at most {MAX_TAG_VALUE} characters"
    return None


# Labels and taints AKS sets on nodes itself.
# AKS rejects custom node labels under these prefixes, and sets `agentpool` itself.
RESERVED_LABEL_PREFIXES: Final = ("kubernetes.azure.com/", "kubernetes.io/", "k8s.io/")
AGENTPOOL_LABEL: Final = "kubernetes.azure.com/agentpool"
AGENTPOOL_LABELS: Final = ("agentpool", AGENTPOOL_LABEL)
CRITICAL_ADDONS_TAINT: Final = "CriticalAddonsOnly=true:NoSchedule"
SPOT_TAINT: Final = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
SPOT_LABEL: Final = ("kubernetes.azure.com/scalesetpriority", "spot")
# Virtual nodes (ACI connector): what the virtual-kubelet node carries.
VIRTUAL_NODE_LABELS: Final = {"type": "virtual-kubelet", "kubernetes.io/role": "agent"}
VIRTUAL_NODE_TOLERATION: Final = {"key": "virtual-kubelet.io/provider", "operator": "Exists"}
# The AKS virtual-node docs (articles/aks/virtual-nodes-cli.md, "Deploy a sample app") tolerate
# both the provider taint and `azure.com/aci` (NoSchedule), which ACI connector versions put on
# the node; a pod that tolerates only the first never lands on a node carrying the second.
ACI_TOLERATION: Final = {"key": "azure.com/aci", "operator": "Exists", "effect": "NoSchedule"}
VIRTUAL_NODE_TOLERATIONS: Final = (VIRTUAL_NODE_TOLERATION, ACI_TOLERATION)
# cloud-provider-azure Service annotations (kubernetes-sigs.github.io/cloud-provider-azure).
PIP_NAME_ANNOTATION: Final = "service.beta.kubernetes.io/azure-pip-name"
PIP_GROUP_ANNOTATION: Final = "service.beta.kubernetes.io/azure-load-balancer-resource-group"
INTERNAL_ANNOTATION: Final = "service.beta.kubernetes.io/azure-load-balancer-internal"
IPV4_ANNOTATION: Final = "service.beta.kubernetes.io/azure-load-balancer-ipv4"
# NSG source ranges for the Service (cloud-provider-azure >= 1.27), for a Service whose owner
# cannot set loadBalancerSourceRanges (Karmada's chart offers only serviceAnnotations).
ALLOWED_RANGES_ANNOTATION: Final = "service.beta.kubernetes.io/azure-allowed-ip-ranges"


@dataclass(frozen=True, slots=True)
class VmShape:
    """What one VM of a size has."""

    vcpus: int
    memory_mib: int
    gpus: int = 0


def _family(
    template: str, sizes: Mapping[int, float], gpus: Mapping[int, int] | None = None
) -> dict[str, VmShape]:
    """Expand a family: template with `{n}` for the vCPU count, memory GiB per count."""
    return {
        template.format(n=n): VmShape(n, round(gib * 1024), (gpus or {}).get(n, 0))
        for n, gib in sizes.items()
    }


_D4 = {2: 8, 4: 16, 8: 32, 16: 64, 32: 128, 48: 192, 64: 256, 96: 384}
_E8 = {2: 16, 4: 32, 8: 64, 16: 128, 20: 160, 32: 256, 48: 384, 64: 512, 96: 672}
_F2 = {2: 4, 4: 8, 8: 16, 16: 32, 32: 64, 48: 96, 64: 128}

VM_SIZES: dict[str, VmShape] = {
    # General purpose, 4 GiB a vCPU: D v5 (Intel, AMD), with and without local disk; D v3/v4.
    **_family("Standard_D{n}s_v5", _D4),
    **_family("Standard_D{n}ds_v5", _D4),
    **_family("Standard_D{n}_v5", _D4),
    **_family("Standard_D{n}d_v5", _D4),
    **_family("Standard_D{n}as_v5", _D4),
    **_family("Standard_D{n}ads_v5", _D4),
    **_family("Standard_D{n}s_v4", {k: v for k, v in _D4.items() if k <= 64}),
    **_family("Standard_D{n}ds_v4", {k: v for k, v in _D4.items() if k <= 64}),
    **_family("Standard_D{n}s_v3", {k: v for k, v in _D4.items() if k <= 64}),
    # Memory optimised, 8 GiB a vCPU (E96 v5 has 672 GiB).
    **_family("Standard_E{n}s_v5", _E8),
    **_family("Standard_E{n}ds_v5", _E8),
    **_family("Standard_E{n}_v5", _E8),
    **_family("Standard_E{n}as_v5", _E8),
    **_family("Standard_E{n}ads_v5", _E8),
    # Compute optimised, 2 GiB a vCPU. Azure has no F v5; Fsv2 and Fasv6/Falsv6 are current.
    **_family("Standard_F{n}s_v2", {**_F2, 72: 144}),
    **_family("Standard_F{n}als_v6", _F2),
    **_family("Standard_F{n}as_v6", {n: g * 2 for n, g in _F2.items()}),
    # GPU sizes that AKS users pick for batch and training.
    "Standard_NC4as_T4_v3": VmShape(4, 28 * 1024, 1),
    "Standard_NC8as_T4_v3": VmShape(8, 56 * 1024, 1),
    "Standard_NC16as_T4_v3": VmShape(16, 110 * 1024, 1),
    "Standard_NC64as_T4_v3": VmShape(64, 440 * 1024, 4),
    "Standard_NC6s_v3": VmShape(6, 112 * 1024, 1),
    "Standard_NC12s_v3": VmShape(12, 224 * 1024, 2),
    "Standard_NC24s_v3": VmShape(24, 448 * 1024, 4),
    "Standard_NC24ads_A100_v4": VmShape(24, 220 * 1024, 1),
    "Standard_NC48ads_A100_v4": VmShape(48, 440 * 1024, 2),
    "Standard_NC96ads_A100_v4": VmShape(96, 880 * 1024, 4),
    "Standard_ND96asr_v4": VmShape(96, 900 * 1024, 8),
    "Standard_ND96amsr_A100_v4": VmShape(96, 1900 * 1024, 8),
    "Standard_NC40ads_H100_v5": VmShape(40, 320 * 1024, 1),
    "Standard_NC80adis_H100_v5": VmShape(80, 640 * 1024, 2),
    "Standard_ND96isr_H100_v5": VmShape(96, 1900 * 1024, 8),
    "Standard_NV36ads_A10_v5": VmShape(36, 440 * 1024, 1),
}

_SIZE_SYNTAX = re.compile(r"^Standard_[A-Za-z0-9_]+$")

# ------------------------------------------------------------------------------------------------
# AKS limits and default quotas, as Azure states them ("Quotas, virtual machine size restrictions,
# and region availability in AKS", learn.microsoft.com/azure/aks/quotas-skus-regions, 2026).
QUOTA_SOURCE: Final = "learn.microsoft.com/azure/aks/quotas-skus-regions"
MAX_NODE_POOLS: Final = 100  # per cluster, the system pool included (a hard limit)
CLUSTERS_PER_REGION: Final = 100  # per subscription and region: a default quota, raisable
CLUSTERS_PER_SUBSCRIPTION: Final = 5000  # all regions
# Regional vCPU quotas (total and per VM family) differ per subscription: `az vm list-usage`.
VCPU_QUOTA_HINT: Final = "az vm list-usage --location <region>"
_SIZE_PARTS = re.compile(r"^Standard_([A-Z]+)\d+([a-z]*)((?:_[A-Z][A-Za-z0-9]*)?)_(v\d+)$")


def vcpu_family(size: str) -> str:
    """The VM family a size draws vCPU quota from, as Azure abbreviates it ('DSv5', 'FSv2').

    Read from the size name (series, feature letters, version); Azure's quota names for a few GPU
    families differ in form, so the plan says to compare with `az vm list-usage`.
    """
    m = _SIZE_PARTS.match(size)
    if m is None:
        return size
    series, features, accelerator, version = m.groups()
    return f"{series}{features.upper()}{version}{accelerator}"


EVICTION_MIB = 100
DEFAULT_MAX_PODS = {"overlay": 250, "nodeSubnet": 30}


@dataclass(frozen=True, slots=True)
class NodeAllocatable:
    """What pods may request on one node."""

    cpu_millis: int
    memory_mib: int
    gpus: int


@dataclass(frozen=True, slots=True)
class PoolCapacity:
    """A pool's node shape and the totals at its minimum (always on) and maximum node counts."""

    vm_size: str
    shape: VmShape
    node: NodeAllocatable
    min_nodes: int
    max_nodes: int

    @property
    def max_cpu_millis(self) -> int:
        return self.node.cpu_millis * self.max_nodes

    @property
    def max_memory_mib(self) -> int:
        return self.node.memory_mib * self.max_nodes

    @property
    def max_gpus(self) -> int:
        return self.node.gpus * self.max_nodes

    def max_of(self, resource: str) -> int | None:
        """Maximum allocatable of a Kubernetes resource name, in base units (m, Mi, count)."""
        return {
            "cpu": self.max_cpu_millis,
            "memory": self.max_memory_mib,
            GPU_RESOURCE: self.max_gpus,
        }.get(resource)


def lookup_vm(size: str, custom: Mapping[str, VmShape] | None = None) -> VmShape | None:
    """Shape of a VM size: custom declarations first, then the built-in table (case-insensitive)."""
    table = {**VM_SIZES, **(custom or {})}
    if size in table:
        return table[size]
    folded = {k.lower(): v for k, v in table.items()}
    return folded.get(size.lower())


def is_plausible_size(size: str) -> bool:
    return bool(_SIZE_SYNTAX.match(size))


def cpu_reserved_millis(vcpus: int) -> int:
    """AKS kube-reserved CPU for a node with `vcpus` cores."""
    if vcpus <= 1:
        return 60
    if vcpus <= 4:
        return 100 + 20 * (vcpus - 2)
    return 140 + 10 * (vcpus - 4)


def memory_reserved_mib(memory_mib: int, max_pods: int) -> int:
    """AKS (>= 1.29) kube-reserved memory plus the 100 MiB hard eviction threshold."""
    return min(20 * max_pods + 50, memory_mib // 4) + EVICTION_MIB


def node_allocatable(shape: VmShape, max_pods: int) -> NodeAllocatable:
    return NodeAllocatable(
        cpu_millis=shape.vcpus * 1000 - cpu_reserved_millis(shape.vcpus),
        memory_mib=shape.memory_mib - memory_reserved_mib(shape.memory_mib, max_pods),
        gpus=shape.gpus,
    )


def pool_capacity(
    vm_size: str, shape: VmShape, max_pods: int, min_nodes: int, max_nodes: int
) -> PoolCapacity:
    return PoolCapacity(vm_size, shape, node_allocatable(shape, max_pods), min_nodes, max_nodes)


def format_millis(millis: int) -> str:
    """Millicores as cores for people: 19300 -> '19.3'."""
    return f"{millis / 1000:g}"


def format_mib(mib: int) -> str:
    return f"{mib / 1024:.1f}Gi" if mib >= 1024 else f"{mib}Mi"


# ------------------------------------------------------------------------------------------------
# Network combinations AKS refuses at create time, one line each (the rule and where it is stated).
RULE_CILIUM_POLICY: Final = (
    "AKS refuses networkPolicy 'cilium' unless networkDataplane is 'cilium' "
    "(NetworkPolicy enum, API 2025-09-01)"
)
RULE_CILIUM_DATAPLANE: Final = (
    "the Cilium dataplane enforces policy itself: AKS refuses networkPolicy 'azure' or 'calico' "
    "with it (Azure CNI Powered by Cilium)"
)
RULE_MANAGED_NAT: Final = (
    "managed NAT gateway is incompatible with custom virtual networks, and nodeSubnet mode puts "
    "the cluster in the program's own VNet (AKS docs, nat-gateway)"
)
RULE_VIRTUAL_NODE_POLICY: Final = (
    "virtual nodes do not enforce Kubernetes network policies for ACI pods (AKS virtual nodes "
    "limitations)"
)
RULE_VIRTUAL_NODE_RANGES: Final = (
    "AKS virtual nodes do not support API server authorized IP ranges (AKS virtual nodes "
    "limitations: ACI pods must reach the API server to configure their networking)"
)
RULE_EGRESS_OUTBOUND: Final = (
    "a static egress the fleet can admit is a Public IP set as the load balancer's outbound IP "
    "(networkProfile.loadBalancerProfile.outboundIPs); a managed NAT gateway's IPs are AKS's and "
    "known only after the cluster exists"
)
RULE_LOCAL_ACCOUNTS: Final = (
    "AKS allows disableLocalAccounts only on clusters with Entra ID integration (ManagedCluster "
    "disableLocalAccounts)"
)
RULE_AZURE_RBAC: Final = "Azure RBAC for Kubernetes authorization needs AKS-managed Entra ID"

# "New role assignments can take up to five minutes to propagate and be updated by the
# authorization server." (learn.microsoft.com/azure/aks/manage-azure-rbac, "Before you begin",
# read 2026-12-03). So `up` waits, before its first Kubernetes object on an Entra ID cluster, until
# the API server authorizes the deploying identity (`access.authorizationTimeoutSeconds`).
AZURE_RBAC_PROPAGATION_MINUTES: Final = 5

# Built-in Azure roles (learn.microsoft.com, Azure built-in roles: Containers, Networking, General).
ROLE_CONTRIBUTOR: Final = "b24988ac-6180-42a0-ab88-20f7382dd24c"
ROLE_NETWORK_CONTRIBUTOR: Final = "4d97b98b-1d4f-4787-a291-c67834d212e7"
AKS_RBAC_ROLES: Final = {
    "clusterAdmin": "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b",  # AKS RBAC Cluster Admin
    "admin": "3498e952-d568-435e-9b2c-8d77e338d7f7",  # AKS RBAC Admin
    "writer": "a7ffa36f-339b-4b5c-8bdf-e2c188b2c0eb",  # AKS RBAC Writer
    "reader": "7f6c6a51-bcf8-42ba-9220-52d62157d7db",  # AKS RBAC Reader
}
# Azure Kubernetes Service Cluster User Role: listClusterUserCredential (the kubeconfig itself).
ROLE_AKS_CLUSTER_USER: Final = "4abbcc35-e782-43d8-92c5-2d3f1bd2253f"
# Display names of the roles above (Azure built-in roles), and how far each reaches: a grant
# whose rank rises widens access.
ROLE_NAMES: Final = {
    ROLE_CONTRIBUTOR: "Contributor",
    ROLE_NETWORK_CONTRIBUTOR: "Network Contributor",
    AKS_RBAC_ROLES["clusterAdmin"]: "Azure Kubernetes Service RBAC Cluster Admin",
    AKS_RBAC_ROLES["admin"]: "Azure Kubernetes Service RBAC Admin",
    AKS_RBAC_ROLES["writer"]: "Azure Kubernetes Service RBAC Writer",
    AKS_RBAC_ROLES["reader"]: "Azure Kubernetes Service RBAC Reader",
    ROLE_AKS_CLUSTER_USER: "Azure Kubernetes Service Cluster User Role",
}
# The AKS server application every Entra token for an AKS API server is issued for (kubelogin).
AKS_ENTRA_SERVER_ID: Final = "6dae42f8-4368-4678-94ff-3960e28e3630"
# kubelogin login modes that need no person at the keyboard (kubelogin `get-token --login`).
KUBELOGIN_NONINTERACTIVE: Final = ("azurecli", "workloadidentity", "msi", "spn")
