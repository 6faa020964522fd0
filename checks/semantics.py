"""Rules about what a valid-looking stack would actually do once Kueue runs it.

Each of these passed every schema and reference check in a committed stack, which then dispatched
nothing: a dispatching queue nobody can submit to, a framework whose CRD no cluster has, a gate
that lets CPU-only jobs onto GPU nodes at once.
"""

from __future__ import annotations

from collections.abc import Iterator

from builders.frameworks import installed_by_stack
from checks.common import Check
from config.errors import Issue, key_path
from config.kueue import ClusterQueueConfig
from config.models import ClusterConfig, FleetConfig
from config.resolve import (
    clusters_by_name,
    custom_shapes,
    dispatching_queues,
    gate_flavors,
    queue_workers,
    with_mirrored_queues,
    worker_queue_for,
)
from upstream.aks import lookup_vm
from upstream.frameworks import operator_for
from upstream.k8s import NAMESPACE_NAME_LABEL
from upstream.kueue import FRAMEWORK_CRDS

# What a CPU-only workload requests: a gated flavor whose group covers them but whose gate manages
# neither admits such a workload with no ProvisioningRequest.
CPU_ONLY_RESOURCES = ("cpu", "memory")


def check_queues_have_local_queues(fleet: FleetConfig) -> Iterator[Issue]:
    """A dispatching queue needs a manager LocalQueue; any other queue without one is unused.

    Jobs reach a ClusterQueue only through a LocalQueue (the `kueue.x-k8s.io/queue-name` label),
    and MultiKueue mirrors only the manager's LocalQueues to the workers.
    """
    manager = fleet.manager
    dispatching = set(dispatching_queues(fleet))
    deployed = with_mirrored_queues(fleet)
    for i, (declared, cluster) in enumerate(zip(fleet.clusters, deployed.clusters, strict=True)):
        used = {lq.cluster_queue for lq in cluster.queues.local_queues}
        if any(declared.queues.cluster_queue(n) is None for n in used):
            # A LocalQueue names a ClusterQueue that does not exist (reported by
            # check_local_queues): most likely a typo of the queue reported unused here.
            continue
        is_manager = manager is not None and declared.name == manager.name
        for j, cq in enumerate(declared.queues.cluster_queues):
            if cq.name in used:
                continue
            path = key_path("clusters", i, "queues", "clusterQueues", j)
            if is_manager and cq.name in dispatching:
                ns = next(
                    (
                        n.name
                        for n in declared.queues.namespaces
                        if cq.namespace_selector.matches({**n.labels, NAMESPACE_NAME_LABEL: n.name})
                    ),
                    "<namespace>",
                )
                yield Issue(
                    path,
                    f"dispatching ClusterQueue {cq.name!r} has no LocalQueue on the manager: no "
                    "job can be submitted to it and none is mirrored to the workers; add "
                    f"{{name: {cq.name}, namespace: {ns}, clusterQueue: {cq.name}}} to "
                    f"{key_path('clusters', i, 'queues', 'localQueues')}",
                )
            else:
                yield Issue(
                    path,
                    f"no LocalQueue points at ClusterQueue {cq.name!r} (declared or mirrored): "
                    "nothing can be submitted to it",
                    "warning",
                )


def check_framework_crds(fleet: FleetConfig) -> Iterator[Issue]:
    """A framework whose CRD the stack installs nowhere: fatal with MultiKueue, idle without.

    Every non-core framework's kind comes from another project (JobSet, Kubeflow, Ray, ...). The
    stack installs KubeRay and the training operator when `operators` says so (checks.frameworks
    judges those); any other must be declared `operators.installedElsewhere`. The manager opens a
    MultiKueue watch of each enabled framework on every worker and marks a worker connected only
    when all watches are up.
    """
    multikueue = fleet.multi_kueue is not None and fleet.manager is not None
    covered = {*installed_by_stack(fleet), *fleet.operators.installed_elsewhere}
    for i, name in enumerate(fleet.kueue.frameworks):
        crd = FRAMEWORK_CRDS.get(name)
        if crd is None or name in covered:
            continue
        path = key_path("kueue", "frameworks", i)
        op = operator_for(name)
        install = (
            f"let the stack install its operator on the workers (operators.{op.key}: {{}}, "
            f"{op.title} {op.default_version}), or "
            if op is not None
            else ""
        )
        ways_out = (
            f"{install}declare it run by someone else with the version on the manager and "
            f"every worker (operators.installedElsewhere: {{{name}: {{version: ...}}}}), or "
            "remove it from kueue.frameworks"
        )
        if multikueue:
            yield Issue(
                path,
                f"{name} needs the CRD {crd} on the manager and every worker, and this stack "
                "installs it on none: the manager's MultiKueue watch of it fails on each "
                "worker, no MultiKueueCluster becomes Active and nothing is dispatched; "
                + ways_out,
            )
        else:
            yield Issue(
                path,
                f"{name} needs the CRD {crd}, which this stack does not install: Kueue skips the "
                "integration until that CRD exists on the cluster; " + ways_out,
                "warning",
            )


def check_gates_cover_cpu_work(fleet: FleetConfig) -> Iterator[Issue]:
    """A gate managing only some resources must not front a flavor that admits CPU-only work.

    A ProvisioningRequestConfig with `managedResources` treats a workload that requests none of
    them as ready (`NoRequestNeeded`): on a GPU flavor whose queue also covers cpu/memory, a
    CPU-only job is admitted at once and runs on the GPU pool (with MultiKueue's AllAtOnce it
    also wins the race against the workers that wait for a scale-up).
    """
    for i, c in enumerate(fleet.clusters):
        q = c.queues
        for j, cq in enumerate(q.cluster_queues):
            ref = cq.provisioning_gate
            gate = q.gate(ref.name) if ref is not None else None
            if gate is None or not gate.managed_resources:
                continue
            managed = set(gate.managed_resources)
            if managed & set(CPU_ONLY_RESOURCES):
                continue  # CPU work asks for a scale-up too
            gated = set(gate_flavors(q, cq) or cq.flavor_names)
            for k, group in enumerate(cq.resource_groups):
                unmanaged = [r for r in group.covered_resources if r in CPU_ONLY_RESOURCES]
                # A group that covers none of the managed resources never gets a request at
                # all: check_cluster_queues warns about that gate already.
                if not unmanaged or not managed & set(group.covered_resources):
                    continue
                for m, fq in enumerate(group.flavors):
                    if fq.name not in gated:
                        continue
                    yield Issue(
                        f"{key_path('clusters', i, 'queues', 'clusterQueues', j)}"
                        f".resourceGroups[{k}].flavors[{m}]",
                        f"flavor {fq.name!r} is behind gate {gate.name!r}, which manages only "
                        f"{', '.join(gate.managed_resources)}, but ClusterQueue {cq.name!r} also "
                        f"covers {', '.join(unmanaged)} on it: a CPU-only workload passes the gate "
                        "at once (NoRequestNeeded) and runs on this flavor's nodes; give this "
                        "work a ClusterQueue of its own (with MultiKueue: a manager queue sent "
                        "only here, multiKueue.clusterQueueWorkers) and drop the gate's "
                        "managedResources, or keep this flavor out of queues for CPU work",
                    )


def _flavor_pools_gpu(
    fleet: FleetConfig, cluster: ClusterConfig, cq: ClusterQueueConfig
) -> list[tuple[str, bool]]:
    """(pool, has GPUs) of every flavor of `cq`; a flavor with no pool counts as a CPU place."""
    shapes = custom_shapes(fleet)
    out: list[tuple[str, bool]] = []
    for name in cq.flavor_names:
        flavor = cluster.queues.flavor(name)
        pool = cluster.pool(flavor.pool) if flavor is not None and flavor.pool else None
        if pool is None:
            out.append(("", False))
            continue
        shape = lookup_vm(pool.vm_size, shapes)
        out.append((pool.name, bool(shape and shape.gpus)))
    return out


def check_cpu_work_reaches_gpu_only_workers(fleet: FleetConfig) -> Iterator[Issue]:
    """A dispatching queue that reaches both CPU and GPU-only workers sends CPU jobs to GPU nodes.

    MultiKueue hands a workload to whichever worker admits it first. A manager ClusterQueue that
    reaches a worker with a CPU pool takes CPU-only jobs; every worker it reaches whose queue has
    GPU pools only admits those jobs too (nothing in them asks for a GPU), so the job runs on a
    GPU node, and a ProvisioningRequest gate buys one for it.
    """
    manager = fleet.manager
    if manager is None or fleet.multi_kueue is None:
        return
    by_name = clusters_by_name(fleet)
    for cq_name, workers in queue_workers(fleet).items():
        target = worker_queue_for(fleet, cq_name)
        places: list[tuple[int, int, ClusterConfig, list[tuple[str, bool]]]] = []
        for w in workers:
            if w not in by_name:
                continue
            wi, worker = by_name[w]
            j = next(
                (j for j, q in enumerate(worker.queues.cluster_queues) if q.name == target), None
            )
            if j is None:  # check_multikueue_queues reports the missing queue
                continue
            pools = _flavor_pools_gpu(fleet, worker, worker.queues.cluster_queues[j])
            places.append((wi, j, worker, pools))
        cpu_workers = [c.name for _, _, c, pools in places if any(not g for _, g in pools)]
        if not cpu_workers:
            continue  # GPU work only: every worker it reaches runs GPU pools
        for wi, j, worker, pools in places:
            if not pools or not all(g for _, g in pools):
                continue
            gpu = ", ".join(sorted({p for p, _ in pools}))
            yield Issue(
                key_path("clusters", wi, "queues", "clusterQueues", j),
                f"manager ClusterQueue {cq_name!r} dispatches CPU-only jobs (it reaches CPU pools "
                f"on {', '.join(cpu_workers)}), and MultiKueue may send them here too, where "
                f"ClusterQueue {target!r} has GPU pools only ({gpu}): a CPU job would run on a "
                "GPU node (a provisioning gate buys one for it); dispatch GPU work through a "
                f"manager ClusterQueue and LocalQueue of its own that reach only "
                f"{worker.name!r} (multiKueue.clusterQueueWorkers, e.g. "
                f"{{{cq_name}: [{', '.join(cpu_workers)}], {cq_name}-gpu: [{worker.name}]}}), "
                f"or give {worker.name!r}'s ClusterQueue {target!r} a flavor on a CPU pool",
            )


SEMANTIC_CHECKS: tuple[Check, ...] = (
    check_queues_have_local_queues,
    check_framework_crds,
    check_gates_cover_cpu_work,
    check_cpu_work_reaches_gpu_only_workers,
)
