"""What one cluster answered: its Kueue, autoscaling and node objects as plain dicts (pure).

The shapes are the API server's JSON of Kueue v0.19.2 (`kueue.x-k8s.io/v1beta2`), the cluster
autoscaler's ProvisioningRequest (`autoscaling.x-k8s.io/v1`) and core `v1` Nodes: whatever fetched
them (fleetview.fetch, or a test building them from the pinned CRD schemas) hands them in as is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

KUEUE_GROUP: Final = "kueue.x-k8s.io"
KUEUE_VERSION: Final = "v1beta2"
PROVISIONING_GROUP: Final = "autoscaling.x-k8s.io"
PROVISIONING_VERSION: Final = "v1"
# Kueue v0.19.2 apis/kueue/v1beta2: multikueue_types.go MultiKueueControllerName and
# provisioningrequestconfig_types.go ProvisioningRequestControllerName.
MULTIKUEUE_CONTROLLER: Final = "kueue.x-k8s.io/multikueue"
PROVISIONING_CONTROLLER: Final = "kueue.x-k8s.io/provisioning-request"
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
ORIGIN_LABEL: Final = "kueue.x-k8s.io/multikueue-origin"
# AKS labels every node with its pool; plain `agentpool` is the older spelling of the same.
POOL_LABELS: Final = ("kubernetes.azure.com/agentpool", "agentpool")

VISIBILITY_GROUP: Final = "visibility.kueue.x-k8s.io"
VISIBILITY_VERSION: Final = "v1beta2"

# The lists fetched per cluster, by field of `Snapshot`: (group, version, plural, namespaced).
# Nodes first: every API server serves them, so a 404 there means the address is not one.
KINDS: Final[Mapping[str, tuple[str, str, str, bool]]] = {
    "nodes": ("", "v1", "nodes", False),
    "cluster_queues": (KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", False),
    "local_queues": (KUEUE_GROUP, KUEUE_VERSION, "localqueues", True),
    "workloads": (KUEUE_GROUP, KUEUE_VERSION, "workloads", True),
    "admission_checks": (KUEUE_GROUP, KUEUE_VERSION, "admissionchecks", False),
    "provisioning_request_configs": (
        KUEUE_GROUP,
        KUEUE_VERSION,
        "provisioningrequestconfigs",
        False,
    ),
    "multikueue_clusters": (KUEUE_GROUP, KUEUE_VERSION, "multikueueclusters", False),
    "multikueue_configs": (KUEUE_GROUP, KUEUE_VERSION, "multikueueconfigs", False),
    "provisioning_requests": (
        PROVISIONING_GROUP,
        PROVISIONING_VERSION,
        "provisioningrequests",
        True,
    ),
}

Obj = dict[str, Any]


@dataclass(frozen=True)
class Snapshot:
    """One cluster's objects, or why there are none (`error`: unreachable, forbidden, timed out).

    `missing` names the kinds the cluster does not serve (a CRD not installed): not an error, the
    ProvisioningRequest CRD is absent wherever no gate exists.
    """

    cluster: str
    error: str | None = None
    seconds: float = 0.0
    cluster_queues: list[Obj] = field(default_factory=list)
    local_queues: list[Obj] = field(default_factory=list)
    workloads: list[Obj] = field(default_factory=list)
    admission_checks: list[Obj] = field(default_factory=list)
    provisioning_request_configs: list[Obj] = field(default_factory=list)
    multikueue_clusters: list[Obj] = field(default_factory=list)
    multikueue_configs: list[Obj] = field(default_factory=list)
    provisioning_requests: list[Obj] = field(default_factory=list)
    nodes: list[Obj] = field(default_factory=list)
    missing: tuple[str, ...] = ()
    # Kueue's visibility API (visibility.kueue.x-k8s.io/v1beta2, clusterqueues/CQ/pendingworkloads):
    # per ClusterQueue, its pending Workloads in queue order; None when not served or not read,
    # and `visibility_note` says why.
    pending_workloads: dict[str, list[Obj]] | None = None
    visibility_note: str = ""

    @property
    def reachable(self) -> bool:
        return self.error is None

    @cached_property
    def workload_index(self) -> dict[tuple[str, str], Obj]:
        """Its Workloads by (namespace, name): a copy is looked up once per job, not scanned."""
        return {(namespace(w), name(w)): w for w in self.workloads}

    @property
    def is_manager(self) -> bool:
        """A MultiKueue manager: it holds MultiKueueClusters (the program puts them only there)."""
        return bool(self.multikueue_clusters)


def name(obj: Mapping[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def namespace(obj: Mapping[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("namespace", ""))


def ref(obj: Mapping[str, Any]) -> str:
    ns = namespace(obj)
    return f"{ns}/{name(obj)}" if ns else name(obj)


def condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    conditions: list[dict[str, Any]] = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def is_true(obj: Mapping[str, Any], kind: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == "True"


def parse_time(value: object) -> dt.datetime | None:
    """An RFC 3339 timestamp of the API server (`2026-12-03T19:40:00Z`), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def age(value: object, now: dt.datetime) -> float | None:
    """Seconds from an API timestamp to `now` (never negative: clocks of clusters drift)."""
    t = parse_time(value)
    return None if t is None else max(0.0, (now - t).total_seconds())


def human(seconds: float | None) -> str:
    """`42s`, `3m12s`, `5h03m`, `2d04h`: short, for a table cell."""
    if seconds is None:
        return "-"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"
