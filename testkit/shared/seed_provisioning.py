"""What tests/test_seed_provisioning.py shares with other test modules (they import it from here,
not from a test module): seed_fleet and what they need."""

from __future__ import annotations

from typing import Any

from checks.stack import parse_fleet
from config.models import FleetConfig

# One AKS cluster with the how-to's autoscaled pool (`--min-count 1 --max-count 5`) and queues
# named as in the how-to. Its flavor selects the pool by AKS's `agentpool` label rather than
# `pool:`, so it is written that way (config then suggests `pool:`, as a warning).
SEED_RAW: dict[str, Any] = {
    "location": "westeurope",
    "kubernetesVersion": "1.36",
    "clusters": [
        {
            "name": "aks-kueue",
            "role": "standalone",
            "pools": [
                {"name": "scalepool", "vmSize": "Standard_D4s_v3", "minCount": 1, "maxCount": 5}
            ],
            "queues": {
                "namespaces": [{"name": "cas-kueue-demo"}],
                "flavors": [{"name": "scalepool", "nodeLabels": {"agentpool": "scalepool"}}],
                "provisioningGates": [
                    {
                        "name": "cas-provisioning",
                        "configName": "cas-provreq-config",
                        "managedResources": ["cpu"],
                    }
                ],
                "clusterQueues": [
                    {
                        "name": "cas-cluster-queue",
                        "resourceGroups": [
                            {
                                "coveredResources": ["cpu", "memory"],
                                "flavors": [
                                    {
                                        "name": "scalepool",
                                        "resources": [
                                            {"name": "cpu", "nominalQuota": "100"},
                                            {"name": "memory", "nominalQuota": "200Gi"},
                                        ],
                                    }
                                ],
                            }
                        ],
                        "provisioningGate": {
                            "name": "cas-provisioning",
                            "onFlavors": ["scalepool"],
                        },
                    }
                ],
                "localQueues": [
                    {
                        "name": "cas-local-queue",
                        "namespace": "cas-kueue-demo",
                        "clusterQueue": "cas-cluster-queue",
                    }
                ],
            },
        }
    ],
}


def seed_fleet() -> FleetConfig:
    return parse_fleet(SEED_RAW)[0]
