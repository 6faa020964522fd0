"""`karmada.failover` on a real Karmada control plane: a stopped member's replicas move.

Own planes (the Failover gate and the eviction flag are start-up flags of the controller
manager): a Karmada plane started with the values the program renders for dev with
`failover: {enabled: true, tolerationSeconds: 0}`, the dev stack's two members with Kruise, the
ClusterTaintPolicy and the dev application's PropagationPolicy from the builders. Then one member
is stopped (its API server, controller manager and Kruise gone, as a lost cluster is): Karmada
marks it not Ready, the ClusterTaintPolicy taints it NoExecute, the taint manager evicts the
binding from it (purgeMode Gracefully) and the scheduler gives all replicas to the other member.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, Final

import pytest

from builders import applications as apps
from builders import karmada as kb
from builders import karmada_access as ka
from builders.interpreter import united_deployment_interpreter
from builders.kruise import CHART as KRUISE_CHART
from config.karmada import FailoverConfig
from config.models import FleetConfig
from config.resolve import member_names
from preflight.sources import collect
from testkit.realtier.crds import install_crds
from testkit.realtier.harness import ControlPlane, Report, Tools, apply
from testkit.realtier.karmada import KarmadaPlane, find_karmada, join_members
from testkit.realtier.kruise import Member, find_kruise, running_members
from testkit.realtier.twin_run import find_simulation_tools

pytestmark = [pytest.mark.real, pytest.mark.slow]

UD_API: Final = "/apis/apps.kruise.io/v1alpha1"
RB_API: Final = "/apis/work.karmada.io/v1alpha2"
# About 30 s from the stop to the move on 2 shared cores (10 s status period, then the NotReady
# taint, no toleration); the margin is a busy machine.
MOVE_TIMEOUT: Final = 240.0
STOPPED: Final = "worker-1"


def _json(plane: ControlPlane, path: str) -> dict[str, Any] | None:
    status, body = plane.get(path)
    return json.loads(body) if status == 200 else None


@pytest.fixture(scope="module")
def failover_fleet(dev_fleet: FleetConfig) -> FleetConfig:
    assert dev_fleet.karmada is not None
    karmada = dev_fleet.karmada.model_copy(
        update={
            "member_access": "scoped",
            "failover": FailoverConfig.model_validate({"enabled": True, "tolerationSeconds": 0}),
        }
    )
    return dev_fleet.model_copy(update={"karmada": karmada})


@pytest.fixture(scope="module")
def running(
    failover_fleet: FleetConfig,
    tools: Tools,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[KarmadaPlane, dict[str, Member]]]:
    karmada_tools, missing = find_karmada()
    kruise_tools, missing_kruise = find_kruise()
    sim, missing_sim = find_simulation_tools()
    if karmada_tools is None or kruise_tools is None or sim is None:
        pytest.skip("real tier: " + "; ".join(missing + missing_kruise + missing_sim))
    fleet = failover_fleet
    settings = kb.settings_of(fleet)
    _, releases = collect(fleet)
    values = {r.target: dict(r.values) for r in releases if r.chart == KRUISE_CHART}
    work = tmp_path_factory.mktemp("karmada-failover")
    with running_members(
        fleet,
        member_names(fleet),
        tools=tools,
        sim=sim,
        kruise=kruise_tools,
        values=values,
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
            join_members(
                karmada.plane,
                {n: m.plane for n, m in members.items()},
                settings,
                dict.fromkeys(members),
            )
            install_crds(
                karmada.plane, [kruise_tools.crd_dir / "apps.kruise.io_uniteddeployments.yaml"]
            )
            yield karmada, members
        finally:
            karmada.stop()


def test_a_stopped_members_replicas_move(
    running: tuple[KarmadaPlane, dict[str, Member]],
    failover_fleet: FleetConfig,
    report: Report,
) -> None:
    karmada, members = running
    settings = kb.settings_of(failover_fleet)
    app = settings.applications[0]
    plane = karmada.plane
    applied = apply(
        plane,
        [
            united_deployment_interpreter(),
            apps.cluster_taint_policy(member_names(failover_fleet)),
            *apps.application_namespaces(settings.applications, propagate=not ka.scoped(settings)),
            apps.propagation_policy(app, settings.failover),
        ],
    )
    assert not applied.rejected, applied.stderr
    applied = apply(plane, [apps.united_deployment(app)])
    assert not applied.rejected, applied.stderr
    binding = f"{RB_API}/namespaces/{app.namespace}/resourcebindings/{app.name}-uniteddeployment"

    def clusters() -> dict[str, int]:
        rb = _json(plane, binding) or {}
        return {
            c["name"]: c.get("replicas", 0) for c in (rb.get("spec") or {}).get("clusters") or []
        }

    deadline = time.monotonic() + MOVE_TIMEOUT
    while set(clusters()) != set(members):
        assert time.monotonic() < deadline, f"not scheduled on both members: {clusters()}"
        time.sleep(0.5)
    before = clusters()
    survivor = next(n for n in members if n != STOPPED)
    # The lost member: Kruise, then its plane (API server gone: Karmada cannot reach it).
    lost = members[STOPPED]
    if lost.kruise is not None:
        lost.kruise.stop()
    lost.plane.stop()
    t0 = time.monotonic()
    while clusters() != {survivor: app.replicas}:
        assert time.monotonic() - t0 < MOVE_TIMEOUT, (
            f"replicas did not move off {STOPPED}: {clusters()}"
        )
        time.sleep(0.5)
    moved = time.monotonic() - t0
    path = f"{UD_API}/namespaces/{app.namespace}/uniteddeployments/{app.name}"
    while ((_json(members[survivor].plane, path) or {}).get("spec") or {}).get(
        "replicas"
    ) != app.replicas:
        assert time.monotonic() - t0 < MOVE_TIMEOUT, _json(members[survivor].plane, path)
        time.sleep(0.5)
    report(
        f"failover (tolerationSeconds 0, purgeMode {settings.failover.purge_mode}): {STOPPED} "
        f"stopped, binding {before} -> {{{survivor!r}: {app.replicas}}} after {moved:.1f}s; "
        f"{survivor}'s UnitedDeployment at {app.replicas} replicas after "
        f"{time.monotonic() - t0:.1f}s"
    )
