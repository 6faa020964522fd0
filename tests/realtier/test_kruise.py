"""The real kruise-manager on the dev stack's Karmada members: subsets, pods, status, webhook.

The real tier runs OpenKruise v1.9.1 (the v1.9.0 release tag plus one fix; the module proxy's
"v1.9.0" is a master commit with other CRD storage versions), built by
scripts/build-real-tier-tools. First: its CRDs are byte for byte the pinned 1.9.0 ones the
project's schemas and deployed chart use. Then, per Karmada member of the dev stack (its AKS pools
as kwok nodes, the virtual node included, the real kube-scheduler, kube-controller-manager with
the StatefulSet controller), kruise-manager with the chart values the program renders for that
member (testkit/realtier/kruise.py: what the chart creates, its webhooks pointed at loopback).

The dev application's UnitedDeployment, as the program renders it, with the share Karmada's
ReviseReplica gives each member (`preflight placement`'s plan, 2 and 4), is applied to each
member as Karmada's Work would (spec.replicas revised, the template-generation annotation).
Asserted: Kruise creates one StatefulSet per subset with the planned replicas; the real scheduler
binds subset-a's pods to normal nodes and subset-b's to the virtual node (kwok runs them); the
member's status counts them ready; the project's Lua ReflectStatus/AggregateStatus/InterpretHealth
(run on Lua 5.1 by the offline tests' VM double) make Karmada's status the sum and call each
member healthy. Then Kruise's validating webhook judges placement changes the program can render:
every one it refuses must be one the program replaces (SUBSET_PLACEMENT_PATHS, matched as Pulumi
matches replaceOnChanges against the provider's detailed diff), and a replacement (delete, create)
moves the pods.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from builders.applications import SUBSET_PLACEMENT_PATHS, united_deployment
from builders.kruise import CHART as KRUISE_CHART
from config.karmada import ApplicationConfig
from config.models import FleetConfig
from config.resolve import member_names, subset_specs
from preflight.sources import collect
from testkit import crdschema
from testkit.lua_kube import LuaInterpreter
from testkit.realtier.harness import (
    ROOT,
    ControlPlane,
    Report,
    StartError,
    Tools,
    build_command,
    namespace,
    stop_each,
)
from testkit.realtier.kruise import (
    MUTATING,
    VALIDATING,
    KruiseManager,
    KruiseTools,
    Member,
    chart_webhook_configurations,
    find_module,
    running_members,
    start_kruise,
)
from testkit.realtier.twin import VIRTUAL_NODE_NAME, is_virtual_node
from testkit.realtier.twin_run import SimulationTools
from testkit.realtier.wait import until
from testkit.report import REPORT_KEY
from upstream.karmada import DEFAULT_KRUISE_CHART_VERSION
from upstream.placement import PlacementPlan, plan_placement

pytestmark = pytest.mark.real

UD_API: Final = "/apis/apps.kruise.io/v1alpha1"
SUBSET_LABEL: Final = "apps.kruise.io/subset-name"  # apis/apps/v1alpha1/well_known_labels.go
TEMPLATE_GENERATION: Final = "resourcetemplate.karmada.io/generation"
ROLLOUT_TIMEOUT: Final = 180.0
POLL: Final = 0.5


# ---- the CRDs -----------------------------------------------------------------------------------


def _pinned_kruise_files() -> dict[str, str]:
    pins = json.loads((ROOT / "scripts" / "crd-pins.json").read_text())
    entry = pins["projects"]["kruise"][f"v{DEFAULT_KRUISE_CHART_VERSION}"]
    return {name: str(spec["sha256"]) for name, spec in entry["files"].items()}


def test_the_built_release_has_the_pinned_crds() -> None:
    """v1.9.1's config/crd/bases hold, byte for byte, the 1.9.0 CRDs the project pins (and its
    schema tests and the Karmada API server use): UnitedDeployment and CloneSet, each with
    v1alpha1 as its only, stored version (the proxy's "v1.9.0" stores v1beta1)."""
    module = find_module()
    if module is None:
        pytest.skip(
            f"real tier (kruise): module source not downloaded ({build_command(['kruise'])})"
        )
    crd_dir = module / "config" / "crd" / "bases"
    pinned = _pinned_kruise_files()
    assert set(pinned) >= {"apps.kruise.io_uniteddeployments.yaml", "apps.kruise.io_clonesets.yaml"}
    schemas = crdschema.schema_dir("kruise", f"v{DEFAULT_KRUISE_CHART_VERSION}")
    for name, sha in pinned.items():
        built = (crd_dir / name).read_bytes()
        assert hashlib.sha256(built).hexdigest() == sha, f"{name} of {module.name} differs"
        assert built == (schemas / name).read_bytes(), name
        versions = yaml.safe_load(built)["spec"]["versions"]
        assert [(v["name"], v["served"], v["storage"]) for v in versions] == [
            ("v1alpha1", True, True)
        ], name


def test_kruise_manager_needs_every_crd_of_its_release(
    tools: Tools, kruise_tools: KruiseTools, dev_fleet: FleetConfig, tmp_path: Path
) -> None:
    """Only the CRDs the project pins (UnitedDeployment, CloneSet) are not enough for a real
    kruise-manager: with the chart's default gate ImagePullJobGate=true it registers field
    indexes on ImagePullJob at start and exits without that CRD. A member whose Kruise CRDs are
    installed by something other than the chart needs all of config/crd/bases (start_kruise's
    default), not the pinned pair."""
    schemas = crdschema.schema_dir("kruise", f"v{DEFAULT_KRUISE_CHART_VERSION}")
    pinned = [schemas / name for name in sorted(_pinned_kruise_files())]
    plane = ControlPlane("kruise-crds", tmp_path / "plane", tools)
    values = kruise_values(dev_fleet)["worker-1"]
    started: list[KruiseManager] = []

    def start() -> None:
        started.append(start_kruise(plane, kruise_tools, tmp_path / "k", values, crds=pinned))

    try:
        plane.start()
        with pytest.raises(StartError, match=r"no matches for kind .*ImagePullJob"):
            start()
    finally:
        stop_each([*started, plane], "kruise-manager and its plane")


# ---- the members ------------------------------------------------------------------------------


def kruise_values(fleet: FleetConfig) -> dict[str, dict[str, Any]]:
    """Member -> the values of the kruise HelmRelease the program renders for it."""
    _, releases = collect(fleet)
    return {r.target: dict(r.values) for r in releases if r.chart == KRUISE_CHART}


@pytest.fixture(scope="module")
def dev_app(dev_fleet: FleetConfig) -> ApplicationConfig:
    assert dev_fleet.karmada is not None
    return dev_fleet.karmada.applications[0]


@pytest.fixture(scope="module")
def plan(dev_app: ApplicationConfig) -> PlacementPlan:
    """What `preflight placement` predicts (Karmada's division, then Kruise's per member)."""
    return plan_placement(dev_app.replicas, dev_app.propagation.weights, subset_specs(dev_app))


@pytest.fixture(scope="module")
def members(  # noqa: PLR0917 - pytest fixtures
    dev_fleet: FleetConfig,
    tools: Tools,
    simulation: SimulationTools,
    kruise_tools: KruiseTools,
    tmp_path_factory: pytest.TempPathFactory,
    pytestconfig: pytest.Config,
) -> Iterator[dict[str, Member]]:
    names = member_names(dev_fleet)
    values = kruise_values(dev_fleet)
    assert set(values) == set(names), "the program installs Kruise on every member"
    t0 = time.monotonic()
    with running_members(
        dev_fleet,
        names,
        tools=tools,
        sim=simulation,
        kruise=kruise_tools,
        values=values,
        workdir=tmp_path_factory.mktemp("kruise-members"),
    ) as running:
        pytestconfig.stash[REPORT_KEY].append(
            f"{len(running)} Karmada members with kruise-manager v{kruise_tools.version} up in "
            f"{time.monotonic() - t0:.1f}s ("
            + ", ".join(
                f"{n}: {sum(len(g.nodes) for g in m.nodes)} nodes, kruise ready "
                f"{m.kruise.started_after:.1f}s after launch"
                for n, m in running.items()
                if m.kruise is not None
            )
            + ")"
        )
        yield running


def _json(plane: ControlPlane, path: str) -> dict[str, Any] | None:
    status, body = plane.get(path)
    return json.loads(body) if status == 200 else None


def member_copy(app: ApplicationConfig, share: int, generation: int = 1) -> dict[str, Any]:
    """The UnitedDeployment as Karmada's Work applies it to a member: the program's object with
    spec.replicas revised to the member's share and the resource template's generation."""
    obj = united_deployment(app)
    obj["spec"]["replicas"] = share
    obj["metadata"]["annotations"] = {TEMPLATE_GENERATION: str(generation)}
    return obj


def _apply_ud(plane: ControlPlane, obj: dict[str, Any], *, dry_run: bool = False) -> Any:
    args = ["apply", "--server-side", "--field-manager=karmada-work", "-f", "-"]
    if dry_run:
        args.insert(2, "--dry-run=server")
    return plane.kubectl(*args, stdin=json.dumps(obj), check=False)


def _ud(plane: ControlPlane, app: ApplicationConfig) -> dict[str, Any] | None:
    return _json(plane, f"{UD_API}/namespaces/{app.namespace}/uniteddeployments/{app.name}")


def _pods(plane: ControlPlane, app: ApplicationConfig) -> list[dict[str, Any]]:
    listing = _json(
        plane,
        f"/api/v1/namespaces/{app.namespace}/pods?labelSelector=app.kubernetes.io%2Fname%3D{app.name}",
    )
    return (listing or {}).get("items") or []


def _rolled_out(plane: ControlPlane, app: ApplicationConfig, share: int) -> dict[str, Any] | None:
    """The member's UD once Kruise saw this generation and every pod is ready."""
    ud = _ud(plane, app)
    if ud is None:
        return None
    status = ud.get("status") or {}
    done = (
        status.get("observedGeneration") == ud["metadata"]["generation"]
        and status.get("replicas", 0) == share
        and status.get("readyReplicas", 0) == share
        and status.get("updatedReadyReplicas", 0) == share
        and len([p for p in _pods(plane, app) if not p["metadata"].get("deletionTimestamp")])
        == share
    )
    return ud if done else None


def _placement(member: Member, app: ApplicationConfig) -> dict[str, list[tuple[str, bool]]]:
    """Subset -> [(node, is virtual)] of the member's pods."""
    nodes = {n["metadata"]["name"]: n for g in member.nodes for n in g.nodes}
    out: dict[str, list[tuple[str, bool]]] = {}
    for pod in _pods(member.plane, app):
        if pod["metadata"].get("deletionTimestamp"):
            continue
        subset = pod["metadata"]["labels"].get(SUBSET_LABEL, "?")
        node = pod["spec"].get("nodeName") or ""
        out.setdefault(subset, []).append((node, node in nodes and is_virtual_node(nodes[node])))
    return out


@pytest.fixture(scope="module")
def deployed(
    members: dict[str, Member],
    dev_app: ApplicationConfig,
    plan: PlacementPlan,
    pytestconfig: pytest.Config,
) -> dict[str, dict[str, Any]]:
    """The dev application on every member, rolled out: member -> its live UnitedDeployment."""
    t0 = time.monotonic()
    for name, member in members.items():
        member.plane.kubectl("apply", "-f", "-", stdin=json.dumps(namespace(dev_app.namespace)))
        result = _apply_ud(member.plane, member_copy(dev_app, plan.members[name]))
        assert result.returncode == 0, result.stderr
    live = {
        name: until(
            lambda m=member, n=name: _rolled_out(m.plane, dev_app, plan.members[n]),
            ROLLOUT_TIMEOUT,
            f"[{name}] {dev_app.name} rolled out with {plan.members[name]} pods",
            seen=lambda m=member: (_ud(m.plane, dev_app) or {}).get("status"),
            poll=POLL,
        )
        for name, member in members.items()
    }
    pytestconfig.stash[REPORT_KEY].append(
        f"dev application {dev_app.name}: {sum(plan.members.values())} pods ready on "
        f"{len(members)} members in {time.monotonic() - t0:.1f}s ("
        + ", ".join(f"{n}: {dict(plan.member_subsets[n])}" for n in members)
        + ")"
    )
    return live


def test_kruise_serves_its_webhooks_on_loopback(
    members: dict[str, Member], dev_fleet: FleetConfig, kruise_tools: KruiseTools
) -> None:
    """Every webhook of the chart's configurations now calls this member's kruise-manager with
    Kruise's CA, and the program's AKS selectors (aksIntegration) are kept."""
    values = kruise_values(dev_fleet)
    for name, member in members.items():
        assert member.kruise is not None
        expected = {
            w["name"]
            for doc in chart_webhook_configurations(kruise_tools.webhook_manifests, values[name])
            for w in doc["webhooks"]
        }
        urls = member.kruise.webhook_urls()
        # Kruise keeps only the webhooks whose handler its feature gates enable
        # (pkg/webhook/server.go filterActiveHandlers); the ones the project meets are on.
        assert set(urls) <= expected
        assert set(urls) >= {"mpod.kb.io", "muniteddeployment.kb.io", "vuniteddeployment.kb.io"}
        assert member.kruise.webhooks_point_here()
        mutating = _json(
            member.plane,
            f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{MUTATING}",
        )
        assert mutating is not None
        ud_hook = next(w for w in mutating["webhooks"] if w["name"] == "muniteddeployment.kb.io")
        keys = {e["key"] for e in ud_hook["namespaceSelector"]["matchExpressions"]}
        aks = values[name]["webhookConfiguration"]["aksIntegration"]
        assert ("kubernetes.azure.com/managedby" in keys) is bool(aks)
        assert aks is True, "dev members are AKS clusters: the program sets aksIntegration"
        assert (
            VALIDATING
            in member.kruise.plane.kubectl(
                "get", "validatingwebhookconfigurations", "-o", "name"
            ).stdout
        )


def test_subsets_land_where_the_preview_says(
    members: dict[str, Member],
    deployed: dict[str, dict[str, Any]],
    dev_app: ApplicationConfig,
    plan: PlacementPlan,
) -> None:
    """Kruise made one StatefulSet per subset with the planned replicas; subset-a's pods run on
    normal nodes, subset-b's on the virtual node; the member's status counts them."""
    assert dict(plan.members) == {"worker-1": 2, "worker-2": 4}
    virtual = {s.name: bool(s.virtual_nodes) for s in dev_app.subsets}
    assert virtual == {"subset-a": False, "subset-b": True}
    for name, member in members.items():
        expected = dict(plan.member_subsets[name])
        status = deployed[name]["status"]
        assert status["subsetReplicas"] == expected, name
        assert {s["name"]: s["replicas"] for s in status["subsetStatuses"]} == expected
        assert {s["name"]: s.get("readyReplicas", 0) for s in status["subsetStatuses"]} == expected
        sets = _json(member.plane, f"/apis/apps/v1/namespaces/{dev_app.namespace}/statefulsets")
        by_subset = {
            s["metadata"]["labels"][SUBSET_LABEL]: s["spec"]["replicas"]
            for s in (sets or {}).get("items") or []
        }
        assert by_subset == expected, name
        placement = _placement(member, dev_app)
        assert {k: len(v) for k, v in placement.items()} == expected, placement
        for subset, pods in placement.items():
            for node, on_virtual in pods:
                assert on_virtual is virtual[subset], f"[{name}] {subset} pod on {node}"
                assert (node == VIRTUAL_NODE_NAME) is virtual[subset]
                if not on_virtual:
                    assert member.node_pool(node) is not None, node


@pytest.fixture(scope="module")
def lua() -> LuaInterpreter:
    from builders.interpreter import united_deployment_interpreter  # noqa: PLC0415

    ric = united_deployment_interpreter()
    return LuaInterpreter({k: v["luaScript"] for k, v in ric["spec"]["customizations"].items()})


def test_karmada_status_is_the_sum_of_the_real_members(
    deployed: dict[str, dict[str, Any]],
    dev_app: ApplicationConfig,
    plan: PlacementPlan,
    lua: LuaInterpreter,
) -> None:
    """The project's interpreter on the real members' objects: ReflectStatus of each, then
    AggregateStatus on the resource template, and InterpretHealth of each member."""
    template = united_deployment(dev_app)
    template["metadata"]["generation"] = 1
    items = [
        {
            "clusterName": name,
            "status": lua.reflect_status(obj),
            "applied": True,
            "health": "Healthy",
        }
        for name, obj in deployed.items()
    ]
    for name, obj in deployed.items():
        assert lua.interpret_health(obj) is True, f"{name}: {obj['status']}"
    aggregated = lua.aggregate_status(template, items)
    status = aggregated["status"]
    total = dev_app.replicas
    assert status["observedGeneration"] == 1
    assert status["replicas"] == status["readyReplicas"] == total
    assert status["updatedReplicas"] == status["updatedReadyReplicas"] == total
    assert status["subsetReplicas"] == dict(plan.subsets)
    assert {s["name"]: s["readyReplicas"] for s in status["subsetStatuses"]} == dict(plan.subsets)
    revisions = {obj["status"]["currentRevision"] for obj in deployed.values()}
    assert len(revisions) == 1, "Kruise hashes spec.template only: members agree"
    assert status["currentRevision"] == revisions.pop()
    crdschema.assert_valid(aggregated, "kruise", f"v{DEFAULT_KRUISE_CHART_VERSION}")


# ---- placement changes against the real webhook -------------------------------------------------


def _variant(app: ApplicationConfig, change: Callable[[list[dict[str, Any]]], None]) -> Any:
    raw = app.model_dump(mode="json", by_alias=True, exclude_none=True)
    change(raw["subsets"])
    return ApplicationConfig.model_validate(raw)


def _set(index: int, **fields: Any) -> Callable[[list[dict[str, Any]]], None]:
    def change(subsets: list[dict[str, Any]]) -> None:
        subsets[index].update(fields)

    return change


def _swap_names(subsets: list[dict[str, Any]]) -> None:
    subsets[0]["name"], subsets[1]["name"] = subsets[1]["name"], subsets[0]["name"]


def _reorder(subsets: list[dict[str, Any]]) -> None:
    subsets.reverse()


def _add(subsets: list[dict[str, Any]]) -> None:
    subsets.append({"name": "subset-c", "replicas": 0, "virtualNodes": True})


def _drop_last(subsets: list[dict[str, Any]]) -> None:
    subsets.pop()
    subsets[0].pop("replicas", None)


ACI_TOLERATION: Final = {"key": "azure.com/aci", "operator": "Exists", "effect": "NoSchedule"}
# (id, change of the config's subsets, does Kruise v1.9.x refuse it as an update?)
CHANGES: Final[list[tuple[str, Callable[[list[dict[str, Any]]], None], bool]]] = [
    ("subset replicas", _set(0, replicas="34%"), False),
    ("virtualNodes on", _set(0, virtualNodes=True), True),
    ("virtualNodes unset", _set(0, virtualNodes=None), True),
    ("toleration added", _set(1, tolerations=[ACI_TOLERATION]), True),
    (
        "nodeSelectorTerm added",
        _set(
            0,
            nodeSelectorTerm={
                "matchExpressions": [
                    {"key": "kubernetes.azure.com/agentpool", "operator": "In", "values": ["batch"]}
                ]
            },
        ),
        True,
    ),
    ("subset added", _add, False),
    ("last subset removed", _drop_last, False),
    ("subsets reordered", _reorder, False),
    ("subset names swapped", _swap_names, True),
]


def diff_paths(old: Any, new: Any, path: str = "") -> list[str]:
    """The detailed-diff paths pulumi-kubernetes reports between old and new inputs
    (provider/pkg/provider/provider.go addPatchValueToDiff: maps key by key, lists index by
    index, an added or removed key or element at its own path)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            child = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new:
                out.append(child)
            else:
                out += diff_paths(old[key], new[key], child)
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = []
        for i in range(max(len(old), len(new))):
            child = f"{path}[{i}]"
            if i >= len(old) or i >= len(new):
                out.append(child)
            else:
                out += diff_paths(old[i], new[i], child)
        return out
    return [] if old == new else [path]


def _split(path: str) -> list[str]:
    return [part for part in path.replace("[", ".").replace("]", "").split(".") if part]


def replaces(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether `pulumi up` replaces the UnitedDeployment: some detailed-diff path lies under a
    replaceOnChanges path (pulumi resource.PropertyPath.Contains: `*` matches any element)."""
    patterns = [_split(p.replace("[*]", ".*")) for p in SUBSET_PLACEMENT_PATHS]
    for changed in diff_paths(old, new):
        parts = _split(changed)
        for pattern in patterns:
            if len(parts) >= len(pattern) and all(
                p in ("*", q) for p, q in zip(pattern, parts, strict=False)
            ):
                return True
    return False


def test_diff_paths_follow_the_provider() -> None:
    old = {"a": [{"x": 1, "y": [1]}, {"x": 2}], "b": 1}
    new = {"a": [{"x": 1, "y": [1, 2]}, {"x": 3}, {"x": 4}], "c": 1}
    assert diff_paths(old, new) == ["a[0].y[1]", "a[1].x", "a[2]", "b", "c"]


@pytest.mark.parametrize(("change", "refused"), [pytest.param(c, r, id=i) for i, c, r in CHANGES])
def test_every_update_kruise_refuses_is_a_replacement(  # noqa: PLR0917 - pytest fixtures
    members: dict[str, Member],
    deployed: dict[str, dict[str, Any]],
    dev_app: ApplicationConfig,
    plan: PlacementPlan,
    change: Callable[[list[dict[str, Any]]], None],
    refused: bool,
) -> None:
    """The real webhook's verdict on the change as an update (server-side dry run on a member),
    and the program's: a refused update must be a replacement, or Karmada's Work would fail in
    every member while `pulumi up` reports success."""
    del deployed  # the UnitedDeployment must exist: an update, not a create
    new_app = _variant(dev_app, change)
    old, new = united_deployment(dev_app), united_deployment(new_app)
    member = "worker-2"
    result = _apply_ud(
        members[member].plane, member_copy(new_app, plan.members[member]), dry_run=True
    )
    verdict = result.returncode != 0
    if verdict:
        assert "may not be changed in an update" in result.stderr, result.stderr
    assert verdict is refused, f"Kruise {'refused' if verdict else 'accepted'}: {result.stderr}"
    if refused:
        assert replaces(old, new), "Kruise refuses this update; the program updates in place"


def test_a_replacement_moves_the_pods(
    members: dict[str, Member],
    deployed: dict[str, dict[str, Any]],
    dev_app: ApplicationConfig,
    plan: PlacementPlan,
    report: Report,
) -> None:
    """What the program does instead (delete, then create the UnitedDeployment; Karmada does
    the same in each member): subset-a turned onto virtual nodes, its pods move there."""
    del deployed
    moved = _variant(dev_app, _set(0, virtualNodes=True))
    assert replaces(united_deployment(dev_app), united_deployment(moved))
    name = "worker-2"
    member = members[name]
    share = plan.members[name]
    t0 = time.monotonic()
    member.plane.kubectl(
        "delete", "uniteddeployment", dev_app.name, f"--namespace={dev_app.namespace}", "--wait"
    )
    until(
        lambda: not _pods(member.plane, dev_app),
        ROLLOUT_TIMEOUT,
        f"[{name}] pods of the deleted UnitedDeployment gone",
        seen=lambda: [p["metadata"]["name"] for p in _pods(member.plane, dev_app)],
        poll=POLL,
    )
    result = _apply_ud(member.plane, member_copy(moved, share))
    assert result.returncode == 0, result.stderr
    until(
        lambda: _rolled_out(member.plane, moved, share),
        ROLLOUT_TIMEOUT,
        f"[{name}] replaced {dev_app.name} rolled out",
        seen=lambda: (_ud(member.plane, moved) or {}).get("status"),
        poll=POLL,
    )
    placement = _placement(member, moved)
    assert all(on_virtual for pods in placement.values() for _, on_virtual in pods), placement
    assert sum(len(p) for p in placement.values()) == share
    report(
        f"{name}: replacing {dev_app.name} (subset-a onto virtual nodes) took "
        f"{time.monotonic() - t0:.1f}s for {share} pods"
    )


def _probe_pod(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "webhook-probe", "namespace": ns},
        "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
    }


def test_aks_namespaces_do_not_wait_for_kruise(
    members: dict[str, Member], deployed: dict[str, dict[str, Any]], dev_app: ApplicationConfig
) -> None:
    """Last (it stops worker-1's kruise-manager): with the pod webhook's failurePolicy Fail, a
    pod in an application namespace cannot be created while Kruise is down, but one in a
    namespace AKS manages can, because the program sets aksIntegration (review finding M5)."""
    del deployed
    member = members["worker-1"]
    assert member.kruise is not None
    aks_ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "aks-managed", "labels": {"kubernetes.azure.com/managedby": "aks"}},
    }
    member.plane.kubectl("apply", "-f", "-", stdin=json.dumps(aks_ns))
    member.kruise.stop()
    create = ("create", "--dry-run=server", "-f", "-")
    refused = member.plane.kubectl(
        *create, stdin=json.dumps(_probe_pod(dev_app.namespace)), check=False
    )
    assert refused.returncode != 0
    assert "mpod.kb.io" in refused.stderr, refused.stderr
    member.plane.kubectl(*create, stdin=json.dumps(_probe_pod("aks-managed")))
