"""The first `up` succeeds once, and a refresh never loses state, with the real engine
(testkit/realtier/engine.py) on a fresh plane.

The deploying identity is a ServiceAccount that the plane knows but does not authorize: its
kubeconfig gets its token from an `exec` credential plugin, as an AKS Entra ID kubeconfig gets
one from kubelogin, and nothing binds it to a role until the test says so. So the plane stands in
for an AKS cluster whose deployer grant exists in Azure but has not reached the API server yet.
The cluster is `source: existing` with `existing.authorizationTimeoutSeconds` (the same wait an
AKS cluster's `access.authorizationTimeoutSeconds` sets; components/authorization.py). One plane:
the Kueue CRDs the first `up` creates cost ~30 s a plane on 2 busy cores.

- A binding that appears late: a thread binds the identity to cluster-admin only once `up` has
  said it is waiting for the plane (engine events), checking first that the plane still refuses
  it. One `up` succeeds.
- A binding that never appears: `up` fails within its bound, naming the cluster, the identity,
  the key and what to check, and nothing is in the state.
- An unreachable plane (its API server killed, the rest of it stopped): the refresh of
  docs/upgrades.md, run as written, fails and keeps every object in state; with the plane back
  the same command passes and the state is what it was (as a refresh just before left it: a
  refresh brings outputs such as a CRD's status up to date, which is not a loss).

No Kueue runs: the fleet's objects are Kueue's CRDs, kueue-system, a team namespace and a
ResourceFlavor, none of which waits for a controller.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from pulumi import automation as auto

from testkit.realtier.engine import EngineRun, configure, find_engine, kubeconfig_key, workspace
from testkit.realtier.faults import lose_plane, restore_plane, wait_for
from testkit.realtier.harness import ControlPlane, Report, Tools, start_all, stop_all
from testkit.realtier.pulumi_cli import section, shell_commands

pytestmark = [pytest.mark.real, pytest.mark.slow]

PLANE: Final = "alpha"
DEPLOYER: Final = "realtier-deployer"
NEVER: Final = "realtier-never"
NAMESPACE: Final = "kube-system"
# Long enough for the engine to start and the thread to bind; the wait ends at the binding.
WAIT_SECONDS: Final = 90
# The never-authorized `up`: its bound, and what the engine may add around it (start, the
# program, the failure's report), measured ~10 s.
NEVER_SECONDS: Final = 15
ENGINE_SLACK: Final = 45.0
# How long the thread waits for `up` to say it is waiting for a plane.
SAID_TIMEOUT: Final = 60.0
UPGRADES: Final = Path(__file__).resolve().parents[2] / "docs" / "upgrades.md"
REFRESH: Final = "### When a refresh cannot reach a cluster"


def fleet_raw(name: str, timeout: int) -> dict[str, Any]:
    """One standalone existing cluster with a namespace and a flavor, waiting `timeout`."""
    return {
        "kueue": {"install": "manifests-only", "frameworks": ["batch/job"]},
        "clusters": [
            {
                "name": name,
                "role": "standalone",
                "source": "existing",
                "existing": {
                    "kubeconfigSecret": kubeconfig_key(name),
                    "authorizationTimeoutSeconds": timeout,
                },
                "queues": {"namespaces": [{"name": "team-a"}], "flavors": [{"name": "default"}]},
            }
        ],
    }


def subject(account: str) -> str:
    return f"system:serviceaccount:{NAMESPACE}:{account}"


def identity(plane: ControlPlane, account: str, work: Path) -> Path:
    """A kubeconfig for a new ServiceAccount of the plane, its token from an exec plugin."""
    plane.kubectl("create", "serviceaccount", account, "-n", NAMESPACE)
    token = plane.kubectl(
        "create", "token", account, "-n", NAMESPACE, "--duration=2h"
    ).stdout.strip()
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": token},
    }
    work.mkdir(parents=True, exist_ok=True)
    answer = work / f"{plane.name}-{account}.json"
    answer.write_text(json.dumps(credential))
    plugin = work / f"{plane.name}-{account}-credential"
    plugin.write_text(f"#!/bin/sh\nexec cat '{answer}'\n")
    plugin.chmod(0o700)
    admin = yaml.safe_load(plane.kubeconfig.read_text())
    admin["users"] = [
        {
            "name": account,
            "user": {
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1",
                    "command": str(plugin),
                    "interactiveMode": "Never",
                }
            },
        }
    ]
    admin["contexts"][0]["context"]["user"] = account
    path = work / f"{plane.name}-{account}.kubeconfig"
    path.write_text(yaml.safe_dump(admin, sort_keys=False))
    return path


def can_create_crds(plane: ControlPlane, account: str) -> str:
    """`kubectl auth can-i` as the identity, asked by the admin: `yes` or `no`."""
    out = plane.kubectl(
        "auth",
        "can-i",
        "create",
        "customresourcedefinitions",
        f"--as={subject(account)}",
        check=False,
    )
    return out.stdout.strip()


def bind(plane: ControlPlane, account: str) -> None:
    plane.kubectl(
        "create",
        "clusterrolebinding",
        f"{account}-admin",
        "--clusterrole=cluster-admin",
        f"--serviceaccount={NAMESPACE}:{account}",
    )


@pytest.fixture(scope="module")
def plane(tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    started = ControlPlane(PLANE, tmp_path_factory.mktemp("first-up") / PLANE, tools)
    try:
        start_all([started])
        yield started
    finally:
        stop_all([started])


def _engine_run(name: str, work: Path) -> EngineRun:
    engine, why = find_engine()
    if engine is None:
        pytest.skip(f"real tier: {why}")
    return workspace(name, work, engine)


@dataclass
class Binder:
    """Binds the identity once `up` says it waits for the plane, which must still refuse it."""

    plane: ControlPlane
    said: float | None = None
    refused_before: str = ""
    bound_at: float | None = None
    errors: list[str] = field(default_factory=list[str])

    def on_event(self, event: auto.EngineEvent) -> None:
        diag = event.diagnostic_event
        if diag is not None and f"cluster '{self.plane.name}': waiting up to" in diag.message:
            self.said = self.said or time.monotonic()

    def run(self) -> None:
        try:
            wait_for("up saying it waits for the plane", lambda: self.said, SAID_TIMEOUT)
            self.refused_before = can_create_crds(self.plane, DEPLOYER)
            bind(self.plane, DEPLOYER)
            self.bound_at = time.monotonic()
        except AssertionError as exc:  # reported by the test, after `up` returns
            self.errors.append(str(exc))


@dataclass
class Deployed:
    run: EngineRun
    seconds: float
    binder: Binder
    ended: float


@pytest.fixture(scope="module")
def deployed(plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    """One `up` as the unbound identity; the binder binds it while `up` waits."""
    work = tmp_path_factory.mktemp("deployer")
    kubeconfig = identity(plane, DEPLOYER, work / "identity")
    run = _engine_run("first-up", work / "pulumi")
    configure(run, {PLANE: kubeconfig}, fleet_raw(PLANE, WAIT_SECONDS))
    binder = Binder(plane)
    thread = threading.Thread(target=binder.run, daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        result = run.stack.up(on_output=run.add, on_event=binder.on_event, color="never")
    except auto.CommandError as exc:
        run.save()
        raise AssertionError(
            f"one `up` with a late binding failed; binder: said {binder.said}, errors "
            f"{binder.errors}; engine errors:\n{run.errors()}\n--- tail:\n{run.tail(20)}"
        ) from exc
    ended = time.monotonic()
    thread.join(timeout=5)
    assert result.summary.result == "succeeded", run.tail()
    yield Deployed(run, ended - started, binder, ended)
    run.save()


def test_one_up_succeeds_when_the_binding_comes_late(deployed: Deployed, report: Report) -> None:
    binder = deployed.binder
    assert not binder.errors, binder.errors
    # `up` said it was waiting for the plane, which then still refused the identity ...
    assert binder.said is not None, deployed.run.tail()
    assert binder.refused_before == "no", binder.refused_before
    # ... and it went on once bound: the plane's objects are in the state
    assert binder.bound_at is not None
    assert deployed.ended > binder.bound_at
    types = deployed.run.types()
    assert {
        "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
        "kubernetes:core/v1:Namespace",
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor",
    } <= types, types
    report(
        f"first up with a late binding: {deployed.seconds:.1f}s; up waited, the identity bound "
        f"{binder.bound_at - binder.said:.1f}s after up said so"
    )


def test_up_fails_within_its_bound_when_the_binding_never_comes(
    plane: ControlPlane, tmp_path: Path, report: Report
) -> None:
    kubeconfig = identity(plane, NEVER, tmp_path / "identity")
    run = _engine_run("never", tmp_path / "pulumi")
    configure(run, {PLANE: kubeconfig}, fleet_raw(PLANE, NEVER_SECONDS))
    t0 = time.monotonic()
    with pytest.raises(auto.CommandError):
        run.stack.up(on_output=run.add, color="never")
    seconds = time.monotonic() - t0
    run.save()
    output = "\n".join(run.log)
    assert seconds < NEVER_SECONDS + ENGINE_SLACK, f"up took {seconds:.0f}s:\n{run.tail()}"
    for part in [
        f"cluster '{PLANE}': the API server https://127.0.0.1:",
        f"did not authorize '{subject(NEVER)}' within {NEVER_SECONDS}s",
        "(clusters[0].existing.authorizationTimeoutSeconds)",
        "may still not create customresourcedefinitions.apiextensions.k8s.io",
        "Nothing was applied to this cluster",
        f"Check: give '{subject(NEVER)}' these rights in the cluster",
    ]:
        assert part in output, f"{part!r} not in the engine's output:\n{run.errors()}"
    assert "Traceback" not in output, run.tail()
    assert can_create_crds(plane, NEVER) == "no"
    # nothing of the cluster in the state: its provider never got its kubeconfig
    assert run.types() == set(), run.types()
    report(f"up with a binding that never comes: failed in {seconds:.1f}s (bound {NEVER_SECONDS}s)")


def _state(run: EngineRun) -> dict[str, dict[str, Any]]:
    """URN -> (id, inputs, outputs) of every resource in the state."""
    resources = (run.stack.export_stack().deployment or {}).get("resources") or []
    return {
        str(r["urn"]): {"id": r.get("id"), "inputs": r.get("inputs"), "outputs": r.get("outputs")}
        for r in resources
    }


def _objects(state: Mapping[str, Any]) -> list[str]:
    """The URNs of objects on a cluster (custom Kubernetes resources; not the provider)."""
    return sorted(u for u in state if "$kubernetes:" in u or "::kubernetes:" in u)


def _changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What differs: `- urn`, `+ urn`, or `~ urn: part, ...` (id, inputs, outputs)."""
    lines = [f"- {u}" for u in sorted(set(before) - set(after))]
    lines += [f"+ {u}" for u in sorted(set(after) - set(before))]
    for urn in sorted(set(before) & set(after)):
        parts = [k for k in ("id", "inputs", "outputs") if before[urn][k] != after[urn][k]]
        if parts:
            lines.append(f"~ {urn}: {', '.join(parts)}")
    return lines


def test_refresh_with_the_plane_unreachable_keeps_every_object(
    deployed: Deployed, plane: ControlPlane, report: Report
) -> None:
    cli = deployed.run.cli
    commands = shell_commands(section(UPGRADES.read_text(), REFRESH))
    assert len(commands) == 2, commands
    # The state as a refresh leaves it while the plane answers (outputs up to date).
    baseline = cli.run(["pulumi", "refresh", "--yes"])
    assert baseline.returncode == 0, (baseline.stdout + baseline.stderr)[-3000:]
    before = _state(deployed.run)
    objects = _objects(before)
    assert len(objects) > 10, sorted(before)  # CRDs, namespaces, the flavor

    lose_plane(plane, None)
    try:
        t0 = time.monotonic()
        failed = cli.run(commands[0])
        failed_seconds = time.monotonic() - t0
    finally:
        restore_plane(plane, None)
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0, output[-3000:]
    assert "unreachable cluster" in output, output[-3000:]
    kept = _changed(before, _state(deployed.run))
    assert not kept, "the failed refresh changed the state:\n" + "\n".join(kept)

    t1 = time.monotonic()
    passed = cli.run(commands[1])
    passed_seconds = time.monotonic() - t1
    assert passed.returncode == 0, (passed.stdout + passed.stderr)[-3000:]
    changed = _changed(before, _state(deployed.run))
    assert not changed, "the refresh with the plane back changed the state:\n" + "\n".join(changed)
    report(
        f"refresh with the plane unreachable: failed in {failed_seconds:.1f}s, all {len(objects)} "
        f"objects kept; with the plane back: passed in {passed_seconds:.1f}s, state unchanged"
    )
