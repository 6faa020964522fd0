"""The dev stack's Azure half through the real engine: `pulumi up` against the Azure twin.

Issue 39, first slice. The committed `Pulumi.dev.yaml` runs with its clusters as written
(`source: aks`): the real engine loads the stand-in azure-native plugin
(tests/realtier/azure_provider.py) under the pinned name, which forwards to the Azure twin in
this process (tests/realtier/azure_twin.py). Every ManagedCluster the engine creates becomes a
plane with Kueue beside it, and the program's own wiring (cluster outputs ->
listManagedClusterUserCredentials -> kubelogin exec kubeconfig -> authorization wait ->
Kubernetes provider) deploys the Kubernetes half onto it. The Kubernetes half is mapped as every
twin maps it (tests/realtier/twin.py): Kueue `manifests-only` (the chart cannot be fetched or
run here; the twin runs Kueue beside each plane) and no Karmada. Nothing else of the stack
changes, and no `existing` cluster is involved.

- One `up` creates the whole fleet, Azure and Kubernetes halves; the `kubeconfigs` output is a
  secret in the state and, shown with `--show-secrets`, reaches each cluster's plane through
  kubelogin; the next `up` changes nothing.
- A pool's vmSize change previews as a replace of that AgentPool and nothing else.
- `destroy` removes everything, Azure resources and planes.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from pulumi import automation as auto

from checks.stack import parse_fleet
from config.models import FleetConfig
from constants import CONFIG_KEY, MULTIKUEUE_ADMISSION_CHECK, OUT_KUBECONFIGS, PROJECT
from tests.realtier.azure_twin import AzureTwin
from tests.realtier.conftest import kueue_crd_paths
from tests.realtier.engine import EngineRun, find_engine, workspace
from tests.realtier.harness import ControlPlane, Report, Tools
from tests.realtier.kueue import kueue_binary, metrics_certs
from tests.realtier.pulumi_cli import op_counts
from tests.realtier.twin import load_stack
from tests.realtier.twin_run import _kueue_for, provisioning_crd  # pyright: ignore[reportPrivateUsage]

pytestmark = [pytest.mark.real, pytest.mark.slow]

STACK: Final = "dev"
SECRET_SIG: Final = "4dabf18193072939515e22adb298388d"  # the state's secret marker key
RESIZED: Final = ("worker-1", "batch", "Standard_D8s_v5")


def fleet_raw(fleet: FleetConfig) -> dict[str, Any]:
    """The committed fleet with the twin's Kubernetes-half mapping only (tests/realtier/twin.py):
    manifests-only Kueue, no Karmada. The clusters stay `source: aks`."""
    raw: dict[str, Any] = fleet.model_dump(mode="json", by_alias=True, exclude_none=True)
    raw.pop("karmada", None)
    raw["kueue"] = {**raw["kueue"], "install": "manifests-only"}
    return raw


def set_fleet(run: EngineRun, raw: dict[str, Any]) -> None:
    parse_fleet(dict(raw), source="azure twin")
    run.stack.set_config(f"{PROJECT}:{CONFIG_KEY}", auto.ConfigValue(value=json.dumps(raw)))


@pytest.fixture(scope="module")
def twin_run(
    tools: Tools, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[AzureTwin, EngineRun, dict[str, Any]]]:
    engine, why = find_engine()
    binary, crd = kueue_binary(), provisioning_crd()
    if engine is None or binary is None or crd is None:
        pytest.skip(f"real tier: {why or 'kueue not built'}")
    root = tmp_path_factory.mktemp("azure-twin")
    fleet = load_stack(STACK)
    raw = fleet_raw(fleet)
    mapped, _ = parse_fleet(raw, source="azure twin")
    twin = AzureTwin(
        root / "azure",
        tools,
        kueue_for=lambda plane: _kueue_for(mapped, plane, binary, root / "kueue", "2m"),
        kueue_crds=[*kueue_crd_paths(fleet), crd],
    )
    (root / "azure").mkdir()
    with metrics_certs(tools.openssl), pytest.MonkeyPatch.context() as env:
        twin.start()
        try:
            run = workspace(STACK, root / "engine", engine)
            # The plugin directory is on the engine's PATH: the plugin, and kubelogin for the
            # Kubernetes provider; the program's authorization wait runs kubelogin in this
            # process, so it goes on this process's PATH too.
            plugins = root / "engine" / "plugins"
            twin.write_plugins(plugins, plugins)
            env.setenv("PATH", f"{plugins}{os.pathsep}{os.environ.get('PATH', '')}")
            set_fleet(run, raw)
            try:
                yield twin, run, raw
            finally:
                run.save()
        finally:
            twin.stop()


def kubectl_as_user(kubeconfig: str, work: Path, env: dict[str, str], *args: str) -> str:
    path = work / "user.kubeconfig"
    path.write_text(kubeconfig)
    path.chmod(0o600)
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(path), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_up_creates_both_halves_and_kubeconfigs_reach_the_planes(
    twin_run: tuple[AzureTwin, EngineRun, dict[str, Any]], report: Report
) -> None:
    twin, run, raw = twin_run
    t0 = time.monotonic()
    up = twin.serve(run.up)
    seconds = time.monotonic() - t0
    changes = op_counts(up.summary.resource_changes)
    assert set(changes) == {"create"}, changes
    names = [c["name"] for c in raw["clusters"]]
    assert sorted(twin.clusters) == sorted(names)
    assert {r.outputs["name"] for r in twin.of_type("containerservice:ManagedCluster")} == set(
        names
    )
    pools = {
        (r.inputs["resourceName"], r.outputs["name"])
        for r in twin.of_type("containerservice:AgentPool")
    }
    assert pools == {(c["name"], p["name"]) for c in raw["clusters"] for p in c.get("pools", [])}
    # The Kubernetes half is on the planes the Azure half made: the ClusterQueues Kueue activated.
    # Each cluster's own objects on its own plane (a provider wired to another cluster's
    # kubeconfig puts them elsewhere): the manager's MultiKueue check only on the manager, the
    # workers' provisioning gate only on the workers.
    for c in raw["clusters"]:
        plane: ControlPlane = twin.clusters[c["name"]].plane
        queues = plane.kubectl("get", "clusterqueues", "-o", "name").stdout.split()
        assert "clusterqueue.kueue.x-k8s.io/team-a" in queues, (c["name"], queues)
        checks = plane.kubectl("get", "admissionchecks", "-o", "name").stdout.split()
        if c["role"] == "manager":
            want = {MULTIKUEUE_ADMISSION_CHECK}
        else:
            want = {g["name"] for g in c["queues"]["provisioningGates"]}
        checks = [name.removeprefix("admissioncheck.kueue.x-k8s.io/") for name in checks]
        assert set(checks) == want, (c["name"], checks)

    # The kubeconfigs output: a secret in the state; shown, each reaches its own plane.
    (state_file,) = (run.work / "state").glob(f".pulumi/stacks/{PROJECT}/{STACK}.json")
    state = json.loads(state_file.read_text())["checkpoint"]["latest"]
    stack_res = next(r for r in state["resources"] if r["type"] == "pulumi:pulumi:Stack")
    stored = stack_res["outputs"][OUT_KUBECONFIGS]
    assert set(stored) == {SECRET_SIG, "ciphertext"}, f"not a secret in the state: {list(stored)}"
    shown = run.cli.run(["pulumi", "stack", "output", "--show-secrets", "--json", OUT_KUBECONFIGS])
    assert shown.returncode == 0, shown.stderr
    kubeconfigs: dict[str, str] = json.loads(shown.stdout)
    assert sorted(kubeconfigs) == sorted(names)
    for name, document in kubeconfigs.items():
        server = yaml.safe_load(document)["clusters"][0]["cluster"]["server"]
        assert server == f"https://{twin.clusters[name].relay.address}:443", (name, server)
        who = kubectl_as_user(
            document, run.work, dict(run.env), "get", "namespace", "kube-system", "-o", "name"
        )
        assert who.strip() == "namespace/kube-system"

    t1 = time.monotonic()
    again = twin.serve(run.up)
    second = op_counts(again.summary.resource_changes)
    # The MultiKueue credential proofs read again on every `up` (one per worker).
    workers = [c["name"] for c in raw["clusters"] if c["role"] == "worker"]
    assert second.pop("read", 0) == len(workers), second
    assert second == {"same": changes["create"]}, f"second up is not a no-op: {second}"
    run.created = changes["create"]
    report(
        f"pulumi up (real engine, {STACK} through the Azure twin): {changes['create']} resources "
        f"created in {seconds:.1f}s, {len(twin.resources)} of them in ARM; second up "
        f"{time.monotonic() - t1:.1f}s, all same"
    )


def test_a_pool_vm_size_change_previews_as_a_replace_of_that_pool_only(
    twin_run: tuple[AzureTwin, EngineRun, dict[str, Any]],
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


def test_destroy_removes_every_azure_resource_and_plane(
    twin_run: tuple[AzureTwin, EngineRun, dict[str, Any]], report: Report
) -> None:
    twin, run, _ = twin_run
    if run.created is None:
        pytest.skip("the first up did not pass")
    t0 = time.monotonic()
    destroyed = twin.serve(lambda: run.stack.destroy(on_output=run.add, color="never"))
    counts = op_counts(destroyed.summary.resource_changes)
    assert counts.get("delete") == run.created, counts
    assert twin.resources == {}, sorted(twin.resources)
    assert twin.clusters == {}, sorted(twin.clusters)
    first_azure = min(t for t, path, _, _ in twin.calls if path == "/delete" and t >= t0)
    report(
        f"pulumi destroy through the Azure twin: {time.monotonic() - t0:.1f}s, the first Azure "
        f"delete after {first_azure - t0:.1f}s (the Kubernetes half goes first)"
    )
