"""What tests/realtier/test_karmada.py shares with other test modules (they import it from here, not
from a test module): POLL, TIMEOUT, karmada_binding, kruise_values, karmada_scheduled, karmada_ud
and what they need."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from builders.kruise import CHART as KRUISE_CHART
from config.models import FleetConfig
from preflight.sources import collect
from testkit.realtier.harness import ControlPlane

UD_API: Final = "/apis/apps.kruise.io/v1alpha1"
RB_API: Final = "/apis/work.karmada.io/v1alpha2"
TIMEOUT: Final = 180.0
POLL: Final = 0.5


def karmada_json(plane: ControlPlane, path: str) -> dict[str, Any] | None:
    status, body = plane.get(path)
    return json.loads(body) if status == 200 else None


def kruise_values(fleet: FleetConfig) -> dict[str, dict[str, Any]]:
    _, releases = collect(fleet)
    return {r.target: dict(r.values) for r in releases if r.chart == KRUISE_CHART}


def karmada_ud(plane: ControlPlane, ns: str, name: str) -> dict[str, Any] | None:
    return karmada_json(plane, f"{UD_API}/namespaces/{ns}/uniteddeployments/{name}")


def karmada_binding(karmada: ControlPlane, ns: str, name: str) -> dict[str, Any] | None:
    return karmada_json(
        karmada, f"{RB_API}/namespaces/{ns}/resourcebindings/{name}-uniteddeployment"
    )


def karmada_scheduled(binding: Mapping[str, Any] | None) -> dict[str, int] | None:
    """Member -> replicas of a binding the scheduler has placed (its current generation)."""
    if binding is None:
        return None
    status = binding.get("status") or {}
    if status.get("schedulerObservedGeneration") != binding["metadata"]["generation"]:
        return None
    return {c["name"]: int(c.get("replicas", 0)) for c in binding["spec"].get("clusters") or []}
