"""One line of the plan diff (a `Change`), and how two keyed tables of a plan become such lines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Change = dict[str, Any]


def change(kind: str, key: str, text: str, flag: str | None = None) -> Change:
    return {"change": kind, "key": key, "text": text, "flag": flag}


def keyed(
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
        out.append(change("added", key, describe(key, head[key]), flag_added(key, head[key])))
    for key in sorted(base.keys() - head.keys()):
        out.append(change("removed", key, describe(key, base[key])))
    for key in sorted(base.keys() & head.keys()):
        if base[key] != head[key]:
            item = changed(key, base[key], head[key])
            if item is not None:
                out.append(item)
    return out


def arrow(label: str, old: Any, new: Any) -> str | None:
    return None if old == new else f"{label} {old} -> {new}"


def fields(key: str, pairs: list[str | None], flag: str | None = None) -> Change | None:
    parts = [p for p in pairs if p]
    return change("changed", key, f"{key}: {'; '.join(parts)}", flag) if parts else None
