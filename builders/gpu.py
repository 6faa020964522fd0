"""The NVIDIA device plugin on clusters with GPU pools: a pinned Helm release. Pure.

AKS installs the GPU driver on GPU node images, but a node advertises `nvidia.com/gpu` only once
the device plugin runs on it (AKS "Use GPUs for compute-intensive workloads"). The chart's own
default affinity wants Node Feature Discovery labels, which AKS nodes do not carry: the release
instead selects the cluster's GPU pools by AKS's agentpool label and tolerates their taints.
"""

from __future__ import annotations

from typing import Any

from builders.aks import pool_node_taints
from builders.manifest import HelmRelease
from config.models import ClusterConfig, FleetConfig
from config.resolve import gpu_of, gpu_pools
from upstream.aks import AGENTPOOL_LABEL
from upstream.k8s import toleration_for_taint

DEVICE_PLUGIN_CHART = "nvidia-device-plugin"
DEVICE_PLUGIN_REPO = "https://nvidia.github.io/k8s-device-plugin"
DEVICE_PLUGIN_NAMESPACE = "kube-system"


def device_plugin_release(fleet: FleetConfig, cluster: ClusterConfig) -> HelmRelease | None:
    """The release for `cluster`, or None without GPU pools or with `gpu.devicePlugin: false`."""
    settings = gpu_of(fleet, cluster)
    pools = gpu_pools(fleet, cluster)
    if not pools or not settings.device_plugin or cluster.source != "aks":
        return None
    tolerations: list[dict[str, Any]] = []
    for pool in pools:
        for taint in pool_node_taints(pool):
            toleration = toleration_for_taint(taint)
            if toleration not in tolerations:
                tolerations.append(toleration)
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": AGENTPOOL_LABEL,
                                "operator": "In",
                                "values": sorted(p.name for p in pools),
                            }
                        ]
                    }
                ]
            }
        }
    }
    return HelmRelease(
        target=cluster.name,
        release=DEVICE_PLUGIN_CHART,
        chart=DEVICE_PLUGIN_CHART,
        version=settings.device_plugin_version,
        namespace=DEVICE_PLUGIN_NAMESPACE,
        repo=DEVICE_PLUGIN_REPO,
        values={"affinity": affinity, "tolerations": tolerations},
    )
