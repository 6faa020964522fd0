"""What tests/realtier/test_provisioning_gate.py shares with other test modules (they import it from
here, not from a test module): Gated, provisioning_requests, job and what they need."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from config.models import PoolConfig
from testkit.realtier.harness import ControlPlane
from testkit.realtier.jobs import suspended_job
from testkit.realtier.twin_run import (
    PROVISIONING_API,
)

RUN_FOR: Final = "10s"  # each pod of the gated Job stays Running this long (kwok delay)


@dataclass(frozen=True, slots=True)
class Gated:
    cluster: str
    namespace: str
    local_queue: str
    cluster_queue: str
    pool: PoolConfig
    node_cpu_millis: int  # allocatable CPU of one of the pool's nodes


def job(gated: Gated, name: str, pods: int) -> dict[str, Any]:
    """A suspended Job for the gated queue; each pod asks for more than half a node's CPU, so
    every pod needs a node of its own."""
    requests = {"cpu": f"{gated.node_cpu_millis // 2 + 100}m", "memory": "128Mi"}
    return suspended_job(
        name, gated.namespace, gated.local_queue, requests, pods=pods, run_for=RUN_FOR
    )


def gate_json(plane: ControlPlane, path: str) -> dict[str, Any]:
    status, body = plane.get(path)
    return json.loads(body) if status == 200 else {}


def provisioning_requests(plane: ControlPlane, ns: str, workload: str) -> list[dict[str, Any]]:
    items = gate_json(plane, f"{PROVISIONING_API}/namespaces/{ns}/provisioningrequests").get(
        "items"
    )
    return [
        pr
        for pr in items or []
        if any(o.get("name") == workload for o in pr["metadata"].get("ownerReferences") or [])
    ]
