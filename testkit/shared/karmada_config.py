"""What tests/test_karmada_config.py shares with other test modules (they import it from here, not
from a test module): APP, BASE, errors_for and what they need."""

from __future__ import annotations

from typing import Any

import pytest

from checks.stack import parse_fleet
from config.errors import ConfigError

APP: dict[str, Any] = {
    "name": "sample-ud",
    "namespace": "sample",
    "replicas": 6,
    "template": {"kind": "statefulSet", "image": "nginx:1.27"},
    "subsets": [
        {"name": "subset-a", "replicas": "50%", "virtualNodes": False},
        {"name": "subset-b", "virtualNodes": True},
    ],
    "propagation": {"weights": {"worker-1": 1, "worker-2": 2}},
}


RUNNER = "203.0.113.0/24"  # the Pulumi runner's egress (a documentation range)
BASE: dict[str, Any] = {
    "location": "westeurope",
    "clusters": [
        {"name": "manager", "role": "manager"},
        {"name": "worker-1", "role": "worker", "virtualNodes": {"enabled": True}},
        {"name": "worker-2", "role": "worker", "virtualNodes": {"enabled": True}},
    ],
    "karmada": {"apiServer": {"allowedSourceRanges": [RUNNER]}, "applications": [APP]},
}


def errors_for(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_fleet(raw)
    return [str(i) for i in info.value.errors]
