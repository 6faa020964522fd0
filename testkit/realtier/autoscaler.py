"""The real cluster-autoscaler in a twin: its kwok cloud provider scales the twin's AKS pools.

A twin's user pools (AKS AgentPools the autoscaler owns) start at their `minCount` instead of
`maxCount`; on each plane that has such pools the pinned cluster-autoscaler
(`scripts/build-real-tier-tools --only cluster-autoscaler`, built with `-tags kwok`) runs with
`--cloud-provider=kwok --enable-provisioning-requests`, so Kueue's ProvisioningRequests (class
`best-effort-atomic-scale-up.autoscaling.x-k8s.io`) are answered by the autoscaler itself: it books
the capacity, creates the pool's nodes (kwok keeps them Ready) and removes them when they are no
longer needed.

The mapping (one AKS pool = one kwok node group):
- the group key is the `kubernetes.azure.com/agentpool` label (`nodegroups.fromNodeLabelKey`);
- the template of a pool is the node the twin would register for it (testkit/realtier/twin.py:
  labels, taints, capacity, allocatable), with the pool's min/max as the provider's
  `cluster-autoscaler.kwok.nodegroup/min-count` / `max-count` annotations;
- both ConfigMaps (`kwok-provider-config`, `kwok-provider-templates`) are JSON, in kube-system,
  the namespace the autoscaler runs in (POD_NAMESPACE);
- the provider's own `kwok-provider` NoSchedule taint is off (`nodes.skipTaint`): AKS nodes have
  no such taint;
- a pool with `minCount > 0` gets its first `minCount` nodes registered by the twin, annotated as
  members of their node group (the provider counts them in the group's size).

Scale-down runs with the stack's own times (`scale_down_flags`: the cluster's
`autoScalerProfile.scaleDownUnneededTime` / `scaleDownDelayAfterAdd`, else AKS's defaults, 10m /
10m), so nodes stay for the length of a test. Only a test that watches nodes go asks for short ones
(`FAST_SCALE_DOWN`, seconds). Short times everywhere would make a flake likely (a Job admitted on a
worker, its pods Pending for minutes), as they make two races of the pinned autoscaler likely: a
ProvisioningRequest answered with capacity on a node that the same loop then removes as unneeded
(cluster-autoscaler 1.33.0, core/static_autoscaler.go: scale-down runs after a `ScaleUpNotNeeded`
loop; processors/provreq/processor.go books the request's capacity only from the next loop), or a
new node removed as unneeded before the admitted Job's pods reach it. Either way the pods stay
Pending: pods that consume a Provisioned request never trigger a scale-up. On AKS the same window
needs a node unneeded for minutes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from config.models import AutoscalerProfile, FleetConfig
from testkit.realtier.harness import ControlPlane, StartError, apply, find_tool, free_port
from testkit.realtier.twin import PoolNodes, fleet_nodes
from upstream.aks import AGENTPOOL_LABEL

TOOL: Final = "cluster-autoscaler"
NAMESPACE: Final = "kube-system"
CONFIG_MAP: Final = "kwok-provider-config"
TEMPLATES_MAP: Final = "kwok-provider-templates"
# The kwok provider's annotations (cloudprovider/kwok/kwok_constants.go).
GROUP_ANNOTATION: Final = "cluster-autoscaler.kwok.nodegroup/name"
MIN_ANNOTATION: Final = "cluster-autoscaler.kwok.nodegroup/min-count"
MAX_ANNOTATION: Final = "cluster-autoscaler.kwok.nodegroup/max-count"
DESIRED_ANNOTATION: Final = "cluster-autoscaler.kwok.nodegroup/desired-count"
# AKS's defaults for the two scale-down times a stack may set (ManagedCluster
# `autoScalerProfile` API reference: "The default is '10m'" for both; read 2026-12-04).
AKS_SCALE_DOWN_UNNEEDED_TIME: Final = "10m"
AKS_SCALE_DOWN_DELAY_AFTER_ADD: Final = "10m"
# Short, so a test sees a scale-down within seconds: a shortened back-off, for the one test
# that watches nodes go (test_provisioning_gate).
FAST_SCALE_DOWN: Final = (
    "--scale-down-unneeded-time=10s",
    "--scale-down-delay-after-add=0s",
    "--scale-down-delay-after-delete=0s",
    "--scale-down-delay-after-failure=5s",
)
SCAN_INTERVAL: Final = "2s"
READY_TIMEOUT: Final = 60.0


def find_autoscaler() -> tuple[Path | None, str]:
    """The built cluster-autoscaler, or why not."""
    return find_tool(TOOL)


def provider_id(name: str) -> str:
    """What the kwok provider writes into a node's spec.providerID (getProviderID)."""
    return f"kwok:{name}"


def _user_pools(fleet: FleetConfig, cluster: str) -> dict[str, tuple[int, int]]:
    """Pool name -> (minCount, maxCount) of the cluster's user pools (the autoscaler's)."""
    config = fleet.cluster(cluster)
    assert config is not None
    return {p.name: (p.min_count, p.max_count) for p in config.pools}


def nodes_at_min(fleet: FleetConfig) -> dict[str, list[PoolNodes]]:
    """The twin's nodes with every user pool at its minCount (the rest as the twin has them);
    the kept nodes of a pool are members of its node group."""
    out: dict[str, list[PoolNodes]] = {}
    for cluster, groups in fleet_nodes(fleet).items():
        pools = _user_pools(fleet, cluster)
        kept: list[PoolNodes] = []
        for group in groups:
            if group.pool not in pools:
                kept.append(group)
                continue
            members = tuple(_member(n, group.pool) for n in group.nodes[: pools[group.pool][0]])
            kept.append(replace(group, nodes=members))
        out[cluster] = kept
    return out


def _member(node: Mapping[str, Any], pool: str) -> dict[str, Any]:
    name = str(node["metadata"]["name"])
    meta = dict(node["metadata"])
    meta["annotations"] = {**meta.get("annotations", {}), GROUP_ANNOTATION: pool}
    return {
        **node,
        "metadata": meta,
        "spec": {**node.get("spec", {}), "providerID": provider_id(name)},
    }


def templates(fleet: FleetConfig, cluster: str) -> list[dict[str, Any]]:
    """One template Node per user pool of the cluster: the node the twin would register for it,
    with the pool's min/max (and its current size, minCount) as the provider's annotations."""
    pools = _user_pools(fleet, cluster)
    out: list[dict[str, Any]] = []
    for group in fleet_nodes(fleet)[cluster]:
        if group.pool not in pools or not group.nodes:
            continue
        low, high = pools[group.pool]
        node = json.loads(json.dumps(group.nodes[0]))
        node["metadata"]["name"] = group.pool
        node["metadata"]["labels"].pop("kubernetes.io/hostname", None)
        node["metadata"]["annotations"].update(
            {MIN_ANNOTATION: str(low), MAX_ANNOTATION: str(high), DESIRED_ANNOTATION: str(low)}
        )
        out.append(node)
    return out


def provider_config_maps(fleet: FleetConfig, cluster: str) -> list[dict[str, Any]]:
    """The kwok provider's two ConfigMaps for one cluster (JSON inside)."""
    return kwok_config_maps(templates(fleet, cluster))


def kwok_config_maps(node_templates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The kwok provider's two ConfigMaps: its config, and one template Node per node group."""
    config = {
        "apiVersion": "v1alpha1",
        "readNodesFrom": "configmap",
        "nodegroups": {"fromNodeLabelKey": AGENTPOOL_LABEL},
        "nodes": {"skipTaint": True},
        "configmap": {"name": TEMPLATES_MAP},
    }
    node_list = {"apiVersion": "v1", "kind": "List", "items": node_templates}

    def config_map(name: str, key: str, value: Any) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "data": {key: json.dumps(value, sort_keys=True)},
        }

    return [
        config_map(CONFIG_MAP, "config", config),
        config_map(TEMPLATES_MAP, "templates", node_list),
    ]


def scale_down_flags(profile: AutoscalerProfile) -> tuple[str, ...]:
    """The scale-down times a cluster's `autoScalerProfile` gives its autoscaler on AKS."""
    unneeded = profile.scale_down_unneeded_time or AKS_SCALE_DOWN_UNNEEDED_TIME
    after_add = profile.scale_down_delay_after_add or AKS_SCALE_DOWN_DELAY_AFTER_ADD
    return (f"--scale-down-unneeded-time={unneeded}", f"--scale-down-delay-after-add={after_add}")


def autoscaler_args(
    binary: Path,
    plane: ControlPlane,
    expander: str | None,
    scale_down: Sequence[str],
) -> list[str]:
    """argv of one plane's autoscaler (env first: the kwok provider reads its kubeconfig from
    KUBECONFIG in `local` mode, its ConfigMaps from POD_NAMESPACE)."""
    return [
        "/usr/bin/env",
        "KWOK_PROVIDER_MODE=local",
        f"KUBECONFIG={plane.kubeconfig}",
        f"POD_NAMESPACE={NAMESPACE}",
        str(binary),
        "--cloud-provider=kwok",
        f"--kubeconfig={plane.kubeconfig}",
        f"--namespace={NAMESPACE}",
        "--enable-provisioning-requests=true",
        # The ProvisioningRequest client shares the autoscaler's REST config, whose default
        # content type is protobuf, which a CRD cannot take: without this every status update
        # fails ("does not implement the protobuf marshalling interface") and no request is
        # ever Accepted.
        "--kube-api-content-type=application/json",
        "--leader-elect=false",
        f"--address=127.0.0.1:{free_port()}",
        f"--scan-interval={SCAN_INTERVAL}",
        f"--expander={expander or 'random'}",
        *scale_down,
        "--v=4",
    ]


@dataclass(frozen=True, slots=True)
class Autoscaler:
    cluster: str
    log: Path


def start_autoscalers(
    planes: Mapping[str, ControlPlane],
    fleet: FleetConfig,
    binary: Path,
    *,
    fast_scale_down: bool = False,
) -> list[Autoscaler]:
    """One autoscaler per plane with user pools, as a process of the plane (stopped with it);
    scale-down times the stack's (`scale_down_flags`) unless `fast_scale_down`."""
    started: list[Autoscaler] = []
    for name, plane in planes.items():
        config = fleet.cluster(name)
        if config is None or not config.pools:
            continue
        applied = apply(plane, provider_config_maps(fleet, name))
        if applied.rejected:
            raise StartError(f"[{name}] kwok provider ConfigMaps rejected: {applied.stderr}")
        expander = config.autoscaler_profile.expander
        scale_down = (
            FAST_SCALE_DOWN if fast_scale_down else scale_down_flags(config.autoscaler_profile)
        )
        process = plane._spawn(TOOL, autoscaler_args(binary, plane, expander, scale_down))
        started.append(Autoscaler(name, process.log_path))
    _await_running(started, [planes[a.cluster] for a in started])
    return started


def _await_running(autoscalers: Sequence[Autoscaler], planes: Sequence[ControlPlane]) -> None:
    """Each autoscaler ran one loop (its status ConfigMap exists)."""
    deadline = time.monotonic() + READY_TIMEOUT
    waiting = list(zip(autoscalers, planes, strict=True))
    while waiting:
        for plane in [p for _, p in waiting]:
            plane._check_alive()
        waiting = [
            (a, p)
            for a, p in waiting
            if p.get(f"/api/v1/namespaces/{NAMESPACE}/configmaps/cluster-autoscaler-status")[0]
            != 200
        ]
        if waiting and time.monotonic() > deadline:
            tails = "\n".join(f"[{a.cluster}] {a.log.read_text()[-3000:]}" for a, _ in waiting)
            raise StartError(f"cluster-autoscaler not running after {READY_TIMEOUT:.0f}s:\n{tails}")
        time.sleep(0.25)
