"""A dispatch stack: MultiKueue from a manager to workers that other stacks created.

Cluster stacks (this project's program, one per region or team) create clusters, Kueue and each
cluster's own queues, and export `kubeconfigs` as they always do. This program reads those
outputs through `pulumi.StackReference` and adds only the MultiKueue layer: a least-privilege
credential on every worker, and on the manager the kubeconfig Secrets, MultiKueueClusters, one
MultiKueueConfig and AdmissionCheck per dispatch set (Kueue: at most 20 workers each), and the
dispatching ClusterQueues and LocalQueues that carry them. No `pulumi up` holds the whole fleet:
each cluster stack holds its own clusters, this one a few Kubernetes objects per worker.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pulumi
from pydantic import Field

from builders import kueue_queues
from builders.manifest import Manifest
from builders.multikueue import admission_check
from components.existing import ExistingCluster, ExistingClusterArgs
from components.kube import apply_manifests
from components.multikueue import (
    MultiKueueManager,
    MultiKueueManagerArgs,
    MultiKueueWorkerAccess,
    MultiKueueWorkerAccessArgs,
    WorkerLink,
)
from config.base import Model
from config.errors import ConfigError, Issue, key_path
from config.kueue import KueueObjects, KueueSettings
from config.models import ClusterConfig
from config.resolve import set_name
from constants import OUT_KUBECONFIGS
from upstream.kueue import MAX_WORKERS, MULTIPLE_CHECKS_REASON


class StackClusters(Model):
    """Clusters of another stack: its fully qualified name and the clusters used from it."""

    stack: str = Field(min_length=1)
    clusters: list[str] = Field(min_length=1)


class DispatchSettings(Model):
    """This stack's config (`dispatch:settings`)."""

    manager: StackClusters = Field(description="one cluster: the manager")
    workers: list[StackClusters] = Field(min_length=1)
    kueue: KueueSettings = KueueSettings()
    # The manager's dispatching queues (namespaces, flavors, ClusterQueues, LocalQueues).
    queues: KueueObjects
    # Manager ClusterQueue -> the workers it dispatches to: 1..20 (one MultiKueueConfig each).
    dispatch: dict[str, list[str]] = Field(min_length=1)


def problems(settings: DispatchSettings) -> Iterator[Issue]:
    """Kueue's limits and references between the keys, each with its key path."""
    if len(settings.manager.clusters) != 1:
        yield Issue("manager.clusters", "name exactly one cluster: the manager")
    known = {c for s in settings.workers for c in s.clusters}
    queues = {cq.name for cq in settings.queues.cluster_queues}
    for queue, workers in settings.dispatch.items():
        path = f"dispatch.{queue}"
        if queue not in queues:
            yield Issue(path, f"no ClusterQueue {queue!r} in queues.clusterQueues")
        if not 1 <= len(workers) <= MAX_WORKERS:
            yield Issue(
                path,
                f"{len(workers)} workers: a MultiKueueConfig lists 1..{MAX_WORKERS} clusters "
                f"(Kueue's CRD, spec.clusters maxItems {MAX_WORKERS}) and a ClusterQueue takes "
                f"one MultiKueue check ({MULTIPLE_CHECKS_REASON}); split it over more queues",
            )
        for i, worker in enumerate(workers):
            if worker not in known:
                yield Issue(key_path(path, i), f"{worker!r} is in no stack of `workers`")


def parse(raw: Any) -> DispatchSettings:
    settings = DispatchSettings.model_validate(raw)
    issues = list(problems(settings))
    if issues:
        raise ConfigError(issues, "dispatch:settings")
    return settings


def _cluster(
    ref: pulumi.StackReference, name: str, parent: pulumi.Resource | None
) -> ExistingCluster:
    """A cluster of another stack, reached with the kubeconfig that stack exports (a secret)."""
    kubeconfig = ref.get_output(OUT_KUBECONFIGS).apply(lambda docs: str(docs[name]))
    config = ClusterConfig.model_validate(
        {"name": name, "role": "standalone", "source": "existing"}
    )
    return ExistingCluster(
        name,
        ExistingClusterArgs(cluster=config, kubeconfig=pulumi.Output.secret(kubeconfig)),
        pulumi.ResourceOptions(parent=parent),
    )


def dispatch_program(settings: DispatchSettings) -> MultiKueueManager:
    """Every resource of the dispatch stack; returns the manager side."""
    stacks = [settings.manager.stack, *(s.stack for s in settings.workers)]
    refs = {s: pulumi.StackReference(s) for s in dict.fromkeys(stacks)}
    manager_name = settings.manager.clusters[0]
    manager = _cluster(refs[settings.manager.stack], manager_name, None)
    dispatched = list(dict.fromkeys(w for ws in settings.dispatch.values() for w in ws))
    stack_of = {c: s.stack for s in settings.workers for c in s.clusters}
    links: list[WorkerLink] = []
    for worker in dispatched:
        cluster = _cluster(refs[stack_of[worker]], worker, None)
        # Write verbs only where this stack dispatches to the worker: the namespaces of the
        # manager LocalQueues whose ClusterQueue reaches it (the worker's stack makes them).
        reaching = {q for q, ws in settings.dispatch.items() if worker in ws}
        team_namespaces = dict.fromkeys(
            lq.namespace for lq in settings.queues.local_queues if lq.cluster_queue in reaching
        )
        access = MultiKueueWorkerAccess(
            f"{worker}-access",
            MultiKueueWorkerAccessArgs(
                provider=cluster.provider,
                kueue_version=settings.kueue.version,
                frameworks=settings.kueue.frameworks,
                write_namespaces={ns: [] for ns in team_namespaces},
            ),
        )
        links.append(
            WorkerLink(
                name=worker,
                server=cluster.api_server_url,
                ca_data=access.ca_data,
                token=access.token,
            )
        )
    side = MultiKueueManager(
        "dispatch",
        MultiKueueManagerArgs(
            provider=manager.provider,
            workers=links,
            configs=[(set_name(q), ws) for q, ws in settings.dispatch.items()],
        ),
    )
    queues = ClusterConfig.model_validate(
        {"name": manager_name, "role": "manager", "source": "existing"}
    ).model_copy(update={"queues": settings.queues})
    checks = {q: [set_name(q)] for q in settings.dispatch}
    manifests = [
        *(Manifest(manager_name, admission_check(set_name(q), set_name(q))) for q in checks),
        *kueue_queues.cluster_objects(queues, checks),
    ]
    apply_manifests(
        manifests,
        pulumi.ResourceOptions(provider=manager.provider, depends_on=[side]),
        name_of=lambda m: f"dispatch-{m.kind.lower()}-{m.key.split('/', 1)[1]}",
    )
    pulumi.export("dispatchSets", dict(settings.dispatch))
    return side
