"""What tests/test_kueue_config.py shares with other test modules (they import it from here, not
from a test module): BASE, base, texts and what they need."""

from __future__ import annotations

import copy
from typing import Any

from checks.stack import parse_fleet
from config.errors import ConfigError, Issue

# One standalone cluster, a tainted autoscaled pool, a gated queue: the shape of the AKS article.
BASE: dict[str, Any] = {
    "location": "westeurope",
    "clusters": [
        {
            "name": "solo",
            "role": "standalone",
            "pools": [
                {
                    "name": "batch",
                    "vmSize": "Standard_D4s_v5",
                    "minCount": 0,
                    "maxCount": 5,
                    "taints": ["workload=batch:NoSchedule"],
                }
            ],
            "queues": {
                "namespaces": [{"name": "team-a", "labels": {"team": "a"}}],
                "flavors": [{"name": "batch", "pool": "batch"}],
                "provisioningGates": [{"name": "scaleup"}],
                "clusterQueues": [
                    {
                        "name": "team-a",
                        "namespaceSelector": {"matchLabels": {"team": "a"}},
                        "resourceGroups": [
                            {
                                "coveredResources": ["cpu", "memory"],
                                "flavors": [
                                    {
                                        "name": "batch",
                                        "resources": [
                                            {"name": "cpu", "nominalQuota": "16"},
                                            {"name": "memory", "nominalQuota": "48Gi"},
                                        ],
                                    }
                                ],
                            }
                        ],
                        "provisioningGate": {"name": "scaleup"},
                    }
                ],
                "localQueues": [
                    {"name": "team-a", "namespace": "team-a", "clusterQueue": "team-a"}
                ],
            },
        }
    ],
}


def base() -> dict[str, Any]:
    return copy.deepcopy(BASE)


def issues(raw: dict[str, Any]) -> list[Issue]:
    """Errors and warnings, whether or not the config is accepted."""
    try:
        _, warnings = parse_fleet(raw)
    except ConfigError as err:
        return err.issues
    return warnings


def texts(raw: dict[str, Any], severity: str = "error") -> list[str]:
    return [str(i) for i in issues(raw) if i.severity == severity]
