"""The plan of a stack at a git ref beside the plan now: what changes for people, as data.

`compare(base, head)` reads two snapshots (`preflight.snapshot`) and returns sections of changes,
each a line a reviewer reads in seconds; `flag` marks what needs a second look (access that widens,
a quota that no longer fits, a new error). Here: the fleet's tables (clusters, pools, queues,
quotas, dispatch, placement) and the order of the sections; who may do what is
`preflight.diff_access`; the stack as committed at a ref, `preflight.gitref`; the text and Markdown
a reader sees, `preflight.diff_render`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from preflight.diff_access import azure_access, bindings, credentials, exposure, rbac
from preflight.diff_changes import Change, arrow, change, fields, keyed
from preflight.snapshot import Snapshot
from preflight.upgrades import version_steps
from upstream.aks import GPU_RESOURCE


def _issues(base: list[dict[str, str]], head: list[dict[str, str]], kind: str) -> list[Change]:
    def by_text(items: list[dict[str, str]]) -> dict[str, str]:
        return {f"{i['path'] or '(file)'}: {i['message']}": i.get("at", "") for i in items}

    old, new = by_text(base), by_text(head)
    # A new error says where it is now (`Pulumi.dev.yaml:42: ...`); its key leaves the line out.
    out = [
        change("added", k, f"{at}: {k}" if at else k, f"new {kind}" if kind == "error" else None)
        for k, at in new.items()
    ]
    out = [c for c in out if c["key"] not in old]
    out += [change("removed", k, k) for k in old if k not in new]
    return out


def _cluster_text(name: str, c: dict[str, Any]) -> str:
    virtual = ", virtual nodes" if c["virtualNodes"] else ""
    k8s = f"k8s {c['kubernetesVersion']}"
    return f"{name} ({c['role']}, {k8s}, {c['skuTier']}, {c['network']}{virtual})"


def _cluster_changed(name: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
    labels = {
        "role": "role",
        "kubernetesVersion": "k8s",
        "skuTier": "tier",
        "network": "network",
        "virtualNodes": "virtual nodes",
        "location": "location",
        "supportPlan": "support plan",
        "upgradeChannel": "upgrade channel",
        "nodeOsChannel": "node OS channel",
        "upgradeWindow": "upgrade window",
        "nodeOsWindow": "node OS window",
        "batchPods": "batch pods",
    }
    return fields(name, [arrow(label, old.get(k), new.get(k)) for k, label in labels.items()])


def _alloc(a: dict[str, Any]) -> str:
    gpus = a.get(GPU_RESOURCE)
    return f"{a['cpu']} CPU, {a['memory']}" + (f", {gpus} GPU" if gpus else "")


def _pool_text(key: str, p: dict[str, Any]) -> str:
    return (
        f"{key} {p['vmSize']} {p['minNodes']}..{p['maxNodes']} nodes, "
        f"max allocatable {_alloc(p['maxAllocatable'])}"
    )


def _pool_changed(key: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
    shrinks = any(
        _num(new["maxAllocatable"].get(r)) < _num(old["maxAllocatable"].get(r))
        for r in ("cpu", GPU_RESOURCE)
    )
    return fields(
        key,
        [
            arrow("vm size", old["vmSize"], new["vmSize"]),
            arrow(
                "nodes",
                f"{old['minNodes']}..{old['maxNodes']}",
                f"{new['minNodes']}..{new['maxNodes']}",
            ),
            arrow("maxPods", old["maxPods"], new["maxPods"]),
            arrow("k8s", old.get("kubernetesVersion"), new.get("kubernetesVersion")),
            arrow("upgrade", old.get("upgrade"), new.get("upgrade")),
            arrow("per node", _alloc(old["nodeAllocatable"]), _alloc(new["nodeAllocatable"])),
            arrow("max allocatable", _alloc(old["maxAllocatable"]), _alloc(new["maxAllocatable"])),
        ],
        "capacity shrinks" if shrinks else None,
    )


def _num(value: Any) -> float:
    try:
        return float(str(value).split()[0])
    except (ValueError, IndexError):
        return 0.0


def _idle(base: dict[str, Any], head: dict[str, Any]) -> list[Change]:
    """Nodes that stay up at zero load and paid control planes: what the stack costs idle."""
    more = head["vcpus"] > base["vcpus"] or set(head["controlPlanes"]) - set(base["controlPlanes"])
    item = fields(
        "idle",
        [
            arrow("nodes", base["nodes"], head["nodes"]),
            arrow("vCPU", base["vcpus"], head["vcpus"]),
            arrow(
                "paid control planes",
                ", ".join(base["controlPlanes"]) or "none",
                ", ".join(head["controlPlanes"]) or "none",
            ),
        ],
        "costs more idle" if more else None,
    )
    return [item] if item else []


def _queue_text(key: str, q: dict[str, Any]) -> str:
    checks = f", checks {', '.join(q['admissionChecks'])}" if q["admissionChecks"] else ""
    return f"ClusterQueue {key} (flavors {', '.join(q['flavors']) or '-'}{checks})"


def _queue_changed(key: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
    return fields(
        key,
        [
            arrow("flavors", ", ".join(old["flavors"]), ", ".join(new["flavors"])),
            arrow(
                "admission checks",
                ", ".join(old["admissionChecks"]) or "-",
                ", ".join(new["admissionChecks"]) or "-",
            ),
            arrow("cohort", old["cohort"], new["cohort"]),
        ],
    )


def _quota_text(key: str, q: dict[str, Any]) -> str:
    return (
        f"{key}: nominal {q['nominal']} (with borrowing {q['reachable']}) "
        f"of capacity {q['capacity']}, {q['status']}"
    )


def _quota_changed(key: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
    worse = old["status"] == "ok" and new["status"] != "ok"
    return fields(
        key,
        [
            arrow("nominal", old["nominal"], new["nominal"]),
            arrow("with borrowing", old["reachable"], new["reachable"]),
            arrow("capacity", old["capacity"], new["capacity"]),
            arrow("status", old["status"], new["status"]),
        ],
        f"quota status {new['status']}" if worse else None,
    )


def _manager_quota_text(key: str, q: dict[str, Any]) -> str:
    workers = f"workers {q['workersTotal']} ({q['perWorker']})"
    return f"{key}: manager {q['manager']}, {workers}, {q['status']}"


def _manager_quota_changed(key: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
    worse = old["status"] == "ok" and new["status"] != "ok"
    return fields(
        key,
        [
            arrow("manager", old["manager"], new["manager"]),
            arrow("workers", old["workersTotal"], new["workersTotal"]),
            arrow("per worker", old["perWorker"], new["perWorker"]),
            arrow("status", old["status"], new["status"]),
        ],
        f"manager quota {new['status']}" if worse else None,
    )


def _dispatch_changed(key: str, old: list[str], new: list[str]) -> Change:
    gained = [f"+{w}" for w in new if w not in old]
    lost = [f"-{w}" for w in old if w not in new]
    return change(
        "changed",
        key,
        f"{key} dispatches to {', '.join(old) or '-'} -> {', '.join(new) or '-'} "
        f"({', '.join(gained + lost)})",
    )


def _drain_text(worker: str, d: dict[str, Any]) -> str:
    return (
        f"{worker} drained: no new work from {d['dispatchSets']} "
        f"(held: {d['held']}); what runs there finishes there"
    )


def _drain(base: dict[str, Any], head: dict[str, Any]) -> list[Change]:
    """A drain added, lifted, or holding other LocalQueues."""

    def changed(worker: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
        return fields(
            worker,
            [
                arrow("dispatch sets", old["dispatchSets"], new["dispatchSets"]),
                arrow("held", old["held"], new["held"]),
            ],
        )

    out = keyed(base, head, _drain_text, changed)
    for c in out:
        if c["change"] == "removed":
            c["text"] = f"{c['key']} undrained: takes new work again"
    return out


def _counts(old: dict[str, Any], new: dict[str, Any]) -> str:
    """`key old -> new` for each key whose value differs (absent counts as 0)."""
    keys = sorted(old.keys() | new.keys())
    return ", ".join(
        f"{k} {old.get(k, 0)} -> {new.get(k, 0)}" for k in keys if old.get(k, 0) != new.get(k, 0)
    )


def _placement_text(app: str, p: dict[str, Any]) -> str:
    members = ", ".join(
        f"{m} {n} (weight {p['weights'].get(m, '-')})" for m, n in p["members"].items()
    )
    return f"{app}: {members}"


def _placement_changed(app: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
    text = _counts(old["members"], new["members"])
    details = [
        f"subsets {s}" if (s := _counts(old["subsets"], new["subsets"])) else "",
        f"weights {w}" if (w := _counts(old["weights"], new["weights"])) else "",
        f"on virtual nodes {v}" if (v := _counts(old["virtual"], new["virtual"])) else "",
    ]
    details = [d for d in details if d]
    if not text and not details:
        return None
    line = f"{app}: {text or 'replicas per member unchanged'}"
    return change("changed", app, line + (f" ({'; '.join(details)})" if details else ""))


def _azure_quotas(base: dict[str, Any], head: dict[str, Any]) -> list[Change]:
    def describe(key: str, q: dict[str, Any]) -> str:
        return f"{key}: {q['min']} at min nodes, {q['max']} at max nodes"

    def changed(key: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
        return fields(
            key,
            [arrow("at min", old["min"], new["min"]), arrow("at max", old["max"], new["max"])],
        )

    return keyed(base, head, describe, changed)


def _other(base: dict[str, Any], head: dict[str, Any]) -> list[Change]:
    """Rows added or removed in the plan tables the diff has no comparison of its own for."""
    titles = {kind: (head.get(kind) or base[kind])["title"] for kind in base.keys() | head.keys()}
    out: list[Change] = []
    for kind, title in sorted(titles.items(), key=lambda item: item[1]):
        old = base.get(kind, {}).get("rows", [])
        new = head.get(kind, {}).get("rows", [])
        out += [change("added", f"{title}: {r}", f"{title}: {r}") for r in new if r not in old]
        out += [change("removed", f"{title}: {r}", f"{title}: {r}") for r in old if r not in new]
    return out


def _retire(base: Snapshot, head: Snapshot) -> list[Change]:
    """Workers that leave every dispatch set: `up` reads the manager first (components/retire.py);
    this offline diff cannot, and says so."""

    def linked(snap: Snapshot) -> set[str]:
        return {w for workers in snap["dispatch"].values() for w in workers}

    forced = set(head.get("forceRetire") or [])
    out: list[Change] = []
    for worker in sorted(linked(base) - linked(head)):
        if worker in forced:
            text = (
                f"{worker} leaves MultiKueue, forced (multiKueue.forceRetire): Workloads "
                "admitted there are evicted on the manager and dispatched again"
            )
        else:
            text = (
                f"{worker} leaves MultiKueue: `pulumi up` first reads the manager and refuses "
                "while Workloads are admitted there (not read here: drain it and run the "
                "listing in docs/operations.md)"
            )
        out.append(change("removed", worker, text, "live check at up"))
    return out


def _plan_sections(base: Snapshot, head: Snapshot) -> Iterator[tuple[str, list[Change]]]:
    yield "Clusters", keyed(base["clusters"], head["clusters"], _cluster_text, _cluster_changed)
    yield "Node pools", keyed(base["pools"], head["pools"], _pool_text, _pool_changed)
    yield "Idle cost drivers", _idle(base["idle"], head["idle"])
    yield "Queues", keyed(base["queues"], head["queues"], _queue_text, _queue_changed)
    yield (
        "Quota vs pool capacity",
        keyed(base["quotas"], head["quotas"], _quota_text, _quota_changed),
    )
    yield (
        "MultiKueue manager quota",
        keyed(
            base["managerQuotas"],
            head["managerQuotas"],
            _manager_quota_text,
            _manager_quota_changed,
        ),
    )
    yield (
        "MultiKueue dispatch",
        keyed(
            base["dispatch"],
            head["dispatch"],
            lambda k, ws: f"{k} dispatches to {', '.join(ws) or '-'}",
            _dispatch_changed,
        ),
    )
    yield "MultiKueue drain", _drain(base.get("drain", {}), head.get("drain", {}))
    yield "MultiKueue retire", _retire(base, head)
    yield (
        "Karmada placement",
        keyed(base["placement"], head["placement"], _placement_text, _placement_changed),
    )
    yield "Access (RBAC rules)", rbac(base["rbac"], head["rbac"])
    yield "Access (bindings)", bindings(base["bindings"], head["bindings"])
    yield (
        "Access (Azure role assignments)",
        azure_access(base.get("azureAccess", {}), head.get("azureAccess", {})),
    )
    yield "Azure quotas", _azure_quotas(base.get("azureQuotas", {}), head.get("azureQuotas", {}))
    yield "Exposure", exposure(base["exposure"], head["exposure"])
    yield (
        "Credentials",
        credentials(base.get("credentials", {}), head.get("credentials", {})),
    )
    yield "Other plan tables", _other(base["other"], head["other"])


def compare(base: Snapshot, head: Snapshot, *, ref: str = "") -> dict[str, Any]:
    """The diff of two snapshots of one stack: sections of changes, flagged ones counted."""
    notes: list[str] = []
    if not base["exists"]:
        notes.append(
            f"Pulumi.{head['stack']}.yaml does not exist at {ref or 'the base'}: all added"
        )
    if not head["exists"]:
        notes.append(f"Pulumi.{head['stack']}.yaml does not exist now: all removed")
    sections: list[dict[str, Any]] = [
        {"title": "Errors", "changes": _issues(base["errors"], head["errors"], "error")},
    ]
    # One minor at a time: only a diff knows both versions (AKS refuses the rest at `up`).
    refused = version_steps(base, head) if base["valid"] and head["valid"] else []
    if refused:
        sections.append(
            {
                "title": "Version changes AKS refuses",
                "changes": [
                    change("changed", r["path"], f"{r['path']}: {r['problem']}", "refused")
                    for r in refused
                ],
            }
        )
    if base["valid"] and head["valid"]:
        # An invalid side has no plan, hence no warnings: comparing them would only mislead.
        warnings = _issues(base["warnings"], head["warnings"], "warning")
        sections.append({"title": "Warnings", "changes": warnings})
        sections += [{"title": t, "changes": c} for t, c in _plan_sections(base, head)]
    else:
        side = "now" if not head["valid"] else f"at {ref or 'the base'}"
        notes.append(f"the stack is invalid {side}: only its errors are compared")
    sections = [s for s in sections if s["changes"]]
    changes = [c for s in sections for c in s["changes"]]
    if not base["exists"]:
        for c in changes:  # fleet-wide totals too: from nothing, everything is new
            c["change"] = "added"
    return {
        "stack": head["stack"],
        "against": ref,
        "validNow": head["valid"],
        "validAtRef": base["valid"],
        "refused": refused,
        "changed": bool(changes),
        "flagged": sum(1 for c in changes if c["flag"]),
        "notes": notes,
        "sections": sections,
    }
