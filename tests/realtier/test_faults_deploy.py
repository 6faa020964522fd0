"""Deploys that go wrong, with the real engine.

An interrupted `pulumi up`: the engine is killed (SIGKILL, the CLI process the Automation API
runs) halfway through a first `up` and halfway through an update; the documented recovery steps
(docs/operations.md), run as written, must converge to the objects an uninterrupted run makes,
with no orphan on any plane and no credential left behind. An object a dead run left on a
cluster (its own field manager, unknown to the state) is adopted by the recovery and changed by
the update like any other.

A Kueue upgrade with work in the queues: the stack deployed with `kueue.version: 0.17.8` (the
managers are `kueue-previous`, v0.17.1: the module proxy serves no later 0.17), Jobs running on
the workers and others queued; the twin stops the old managers, `up` with 0.19.2 applies the new
CRDs and objects (the program's part), the twin starts the 0.19.2 managers (on AKS the Helm
release does that part). Nothing may be recreated; queued work is admitted, running work ends.

As in test_pulumi_engine.py: the real engine (testkit/realtier/engine.py), three fresh planes as
`source: existing` clusters, Kueue `manifests-only` with the real manager beside each plane (the
CRDs applied first: Kueue exits when they are not served). The killed-`up` tests deploy the
committed dev stack's twin (`twin_engine.stack_raw`, the ProvisioningRequest CRD served for its
gates; no nodes: they judge objects, not jobs). The upgrade test keeps the hand-written e2e fleet
(testkit/realtier/e2e.py: no gate, flavors without pools): its workers run Jobs on one kwok node
each under Kueue 0.17.1 then 0.19.2, and a gate would need the cluster autoscaler's answer, which
this tier has not been run against Kueue 0.17.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest
from pulumi import automation as auto

from builders.fleet import kueue_objects
from checks.stack import parse_fleet
from testkit.realtier.crds import install_crds, kueue_crd_paths
from testkit.realtier.e2e import TEAM, e2e_raw
from testkit.realtier.engine import EngineRun, configure, find_engine, settle_inline_runs, workspace
from testkit.realtier.harness import (
    CONTROLLERS,
    PLANES,
    ControlPlane,
    Report,
    Tools,
    _built,
    _terminate,
    build_command,
    cache_paths,
    start_all,
    stop_all,
)
from testkit.realtier.kueue import (
    KueueManager,
    kueue_binary,
    metrics_certs,
    start_kueues,
    stop_kueues,
)
from testkit.realtier.pulumi_cli import (
    OPERATIONS,
    ObjectRef,
    alive,
    children,
    credential_refs,
    diff_lines,
    executable,
    is_plugin,
    kubectl_kinds,
    object_refs,
    op_counts,
    section,
    shell_commands,
)
from testkit.realtier.shared.faults_deploy import faults_job
from testkit.realtier.twin import KWOK_ANNOTATION, load_stack
from testkit.realtier.twin_engine import stack_raw
from testkit.realtier.twin_run import (
    TWIN_CONTROLLERS,
    JobWatch,
    SimulationTools,
    await_nodes_ready,
    find_simulation_tools,
    kwok_argv,
    provisioning_crd,
)

pytestmark = [pytest.mark.real, pytest.mark.slow]

STACK: Final = "dev"  # the killed-`up` tests; the upgrade test runs the e2e fleet
RECOVERY: Final = "### A `pulumi up` killed halfway"
# The dev twin's first `up` creates 94 resources (test_pulumi_engine.py). Killed after 55,
# measured: 14 objects on the planes and 6 operations pending in the state (after 30 it was still
# adopting the Kueue CRDs: nothing new on the planes).
KILL_FIRST_UP_AFTER: Final = 55
# The update changes 3 ClusterQueues and adds 9 resources: killed after the first 2 (measured:
# team-b's namespace creates on two clusters were pending).
KILL_UPDATE_AFTER: Final = 2
NEW_TEAM: Final = "team-b"
KUEUE_API: Final = "/apis/kueue.x-k8s.io/v1beta2"
# What the program makes lives in these API groups (asserted against the state's types); every
# listable resource of them is compared, so an object no state knows is seen too.
# The API groups of what the program makes on the planes (PodDisruptionBudgets: policy).
GROUPS: Final = (
    "kueue.x-k8s.io",
    "rbac.authorization.k8s.io",
    "apiextensions.k8s.io",
    "policy",
)
CORE: Final = ("namespaces", "serviceaccounts", "secrets", "configmaps")
TOKEN_TYPE: Final = "kubernetes.io/service-account-token"
# After a SIGKILL of the CLI, how long its plugins (the provider) get to notice and exit.
PLUGIN_GRACE: Final = 5.0  # a child that dies with its parent is gone in well under 1 s
NAMESPACE_GONE_TIMEOUT: Final = 60.0


@dataclass
class Fleet:
    """Three fresh planes with the Kueue CRDs and a Kueue each."""

    planes: dict[str, ControlPlane]
    tools: Tools
    root: Path
    binary: Path
    provisioning_crd: Path  # the dev stack's gates need it served before Kueue starts
    managers: list[KueueManager] = field(default_factory=list[KueueManager])

    def start_kueue(self) -> None:
        files = [*kueue_crd_paths(load_stack(STACK)), self.provisioning_crd]
        for plane in self.planes.values():
            install_crds(plane, files)
        self.managers = [
            KueueManager(p, self.binary, self.root / f"kueue-{p.name}-{time.monotonic_ns()}")
            for p in self.planes.values()
        ]
        start_kueues(self.managers, self.tools.openssl)

    def stop_kueue(self) -> None:
        managers, self.managers = self.managers, []
        stop_kueues(managers)


@pytest.fixture
def fleet(tools: Tools, tmp_path: Path) -> Iterator[Fleet]:
    binary, crd = kueue_binary(), provisioning_crd()
    if binary is None or crd is None:
        pytest.skip("real tier: kueue not built")
    planes = {name: ControlPlane(name, tmp_path / name, tools) for name in PLANES}
    running = Fleet(planes, tools, tmp_path, binary, crd)
    with metrics_certs(tools.openssl):
        try:
            start_all(planes.values())
            running.start_kueue()
            yield running
        finally:
            try:
                running.stop_kueue()
            finally:
                stop_all(planes.values())


def _deploy(work: Path) -> EngineRun:
    """The dev twin's stack in a state of its own."""
    engine, why = find_engine()
    if engine is None:
        pytest.skip(f"real tier: {why}")
    return workspace(STACK, work, engine)


def _configure(deploy: EngineRun, planes: Mapping[str, ControlPlane], raw: dict[str, Any]) -> None:
    configure(deploy, {name: plane.kubeconfig for name, plane in planes.items()}, raw)


def _updated_raw() -> dict[str, Any]:
    """The update: team-a's quotas cut (3 ClusterQueues updated) and a second team (its
    namespace, ClusterQueues and LocalQueue created)."""
    raw = stack_raw(STACK)
    for cluster in raw["clusters"]:
        queues = cluster["queues"]
        (team_a,) = queues["clusterQueues"]
        quota = team_a["resourceGroups"][0]["flavors"][0]["resources"][0]
        quota["nominalQuota"] = str(int(quota["nominalQuota"]) // 2)
        team_b = copy.deepcopy(team_a)
        team_b["name"] = NEW_TEAM
        team_b["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": NEW_TEAM}}
        queues["clusterQueues"].append(team_b)
        if cluster["role"] == "manager":
            queues["namespaces"].append({"name": NEW_TEAM})
            queues["localQueues"].append(
                {"name": NEW_TEAM, "namespace": NEW_TEAM, "clusterQueue": NEW_TEAM}
            )
    return raw


# ---- killing the engine ------------------------------------------------------------------------


@dataclass
class Kill:
    """SIGKILL the CLI once `after` resources are created or updated (engine events)."""

    cli: Path
    after: int
    done: int = 0
    killed_at: float | None = None
    plugins: list[int] = field(default_factory=list[int])
    error: BaseException | None = None

    def on_event(self, event: auto.EngineEvent) -> None:
        outputs = event.res_outputs_event
        if outputs is None or self.killed_at is not None:
            return
        op = str(getattr(outputs.metadata.op, "value", outputs.metadata.op))
        if op not in {"create", "update", "replace", "create-replacement"}:
            return
        self.done += 1
        if self.done < self.after:
            return
        engines = [p for p in children(os.getpid()) if executable(p) == self.cli]
        if len(engines) != 1:
            self.error = AssertionError(f"expected one {self.cli} child, found {engines}")
            return
        (engine,) = engines
        self.plugins = children(engine)
        os.kill(engine, signal.SIGKILL)
        self.killed_at = time.monotonic()


def _killed_up(deploy: EngineRun, kill: Kill, provider: Path) -> tuple[float, int]:
    """Run `up`, killed by `kill`; returns its seconds and how many plugins outlived the CLI.

    The provider processes the dead CLI started outlive it: Pulumi's plugins check the engine's
    health every 5 minutes (pkg/resource/provider/main.go, rpcutil.Healthcheck) and only then
    exit. The test waits PLUGIN_GRACE, requires every survivor to be a provider plugin (the
    kubernetes provider, or the Python dynamic provider host of the RetireGuard), then kills them
    (this test started them, through the CLI).
    """
    outcome: dict[str, BaseException] = {}

    def up() -> None:
        try:
            # Checkpoints for this `up` only: the state it leaves when killed is what the
            # recovery reads (testkit/realtier/engine.py).
            with deploy.checkpoints():
                deploy.stack.up(on_output=deploy.add, on_event=kill.on_event, color="never")
        except BaseException as exc:  # judged in the test's thread
            outcome["error"] = exc

    t0 = time.monotonic()
    thread = threading.Thread(target=up, name="pulumi-up-killed", daemon=True)
    thread.start()
    thread.join(600)
    assert not thread.is_alive(), "up did not end"
    assert kill.error is None, kill.error
    assert kill.killed_at is not None, f"up ended before {kill.after} changes\n{deploy.tail()}"
    assert isinstance(outcome.get("error"), auto.CommandError), outcome
    deadline = time.monotonic() + PLUGIN_GRACE
    while any(alive(p) for p in kill.plugins) and time.monotonic() < deadline:
        time.sleep(0.25)
    lingering = [p for p in kill.plugins if alive(p)]
    settle_inline_runs()  # the killed run's program, before anything runs another
    strangers = [(p, executable(p)) for p in lingering if not is_plugin(p, provider)]
    for pid in lingering:
        os.kill(pid, signal.SIGKILL)
    assert not strangers, f"processes of the killed CLI other than the provider: {strangers}"
    return kill.killed_at - t0, len(lingering)


def _recover(deploy: EngineRun, export: Path) -> tuple[float, list[str]]:
    """The documented recovery, as written; returns its seconds and one line per step."""
    commands = shell_commands(section(OPERATIONS.read_text(), RECOVERY))
    steps: list[str] = []
    t0 = time.monotonic()
    for argv in commands:
        t1 = time.monotonic()
        if argv[:2] == ["pulumi", "up"]:
            # The CLI cannot run the Python program here (no language host); the Automation
            # API's up is `pulumi up --yes` with the runtime served by this process.
            up = deploy.up()
            assert up.summary.result == "succeeded", deploy.tail()
            detail = str(op_counts(up.summary.resource_changes))
        else:
            done = deploy.cli.run(argv)
            assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stderr}\n{done.stdout}"
            detail = f"exit {done.returncode}"
        steps.append(f"{' '.join(argv)}: {time.monotonic() - t1:.1f}s, {detail}")
    saved = deploy.cli.work_dir / "state-before-recovery.json"
    assert saved.is_file(), "the recovery's first step keeps the killed run's state"
    export.write_bytes(saved.read_bytes())
    return time.monotonic() - t0, steps


# ---- what is on the planes ---------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    objects: dict[str, frozenset[ObjectRef]]  # plane -> its objects
    tokens: dict[str, frozenset[str]]  # plane -> "<ns>/<name>" of its token Secrets

    def credentials(self) -> dict[str, list[ObjectRef]]:
        return {p: credential_refs(refs, self.tokens[p]) for p, refs in self.objects.items()}


def _resources(plane: ControlPlane) -> list[str]:
    names = plane.kubectl("api-resources", "--verbs=list", "-o", "name").stdout.split()
    return sorted(
        n for n in names if n in CORE or any(n.endswith(f".{g}") or n == g for g in GROUPS)
    )


def _snapshot(planes: Mapping[str, ControlPlane]) -> Snapshot:
    objects: dict[str, frozenset[ObjectRef]] = {}
    tokens: dict[str, frozenset[str]] = {}
    for name, plane in planes.items():
        out = plane.kubectl("get", ",".join(_resources(plane)), "-A", "-o", "json").stdout
        items = json.loads(out)["items"]
        objects[name] = object_refs(items)
        tokens[name] = frozenset(
            f"{i['metadata'].get('namespace', '')}/{i['metadata']['name']}"
            for i in items
            if i.get("kind") == "Secret" and i.get("type") == TOKEN_TYPE
        )
    return Snapshot(objects, tokens)


def _plane_diff(expected: Snapshot, got: Snapshot) -> dict[str, list[str]]:
    diff = {p: diff_lines(expected.objects[p], got.objects[p]) for p in expected.objects}
    return {p: lines for p, lines in diff.items() if lines}


def _program_groups(types: set[str]) -> set[str]:
    """The API groups of the state's Kubernetes types (`core` for the core group)."""
    return {
        k.split(".", 2)[2] if k.count(".") >= 2 else "core"
        for k in kubectl_kinds(t for t in types if ":" in t)
    }


# ---- an object a dead run made -------------------------------------------------------------

DEAD_RUN_MANAGER: Final = "pulumi-kubernetes-deadrun0"
DEAD_RUN_CLUSTER: Final = "worker-1"


def _team_queue(raw: dict[str, Any], cluster: str) -> dict[str, Any]:
    """The team's ClusterQueue on `cluster`, as the program renders it from `raw`."""
    [queue] = [
        m.obj
        for m in kueue_objects(parse_fleet(raw, source="test")[0])[cluster]
        if m.kind == "ClusterQueue" and m.name == TEAM
    ]
    return queue


def _leave_dead_runs_object(plane: ControlPlane) -> None:
    """What a killed `up` leaves: an object the program makes, on the cluster under the dead
    run's own field manager (pulumi-kubernetes draws one per resource), unknown to the state."""
    left = plane.kubectl(
        "apply",
        "--server-side",
        f"--field-manager={DEAD_RUN_MANAGER}",
        "-f",
        "-",
        stdin=json.dumps(_team_queue(stack_raw(STACK), plane.name)),
        check=False,
    )
    assert left.returncode == 0, left.stderr


def _quota(queue: Mapping[str, Any]) -> str:
    return str(queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"])


# ---- the test ---------------------------------------------------------------------------------


def test_a_killed_up_recovers_by_the_readme_to_an_uninterrupted_runs_objects(
    fleet: Fleet, tmp_path: Path, report: Report
) -> None:
    """Also: an object a dead run made (its own field manager, unknown to the state) is adopted
    by the recovery and can still be changed by the next `up`: the program applies with force,
    so the change meets no server-side apply conflict against the dead run's manager (it did,
    when the program applied without force)."""
    planes = fleet.planes
    before = _snapshot(planes)
    # A run that died before this test's own: worker-1's team ClusterQueue is on the cluster
    # under that run's field manager (whether or not the killed `up` below reaches it).
    _leave_dead_runs_object(planes[DEAD_RUN_CLUSTER])
    cut = _deploy(tmp_path / "cut")
    _configure(cut, planes, stack_raw(STACK))
    cli, provider = cut.engine.cli, cut.engine.provider

    # 1. A first `up` killed halfway, then the documented recovery.
    kill = Kill(cli, KILL_FIRST_UP_AFTER)
    first_killed, first_lingering = _killed_up(cut, kill, provider)
    partial = _snapshot(planes)
    made = sum(len(partial.objects[p] - before.objects[p]) for p in planes)
    first_recovery, first_steps = _recover(cut, tmp_path / "first-killed.json")
    killed_state = json.loads((tmp_path / "first-killed.json").read_text())
    pending = (killed_state.get("deployment") or {}).get("pending_operations") or []
    first = _snapshot(planes)
    first_urns = cut.urns()
    again = op_counts(cut.up().summary.resource_changes)
    # The credential proofs (reads of each worker's ServiceAccount) run again on every `up`.
    assert set(again) <= {"same", "read"}, f"up after the recovery is not a no-op: {again}"

    # 2. An update killed halfway, then the same recovery.
    _configure(cut, planes, _updated_raw())
    update_kill = Kill(cli, KILL_UPDATE_AFTER)
    update_killed, update_lingering = _killed_up(cut, update_kill, provider)
    update_recovery, update_steps = _recover(cut, tmp_path / "update-killed.json")
    # The dead run's object, adopted, now carries the update's quota (halved).
    status, body = planes[DEAD_RUN_CLUSTER].get(f"{KUEUE_API}/clusterqueues/{TEAM}")
    assert status == 200, body
    live = json.loads(body)
    wanted = _quota(_team_queue(_updated_raw(), DEAD_RUN_CLUSTER))
    assert _quota(live) == wanted, (_quota(live), wanted)
    field_managers = [f["manager"] for f in live["metadata"].get("managedFields") or []]
    updated = _snapshot(planes)
    updated_urns = cut.urns()
    assert _program_groups(cut.types()) <= {"core", *GROUPS}, cut.types()

    # 3. No orphan: destroy removes everything the recovered state knows, and then the planes
    # hold what they held before (the Kueue CRDs aside: the program adopted and deleted them).
    destroyed = cut.stack.destroy(on_output=cut.add, color="never")
    assert destroyed.summary.result == "succeeded", cut.tail()
    fleet.stop_kueue()
    deadline = time.monotonic() + NAMESPACE_GONE_TIMEOUT
    while True:  # deleted namespaces take a moment to finish terminating
        gone = _snapshot(planes)
        left = {p: sorted(map(str, gone.objects[p] - before.objects[p])) for p in planes}
        if not any(left.values()) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert not any(left.values()), f"orphans after recovery + destroy: {left}"
    fleet.start_kueue()
    assert not _plane_diff(before, _snapshot(planes)), "the planes are not back to fresh"

    # 4. The same two steps uninterrupted, on the same planes, in a state of their own.
    ref = _deploy(tmp_path / "ref")
    _configure(ref, planes, stack_raw(STACK))
    assert ref.up().summary.result == "succeeded", ref.tail()
    ref_first = _snapshot(planes)
    ref_first_urns = ref.urns()
    _configure(ref, planes, _updated_raw())
    assert ref.up().summary.result == "succeeded", ref.tail()
    ref_updated = _snapshot(planes)

    assert first_urns == ref_first_urns, sorted(first_urns ^ ref_first_urns)
    assert not _plane_diff(ref_first, first), _plane_diff(ref_first, first)
    assert updated_urns == ref.urns(), sorted(updated_urns ^ ref.urns())
    assert not _plane_diff(ref_updated, updated), _plane_diff(ref_updated, updated)
    # No credential left behind: the token and kubeconfig Secrets are exactly the uninterrupted
    # run's (a diff of the whole planes above already covers it; listed here for the report).
    creds = updated.credentials()
    assert creds == ref_updated.credentials(), (creds, ref_updated.credentials())
    assert any(creds.values()), "no credential found: the listing is broken"
    credential_list = "; ".join(
        f"{p}: {', '.join(f'{r.namespace}/{r.name}' for r in refs) or '-'}"
        for p, refs in creds.items()
    )
    report(
        f"pulumi up killed (SIGKILL) after {kill.done} of the first up's creates "
        f"({first_killed:.1f}s in; {made} objects on the planes, {len(pending)} pending "
        f"operations in the state; {first_lingering} provider processes still running "
        f"{PLUGIN_GRACE:.0f}s after, killed); documented recovery {first_recovery:.1f}s: "
        + "; ".join(first_steps)
    )
    report(
        f"update killed after {update_kill.done} changes ({update_killed:.1f}s in; "
        f"{update_lingering} provider processes outlived it); documented "
        f"recovery {update_recovery:.1f}s: " + "; ".join(update_steps)
    )
    report(
        f"after both recoveries: {len(updated_urns)} resources, every plane equal to an "
        f"uninterrupted run's ({sum(len(v) for v in updated.objects.values())} objects compared "
        f"by kind/namespace/name/owners); destroy then left no orphan; credentials: "
        f"{credential_list}"
    )
    report(
        f"ClusterQueue {DEAD_RUN_CLUSTER}/{TEAM} left by a dead run's field manager "
        f"({DEAD_RUN_MANAGER}), adopted by the recovery, then changed (nominalQuota "
        f"{_quota(live)}); field managers after: {field_managers}"
    )


# ---- a Kueue upgrade with work in the queues ----------------------------------------------------

PREVIOUS_SUPPORTED: Final = "0.17.8"  # the project's older supported Kueue (upstream/kueue.py)
JOBS: Final = 6
RUNNING: Final = 4
CRD_TYPE: Final = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
WAIT: Final = 120.0
WORKERS: Final = ("worker-1", "worker-2")


@dataclass
class UpgradeFleet:
    planes: dict[str, ControlPlane]
    tools: Tools
    root: Path
    sim: SimulationTools
    managers: list[KueueManager] = field(default_factory=list[KueueManager])
    kwoks: dict[str, Any] = field(default_factory=dict[str, Any])

    def start_kueue(self, binary: Path, tag: str) -> None:
        self.managers = [
            KueueManager(p, binary, self.root / f"kueue-{tag}-{p.name}")
            for p in self.planes.values()
        ]
        start_kueues(self.managers, self.tools.openssl)

    def stop_kueue(self) -> None:
        managers, self.managers = self.managers, []
        stop_kueues(managers)

    def start_kwok(self, plane: ControlPlane, complete: bool) -> None:
        """kwok on a worker: its node Ready, pods bound to it Running and, with `complete`, the
        pods of Jobs Succeeded (kwok's pod-complete Stage). Without it, Jobs run until told."""
        stages = [s for s in self.sim.kwok_stages if complete or s.name != "pod-complete.yaml"]
        self.kwoks[plane.name] = plane._spawn(
            "kwok" if complete else "kwok-no-complete",
            kwok_argv(plane, self.sim.kwok, stages),
        )


def _node(name: str) -> dict[str, Any]:
    capacity = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name},
            "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]},
        },
        "status": {"capacity": capacity, "allocatable": capacity},
    }


@pytest.fixture
def upgrade_fleet(tools: Tools, tmp_path: Path) -> Iterator[UpgradeFleet]:
    """Manager + two workers; the workers run Jobs (Job controller, scheduler, a kwok node)."""
    paths = cache_paths()
    previous = paths.get("kueue-previous")
    if previous is None or not _built("kueue-previous", previous):
        pytest.skip(f"real tier: kueue-previous not built ({build_command(['kueue-previous'])})")
    if kueue_binary() is None:
        pytest.skip("real tier: kueue not built")
    sim, missing = find_simulation_tools()
    if sim is None:
        pytest.skip("real tier: " + "; ".join(missing))
    planes = {
        name: ControlPlane(
            name,
            tmp_path / name,
            tools,
            controllers=TWIN_CONTROLLERS if name in WORKERS else CONTROLLERS,
        )
        for name in PLANES
    }
    running = UpgradeFleet(planes, tools, tmp_path, sim)
    with metrics_certs(tools.openssl):
        try:
            start_all(planes.values())
            files = kueue_crd_paths(parse_fleet(_previous_raw(), source="test")[0])
            for name, plane in planes.items():
                install_crds(plane, files)
                if name in WORKERS:
                    plane._spawn(
                        "kube-scheduler",
                        [
                            str(sim.kube_scheduler),
                            f"--kubeconfig={plane.kubeconfig}",
                            "--leader-elect=false",
                            "--secure-port=0",
                        ],
                    )
                    running.start_kwok(plane, complete=False)
                    plane.kubectl("create", "-f", "-", stdin=json.dumps(_node(f"{name}-node")))
            await_nodes_ready([planes[w] for w in WORKERS], {w: {f"{w}-node"} for w in WORKERS})
            running.start_kueue(previous, "previous")
            yield running
        finally:
            try:
                running.stop_kueue()
            finally:
                stop_all(planes.values())


def _previous_raw() -> dict[str, Any]:
    raw = e2e_raw()
    raw["kueue"]["version"] = PREVIOUS_SUPPORTED
    return raw


def _items(plane: ControlPlane, path: str) -> list[dict[str, Any]]:
    status, body = plane.get(path)
    assert status == 200, (plane.name, path, status, body[:300])
    return json.loads(body).get("items") or []


def _condition(obj: Mapping[str, Any], kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _workloads(manager: ControlPlane) -> dict[str, dict[str, Any]]:
    """The manager's team-a Workloads by their Job's name."""
    found: dict[str, dict[str, Any]] = {}
    for w in _items(manager, f"{KUEUE_API}/namespaces/{TEAM}/workloads"):
        owners = [o["name"] for o in w["metadata"].get("ownerReferences") or []]
        if owners:
            found[owners[0]] = w
    return found


def _running_pods(planes: Mapping[str, ControlPlane]) -> dict[str, str]:
    """Job name -> the worker where its pod is Running."""
    running: dict[str, str] = {}
    for worker in WORKERS:
        for pod in _items(planes[worker], f"/api/v1/namespaces/{TEAM}/pods"):
            if (pod.get("status") or {}).get("phase") == "Running":
                running[pod["metadata"]["labels"]["batch.kubernetes.io/job-name"]] = worker
    return running


def _until(what: str, check: Any, timeout: float = WAIT) -> float:
    t0 = time.monotonic()
    while not check():
        assert time.monotonic() - t0 < timeout, f"not within {timeout:.0f}s: {what}"
        time.sleep(0.5)
    return time.monotonic() - t0


def test_a_kueue_upgrade_with_work_in_the_queues_keeps_and_finishes_it(
    upgrade_fleet: UpgradeFleet, tmp_path: Path, report: Report
) -> None:
    planes, manager = upgrade_fleet.planes, upgrade_fleet.planes["manager"]
    previous_binary = upgrade_fleet.managers[0].binary
    deploy = _deploy(tmp_path / "stack")
    _configure(deploy, planes, _previous_raw())
    t0 = time.monotonic()
    first = deploy.up()
    assert first.summary.result == "succeeded", deploy.tail()
    first_seconds = time.monotonic() - t0

    names = [f"job-{i}" for i in range(JOBS)]
    # One v1 List: kubectl reads a stream that starts with "{" as JSON, where "---" is an error.
    jobs = {"apiVersion": "v1", "kind": "List", "items": [faults_job(n) for n in names]}
    manager.kubectl("create", "-f", "-", stdin=json.dumps(jobs))
    _until(f"{RUNNING} Jobs Running on the workers", lambda: len(_running_pods(planes)) == RUNNING)
    time.sleep(3)  # the queue settles: nothing more is admitted beyond the quota
    running = _running_pods(planes)
    before = _workloads(manager)
    assert len(running) == RUNNING, running
    queued = sorted(n for n in names if n not in running)
    assert all(not _condition(before[n], "QuotaReserved") for n in queued), queued
    uids = {n: w["metadata"]["uid"] for n, w in before.items()}
    program_uids = _program_uids(planes)

    # The upgrade. The twin stops the old manager (on AKS the Helm upgrade rolls the Deployment);
    # the program (`up` with kueue.version changed) applies the new CRDs and objects; the twin then
    # starts the new manager (on AKS: the same Helm release upgrade).
    watches = {w: JobWatch(planes[w]) for w in WORKERS}
    try:
        upgrade_fleet.stop_kueue()
        _configure(deploy, planes, e2e_raw())
        crds = sum(1 for t in _state_types(deploy) if t == CRD_TYPE)
        changes: list[tuple[str, str]] = []
        crds_done = threading.Event()

        def on_event(event: auto.EngineEvent) -> None:
            out = event.res_outputs_event
            if out is None:
                return
            op = str(getattr(out.metadata.op, "value", out.metadata.op))
            changes.append((op, out.metadata.urn))
            if sum(1 for _, urn in changes if f"::{CRD_TYPE}::" in urn.replace("$", "::")) >= crds:
                crds_done.set()

        outcome: dict[str, Any] = {}

        def up() -> None:
            try:
                outcome["result"] = deploy.stack.up(
                    on_output=deploy.add, on_event=on_event, color="never"
                )
            except Exception as exc:  # judged in the test's thread
                outcome["error"] = exc

        t1 = time.monotonic()
        thread = threading.Thread(target=up, name="pulumi-up-upgrade", daemon=True)
        thread.start()
        while thread.is_alive() and not crds_done.is_set():
            thread.join(0.25)
        crd_seconds = time.monotonic() - t1
        # From the main thread (Kueue's processes die with pytest's).
        upgrade_fleet.start_kueue(kueue_binary() or previous_binary, "current")
        thread.join(600)
        assert "error" not in outcome, f"{outcome.get('error')}\n{deploy.tail()}"
        upgrade_seconds = time.monotonic() - t1
        counts = op_counts(outcome["result"].summary.resource_changes)
        changed = sorted(f"{op} {urn.rsplit('::', 1)[-1]}" for op, urn in changes if op != "same")
        print("\n".join(["upgrade diff:", *changed]))
        assert not {"replace", "delete", "create-replacement"} & set(counts), (counts, changed)
        assert all(
            f"::{CRD_TYPE}::" in urn.replace("$", "::") for op, urn in changes if op == "create"
        ), changed

        for worker in WORKERS:  # the running Jobs now finish
            _terminate(upgrade_fleet.kwoks[worker])
            upgrade_fleet.start_kwok(planes[worker], complete=True)
        finish = _until(
            f"all {JOBS} Jobs complete on the manager",
            lambda: all(
                _condition(j, "Complete")
                for j in _items(manager, f"/apis/batch/v1/namespaces/{TEAM}/jobs")
            ),
            timeout=WAIT,
        )
    finally:
        for watch in watches.values():
            watch.stop()

    after = _workloads(manager)
    assert {n: w["metadata"]["uid"] for n, w in after.items()} == uids, "a Workload was recreated"
    assert all(_condition(after[n], "Finished") for n in names), after
    ran_on = {n: [w for w in WORKERS if watches[w].completed(TEAM, n)] for n in names}
    assert all(len(v) == 1 for v in ran_on.values()), f"not exactly once: {ran_on}"
    assert all(ran_on[n] == [running[n]] for n in running), (ran_on, running)
    kept = _program_uids(planes)
    recreated = sorted(k for k in program_uids if k in kept and kept[k] != program_uids[k])
    assert not recreated, f"recreated by the upgrade: {recreated}"
    report(
        f"Kueue upgrade {PREVIOUS_SUPPORTED} (binary {previous_binary.parent.parent.name}) -> "
        f"{e2e_raw()['kueue']['version']} with {RUNNING} Jobs running and {len(queued)} queued: "
        f"first up {first_seconds:.1f}s; upgrade up {upgrade_seconds:.1f}s ({counts}; CRDs "
        f"applied {crd_seconds:.1f}s in, then the new Kueue started); every Workload kept (same "
        f"uid), the {len(queued)} queued admitted and all {JOBS} Jobs complete {finish:.1f}s "
        f"after the upgrade, each on one worker; no program object recreated "
        f"({len(program_uids)} uids compared); diff: {', '.join(changed)}"
    )


def _state_types(deploy: EngineRun) -> list[str]:
    resources = (deploy.stack.export_stack().deployment or {}).get("resources") or []
    return [str(r["type"]) for r in resources]


def _program_uids(planes: Mapping[str, ControlPlane]) -> dict[str, str]:
    """plane/kind/namespace/name -> uid of every object of the program's API groups."""
    uids: dict[str, str] = {}
    for name, plane in planes.items():
        out = plane.kubectl("get", ",".join(_resources(plane)), "-A", "-o", "json").stdout
        for item in json.loads(out)["items"]:
            meta = item["metadata"]
            if item.get("kind") == "Workload":
                continue  # judged above
            key = f"{name}/{item.get('kind')}/{meta.get('namespace', '')}/{meta['name']}"
            uids[key] = meta["uid"]
    return uids
