"""MultiKueue settings (`fleet.multiKueue`): which workers the manager dispatches to, and how.

With `multiKueue` set, the manager dispatches its ClusterQueues' workloads to the workers: each
dispatching ClusterQueue to its dispatch set (`clusterQueueWorkers`, else `workers`, else every
worker).
Queues are stated once, on the manager (`clusters[<manager>].queues`): the namespaces and
LocalQueues of a dispatching ClusterQueue are mirrored to every worker of its set, because
MultiKueue copies a job to a worker under the same namespace and LocalQueue name. The worker
ClusterQueue a mirrored LocalQueue points at has the manager queue's name unless
`workerClusterQueues` maps it; worker ClusterQueues (flavors, quotas, provisioning gates) stay per
worker. How the mirroring resolves: `config.resolve`; its rules: `checks.multikueue`.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field

from config.base import Model
from upstream.kueue import DEFAULT_CONNECT_TIMEOUT

MAX_ROTATION: Final = 1_000_000
MIN_CONNECT_TIMEOUT: Final = 10
MAX_CONNECT_TIMEOUT: Final = 3600


class UnmirroredQueue(Model):
    """A LocalQueue allowed on one side only: a manager-local queue, or a worker's own."""

    cluster: str
    namespace: str
    name: str


class MultiKueueSettings(Model):
    """Which workers the manager dispatches to, their credentials' generation, what is mirrored."""

    # The default dispatch set: every cluster with role worker, in config order (the Incremental
    # dispatcher's order). A ClusterQueue not in `clusterQueueWorkers` dispatches to this set.
    workers: list[str] | None = Field(default=None, min_length=1)
    # Manager ClusterQueue -> its own dispatch set (e.g. GPU work to GPU workers): its own
    # MultiKueueConfig and AdmissionCheck (`multikueue-<queue>`), its LocalQueues mirrored only
    # there. Kueue gives a ClusterQueue one MultiKueue check, whose MultiKueueConfig lists at most
    # 20 clusters, so a set is 1..20 workers; more workers take more dispatching ClusterQueues.
    cluster_queue_workers: dict[str, list[str]] = Field(default_factory=dict[str, list[str]])
    # Workers that get no new work while what runs there finishes (docs/operations.md, "Draining
    # a worker"). A drained worker keeps its MultiKueueCluster, credentials and place in every
    # MultiKueueConfig: Kueue v0.19.2 evicts an admitted Workload whose worker leaves the config.
    # Its mirrored LocalQueues get `stopPolicy: Hold` instead, which admits nothing new there
    # and lets admitted Workloads run to completion.
    drain: list[str] = Field(default_factory=list[str])
    # Workers removed from MultiKueue (from the stack, or from `workers`) although the manager
    # still has Workloads admitted on them: a dead worker whose work is lost anyway. Without it,
    # `pulumi up` reads the manager first and refuses (docs/operations.md, "Retiring a worker").
    force_retire: list[str] = Field(default_factory=list[str])
    # Credential generation per worker (default 0): raise it for a new token (docs/operations.md).
    rotation: dict[str, int] = Field(default_factory=dict[str, int])
    # How long `pulumi up` waits for each MultiKueueCluster to be Active (Kueue connected to the
    # worker with the credential) before it fails, naming the worker.
    connect_timeout_seconds: int = Field(
        default=DEFAULT_CONNECT_TIMEOUT, ge=MIN_CONNECT_TIMEOUT, le=MAX_CONNECT_TIMEOUT
    )
    # Manager ClusterQueues that get the MultiKueue admission check. Default: all of them.
    cluster_queues: list[str] | None = None
    # Manager ClusterQueue -> the workers' ClusterQueue its mirrored LocalQueues point at.
    worker_cluster_queues: dict[str, str] = Field(default_factory=dict[str, str])
    allow_unmirrored: list[UnmirroredQueue] = Field(default_factory=list[UnmirroredQueue])
