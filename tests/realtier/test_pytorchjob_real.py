"""A PyTorchJob through MultiKueue on dev's twin with the real Kubeflow training operator.

The fleet is dev's with `kubeflow.org/pytorchjob` in `kueue.frameworks` and
`operators.trainingOperator` (v1.9.3) on both workers. Every plane has the pinned PyTorchJob CRD
(installed with the Kueue CRDs, before Kueue starts); the manager has no operator, as the stack
deploys it; each worker runs the real training operator (`scripts/build-real-tier-tools --only
training-operator`) as a process of its plane. The workers' batch pools start at minCount and the
real cluster-autoscaler answers Kueue's ProvisioningRequests.

1. A PyTorchJob (Master 1, Worker 2) submitted to the manager as Kueue's webhook would leave it
   (`runPolicy.suspend: true`, `runPolicy.managedBy: kueue.x-k8s.io/multikueue`, the queue-name
   label; no webhook runs on the twin): it is dispatched to exactly one worker (the manager's
   Workload names it; the other worker ends with no copy and no pod of it); that worker's
   ProvisioningRequest covers both pod sets with their counts (master 1, worker 2); the operator
   creates the three pods there, they run together, the job succeeds once on the worker (Master
   succeeded 1) and the manager's copy reports Succeeded.
2. A second PyTorchJob, running on a worker, is deleted on the manager: its copy, its pods and its
   Workload are removed from that worker.

The operator outside a cluster (cmd/training-operator.v1/main.go and pkg/cert of v1.9.3):
- `--kubeconfig` (controller-runtime's flag) the worker plane's admin kubeconfig;
- `--enable-scheme=pytorchjob`: only the PyTorchJob controller, so only its CRD is needed;
- leader election is off by default; no `--gang-scheduler-name` (no Volcano or scheduler-plugins);
- `--metrics-bind-address` and `--health-probe-bind-address` on loopback ports of `free_port`, and
  `--webhook-server-port` from it (the server binds every interface; no webhook configuration
  points at it: the twin registers no webhooks, as for Kueue);
- its controllers start only once its cert rotator says the webhook certificate is ready: the
  rotator fills the Secret `training-operator-webhook-cert` in namespace `kubeflow` (the test
  creates both, as upstream's overlay does) and then waits for the file
  `/tmp/k8s-webhook-server/serving-certs/tls.crt`, which a kubelet would mount from that Secret.
  Here the webhook server reads its certificate from `$TMPDIR/k8s-webhook-server/serving-certs`
  (controller-runtime's default), set to a self-signed one in the test's own folder; the rotator's
  fixed path only has to exist, so the test makes it if it is missing (its content is never read);
- `--pytorch-init-container-template-file`: upstream's template of the Worker pods' `init-pytorch`
  container plus a restricted securityContext. Upstream's has none, and Pod Security `restricted`
  (the team namespaces) rejects those pods; the same holds on AKS (see docs/ai-jobs.md).

kwok plays the pods: a Stage `pytorchjob-pod-complete` (kwok's pod-complete, selecting pods owned
by a PyTorchJob instead of a Job) completes them after their delay annotation, as the Jobs' pods.

RayCluster and RayJob, with the real KubeRay operator: tests/realtier/test_rayjob_real.py.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from config.frameworks import TrainingOperatorSettings
from config.loader import PINNED_CRDS
from config.models import FleetConfig
from testkit.realtier.faults import (
    COMPLETE_DELAY,
    condition,
    get_json,
    items,
    timed_simulation,
)
from testkit.realtier.harness import (
    ControlPlane,
    Tools,
    find_tool,
    free_port,
    namespace,
)
from testkit.realtier.kueue import kueue_binary
from testkit.realtier.shared.faults_runtime import MANAGER, where, workloads
from testkit.realtier.shared.job_operator import apply_ok, operator_twin, with_framework
from testkit.realtier.twin import submissions
from testkit.realtier.twin_run import SimulationTools, Twin
from testkit.realtier.wait import until
from upstream.frameworks import TRAINING_OPERATOR
from upstream.kueue import MULTIKUEUE_CONTROLLER, QUEUE_LABEL
from upstream.podsecurity import (
    RESTRICTED_CONTAINER_SECURITY_CONTEXT,
    RESTRICTED_POD_SECURITY_CONTEXT,
)

pytestmark = [pytest.mark.real]

STACK: Final = "dev"
WORKERS: Final = ("worker-1", "worker-2")
FRAMEWORK: Final = "kubeflow.org/pytorchjob"
TOOL: Final = "training-operator"
API: Final = "/apis/kubeflow.org/v1"
# The operator's namespace (pkg/cert: MY_POD_NAMESPACE, default kubeflow) and its webhook Secret
# (main.go's --webhook-secret-name default), which upstream's overlay creates empty.
OPERATOR_NAMESPACE: Final = TRAINING_OPERATOR.namespace
WEBHOOK_SECRET: Final = "training-operator-webhook-cert"
ROTATOR_CERT: Final = Path("/tmp/k8s-webhook-server/serving-certs/tls.crt")
JOB_NAME_LABEL: Final = "training.kubeflow.org/job-name"  # on the operator's pods
REPLICAS: Final = {"Master": 1, "Worker": 2}
# Upstream's init container (pkg/controller.v1/pytorch/initcontainer.go) plus a restricted
# securityContext; the pod's own securityContext gives runAsNonRoot and seccomp.
_INIT_COMMAND: Final = (
    "err=1;for i in $(seq {{.MaxTries}}); do if nslookup {{.MasterAddr}}; then err=0 && break; "
    "fi;echo waiting for master; sleep 2; done; exit $err"
)
INIT_TEMPLATE: Final = (
    """
- name: init-pytorch
  image: {{.InitContainerImage}}
  imagePullPolicy: IfNotPresent
  securityContext:
    allowPrivilegeEscalation: false
    capabilities: {drop: [ALL]}
  resources:
    limits:
      cpu: 100m
      memory: 20Mi
    requests:
      cpu: 50m
      memory: 10Mi
  command: ['sh', '-c', '"""
    + _INIT_COMMAND
    + """']
"""
)
RUN_FOR: Final = "10s"  # each pod's Running time: long enough to see all three at once
CANCEL_RUN_FOR: Final = "600s"  # the cancelled job's pods run until it is deleted
POLL: Final = 0.25
RUN_TIMEOUT: Final = 120.0  # dispatch, gate, scale-up, pods Running
DONE_TIMEOUT: Final = 60.0
CLEANUP_TIMEOUT: Final = 60.0


def _fleet() -> FleetConfig:
    return with_framework(
        STACK, [FRAMEWORK], {"training_operator": TrainingOperatorSettings(workers=list(WORKERS))}
    )


def _crd() -> Path:
    version = f"v{TRAINING_OPERATOR.default_version}"
    return (
        PINNED_CRDS / TRAINING_OPERATOR.project / version / TRAINING_OPERATOR.crd_files[FRAMEWORK]
    )


def _stages(sim: SimulationTools, workdir: Path) -> SimulationTools:
    """The twin's timed Stages plus `pytorchjob-pod-complete`."""
    timed = timed_simulation(sim, workdir)
    source = next(p for p in timed.kwok_stages if p.name == "pod-complete.yaml")
    doc: dict[str, Any] = yaml.safe_load(source.read_text())
    doc["metadata"]["name"] = "pytorchjob-pod-complete"
    for expr in doc["spec"]["selector"]["matchExpressions"]:
        if expr["key"] == ".metadata.ownerReferences.[].kind":
            expr["values"] = ["PyTorchJob"]
    out = workdir / "pytorchjob-pod-complete.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return SimulationTools(
        timed.kube_scheduler, timed.kwok, (*timed.kwok_stages, out), timed.provisioning_crd
    )


def _self_signed(openssl: Path, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            str(openssl),
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=training-operator.kubeflow.svc",
            "-keyout",
            str(folder / "tls.key"),
            "-out",
            str(folder / "tls.crt"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )


def start_operator(plane: ControlPlane, binary: Path, openssl: Path) -> int:
    """The training operator against `plane`, as a process of it; returns its health port."""
    apply_ok(plane, [namespace(OPERATOR_NAMESPACE)])
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": WEBHOOK_SECRET, "namespace": OPERATOR_NAMESPACE},
    }
    apply_ok(plane, [secret])
    home = plane.workdir / "training-operator"
    tmp = home / "tmp"
    _self_signed(openssl, tmp / "k8s-webhook-server" / "serving-certs")
    if not ROTATOR_CERT.exists():
        ROTATOR_CERT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp / "k8s-webhook-server" / "serving-certs" / "tls.crt", ROTATOR_CERT)
    template = home / "init-container.yaml"
    template.write_text(INIT_TEMPLATE)
    health = free_port()
    plane._spawn(
        TOOL,
        [
            "/usr/bin/env",
            f"TMPDIR={tmp}",
            f"MY_POD_NAMESPACE={OPERATOR_NAMESPACE}",
            str(binary),
            f"--kubeconfig={plane.kubeconfig}",
            "--enable-scheme=pytorchjob",
            f"--metrics-bind-address=127.0.0.1:{free_port()}",
            f"--health-probe-bind-address=127.0.0.1:{health}",
            f"--webhook-server-port={free_port()}",
            f"--pytorch-init-container-template-file={template}",
        ],
    )
    return health


@pytest.fixture(scope="module")
def operator() -> Path:
    found, why = find_tool(TOOL)
    if found is None:
        pytest.skip("real tier (training operator): " + why)
    return found


@pytest.fixture
def twin(
    tools: Tools, simulation: SimulationTools, operator: Path, autoscaler: Path, tmp_path: Path
) -> Iterator[Twin]:
    binary = kueue_binary()
    if binary is None:
        pytest.skip("real tier: kueue not built")
    crd = _crd()
    if not crd.is_file():
        pytest.skip(f"real tier: no pinned PyTorchJob CRD at {crd} (run scripts/fetch-crds)")
    with operator_twin(
        STACK,
        _fleet(),
        tools,
        _stages(simulation, tmp_path / "stages"),
        kueue_binary=binary,
        framework_crds=[crd],
        workdir=tmp_path,
        autoscaler=autoscaler,
        tool=TOOL,
        workers=WORKERS,
        # One at a time (operator_twin's way): each started operator's rotator finds the shared
        # path already there.
        start=lambda _, plane: start_operator(plane, operator, tools.openssl),
    ) as started:
        yield started


# ---- the job and what happened to it ---------------------------------------------------------


def pytorchjob(name: str, ns: str, queue: str, run_for: str) -> dict[str, Any]:
    """A PyTorchJob as Kueue's webhook leaves it on a MultiKueue manager."""
    container = {
        "name": "pytorch",  # the operator's default container name (kubeflow.org/v1)
        "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
        "args": ["pause"],
        "ports": [{"name": "pytorchjob-port", "containerPort": 23456}],
        "securityContext": dict(RESTRICTED_CONTAINER_SECURITY_CONTEXT),
        "resources": {
            "requests": {"cpu": "500m", "memory": "256Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"},
        },
    }
    template = {
        "metadata": {"annotations": {COMPLETE_DELAY: run_for}},
        "spec": {
            "securityContext": dict(RESTRICTED_POD_SECURITY_CONTEXT),
            "containers": [container],
        },
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": ns, "labels": {QUEUE_LABEL: queue}},
        "spec": {
            "runPolicy": {"suspend": True, "managedBy": MULTIKUEUE_CONTROLLER},
            "pytorchReplicaSpecs": {
                kind: {"replicas": count, "restartPolicy": "Never", "template": template}
                for kind, count in REPLICAS.items()
            },
        },
    }


def _job(plane: ControlPlane, ns: str, name: str) -> dict[str, Any] | None:
    return get_json(plane, f"{API}/namespaces/{ns}/pytorchjobs/{name}")


def _pods(plane: ControlPlane, ns: str, name: str) -> list[dict[str, Any]]:
    return items(plane, f"/api/v1/namespaces/{ns}/pods?labelSelector={JOB_NAME_LABEL}%3D{name}")


def _workload(plane: ControlPlane, ns: str, name: str) -> dict[str, Any] | None:
    for wl in workloads(plane, ns):
        owners = wl["metadata"].get("ownerReferences") or []
        if any(o["kind"] == "PyTorchJob" and o["name"] == name for o in owners):
            return wl
    return None


def _dispatched(twin: Twin, ns: str, name: str) -> str | None:
    wl = _workload(twin.planes[MANAGER], ns, name)
    return where(wl) if wl else None


def _state(twin: Twin, ns: str) -> str:
    lines: list[str] = []
    for name, plane in twin.planes.items():
        got = plane.kubectl(
            "get", "pytorchjobs,workloads,pods,provisioningrequests", "-n", ns, check=False
        )
        lines.append(f"[{name}]\n{got.stdout}{got.stderr}")
    return "\n".join(lines)


def _provisioned_podsets(plane: ControlPlane, ns: str, wl: dict[str, Any]) -> dict[str, int]:
    """Pod set name -> count in the ProvisioningRequest Kueue made for `wl` (its pod templates
    are named `ppt-<request>-<pod set>`, pkg/controller/admissionchecks/provisioning)."""
    uid = wl["metadata"]["uid"]
    requests = [
        r
        for r in items(plane, f"/apis/autoscaling.x-k8s.io/v1/namespaces/{ns}/provisioningrequests")
        if any(o.get("uid") == uid for o in r["metadata"].get("ownerReferences") or [])
    ]
    out: dict[str, int] = {}
    names = [p["name"] for p in wl["spec"]["podSets"]]
    for request in requests:
        for podset in request["spec"]["podSets"]:
            ref = podset["podTemplateRef"]["name"]
            owner = next((n for n in names if ref.endswith(f"-{n}")), ref)
            out[owner] = int(podset["count"])
    return out


def test_a_pytorchjob_runs_once_on_one_worker_with_the_real_training_operator(
    twin: Twin,
) -> None:
    [sub] = [s for s in submissions(twin.fleet) if s.dispatched]
    ns, manager = sub.namespace, twin.planes[MANAGER]
    name = "ddp"
    t0 = time.monotonic()
    apply_ok(manager, [pytorchjob(name, ns, sub.local_queue, RUN_FOR)])

    # The job's three pods Running together on the worker MultiKueue chose.
    # worker -> the most of the job's pods seen there at once (every worker, every poll)
    seen: dict[str, int] = {}
    gates: dict[str, dict[str, int]] = {}

    def running_together() -> str | None:
        twin.check_alive()
        chosen = _dispatched(twin, ns, name)
        for worker in WORKERS:
            wl = _workload(twin.planes[worker], ns, name)
            if wl is not None and worker not in gates:
                got = _provisioned_podsets(twin.planes[worker], ns, wl)
                if sum(got.values()) == sum(REPLICAS.values()):
                    gates[worker] = got
        running: dict[str, int] = {}
        for worker in WORKERS:
            pods = _pods(twin.planes[worker], ns, name)
            if pods:
                seen[worker] = max(seen.get(worker, 0), len(pods))
            running[worker] = sum(p["status"].get("phase") == "Running" for p in pods)
        if chosen is None:
            return None
        return chosen if running[chosen] == sum(REPLICAS.values()) else None

    chosen = until(
        running_together,
        RUN_TIMEOUT,
        "the PyTorchJob's 3 pods Running on its worker",
        seen=lambda: _state(twin, ns),
    )
    running_at = time.monotonic() - t0
    assert chosen in WORKERS
    # The gate on the chosen worker asked for both pod sets at once, with their counts.
    assert gates.get(chosen) == {"master": 1, "worker": 2}, gates
    pods = _pods(twin.planes[chosen], ns, name)
    roles = sorted(p["metadata"]["labels"]["training.kubeflow.org/replica-type"] for p in pods)
    assert roles == ["master", "worker", "worker"], roles
    assert all(p["spec"].get("nodeName") for p in pods), "every pod bound to a (kwok) node"
    # The operator's init container of the Worker pods, from the restricted template.
    inits = [
        c["securityContext"]
        for p in pods
        for c in p["spec"].get("initContainers") or []
        if c["name"] == "init-pytorch"
    ]
    assert len(inits) == REPLICAS["Worker"], inits

    # Succeeded once on the worker, reported on the manager.
    def succeeded() -> bool:
        twin.check_alive()
        return condition(_job(manager, ns, name), "Succeeded") == "True"

    until(
        succeeded, DONE_TIMEOUT, "the manager's PyTorchJob Succeeded", seen=lambda: _state(twin, ns)
    )
    done_at = time.monotonic() - t0
    status = (_job(manager, ns, name) or {})["status"]
    assert status["replicaStatuses"]["Master"].get("succeeded") == 1, status
    wl = _workload(manager, ns, name)
    assert wl is not None
    assert condition(wl, "Finished") == "True", wl
    assert where(wl) == chosen
    # Exactly one worker: the other has no copy and never had a pod of it.
    [other] = [w for w in WORKERS if w != chosen]
    until(
        lambda: _job(twin.planes[other], ns, name) is None,
        CLEANUP_TIMEOUT,
        f"[{other}] no copy of {name}",
        seen=lambda: _state(twin, ns),
    )
    assert not _pods(twin.planes[other], ns, name)
    assert other not in seen, f"pods of {name} seen on {other}: {seen}"
    print(
        f"\npytorchjob: on {chosen}, 3 pods Running {running_at:.1f}s after submission, "
        f"Succeeded on the manager at {done_at:.1f}s; gate {gates[chosen]}"
    )

    # ---- cancelled on the manager: the worker is cleaned up ----
    cancelled = "ddp-cancelled"
    apply_ok(manager, [pytorchjob(cancelled, ns, sub.local_queue, CANCEL_RUN_FOR)])

    def running() -> str | None:
        twin.check_alive()
        chosen = _dispatched(twin, ns, cancelled)
        if chosen is None:
            return None
        pods = _pods(twin.planes[chosen], ns, cancelled)
        up = [p for p in pods if p["status"].get("phase") == "Running"]
        return chosen if len(up) == sum(REPLICAS.values()) else None

    at = until(running, RUN_TIMEOUT, f"{cancelled} Running", seen=lambda: _state(twin, ns))
    manager.kubectl("delete", "pytorchjob", cancelled, f"--namespace={ns}", "--wait=false")
    worker = twin.planes[at]

    def cleaned() -> bool:
        twin.check_alive()
        return (
            _job(worker, ns, cancelled) is None
            and not _pods(worker, ns, cancelled)
            and _workload(worker, ns, cancelled) is None
        )

    until(cleaned, CLEANUP_TIMEOUT, f"[{at}] {cancelled} cleaned up", seen=lambda: _state(twin, ns))
    assert _job(manager, ns, cancelled) is None
