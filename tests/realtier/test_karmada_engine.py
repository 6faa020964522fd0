"""`pulumi up` / `destroy` of the dev stack's Karmada layer by the real engine, on live planes.

The planes are test_karmada.py's: a real Karmada v1.18.2 control plane
(testkit/realtier/karmada.py) and the dev stack's two members with kruise-manager running
(testkit/realtier/kruise.py). The program is the project's `__main__.py`, run as an Automation API
inline program by the cached `pulumi` CLI and `pulumi-resource-kubernetes` (test_pulumi_engine.py's
engine), on a stack that maps the dev stack's Karmada layer onto those planes:

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
layer still scales and the members' status comes back to Karmada's template; `destroy` leaves no
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
from builders import karmada_members as km
from config.karmada import ApplicationConfig
from config.models import FleetConfig
from config.resolve import member_names, subset_specs
from constants import CONFIG_KEY, PROJECT
from testkit.realtier.engine import EngineRun, configure, find_engine, kubeconfig_key, workspace
from testkit.realtier.harness import ROOT, ControlPlane, Report, Tools
from testkit.realtier.karmada import CLUSTER_NAMESPACE, KarmadaPlane, KarmadaTools
from testkit.realtier.kruise import KruiseTools, Member, running_members
from testkit.realtier.pulumi_cli import op_counts
from testkit.realtier.shared.karmada import (
    POLL,
    TIMEOUT,
    karmada_binding,
    karmada_scheduled,
    karmada_ud,
    kruise_values,
)
from testkit.realtier.twin_run import SimulationTools
from testkit.realtier.wait import until
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
# The members' status back in Karmada's template after the scale (20.5 s measured, 2 cores).
STATUS_TIMEOUT: Final = 120.0


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
        values=kruise_values(fleet),
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
    if karmada_ud(member, app.namespace, app.name) is not None:
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
    ud = karmada_ud(karmada, app.namespace, app.name)
    assert ud is not None
    plan = plan_placement(
        app.replicas,
        app.propagation.weights,
        subset_specs(app),
        resource_uid=ud["metadata"]["uid"],
    )
    assert dict(plan.members) == {"worker-1": 2, "worker-2": 4}
    placed = until(
        lambda: karmada_scheduled(karmada_binding(karmada, app.namespace, app.name)),
        TIMEOUT,
        "the dev application scheduled",
        seen=lambda: karmada_binding(karmada, app.namespace, app.name),
        poll=POLL,
    )
    assert placed == dict(plan.members)
    for name, member in planes.members.items():
        share = plan.members[name]
        until(
            lambda m=member, s=share: (
                (u := karmada_ud(m.plane, app.namespace, app.name)) and u["spec"]["replicas"] == s
            ),
            TIMEOUT,
            f"[{name}] UnitedDeployment with {share} replicas",
            seen=lambda m=member: karmada_ud(m.plane, app.namespace, app.name),
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
    name = km.token_secret_name(km.member_service_account(ROTATED), generation)
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
    scale through `up` reaches both members, and their status (every pod Ready) comes back to
    Karmada's template; if not, the message says where it stopped (members, Works, log)."""
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
    ud = karmada_ud(karmada, app.namespace, app.name)
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
                (u := karmada_ud(m.plane, app.namespace, app.name)) and u["spec"]["replicas"] == s
            ),
            TIMEOUT,
            f"[{name}] UnitedDeployment scaled to {share} after the rotation",
            seen=lambda m=m: karmada_ud(m.plane, app.namespace, app.name),
            poll=POLL,
        )

    placed_seconds = time.monotonic() - t1

    # Then the members' status comes back to Karmada's template: each member's own
    # UnitedDeployment reports its pods Ready, the restarted controller-manager's work-status
    # controller reflects it into the Works and AggregateStatus sums it. That needs the twins'
    # kwok to keep node leases (KWOK_NODE_LEASE_SECONDS): without them pods turn Ready=False.
    deadline = time.monotonic() + STATUS_TIMEOUT
    while True:
        status = (karmada_ud(karmada, app.namespace, app.name) or {}).get("status") or {}
        if int(status.get("readyReplicas", 0)) == replicas:
            break
        if time.monotonic() > deadline:
            raise AssertionError(
                f"Karmada's template reports {status.get('readyReplicas', 0)} of {replicas} "
                f"ready {STATUS_TIMEOUT:.0f}s after the scale's up; what was seen:\n"
                + status_evidence(planes, app)
            )
        time.sleep(1.0)
    back_seconds = time.monotonic() - t1
    report(
        f"karmada member rotation ({ROTATED} generation 0 -> 1, real engine): up "
        f"{rotate_seconds:.1f}s ({changes}), old token refused, new one accepted; "
        f"karmada-controller-manager restart (leading again) {restart_seconds:.1f}s; scale "
        f"{app.replicas} -> {replicas} through up placed {dict(plan.members)} on the members in "
        f"{placed_seconds:.1f}s; Karmada's template reported {replicas} ready "
        f"{back_seconds:.1f}s after that up began"
    )


# ---- what a missing status is made of ------------------------------------------------------------

WORK_API: Final = "/apis/work.karmada.io/v1alpha1"
LEASE_API: Final = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
LOG_LINES: Final = 12


def _get(plane: ControlPlane, path: str) -> dict[str, Any]:
    status, body = plane.get(path)
    return json.loads(body) if status == 200 else {}


def _ready_condition(obj: dict[str, Any]) -> dict[str, Any]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "Ready"), {})


def _member_evidence(name: str, member: ControlPlane, app: ApplicationConfig) -> list[str]:
    """The member's copy, its subsets' StatefulSets, their pods, and nodes not Ready."""
    ud = karmada_ud(member, app.namespace, app.name) or {}
    st = ud.get("status") or {}
    lines = [
        f"[{name}] UnitedDeployment generation {ud.get('metadata', {}).get('generation')} "
        f"(observed {st.get('observedGeneration')}), spec.replicas "
        f"{ud.get('spec', {}).get('replicas')}, status replicas {st.get('replicas')} ready "
        f"{st.get('readyReplicas')} updated {st.get('updatedReplicas')}, revision "
        f"{st.get('currentRevision')} -> {(st.get('updateStatus') or {}).get('updatedRevision')}"
    ]
    sets = _get(member, f"/apis/apps/v1/namespaces/{app.namespace}/statefulsets")
    for sts in sets.get("items") or []:
        spec, sst = sts.get("spec") or {}, sts.get("status") or {}
        lines.append(
            f"[{name}]   StatefulSet {sts['metadata']['name']}: spec {spec.get('replicas')}, "
            f"replicas {sst.get('replicas', 0)} ready {sst.get('readyReplicas', 0)}"
        )
    pods = _get(member, f"/api/v1/namespaces/{app.namespace}/pods")
    for pod in pods.get("items") or []:
        ready = _ready_condition(pod)
        lines.append(
            f"[{name}]   pod {pod['metadata']['name']} on {pod['spec'].get('nodeName')}: "
            f"{(pod.get('status') or {}).get('phase')}, Ready {ready.get('status')} since "
            f"{ready.get('lastTransitionTime')}"
        )
    nodes = _get(member, "/api/v1/nodes").get("items") or []
    unready = [n["metadata"]["name"] for n in nodes if _ready_condition(n).get("status") != "True"]
    leases = len(_get(member, LEASE_API).get("items") or [])
    lines.append(f"[{name}]   nodes not Ready: {unready or 'none'}; node leases {leases}")
    return lines


def _works_evidence(karmada: ControlPlane, members: list[str], app: ApplicationConfig) -> list[str]:
    """Each member's Work of the UnitedDeployment: conditions and the reflected status."""
    lines = []
    for name in members:
        works = _get(karmada, f"{WORK_API}/namespaces/karmada-es-{name}/works")
        for work in works.get("items") or []:
            manifests = (work.get("spec") or {}).get("workload", {}).get("manifests") or []
            if not any(m.get("kind") == "UnitedDeployment" for m in manifests):
                continue
            status = work.get("status") or {}
            conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
            reflected = [
                (m.get("health"), (m.get("status") or {}).get("readyReplicas"))
                for m in status.get("manifestStatuses") or []
            ]
            lines.append(
                f"[karmada] Work {work['metadata']['namespace']}/{work['metadata']['name']} "
                f"generation {work['metadata'].get('generation')}: {conditions}; reflected "
                f"(health, readyReplicas) {reflected}"
            )
    binding = karmada_binding(karmada, app.namespace, app.name) or {}
    aggregated = [
        (i.get("clusterName"), i.get("applied"), (i.get("status") or {}).get("readyReplicas"))
        for i in (binding.get("status") or {}).get("aggregatedStatus") or []
    ]
    lines.append(f"[karmada] binding (cluster, applied, readyReplicas) {aggregated}")
    return lines


def _controller_manager_tail(karmada: ControlPlane) -> list[str]:
    """karmada-controller-manager's last errors and warnings (after the restart: the same log)."""
    path = karmada.workdir / "logs" / "karmada-controller-manager.log"
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return [f"[karmada-controller-manager] no log: {exc}"]
    noted = [line for line in text.splitlines() if line[:1] in {"E", "W"}]
    return [f"[karmada-controller-manager] {line[:300]}" for line in noted[-LOG_LINES:]]


def status_evidence(planes: Planes, app: ApplicationConfig) -> str:
    """What a missing status is made of, member by member, then Karmada's side."""
    karmada = planes.karmada.plane
    ud = karmada_ud(karmada, app.namespace, app.name) or {}
    st = ud.get("status") or {}
    lines = [
        f"[karmada] template generation {ud.get('metadata', {}).get('generation')} (observed "
        f"{st.get('observedGeneration')}), status replicas {st.get('replicas')} ready "
        f"{st.get('readyReplicas')} updated {st.get('updatedReplicas')}"
    ]
    for name, member in planes.members.items():
        lines += _member_evidence(name, member.plane, app)
    lines += _works_evidence(karmada, list(planes.members), app)
    lines += _controller_manager_tail(karmada)
    return "\n".join(lines)


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
