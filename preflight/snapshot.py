"""One stack's plan as keyed, JSON-ready data: what `--against` compares and `--diagram` draws.

This is the only module of the diff and the diagram that imports the config loader, the plan and
the builders' sources; everything downstream reads the dict `snapshot` returns.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from builders.egress import ANY_ADDRESS, api_server_ranges
from checks.stack import load_from_file
from config.errors import ConfigError
from constants import PROJECT_ROOT
from preflight.access import azure_access
from preflight.plan import build_plan
from preflight.sources import (
    COLUMNS,
    CREDENTIALS,
    DRAIN,
    MANAGER_QUOTAS,
    PLACEMENT,
    POOL_QUOTAS,
    collect,
    extra_sections,
    fields,
)
from upstream.aks import INTERNAL_ANNOTATION

Snapshot = dict[str, Any]

RBAC_KINDS = ("ClusterRole", "Role")
BINDING_KINDS = ("ClusterRoleBinding", "RoleBinding")
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
# How far a service reaches; a rise is a widening of access.
EXPOSURE_RANK = {"cluster": 0, "internal": 1, "ranged": 2, "public": 3}


def empty(stack: str, *, exists: bool = True) -> Snapshot:
    """A valid snapshot with nothing in it (a stack absent at a ref: everything is added)."""
    return {
        "stack": stack,
        "exists": exists,
        "valid": True,
        "errors": [],
        "warnings": [],
        "clusters": {},
        "pools": {},
        "idle": {"nodes": 0, "vcpus": 0, "controlPlanes": []},
        "queues": {},
        "quotas": {},
        "managerQuotas": {},
        "dispatch": {},
        "drain": {},
        "forceRetire": [],
        "placement": {},
        "rbac": {},
        "bindings": {},
        "exposure": {},
        "credentials": {},
        "azureAccess": {},
        "azureQuotas": {},
        "karmada": {"host": None, "members": []},
        "other": {},
    }


def snapshot(stack: str, root: Path | None = None, *, files: bool = True) -> Snapshot:
    """Load `Pulumi.<stack>.yaml` from `root` and return its plan keyed for comparison.

    An invalid stack gives `valid: False` and its errors (never an exception); a missing file gives
    an empty snapshot with `exists: False`.
    """
    path = (root or PROJECT_ROOT) / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        return empty(stack, exists=False)
    try:
        fleet, warnings = load_from_file(stack, root=root, files=files)
    except ConfigError as err:
        out = empty(stack)
        out["valid"] = False
        # As the user reads them: paths name the items (clusters[worker-2].pools[gpu]...), and a
        # mistake in anchored text is one error. `at` (file:line) is shown, never compared:
        # lines move with every edit above them.
        written = err.written
        out["errors"] = [
            {"path": r.issue.path, "message": r.issue.message}
            | ({"at": f"{written.lines.file}:{r.line}"} if written.lines and r.line else {})
            for r in written.reports(err.errors)
        ]
        return out
    sections, more_warnings = extra_sections(fleet)
    plan = build_plan(stack, fleet, [*warnings, *more_warnings])
    manifests, releases = collect(fleet)
    objects = [(m.target, m.obj) for m in manifests]
    out = empty(stack)
    out["warnings"] = plan["warnings"]
    out["idle"] = {k: plan["idle"][k] for k in ("nodes", "vcpus", "controlPlanes")}
    out["forceRetire"] = list(fleet.multi_kueue.force_retire) if fleet.multi_kueue else []
    for cluster in plan["clusters"]:
        pools = cluster.pop("pools")
        out["clusters"][cluster["name"]] = cluster
        for pool in pools:
            pool["cluster"] = cluster["name"]
            out["pools"][f"{cluster['name']}/{pool['pool']}"] = pool
    _add_sections(out, sections)
    out["queues"] = _queues(objects)
    out["dispatch"] = _dispatch(objects)
    _add_weights(out["placement"], objects)
    out["rbac"] = dict(_rbac(objects))
    out["bindings"] = dict(_bindings(objects))
    out["azureAccess"] = _azure_access(azure_access(fleet))
    out["azureQuotas"] = {
        f"{q['region']}: {name}": amounts
        for q in plan["azureQuotas"]
        for name, amounts in [
            ("AKS clusters", {"min": q["aksClusters"], "max": q["aksClusters"]}),
            *q["vcpus"].items(),
        ]
    }
    out["exposure"] = dict(_exposure(objects, [(r.target, r.release, r.values) for r in releases]))
    # An AKS API server is public (any address) or ranged (authorizedIpRanges).
    for r in api_server_ranges(fleet):
        reach = "public" if r.range == ANY_ADDRESS else "ranged"
        out["exposure"].setdefault(f"{r.cluster}: AKS API server", reach)
    out["karmada"] = {
        "host": next((r.target for r in releases if "karmada" in r.chart), None),
        "members": sorted(
            o["metadata"]["name"]
            for _t, o in objects
            if o["kind"] == "Cluster" and o["apiVersion"].startswith("cluster.karmada.io/")
        ),
    }
    return out


def _azure_access(rows: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """`scope: principal` -> the roles it holds there (a new key or a new role widens access)."""
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(f"{r['scope']}: {r['principal']}", []).append(r["role"])
    return {k: sorted(v) for k, v in out.items()}


def _rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    """A table's rows by field (sources.COLUMNS), not by the headings people read."""
    keys = fields(section["kind"])
    return [dict(zip(keys, row, strict=True)) for row in section["rows"]]


def _add_sections(out: Snapshot, sections: Sequence[dict[str, Any]]) -> None:
    """Sort the plan's tables by their kind (titles and headings are prose, reworded at will)."""
    for section in sections:
        kind = section["kind"]
        if kind not in COLUMNS:
            out["other"][kind] = {
                "title": section["title"],
                "rows": [
                    ", ".join(f"{c}={v}" for c, v in zip(section["columns"], row, strict=True))
                    for row in section["rows"]
                ],
            }
            continue
        rows = _rows(section)
        if kind == POOL_QUOTAS:
            for r in rows:
                key = f"{r['cluster']}/{r['clusterQueue']}/{r['flavor']}/{r['resource']}"
                out["quotas"][key] = r
        elif kind == MANAGER_QUOTAS:
            for r in rows:
                out["managerQuotas"][f"{r['clusterQueue']}/{r['resource']}"] = r
        elif kind == CREDENTIALS:
            for r in rows:
                out["credentials"][f"{r['cluster']}: {r['credential']}"] = {
                    "generation": r["generation"],
                    "policy": r["policy"],
                    "mayDo": r["mayDo"],
                }
        elif kind == DRAIN:
            for r in rows:
                out["drain"][str(r["worker"])] = r
        elif kind == PLACEMENT:
            for r in rows:
                # "ns/name (tie: ...)" carries a note, not part of the name.
                app = str(r["application"]).split(" (", 1)[0]
                entry = out["placement"].setdefault(
                    app, {"members": {}, "subsets": {}, "virtual": {}, "weights": {}}
                )
                member, subset, count = str(r["member"]), str(r["subset"]), int(r["replicas"])
                entry["members"][member] = entry["members"].get(member, 0) + count
                if subset != "-":
                    entry["subsets"][f"{member}/{subset}"] = count
                    entry["virtual"][f"{member}/{subset}"] = r.get("on") == "virtual nodes"


def _name(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])


def _queues(objects: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    queues: dict[str, Any] = {}
    for target, obj in objects:
        if obj["kind"] != "ClusterQueue":
            continue
        spec = obj.get("spec", {})
        checks = spec.get("admissionChecksStrategy", {}).get("admissionChecks", [])
        flavors = sorted(
            {f["name"] for g in spec.get("resourceGroups", []) for f in g.get("flavors", [])}
        )
        queues[f"{target}/{obj['metadata']['name']}"] = {
            "cluster": target,
            "name": obj["metadata"]["name"],
            "flavors": flavors,
            "admissionChecks": sorted(c["name"] for c in checks),
            "cohort": spec.get("cohortName") or spec.get("cohort"),
        }
    return queues


def _dispatch(objects: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, list[str]]:
    """Manager ClusterQueue -> the workers its MultiKueue check dispatches to."""
    by_kind: dict[tuple[str, str, str], dict[str, Any]] = {
        (t, o["kind"], o["metadata"]["name"]): o for t, o in objects
    }
    dispatch: dict[str, list[str]] = {}
    for target, obj in objects:
        if obj["kind"] != "ClusterQueue":
            continue
        strategy = obj.get("spec", {}).get("admissionChecksStrategy", {})
        for entry in strategy.get("admissionChecks", []):
            check = by_kind.get((target, "AdmissionCheck", entry["name"]))
            if check is None or check["spec"].get("controllerName") != MULTIKUEUE_CONTROLLER:
                continue
            config = by_kind.get((target, "MultiKueueConfig", check["spec"]["parameters"]["name"]))
            workers = sorted(config["spec"].get("clusters", [])) if config else []
            dispatch[f"{target}/{obj['metadata']['name']}"] = workers
    return dispatch


def _add_weights(placement: dict[str, Any], objects: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """Static weights per member from each application's PropagationPolicy."""
    for _target, obj in objects:
        if obj["kind"] != "PropagationPolicy":
            continue
        scheduling = obj["spec"].get("placement", {}).get("replicaScheduling", {})
        weights = scheduling.get("weightPreference", {}).get("staticWeightList", [])
        for selector in obj["spec"].get("resourceSelectors", []):
            app = (
                f"{selector.get('namespace', obj['metadata'].get('namespace'))}/{selector['name']}"
            )
            if app not in placement:
                continue
            for item in weights:
                for member in item["targetCluster"].get("clusterNames", []):
                    placement[app]["weights"][member] = item["weight"]


def _rule_atoms(rule: dict[str, Any]) -> Iterator[str]:
    """One string per (group, resource, name, verb): widening shows as new strings."""
    verbs = rule.get("verbs", [])
    for url in rule.get("nonResourceURLs", []):
        for verb in verbs:
            yield f"{url}:{verb}"
    names = rule.get("resourceNames") or [""]
    for group in rule.get("apiGroups", []):
        for resource in rule.get("resources", []):
            for name in names:
                where = f"{group or 'core'}/{resource}" + (f"/{name}" if name else "")
                for verb in verbs:
                    yield f"{where}:{verb}"


def _rbac(objects: Sequence[tuple[str, dict[str, Any]]]) -> Iterator[tuple[str, list[str]]]:
    for target, obj in objects:
        if obj["kind"] in RBAC_KINDS:
            atoms = {a for rule in obj.get("rules", []) for a in _rule_atoms(rule)}
            yield f"{target}: {obj['kind']} {_name(obj)}", sorted(atoms)


def _bindings(objects: Sequence[tuple[str, dict[str, Any]]]) -> Iterator[tuple[str, Any]]:
    for target, obj in objects:
        if obj["kind"] in BINDING_KINDS:
            subjects = sorted(
                f"{s['kind']} {s['namespace']}/{s['name']}"
                if s.get("namespace")
                else f"{s['kind']} {s['name']}"
                for s in obj.get("subjects", [])
            )
            ref = obj["roleRef"]
            role = f"{ref['kind']} {ref['name']}"
            yield f"{target}: {obj['kind']} {_name(obj)}", {"role": role, "subjects": subjects}


def _service_reach(service_type: str | None, annotations: dict[str, Any]) -> str:
    if service_type not in ("LoadBalancer", "NodePort"):
        return "cluster"
    internal = any(
        k == INTERNAL_ANNOTATION and str(v).lower() == "true" for k, v in annotations.items()
    )
    return "internal" if internal else "public"


def _walk_services(values: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every `serviceType` in a chart's values (Helm charts put one per exposed component)."""
    if isinstance(values, dict):
        mapping: dict[str, Any] = values  # pyright: ignore[reportUnknownVariableType]
        if "serviceType" in mapping:
            yield (
                path,
                _service_reach(mapping["serviceType"], mapping.get("serviceAnnotations", {})),
            )
        for key, value in mapping.items():
            yield from _walk_services(value, f"{path}.{key}" if path else key)


def _exposure(
    objects: Sequence[tuple[str, dict[str, Any]]],
    releases: Sequence[tuple[str, str, dict[str, Any]]],
) -> Iterator[tuple[str, str]]:
    """Services that reach beyond their cluster: rendered Services and Helm values."""
    for target, obj in objects:
        if obj["kind"] == "Service":
            spec = obj.get("spec", {})
            reach = _service_reach(spec.get("type"), obj["metadata"].get("annotations", {}))
            if reach != "cluster":
                yield f"{target}: Service {_name(obj)}", reach
    for target, release, values in releases:
        for path, reach in _walk_services(values, ""):
            if reach != "cluster":
                yield f"{target}: {release} {path}", reach
