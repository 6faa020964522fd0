"""Generated fleets of 1 manager + N workers, for scale tests and scripts/bench.

Each worker is a copy of the dev stack's workers: a D2s_v5 system pool, virtual nodes, a `batch`
pool autoscaled 0..5 of D4s_v5, and Kueue queues with a `batch-scaleup` ProvisioningRequest gate.
The manager dispatches to every worker through ceil(N / per_queue) ClusterQueues (`batch-1`,
`batch-2`, ...) of at most `per_queue` workers each (Kueue: 20), with quotas that are the sum of
their workers'. Karmada (optional) spreads one UnitedDeployment, 3 replicas per worker.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from upstream.kueue import MAX_WORKERS

WORKER_CPU = 16
WORKER_MEMORY_GI = 48


def worker_name(i: int) -> str:
    return f"worker-{i:03d}"


def _resources(cpu: int, memory_gi: int) -> list[dict[str, Any]]:
    return [
        {"name": "cpu", "nominalQuota": str(cpu)},
        {"name": "memory", "nominalQuota": f"{memory_gi}Gi"},
    ]


def _worker(i: int) -> dict[str, Any]:
    return {
        "name": worker_name(i),
        "role": "worker",
        "systemPool": {"vmSize": "Standard_D2s_v5", "count": 1},
        "virtualNodes": {"enabled": True},
        "pools": [
            {
                "name": "batch",
                "vmSize": "Standard_D4s_v5",
                "minCount": 0,
                "maxCount": 5,
                "labels": {"workload": "batch"},
            }
        ],
        "autoscalerProfile": {"scaleDownUnneededTime": "5m", "expander": "least-waste"},
        "queues": {
            "namespaces": [{"name": "team-a"}],
            "flavors": [{"name": "batch", "pool": "batch"}],
            "provisioningGates": [{"name": "batch-scaleup", "managedResources": ["cpu"]}],
            "clusterQueues": [
                {
                    "name": "team-a",
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [
                                {
                                    "name": "batch",
                                    "resources": _resources(WORKER_CPU, WORKER_MEMORY_GI),
                                }
                            ],
                        }
                    ],
                    "provisioningGate": {"name": "batch-scaleup"},
                }
            ],
        },
    }


def fleet(
    n: int, *, per_queue: int = MAX_WORKERS, karmada: bool = True, split: bool = True
) -> dict[str, Any]:
    """The `aks-batch-fleet:fleet` value of a 1 + n fleet.

    With `split=False` one ClusterQueue dispatches to every worker (`multiKueue: {}`), which
    Kueue cannot express beyond 20 workers.
    """
    workers = [worker_name(i) for i in range(1, n + 1)]
    groups = [workers[k : k + per_queue] for k in range(0, n, per_queue)] if split else [workers]
    names = [f"batch-{k + 1}" for k in range(len(groups))]
    selector = {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}}
    manager_queues = [
        {
            "name": name,
            "namespaceSelector": selector,
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "default",
                            "resources": _resources(
                                WORKER_CPU * len(group), WORKER_MEMORY_GI * len(group)
                            ),
                        }
                    ],
                }
            ],
        }
        for name, group in zip(names, groups, strict=True)
    ]
    multikueue: dict[str, Any] = {"workerClusterQueues": dict.fromkeys(names, "team-a")}
    if split and len(groups) > 1:
        multikueue["clusterQueueWorkers"] = dict(zip(names, groups, strict=True))
    out: dict[str, Any] = {
        "location": "westeurope",
        "resourceGroup": f"aks-batch-fleet-bench{n}",
        "kubernetesVersion": "1.36",
        "kueue": {"version": "0.19.2", "frameworks": ["batch/job"]},
        "multiKueue": multikueue,
        "clusters": [
            {
                "name": "manager",
                "role": "manager",
                "systemPool": {"vmSize": "Standard_D2s_v5", "count": 1},
                "queues": {
                    "namespaces": [{"name": "team-a"}],
                    "flavors": [{"name": "default"}],
                    "clusterQueues": manager_queues,
                    "localQueues": [
                        {"name": name, "namespace": "team-a", "clusterQueue": name}
                        for name in names
                    ],
                },
            },
            *(_worker(i) for i in range(1, n + 1)),
        ],
    }
    if karmada:
        out["karmada"] = {
            "apiServer": {"exposure": "public", "allowedSourceRanges": ["0.0.0.0/0"]},
            "applications": [
                {
                    "name": "sample-ud",
                    "namespace": "sample",
                    "replicas": 3 * n,
                    "template": {
                        "kind": "statefulSet",
                        "image": "mcr.microsoft.com/azuredocs/aci-helloworld",
                        "ports": [80],
                        "resources": {
                            "requests": {"cpu": "50m", "memory": "50Mi"},
                            "limits": {"cpu": "50m", "memory": "50Mi"},
                        },
                    },
                    "subsets": [
                        {"name": "subset-a", "replicas": "50%", "virtualNodes": False},
                        {"name": "subset-b", "virtualNodes": True},
                    ],
                    "propagation": {"weights": dict.fromkeys(workers, 1)},
                }
            ],
        }
    return out


def queues_needed(n: int) -> int:
    return math.ceil(n / MAX_WORKERS)


def write_stack(directory: Path, stack: str, fleet_value: dict[str, Any]) -> Path:
    """`Pulumi.<stack>.yaml` in `directory`, as a user would write it."""
    path = directory / f"Pulumi.{stack}.yaml"
    document = {
        "config": {"azure-native:location": "westeurope", "aks-batch-fleet:fleet": fleet_value}
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path
