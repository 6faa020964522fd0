"""The plan of a stack at a git ref beside the plan now: what changes for people, as data.

`compare(base, head)` reads two snapshots (`preflight.snapshot`) and returns sections of changes,
each a line a reviewer reads in seconds; `flag` marks what needs a second look (access that widens,
a quota that no longer fits, a new error). `stack_at_ref` loads the stack file as committed at a
ref with the same loader as the working tree.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from constants import PROJECT_ROOT
from preflight.access import widens
from preflight.snapshot import EXPOSURE_RANK, Snapshot, empty, snapshot
from preflight.sources import CREDENTIAL_NAMES
from preflight.upgrades import version_steps
from upstream.aks import GPU_RESOURCE

Change = dict[str, Any]


class RefError(Exception):
    """The ref to compare against cannot be resolved (exit status 2)."""


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
    )


def default_ref(root: Path = PROJECT_ROOT) -> str:
    """The merge base of HEAD with `main`, else with `origin/main`."""
    for branch in ("main", "origin/main"):
        result = _git(root, "merge-base", "HEAD", branch)
        if result.returncode == 0:
            return result.stdout.strip()
    raise RefError(
        "no merge base with main or origin/main: give --against <ref> "
        "(in CI, fetch the base branch first)"
    )


def stack_at_ref(stack: str, ref: str, root: Path = PROJECT_ROOT) -> Snapshot:
    """`Pulumi.<stack>.yaml` as committed at `ref`; absent there gives an empty snapshot."""
    if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise RefError(f"unknown git ref {ref!r}")
    # `./` makes the path relative to `root`, which may sit below the repository's top.
    shown = _git(root, "show", f"{ref}:./Pulumi.{stack}.yaml")
    if shown.returncode != 0:
        return empty(stack, exists=False)
    with tempfile.TemporaryDirectory(prefix="preflight-ref-") as tmp:
        (Path(tmp) / f"Pulumi.{stack}.yaml").write_text(shown.stdout)
        # Only the stack file is here: files its keys name (kubeconfigs, CRDs) are not checked.
        return snapshot(stack, root=Path(tmp), files=False)


def short_ref(ref: str, root: Path = PROJECT_ROOT) -> str:
    """`main (1a2b3c4)` for a name, `1a2b3c4` for a commit id: what a reader recognises."""
    result = _git(root, "rev-parse", "--short", f"{ref}^{{commit}}")
    sha = result.stdout.strip() if result.returncode == 0 else ""
    if not sha or ref == sha:
        return ref
    return sha if ref.startswith(sha) else f"{ref} ({sha})"


# --- comparison ----------------------------------------------------------------------------------


def _change(kind: str, key: str, text: str, flag: str | None = None) -> Change:
    return {"change": kind, "key": key, "text": text, "flag": flag}


def _keyed(
    base: dict[str, Any],
    head: dict[str, Any],
    describe: Callable[[str, Any], str],
    changed: Callable[[str, Any, Any], Change | None],
    *,
    flag_added: Callable[[str, Any], str | None] = lambda _k, _v: None,
) -> list[Change]:
    """Added, removed and changed items of two keyed maps, in a stable order."""
    out: list[Change] = []
    for key in sorted(head.keys() - base.keys()):
        out.append(_change("added", key, describe(key, head[key]), flag_added(key, head[key])))
    for key in sorted(base.keys() - head.keys()):
        out.append(_change("removed", key, describe(key, base[key])))
    for key in sorted(base.keys() & head.keys()):
        if base[key] != head[key]:
            item = changed(key, base[key], head[key])
            if item is not None:
                out.append(item)
    return out


def _arrow(label: str, old: Any, new: Any) -> str | None:
    return None if old == new else f"{label} {old} -> {new}"


def _fields(key: str, pairs: list[str | None], flag: str | None = None) -> Change | None:
    parts = [p for p in pairs if p]
    return _change("changed", key, f"{key}: {'; '.join(parts)}", flag) if parts else None


def _issues(base: list[dict[str, str]], head: list[dict[str, str]], kind: str) -> list[Change]:
    def keyed(items: list[dict[str, str]]) -> dict[str, str]:
        return {f"{i['path'] or '(file)'}: {i['message']}": i.get("at", "") for i in items}

    old, new = keyed(base), keyed(head)
    # A new error says where it is now (`Pulumi.dev.yaml:42: ...`); its key leaves the line out.
    out = [
        _change("added", k, f"{at}: {k}" if at else k, f"new {kind}" if kind == "error" else None)
        for k, at in new.items()
    ]
    out = [c for c in out if c["key"] not in old]
    out += [_change("removed", k, k) for k in old if k not in new]
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
    }
    return _fields(name, [_arrow(label, old.get(k), new.get(k)) for k, label in labels.items()])


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
    return _fields(
        key,
        [
            _arrow("vm size", old["vmSize"], new["vmSize"]),
            _arrow(
                "nodes",
                f"{old['minNodes']}..{old['maxNodes']}",
                f"{new['minNodes']}..{new['maxNodes']}",
            ),
            _arrow("maxPods", old["maxPods"], new["maxPods"]),
            _arrow("k8s", old.get("kubernetesVersion"), new.get("kubernetesVersion")),
            _arrow("upgrade", old.get("upgrade"), new.get("upgrade")),
            _arrow("per node", _alloc(old["nodeAllocatable"]), _alloc(new["nodeAllocatable"])),
            _arrow("max allocatable", _alloc(old["maxAllocatable"]), _alloc(new["maxAllocatable"])),
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
    item = _fields(
        "idle",
        [
            _arrow("nodes", base["nodes"], head["nodes"]),
            _arrow("vCPU", base["vcpus"], head["vcpus"]),
            _arrow(
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
    return _fields(
        key,
        [
            _arrow("flavors", ", ".join(old["flavors"]), ", ".join(new["flavors"])),
            _arrow(
                "admission checks",
                ", ".join(old["admissionChecks"]) or "-",
                ", ".join(new["admissionChecks"]) or "-",
            ),
            _arrow("cohort", old["cohort"], new["cohort"]),
        ],
    )


def _quota_text(key: str, q: dict[str, Any]) -> str:
    return (
        f"{key}: nominal {q['nominal']} (with borrowing {q['reachable']}) "
        f"of capacity {q['capacity']}, {q['status']}"
    )


def _quota_changed(key: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
    worse = old["status"] == "ok" and new["status"] != "ok"
    return _fields(
        key,
        [
            _arrow("nominal", old["nominal"], new["nominal"]),
            _arrow("with borrowing", old["reachable"], new["reachable"]),
            _arrow("capacity", old["capacity"], new["capacity"]),
            _arrow("status", old["status"], new["status"]),
        ],
        f"quota status {new['status']}" if worse else None,
    )


def _manager_quota_text(key: str, q: dict[str, Any]) -> str:
    workers = f"workers {q['workersTotal']} ({q['perWorker']})"
    return f"{key}: manager {q['manager']}, {workers}, {q['status']}"


def _manager_quota_changed(key: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
    worse = old["status"] == "ok" and new["status"] != "ok"
    return _fields(
        key,
        [
            _arrow("manager", old["manager"], new["manager"]),
            _arrow("workers", old["workersTotal"], new["workersTotal"]),
            _arrow("per worker", old["perWorker"], new["perWorker"]),
            _arrow("status", old["status"], new["status"]),
        ],
        f"manager quota {new['status']}" if worse else None,
    )


def _dispatch_changed(key: str, old: list[str], new: list[str]) -> Change:
    gained = [f"+{w}" for w in new if w not in old]
    lost = [f"-{w}" for w in old if w not in new]
    return _change(
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
        return _fields(
            worker,
            [
                _arrow("dispatch sets", old["dispatchSets"], new["dispatchSets"]),
                _arrow("held", old["held"], new["held"]),
            ],
        )

    out = _keyed(base, head, _drain_text, changed)
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
    return _change("changed", app, line + (f" ({'; '.join(details)})" if details else ""))


def _grouped(atoms: list[str], limit: int | None = None) -> str:
    """`group/resource: verb, verb; ...`: permissions as people read a Role."""
    verbs: dict[str, list[str]] = {}
    for atom in sorted(atoms):
        where, verb = atom.rsplit(":", 1)
        verbs.setdefault(where, []).append(verb)
    parts = [f"{where}: {', '.join(v)}" for where, v in verbs.items()]
    if limit is not None and len(parts) > limit:
        parts = [*parts[:limit], f"... {len(parts) - limit} more"]
    return "; ".join(parts)


def _rbac(base: dict[str, list[str]], head: dict[str, list[str]]) -> list[Change]:
    def describe(key: str, atoms: list[str]) -> str:
        return f"{key}: {_grouped(atoms, limit=3)}"

    def changed(key: str, old: list[str], new: list[str]) -> Change | None:
        gained = sorted(set(new) - set(old))
        lost = sorted(set(old) - set(new))
        parts = [f"+ {_grouped(gained)}" if gained else "", f"- {_grouped(lost)}" if lost else ""]
        text = f"{key}: {' '.join(p for p in parts if p)}"
        return _change("changed", key, text, "widens access" if gained else None)

    return _keyed(base, head, describe, changed, flag_added=lambda _k, _v: "widens access")


def _bindings(base: dict[str, Any], head: dict[str, Any]) -> list[Change]:
    def describe(key: str, b: dict[str, Any]) -> str:
        return f"{key}: {b['role']} to {', '.join(b['subjects'])}"

    def changed(key: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
        gained = [s for s in new["subjects"] if s not in old["subjects"]]
        text = _fields(
            key,
            [
                _arrow("role", old["role"], new["role"]),
                _arrow("subjects", ", ".join(old["subjects"]), ", ".join(new["subjects"])),
            ],
        )
        if text is not None and (gained or old["role"] != new["role"]):
            text["flag"] = "widens access"
        return text

    return _keyed(base, head, describe, changed, flag_added=lambda _k, _v: "widens access")


def _azure_access(base: dict[str, list[str]], head: dict[str, list[str]]) -> list[Change]:
    def describe(key: str, roles: list[str]) -> str:
        return f"{key}: {', '.join(roles)}"

    def changed(key: str, old: list[str], new: list[str]) -> Change:
        gained = [r for r in new if r not in old]
        lost = [r for r in old if r not in new]
        parts = [f"+ {', '.join(gained)}" if gained else "", f"- {', '.join(lost)}" if lost else ""]
        text = f"{key}: {' '.join(p for p in parts if p)}"
        return _change("changed", key, text, "widens Azure access" if widens(old, new) else None)

    return _keyed(base, head, describe, changed, flag_added=lambda _k, _v: "widens Azure access")


def _azure_quotas(base: dict[str, Any], head: dict[str, Any]) -> list[Change]:
    def describe(key: str, q: dict[str, Any]) -> str:
        return f"{key}: {q['min']} at min nodes, {q['max']} at max nodes"

    def changed(key: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
        return _fields(
            key,
            [_arrow("at min", old["min"], new["min"]), _arrow("at max", old["max"], new["max"])],
        )

    return _keyed(base, head, describe, changed)


KARMADA_MEMBER_TOKEN = CREDENTIAL_NAMES["karmada"]
# Karmada v1.18.2's per-member informers keep the token they started with (docs/security.md).
KARMADA_RESTART_NOTE = (
    "karmada-controller-manager restarts after the Clusters move (`up` rolls the chart's; an "
    "existing Karmada's owner runs `kubectl rollout restart`, docs/security.md)"
)


def _credentials(base: dict[str, Any], head: dict[str, Any]) -> list[Change]:
    """A token whose generation moves is replaced by the next `up` (the old one revoked)."""

    def describe(key: str, c: dict[str, Any]) -> str:
        return f"{key}: generation {c['generation']}, rotation {c['policy']}"

    def changed(key: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
        pairs = [_arrow("rotation", old["policy"], new["policy"])]
        if old["generation"] != new["generation"]:
            text = f"{key}: generation {old['generation']} -> {new['generation']}"
            rest = [p for p in pairs if p]
            if rest:
                text += f" ({', '.join(rest)})"
            if key.endswith(KARMADA_MEMBER_TOKEN):
                text += f"; {KARMADA_RESTART_NOTE}"
            return _change("changed", key, text, "rotates at next up")
        return _fields(key, pairs)

    return _keyed(base, head, describe, changed)


def _exposure(base: dict[str, str], head: dict[str, str]) -> list[Change]:
    def changed(key: str, old: str, new: str) -> Change:
        wider = EXPOSURE_RANK[new] > EXPOSURE_RANK[old]
        return _change(
            "changed", key, f"{key}: {old} -> {new}", "widens exposure" if wider else None
        )

    return _keyed(
        base,
        head,
        lambda key, reach: f"{key}: {reach}",
        changed,
        flag_added=lambda _k, reach: "widens exposure" if reach == "public" else None,
    )


def _other(base: dict[str, Any], head: dict[str, Any]) -> list[Change]:
    """Rows added or removed in the plan tables the diff has no comparison of its own for."""
    titles = {kind: (head.get(kind) or base[kind])["title"] for kind in base.keys() | head.keys()}
    out: list[Change] = []
    for kind, title in sorted(titles.items(), key=lambda item: item[1]):
        old = base.get(kind, {}).get("rows", [])
        new = head.get(kind, {}).get("rows", [])
        out += [_change("added", f"{title}: {r}", f"{title}: {r}") for r in new if r not in old]
        out += [_change("removed", f"{title}: {r}", f"{title}: {r}") for r in old if r not in new]
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
        out.append(_change("removed", worker, text, "live check at up"))
    return out


def _plan_sections(base: Snapshot, head: Snapshot) -> Iterator[tuple[str, list[Change]]]:
    yield "Clusters", _keyed(base["clusters"], head["clusters"], _cluster_text, _cluster_changed)
    yield "Node pools", _keyed(base["pools"], head["pools"], _pool_text, _pool_changed)
    yield "Idle cost drivers", _idle(base["idle"], head["idle"])
    yield "Queues", _keyed(base["queues"], head["queues"], _queue_text, _queue_changed)
    yield (
        "Quota vs pool capacity",
        _keyed(base["quotas"], head["quotas"], _quota_text, _quota_changed),
    )
    yield (
        "MultiKueue manager quota",
        _keyed(
            base["managerQuotas"],
            head["managerQuotas"],
            _manager_quota_text,
            _manager_quota_changed,
        ),
    )
    yield (
        "MultiKueue dispatch",
        _keyed(
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
        _keyed(base["placement"], head["placement"], _placement_text, _placement_changed),
    )
    yield "Access (RBAC rules)", _rbac(base["rbac"], head["rbac"])
    yield "Access (bindings)", _bindings(base["bindings"], head["bindings"])
    yield (
        "Access (Azure role assignments)",
        _azure_access(base.get("azureAccess", {}), head.get("azureAccess", {})),
    )
    yield "Azure quotas", _azure_quotas(base.get("azureQuotas", {}), head.get("azureQuotas", {}))
    yield "Exposure", _exposure(base["exposure"], head["exposure"])
    yield "Credentials", _credentials(base.get("credentials", {}), head.get("credentials", {}))
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
                    _change("changed", r["path"], f"{r['path']}: {r['problem']}", "refused")
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


# --- rendering -----------------------------------------------------------------------------------

MARK = {"added": "+", "removed": "-", "changed": "~"}


def _line(c: Change) -> str:
    flag = f"  [!] {c['flag']}" if c["flag"] else ""
    return f"{MARK[c['change']]} {c['text']}{flag}"


def render_text(diff: dict[str, Any]) -> str:
    """Plain text for a terminal."""
    lines = [f"plan diff of stack {diff['stack']} against {diff['against']}"]
    lines += [f"note: {n}" for n in diff["notes"]]
    if not diff["changed"]:
        return "\n".join([*lines, "no change"]) + "\n"
    for section in diff["sections"]:
        lines += ["", section["title"], *(f"  {_line(c)}" for c in section["changes"])]
    return "\n".join(lines) + "\n"


def render_markdown(diff: dict[str, Any], *, heading: str = "###") -> str:
    """GitHub Markdown: flagged changes first, then one `diff` block per section."""
    changes = [c for s in diff["sections"] for c in s["changes"]]
    title = f"{heading} Plan diff: `{diff['stack']}` against `{diff['against']}`"
    lines = [title, ""]
    lines += [f"> {n}" for n in diff["notes"]]
    if diff["notes"]:
        lines.append("")
    if not diff["changed"]:
        return "\n".join([*lines, "No change."]) + "\n"
    lines.append(f"{len(changes)} changes, {diff['flagged']} flagged.")
    flagged = [c for c in changes if c["flag"]]
    if flagged:
        lines += ["", "**Needs a second look:**", ""]
        # The key only: the whole line follows in its section.
        lines += [f"- :warning: **{c['flag']}**: `{c['key']}`" for c in flagged]
    for section in diff["sections"]:
        lines += ["", f"**{section['title']}**", "", "```diff"]
        # `diff` colours "+" green and "-" red; "!" marks a change in place.
        marks = {"added": "+", "removed": "-", "changed": "!"}
        for c in section["changes"]:
            flag = f"   <- {c['flag']}" if c["flag"] else ""
            lines.append(f"{marks[c['change']]} {c['text']}{flag}")
        lines.append("```")
    return "\n".join(lines) + "\n"
