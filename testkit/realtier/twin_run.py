"""A stack's loopback twin, running: its planes, simulated nodes, the real scheduler and Kueue.

Per cluster of the stack (the mapping is testkit/realtier/twin.py): a loopback plane (etcd,
kube-apiserver, kube-controller-manager with the Job controller), the real `kube-scheduler` of the
same Kubernetes version, `kwok` managing the twin's nodes (registered here with their AKS labels,
taints and allocatable; kwok's Stages make them Ready, run pods bound to them and complete the pods
of Jobs), the pinned Kueue CRDs plus the ProvisioningRequest CRD, and a real Kueue manager with the
stack's frameworks. Then the stack's Kueue/MultiKueue objects, as the program renders them, with
real worker tokens in the manager's kubeconfig Secrets.

Nodes: by default every pool has its `maxCount` nodes from the start; the tests that run Jobs
register the user pools at `minCount` instead (testkit/realtier/autoscaler.py, `nodes=nodes_at_min`)
and start the real cluster-autoscaler (`start_autoscalers`), which makes the nodes and answers
Kueue's ProvisioningRequests. No test double answers them.

Everything is started from the main thread (children die with pytest) and always stopped by
process group, as the rest of the tier does.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from builders.fleet import kueue_objects
from builders.kueue import feature_gates, manager_config
from builders.multikueue import (
    encode,
    k8s_name,
    manager_objects,
    token_secret_name,
    worker_kubeconfig,
    worker_objects,
    write_role_bindings,
)
from checks.stack import parse_fleet
from config.models import FleetConfig
from config.resolve import dispatch_sets, enabled_workers, rotation_of
from testkit.realtier import phases
from testkit.realtier.harness import (
    CONTROLLERS,
    ControlPlane,
    StartError,
    Tools,
    _built,
    apply,
    await_each,
    build_command,
    cache_paths,
    free_port,
    namespace,
    spawn_args,
    start_all,
    stop_all,
)
from testkit.realtier.kueue import (
    KUEUE_NAMESPACE,
    TWIN_WORKER_LOST_TIMEOUT,
    KueueManager,
    kueue_binary,
    metrics_certs,
    start_kueues,
    stop_kueues,
    visibility_certs,
    wait_for_token,
)
from testkit.realtier.twin import KWOK_ANNOTATION, PoolNodes, fleet_nodes, load_stack, twin_fleet
from testkit.realtier.twin_engine import EngineDeploy, deploy_twin

# The tools a twin needs beyond a plane's and Kueue's (names as the build script lists them).
SIMULATION_TOOLS: Final = ("kube-scheduler", "kwok")
# A twin's Jobs run: the Job controller creates their pods (garbage collection, already on,
# removes them with their Job); the node lifecycle controller lifts the not-ready taint the API
# server puts on every new Node (TaintNodesByCondition) once kwok reports it Ready; the disruption
# controller computes PodDisruptionBudgets' status, without which the Eviction API refuses every
# pod a budget covers (429 until `status.observedGeneration` reaches the budget's generation:
# k8s.io/kubernetes pkg/registry/core/pod/storage/eviction.go, checkAndDecrement).
TWIN_CONTROLLERS: Final = (
    *CONTROLLERS,
    "job-controller",
    "node-lifecycle-controller",
    "disruption-controller",
)
# Bounded waits, measured on 2 shared cores; margins for a busier machine.
NODES_READY_TIMEOUT: Final = 120.0
# kwok's node lease, as kwokctl runs it (pkg/kwokctl/components/kwok_controller.go passes
# `--node-lease-duration-seconds`, 40 by default: a kubelet's nodeLeaseDurationSeconds). The kwok
# binary's own default is 0, no lease; then the only heartbeat is the Stage
# node-heartbeat-with-lease, every 10-20 min, and the node lifecycle controller (grace 50 s) found
# every node unknown ~55 s after its last status write, kwok's node-initialize Stage set it Ready
# again, and in between the controller marked every pod on it Ready=False for good (kwok's
# pod-ready Stage only takes Pending pods). A StatefulSet (OrderedReady) then stopped scaling and
# reported 0 ready. With the lease kwok renews it every 10 s (a quarter of it), as a kubelet does.
KWOK_NODE_LEASE_SECONDS: Final = 40
TOKEN_TIMEOUT: Final = 60.0
PROVISIONING_CRD: Final = "autoscaling.x-k8s.io_provisioningrequests.yaml"
PROVISIONING_API: Final = "/apis/autoscaling.x-k8s.io/v1"
_APIS_MODULE: Final = "k8s.io/autoscaler/cluster-autoscaler/apis"


@dataclass(frozen=True, slots=True)
class SimulationTools:
    kube_scheduler: Path
    kwok: Path
    kwok_stages: tuple[Path, ...]  # the Stages the build copied next to kwok
    provisioning_crd: Path  # the ProvisioningRequest CRD of the version Kueue is built with


def _provisioning_crd(kueue: Path) -> Path | None:
    """The ProvisioningRequest CRD from the Go module cache of the tool builds: the
    cluster-autoscaler `apis` module at the version the pinned Kueue's go.mod requires."""
    version = kueue.parent.parent.name.removeprefix("kueue-")
    root = kueue.parents[2]
    gomod = root / "_go" / "mod" / "cache" / "download" / "sigs.k8s.io" / "kueue" / "@v"
    try:
        text = (gomod / f"v{version}.mod").read_text()
    except OSError:
        return None
    found = re.search(rf"^\s*{re.escape(_APIS_MODULE)} (v\S+)", text, flags=re.MULTILINE)
    if found is None:
        return None
    crd = root / "_go" / "mod" / f"{_APIS_MODULE}@{found.group(1)}" / "config" / "crd"
    path = crd / PROVISIONING_CRD
    return path if path.is_file() else None


def provisioning_crd() -> Path | None:
    """The ProvisioningRequest CRD Kueue is built with (None without a built Kueue)."""
    paths = cache_paths()
    return _provisioning_crd(paths["kueue"]) if "kueue" in paths else None


def find_simulation_tools() -> tuple[SimulationTools | None, list[str]]:
    """kube-scheduler, kwok (with its Stages) and the ProvisioningRequest CRD, or what's missing."""
    paths = cache_paths()
    missing: list[str] = []
    absent = [n for n in SIMULATION_TOOLS if n not in paths or not _built(n, paths[n])]
    missing += [f"{n}: not built ({paths.get(n)})" for n in absent]
    stages: tuple[Path, ...] = ()
    if "kwok" not in absent:
        stages = tuple(sorted((paths["kwok"].parent.parent / "stages").glob("*.yaml")))
        if not stages:
            missing.append(f"kwok: no Stages beside {paths['kwok']} (rebuild it)")
            absent.append("kwok")
    if absent:
        missing.append(f"build with: {build_command(dict.fromkeys(absent))}")
    crd = provisioning_crd()
    if crd is None:
        missing.append(
            f"{PROVISIONING_CRD}: not in the Go module cache of the tool builds "
            f"({build_command(['kueue'])} downloads it)"
        )
    if missing or crd is None:
        return None, missing
    return SimulationTools(paths["kube-scheduler"], paths["kwok"], stages, crd), []


# ---- processes beside a plane ------------------------------------------------------------------


def kwok_argv(plane: ControlPlane, kwok: Path, stages: Sequence[Path]) -> list[str]:
    """kwok managing the plane's twin nodes (those with KWOK_ANNOTATION), with `stages`."""
    return [
        str(kwok),
        f"--kubeconfig={plane.kubeconfig}",
        *(f"--config={stage}" for stage in stages),
        f"--manage-nodes-with-annotation-selector={'='.join(KWOK_ANNOTATION)}",
        f"--node-lease-duration-seconds={KWOK_NODE_LEASE_SECONDS}",
        # health endpoint only, on loopback; the node IP is a status field, never dialled
        f"--server-address=127.0.0.1:{free_port()}",
        "--node-ip=127.0.0.1",
    ]


def launch_simulation(plane: ControlPlane, sim: SimulationTools) -> None:
    """The real kube-scheduler and kwok, as processes of the plane (stopped with it)."""
    plane._spawn(
        "kube-scheduler",
        [
            str(sim.kube_scheduler),
            f"--kubeconfig={plane.kubeconfig}",
            "--leader-elect=false",
            # No HTTPS endpoint: nothing scrapes it, and 10259 would clash between planes.
            "--secure-port=0",
        ],
    )
    plane._spawn("kwok", kwok_argv(plane, sim.kwok, sim.kwok_stages))


def register_nodes(plane: ControlPlane, groups: Sequence[PoolNodes]) -> int:
    """Create the twin's nodes (status included: a Node's create keeps it). Returns the count."""
    nodes = [node for group in groups for node in group.nodes]
    plane.kubectl("create", "-f", "-", stdin=yaml.safe_dump_all(nodes, sort_keys=False))
    return len(nodes)


def _ready_nodes(plane: ControlPlane) -> set[str]:
    status, body = plane.get("/api/v1/nodes")
    if status != 200:
        return set()
    ready: set[str] = set()
    for node in json.loads(body).get("items") or []:
        conditions = node.get("status", {}).get("conditions") or []
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            ready.add(str(node["metadata"]["name"]))
    return ready


def await_nodes_ready(planes: Sequence[ControlPlane], expected: Mapping[str, set[str]]) -> None:
    """Every twin node Ready (kwok's node-initialize Stage ran), on every plane."""

    def ready(plane: ControlPlane) -> bool:
        plane._check_alive()
        return expected[plane.name] <= _ready_nodes(plane)

    await_each(planes, "twin nodes Ready", ready, ControlPlane._logs, NODES_READY_TIMEOUT)


# ---- what happened to Jobs --------------------------------------------------------------------


class KubectlWatch:
    """`kubectl get RESOURCE --watch -o FORMAT` on one plane, in the background, every line handed
    to `_line` as it is read (all namespaces unless one is given).

    A MultiKueue copy (a Job, its pods) is deleted from its worker moments after it completes,
    faster than a poll may look; a watch sees every update.
    """

    def __init__(
        self, plane: ControlPlane, resource: str, output: str, namespace: str | None = None
    ) -> None:
        kubectl = plane.tools.kubectl if plane.tools is not None else "kubectl"
        self.plane = plane
        scope = f"--namespace={namespace}" if namespace else "--all-namespaces"
        args, preexec = spawn_args(
            [
                str(kubectl),
                f"--kubeconfig={plane.kubeconfig}",
                f"--cache-dir={plane.workdir / f'kubectl-cache-watch-{resource}'}",
                "get",
                resource,
                scope,
                "--watch",
                "-o",
                output,
            ]
        )
        self._popen = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
            preexec_fn=preexec,  # noqa: PLW1509 - only without setpriv; one prctl call
        )
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        stdout = self._popen.stdout
        if stdout is None:
            return
        for line in stdout:
            self._line(line.rstrip("\n"))

    def _line(self, line: str) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._popen.pid, signal.SIGKILL)
        self._popen.wait(timeout=10)
        self._thread.join(timeout=10)


@dataclass(frozen=True, slots=True)
class PodSeen:
    at: float
    pod: str  # namespace/name
    node: str
    podset: str  # Kueue's podset label, "" on a pod Kueue did not admit
    phase: str
    disruption: str  # the DisruptionTarget condition's reason, "" without one
    job: str


class PodWatch(KubectlWatch):
    """Every state a pod of one namespace was seen in, on one plane."""

    _FORMAT: Final = (
        r"jsonpath={.metadata.namespace}/{.metadata.name}|{.spec.nodeName}|"
        r"{.metadata.labels.kueue\.x-k8s\.io/podset}|{.status.phase}|"
        r'{.status.conditions[?(@.type=="DisruptionTarget")].reason}|'
        r'{.metadata.labels.batch\.kubernetes\.io/job-name}{"\n"}'
    )

    def __init__(self, plane: ControlPlane, namespace: str) -> None:
        self.seen: list[PodSeen] = []
        super().__init__(plane, "pods", self._FORMAT, namespace)

    def _line(self, line: str) -> None:
        fields = line.split("|")
        if len(fields) == 6:
            self.seen.append(PodSeen(time.monotonic(), *fields))

    def bound(self) -> dict[str, str]:
        """Each pod (namespace/name) that was seen on a node, and the node."""
        return {s.pod: s.node for s in list(self.seen) if s.node}

    def pods(self) -> dict[str, list[PodSeen]]:
        out: dict[str, list[PodSeen]] = {}
        for s in list(self.seen):
            out.setdefault(s.pod, []).append(s)
        return out

    def running_since(self, job_name: str, pods: int) -> float | None:
        """When every pod of the job was first seen Running (None until `pods` were)."""
        first: dict[str, float] = {}
        for s in list(self.seen):
            if s.job == job_name and s.phase == "Running":
                first.setdefault(s.pod, s.at)
        return max(first.values()) if len(first) >= pods else None


class JobWatch(KubectlWatch):
    """Every state a Job was seen in, on one plane."""

    _FORMAT: Final = (
        'jsonpath={.metadata.namespace}/{.metadata.name}{" "}{.status.succeeded}{" "}'
        '{.status.conditions[?(@.type=="Complete")].status}{"\\n"}'
    )

    def __init__(self, plane: ControlPlane) -> None:
        self.lines: list[str] = []
        # `namespace/name` -> when a line of that Job was first read (time.monotonic)
        self.first_seen: dict[str, float] = {}
        super().__init__(plane, "jobs", self._FORMAT)

    def _line(self, line: str) -> None:
        self.lines.append(line.strip())
        if line.split():
            self.first_seen.setdefault(line.split(maxsplit=1)[0], time.monotonic())

    def completed(self, namespace: str, name: str) -> bool:
        """The Job was seen with condition Complete=True."""
        return any(
            line.split()[0] == f"{namespace}/{name}" and line.split()[-1] == "True"
            for line in list(self.lines)
            if line
        )


# ---- the whole twin ---------------------------------------------------------------------------


@dataclass
class Twin:
    """One stack's twin, started."""

    stack: str
    fleet: FleetConfig  # the twin's fleet (existing clusters, manifests-only Kueue)
    planes: dict[str, ControlPlane]
    nodes: dict[str, list[PoolNodes]]
    kueues: dict[str, KueueManager] = field(default_factory=dict[str, KueueManager])
    timings: dict[str, float] = field(default_factory=dict[str, float])
    engine: EngineDeploy | None = None  # when `pulumi up` made the objects

    @property
    def node_count(self) -> int:
        return sum(len(g.nodes) for groups in self.nodes.values() for g in groups)

    def node(self, cluster: str, name: str) -> dict[str, Any] | None:
        return next(
            (n for g in self.nodes[cluster] for n in g.nodes if n["metadata"]["name"] == name),
            None,
        )

    def pool_of(self, cluster: str, node: str) -> str | None:
        return next(
            (g.pool for g in self.nodes[cluster] for n in g.nodes if n["metadata"]["name"] == node),
            None,
        )

    def check_alive(self) -> None:
        """Raise (naming the process and its last log lines) if a process of a plane exited."""
        for plane in self.planes.values():
            plane._check_alive()


def _apply_all(plane: ControlPlane, objects: Sequence[Mapping[str, Any]]) -> None:
    applied = apply(plane, objects)
    if applied.rejected:
        raise StartError(f"[{plane.name}] rejected {applied.rejected}: {applied.stderr}")


def wire_kueue(twin: Twin) -> None:
    """The stack's Kueue and MultiKueue objects, as the program renders them, on the twin."""
    fleet = twin.fleet
    manager = fleet.manager
    links: list[tuple[str, Any, int]] = []
    for worker in enabled_workers(fleet):
        plane = twin.planes[worker]
        rotation = rotation_of(fleet, worker)
        _apply_all(plane, worker_objects(fleet.kueue.version, fleet.kueue.frameworks, rotation))
        data = wait_for_token(plane, token_secret_name(rotation), TOKEN_TIMEOUT)
        token = base64.b64decode(data["token"]).decode()
        doc = worker_kubeconfig(k8s_name(worker), plane.url, data["ca.crt"], token)
        links.append((worker, encode(doc), rotation))
    if manager is not None and links:
        # One MultiKueueConfig per dispatch set, as the program makes them (config.resolve).
        configs = [(s.name, s.workers) for s in dispatch_sets(fleet)]
        _apply_all(twin.planes[manager.name], manager_objects(links, configs=configs))
    manifests = [m for objects in kueue_objects(fleet).values() for m in objects]
    # The workers' write RoleBindings, in the dispatched namespaces the queue objects create.
    manifests += [
        m for worker in enabled_workers(fleet) for m in write_role_bindings(fleet, worker)
    ]
    for target in dict.fromkeys(m.target for m in manifests):
        _apply_all(twin.planes[target], [m.obj for m in manifests if m.target == target])


@phases.timed(phases.TWINS)
def make_twin_clusters(
    planes: Sequence[ControlPlane],
    nodes: Mapping[str, Sequence[PoolNodes]],
    sim: SimulationTools,
    kueue_crds: Sequence[Path],
) -> None:
    """Make started planes twin clusters, ready for their Kueue: the Kueue and
    ProvisioningRequest CRDs, `kueue-system`, kube-scheduler and kwok, their nodes, all Ready."""
    from testkit.realtier.crds import install_crds  # noqa: PLC0415 - the tier's one CRD path

    # Every plane's CRDs at once (kubectl only, no process that must outlive a thread): each
    # plane's API server builds its own CRDs' schemas, so the planes' waits overlap instead of
    # adding up (the session planes' `kueue_crds` fixture does the same).
    files = [*kueue_crds, sim.provisioning_crd]
    with ThreadPoolExecutor(max_workers=max(1, len(planes))) as pool:
        for installed in [pool.submit(install_crds, plane, files) for plane in planes]:
            installed.result()
    # kube-scheduler and kwok from this (the main) thread: their parent-death signal follows it.
    for plane in planes:
        _apply_all(plane, [namespace(KUEUE_NAMESPACE)])
        launch_simulation(plane, sim)
        register_nodes(plane, nodes[plane.name])
    await_nodes_ready(
        list(planes),
        {p.name: {n["metadata"]["name"] for g in nodes[p.name] for n in g.nodes} for p in planes},
    )


def _kueue_for(  # noqa: PLR0917 - one per KueueManager part
    fleet: FleetConfig,
    plane: ControlPlane,
    binary: Path,
    workdir: Path,
    worker_lost_timeout: str,
    metrics: bool = False,
    visibility: bool = False,
) -> KueueManager:
    """The Kueue manager of one twin cluster, configured as the program configures it."""
    cluster = fleet.cluster(plane.name)
    if cluster is None:
        raise StartError(f"{plane.name}: not a cluster of the twin's fleet")
    return KueueManager(
        plane,
        binary,
        workdir / "kueue" / plane.name,
        frameworks=tuple(fleet.kueue.frameworks),
        worker_lost_timeout=worker_lost_timeout,
        program_config=manager_config(fleet.kueue, cluster),
        feature_gates=feature_gates(fleet.kueue, cluster),
        metrics=metrics,
        visibility=visibility,
    )


def add_cluster(
    twin: Twin,
    stack_fleet: FleetConfig,
    name: str,
    tools: Tools,
    sim: SimulationTools,
    *,
    kueue_binary: Path,
    kueue_crds: Sequence[Path],
    workdir: Path,
    nodes: Callable[[FleetConfig], dict[str, list[PoolNodes]]] = fleet_nodes,
    worker_lost_timeout: str = TWIN_WORKER_LOST_TIMEOUT,
) -> ControlPlane:
    """One more cluster in a running twin: `stack_fleet` is the stack with it added (the
    cluster `name` among its clusters). Its plane, nodes, scheduler, kwok and Kueue start as
    `running_twin` starts the others, with no Kueue objects yet (on AKS, the cluster exists
    before its objects too; here `pulumi up` of `stack_fleet` makes them). The plane and its
    Kueue join `twin.planes` and `twin.kueues`, which `running_twin` stops; `twin.fleet`
    becomes `stack_fleet`'s twin. Nothing already running is touched."""
    if name in twin.planes:
        raise StartError(f"{name}: already a cluster of the twin")
    plane = ControlPlane(name, workdir / name, tools, controllers=TWIN_CONTROLLERS)
    # Registered first, so the twin stops whatever of it started even if a step fails.
    twin.planes[name] = plane
    t0 = time.monotonic()
    start_all([plane])
    fleet = twin_fleet(stack_fleet, {n: p.kubeconfig for n, p in twin.planes.items()})
    twin.nodes[name] = nodes(fleet)[name]
    make_twin_clusters([plane], twin.nodes, sim, kueue_crds)
    kueue = _kueue_for(fleet, plane, kueue_binary, workdir, worker_lost_timeout)
    twin.kueues[name] = kueue
    start_kueues([kueue], tools.openssl)
    twin.fleet = fleet
    twin.timings[f"added {name}"] = time.monotonic() - t0
    return plane


@contextlib.contextmanager
def running_twin(
    stack: str,
    tools: Tools,
    sim: SimulationTools,
    *,
    kueue_binary: Path,
    kueue_crds: Sequence[Path],
    workdir: Path,
    nodes: Callable[[FleetConfig], dict[str, list[PoolNodes]]] = fleet_nodes,
    worker_lost_timeout: str = TWIN_WORKER_LOST_TIMEOUT,
    by_engine: bool = False,
    fleet_value: FleetConfig | None = None,
    kueue_metrics: bool = False,
    kueue_visibility: Collection[str] = (),
) -> Iterator[Twin]:
    """Start the stack's twin (planes, nodes, scheduler, kwok, Kueue, objects); always stop it.

    `fleet_value`: a fleet to twin instead of `Pulumi.<stack>.yaml`'s (a test fixture; `stack`
    then only names the twin); not with `by_engine`, which deploys the stack file.

    `nodes` gives the nodes registered at start (default: every pool at maxCount;
    testkit/realtier/autoscaler.py's `nodes_at_min` leaves the user pools to the autoscaler).
    The objects are the program's rendered ones applied with kubectl (`wire_kueue`), or with
    `by_engine` what `pulumi up` of the twin's stack makes (testkit/realtier/twin_engine.py).
    `kueue_metrics`: each Kueue serves /metrics on a loopback port of its own
    (`twin.kueues[name].metrics_port`).
    `kueue_visibility`: the clusters whose Kueue serves its visibility API through their plane's
    aggregation layer (testkit/realtier/kueue.py; the others' planes and Kueues are as without).
    """
    if fleet_value is not None and by_engine:
        raise ValueError("by_engine deploys Pulumi.<stack>.yaml: no `fleet_value` with it")
    t0 = time.monotonic()
    stack_fleet = load_stack(stack) if fleet_value is None else fleet_value
    unknown = set(kueue_visibility) - {c.name for c in stack_fleet.clusters}
    if unknown:
        raise ValueError(f"kueue_visibility: {sorted(unknown)} not clusters of the fleet")
    planes = {
        c.name: ControlPlane(
            c.name,
            workdir / c.name,
            tools,
            controllers=TWIN_CONTROLLERS,
            aggregation=c.name in kueue_visibility,
        )
        for c in stack_fleet.clusters
    }
    kueues: dict[str, KueueManager] = {}
    with contextlib.ExitStack() as certs:
        certs.enter_context(metrics_certs(tools.openssl))
        if kueue_visibility:
            certs.enter_context(visibility_certs(tools.openssl))
        try:
            start_all(planes.values())
            fleet = twin_fleet(stack_fleet, {n: p.kubeconfig for n, p in planes.items()})
            twin = Twin(stack, fleet, planes, nodes(fleet), kueues)
            twin.timings["planes"] = time.monotonic() - t0
            make_twin_clusters(list(planes.values()), twin.nodes, sim, kueue_crds)
            twin.timings["nodes"] = time.monotonic() - t0
            kueues.update(
                {
                    name: _kueue_for(
                        fleet,
                        plane,
                        kueue_binary,
                        workdir,
                        worker_lost_timeout,
                        kueue_metrics,
                        name in kueue_visibility,
                    )
                    for name, plane in planes.items()
                }
            )
            start_kueues(list(kueues.values()), tools.openssl)
            twin.timings["kueue"] = time.monotonic() - t0
            if by_engine:
                kubeconfigs = {n: p.kubeconfig for n, p in planes.items()}
                twin.engine = deploy_twin(stack, kubeconfigs, workdir / "engine")
            else:
                wire_kueue(twin)
            twin.timings["wired"] = time.monotonic() - t0
            yield twin
        finally:
            try:
                stop_kueues(list(kueues.values()))
            finally:
                stop_all(planes.values())


@contextlib.contextmanager
def fixture_twin(
    name: str, fleet: Path | FleetConfig, tools: Tools, sim: SimulationTools, workdir: Path
) -> Iterator[Twin]:
    """A fleet that is not a committed stack (a fixture file under tests/fixtures, or a fleet a
    test built), twinned and running: every pool at maxCount, the pods' Running time from
    their own annotation (faults.timed_simulation), the pinned Kueue CRDs; always stopped.
    Skips (pytest) when Kueue is not built."""
    # Both import this module: imported here, when a twin starts.
    from testkit.realtier.crds import kueue_crd_paths  # noqa: PLC0415
    from testkit.realtier.faults import timed_simulation  # noqa: PLC0415

    binary = kueue_binary()
    if binary is None:
        pytest.skip("real tier: kueue not built")
    if isinstance(fleet, Path):
        fleet, _ = parse_fleet(yaml.safe_load(fleet.read_text()), source=str(fleet))
    with running_twin(
        name,
        tools,
        timed_simulation(sim, workdir / "stages"),
        kueue_binary=binary,
        kueue_crds=kueue_crd_paths(fleet),
        workdir=workdir,
        fleet_value=fleet,
    ) as started:
        yield started
