"""A RayCluster and a RayJob through MultiKueue on dev's twin with the real KubeRay operator (issue
41, item 4, its Ray half).

The fleet is dev's with `ray.io/raycluster` and `ray.io/rayjob` in `kueue.frameworks` and
`operators.kuberay` (1.5.0) on both workers. Every plane has the pinned RayCluster and RayJob CRDs
(installed with the Kueue CRDs, before Kueue starts); the manager has no operator, as the stack
deploys it; each worker runs the real KubeRay operator (`scripts/build-real-tier-tools --only
kuberay`) as a process of its plane, and has the RayService CRD too (the chart installs all three;
the operator's RayService controller cannot be turned off and needs it). The workers' batch pools
start at minCount and the real cluster-autoscaler answers Kueue's ProvisioningRequests.

1. A RayCluster (head 1, worker group `workers` 2) submitted to the manager as Kueue's webhook
   would leave it (`spec.suspend: true`, `spec.managedBy: kueue.x-k8s.io/multikueue`, the
   queue-name label; no webhook runs on the twin) is dispatched to exactly one worker (the other
   has no copy and never a pod of it, on every poll); that worker's ProvisioningRequest covers both
   pod sets (head 1, workers 2); KubeRay creates the three pods there and they run together; the
   manager's copy reports the worker's state `ready`. A RayCluster never finishes: deleting it on
   the manager removes the copy, its pods and its Workload from the worker.
2. A RayJob (HTTPMode, the same cluster spec) goes the same way; KubeRay creates the RayCluster
   and its three pods, submits the job to the head's dashboard (the stand-in below) once they run,
   and follows it PENDING -> RUNNING -> SUCCEEDED; the manager's copy reports `jobStatus:
   SUCCEEDED`, `jobDeploymentStatus: Complete`, and the manager's Workload is Finished. The job
   was submitted once, on the chosen worker's dashboard, for that job's head Service. A second
   RayJob, running, is deleted on the manager: its copy, its RayCluster, its pods and its Workload
   are removed from the worker, and KubeRay stopped its Ray job first (its finalizer).
3. A RayJob in K8sJobMode (the example's mode): the worker's ProvisioningRequest holds Kueue's
   three pod sets (head 1, workers 2, submitter 1); KubeRay makes the RayCluster and, once it is
   ready, the submitter Job; the four pods run together; the job is submitted once, by the
   submitter (below), and the RayJob is Complete on the manager only after the submitter pod ended.

The operator outside a cluster (main.go of ray-operator v1.5.0):
- `KUBECONFIG` the worker plane's admin kubeconfig (controller-runtime's `GetConfigOrDie`);
- `--enable-leader-election=false` (its default is true); `--metrics-addr` and
  `--health-probe-bind-address` on loopback ports of `free_port`;
- no webhooks: main.go sets the RayCluster webhook up only when `ENABLE_WEBHOOKS=true`;
- `HTTP_PROXY` set to the worker's stand-in dashboard (testkit/realtier/ray_dashboard.py): KubeRay
  calls the dashboard at `http://<head service>.<ns>.svc.cluster.local:8265` with Go's default
  transport, which sends plain HTTP through `HTTP_PROXY`; its API-server traffic is HTTPS to
  loopback and takes no proxy.

The two submission modes. In HTTPMode KubeRay submits the job to the dashboard itself, and Kueue's
pod sets have no `submitter` (rayjob_controller.go of Kueue v0.19.2). In K8sJobMode the submitter
Job's pod runs `ray job status || ray job submit --no-wait`, then `ray job logs --follow`
(KubeRay's common/job.go); kwok runs that pod without running anything, and a submitter that ends
with no job on the dashboard fails the RayJob ("Submitter completed but Ray job not found in
RayCluster"). So the test makes the pod's one submission itself once kwok has it Running
(`StandInDashboard.submit_for_submitter`, with the pod's own RAY_DASHBOARD_ADDRESS and
RAY_JOB_SUBMISSION_ID), and kwok completes the pod SUBMITTER_RUN_FOR later (its delay annotation),
after the stand-in's job SUCCEEDED, as `ray job logs --follow` would return.

kwok plays the pods: the Ray pods are bound, Running and Ready (kwok's pod-ready Stage) and never
complete (kwok's pod-complete Stage is for Jobs' pods); no Ray process starts.

Real: KubeRay's RayCluster and RayJob controllers (pods, head Service, status, `spec.managedBy`,
the RayJob finalizer that stops the Ray job, the dashboard client and its polling), Kueue's ray
integrations and MultiKueue adapter, the gate, the cluster-autoscaler, Pod Security admission.
Different: the operator outside a cluster (above), no Ray process, the dashboard a stand-in reached
through `HTTP_PROXY` rather than cluster DNS and the head Service, the K8sJobMode submitter's
request made by the test; point by point in docs/testing.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from config.frameworks import KubeRaySettings
from config.loader import PINNED_CRDS
from config.models import FleetConfig
from testkit.realtier.faults import (
    COMPLETE_DELAY,
    condition,
    condition_of,
    get_json,
    items,
    timed_simulation,
)
from testkit.realtier.fleetview_cli import fleetview
from testkit.realtier.harness import (
    ControlPlane,
    Tools,
    build_command,
    find_tool,
    free_port,
)
from testkit.realtier.kueue import kueue_binary
from testkit.realtier.ray_dashboard import StandInDashboard
from testkit.realtier.shared.faults_runtime import MANAGER, where, workloads
from testkit.realtier.shared.job_operator import apply_ok, operator_twin, with_framework
from testkit.realtier.twin import submissions
from testkit.realtier.twin_run import SimulationTools, Twin
from testkit.realtier.wait import until
from upstream.frameworks import KUBERAY
from upstream.kueue import MULTIKUEUE_CONTROLLER, QUEUE_LABEL
from upstream.podsecurity import (
    RESTRICTED_CONTAINER_SECURITY_CONTEXT,
    RESTRICTED_POD_SECURITY_CONTEXT,
)

pytestmark = [pytest.mark.real]

STACK: Final = "dev"
WORKERS: Final = ("worker-1", "worker-2")
FRAMEWORKS: Final = ("ray.io/raycluster", "ray.io/rayjob")
TOOL: Final = "kuberay"
API: Final = "/apis/ray.io/v1"
# The operator's own CRD the manager does not get: next to the binary (build_kuberay copies it
# from the module's config/crd/bases).
RAYSERVICE_CRD: Final = "ray.io_rayservices.yaml"
CLUSTER_LABEL: Final = "ray.io/cluster"  # on KubeRay's pods (common/pod.go labelPod)
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"  # the submitter Job is named as its RayJob
GROUP: Final = "workers"
WORKER_REPLICAS: Final = 2
PODS: Final = 1 + WORKER_REPLICAS
IMAGE: Final = "rayproject/ray:2.46.0"  # never pulled: kwok runs no container
PENDING_FOR: Final = 2.0  # the stand-in dashboard's timer (seconds)
RUNNING_FOR: Final = 8.0
CANCEL_RUNNING_FOR: Final = 600.0
# The submitter pod Runs (kwok) until after the stand-in's job SUCCEEDED, as `ray job logs
# --follow` would; KubeRay completes a K8sJobMode RayJob only once the submitter finished.
SUBMITTER_RUN_FOR: Final = "15s"
POLL: Final = 0.25
READY_TIMEOUT: Final = 60.0
RUN_TIMEOUT: Final = 120.0  # dispatch, gate, scale-up, pods Running
DONE_TIMEOUT: Final = 90.0
CLEANUP_TIMEOUT: Final = 60.0


def find_operator() -> tuple[Path | None, str]:
    """The built KubeRay operator with its RayService CRD beside it, or why not."""
    path, why = find_tool(TOOL)
    if path is not None and not (path.parent.parent / "crds" / RAYSERVICE_CRD).is_file():
        return None, f"{TOOL}: no {RAYSERVICE_CRD} beside it; {build_command([TOOL])}"
    return path, why


def _fleet() -> FleetConfig:
    return with_framework(STACK, FRAMEWORKS, {"kuberay": KubeRaySettings(workers=list(WORKERS))})


def _crds() -> list[Path]:
    folder = PINNED_CRDS / KUBERAY.project / f"v{KUBERAY.default_version}"
    return [folder / KUBERAY.crd_files[f] for f in FRAMEWORKS]


def start_operator(plane: ControlPlane, binary: Path, dashboard: StandInDashboard) -> int:
    """KubeRay against `plane`, as a process of it, its dashboard calls sent to `dashboard`;
    returns its health port."""
    crd = yaml.safe_load((binary.parent.parent / "crds" / RAYSERVICE_CRD).read_text())
    apply_ok(plane, [crd])
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"
    until(
        lambda: condition(get_json(plane, path), "Established") == "True",
        READY_TIMEOUT,
        f"[{plane.name}] {crd['metadata']['name']} Established",
    )
    health = free_port()
    plane._spawn(
        TOOL,
        [
            "/usr/bin/env",
            f"KUBECONFIG={plane.kubeconfig}",
            f"HTTP_PROXY={dashboard.url}",
            # no exception from the machine's own settings (Go reads NO_PROXY, then no_proxy)
            "NO_PROXY=",
            "no_proxy=",
            str(binary),
            "--enable-leader-election=false",
            f"--metrics-addr=127.0.0.1:{free_port()}",
            f"--health-probe-bind-address=127.0.0.1:{health}",
            "--log-stdout-encoder=console",
        ],
    )
    return health


@dataclass
class RayTwin:
    twin: Twin
    dashboards: dict[str, StandInDashboard]  # worker -> its head's stand-in dashboard


@pytest.fixture(scope="module")
def operator() -> Path:
    found, why = find_operator()
    if found is None:
        pytest.skip("real tier (KubeRay): " + why)
    return found


@pytest.fixture(scope="module")
def ray_twin(
    tools: Tools,
    simulation: SimulationTools,
    operator: Path,
    autoscaler: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RayTwin]:
    binary = kueue_binary()
    if binary is None:
        pytest.skip("real tier: kueue not built")
    crds = _crds()
    if not all(c.is_file() for c in crds):
        pytest.skip(f"real tier: no pinned Ray CRDs at {crds[0].parent} (run scripts/fetch-crds)")
    # The manager's pinned CRDs are the operator's own (the module's, which its chart installs on
    # the workers): the workers get the same files.
    own = operator.parent.parent / "crds"
    for crd in crds:
        assert crd.read_bytes() == (own / crd.name).read_bytes(), f"{crd} differs from {own}"
    dashboards = {
        w: StandInDashboard(pending=PENDING_FOR, running=RUNNING_FOR).start() for w in WORKERS
    }
    try:
        workdir = tmp_path_factory.mktemp("ray")
        with operator_twin(
            STACK,
            _fleet(),
            tools,
            timed_simulation(simulation, workdir / "stages"),
            kueue_binary=binary,
            framework_crds=crds,
            workdir=workdir,
            autoscaler=autoscaler,
            tool=TOOL,
            workers=WORKERS,
            start=lambda worker, plane: start_operator(plane, operator, dashboards[worker]),
        ) as started:
            yield RayTwin(started, dashboards)
    finally:
        for dashboard in dashboards.values():
            dashboard.stop()


# ---- the objects and what happened to them ----------------------------------------------------


def _template(role: str) -> dict[str, Any]:
    container = {
        "name": f"ray-{role}",
        "image": IMAGE,
        "securityContext": dict(RESTRICTED_CONTAINER_SECURITY_CONTEXT),
        "resources": {
            "requests": {"cpu": "500m", "memory": "256Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"},
        },
    }
    return {
        "spec": {
            "securityContext": dict(RESTRICTED_POD_SECURITY_CONTEXT),
            "containers": [container],
        }
    }


def cluster_spec() -> dict[str, Any]:
    return {
        "rayVersion": "2.46.0",
        "headGroupSpec": {"rayStartParams": {}, "template": _template("head")},
        "workerGroupSpecs": [
            {
                "groupName": GROUP,
                "replicas": WORKER_REPLICAS,
                "minReplicas": WORKER_REPLICAS,
                "maxReplicas": WORKER_REPLICAS,
                "rayStartParams": {},
                "template": _template("worker"),
            }
        ],
    }


def raycluster(name: str, ns: str, queue: str) -> dict[str, Any]:
    """A RayCluster as Kueue's webhook leaves it on a MultiKueue manager."""
    spec = {"suspend": True, "managedBy": MULTIKUEUE_CONTROLLER, **cluster_spec()}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": ns, "labels": {QUEUE_LABEL: queue}},
        "spec": spec,
    }


ENTRYPOINT: Final = "python -c \"import ray; ray.init(); print('ok')\""


def rayjob(name: str, ns: str, queue: str, mode: str = "HTTPMode") -> dict[str, Any]:
    """A RayJob as Kueue's webhook leaves it on a MultiKueue manager; in K8sJobMode with a
    restricted submitter pod that kwok runs for SUBMITTER_RUN_FOR."""
    spec: dict[str, Any] = {
        "suspend": True,
        "managedBy": MULTIKUEUE_CONTROLLER,
        "submissionMode": mode,
        "entrypoint": ENTRYPOINT,
        "shutdownAfterJobFinishes": True,
        "rayClusterSpec": cluster_spec(),
    }
    if mode == "K8sJobMode":
        template = _template("job-submitter")
        template["metadata"] = {"annotations": {COMPLETE_DELAY: SUBMITTER_RUN_FOR}}
        template["spec"]["restartPolicy"] = "Never"
        spec["submitterPodTemplate"] = template
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": ns, "labels": {QUEUE_LABEL: queue}},
        "spec": spec,
    }


def _obj(plane: ControlPlane, plural: str, ns: str, name: str) -> dict[str, Any] | None:
    return get_json(plane, f"{API}/namespaces/{ns}/{plural}/{name}")


def _of(name: str, cluster: str) -> bool:
    """Is a Ray cluster name `name` itself, or the one KubeRay made for RayJob `name`
    (`<name>-<5 random>`, utils.GenerateRayClusterName)?"""
    return cluster == name or (cluster.startswith(f"{name}-") and len(cluster) == len(name) + 6)


def _pods(plane: ControlPlane, ns: str, name: str) -> list[dict[str, Any]]:
    pods = items(plane, f"/api/v1/namespaces/{ns}/pods?labelSelector={CLUSTER_LABEL}")
    return [p for p in pods if _of(name, p["metadata"]["labels"][CLUSTER_LABEL])]


def _submitter_pods(plane: ControlPlane, ns: str, name: str) -> list[dict[str, Any]]:
    return items(plane, f"/api/v1/namespaces/{ns}/pods?labelSelector={JOB_NAME_LABEL}%3D{name}")


def _clusters(plane: ControlPlane, ns: str, name: str) -> list[dict[str, Any]]:
    return [
        c
        for c in items(plane, f"{API}/namespaces/{ns}/rayclusters")
        if _of(name, c["metadata"]["name"])
    ]


def _workload(plane: ControlPlane, ns: str, kind: str, name: str) -> dict[str, Any] | None:
    for wl in workloads(plane, ns):
        owners = wl["metadata"].get("ownerReferences") or []
        if any(o["kind"] == kind and o["name"] == name for o in owners):
            return wl
    return None


def _state(twin: Twin, ns: str) -> str:
    lines: list[str] = []
    for name, plane in twin.planes.items():
        got = plane.kubectl(
            "get",
            "rayjobs,rayclusters,workloads,pods,provisioningrequests",
            "-n",
            ns,
            check=False,
        )
        lines.append(f"[{name}]\n{got.stdout}{got.stderr}")
    return "\n".join(lines)


def _requests(plane: ControlPlane, ns: str, wl: dict[str, Any]) -> list[dict[str, Any]]:
    """The ProvisioningRequests Kueue made for `wl` (owned by it)."""
    uid = wl["metadata"]["uid"]
    return [
        r
        for r in items(plane, f"/apis/autoscaling.x-k8s.io/v1/namespaces/{ns}/provisioningrequests")
        if any(o.get("uid") == uid for o in r["metadata"].get("ownerReferences") or [])
    ]


def _provisioned_podsets(plane: ControlPlane, ns: str, wl: dict[str, Any]) -> dict[str, int]:
    """Pod set name -> count in the ProvisioningRequest Kueue made for `wl` (its pod templates
    are named `ppt-<request>-<pod set>`, pkg/controller/admissionchecks/provisioning)."""
    requests = _requests(plane, ns, wl)
    out: dict[str, int] = {}
    names = [p["name"] for p in wl["spec"]["podSets"]]
    for request in requests:
        for podset in request["spec"]["podSets"]:
            ref = podset["podTemplateRef"]["name"]
            owner = next((n for n in names if ref.endswith(f"-{n}")), ref)
            out[owner] = int(podset["count"])
    return out


@dataclass
class Watch:
    """Polls both workers while one Ray object goes through the fleet: the gate's pod sets on
    each, and every pod or copy ever seen on each."""

    twin: Twin
    ns: str
    kind: str  # RayCluster | RayJob
    plural: str
    name: str
    # K8sJobMode: each worker's dashboard, to which the test makes the submitter pod's request
    submitter_for: dict[str, StandInDashboard] | None = None

    def __post_init__(self) -> None:
        self.gates: dict[str, dict[str, int]] = {}
        self.pods_seen: dict[str, int] = {}
        self.copies_seen: set[str] = set()
        # workers whose request for it the cluster-autoscaler marked Provisioned (nothing else
        # on the twin sets that condition)
        self.provisioned: set[str] = set()
        self.submitted: set[str] = set()  # submitter pods whose request was made (uids)
        self.submitters_running: dict[str, int] = {}  # worker -> submitter pods Running now

    def chosen(self) -> str | None:
        wl = _workload(self.twin.planes[MANAGER], self.ns, self.kind, self.name)
        return where(wl) if wl else None

    def poll(self) -> dict[str, int]:
        """worker -> pods of the object Running there now."""
        self.twin.check_alive()
        running: dict[str, int] = {}
        for worker in WORKERS:
            plane = self.twin.planes[worker]
            if _obj(plane, self.plural, self.ns, self.name) is not None:
                self.copies_seen.add(worker)
            wl = _workload(plane, self.ns, self.kind, self.name)
            if wl is not None and worker not in self.gates:
                got = _provisioned_podsets(plane, self.ns, wl)
                if sum(got.values()) == self.pods:
                    self.gates[worker] = got
            if wl is not None and worker not in self.provisioned:
                requests = _requests(plane, self.ns, wl)
                if any(condition(r, "Provisioned") == "True" for r in requests):
                    self.provisioned.add(worker)
            pods = _pods(plane, self.ns, self.name)
            submitters = _submitter_pods(plane, self.ns, self.name) if self.submitter_for else []
            if pods or submitters:
                seen = len(pods) + len(submitters)
                self.pods_seen[worker] = max(self.pods_seen.get(worker, 0), seen)
            running[worker] = sum(p["status"].get("phase") == "Running" for p in pods)
            up = [p for p in submitters if p["status"].get("phase") == "Running"]
            self.submitters_running[worker] = len(up)
            for pod in up:
                self._submit(worker, pod)
        return running

    @property
    def pods(self) -> int:
        return PODS + (1 if self.submitter_for else 0)

    def _submit(self, worker: str, pod: dict[str, Any]) -> None:
        """What the submitter container would do first: `ray job submit` to its dashboard."""
        if self.submitter_for is None or pod["metadata"]["uid"] in self.submitted:
            return
        env = {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env", [])}
        self.submitter_for[worker].submit_for_submitter(
            env["RAY_DASHBOARD_ADDRESS"], env["RAY_JOB_SUBMISSION_ID"], ENTRYPOINT
        )
        self.submitted.add(pod["metadata"]["uid"])

    def running_together(self) -> str | None:
        running = self.poll()
        chosen = self.chosen()
        if chosen is None:
            return None
        submitters = self.submitters_running[chosen] if self.submitter_for else 0
        return chosen if running[chosen] + submitters == self.pods else None

    def only_on(self, chosen: str) -> None:
        [other] = [w for w in WORKERS if w != chosen]
        assert other not in self.pods_seen, f"pods of {self.name} on {other}: {self.pods_seen}"
        assert other not in self.copies_seen, f"a copy of {self.name} on {other}"

    def cleaned(self, worker: str) -> bool:
        self.poll()
        plane = self.twin.planes[worker]
        return (
            _obj(plane, self.plural, self.ns, self.name) is None
            and not _clusters(plane, self.ns, self.name)
            and not _pods(plane, self.ns, self.name)
            and _workload(plane, self.ns, self.kind, self.name) is None
        )


def _timer(ray_twin: RayTwin, running: float) -> None:
    """How long the next jobs submitted to the stand-ins stay RUNNING (one module twin)."""
    for dashboard in ray_twin.dashboards.values():
        dashboard.running = running


def _submission(twin: Twin) -> tuple[str, str]:
    [sub] = [s for s in submissions(twin.fleet) if s.dispatched]
    return sub.namespace, sub.local_queue


def _completed_once(
    twin: Twin, watch: Watch, ns: str, name: str, t0: float
) -> tuple[dict[str, Any], float]:
    """The manager's RayJob Complete and SUCCEEDED, run once and never failed (KubeRay's own
    count, `status.succeeded`/`failed`, set by checkBackoffLimitAndUpdateStatusIfNeeded in
    rayjob_controller.go and copied back by MultiKueue), then its Workload Finished. Returns
    the RayJob's status and the seconds from `t0` to Complete."""
    manager = twin.planes[MANAGER]

    def complete() -> bool:
        watch.poll()
        status = (_obj(manager, "rayjobs", ns, name) or {}).get("status") or {}
        return status.get("jobDeploymentStatus") == "Complete"

    until(complete, DONE_TIMEOUT, "the manager's RayJob Complete", seen=lambda: _state(twin, ns))
    done_at = time.monotonic() - t0
    status = (_obj(manager, "rayjobs", ns, name) or {})["status"]
    assert status["jobStatus"] == "SUCCEEDED", status
    assert status.get("succeeded") == 1, status
    assert not status.get("failed"), status
    until(
        lambda: condition(_workload(manager, ns, "RayJob", name), "Finished") == "True",
        DONE_TIMEOUT,
        "the manager's Workload Finished",
        seen=lambda: _state(twin, ns),
    )
    return status, done_at


def _run(watch: Watch, what: str) -> tuple[str, float]:
    t0 = time.monotonic()
    chosen = until(
        watch.running_together,
        RUN_TIMEOUT,
        f"{what}: {watch.pods} pods Running on its worker",
        seen=lambda: _state(watch.twin, watch.ns),
    )
    assert chosen in WORKERS
    return chosen, time.monotonic() - t0


def _check_pods(plane: ControlPlane, ns: str, name: str) -> None:
    pods = _pods(plane, ns, name)
    roles = sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods)
    assert roles == ["head", "worker", "worker"], roles
    assert all(p["spec"].get("nodeName") for p in pods), "every pod bound to a (kwok) node"
    assert {p["metadata"]["labels"]["ray.io/group"] for p in pods} == {"headgroup", GROUP}


def test_a_raycluster_runs_on_one_worker_with_the_real_kuberay_operator(
    ray_twin: RayTwin,
) -> None:
    twin = ray_twin.twin
    ns, queue = _submission(twin)
    manager = twin.planes[MANAGER]
    name = "raycluster"
    t0 = time.monotonic()
    apply_ok(manager, [raycluster(name, ns, queue)])
    watch = Watch(twin, ns, "RayCluster", "rayclusters", name)
    chosen, running_at = _run(watch, name)
    # The gate on the chosen worker asked for both pod sets at once, with their counts.
    assert watch.gates.get(chosen) == {"head": 1, GROUP: WORKER_REPLICAS}, watch.gates
    assert chosen in watch.provisioned, "the autoscaler answered the worker's request"
    _check_pods(twin.planes[chosen], ns, name)

    # The worker's state reported on the manager's copy (MultiKueue copies the status back).
    def ready_on_manager() -> bool:
        watch.poll()
        got = _obj(manager, "rayclusters", ns, name) or {}
        return (got.get("status") or {}).get("state") == "ready"

    until(
        ready_on_manager,
        DONE_TIMEOUT,
        "the manager's RayCluster ready",
        seen=lambda: _state(twin, ns),
    )
    ready_at = time.monotonic() - t0
    status = (_obj(manager, "rayclusters", ns, name) or {})["status"]
    assert status.get("readyWorkerReplicas") == WORKER_REPLICAS, status
    wl = _workload(manager, ns, "RayCluster", name)
    assert wl is not None
    assert where(wl) == chosen
    assert condition(wl, "Admitted") == "True", wl
    assert (_obj(manager, "rayclusters", ns, name) or {})["spec"]["suspend"] is False
    assert not _pods(manager, ns, name), "no pod of it on the manager"
    watch.only_on(chosen)

    # ---- deleted on the manager: the worker is cleaned up ----
    manager.kubectl("delete", "raycluster", name, f"--namespace={ns}", "--wait=false")
    until(
        lambda: watch.cleaned(chosen),
        CLEANUP_TIMEOUT,
        f"[{chosen}] {name} cleaned up",
        seen=lambda: _state(twin, ns),
    )
    cleaned_at = time.monotonic() - t0
    assert _obj(manager, "rayclusters", ns, name) is None
    watch.only_on(chosen)
    print(
        f"\nraycluster: on {chosen}, {PODS} pods Running {running_at:.1f}s after submission, "
        f"ready on the manager at {ready_at:.1f}s, cleaned up at {cleaned_at:.1f}s; "
        f"gate {watch.gates[chosen]}"
    )


def test_a_rayjob_runs_once_on_one_worker_with_the_real_kuberay_operator(
    ray_twin: RayTwin,
) -> None:
    twin = ray_twin.twin
    ns, queue = _submission(twin)
    manager = twin.planes[MANAGER]
    name = "rayjob"
    _timer(ray_twin, RUNNING_FOR)
    t0 = time.monotonic()
    apply_ok(manager, [rayjob(name, ns, queue)])
    watch = Watch(twin, ns, "RayJob", "rayjobs", name)
    chosen, running_at = _run(watch, name)
    assert watch.gates.get(chosen) == {"head": 1, GROUP: WORKER_REPLICAS}, watch.gates
    assert chosen in watch.provisioned, "the autoscaler answered the worker's request"
    _check_pods(twin.planes[chosen], ns, name)

    # Complete once on the worker, reported on the manager.
    status, done_at = _completed_once(twin, watch, ns, name, t0)
    assert where(_workload(manager, ns, "RayJob", name) or {}) == chosen
    # fleetview finds a RayJob's Workload by its owner, as a Job's, and tells its end.
    told, _ = fleetview(dict(twin.planes), "why", f"{ns}/{name}", "--json")
    assert told.returncode == 0, told.stderr
    assert "Traceback" not in told.stderr, told.stderr
    answer = json.loads(told.stdout)
    finished = condition_of(_workload(manager, ns, "RayJob", name), "Finished")
    assert answer["state"] == "finished", answer
    assert f"The job finished ({finished['reason']}): {finished['message']}" in answer["verdict"]
    assert not _pods(manager, ns, name), "no pod of it on the manager"
    assert not _clusters(manager, ns, name), "no RayCluster made for it on the manager"

    # Submitted once, to the chosen worker's head, through its head Service's name.
    [other] = [w for w in WORKERS if w != chosen]
    dashboard = ray_twin.dashboards[chosen]
    submitted = [r for r in dashboard.requests if r.method == "POST" and r.path == "/api/jobs/"]
    jobs = [j for j in dashboard.jobs.values() if j.submission_id == status["jobId"]]
    assert len(jobs) == 1, dashboard.jobs
    assert len([r for r in submitted if r.host == jobs[0].host]) == 1, submitted
    head_service = status["rayClusterStatus"]["head"]["serviceName"]
    assert jobs[0].host == f"{head_service}.{ns}.svc.cluster.local:8265", jobs[0].host
    assert {"PENDING", "RUNNING", "SUCCEEDED"} <= set(jobs[0].statuses), jobs[0].statuses
    assert not ray_twin.dashboards[other].jobs, "the other worker's dashboard got a job"

    # shutdownAfterJobFinishes: KubeRay deletes the job's RayCluster and pods on the worker.
    until(
        lambda: (
            not _clusters(twin.planes[chosen], ns, name)
            and not _pods(twin.planes[chosen], ns, name)
        ),
        CLEANUP_TIMEOUT,
        f"[{chosen}] {name}'s RayCluster gone after the job",
        seen=lambda: _state(twin, ns),
    )
    watch.poll()
    watch.only_on(chosen)
    print(
        f"\nrayjob: on {chosen}, {PODS} pods Running {running_at:.1f}s after submission, "
        f"Complete on the manager at {done_at:.1f}s; gate {watch.gates[chosen]}; "
        f"dashboard statuses {sorted(set(jobs[0].statuses))}"
    )

    # ---- a running RayJob deleted on the manager: the worker is cleaned up ----
    cancelled = "rayjob-cancelled"
    _timer(ray_twin, CANCEL_RUNNING_FOR)
    apply_ok(manager, [rayjob(cancelled, ns, queue)])
    watch = Watch(twin, ns, "RayJob", "rayjobs", cancelled)
    at, _ = _run(watch, cancelled)

    def job_running() -> bool:
        watch.poll()
        got = (_obj(twin.planes[at], "rayjobs", ns, cancelled) or {}).get("status") or {}
        return got.get("jobStatus") == "RUNNING"

    until(job_running, DONE_TIMEOUT, f"[{at}] {cancelled} RUNNING", seen=lambda: _state(twin, ns))
    manager.kubectl("delete", "rayjob", cancelled, f"--namespace={ns}", "--wait=false")
    until(
        lambda: watch.cleaned(at),
        CLEANUP_TIMEOUT,
        f"[{at}] {cancelled} cleaned up",
        seen=lambda: _state(twin, ns),
    )
    assert _obj(manager, "rayjobs", ns, cancelled) is None
    watch.only_on(at)
    stops = [r for r in ray_twin.dashboards[at].requests if r.path.endswith("/stop")]
    assert stops, "KubeRay's finalizer stopped the Ray job before the RayJob went"
    [job] = [j for j in ray_twin.dashboards[at].jobs.values() if j.host.startswith(cancelled)]
    assert job.stopped_at is not None


def test_a_k8sjobmode_rayjob_gates_its_submitter_with_the_ray_pods_and_completes_once(
    ray_twin: RayTwin,
) -> None:
    """The example's mode: Kueue's third pod set, the submitter Job KubeRay makes, is in the same
    ProvisioningRequest; the submitter pod's one dashboard request is made by the test (kwok runs
    no container), and KubeRay completes the RayJob only after kwok completes that pod."""
    twin = ray_twin.twin
    ns, queue = _submission(twin)
    manager = twin.planes[MANAGER]
    name = "rayjob-k8s"
    _timer(ray_twin, RUNNING_FOR)
    t0 = time.monotonic()
    apply_ok(manager, [rayjob(name, ns, queue, mode="K8sJobMode")])
    watch = Watch(twin, ns, "RayJob", "rayjobs", name, submitter_for=ray_twin.dashboards)
    chosen, running_at = _run(watch, name)
    assert watch.gates.get(chosen) == {"head": 1, GROUP: WORKER_REPLICAS, "submitter": 1}, (
        watch.gates
    )
    assert chosen in watch.provisioned, "the autoscaler answered the worker's request"
    _check_pods(twin.planes[chosen], ns, name)
    [submitter] = _submitter_pods(twin.planes[chosen], ns, name)
    assert submitter["spec"].get("nodeName"), "the submitter bound to a (kwok) node"

    status, done_at = _completed_once(twin, watch, ns, name, t0)
    # One submission, from the submitter, to its head; KubeRay itself submitted nothing.
    dashboard = ray_twin.dashboards[chosen]
    posts = [r for r in dashboard.requests if r.method == "POST" and r.path == "/api/jobs/"]
    mine = [r for r in posts if r.host.startswith(f"{name}-")]
    assert [r.by for r in mine] == ["submitter"], mine
    assert len(watch.submitted) == 1, "one submitter pod"
    [job] = [j for j in dashboard.jobs.values() if j.submission_id == status["jobId"]]
    assert {"PENDING", "RUNNING", "SUCCEEDED"} <= set(job.statuses), job.statuses
    watch.poll()
    watch.only_on(chosen)
    print(
        f"\nrayjob K8sJobMode: on {chosen}, {watch.pods} pods Running {running_at:.1f}s after "
        f"submission, Complete on the manager at {done_at:.1f}s; gate {watch.gates[chosen]}"
    )
