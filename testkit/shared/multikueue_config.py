"""What tests/test_multikueue_config.py shares with other test modules (they import it from here,
not from a test module): BASE, worker and what they need."""

from __future__ import annotations

from typing import Any


def worker(name: str, cpu: str = "8", memory: str = "32Gi") -> dict[str, Any]:
    return {
        "name": name,
        "role": "worker",
        "pools": [{"name": "batch", "vmSize": "Standard_D4s_v5", "minCount": 0, "maxCount": 5}],
        "queues": {
            "flavors": [{"name": "batch", "pool": "batch"}],
            "clusterQueues": [
                {
                    "name": "batch",
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [
                                {
                                    "name": "batch",
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": cpu},
                                        {"name": "memory", "nominalQuota": memory},
                                    ],
                                }
                            ],
                        }
                    ],
                }
            ],
        },
    }


# The MultiKueue manager/worker walk-through's shape: the manager's ClusterQueue `to-workers`
# dispatches; the workers' queue is `batch` (different names on purpose: MultiKueue matches
# namespace + LocalQueue, not CQ names).
BASE: dict[str, Any] = {
    "location": "westeurope",
    "multiKueue": {"workerClusterQueues": {"to-workers": "batch"}},
    "clusters": [
        {
            "name": "manager",
            "role": "manager",
            "queues": {
                "namespaces": [{"name": "team-a", "labels": {"team": "a"}}],
                "flavors": [{"name": "default"}],
                "clusterQueues": [
                    {
                        "name": "to-workers",
                        "resourceGroups": [
                            {
                                "coveredResources": ["cpu", "memory"],
                                "flavors": [
                                    {
                                        "name": "default",
                                        "resources": [
                                            {"name": "cpu", "nominalQuota": 16},
                                            {"name": "memory", "nominalQuota": "64Gi"},
                                        ],
                                    }
                                ],
                            }
                        ],
                    }
                ],
                "localQueues": [
                    {"name": "team-a", "namespace": "team-a", "clusterQueue": "to-workers"}
                ],
            },
        },
        worker("worker-1"),
        worker("worker-2"),
    ],
}
