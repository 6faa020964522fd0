"""The dev stack's Azure half through the real engine: `pulumi up` against the Azure twin.

The committed `Pulumi.dev.yaml` runs with its clusters as written
(`source: aks`): the real engine loads the stand-in azure-native plugin
(testkit/realtier/azure_provider.py) under the pinned name, which forwards to the Azure twin in
this process (testkit/realtier/azure_twin.py). Every ManagedCluster the engine creates becomes a
plane with Kueue beside it, and the program's own wiring (cluster outputs ->
listManagedClusterUserCredentials -> kubelogin exec kubeconfig -> authorization wait ->
Kubernetes provider) deploys the Kubernetes half onto it. The Kubernetes half is mapped as every
twin maps it (testkit/realtier/azure_twin_run.py: Kueue `manifests-only`, no Karmada). Nothing else
of the stack changes, and no `existing` cluster is involved. test_azure_twin_prod.py runs prod.

The planes authorize the deploying user as AKS with Azure RBAC does: from the role assignments
the engine created, each only once it has propagated (testkit/realtier/azure_rbac.py).

- One `up` creates the whole fleet, Azure and Kubernetes halves, with grants that reach the API
  servers only 60 s after their creation: it says it waits, waits, and applies nothing before.
  The `kubeconfigs` output is a secret in the state and, shown with `--show-secrets`, reaches
  each cluster's plane through kubelogin; the next `up` changes nothing.
- README's quickstart ("Take the kubeconfigs", "Submit a job to the manager") runs as written:
  the job completes, its pods ran on the chosen worker's `batch` nodes, which that worker's
  cluster-autoscaler made from the program's AgentPool request; no pod ran on the manager.
- An AgentPool update reshapes its nodes and restarts the autoscaler with the new node group; a
  delete removes its nodes (the twin's own behaviour, through the calls the plugin makes).
- A worker's minor bump while a job runs there: `up` with it alone is refused by the program
  (the pinned Kueue is tested up to 1.36, the real tier's next minor is 1.37); with
  `kueue.untestedKubernetesMinor` accepting 1.37, `up` upgrades it: the control plane moves
  first, then every pool, System pool included, surge then drain; the job completes once.
- A pool's vmSize change previews as a replace of that AgentPool and nothing else.
- `destroy` removes everything, Azure resources and planes.
- A grant that never propagates stops a new `up` within `access.authorizationTimeoutSeconds`
  with the message docs/upgrades.md shows, and nothing is applied to that cluster.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from pulumi import automation as auto

from constants import CONFIG_KEY, PROJECT
from testkit.realtier.autoscaler import (
    GROUP_ANNOTATION,
    MAX_ANNOTATION,
    TEMPLATES_MAP,
    provider_id,
)
from testkit.realtier.autoscaler import NAMESPACE as AUTOSCALER_NAMESPACE
from testkit.realtier.autoscaler import TOOL as AUTOSCALER
from testkit.realtier.azure_twin import (
    AGENT_POOL,
    AKS_SERVER_ID,
    DEPLOYER_OBJECT_ID,
    ENTRA_USER,
    ArmError,
    AzureTwin,
)
from testkit.realtier.azure_twin_run import (
    TwinRun,
    destroy_all,
    failing_up,
    set_fleet,
    twin_session,
    up_twice,
)
from testkit.realtier.faults import KUEUE_API, condition, get_json, items
from testkit.realtier.harness import ROOT, ControlPlane, Report, Tools
from testkit.realtier.jobs import suspended_job, workload_of_job
from testkit.realtier.pulumi_cli import op_counts
from testkit.realtier.reimage import is_surge, kubelet_of
from testkit.realtier.shared.faults_runtime import where
from testkit.realtier.shared.worker_upgrade import version_of
from testkit.realtier.twin import VIRTUAL_NODE_NAME
from testkit.realtier.twin_run import PodWatch
from testkit.realtier.wait import until
from upstream.aks import AGENTPOOL_LABEL

pytestmark = [pytest.mark.real, pytest.mark.slow]

STACK: Final = "dev"
RESIZED: Final = ("worker-1", "batch", "Standard_D8s_v5")
# Azure: "up to five minutes" (upstream/aks.py); 60 s keeps the wait real and the test short.
PROPAGATION_SECONDS: Final = 60.0
NEVER: Final = "worker-1"  # the cluster whose grant never propagates
NEVER_SECONDS: Final = 15  # its access.authorizationTimeoutSeconds
# What that `up` may take beyond its bound: the Azure half and three planes first (~30 s alone).
ENGINE_SLACK: Final = 150.0
UPGRADES: Final = Path(__file__).resolve().parents[2] / "docs" / "upgrades.md"
README: Final = ROOT / "README.md"
README_MARK: Final = "<!-- azure twin: tests/realtier/test_azure_twin.py"
NAMESPACE: Final = "team-a"  # examples/sleep-job.yaml's
# Bounds of this test (the job is dispatched in ~10 s and completes ~1 s later, 2 shared cores):
# the wait line itself allows 15 minutes, which is AKS's time; the twin's job is stuck long before.
WHERE_TIMEOUT: Final = 120.0
WAIT_TIMEOUT: Final = 300.0
# The minor bump's job: its pods run this long (kwok), past the control plane's and the System
# pool's upgrade, so that the batch pool's drain finds them running.
BUMP_JOB: Final = "bump-run"
BUMP_PODS: Final = 2
BUMP_RUN_FOR: Final = "60s"
MANAGED_CLUSTER: Final = "azure-native:containerservice:ManagedCluster"
UPDATE: Final = {"preview": False, "create": False}  # the plugin's Update
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"


@pytest.fixture(scope="module")
def twin_run(tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinRun]:
    with twin_session(STACK, tools, tmp_path_factory.mktemp("azure-twin")) as session:
        yield session


def _grant_times(twin: AzureTwin) -> dict[str, float]:
    """When each cluster's deployer grant (its cluster-scope role assignment for the deploying
    user) was created, by cluster name."""
    clusters = {
        r.id: r.inputs["resourceName"] for r in twin.of_type("containerservice:ManagedCluster")
    }
    return {
        clusters[r.inputs["scope"]]: r.created
        for r in twin.of_type("authorization:RoleAssignment")
        if r.inputs["principalId"] == DEPLOYER_OBJECT_ID and r.inputs["scope"] in clusters
    }


def test_up_waits_for_grants_to_propagate_and_creates_both_halves(
    twin_run: TwinRun, report: Report
) -> None:
    twin, run, _ = twin_run
    twin.propagation_seconds = PROPAGATION_SECONDS
    try:
        up_twice(STACK, twin_run, report)
    finally:
        twin.propagation_seconds = 0.0
    granted = _grant_times(twin)
    assert sorted(granted) == sorted(twin.clusters), granted
    output = "\n".join(run.log)
    for cluster, created in granted.items():
        effective = created + PROPAGATION_SECONDS
        mine = [
            r for r in twin.reviews if r.cluster == cluster and r.request.uid == DEPLOYER_OBJECT_ID
        ]
        # `up` asked while the grant existed but had not propagated, was refused, and asked
        # again until it was allowed: nothing it wrote was refused (the up passed).
        refused = [r for r in mine if not r.allowed]
        assert refused, f"{cluster}: up never asked before its grant propagated"
        assert all(r.at < effective for r in refused), f"{cluster}: refused after propagation"
        assert any(r.allowed for r in mine), f"{cluster}: nothing allowed"
        server = f"https://{twin.clusters[cluster].relay.address}:443"
        said = (
            f"cluster '{cluster}': waiting up to 600s (access.authorizationTimeoutSeconds) for the "
            f"API server {server} to authorize '{ENTRA_USER}'"
        )
        assert said in output, f"{said!r} not in the engine's output:\n{run.tail()}"
    report(
        f"first up through Azure RBAC grants that propagate {PROPAGATION_SECONDS:.0f}s after "
        "their creation: it waited and then created everything"
    )


def readme_blocks() -> list[list[str]]:
    """The lines of README's blocks marked for this test, in order (comments and blanks out)."""
    text = README.read_text()
    blocks = re.findall(rf"^{re.escape(README_MARK)}[^\n]*\n```bash\n(.*?)^```", text, re.M | re.S)
    return [
        [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
        for block in blocks
    ]


def test_readme_quickstart_runs_as_written_against_the_azure_twin(
    twin_run: TwinRun, report: Report
) -> None:
    """README's "Take the kubeconfigs" and "Submit a job to the manager" blocks, every line as
    written, in a shell in the engine's project directory (the clone's root: the stack selected,
    `examples/` beside it) with the engine's `pulumi` and the stand-in `kubelogin` on PATH. The
    job completes on the manager; its pods ran on the worker MultiKueue chose, on `batch` nodes
    its cluster-autoscaler made for it from the program's AgentPool; no pod ran elsewhere."""
    twin, run, raw = twin_run
    if run.created is None:
        pytest.skip("the first up did not pass")
    blocks = readme_blocks()
    assert len(blocks) == 2, f"README blocks marked {README_MARK!r}: {blocks}"
    take, submit = blocks
    workers = [c["name"] for c in raw["clusters"] if c["role"] == "worker"]
    (manager,) = [c["name"] for c in raw["clusters"] if c["role"] == "manager"]
    project = run.work / "project"
    if not (project / "examples").exists():
        (project / "examples").symlink_to(ROOT / "examples")
    home = run.work / "reader-home"
    home.mkdir(exist_ok=True)
    env = {
        **{k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
        **run.env,
        "HOME": str(home),
        "PATH": os.pathsep.join([str(run.engine.cli.parent), run.env["PATH"]]),
    }

    def sh(line: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        # pipefail: a `pulumi ... | jq` line fails when pulumi does (jq alone would pass).
        return subprocess.run(
            ["bash", "-o", "pipefail", "-c", line],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def ran(line: str, timeout: float = 120.0) -> str:
        done = sh(line, timeout)
        assert done.returncode == 0, f"{line}\nexited {done.returncode}: {done.stderr}"
        return done.stdout

    t0 = time.monotonic()
    for line in take:
        ran(line)
    # kubelogin converted each kubeconfig to the Azure CLI's sign-in, as the real one does.
    for name in [manager, *workers]:
        doc = yaml.safe_load((project / f"{name}.kubeconfig").read_text())
        args = doc["users"][0]["user"]["exec"]["args"]
        assert args == ["get-token", "--login", "azurecli", "--server-id", AKS_SERVER_ID], args

    planes = {name: twin.clusters[name].plane for name in [manager, *workers]}
    before = {name: set(_node_names(plane)) for name, plane in planes.items()}
    watches = {name: PodWatch(plane, NAMESPACE) for name, plane in planes.items()}
    apply_line, where_line, *rest, wait_line = submit
    try:
        ran(apply_line)
        # Empty (or no Workload yet) until a worker admits the job: the same line again.
        deadline = time.monotonic() + WHERE_TIMEOUT
        chosen = ""
        while chosen not in workers:
            assert time.monotonic() < deadline, (
                f"no worker after {WHERE_TIMEOUT:.0f}s: {where_line}\n{_state(planes)}"
            )
            done = sh(where_line)
            chosen = done.stdout.strip() if done.returncode == 0 else ""
            if chosen not in workers:
                time.sleep(1)
        dispatched = time.monotonic() - t0
        copies = [ran(line) for line in rest]  # as written: worker-1's
        if chosen != "worker-1":  # "on that worker (worker-1 here)": the chosen one's kubeconfig
            copies += [ran(line.replace("worker-1.", f"{chosen}.")) for line in rest]
        try:
            ran(wait_line, timeout=WAIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"not complete in {WAIT_TIMEOUT:.0f}s: {wait_line}\n{_state(planes)}")
        completed = time.monotonic() - t0
    finally:
        for watch in watches.values():
            watch.stop()

    job = yaml.safe_load((ROOT / "examples" / "sleep-job.yaml").read_text())
    ran_on = watches[chosen].bound()
    assert len(ran_on) >= job["spec"]["completions"], watches[chosen].seen
    for other in [manager, *[w for w in workers if w != chosen]]:
        assert not watches[other].bound(), (other, watches[other].seen)
    assert not watches[manager].seen, f"a pod on the manager: {watches[manager].seen}"
    # The pods' nodes: the chosen worker's `batch` pool, none of them there before the job
    # (minCount 0), each made by its autoscaler's kwok provider (its node group, its id).
    plane = planes[chosen]
    batch = {n["metadata"]["name"]: n for n in _nodes(plane, f"{AGENTPOOL_LABEL}=batch")}
    for pod, node in ran_on.items():
        assert node in batch, (pod, node, sorted(batch))
        assert node not in before[chosen], (pod, node)
        made = batch[node]
        assert made["metadata"]["annotations"].get(GROUP_ANNOTATION) == "batch", made["metadata"]
        assert made["spec"].get("providerID") == provider_id(node), made["spec"]
    report(
        f"README quickstart as written on the Azure twin: dispatched to {chosen} "
        f"{dispatched:.1f}s in, complete {completed:.1f}s in; pods on "
        f"{sorted(set(ran_on.values()))} ({len(batch)} batch node(s) the autoscaler made); "
        "the copy line printed "
        f"{sum('sleep-normal' in c for c in copies)} of {len(copies)} time(s) the job"
    )


def test_an_agent_pool_update_reshapes_its_nodes_and_a_delete_removes_them(
    twin_run: TwinRun,
) -> None:
    """What the twin does with an AgentPool update and delete, as the plugin hands them over
    (`put`/`delete`, the calls behind its Update and Delete): an update relabels and retaints the
    pool's nodes, clamps their count into the new range and restarts the cluster's autoscaler
    with the new node group; a delete removes the nodes and the autoscaler (its only group).
    The original request is put back, so the engine's state stays true."""
    twin, run, _ = twin_run
    if run.created is None:
        pytest.skip("the first up did not pass")
    cluster, pool = "worker-2", "batch"
    (record,) = [
        r
        for r in twin.of_type("containerservice:AgentPool")
        if (r.inputs["resourceName"], r.inputs["agentPoolName"]) == (cluster, pool)
    ]
    original = json.loads(json.dumps(record.inputs))
    plane = twin.clusters[cluster].plane
    assert twin.nodes is not None
    starts = twin.nodes.autoscaler_starts(cluster)
    selector = f"{AGENTPOOL_LABEL}={pool}"
    taint = "dedicated=reshaped:NoSchedule"
    changed = {
        **original,
        "minCount": 1,
        "maxCount": 3,
        "nodeLabels": {**original.get("nodeLabels", {}), "reshaped": "yes"},
        "nodeTaints": [*original.get("nodeTaints", []), taint],
    }
    twin.put(AGENT_POOL, changed, preview=False, create=False)
    nodes = _nodes(plane, selector)
    assert len(nodes) >= 1, "minCount 1: at least one node"
    for node in nodes:
        assert node["metadata"]["labels"].get("reshaped") == "yes", node["metadata"]
        assert {"key": "dedicated", "value": "reshaped", "effect": "NoSchedule"} in node[
            "spec"
        ].get("taints", []), node["spec"]
    assert twin.nodes.autoscaler_starts(cluster) == starts + 1
    (template,) = _templates(plane)
    annotations = template["metadata"]["annotations"]
    assert annotations[MAX_ANNOTATION] == "3", annotations
    assert template["metadata"]["labels"].get("reshaped") == "yes"

    twin.put(AGENT_POOL, original, preview=False, create=False)  # back: the label and taint go
    for node in _nodes(plane, selector):
        assert "reshaped" not in node["metadata"]["labels"], node["metadata"]
        assert all(t["key"] != "dedicated" for t in node["spec"].get("taints", [])), node["spec"]
    # Numbers come through the provider protocol as floats (a protobuf Struct).
    assert _templates(plane)[0]["metadata"]["annotations"][MAX_ANNOTATION] == str(
        int(original["maxCount"])
    )

    twin.delete(record.id)
    assert _nodes(plane, selector) == []
    assert not [p for p in plane._processes if p.name == AUTOSCALER]  # pyright: ignore[reportPrivateUsage]
    twin.put(AGENT_POOL, original, preview=False, create=True)  # as the engine's state has it
    assert len(_nodes(plane, selector)) == original.get("count", 0)
    assert [p for p in plane._processes if p.name == AUTOSCALER]  # pyright: ignore[reportPrivateUsage]


def _templates(plane: ControlPlane) -> list[dict[str, Any]]:
    """The node group templates the plane's autoscaler was started with."""
    found = plane.kubectl(
        "get", "configmap", TEMPLATES_MAP, f"--namespace={AUTOSCALER_NAMESPACE}", "-o", "json"
    )
    return json.loads(json.loads(found.stdout)["data"]["templates"])["items"]


def _state(planes: dict[str, ControlPlane]) -> str:
    """What a reader of a failure needs: each cluster's Workloads, the manager's MultiKueue
    clusters, the workers' ProvisioningRequests and nodes."""
    out: list[str] = []
    for name, plane in planes.items():
        for what in ("workloads", "provisioningrequests", "multikueueclusters", "nodes"):
            found = plane.kubectl("get", what, "-A", "-o", "yaml", check=False)
            out.append(f"--- {name} {what}:\n{found.stdout[-4000:]}{found.stderr[-500:]}")
    return "\n".join(out)


def _nodes(plane: ControlPlane, selector: str | None = None) -> list[dict[str, Any]]:
    args = ["get", "nodes", "-o", "json", *(["-l", selector] if selector else [])]
    return json.loads(plane.kubectl(*args).stdout)["items"]


def _node_names(plane: ControlPlane) -> list[str]:
    return [n["metadata"]["name"] for n in _nodes(plane)]


def _pods_of(plane: ControlPlane, job: str) -> list[dict[str, Any]]:
    found = plane.kubectl(
        "get", "pods", "-n", NAMESPACE, "-l", f"{JOB_NAME_LABEL}={job}", "-o", "json"
    )
    return json.loads(found.stdout)["items"]


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def test_a_worker_minor_bump_through_up_upgrades_with_work_in_it_once_its_minor_is_accepted(
    twin_run: TwinRun, report: Report
) -> None:
    """A worker's `kubernetesVersion` bumped to the next minor while a job runs there.

    `up` with the bump alone is refused by the program before any Azure call: the pinned Kueue
    (0.19.2) is tested up to 1.36 (upstream/kueue.py KUEUE_KUBERNETES, checks.upgrades), and the
    next minor the real tier has is 1.37. With `kueue.untestedKubernetesMinor: "1.37"` (the
    documented way to take that minor on purpose) `up` does it: the engine sends the
    ManagedCluster's update (the new `kubernetesVersion` and the System pool's
    `orchestratorVersion`, builders/azure_cluster.py), then each AgentPool's
    (`fleet.pool_version_of`), and Azure is asked to change nothing else. The twin upgrades the
    control plane first, then the System pool, then the batch pool, node by node, surge then
    drain (testkit/realtier/azure_nodes.py `upgrade`); the batch node's drain waits on the job's
    pods (the program's PodDisruptionBudget refuses their eviction) until they complete; the job
    completes exactly once. A skip, a downgrade and a pool above its control plane, sent to the
    twin directly, are refused with AKS's words. The later tests run the bumped stack."""
    twin, run, raw = twin_run
    if run.created is None:
        pytest.skip("the first up did not pass")
    next_version = twin.next_version
    if next_version is None:
        pytest.skip("real tier: the next minor's control plane is not built")
    assert twin.nodes is not None
    minor = ".".join(next_version.removeprefix("v").split(".")[:2])
    workers = [c["name"] for c in raw["clusters"] if c["role"] == "worker"]
    (manager_name,) = [c["name"] for c in raw["clusters"] if c["role"] == "manager"]
    manager = twin.clusters[manager_name].plane

    # `up` with the bump: the program refuses it, and nothing reaches Azure.
    bumped = json.loads(json.dumps(raw))
    bumped["clusters"][[c["name"] for c in raw["clusters"]].index(workers[0])][
        "kubernetesVersion"
    ] = minor
    run.stack.set_config(f"{PROJECT}:{CONFIG_KEY}", auto.ConfigValue(value=json.dumps(bumped)))
    calls, t_refused = len(twin.calls), time.monotonic()
    run.log.clear()
    try:
        with pytest.raises(auto.CommandError):
            twin.serve(lambda: run.stack.up(on_output=run.add, color="never"))
    finally:
        set_fleet(run, raw)
    refused_seconds = time.monotonic() - t_refused
    said = " ".join(" ".join(run.log).split())
    kueue = raw["kueue"]["version"]
    assert f"{minor} for cluster '{workers[0]}': Kueue {kueue} runs on Kubernetes" in said, (
        run.tail()
    )
    sent = [c for c in twin.calls[calls:] if c[1] in ("/create", "/update", "/delete")]
    assert not sent, sent

    # A job running on a worker (dispatched by the manager's Kueue, pods Running there).
    job = suspended_job(
        BUMP_JOB,
        NAMESPACE,
        NAMESPACE,
        {"cpu": "100m", "memory": "64Mi"},
        dispatched=True,
        pods=BUMP_PODS,
        run_for=BUMP_RUN_FOR,
    )
    job["spec"]["backoffLimit"] = 0  # an evicted pod would fail the job: nothing may be lost
    t0 = time.monotonic()
    manager.kubectl("apply", "-f", "-", stdin=json.dumps(job))

    def dispatched() -> dict[str, Any] | None:
        found = workload_of_job(manager, NAMESPACE, BUMP_JOB)
        return found if found is not None and where(found) in workers else None

    until(dispatched, WHERE_TIMEOUT, f"{BUMP_JOB} dispatched to a worker")
    admitted = dispatched()
    assert admitted is not None
    chosen = str(where(admitted))
    plane = twin.clusters[chosen].plane
    others = {w: PodWatch(twin.clusters[w].plane, NAMESPACE) for w in workers if w != chosen}
    until(
        lambda: len([p for p in _pods_of(plane, BUMP_JOB) if _phase(p) == "Running"]) == BUMP_PODS,
        WHERE_TIMEOUT,
        f"{BUMP_JOB}'s pods Running on {chosen}",
    )
    copy = workload_of_job(plane, NAMESPACE, BUMP_JOB)
    assert copy is not None
    before_version = version_of(plane)
    assert before_version != next_version, before_version
    old_nodes = {  # name -> pool, each on the old version
        n["metadata"]["name"]: n["metadata"]["labels"][AGENTPOOL_LABEL]
        for n in _nodes(plane)
        if n["metadata"]["name"] != VIRTUAL_NODE_NAME
    }
    assert all(
        kubelet_of(n) != next_version
        for n in _nodes(plane)
        if n["metadata"]["name"] != VIRTUAL_NODE_NAME
    )
    pools = {n["metadata"]["labels"][AGENTPOOL_LABEL] for n in _nodes(plane, AGENTPOOL_LABEL)}
    assert "batch" in pools, pools
    assert len(pools) >= 2, pools  # the System pool and batch
    running_at_bump = time.monotonic() - t0

    (cluster_record,) = [
        r
        for r in twin.of_type("containerservice:ManagedCluster")
        if r.inputs["resourceName"] == chosen
    ]
    agent_pools = [
        r for r in twin.of_type("containerservice:AgentPool") if r.inputs["resourceName"] == chosen
    ]
    cluster_inputs = json.loads(json.dumps(cluster_record.inputs))
    # AKS refuses what the twin cannot do, in AKS's words, and changes nothing.
    major, number = (int(x) for x in minor.split("."))
    for asked, code in [
        (f"{major}.{number + 1}", "OperationNotAllowed: Upgrading Kubernetes version"),
        (f"{major}.{number - 2}", "OperationNotAllowed: Downgrading Kubernetes version"),
    ]:
        with pytest.raises(ArmError, match=code):
            twin.put(MANAGED_CLUSTER, {**cluster_inputs, "kubernetesVersion": asked}, **UPDATE)
    with pytest.raises(ArmError, match="NodePoolMcVersionIncompatible"):
        twin.put(AGENT_POOL, {**agent_pools[0].inputs, "orchestratorVersion": minor}, **UPDATE)
    assert version_of(plane) == before_version

    # The bump through `up`, the untested minor accepted on purpose (docs/upgrades.md): the
    # engine sends the cluster (control plane, System pool), then its pools.
    accepted = json.loads(json.dumps(raw))
    accepted["clusters"][[c["name"] for c in raw["clusters"]].index(chosen)][
        "kubernetesVersion"
    ] = minor
    accepted["kueue"]["untestedKubernetesMinor"] = minor
    set_fleet(run, accepted)
    first_step, first_record = len(twin.upgrade_steps), len(twin.nodes.upgrades)
    calls = len(twin.calls)
    run.log.clear()
    t_bump = time.monotonic()
    try:
        bumped_up = twin.serve(lambda: run.stack.up(on_output=run.add, color="never"))
    except auto.CommandError:
        set_fleet(run, raw)
        raise
    bump_seconds = time.monotonic() - t_bump
    assert bumped_up.summary.result == "succeeded", run.tail()
    # The later tests run the stack as it now is.
    raw.clear()
    raw.update(accepted)
    said = " ".join(" ".join(run.log).split())
    assert f"kueue.untestedKubernetesMinor accepts {minor} untested" in said, run.tail()
    # Azure was asked to change that cluster and its pools only.
    updated = {c[3] for c in twin.calls[calls:] if c[1] == "/update"}
    assert updated == {cluster_record.id, *(r.id for r in agent_pools)}, updated
    assert not [c for c in twin.calls[calls:] if c[1] in ("/create", "/delete")]

    # ARM reports the new versions.
    (cluster_record,) = [
        r
        for r in twin.of_type("containerservice:ManagedCluster")
        if r.inputs["resourceName"] == chosen
    ]
    assert cluster_record.outputs["currentKubernetesVersion"] == next_version.removeprefix("v")
    for profile in cluster_record.outputs["agentPoolProfiles"]:
        assert profile["currentOrchestratorVersion"] == next_version.removeprefix("v"), profile
    for r in twin.of_type("containerservice:AgentPool"):
        if r.inputs["resourceName"] == chosen:
            assert r.outputs["currentOrchestratorVersion"] == next_version.removeprefix("v")

    # The plane: the next minor, as `kubectl version` and /version say.
    assert version_of(plane) == next_version
    shown = json.loads(plane.kubectl("version", "-o", "json").stdout)
    assert shown["serverVersion"]["gitVersion"] == next_version, shown

    # Every node of every pool (the System pool included) on the new version; no old one left.
    after = {
        n["metadata"]["name"]: n
        for n in _nodes(plane)
        if n["metadata"]["name"] != VIRTUAL_NODE_NAME
    }
    stale = {name: kubelet_of(n) for name, n in after.items() if kubelet_of(n) != next_version}
    assert not stale, f"nodes not on {next_version}: {stale}"
    assert {n["metadata"]["labels"][AGENTPOOL_LABEL] for n in after.values()} == pools
    assert not any(is_surge(n) for n in after.values()), sorted(after)
    assert all(not n["spec"].get("unschedulable") for n in after.values()), sorted(after)

    # The order: the control plane first, then each pool, the System pool included.
    mine = [s for s in twin.upgrade_steps[first_step:] if s.cluster == chosen]
    assert mine, twin.upgrade_steps
    control = mine[0]
    assert control.what == "control plane", mine
    upgraded = {s.what.removeprefix("pool "): s for s in mine[1:]}
    assert set(upgraded) == pools, (mine, pools)
    assert all(control.at <= s.started for s in upgraded.values()), mine
    records = {r.pool: r for r in twin.nodes.upgrades[first_record:] if r.cluster == chosen}
    assert set(records) == pools, records
    for pool, record in records.items():
        assert record.succeeded, record.summary()
        # Every node the pool had at the bump was an old one, and each was drained and reimaged.
        olds = {n for n, of in old_nodes.items() if of == pool}
        assert olds, (pool, record.summary())
        assert olds <= set(record.old_nodes), (pool, record.summary())
        assert set(record.reimaged) == set(record.old_nodes), (pool, record.summary())
    assert not [s for s in twin.upgrade_steps[first_step:] if s.cluster != chosen]

    # The job's node was drained while it ran: the budget refused its pods' eviction (more
    # eviction attempts than evictions) until they had completed.
    batch = records["batch"]
    held = [
        d for d in batch.drains if d.attempts > len([e for e in batch.evicted if e.node == d.node])
    ]
    assert held, f"no drain of batch waited on the job (raise BUMP_RUN_FOR): {batch.summary()}"

    # The job: complete exactly once, nothing lost.
    job_path = f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{BUMP_JOB}"
    until(
        lambda: condition(get_json(manager, job_path), "Complete") == "True",
        WAIT_TIMEOUT,
        f"{BUMP_JOB} complete on the manager",
    )
    t_done = time.monotonic() - t0
    for watch in others.values():
        watch.stop()
    final = get_json(manager, job_path)
    assert final is not None
    status = final["status"]
    assert status.get("succeeded") == BUMP_PODS, status
    assert not status.get("failed"), status
    mine_wl = workload_of_job(manager, NAMESPACE, BUMP_JOB)
    assert mine_wl is not None
    assert mine_wl["metadata"]["uid"] == admitted["metadata"]["uid"], "re-created"
    assert condition(mine_wl, "Finished") == "True", mine_wl["status"]
    assert condition(mine_wl, "Evicted") in {None, "False"}, mine_wl["status"]
    assert where(mine_wl) == chosen, mine_wl["status"]
    for worker, watch in others.items():
        assert not watch.bound(), f"{BUMP_JOB} ran on {worker}: {watch.seen}"
    copies = [
        w
        for w in items(plane, f"{KUEUE_API}/namespaces/{NAMESPACE}/workloads")
        if w["metadata"]["name"] == copy["metadata"]["name"]
    ]
    assert all(w["metadata"]["uid"] == copy["metadata"]["uid"] for w in copies), copies

    durations = ", ".join(f"{s.what} {s.at - s.started:.1f}s" for s in mine)
    report(
        f"minor bump of {chosen} ({before_version} -> {next_version}): up refused by the program "
        f"in {refused_seconds:.1f}s (Kueue {kueue}'s tested minors), nothing sent to Azure; "
        f"then up with the untested minor accepted, {BUMP_PODS} pods running there "
        f"({running_at_bump:.0f}s in): {bump_seconds:.1f}s ({durations}); batch drain held "
        f"{[f'{d.node} {d.seconds:.1f}s' for d in held]}; job complete once {t_done:.0f}s in"
    )


def test_a_pool_vm_size_change_previews_as_a_replace_of_that_pool_only(
    twin_run: TwinRun,
) -> None:
    twin, run, raw = twin_run
    if run.created is None:
        pytest.skip("the first up did not pass")
    cluster, pool, size = RESIZED
    changed = json.loads(json.dumps(raw))
    for c in changed["clusters"]:
        if c["name"] == cluster:
            for p in c["pools"]:
                if p["name"] == pool:
                    p["vmSize"] = size
    set_fleet(run, changed)
    steps: dict[str, str] = {}

    def seen(event: auto.EngineEvent) -> None:
        pre = event.resource_pre_event
        if pre is not None:
            steps[pre.metadata.urn] = str(getattr(pre.metadata.op, "value", pre.metadata.op))

    try:
        preview = twin.serve(lambda: run.stack.preview(on_event=seen, color="never"))
    finally:
        set_fleet(run, raw)
    # The RetireGuard's dynamic-provider host (components/retire.py) is neither Azure nor a
    # cluster's: its default provider previews as an update here and is not judged.
    moved = {
        urn: op
        for urn, op in steps.items()
        if op not in ("same", "read") and "pulumi:providers:pulumi-python::" not in urn
    }
    replacing = ("replace", "create-replacement", "delete-replaced")
    replaced = sorted({u for u, op in moved.items() if op in replacing})
    assert len(replaced) == 1, moved
    assert replaced[0].endswith(f"containerservice:AgentPool::{PROJECT}-{cluster}-{pool}"), moved
    # Nothing else changes: no other Azure resource and no Kubernetes object of any cluster.
    assert set(moved) == {replaced[0]}, moved
    assert op_counts(preview.change_summary).get("replace") == 1


def test_destroy_removes_every_azure_resource_and_plane(twin_run: TwinRun, report: Report) -> None:
    destroy_all(twin_run, report)


def test_a_grant_that_never_propagates_stops_up_with_the_documented_message(
    twin_run: TwinRun, report: Report
) -> None:
    """After `destroy`: a new `up` whose grant on one cluster never reaches its API server."""
    twin, run, raw = twin_run
    if twin.resources or run.created is None:
        pytest.skip("the destroy did not pass")
    bounded = json.loads(json.dumps(raw))
    bounded.setdefault("access", {})["authorizationTimeoutSeconds"] = NEVER_SECONDS
    twin.unpropagated = {NEVER}
    try:
        seconds, output = failing_up(twin_run, bounded, raw)
    finally:
        twin.unpropagated = set()
    (cluster_id,) = [
        r.id
        for r in twin.of_type("containerservice:ManagedCluster")
        if r.inputs["resourceName"] == NEVER
    ]
    server = f"https://{twin.clusters[NEVER].relay.address}:443"
    # The message docs/upgrades.md shows: each of its fixed parts, and its placeholders filled.
    documented = " ".join(UPGRADES.read_text().split())
    for part in [
        "(access.authorizationTimeoutSeconds); it may still not create",
        "Nothing was applied to this cluster: its first objects (",
        ") wait for this. Check: the program granted this identity AKS RBAC Cluster Admin on the "
        "cluster (access.deployIdentityRole), and Azure takes up to 5 minutes to bring a new "
        "grant to the API server. See that the grant is there (`az role assignment list --scope",
        "-o table`) and that `pulumi up` runs as the identity the provider logs in as (",
        "then run `pulumi up` again, or raise access.authorizationTimeoutSeconds.",
    ]:
        assert part in documented, f"docs/upgrades.md no longer shows {part!r}"
        assert part in output, f"{part!r} not in the engine's output:\n{run.errors()}"
    for part in [
        f"cluster '{NEVER}': the API server {server} did not authorize '{ENTRA_USER}' within "
        f"{NEVER_SECONDS}s",
        f"`az role assignment list --scope {cluster_id} --assignee",
        f"the provider logs in as ('{ENTRA_USER}')",
    ]:
        assert part in output, f"{part!r} not in the engine's output:\n{run.errors()}"
    assert seconds < NEVER_SECONDS + ENGINE_SLACK, f"up took {seconds:.0f}s:\n{run.tail()}"
    assert "Traceback" not in output, run.tail()
    # Nothing of the stack on that cluster: its provider never got its kubeconfig.
    plane = twin.clusters[NEVER].plane
    queues = plane.kubectl("get", "clusterqueues", "-o", "name").stdout.split()
    assert queues == [], queues
    report(
        f"up with a grant that never propagates on {NEVER}: failed in {seconds:.1f}s "
        f"(bound {NEVER_SECONDS}s)"
    )
