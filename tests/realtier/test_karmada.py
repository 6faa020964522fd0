"""The dev stack's Karmada layer on a real Karmada control plane, with real Kruise members.

One Karmada plane (testkit/realtier/karmada.py: v1.18.2's four components beside its own API
server, seeded as the chart's jobs seed it) and the dev stack's two members (loopback twins with
their AKS pools as kwok nodes, the virtual node included, the real kube-scheduler and
kruise-manager v1.9.1), shared by every test of this module. On them, the objects the program
creates for the dev stack's Karmada layer, taken from its builders (join objects with
`memberAccess: scoped`, the Kruise UnitedDeployment CRD, the interpreter, the namespace, the
PropagationPolicy, the UnitedDeployment), then:

- the real karmada-scheduler divides the dev application as `preflight placement` predicts,
  and a table of (replicas, weights) cases with ties and zero shares, each its own policy with
  dispatching suspended (scheduled, not sent to members: the table costs no pods);
- each member's UnitedDeployment gets its share, Kruise makes the subsets, the pods land where
  the preview says (subset-a on normal nodes, subset-b on the virtual node);
- Karmada's UnitedDeployment status is the sum of the members' (the project's AggregateStatus),
  InterpretHealth says Healthy, a ConfigMap the pod template uses reaches the members
  (propagateDeps);
- a weight change moves replicas; deleting the objects leaves nothing on any plane;
- the scoped member credential cannot touch an unrelated kind.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from builders import applications as apps
from builders import karmada as kb
from builders import karmada_access as ka
from builders import karmada_members as km
from builders.interpreter import united_deployment_interpreter
from config.karmada import ApplicationConfig, FailoverConfig
from config.models import FleetConfig
from config.resolve import member_names, subset_specs
from testkit.realtier.crds import install_crds
from testkit.realtier.harness import ControlPlane, Report, Tools, apply, namespace
from testkit.realtier.karmada import (
    KarmadaPlane,
    KarmadaTools,
    join_members,
)
from testkit.realtier.kruise import KruiseTools, Member, running_members
from testkit.realtier.shared.karmada import (
    POLL,
    TIMEOUT,
    karmada_binding,
    karmada_json,
    karmada_scheduled,
    karmada_ud,
    kruise_values,
)
from testkit.realtier.twin import is_virtual_node
from testkit.realtier.twin_run import SimulationTools
from testkit.realtier.wait import until
from testkit.report import REPORT_KEY
from upstream.placement import divide_static_weights, plan_placement

pytestmark = [pytest.mark.real, pytest.mark.slow]

SUBSET_LABEL: Final = "apps.kruise.io/subset-name"
TABLE_NAMESPACE: Final = "placement-table"
UD_CRD: Final = "apps.kruise.io_uniteddeployments.yaml"
# (replicas, weight of worker-1, weight of worker-2): ties (equal weights, odd replicas), zero
# shares (fewer replicas than a weight ratio gives a seat), 0 replicas, large ratios.
TABLE: Final = (
    (6, 1, 2),
    (1, 1, 1),
    (3, 1, 1),
    (5, 1, 1),
    (7, 1, 1),
    (2, 1, 1),
    (0, 1, 2),
    (1, 1, 2),
    (1, 2, 1),
    (2, 1, 3),
    (1, 1, 5),
    (2, 1, 9),
    (3, 1, 9),
    (4, 3, 5),
    (10, 1, 2),
    (10, 3, 7),
    (11, 2, 3),
    (9, 4, 4),
    (13, 5, 8),
    (100, 1, 2),
    (17, 1, 1000),
    (25, 7, 3),
    (8, 5, 3),
)


# ---- fixtures: one Karmada plane, two members, the dev layer applied -----------------------------


@pytest.fixture(scope="module")
def fleet(dev_fleet: FleetConfig) -> FleetConfig:
    """dev, with the member credential scoped to what the stack propagates."""
    assert dev_fleet.karmada is not None
    return dev_fleet.model_copy(
        update={"karmada": dev_fleet.karmada.model_copy(update={"member_access": "scoped"})}
    )


@pytest.fixture(scope="module")
def app(fleet: FleetConfig) -> ApplicationConfig:
    assert fleet.karmada is not None
    return fleet.karmada.applications[0]


@dataclass
class Layer:
    """What the tests share: the Karmada plane, the members, the dev application's UID."""

    karmada: KarmadaPlane
    members: dict[str, Member]
    uid: str


@pytest.fixture(scope="module")
def layer(  # noqa: PLR0917 - pytest fixtures
    fleet: FleetConfig,
    app: ApplicationConfig,
    tools: Tools,
    simulation: SimulationTools,
    kruise_tools: KruiseTools,
    karmada_tools: KarmadaTools,
    tmp_path_factory: pytest.TempPathFactory,
    pytestconfig: pytest.Config,
) -> Iterator[Layer]:
    names = member_names(fleet)
    settings = kb.settings_of(fleet)
    work = tmp_path_factory.mktemp("karmada")
    t0 = time.monotonic()
    with running_members(
        fleet,
        names,
        tools=tools,
        sim=simulation,
        kruise=kruise_tools,
        values=kruise_values(fleet),
        workdir=work / "members",
    ) as members:
        members_up = time.monotonic() - t0
        karmada = KarmadaPlane(
            work / "karmada",
            tools,
            karmada_tools,
            kb.karmada_values(fleet, address="127.0.0.1", resource_group="realtier"),
        )
        karmada.start()
        try:
            regions = {}
            for name in names:
                cluster = fleet.cluster(name)
                regions[name] = kb.region_of(fleet, cluster) if cluster else None
            joined = join_members(
                karmada.plane,
                {n: m.plane for n, m in members.items()},
                settings,
                regions,
            )
            t1 = time.monotonic()
            plane = karmada.plane
            install_crds(plane, [kruise_tools.crd_dir / UD_CRD])
            objects = [
                united_deployment_interpreter(),
                *apps.application_namespaces(
                    settings.applications, propagate=not ka.scoped(settings)
                ),
                apps.propagation_policy(app, settings.failover),
            ]
            applied = apply(plane, objects)
            assert not applied.rejected, applied.stderr
            applied = apply(plane, [apps.united_deployment(app)])
            assert not applied.rejected, applied.stderr
            ud = karmada_ud(plane, app.namespace, app.name)
            assert ud is not None
            pytestconfig.stash[REPORT_KEY].append(
                f"Karmada v{karmada_tools.version} plane up in {karmada.started_after:.1f}s "
                f"(members with Kruise {members_up:.1f}s before it); {len(members)} members "
                f"joined (scoped credential) and Ready in {joined:.1f}s; dev layer applied in "
                f"{time.monotonic() - t1:.1f}s"
            )
            yield Layer(karmada, members, ud["metadata"]["uid"])
        finally:
            karmada.stop()


# ---- the dev application -------------------------------------------------------------------------


def _pods(plane: ControlPlane, ns: str, name: str) -> list[dict[str, Any]]:
    listing = karmada_json(
        plane, f"/api/v1/namespaces/{ns}/pods?labelSelector=app.kubernetes.io%2Fname%3D{name}"
    )
    return [
        p for p in (listing or {}).get("items") or [] if not p["metadata"].get("deletionTimestamp")
    ]


def _placement(member: Member, ns: str, name: str) -> dict[str, list[bool]] | None:
    """Subset -> [is its node virtual] of the member's running pods; None while one is unbound."""
    nodes = {n["metadata"]["name"]: n for g in member.nodes for n in g.nodes}
    out: dict[str, list[bool]] = {}
    for pod in _pods(member.plane, ns, name):
        node = pod["spec"].get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") != "Running":
            return None
        subset = pod["metadata"]["labels"].get(SUBSET_LABEL, "?")
        out.setdefault(subset, []).append(is_virtual_node(nodes[node]))
    return out


def test_scheduler_divides_the_dev_application_as_preflight_predicts(
    layer: Layer, app: ApplicationConfig, report: Report
) -> None:
    plan = plan_placement(
        app.replicas, app.propagation.weights, subset_specs(app), resource_uid=layer.uid
    )
    t0 = time.monotonic()
    karmada = layer.karmada.plane
    placed = until(
        lambda: karmada_scheduled(karmada_binding(karmada, app.namespace, app.name)),
        TIMEOUT,
        "the dev application scheduled",
        seen=lambda: karmada_binding(karmada, app.namespace, app.name),
        poll=POLL,
    )
    assert placed == dict(plan.members)
    # Each member's copy gets its share; Kruise splits it; pods land as the preview says.
    for name, member in layer.members.items():
        share = plan.members[name]
        ud = until(
            lambda m=member, s=share: (
                (u := karmada_ud(m.plane, app.namespace, app.name))
                and u["spec"]["replicas"] == s
                and u
            ),
            TIMEOUT,
            f"[{name}] UnitedDeployment with {share} replicas",
            seen=lambda m=member: karmada_ud(m.plane, app.namespace, app.name),
            poll=POLL,
        )
        assert ud["spec"]["replicas"] == share
        wanted = dict(plan.member_subsets[name])

        def landed(m: Member = member, w: Mapping[str, int] = wanted) -> dict[str, list[bool]]:
            where = _placement(m, app.namespace, app.name)
            if where is None or {k: len(v) for k, v in where.items()} != {
                k: v for k, v in w.items() if v
            }:
                return {}
            return where

        where = until(
            landed,
            TIMEOUT,
            f"[{name}] pods of {wanted}",
            seen=lambda m=member: _placement(m, app.namespace, app.name),
            poll=POLL,
        )
        assert where.get("subset-a", []) == [False] * wanted.get("subset-a", 0)
        assert where.get("subset-b", []) == [True] * wanted.get("subset-b", 0)
    report(
        f"dev application: karmada-scheduler placed {dict(placed)} as preflight predicts; "
        f"Kruise split { ({n: dict(s) for n, s in plan.member_subsets.items()}) }, pods running "
        f"(subset-a on normal nodes, subset-b on the virtual node) {time.monotonic() - t0:.1f}s "
        "after the layer was applied"
    )


def test_aggregated_status_is_the_members_sum_and_healthy(
    layer: Layer, app: ApplicationConfig
) -> None:
    """AggregateStatus on Karmada's template = the members' statuses added up; the binding's
    aggregated items say Healthy (InterpretHealth) once every pod is ready."""
    karmada = layer.karmada.plane
    counters = ("replicas", "readyReplicas", "updatedReplicas", "updatedReadyReplicas")

    def agreed() -> tuple[dict[str, Any], dict[str, int]] | None:
        template = karmada_ud(karmada, app.namespace, app.name) or {}
        members = [
            karmada_ud(m.plane, app.namespace, app.name) or {} for m in layer.members.values()
        ]
        sums = {c: sum(int((u.get("status") or {}).get(c, 0)) for u in members) for c in counters}
        status = template.get("status") or {}
        if sums["readyReplicas"] != app.replicas:
            return None
        if {c: int(status.get(c, 0)) for c in counters} != sums:
            return None
        return status, sums

    status, sums = until(
        agreed,
        TIMEOUT,
        "aggregated status = sum of the members'",
        seen=lambda: (karmada_ud(karmada, app.namespace, app.name) or {}).get("status"),
        poll=POLL,
    )
    assert sums["replicas"] == app.replicas
    subsets = {s["name"]: s["replicas"] for s in status.get("subsetStatuses") or []}
    assert sum(subsets.values()) == app.replicas, status

    def healthy() -> list[dict[str, Any]] | None:
        binding = karmada_binding(karmada, app.namespace, app.name) or {}
        items = (binding.get("status") or {}).get("aggregatedStatus") or []
        if len(items) == len(layer.members) and all(i.get("health") == "Healthy" for i in items):
            return items
        return None

    items = until(healthy, TIMEOUT, "InterpretHealth Healthy on every member", poll=POLL)
    assert {i["clusterName"] for i in items} == set(layer.members)


CONFIG_MAP: Final = "deps-config"


def test_a_configmap_the_pod_template_uses_follows_it(
    layer: Layer, app: ApplicationConfig, fleet: FleetConfig
) -> None:
    """propagateDeps (the program's policy) + GetDependencies: a second application whose pods
    read a ConfigMap; the ConfigMap reaches every member that got replicas."""
    settings = kb.settings_of(fleet)
    deps_app = app.model_copy(update={"name": "deps-ud"})
    ud = apps.united_deployment(deps_app)
    template_key = next(k for k in ud["spec"]["template"] if k.endswith("Template"))
    pod_spec = ud["spec"]["template"][template_key]["spec"]["template"]["spec"]
    pod_spec["containers"][0]["envFrom"] = [{"configMapRef": {"name": CONFIG_MAP}}]
    karmada = layer.karmada.plane
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP, "namespace": app.namespace},
        "data": {"GREETING": "hello"},
    }
    applied = apply(karmada, [config_map, apps.propagation_policy(deps_app, settings.failover), ud])
    assert not applied.rejected, applied.stderr
    path = f"/api/v1/namespaces/{app.namespace}/configmaps/{CONFIG_MAP}"
    for name, member in layer.members.items():
        got = until(
            lambda m=member: karmada_json(m.plane, path),
            TIMEOUT,
            f"[{name}] ConfigMap {CONFIG_MAP}",
            poll=POLL,
        )
        assert got["data"] == {"GREETING": "hello"}
    karmada.kubectl(
        "delete",
        "uniteddeployments.apps.kruise.io,propagationpolicies.policy.karmada.io",
        "deps-ud",
        "-n",
        app.namespace,
        "--wait=false",
    )
    karmada.kubectl("delete", "configmap", CONFIG_MAP, "-n", app.namespace, "--wait=false")


# ---- the table -----------------------------------------------------------------------------------


def _table_objects(
    index: int, replicas: int, weights: Mapping[str, int], app: ApplicationConfig
) -> list[dict[str, Any]]:
    case = app.model_copy(
        update={
            "name": f"case-{index}",
            "namespace": TABLE_NAMESPACE,
            "replicas": replicas,
            "propagation": app.propagation.model_copy(update={"weights": dict(weights)}),
        }
    )
    policy = apps.propagation_policy(case, FailoverConfig())
    # Scheduled, not dispatched: the table judges the scheduler and costs no member pods.
    policy["spec"]["suspension"] = {"dispatching": True}
    return [policy, apps.united_deployment(case)]


def test_scheduler_matches_preflight_placement_over_a_table(
    layer: Layer, app: ApplicationConfig, report: Report
) -> None:
    karmada = layer.karmada.plane
    names = sorted(layer.members)
    assert len(TABLE) >= 20
    objects: list[dict[str, Any]] = [namespace(TABLE_NAMESPACE)]
    for i, (replicas, w1, w2) in enumerate(TABLE):
        objects += _table_objects(i, replicas, dict(zip(names, (w1, w2), strict=True)), app)
    t0 = time.monotonic()
    applied = apply(karmada, objects)
    assert not applied.rejected, applied.stderr
    mismatches: list[str] = []
    ties = 0
    for i, (replicas, w1, w2) in enumerate(TABLE):
        name = f"case-{i}"
        ud = karmada_ud(karmada, TABLE_NAMESPACE, name)
        assert ud is not None
        weights = dict(zip(names, (w1, w2), strict=True))
        predicted = divide_static_weights(replicas, weights, resource_uid=ud["metadata"]["uid"])
        placed = (
            until(
                lambda n=name: karmada_scheduled(karmada_binding(karmada, TABLE_NAMESPACE, n)),
                TIMEOUT,
                f"{name} scheduled",
                seen=lambda n=name: karmada_binding(karmada, TABLE_NAMESPACE, n),
                poll=POLL,
            )
            if replicas
            else _scheduled_or_empty(karmada, name)
        )
        ties += int(w1 == w2 and replicas % 2 == 1)
        if placed != predicted:
            mismatches.append(f"{replicas} x {weights}: scheduler {placed}, preflight {predicted}")
    assert not mismatches, "\n".join(mismatches)
    report(
        f"placement table: {len(TABLE)} (replicas, weights) cases ({ties} exact ties broken by "
        f"the template UID, zero shares included) scheduled by karmada-scheduler exactly as "
        f"preflight predicts, in {time.monotonic() - t0:.1f}s"
    )


def _scheduled_or_empty(karmada: ControlPlane, name: str) -> dict[str, int]:
    """0 replicas: the scheduler still schedules (a workload with replica requirements), and
    every member gets 0, which removeZeroReplicasCluster drops."""
    return until(
        lambda: (
            (s,)
            if (s := karmada_scheduled(karmada_binding(karmada, TABLE_NAMESPACE, name))) is not None
            else None
        ),
        TIMEOUT,
        f"{name} scheduled",
        seen=lambda: karmada_binding(karmada, TABLE_NAMESPACE, name),
        poll=POLL,
    )[0]


# ---- changes, access, deletion -------------------------------------------------------------------


def test_a_weight_change_moves_replicas(
    layer: Layer, app: ApplicationConfig, fleet: FleetConfig, report: Report
) -> None:
    settings = kb.settings_of(fleet)
    karmada = layer.karmada.plane
    order = sorted(app.propagation.weights)
    # the dev weights swapped between the members: 1:2 -> 2:1
    weights = dict(zip(order, [app.propagation.weights[n] for n in reversed(order)], strict=True))
    assert weights != dict(app.propagation.weights)
    changed = app.model_copy(
        update={"propagation": app.propagation.model_copy(update={"weights": weights})}
    )
    expected = divide_static_weights(app.replicas, weights, resource_uid=layer.uid)
    t0 = time.monotonic()
    applied = apply(karmada, [apps.propagation_policy(changed, settings.failover)])
    assert not applied.rejected, applied.stderr
    # Judged on the workloads, not on pods: the subsets are StatefulSets (OrderedReady), whose
    # pods come and go only while every pod is Ready (before kwok held node leases, the node
    # controller marked them NotReady every ~55 s: twin_run.KWOK_NODE_LEASE_SECONDS).
    plan = plan_placement(app.replicas, weights, subset_specs(app), resource_uid=layer.uid)
    for name, member in layer.members.items():
        share = expected.get(name, 0)
        until(
            lambda m=member, n=name, s=share: (
                (karmada_ud(m.plane, app.namespace, app.name) or {}).get("spec", {}).get("replicas")
                == s
                and _subset_replicas(m, app) == dict(plan.member_subsets.get(n, {}))
            ),
            TIMEOUT,
            f"[{name}] UnitedDeployment and subsets at {share} after the weight change",
            seen=lambda m=member: _subset_replicas(m, app),
            poll=POLL,
        )
    report(
        f"weight change {dict(app.propagation.weights)} -> {weights}: members' "
        f"UnitedDeployments {expected}, Kruise's subsets "
        f"{ ({n: dict(v) for n, v in plan.member_subsets.items()}) } in "
        f"{time.monotonic() - t0:.1f}s"
    )


def _subset_replicas(member: Member, app: ApplicationConfig) -> dict[str, int]:
    """Subset -> spec.replicas of the StatefulSets Kruise made for the member's copy."""
    listing = karmada_json(member.plane, f"/apis/apps/v1/namespaces/{app.namespace}/statefulsets")
    out: dict[str, int] = {}
    for sts in (listing or {}).get("items") or []:
        labels = sts["metadata"].get("labels") or {}
        subset = labels.get(SUBSET_LABEL)
        mine = labels.get(apps.APP_LABEL) == app.name
        if mine and subset and not sts["metadata"].get("deletionTimestamp"):
            out[subset] = out.get(subset, 0) + int(sts["spec"].get("replicas", 0))
    return out


def _member_token(member: Member) -> str:
    secret = karmada_json(
        member.plane,
        f"/api/v1/namespaces/{km.CLUSTER_NAMESPACE}/secrets/"
        f"{km.member_service_account(member.plane.name)}",
    )
    assert secret is not None
    return base64.b64decode(secret["data"]["token"]).decode()


# (verb, resource, subresource, namespace or None for cluster scope): what the scoped member
# credential is for, and every escalation its rendered roles must deny
# (builders/karmada_access.py: SCOPED_CLUSTER_RULES, SCOPED_NAMESPACE_RULES in the applications'
# namespaces). "app" stands for the application's namespace.
Probe = tuple[str, str, str, str | None]
ALLOWED: Final[tuple[Probe, ...]] = (
    ("get", "uniteddeployments.apps.kruise.io", "", "app"),
    ("create", "uniteddeployments.apps.kruise.io", "", "app"),
    ("create", "secrets", "", "app"),  # a dependency PropagateDeps adds
    ("delete", "configmaps", "", "app"),
    ("list", "pods", "", None),  # the cluster status controller's resource summary
)
DENIED: Final[tuple[Probe, ...]] = (
    # kinds the stack does not propagate
    ("create", "jobs.batch", "", "kube-system"),
    ("create", "deployments.apps", "", "app"),
    ("create", "pods", "", "app"),
    ("create", "pods", "exec", "app"),
    ("delete", "nodes", "", None),
    # RBAC writes, in the application's namespace too
    ("create", "roles.rbac.authorization.k8s.io", "", "app"),
    ("update", "rolebindings.rbac.authorization.k8s.io", "", "app"),
    ("delete", "rolebindings.rbac.authorization.k8s.io", "", "app"),
    ("create", "rolebindings.rbac.authorization.k8s.io", "", "kube-system"),
    ("create", "clusterroles.rbac.authorization.k8s.io", "", None),
    ("patch", "clusterrolebindings.rbac.authorization.k8s.io", "", None),
    # bind and escalate (RBAC's own escalation checks)
    ("bind", "clusterroles.rbac.authorization.k8s.io", "", None),
    ("bind", "roles.rbac.authorization.k8s.io", "", "app"),
    ("escalate", "clusterroles.rbac.authorization.k8s.io", "", None),
    ("escalate", "roles.rbac.authorization.k8s.io", "", "app"),
    # impersonation
    ("impersonate", "users", "", None),
    ("impersonate", "groups", "", None),
    ("impersonate", "serviceaccounts", "", "app"),
    ("impersonate", "serviceaccounts", "", "kube-system"),
    # minting a token for a ServiceAccount (its Role names serviceaccounts, not the subresource)
    ("create", "serviceaccounts", "token", "app"),
    ("create", "serviceaccounts", "token", "kube-system"),
    # namespaces: made by the program, never by Karmada
    ("create", "namespaces", "", None),
    ("delete", "namespaces", "", None),
    ("update", "namespaces", "", None),
    # Secrets outside the applications' namespaces, and any Secret read beyond them
    ("create", "secrets", "", "kube-system"),
    ("update", "secrets", "", "kube-system"),
    ("delete", "secrets", "", "default"),
    ("get", "secrets", "", "kube-system"),
    ("list", "secrets", "", None),
    # admission and CRDs
    ("create", "mutatingwebhookconfigurations.admissionregistration.k8s.io", "", None),
    ("delete", "customresourcedefinitions.apiextensions.k8s.io", "", None),
)


def _member_kubeconfig(name: str, member: Member, path: Path) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {
                    "server": member.plane.url,
                    "certificate-authority": str(member.plane.ca_cert),
                },
            }
        ],
        "users": [{"name": "karmada", "user": {"token": _member_token(member)}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "karmada"}}],
        "current-context": name,
    }
    path.write_text(json.dumps(doc))
    return path


def _can_i(member: Member, kubeconfig: Path, probe: Probe, app_namespace: str) -> str:
    verb, resource, subresource, where = probe
    args = ["auth", "can-i", verb, resource]
    if subresource:
        args.append(f"--subresource={subresource}")
    if where is not None:
        args += ["-n", app_namespace if where == "app" else where]
    answer = member.plane.kubectl(*args, kubeconfig=kubeconfig, check=False)
    said = answer.stdout.strip()
    assert said in {"yes", "no"}, (probe, answer.stdout, answer.stderr)
    return said


def test_the_scoped_member_credential_cannot_touch_an_unrelated_kind(
    layer: Layer, app: ApplicationConfig, tmp_path: Path, report: Report
) -> None:
    """The credential Karmada holds for a member works (the tests above: status, health, sync)
    and is narrower than `karmadactl join`'s */*/*: it may do what it is for, and every
    escalation its rendered roles are meant to deny is denied by the member's API server: RBAC
    writes, bind, escalate, impersonate, `serviceaccounts/token`, namespace writes, Secrets
    outside the applications' namespaces, kinds the stack does not propagate."""
    probes = [(p, "yes") for p in ALLOWED] + [(p, "no") for p in DENIED]
    wrong: list[str] = []
    with ThreadPoolExecutor(max_workers=8) as pool:
        for name, member in layer.members.items():
            kubeconfig = _member_kubeconfig(name, member, tmp_path / f"{name}.kubeconfig")
            said = list(
                pool.map(
                    lambda p, m=member, k=kubeconfig: _can_i(m, k, p[0], app.namespace),
                    probes,
                )
            )
            wrong += [
                f"{name}: can-i {probe} said {got}, want {want}"
                for (probe, want), got in zip(probes, said, strict=True)
                if got != want
            ]
            denied = member.plane.kubectl(
                "get", "jobs.batch", "-n", "kube-system", kubeconfig=kubeconfig, check=False
            )
            assert denied.returncode != 0, denied.stdout
            assert "forbidden" in denied.stderr.lower(), denied.stderr
    assert not wrong, "\n".join(wrong)
    report(
        f"member credential: {len(ALLOWED)} allowed and {len(DENIED)} escalations denied on "
        f"each of {len(layer.members)} members (kubectl auth can-i)"
    )


def test_deleting_the_layer_leaves_nothing_on_any_plane(
    layer: Layer, app: ApplicationConfig, report: Report
) -> None:
    """The program's objects deleted in reverse order (as `pulumi destroy` does): the members'
    copies, their pods and Karmada's bindings go; the Clusters unjoin."""
    karmada = layer.karmada.plane
    t0 = time.monotonic()
    karmada.kubectl("delete", "namespace", TABLE_NAMESPACE, "--wait=false")
    karmada.kubectl("delete", "uniteddeployments.apps.kruise.io", app.name, "-n", app.namespace)
    karmada.kubectl(
        "delete", "propagationpolicies.policy.karmada.io", app.name, "-n", app.namespace
    )
    for name, member in layer.members.items():
        until(
            lambda m=member: (
                karmada_ud(m.plane, app.namespace, app.name) is None
                and not _pods(m.plane, app.namespace, app.name)
            ),
            TIMEOUT,
            f"[{name}] {app.name} and its pods gone",
            seen=lambda m=member: len(_pods(m.plane, app.namespace, app.name)),
            poll=POLL,
        )
    karmada.kubectl("delete", "clusters.cluster.karmada.io", *sorted(layer.members))
    until(
        lambda: (
            not karmada.kubectl(
                "get", "clusters.cluster.karmada.io,works.work.karmada.io", "-A", "-o", "name"
            ).stdout.split()
            and not [
                n
                for n in karmada.kubectl("get", "namespaces", "-o", "name").stdout.split()
                if n.startswith("namespace/karmada-es-")
            ]
        ),
        TIMEOUT,
        "no Cluster, Work or execution namespace left on Karmada",
        seen=lambda: (
            karmada.kubectl(
                "get",
                "clusters.cluster.karmada.io,works.work.karmada.io,namespaces",
                "-A",
                "-o",
                "name",
            ).stdout
        ),
        poll=POLL,
    )
    report(
        f"deleting the layer: nothing left on Karmada or the members in "
        f"{time.monotonic() - t0:.1f}s"
    )
