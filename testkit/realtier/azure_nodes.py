"""The Azure twin's nodes: what the engine asked ARM for, as kwok nodes, with the real
kube-scheduler and the real cluster-autoscaler on each ManagedCluster's plane.

Everything here is read from the ARM requests the engine sends (the program's real requests),
never from the stack's FleetConfig: a ManagedCluster's `agentPoolProfiles` (its System pool),
`autoScalerProfile`, `networkProfile` and ACI add-on; each AgentPool's `vmSize`, `count`,
`enableAutoScaling` / `minCount` / `maxCount`, `nodeLabels`, `nodeTaints`, `scaleSetPriority`,
`maxPods` and `availabilityZones`. So a Kueue flavor or toleration the program renders either
matches the nodes its own Azure requests make, or the twin's jobs do not run.

- Every plane runs kube-scheduler and kwok (testkit/realtier/twin_run.py `launch_simulation`).
- A pool's nodes are shaped as AKS shapes them (testkit/realtier/twin.py's node: AKS's
  `agentpool` / `kubernetes.azure.com/agentpool` / mode labels, the request's labels and
  taints, AKS's spot label and taint on a Spot pool, capacity and allocatable of the VM size
  from the project's capacity model). A pool starts with its `count` nodes (AKS's create;
  `minCount` when an autoscaled request has none); an update reshapes its nodes (labels,
  taints, the count of a pool that is not autoscaled, an autoscaled pool's size into its new
  range); a delete removes them. The ACI add-on registers the virtual node.
- The real cluster-autoscaler (testkit/realtier/autoscaler.py's flags; kwok cloud provider, one
  node group per autoscaled pool: the pool's template node and its min/max) runs once a cluster
  has an autoscaled pool, with the scale-down times and expander of its `autoScalerProfile`.
  Its kwok provider reads its node groups once, at start (`BuildKwokProvider`), so a change of
  the cluster's autoscaled pools restarts it. It is stopped with SIGKILL, not SIGTERM: on
  SIGTERM the kwok provider's `Cleanup` deletes every node of its node groups
  (cloudprovider/kwok/kwok_provider.go, called from `ExitCleanUp`), which AKS's VMSS provider
  does not do.

- A pool's nodes report the Kubernetes version the pool runs (`status.nodeInfo.kubeletVersion`,
  the version the Azure twin resolved from the request: testkit/realtier/azure_twin.py). A move of
  a pool to another version (`upgrade`) is AKS's node upgrade, testkit/realtier/reimage.py's
  surge, cordon, drain through the Eviction API (PodDisruptionBudgets honoured) and reimage to
  the new version, with the request's `upgradeSettings` (AKS's defaults where it sends none)
  and the drain timeout compressed (DRAIN_SECONDS_PER_MINUTE). The cluster's autoscaler is
  stopped for it and started again after with the new version in its node groups' templates.

Processes are started through `on_main` (the Azure twin's main-thread queue: the harness ties
each child to the thread that started it); waits run on the caller's thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from testkit.realtier.autoscaler import (
    DESIRED_ANNOTATION,
    MAX_ANNOTATION,
    MIN_ANNOTATION,
    NAMESPACE,
    TOOL,
    Autoscaler,
    _await_running,  # pyright: ignore[reportPrivateUsage]
    _member,  # pyright: ignore[reportPrivateUsage]
    autoscaler_args,
    kwok_config_maps,
)
from testkit.realtier.harness import CONTROLLERS, ControlPlane, StartError, apply
from testkit.realtier.reimage import PoolUpgrade, ReimageRecord, reimage_pool
from testkit.realtier.twin import (
    ACCELERATOR_LABEL,
    VIRTUAL_NODE_NAME,
    PoolNodes,
    _node,  # pyright: ignore[reportPrivateUsage]
    _virtual_node,  # pyright: ignore[reportPrivateUsage]
    node_resources,
)
from testkit.realtier.twin_run import (
    TWIN_CONTROLLERS,
    SimulationTools,
    await_nodes_ready,
    launch_simulation,
    register_nodes,
)
from upstream.aks import (
    AGENTPOOL_LABEL,
    AGENTPOOL_LABELS,
    DEFAULT_MAX_PODS,
    SPOT_LABEL,
    SPOT_TAINT,
    VmShape,
    lookup_vm,
)

T = TypeVar("T")
OnMain = Callable[[Callable[[], T]], T]

# A plane with nodes runs what a twin's plane runs (the Job, node lifecycle and disruption
# controllers: testkit/realtier/twin_run.py) and the DaemonSet controller (a release's DaemonSet
# gets the status Helm waits for: prod's NVIDIA device plugin).
PLANE_CONTROLLERS: Final = (*TWIN_CONTROLLERS, "daemonset-controller")
assert set(CONTROLLERS) <= set(PLANE_CONTROLLERS)
ACI_ADDON: Final = "aciConnectorLinux"
# AKS's defaults where a request leaves a value out (ManagedCluster / AgentPool API reference).
AKS_DEFAULT_COUNT: Final = 1
AKS_SCALE_DOWN_UNNEEDED_TIME: Final = "10m"
AKS_SCALE_DOWN_DELAY_AFTER_ADD: Final = "10m"
STATUS_CONFIG_MAP: Final = "cluster-autoscaler-status"
# AKS's upgradeSettings defaults (AgentPoolUpgradeSettings): 10% surge, a 30-minute drain,
# `Schedule` for a node whose drain is still blocked at its end.
AKS_MAX_SURGE: Final = "10%"
AKS_DRAIN_TIMEOUT_MINUTES: Final = 30
AKS_UNDRAINABLE: Final = "Schedule"
# The twin's clock for a drain: a minute of `drainTimeoutInMinutes` is this many seconds.
DRAIN_SECONDS_PER_MINUTE: Final = 3.0


@dataclass(frozen=True, slots=True)
class PoolRequest:
    """What the engine asked AKS for one node pool: an AgentPool, or a ManagedCluster's inline
    `agentPoolProfiles` entry (its System pool)."""

    name: str
    mode: str  # System | User
    vm_size: str
    count: int  # the nodes at create
    autoscaled: bool
    min_count: int
    max_count: int
    labels: tuple[tuple[str, str], ...]
    taints: tuple[str, ...]
    spot: bool
    max_pods: int | None
    zones: tuple[str, ...]
    version: str  # orchestratorVersion as sent ("" when unset: the pool follows its cluster)
    upgrade: PoolUpgrade  # upgradeSettings, AKS's defaults where unset; the drain compressed


def pool_upgrade(settings: Mapping[str, Any]) -> PoolUpgrade:
    """A request's `upgradeSettings` as the node upgrade plays them (AKS's defaults where
    unset; `drainTimeoutInMinutes` in the twin's seconds)."""
    minutes = float(settings.get("drainTimeoutInMinutes") or AKS_DRAIN_TIMEOUT_MINUTES)
    behaviour = str(settings.get("undrainableNodeBehavior") or AKS_UNDRAINABLE)
    assert behaviour in ("Cordon", "Schedule"), behaviour
    return PoolUpgrade(
        max_surge=str(settings.get("maxSurge") or AKS_MAX_SURGE),
        drain_timeout=minutes * DRAIN_SECONDS_PER_MINUTE,
        undrainable="Cordon" if behaviour == "Cordon" else "Schedule",
    )


def pool_request(inputs: Mapping[str, Any]) -> PoolRequest:
    """An AgentPool's inputs (`agentPoolName`) or an inline profile (`name`), as AKS reads them."""
    autoscaled = bool(inputs.get("enableAutoScaling"))
    low = int(inputs.get("minCount") or 0)
    high = int(inputs.get("maxCount") or 0)
    count = inputs.get("count")
    if count is None:
        count = low if autoscaled else AKS_DEFAULT_COUNT
    return PoolRequest(
        name=str(inputs.get("agentPoolName") or inputs["name"]),
        mode=str(inputs.get("mode") or "User"),
        vm_size=str(inputs["vmSize"]),
        count=int(count),
        autoscaled=autoscaled,
        min_count=low,
        max_count=high,
        labels=tuple(sorted((str(k), str(v)) for k, v in (inputs.get("nodeLabels") or {}).items())),
        taints=tuple(str(t) for t in inputs.get("nodeTaints") or ()),
        spot=inputs.get("scaleSetPriority") == "Spot",
        max_pods=int(inputs["maxPods"]) if inputs.get("maxPods") is not None else None,
        zones=tuple(str(z) for z in inputs.get("availabilityZones") or ()),
        version=str(inputs.get("orchestratorVersion") or ""),
        upgrade=pool_upgrade(inputs.get("upgradeSettings") or {}),
    )


@dataclass(frozen=True, slots=True)
class ClusterRequest:
    """What of a ManagedCluster's request shapes its nodes and its autoscaler."""

    location: str
    network_mode: str  # overlay | nodeSubnet (AKS's default max pods differ)
    system_pools: tuple[PoolRequest, ...]
    scale_down: tuple[str, ...]  # the autoscaler's scale-down flags
    expander: str | None
    virtual_node: bool  # the ACI connector add-on


def cluster_request(inputs: Mapping[str, Any]) -> ClusterRequest:
    network = inputs.get("networkProfile") or {}
    profile: Mapping[str, Any] = inputs.get("autoScalerProfile") or {}

    def setting(name: str) -> Any:  # azure-native's property name, or ARM's kebab-case one
        kebab = "".join(f"-{c.lower()}" if c.isupper() else c for c in name)
        return profile.get(name, profile.get(kebab))

    unneeded = setting("scaleDownUnneededTime") or AKS_SCALE_DOWN_UNNEEDED_TIME
    after_add = setting("scaleDownDelayAfterAdd") or AKS_SCALE_DOWN_DELAY_AFTER_ADD
    addon = (inputs.get("addonProfiles") or {}).get(ACI_ADDON) or {}
    return ClusterRequest(
        location=str(inputs.get("location") or ""),
        network_mode="overlay" if network.get("networkPluginMode") == "overlay" else "nodeSubnet",
        system_pools=tuple(pool_request(p) for p in inputs.get("agentPoolProfiles") or ()),
        scale_down=(
            f"--scale-down-unneeded-time={unneeded}",
            f"--scale-down-delay-after-add={after_add}",
        ),
        expander=setting("expander"),
        virtual_node=bool(addon.get("enabled")),
    )


def node_name(pool: str, index: int) -> str:
    # AKS names nodes aks-<pool>-<8 digits>-vmss<6 base-36 digits>; the digits are ours.
    return f"aks-{pool}-00000000-vmss{index:06d}"


def template_node(
    cluster: ClusterRequest,
    pool: PoolRequest,
    shapes: Mapping[str, VmShape],
    index: int = 0,
    version: str = "",
) -> dict[str, Any]:
    """Node `index` of `pool` as AKS shapes it (testkit/realtier/twin.py's node), its kubelet
    reporting `version` (kwok's node-initialize Stage keeps a version it finds)."""
    shape = lookup_vm(pool.vm_size, shapes)
    if shape is None:
        raise StartError(f"{pool.name}: VM size {pool.vm_size!r} is not in the twin's catalogue")
    capacity, allocatable = node_resources(
        shape, pool.max_pods or DEFAULT_MAX_PODS[cluster.network_mode]
    )
    labels = {
        **dict(pool.labels),
        **dict.fromkeys(AGENTPOOL_LABELS, pool.name),
        "kubernetes.azure.com/mode": pool.mode.lower(),
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": pool.vm_size,
    }
    taints = list(pool.taints)
    if pool.spot:  # AKS stamps these on a Spot pool's nodes whether the request names them or not
        labels[SPOT_LABEL[0]] = SPOT_LABEL[1]
        taints += [] if SPOT_TAINT in taints else [SPOT_TAINT]
    if shape.gpus:
        labels[ACCELERATOR_LABEL[0]] = ACCELERATOR_LABEL[1]
    if pool.zones and cluster.location:
        labels["topology.kubernetes.io/zone"] = (
            f"{cluster.location}-{pool.zones[index % len(pool.zones)]}"
        )
    node = _node(node_name(pool.name, index), labels, taints, capacity, allocatable)
    if version:
        node["status"]["nodeInfo"] = {"kubeletVersion": version}
    return node


def pool_nodes(
    cluster_name: str,
    cluster: ClusterRequest,
    pool: PoolRequest,
    shapes: Mapping[str, VmShape],
    indices: Sequence[int],
    *,
    version: str = "",
) -> PoolNodes:
    """Nodes `indices` of the pool; members of its node group when it is autoscaled."""
    nodes = [template_node(cluster, pool, shapes, i, version) for i in indices]
    if pool.autoscaled:
        nodes = [_member(n, pool.name) for n in nodes]
    return PoolNodes(cluster_name, pool.name, pool.vm_size, tuple(nodes))


def group_template(
    cluster: ClusterRequest,
    pool: PoolRequest,
    shapes: Mapping[str, VmShape],
    size: int,
    version: str = "",
) -> dict[str, Any]:
    """The kwok provider's template of an autoscaled pool: its node, its min/max and size."""
    node = template_node(cluster, pool, shapes, version=version)
    node["metadata"]["name"] = pool.name
    node["metadata"]["labels"].pop("kubernetes.io/hostname", None)
    node["metadata"]["annotations"].update(
        {
            MIN_ANNOTATION: str(pool.min_count),
            MAX_ANNOTATION: str(pool.max_count),
            DESIRED_ANNOTATION: str(size),
        }
    )
    return node


@dataclass
class _Cluster:
    plane: ControlPlane
    request: ClusterRequest | None = None
    pools: dict[str, PoolRequest] = field(default_factory=dict[str, PoolRequest])
    versions: dict[str, str] = field(default_factory=dict[str, str])  # pool -> its kubelets'
    lock: threading.Lock = field(default_factory=threading.Lock)
    autoscaler_key: str = ""  # what the running autoscaler was started with ("" none)
    autoscaler_starts: int = 0


@dataclass
class AzureNodes:
    """The node side of every plane of the Azure twin (the module's docstring)."""

    sim: SimulationTools
    autoscaler: Path  # the cluster-autoscaler built with -tags kwok
    shapes: Mapping[str, VmShape]  # VM sizes beyond the built-in table (the stack's `vmSizes`)
    clusters: dict[str, _Cluster] = field(default_factory=dict[str, _Cluster])
    # Every node upgrade run, in order (tests and the Azure twin's record read them).
    upgrades: list[ReimageRecord] = field(default_factory=list[ReimageRecord])

    # ---- hooks of the Azure twin -------------------------------------------------------------

    def start(self, plane: ControlPlane, on_main: OnMain[Any]) -> None:
        """A new plane's kube-scheduler and kwok (no node yet: `cluster_put` brings them)."""
        self.clusters[plane.name] = _Cluster(plane)
        on_main(lambda: launch_simulation(plane, self.sim))

    def cluster_put(
        self,
        name: str,
        inputs: Mapping[str, Any],
        on_main: OnMain[Any],
        versions: Mapping[str, str] | None = None,
    ) -> None:
        """A ManagedCluster created or updated: its System pool's nodes, the virtual node, and
        the autoscaler (its profile may have changed). `versions`: the version each System
        pool runs now (the twin resolved it); a pool that moves is upgraded (`upgrade`)."""
        state = self.clusters[name]
        request = cluster_request(inputs)
        with state.lock:
            had_virtual = state.request is not None and state.request.virtual_node
            state.request = request
            for pool in request.system_pools:
                self._reshape(name, state, pool, (versions or {}).get(pool.name, ""))
            if request.virtual_node and not had_virtual:
                register_nodes(
                    state.plane,
                    [PoolNodes(name, VIRTUAL_NODE_NAME, None, (_virtual_node(),))],
                )
            elif had_virtual and not request.virtual_node:
                state.plane.kubectl("delete", "node", VIRTUAL_NODE_NAME, "--wait=false")
            self._reconfigure_autoscaler(state, on_main)
        self._await_ready(state)

    def pool_put(
        self, cluster: str, inputs: Mapping[str, Any], on_main: OnMain[Any], version: str = ""
    ) -> None:
        """An AgentPool created or updated: its nodes, and the autoscaler's node groups.
        `version`: the version the pool runs now (a move is upgraded: `upgrade`)."""
        state = self.clusters[cluster]
        with state.lock:
            self._reshape(cluster, state, pool_request(inputs), version)
            self._reconfigure_autoscaler(state, on_main)
        self._await_ready(state)

    def version_of(self, cluster: str, pool: str) -> str:
        """The version the pool's nodes run ("" unknown)."""
        return self.clusters[cluster].versions.get(pool, "")

    def upgrade(
        self, cluster: str, pool: str, version: str, on_main: OnMain[Any]
    ) -> ReimageRecord | None:
        """AKS's node upgrade of one pool to `version` (the module's docstring), with the
        autoscaler stopped meanwhile (it would make nodes of the old version) and started
        again after. None when the pool already runs it. Raises UpgradeBlockedError when a node
        could not be drained."""
        state = self.clusters[cluster]
        with state.lock:
            if state.versions.get(pool) == version or pool not in state.pools:
                return None
            assert state.request is not None
            request = state.pools[pool]
            kill_autoscaler(state.plane)
            state.autoscaler_key = ""
            template = template_node(state.request, request, self.shapes, version=version)
            template["metadata"]["labels"].pop("kubernetes.io/hostname", None)
            record = reimage_pool(
                state.plane, pool, template, "", request.upgrade, kubelet_version=version
            )
            self.upgrades.append(record)
            state.versions[pool] = version
            self._reconfigure_autoscaler(state, on_main)
        if not record.succeeded:
            raise UpgradeBlockedError(record)
        return record

    def pool_deleted(self, cluster: str, pool: str, on_main: OnMain[Any]) -> None:
        """An AgentPool deleted: its nodes go (the autoscaler's too), and its node group."""
        state = self.clusters.get(cluster)
        if state is None:
            return
        with state.lock:
            state.pools.pop(pool, None)
            self._reconfigure_autoscaler(state, on_main)
            names = self._node_names(state.plane, pool)
            if names:
                state.plane.kubectl("delete", "node", *names, "--wait=false")

    def forget(self, cluster: str) -> None:
        """The cluster's plane stopped (its processes with it)."""
        self.clusters.pop(cluster, None)

    # ---- nodes ------------------------------------------------------------------------------

    @staticmethod
    def _node_names(plane: ControlPlane, pool: str) -> list[str]:
        done = plane.kubectl("get", "nodes", "-l", f"{AGENTPOOL_LABEL}={pool}", "-o", "name")
        return sorted(n.removeprefix("node/") for n in done.stdout.split())

    def _reshape(self, cluster: str, state: _Cluster, pool: PoolRequest, version: str) -> None:
        """Make the pool's nodes what `pool` asks: all new on create; on update the kept nodes
        relabelled and retainted, the count the request's (autoscaled: the size clamped into
        the new range; AKS leaves the count to the autoscaler). New nodes run the version the
        pool runs (an update does not move it: `upgrade` does)."""
        assert state.request is not None
        old = state.pools.get(pool.name)
        state.pools[pool.name] = pool
        state.versions.setdefault(pool.name, version)
        version = state.versions[pool.name]
        existing = [] if old is None else self._node_names(state.plane, pool.name)
        if old is None:
            target = pool.count
        elif pool.autoscaled:
            target = min(max(len(existing), pool.min_count), pool.max_count)
        else:
            target = pool.count
        kept, extra = existing[:target], existing[target:]
        if extra:
            state.plane.kubectl("delete", "node", *extra, "--wait=false")
        if old is not None and old != pool:
            shaped = template_node(state.request, pool, self.shapes)
            for name in kept:
                self._relabel(state.plane, name, shaped, old)
        ours = node_name(pool.name, 0).removesuffix("000000")
        taken = {int(n.removeprefix(ours)) for n in kept if n.startswith(ours)}
        free = (i for i in range(10_000) if i not in taken)
        indices = [next(free) for _ in range(target - len(kept))]
        if indices:
            register_nodes(
                state.plane,
                [pool_nodes(cluster, state.request, pool, self.shapes, indices, version=version)],
            )

    def _relabel(
        self, plane: ControlPlane, name: str, shaped: Mapping[str, Any], old: PoolRequest
    ) -> None:
        labels: dict[str, str | None] = {k: None for k, _ in old.labels}
        labels |= {
            k: v for k, v in shaped["metadata"]["labels"].items() if k != "kubernetes.io/hostname"
        }
        patch = {
            "metadata": {"labels": labels},
            "spec": {"taints": shaped.get("spec", {}).get("taints", [])},
        }
        plane.kubectl("patch", "node", name, "--type=merge", "-p", json.dumps(patch))

    @staticmethod
    def _await_ready(state: _Cluster) -> None:
        done = state.plane.kubectl("get", "nodes", "-o", "name")
        names = {n.removeprefix("node/") for n in done.stdout.split()}
        await_nodes_ready([state.plane], {state.plane.name: names})

    # ---- the autoscaler ---------------------------------------------------------------------

    def _reconfigure_autoscaler(self, state: _Cluster, on_main: OnMain[Any]) -> None:
        """(Re)start the cluster's autoscaler when its node groups or profile changed."""
        request = state.request
        groups = sorted((p for p in state.pools.values() if p.autoscaled), key=lambda p: p.name)
        if request is None:
            return
        shaped = [
            [p.name, p.vm_size, p.labels, p.taints, p.spot, state.versions.get(p.name, "")]
            for p in groups
        ]
        ranges = [[p.min_count, p.max_count] for p in groups]
        key = json.dumps([shaped, ranges, list(request.scale_down), request.expander or ""])
        if not groups:
            key = ""
        if key == state.autoscaler_key:
            return
        plane = state.plane
        kill_autoscaler(plane)
        state.autoscaler_key = ""
        if not groups:
            return
        templates = [
            group_template(
                request,
                p,
                self.shapes,
                len(self._node_names(plane, p.name)),
                state.versions.get(p.name, ""),
            )
            for p in groups
        ]
        applied = apply(plane, kwok_config_maps(templates))
        if applied.rejected:
            raise StartError(f"[{plane.name}] kwok provider ConfigMaps rejected: {applied.stderr}")
        # Its status ConfigMap is the sign that a loop ran: the last process's goes first.
        plane.kubectl(
            "delete",
            "configmap",
            STATUS_CONFIG_MAP,
            f"--namespace={NAMESPACE}",
            "--ignore-not-found",
        )
        argv = autoscaler_args(self.autoscaler, plane, request.expander, request.scale_down)
        process = on_main(lambda: plane._spawn(TOOL, argv))
        _await_running([Autoscaler(plane.name, process.log_path)], [plane])
        state.autoscaler_key = key
        state.autoscaler_starts += 1

    def autoscaler_starts(self, cluster: str) -> int:
        """How many times the cluster's autoscaler was started."""
        return self.clusters[cluster].autoscaler_starts


class UpgradeBlockedError(Exception):
    """A node upgrade that could not drain a node (AKS's operation ends Failed)."""

    def __init__(self, record: ReimageRecord) -> None:
        super().__init__(record.summary())
        self.record = record


def kill_autoscaler(plane: ControlPlane) -> None:
    """Stop the plane's autoscaler with SIGKILL: SIGTERM would have its kwok provider delete every
    node of its node groups (the module's docstring)."""
    for process in [p for p in plane._processes if p.name == TOOL]:  # pyright: ignore[reportPrivateUsage]
        # Out of the plane's processes before it dies: a concurrent `_check_alive` (another
        # pool's create waiting on this plane) would take the kill for a crash.
        plane._processes.remove(process)  # pyright: ignore[reportPrivateUsage]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.popen.pid, signal.SIGKILL)
        process.popen.wait(timeout=10)
        process.log.close()
