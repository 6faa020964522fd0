"""The `e2e` fleet: the dev stack's Kueue/MultiKueue layer on three `source: existing` planes.

Differences from dev, and why: clusters are `existing` (each plane's admin kubeconfig); Kueue is
`manifests-only` (the CRDs are applied, the controller runs beside the plane); the workers'
team-a queue uses flavor `default` without a pool (these planes have no AKS node pools) and has no
provisioning gate (no cluster autoscaler serves ProvisioningRequests here, so the gate could never
become Active). The manager side is dev's as is: team-a, 32 CPU / 96Gi on flavor `default`.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from checks.stack import parse_fleet
from config.models import FleetConfig
from testkit.realtier.engine import kubeconfig_key
from testkit.realtier.harness import ControlPlane

KUEUE_VERSION: Final = "0.19.2"
TEAM: Final = "team-a"
CONNECT_TIMEOUT: Final = 30
DOCUMENTED_LINE_TIMEOUT: Final = 60


def _queues(cpu: str, memory: str) -> dict[str, Any]:
    return {
        "namespaces": [{"name": TEAM}],
        "flavors": [{"name": "default"}],
        "clusterQueues": [
            {
                "name": TEAM,
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": TEAM}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "default",
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
    }


def e2e_raw() -> dict[str, Any]:
    """The `aks-batch-fleet:fleet` value; each plane's kubeconfig is in `kubeconfig_key(name)`."""
    manager_queues = _queues("32", "96Gi")
    manager_queues["localQueues"] = [{"name": TEAM, "namespace": TEAM, "clusterQueue": TEAM}]
    clusters: list[dict[str, Any]] = [
        {
            "name": "manager",
            "role": "manager",
            "source": "existing",
            "existing": {"kubeconfigSecret": kubeconfig_key("manager")},
            "queues": manager_queues,
        }
    ]
    clusters += [
        {
            "name": worker,
            "role": "worker",
            "source": "existing",
            "existing": {"kubeconfigSecret": kubeconfig_key(worker)},
            # Mirrored from the manager: the namespace and LocalQueue come from MultiKueue.
            "queues": {k: v for k, v in _queues("16", "48Gi").items() if k != "namespaces"},
        }
        for worker in ("worker-1", "worker-2")
    ]
    return {
        "kueue": {
            "version": KUEUE_VERSION,
            "frameworks": ["batch/job"],
            "install": "manifests-only",
        },
        # A worker that refuses its credential fails `up` in 30 s, not the default 5 minutes
        # (measured: a MultiKueueCluster here is Active ~1.5 s after it is created).
        "multiKueue": {"connectTimeoutSeconds": CONNECT_TIMEOUT},
        "clusters": clusters,
    }


def e2e_fleet(planes: Mapping[str, ControlPlane]) -> FleetConfig:
    del planes  # the fleet names its planes' kubeconfigs by config key (set_fleet sets them)
    fleet, _ = parse_fleet(e2e_raw(), source="e2e")
    return fleet


def run_documented(plane: ControlPlane, line: str) -> str:
    """One shell line of the docs, run as written against `plane` (its admin kubeconfig as
    KUBECONFIG, the tier's kubectl first on a minimal PATH, `bash -o pipefail` so a failing
    kubectl before a pipe fails the line); asserts it exits 0 and returns its stdout."""
    kubectl = plane.tools.kubectl if plane.tools is not None else Path("kubectl")
    env = {
        "PATH": f"{Path(kubectl).parent}:/usr/bin:/bin",
        "KUBECONFIG": str(plane.kubeconfig),
        "HOME": str(plane.workdir),
    }
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {line}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=DOCUMENTED_LINE_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"{line}\n{done.stderr}"
    return done.stdout
