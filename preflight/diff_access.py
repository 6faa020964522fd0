"""The plan diff's access tables: RBAC rules and bindings, Azure role assignments, API server
exposure and minted credentials; a change that widens any of them is flagged."""

from __future__ import annotations

from typing import Any

from preflight.access import widens
from preflight.diff_changes import Change, arrow, change, fields, keyed
from preflight.snapshot import EXPOSURE_RANK
from preflight.sources import CREDENTIAL_NAMES


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


def rbac(base: dict[str, list[str]], head: dict[str, list[str]]) -> list[Change]:
    def describe(key: str, atoms: list[str]) -> str:
        return f"{key}: {_grouped(atoms, limit=3)}"

    def changed(key: str, old: list[str], new: list[str]) -> Change | None:
        gained = sorted(set(new) - set(old))
        lost = sorted(set(old) - set(new))
        parts = [f"+ {_grouped(gained)}" if gained else "", f"- {_grouped(lost)}" if lost else ""]
        text = f"{key}: {' '.join(p for p in parts if p)}"
        return change("changed", key, text, "widens access" if gained else None)

    return keyed(base, head, describe, changed, flag_added=lambda _k, _v: "widens access")


def bindings(base: dict[str, Any], head: dict[str, Any]) -> list[Change]:
    def describe(key: str, b: dict[str, Any]) -> str:
        return f"{key}: {b['role']} to {', '.join(b['subjects'])}"

    def changed(key: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
        gained = [s for s in new["subjects"] if s not in old["subjects"]]
        text = fields(
            key,
            [
                arrow("role", old["role"], new["role"]),
                arrow("subjects", ", ".join(old["subjects"]), ", ".join(new["subjects"])),
            ],
        )
        if text is not None and (gained or old["role"] != new["role"]):
            text["flag"] = "widens access"
        return text

    return keyed(base, head, describe, changed, flag_added=lambda _k, _v: "widens access")


def azure_access(base: dict[str, list[str]], head: dict[str, list[str]]) -> list[Change]:
    def describe(key: str, roles: list[str]) -> str:
        return f"{key}: {', '.join(roles)}"

    def changed(key: str, old: list[str], new: list[str]) -> Change:
        gained = [r for r in new if r not in old]
        lost = [r for r in old if r not in new]
        parts = [f"+ {', '.join(gained)}" if gained else "", f"- {', '.join(lost)}" if lost else ""]
        text = f"{key}: {' '.join(p for p in parts if p)}"
        return change("changed", key, text, "widens Azure access" if widens(old, new) else None)

    return keyed(base, head, describe, changed, flag_added=lambda _k, _v: "widens Azure access")


KARMADA_MEMBER_TOKEN = CREDENTIAL_NAMES["karmada"]


# Karmada v1.18.2's per-member informers keep the token they started with (docs/security.md).
KARMADA_RESTART_NOTE = (
    "karmada-controller-manager restarts after the Clusters move (`up` rolls the chart's; an "
    "existing Karmada's owner runs `kubectl rollout restart`, docs/security.md)"
)


def credentials(base: dict[str, Any], head: dict[str, Any]) -> list[Change]:
    """A token whose generation moves is replaced by the next `up` (the old one revoked)."""

    def describe(key: str, c: dict[str, Any]) -> str:
        return f"{key}: generation {c['generation']}, rotation {c['policy']}"

    def changed(key: str, old: dict[str, Any], new: dict[str, Any]) -> Change | None:
        pairs = [arrow("rotation", old["policy"], new["policy"])]
        if old["generation"] != new["generation"]:
            text = f"{key}: generation {old['generation']} -> {new['generation']}"
            rest = [p for p in pairs if p]
            if rest:
                text += f" ({', '.join(rest)})"
            if key.endswith(KARMADA_MEMBER_TOKEN):
                text += f"; {KARMADA_RESTART_NOTE}"
            return change("changed", key, text, "rotates at next up")
        return fields(key, pairs)

    return keyed(base, head, describe, changed)


def exposure(base: dict[str, str], head: dict[str, str]) -> list[Change]:
    def changed(key: str, old: str, new: str) -> Change:
        wider = EXPOSURE_RANK[new] > EXPOSURE_RANK[old]
        return change(
            "changed", key, f"{key}: {old} -> {new}", "widens exposure" if wider else None
        )

    return keyed(
        base,
        head,
        lambda key, reach: f"{key}: {reach}",
        changed,
        flag_added=lambda _k, reach: "widens exposure" if reach == "public" else None,
    )
