"""What tests/test_kueue_production.py shares with other test modules (they import it from here, not
from a test module): WAIT_FOR_PODS_READY, config_of, fleet_of, gates_of, with_manager and what they
need."""

from __future__ import annotations

from typing import Any

import yaml

from builders.kueue import helm_values
from checks.stack import parse_fleet
from config.models import FleetConfig

# json tags of the Go structs at v0.19.2 (configuration_types.go).
WAIT_FOR_PODS_READY = {"timeout", "blockAdmission", "requeuingStrategy", "recoveryTimeout"}


def fleet_of(raw: dict[str, Any]) -> FleetConfig:
    return parse_fleet(raw)[0]


def config_of(fleet: FleetConfig, cluster: int = 0) -> dict[str, Any]:
    values = helm_values(fleet.kueue, fleet.clusters[cluster])
    return yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


def with_manager(raw: dict[str, Any]) -> dict[str, Any]:
    """BASE's cluster as a worker of a manager that dispatches nothing of its own."""
    raw["clusters"][0]["role"] = "worker"
    raw["clusters"].insert(0, {"name": "manager", "role": "manager"})
    return raw


def gates_of(fleet: FleetConfig, cluster: int) -> dict[str, bool]:
    values = helm_values(fleet.kueue, fleet.clusters[cluster])
    return {g["name"]: g["enabled"] for g in values["controllerManager"]["featureGates"]}
