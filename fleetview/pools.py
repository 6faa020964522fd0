"""A cluster's node pools as `status` shows them: nodes, ready ones, quarantined ones."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fleetview.objects import POOL_LABELS, Obj, Snapshot, is_true
from upstream.aks import QUARANTINE_LABEL


def _ready(node: Mapping[str, Any]) -> bool:
    return is_true(node, "Ready") and not (node.get("spec") or {}).get("unschedulable")


def pool_rows(snap: Snapshot) -> list[dict[str, Any]]:
    pools: dict[str, list[Obj]] = {}
    for node in snap.nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        pool = next((labels[k] for k in POOL_LABELS if k in labels), "(no pool label)")
        pools.setdefault(str(pool), []).append(node)
    return [
        {
            "pool": pool,
            "nodes": len(nodes),
            "ready": sum(_ready(n) for n in nodes),
            # Cordoned by AKS at an upgrade's drain timeout: batch pods still running there
            # (upgrades.batchPods: protect); upgraded by a later run once empty. Not a fault.
            "quarantined": sum(_quarantined(n) for n in nodes),
        }
        for pool, nodes in sorted(pools.items())
    ]


def _quarantined(node: Mapping[str, Any]) -> bool:
    key, value = QUARANTINE_LABEL
    return ((node.get("metadata") or {}).get("labels") or {}).get(key) == value
