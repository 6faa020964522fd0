"""What a fleet value gives, for tests that judge values: its issues, its queue objects, and every
cluster's queue objects as config states them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from builders.fleet import kueue_objects
from builders.kueue_queues import AdmissionChecks, cluster_objects
from builders.manifest import Manifest
from checks.stack import parse_fleet
from config.errors import ConfigError
from config.models import FleetConfig


def render_kueue(
    fleet: FleetConfig, added_checks: Mapping[str, AdmissionChecks] | None = None
) -> list[Manifest]:
    """Every cluster's queue objects, as config states them (no MultiKueue mirroring)."""
    added = added_checks or {}
    priority = fleet.kueue.workload_priority_classes
    return [
        m
        for c in fleet.clusters
        for m in cluster_objects(c, added.get(c.name), priority_classes=priority)
    ]


def fleet_issues(raw: dict[str, Any]) -> list[str]:
    """Every issue of a fleet value (its errors, or its warnings when it is valid), as
    `path: message`."""
    try:
        _, warnings = parse_fleet(raw)
    except ConfigError as err:
        return [str(i) for i in err.issues]
    return [str(w) for w in warnings]


def queue_objects(raw: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The Kueue objects a fleet value renders, by (kind, name)."""
    fleet, _ = parse_fleet(raw)
    return {(m.kind, m.name): m.obj for ms in kueue_objects(fleet).values() for m in ms}
