"""`pulumi up` / `destroy` of the dev stack's Karmada layer by the real engine, on live planes.

The planes are test_karmada.py's: a real Karmada v1.18.2 control plane (tests/realtier/karmada.py)
and the dev stack's two members with kruise-manager running (tests/realtier/kruise.py). The program
is the project's `__main__.py`, run as an Automation API inline program by the cached `pulumi`
CLI and `pulumi-resource-kubernetes` (test_pulumi_engine.py's engine), on a stack that maps the
dev stack's Karmada layer onto those planes:

- the members are `source: existing` clusters (their kubeconfigs as secret config keys), with
  `karmada.kruise.install: manifests-only` (Kruise already runs there; no chart repository here)
  and `kueue.install: manifests-only` (the members carry the Kueue CRDs, no controller);
- Karmada is `source: existing` (its kubeconfig a secret config key); the UnitedDeployment CRD
  comes from the pinned local copy (.cache/crds/kruise), not raw.githubusercontent.com;
- the members get the dev stack's virtual nodes, its application and weights, `memberAccess:
  scoped`.

`up` creates the layer and the real karmada-scheduler places the application 2/4; a second `up`
changes nothing; a member credential rotation (`karmada.rotation`) passes `up`, revokes the old
token, and with the documented restart of karmada-controller-manager (docs/security.md) the
layer still scales (its status coming back is recorded, not asserted); `destroy` leaves no
Karmada object, member copy, Cluster or member credential.
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import pytest
import yaml

from builders import karmada as kb
from config.karmada import ApplicationConfig
from config.models import FleetConfig
from config.resolve import member_names, subset_specs
from constants import CONFIG_KEY, PROJECT
from tests.realtier.engine import EngineRun, configure, find_engine, kubeconfig_key, workspace
from tests.realtier.harness import ROOT, ControlPlane, Report, Tools
from tests.realtier.karmada import CLUSTER_NAMESPACE, KarmadaPlane, KarmadaTools, find_karmada
from tests.realtier.kruise import KruiseTools, Member, find_kruise, running_members
from tests.realtier.pulumi_cli import op_counts
from tests.realtier.test_karmada import (
    POLL,
    TIMEOUT,
    _binding,  # pyright: ignore[reportPrivateUsage]
    _kruise_values,  # pyright: ignore[reportPrivateUsage]
    _scheduled,  # pyright: ignore[reportPrivateUsage]
    _ud,  # pyright: ignore[reportPrivateUsage]
)
from tests.realtier.twin_run import SimulationTools
from tests.realtier.wait import until
from upstream.placement import plan_placement

pytestmark = [pytest.mark.real, pytest.mark.slow]

STACK: Final = "karmada-engine"
KARMADA: Final = "karmada"
DESTROY_TIMEOUT: Final = 180.0
GONE_TIMEOUT: Final = 60.0
# The member whose Karmada credential the rotation test turns, and by how much it then scales.
ROTATED: Final = "worker-1"
SCALE_BY: Final = 3
REVOKED_TIMEOUT: Final = 30.0
STATUS_WATCH: Final = 60.0


def engine_raw(members: list[str]) -> dict[str, Any]:
    """The stack's `fleet` value: the dev stack's Karmada layer on existing planes."""
    dev = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"][
        f"{PROJECT}:{CONFIG_KEY}"
    ]
    return {
        "kueue": {"install": "manifests-only", "version": dev["kueue"]["version"]},
        "clusters": [
            {
                "name": name,
                "role": "standalone",
                "source": "existing",
                "existing": {"kubeconfigSecret": kubeconfig_key(name)},
                # The members' twins carry the dev pools' virtual node (subset-b lands there).
                "virtualNodes": {"enabled": True},
            }
            for name in members
        ],
        "karmada": {
            "source": "existing",
            "existing": {"kubeconfigSecret": kubeconfig_key(KARMADA)},
            "memberAccess": "scoped",
            "kruise": {"install": "manifests-only"},
            "applications": dev["karmada"]["applications"],
        },
    }


@pytest.fixture(scope="module")
def karmada_tools() -> KarmadaTools:
    found, missing = find_karmada()
    if found is None:
        pytest.skip("real tier (karmada): " + "; ".join(missing))
    return found


@pytest.fixture(scope="module")
def kruise_tools() -> KruiseTools:
    found, missing = find_kruise()
    if found is None:
        pytest.skip("real tier (kruise): " + "; ".join(missing))
    return found


@pytest.fixture(scope="module")
def app(dev_fleet: FleetConfig) -> ApplicationConfig:
    assert dev_fleet.karmada is not None
    return dev_fleet.karmada.applications[0]


@dataclass
class Planes:
    karmada: KarmadaPlane
    members: dict[str, Member]


@pytest.fixture(scope="module")
def planes(  # noqa: PLR0917 - pytest fixtures
    dev_fleet: FleetConfig,
    tools: Tools,
    simulation: SimulationTools,
    kruise_tools: KruiseTools,
    karmada_tools: KarmadaTools,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Planes]:
    """A bare Karmada control plane and the dev members with Kruise running: nothing joined."""
    fleet = dev_fleet
    work = tmp_path_factory.mktemp("karmada-engine")
    with running_members(
        fleet,
        member_names(fleet),
        tools=tools,
        sim=simulation,
        kruise=kruise_tools,
        values=_kruise_values(fleet),
        workdir=work / "members",
    ) as members:
        karmada = KarmadaPlane(
            work / "karmada",
            tools,
            karmada_tools,
            kb.karmada_values(fleet, address="127.0.0.1", resource_group="realtier"),
        )
        karmada.start()
        try:
            yield Planes(karmada, members)
        finally:
            karmada.stop()


@pytest.fixture(scope="module")
def run(planes: Planes, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineRun]:
    engine, why = find_engine()
    if engine is None:
        pytest.skip(f"real tier: {why}")
    shared = workspace(STACK, tmp_path_factory.mktemp("pulumi-karmada"), engine)
    kubeconfigs = {KARMADA: planes.karmada.plane.kubeconfig} | {
        name: m.plane.kubeconfig for name, m in planes.members.items()
    }
    configure(shared, kubeconfigs, engine_raw(list(planes.members)))
    yield shared
    shared.save()


def _names(plane: ControlPlane, kinds: str, *, namespace: str | None = None) -> list[str]:
    scope = ["-n", namespace] if namespace else ["--all-namespaces"]
    out = plane.kubectl("get", kinds, *scope, "-o", "name", "--ignore-not-found").stdout
    return out.split()


def _karmada_leftovers(karmada: ControlPlane, members: list[str]) -> list[str]:
    """What the stack made on Karmada, still there."""
    found = _names(karmada, "crd")
    left = [n for n in found if "apps.kruise.io" in n]
    left += _names(
        karmada,
        "propagationpolicies.policy.karmada.io,"
        "resourceinterpretercustomizations.config.karmada.io,clusters.cluster.karmada.io",
    )
    left += [n for n in _names(karmada, "namespaces") if n == "namespace/sample"]
    secrets = _names(karmada, "secrets", namespace=CLUSTER_NAMESPACE)
    left += [s for s in secrets if any(s.startswith(f"secret/{m}") for m in members)]
    return left


def _member_leftovers(member: ControlPlane, name: str, app: ApplicationConfig) -> list[str]:
    """The member's copy of the application, or its Karmada credential, still there."""
    left = [n for n in _names(member, "namespaces") if n == f"namespace/{app.namespace}"]
    if _ud(member, app.namespace, app.name) is not None:
        left.append(f"uniteddeployment/{app.name}")
    left += [
        n
        for n in _names(member, "serviceaccounts,secrets", namespace=CLUSTER_NAMESPACE)
        if "karmada" in n
    ]
    left += [
        n
        for n in _names(member, "clusterroles,clusterrolebindings")
        if n.endswith(f"karmada-controller-manager:karmada-{name}")
    ]
    return left


def test_pulumi_up_places_the_application_and_a_second_up_is_a_noop(
    run: EngineRun, planes: Planes, app: ApplicationConfig, report: Report
) -> None:
    t0 = time.monotonic()
    up = run.stack.up(on_output=run.add, color="never")
    up_seconds = time.monotonic() - t0
    assert up.summary.result == "succeeded", run.tail()
    changes = op_counts(up.summary.resource_changes)
    reads = changes.pop("read", 0)
    assert set(changes) == {"create"}, changes
    created = changes["create"]

    karmada = planes.karmada.plane
    ud = _ud(karmada, app.namespace, app.name)
    assert ud is not None
    plan = plan_placement(
        app.replicas,
        app.propagation.weights,
        subset_specs(app),
        resource_uid=ud["metadata"]["uid"],
    )
    assert dict(plan.members) == {"worker-1": 2, "worker-2": 4}
    placed = until(
        lambda: _scheduled(_binding(karmada, app.namespace, app.name)),
        TIMEOUT,
        "the dev application scheduled",
        seen=lambda: _binding(karmada, app.namespace, app.name),
        poll=POLL,
    )
    assert placed == dict(plan.members)
    for name, member in planes.members.items():
        share = plan.members[name]
        until(
            lambda m=member, s=share: (
                (u := _ud(m.plane, app.namespace, app.name)) and u["spec"]["replicas"] == s
            ),
            TIMEOUT,
            f"[{name}] UnitedDeployment with {share} replicas",
            seen=lambda m=member: _ud(m.plane, app.namespace, app.name),
            poll=POLL,
        )
    placed_seconds = time.monotonic() - t0

    t1 = time.monotonic()
    again = run.stack.up(on_output=run.add, color="never")
    again_seconds = time.monotonic() - t1
    second = op_counts(again.summary.resource_changes)
    # `.get` reads of the members' token Secrets show as reads on every `up`.
    second.pop("read", None)
    assert second == {"same": created}, f"second up is not a no-op: {second}\n{run.tail()}"
    run.created = created
    report(
        f"pulumi up (real engine, dev Karmada layer on a live Karmada and 2 Kruise members): "
        f"{created} resources created ({reads} reads) in {up_seconds:.1f}s; UnitedDeployment "
        f"placed {dict(placed)} on the members {placed_seconds:.1f}s after up began; second up "
        f"{again_seconds:.1f}s, all {created} same"
    )


def _member_token(member: ControlPlane, generation: int) -> str | None:
    """The token in the member-side Secret of `ROTATED`'s Karmada credential at `generation`."""
    name = kb.token_secret_name(kb.member_service_account(ROTATED), generation)
    status, body = member.get(f"/api/v1/namespaces/{CLUSTER_NAMESPACE}/secrets/{name}")
    if status != 200:
        return None
    token = (json.loads(body).get("data") or {}).get("token")
    return base64.b64decode(token).decode() if token else None


def _authenticated(member: ControlPlane, token: str) -> int:
    """The HTTP status of a discovery GET with `token` (200 known, 401 refused)."""
    request = urllib.request.Request(
        member.url + "/api", headers={"Authorization": f"Bearer {token}"}
    )
    context = ssl.create_default_context(cafile=str(member.ca_cert))
    try:
        with urllib.request.urlopen(request, context=context, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_a_member_rotation_and_the_documented_restart_keep_propagation_working(
    run: EngineRun, planes: Planes, app: ApplicationConfig, report: Report
) -> None:
    """`karmada.rotation.worker-1: 1`: `up` mints the new token, points the Cluster at it and
    revokes the old one; then the step docs/security.md tells the operator to take (restart
    karmada-controller-manager: its per-member informers hold the token of their start); then a
    scale through `up` reaches both members. Whether their status then comes back to Karmada's
    template is recorded, not asserted (see the comment below)."""
    if run.created is None:
        pytest.skip("pulumi up did not pass: nothing to rotate")
    member = planes.members[ROTATED].plane
    old = _member_token(member, 0)
    assert old is not None, "no generation-0 token on the member before the rotation"
    raw = engine_raw(list(planes.members))
    raw["karmada"]["rotation"] = {ROTATED: 1}
    configure(run, {}, raw)

    t0 = time.monotonic()
    rotated = run.up()
    rotate_seconds = time.monotonic() - t0
    changes = op_counts(rotated.summary.resource_changes)
    changes.pop("read", None)
    # New token Secrets (created or replacing, by the provider's choice), the Cluster updated.
    assert set(changes) - {"same"}, f"the rotation up changed nothing: {changes}"
    new = _member_token(member, 1)
    assert new is not None, "the rotation up left no generation-1 token on the member"
    assert new != old
    assert _authenticated(member, new) == 200
    until(
        lambda: _authenticated(member, old) == 401,
        REVOKED_TIMEOUT,
        "the old member token refused (401)",
        seen=lambda: f"it answers {_authenticated(member, old)}",
        poll=0.5,
    )

    restart_seconds = planes.karmada.restart_controller_manager()

    replicas = app.replicas + SCALE_BY
    raw["karmada"]["applications"][0]["replicas"] = replicas
    configure(run, {}, raw)
    t1 = time.monotonic()
    run.up()
    karmada = planes.karmada.plane
    ud = _ud(karmada, app.namespace, app.name)
    assert ud is not None
    plan = plan_placement(
        replicas,
        app.propagation.weights,
        subset_specs(app),
        resource_uid=ud["metadata"]["uid"],
    )
    for name, m in planes.members.items():
        share = plan.members[name]
        until(
            lambda m=m, s=share: (
                (u := _ud(m.plane, app.namespace, app.name)) and u["spec"]["replicas"] == s
            ),
            TIMEOUT,
            f"[{name}] UnitedDeployment scaled to {share} after the rotation",
            seen=lambda m=m: _ud(m.plane, app.namespace, app.name),
            poll=POLL,
        )

    placed_seconds = time.monotonic() - t1

    # Observed, not asserted: whether Karmada's template then reports the members' status.
    # It did in 1 of 3 runs on 2026-12-04 (9 ready 20.5 s after the scale's up); in the other
    # two its readyReplicas stayed 0 for 180 s after the restart, for both members (worker-2's
    # token never rotated). Not understood yet: docs/security.md says so, and the line below
    # records what this run saw.
    deadline = time.monotonic() + STATUS_WATCH
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = (_ud(karmada, app.namespace, app.name) or {}).get("status") or {}
        if int(status.get("readyReplicas", 0)) == replicas:
            break
        time.sleep(1.0)
    ready = int(status.get("readyReplicas", 0))
    members_ready = {
        n: int(
            ((_ud(m.plane, app.namespace, app.name) or {}).get("status") or {}).get(
                "readyReplicas", 0
            )
        )
        for n, m in planes.members.items()
    }
    seen = (
        f"reported {ready} ready {time.monotonic() - t1:.1f}s after that up began"
        if ready == replicas
        else f"reported {ready} of {replicas} ready after {STATUS_WATCH:.0f}s (NOT BACK; "
        f"members' own readyReplicas {members_ready})"
    )
    report(
        f"karmada member rotation ({ROTATED} generation 0 -> 1, real engine): up "
        f"{rotate_seconds:.1f}s ({changes}), old token refused, new one accepted; "
        f"karmada-controller-manager restart (leading again) {restart_seconds:.1f}s; scale "
        f"{app.replicas} -> {replicas} through up placed {dict(plan.members)} on the members in "
        f"{placed_seconds:.1f}s; Karmada's template {seen}"
    )


def test_pulumi_destroy_leaves_nothing_on_any_plane(
    run: EngineRun, planes: Planes, app: ApplicationConfig, report: Report
) -> None:
    if run.created is None:
        pytest.skip("pulumi up did not pass: nothing to judge destroy on")
    t0 = time.monotonic()
    result = run.stack.destroy(on_output=run.add, color="never")
    seconds = time.monotonic() - t0
    assert result.summary.result == "succeeded", run.tail()
    gone = op_counts(result.summary.resource_changes)
    gone.pop("discard", None)  # the reads leave the state without a delete
    assert gone == {"delete": run.created}, gone
    assert seconds < DESTROY_TIMEOUT, seconds

    karmada = planes.karmada.plane
    names = list(planes.members)

    def leftovers() -> dict[str, list[str]]:
        found = {KARMADA: _karmada_leftovers(karmada, names)}
        found |= {n: _member_leftovers(m.plane, n, app) for n, m in planes.members.items()}
        return {k: v for k, v in found.items() if v}

    # Karmada removes the members' copies (and their namespace) after their Works go: async.
    until(
        lambda: not leftovers(),
        GONE_TIMEOUT,
        "nothing left behind after destroy",
        seen=leftovers,
        poll=0.5,
    )
    report(
        f"pulumi destroy: {gone['delete']} deleted in {seconds:.1f}s; no Karmada object, member "
        f"copy, Cluster or member credential left {time.monotonic() - t0:.1f}s after it began"
    )
