"""What `why` found about one job (`Seen`), and the phrases every part of its answer uses (pure)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetview.objects import Obj, Snapshot, condition, human, name, namespace
from fleetview.settings import Timings
from fleetview.status import check_states, workload_owner


def conditions_text(obj: Mapping[str, Any]) -> str:
    parts = []
    for c in (obj.get("status") or {}).get("conditions") or []:
        text = f"{c.get('type')}={c.get('status')}"
        if c.get("reason"):
            text += f" ({c['reason']})"
        parts.append(text)
    return ", ".join(parts) or "no conditions yet"


def checks_text(wl: Mapping[str, Any]) -> str:
    parts = []
    for c in check_states(wl):
        text = f"{c.get('name')}={c.get('state') or '?'}"
        if c.get("retryCount"):
            text += f" retry {c['retryCount']}"
        if c.get("message"):
            text += f" ({c['message']})"
        parts.append(text)
    return "; ".join(parts) or "none"


def message_of(obj: Mapping[str, Any], kind: str) -> str:
    return str((condition(obj, kind) or {}).get("message") or "")


def kubectl(cluster: str, args: str) -> str:
    return f"kubectl --kubeconfig {cluster}.kubeconfig {args}"


def at(t: dt.datetime, now: dt.datetime) -> str:
    when = t.astimezone(dt.UTC).strftime("%H:%M:%SZ")
    left = (t - now).total_seconds()
    return f"{when} (in {human(left)})" if left > 0 else f"{when} ({human(-left)} ago)"


@dataclass(frozen=True)
class Seen:
    """Everything `explain` found about one job, for the verdict."""

    home: Snapshot
    wl: Obj
    cq: str | None
    dispatch: tuple[str, str] | None
    worker: str | None
    nominated: list[str]
    config_workers: list[str]
    copies: Mapping[str, Obj]
    mkcs: Mapping[str, Obj]
    others: Mapping[str, Snapshot]
    snaps: Sequence[Snapshot]
    now: dt.datetime
    grace: float
    timings: Timings = field(default_factory=Timings)


def requests_of(snap: Snapshot, wl: Mapping[str, Any]) -> list[Obj]:
    ns, wl_name = namespace(wl), name(wl)
    return [
        p for p in snap.provisioning_requests if namespace(p) == ns and workload_owner(p) == wl_name
    ]


def pr_message(pr: Mapping[str, Any]) -> str:
    conditions = (pr.get("status") or {}).get("conditions") or []
    last = max(conditions, key=lambda c: str(c.get("lastTransitionTime", "")), default={})
    return str(last.get("message") or "")
