"""One committed stack through the Azure twin (testkit/realtier/azure_twin.py) on the real engine:
the session the Azure twin's tests share (test_azure_twin.py: dev, test_azure_twin_prod.py:
prod) and the checks of their first `up`, second `up` and `destroy`.

The stack's clusters stay as written (`source: aks`); only its Kubernetes half is mapped as every
twin maps it (testkit/realtier/twin.py): Kueue `manifests-only` (the chart cannot be fetched or run
here; the twin runs Kueue beside each plane) and no Karmada.
"""

from __future__ import annotations

import contextlib
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

from builders.fleet import helm_releases
from checks.stack import parse_fleet
from config.models import FleetConfig
from config.resolve import custom_shapes, dispatch_sets
from constants import CONFIG_KEY, OUT_KUBECONFIGS, PROJECT
from testkit.realtier import kueue_webhooks
from testkit.realtier.autoscaler import TOOL as AUTOSCALER
from testkit.realtier.autoscaler import find_autoscaler
from testkit.realtier.azure_nodes import AzureNodes, PoolRequest, cluster_request, pool_request
from testkit.realtier.azure_twin import AzureTwin, active_namespaces
from testkit.realtier.chart_repo import ChartRepo
from testkit.realtier.crds import kueue_crd_paths
from testkit.realtier.engine import EngineRun, find_engine, workspace
from testkit.realtier.faults import timed_simulation
from testkit.realtier.harness import ControlPlane, Report, Tools, find_next_control_plane
from testkit.realtier.kueue import TWIN_WORKER_LOST_TIMEOUT, kueue_binary, metrics_certs
from testkit.realtier.pulumi_cli import op_counts
from testkit.realtier.twin import VIRTUAL_NODE_NAME, load_stack
from testkit.realtier.twin_run import (
    _kueue_for,  # pyright: ignore[reportPrivateUsage]
    find_simulation_tools,
    provisioning_crd,
)
from upstream.aks import AGENTPOOL_LABEL

SECRET_SIG: Final = "4dabf18193072939515e22adb298388d"  # the state's secret marker key

TwinRun = tuple[AzureTwin, EngineRun, dict[str, Any]]


def fleet_raw(fleet: FleetConfig) -> dict[str, Any]:
    """The committed fleet with the twin's Kubernetes-half mapping only (testkit/realtier/twin.py):
    manifests-only Kueue, no Karmada. The clusters stay `source: aks`."""
    raw: dict[str, Any] = fleet.model_dump(mode="json", by_alias=True, exclude_none=True)
    raw.pop("karmada", None)
    raw["kueue"] = {**raw["kueue"], "install": "manifests-only"}
    return raw


def set_fleet(run: EngineRun, raw: dict[str, Any]) -> None:
    parse_fleet(dict(raw), source="azure twin")
    run.stack.set_config(f"{PROJECT}:{CONFIG_KEY}", auto.ConfigValue(value=json.dumps(raw)))


@contextlib.contextmanager
def twin_session(stack: str, tools: Tools, root: Path) -> Iterator[TwinRun]:
    """The Azure twin serving the stand-in plugin, and an engine workspace of `stack` with its
    mapped fleet set; the twin's planes are stopped and the run's logs saved on the way out."""
    engine, why = find_engine()
    binary, crd = kueue_binary(), provisioning_crd()
    if engine is None or binary is None or crd is None:
        pytest.skip(f"real tier: {why or 'kueue not built'}")
    sim, missing = find_simulation_tools()
    autoscaler, absent = find_autoscaler()
    if sim is None or autoscaler is None:
        pytest.skip(f"real tier: {'; '.join(missing) or absent}")
    webhooks = kueue_webhooks.manifests_path(binary)
    if webhooks is None:
        pytest.skip(f"real tier: Kueue's webhook manifests not beside {binary}")
    fleet = load_stack(stack)
    raw = fleet_raw(fleet)
    mapped, _ = parse_fleet(raw, source="azure twin")
    twin = AzureTwin(
        root / "azure",
        tools,
        kueue_for=lambda plane: _kueue_for(
            mapped, plane, binary, root / "kueue", TWIN_WORKER_LOST_TIMEOUT
        ),
        kueue_crds=[*kueue_crd_paths(fleet), crd],
        # Azure's VM catalogue: the built-in table and the stack's own `vmSizes`.
        # kwok's pod-complete Stage delayed by a pod's own annotation (a test's job that runs
        # for a while); a pod without it completes at once, as before.
        nodes=AzureNodes(timed_simulation(sim, root / "stages"), autoscaler, custom_shapes(fleet)),
        kueue_webhooks=webhooks,
        # The next minor's control plane: the one Kubernetes upgrade a cluster can take.
        next_control_plane=find_next_control_plane()[0],
    )
    (root / "azure").mkdir()
    # Charts the program fetches by URL (prod's NVIDIA device plugin): a stand-in repository.
    releases = [r for r in helm_releases(mapped) if (r.repo or "").startswith("https://")]
    urls = list(dict.fromkeys(r.repo or "" for r in releases))
    assert len(urls) <= 1, f"one stand-in chart repository per run (one HTTPS_PROXY): {urls}"
    repos = [
        ChartRepo(url, {r.chart: r.version for r in releases}, root / "charts", tools.openssl)
        for url in urls
    ]
    with metrics_certs(tools.openssl), pytest.MonkeyPatch.context() as env:
        twin.start()
        try:
            run = workspace(stack, root / "engine", engine)
            for repo in repos:
                proxied(run, repo.start(), root / "engine" / "proxied")
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
            for repo in repos:
                repo.stop()


def failing_up(session: TwinRun, raw: dict[str, Any], then: dict[str, Any]) -> tuple[float, str]:
    """`up` with the fleet `raw`, which must fail: its seconds and the engine's output (on one
    line, whitespace collapsed). The fleet `then` is set afterwards, failed or not."""
    twin, run, _ = session
    set_fleet(run, raw)
    run.log.clear()
    t0 = time.monotonic()
    try:
        with pytest.raises(auto.CommandError):
            twin.serve(lambda: run.stack.up(on_output=run.add, color="never"))
    finally:
        set_fleet(run, then)
    return time.monotonic() - t0, " ".join(" ".join(run.log).split())


def proxied(run: EngineRun, env: dict[str, str], bin_dir: Path) -> None:
    """The Kubernetes provider (which fetches Helm charts) with `env`, the stand-in chart
    repository's proxy and CA; only it: the planes are reached without a proxy either way, but
    Python's `no_proxy` has no CIDR form for their 127/8 addresses."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / run.engine.provider.name
    settings = " ".join(f'{k}="{v}"' for k, v in env.items())
    wrapper.write_text(f'#!/bin/sh\n{settings} exec "{run.engine.provider}" "$@"\n')
    wrapper.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{run.env['PATH']}"
    run.env["PATH"] = path
    run.stack.workspace.env_vars = dict(run.env)


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


def up_twice(stack: str, session: TwinRun, report: Report) -> None:
    """One `up` creates both halves of the whole fleet; the next `up` changes nothing."""
    twin, run, raw = session
    t0 = time.monotonic()
    up = twin.serve(run.up)
    seconds = time.monotonic() - t0
    changes = op_counts(up.summary.resource_changes)
    assert set(changes) == {"create"}, changes
    mapped, _ = parse_fleet(dict(raw), source="azure twin")
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
    # kubeconfig puts them elsewhere): the manager's MultiKueue checks only on the manager, the
    # workers' provisioning gates only on the workers.
    for c in raw["clusters"]:
        plane: ControlPlane = twin.clusters[c["name"]].plane
        queues = plane.kubectl("get", "clusterqueues", "-o", "name").stdout.split()
        want_queues = {
            f"clusterqueue.kueue.x-k8s.io/{q['name']}" for q in c["queues"]["clusterQueues"]
        }
        assert want_queues <= set(queues), (c["name"], queues)
        checks = plane.kubectl("get", "admissionchecks", "-o", "name").stdout.split()
        checks = [name.removeprefix("admissioncheck.kueue.x-k8s.io/") for name in checks]
        if c["role"] == "manager":  # one MultiKueue check per dispatch set (prod: two)
            want = {s.name for s in dispatch_sets(mapped)}
        else:
            want = {g["name"] for g in c["queues"]["provisioningGates"]}
        assert set(checks) == want, (c["name"], checks)

    check_nodes(twin)

    # The kubeconfigs output: a secret in the state; shown, each reaches its own plane.
    (state_file,) = (run.work / "state").glob(f".pulumi/stacks/{PROJECT}/{stack}.json")
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
        f"pulumi up (real engine, {stack} through the Azure twin): {changes['create']} resources "
        f"created in {seconds:.1f}s, {len(twin.resources)} of them in ARM; second up "
        f"{time.monotonic() - t1:.1f}s, all same"
    )


def check_nodes(twin: AzureTwin) -> None:
    """Each plane's nodes are what the engine asked ARM for (testkit/realtier/azure_nodes.py): per
    pool (the ManagedCluster's inline System pool, each AgentPool) its `count` nodes with its
    `nodeLabels` and `nodeTaints`, the virtual node where the ACI add-on is on, and a running
    cluster-autoscaler where a pool is autoscaled."""
    requested: dict[str, list[PoolRequest]] = {name: [] for name in twin.clusters}
    virtual: dict[str, bool] = {}
    for r in twin.of_type("containerservice:ManagedCluster"):
        request = cluster_request(r.inputs)
        requested[r.outputs["name"]] += request.system_pools
        virtual[r.outputs["name"]] = request.virtual_node
    for r in twin.of_type("containerservice:AgentPool"):
        requested[r.inputs["resourceName"]].append(pool_request(r.inputs))
    for name, pools in requested.items():
        plane = twin.clusters[name].plane
        nodes = json.loads(plane.kubectl("get", "nodes", "-o", "json").stdout)["items"]
        for pool in pools:
            mine = [n for n in nodes if n["metadata"]["labels"].get(AGENTPOOL_LABEL) == pool.name]
            assert len(mine) == pool.count, (name, pool.name, pool.count, len(mine))
            for node in mine:
                assert dict(pool.labels).items() <= node["metadata"]["labels"].items(), node
                taints = {
                    f"{t['key']}={t.get('value', '')}:{t['effect']}".replace("=:", ":")
                    for t in node["spec"].get("taints") or []
                }
                assert set(pool.taints) <= taints, (node["metadata"]["name"], taints)
        names = {n["metadata"]["name"] for n in nodes}
        assert (VIRTUAL_NODE_NAME in names) == virtual[name], (name, sorted(names))
        running = [p for p in plane._processes if p.name == AUTOSCALER]  # pyright: ignore[reportPrivateUsage]
        assert len(running) == int(any(p.autoscaled for p in pools)), (name, running)


def destroy_all(session: TwinRun, report: Report) -> None:
    """`destroy` deletes everything: no Azure resource left in the twin, every plane stopped."""
    twin, run, _ = session
    if run.created is None:
        pytest.skip("the first up did not pass")
    # What the stack applied in each cluster is deleted with it (components/kube.py): when the
    # cluster's delete arrives, its namespaces are all there, none terminating.
    namespaces = {name: active_namespaces(c.plane) for name, c in twin.clusters.items()}
    assert all(namespaces.values()), namespaces
    t0 = time.monotonic()
    destroyed = twin.serve(lambda: run.stack.destroy(on_output=run.add, color="never"))
    counts = op_counts(destroyed.summary.resource_changes)
    assert counts.get("delete") == run.created, counts
    assert twin.resources == {}, sorted(twin.resources)
    assert twin.clusters == {}, sorted(twin.clusters)
    assert twin.namespaces_at_delete == namespaces, (twin.namespaces_at_delete, namespaces)
    first_azure = min(t for t, path, _, _ in twin.calls if path == "/delete" and t >= t0)
    report(
        f"pulumi destroy through the Azure twin: {time.monotonic() - t0:.1f}s, the first Azure "
        f"delete after {first_azure - t0:.1f}s; each cluster deleted with its "
        f"{sum(map(len, namespaces.values()))} namespaces still active (deleted with it, not "
        f"one by one)"
    )
