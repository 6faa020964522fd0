"""A Mermaid picture of a stack from its snapshot: clusters, pools, queues, dispatch, placement.

`flowchart LR` with one subgraph per cluster (pools with node ranges, ClusterQueues, virtual
nodes), MultiKueue edges from manager queues to workers and Karmada edges from applications to
members labelled with weight and replicas. Past `group_above` clusters, clusters of the same shape
are drawn once, named together, so a large fleet stays readable.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from preflight.snapshot import Snapshot

GROUP_ABOVE = 6


class _Ids:
    """Mermaid ids: `[A-Za-z0-9_]`, unique per key (names like `a-b` and `a_b` do not collide)."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}

    def __call__(self, key: str) -> str:
        if key not in self._ids:
            base = re.sub(r"[^A-Za-z0-9_]", "_", key)
            candidate, n = base, 1
            while candidate in self._ids.values():
                n += 1
                candidate = f"{base}_{n}"
            self._ids[key] = candidate
        return self._ids[key]


def _label(text: str) -> str:
    # A double quote ends a Mermaid label; the entity keeps it visible.
    return '"' + text.replace('"', "#quot;") + '"'


def _vm(size: str) -> str:
    return size.removeprefix("Standard_")


def _shape(snap: Snapshot, cluster: str) -> tuple[Any, ...]:
    """What a cluster looks like apart from its name: equal shapes are drawn once."""
    c = snap["clusters"][cluster]
    pools = tuple(
        (p["pool"], p["vmSize"], p["minNodes"], p["maxNodes"])
        for p in snap["pools"].values()
        if p["cluster"] == cluster
    )
    queues = tuple(q["name"] for q in snap["queues"].values() if q["cluster"] == cluster)
    return (c["role"], c["virtualNodes"], pools, queues)


def _groups(snap: Snapshot, group_above: int) -> list[list[str]]:
    names = list(snap["clusters"])
    if len(names) <= group_above:
        return [[n] for n in names]
    by_shape: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for name in names:
        by_shape[_shape(snap, name)].append(name)
    return list(by_shape.values())


def _group_title(members: list[str], role: str) -> str:
    if len(members) == 1:
        return f"{members[0]} ({role})"
    shown = ", ".join(members[:3]) + (", ..." if len(members) > 3 else "")
    return f"{shown} ({role}, {len(members)} clusters of this shape)"


def render_mermaid(snap: Snapshot, *, group_above: int = GROUP_ABOVE) -> str:
    """The stack as a Mermaid flowchart (plain text, no fences)."""
    ids = _Ids()
    lines = ["flowchart LR"]
    groups = _groups(snap, group_above)
    group_of = {name: members[0] for members in groups for name in members}
    for members in groups:
        first = members[0]
        cluster = snap["clusters"][first]
        gid = ids(f"cluster {first}")
        lines.append(f"  subgraph {gid}[{_label(_group_title(members, cluster['role']))}]")
        lines.append("    direction TB")
        pools = [p for p in snap["pools"].values() if p["cluster"] == first]
        for p in pools:
            low, high = p["minNodes"], p["maxNodes"]
            nodes = f"{low}..{high} nodes" if low != high else f"{low} node{'s' * (low != 1)}"
            text = f"pool {p['pool']}<br/>{_vm(p['vmSize'])} x {nodes}"
            pid = ids(f"pool {first}/{p['pool']}")
            lines.append(f"    {pid}[{_label(text)}]")
        if cluster["virtualNodes"]:
            lines.append(f"    {ids(f'virtual {first}')}[/{_label('virtual nodes (ACI)')}/]")
        pool_names = {p["pool"] for p in pools}
        for q in (q for q in snap["queues"].values() if q["cluster"] == first):
            qid = ids(f"queue {first}/{q['name']}")
            text = f"ClusterQueue {q['name']}"
            lines.append(f"    {qid}[[{_label(text)}]]")
            used = sorted(
                {
                    r["pool"]
                    for r in snap["quotas"].values()
                    if r["cluster"] == first and r["clusterQueue"] == q["name"]
                }
                & pool_names
            )
            lines += [f"    {qid} --> {ids(f'pool {first}/{pool}')}" for pool in used]
        lines.append("  end")
    drawn: set[tuple[str, str]] = set()
    for key, workers in snap["dispatch"].items():
        manager, queue = key.split("/", 1)
        source = ids(f"queue {group_of.get(manager, manager)}/{queue}")
        for worker in workers:
            target = group_of.get(worker)
            if target is None or (source, target) in drawn:
                continue
            drawn.add((source, target))
            lines.append(f"  {source} -- MultiKueue --> {ids(f'cluster {target}')}")
    lines += _karmada(snap, ids, group_of)
    return "\n".join(lines) + "\n"


def _karmada(snap: Snapshot, ids: _Ids, group_of: dict[str, str]) -> list[str]:
    if not snap["placement"]:
        return []
    host = snap["karmada"]["host"]
    title = f"Karmada on {host}" if host else "Karmada"
    lines = [f"  subgraph {ids('karmada')}[{_label(title)}]"]
    edges: list[str] = []
    for app, p in snap["placement"].items():
        aid = ids(f"app {app}")
        total = sum(p["members"].values())
        lines.append(f"    {aid}([{_label(f'{app}<br/>{total} replicas')}])")
        per_group: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for member, count in p["members"].items():
            name = str(member)
            per_group[group_of.get(name, name)].append((name, int(count)))
        for group, items in per_group.items():
            if group not in snap["clusters"]:
                continue
            weights = ",".join(str(p["weights"].get(m, "-")) for m, _ in items)
            replicas = sum(n for _, n in items)
            virtual = sum(
                n
                for key, n in p["subsets"].items()
                if key.split("/", 1)[0] in {m for m, _ in items} and p["virtual"].get(key)
            )
            text = f"weight {weights}: {replicas}" + (f" ({virtual} virtual)" if virtual else "")
            edges.append(f"  {aid} -- {_label(text)} --> {ids(f'cluster {group}')}")
    lines.append("  end")
    return lines + edges


def render_markdown(snap: Snapshot, **kwargs: Any) -> str:
    """The picture in a fenced block GitHub renders."""
    return f"```mermaid\n{render_mermaid(snap, **kwargs)}```\n"
