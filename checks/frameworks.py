"""Job operators for Kueue frameworks: versions that honour managedBy, the workers that run them.

A RayJob or PyTorchJob submitted to the manager is dispatched by MultiKueue only if the manager's
API server keeps its `managedBy` field (the kind's CRD there has it) and runs on a worker only if
that worker runs the kind's operator. Every rule here names its key path and the ways out.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from decimal import Decimal
from pathlib import Path

from builders.frameworks import (
    configured,
    manager_crd_files,
    operator_workers,
    training_operator_installs,
    version_of,
)
from checks.common import Check, duplicates
from config.errors import ConfigError, Issue, key_path
from config.models import ClusterConfig, FleetConfig, PoolConfig
from config.resolve import custom_shapes, dispatch_sets, gate_flavors, worker_queue_for
from upstream.aks import DEFAULT_MAX_PODS, GPU_RESOURCE, lookup_vm, node_allocatable
from upstream.frameworks import OPERATORS, TRAINING_OPERATOR, operator_for, supports_managed_by
from upstream.k8s import quantity_value
from upstream.kueue import FRAMEWORK_CRDS


def _key(op_key: str, *rest: str | int) -> str:
    return key_path("operators", op_key, *rest)


def check_operator_versions(fleet: FleetConfig) -> Iterator[Issue]:
    """The version must honour managedBy for its kinds, and have pinned CRDs for the manager."""
    for op, settings in configured(fleet):
        version = version_of(settings)
        field = "chartVersion" if op.key == "kuberay" else "version"
        path = _key(op.key, field)
        if not supports_managed_by(op, version):
            yield Issue(
                path,
                f"{op.title} {version} has no {op.managed_by_field} (first in "
                f"{op.managed_by_since}): the manager's API server drops the field MultiKueue "
                f"sets, so Kueue never dispatches {', '.join(op.frameworks)} to a worker; "
                f"allowed: {', '.join(op.pinned)}",
            )
        elif version not in op.pinned:
            yield Issue(
                path,
                f"{op.title} {version} has no pinned CRDs for the manager (scripts/crd-pins.json, "
                f"project {op.project}); allowed: {', '.join(op.pinned)}",
            )


def check_operator_workers(fleet: FleetConfig) -> Iterator[Issue]:
    """`workers` names known worker or standalone clusters, never the manager, once each."""
    names = [c.name for c in fleet.clusters]
    for op, settings in configured(fleet):
        if settings.workers is None:
            continue
        for name in sorted(duplicates(settings.workers)):
            yield Issue(_key(op.key, "workers"), f"{name!r} is listed more than once")
        for i, name in enumerate(settings.workers):
            cluster = fleet.cluster(name)
            path = _key(op.key, "workers", i)
            if cluster is None:
                hint = difflib.get_close_matches(name, names, n=1)
                more = f" (did you mean {hint[0]!r}?)" if hint else ""
                yield Issue(path, f"no cluster {name!r}{more}; clusters: {', '.join(names)}")
            elif cluster.role == "manager":
                yield Issue(
                    path,
                    f"{name!r} is the manager, which never runs a job operator: it holds the "
                    f"kinds' CRDs only, and a controller there would run the manager's copy of "
                    f"each job beside the worker's; list workers only",
                )


def check_dispatch_sets_run_operators(fleet: FleetConfig) -> Iterator[Issue]:
    """Every worker the manager dispatches to runs the operator of every enabled kind.

    The manager watches each enabled framework on every worker it dispatches to (Kueue v0.19.2,
    multikueuecluster.go) and marks a worker Active only when all watches are up, so one worker
    without the kind's CRD stops dispatch to it for every kind, and without the operator a job
    sent there never runs.
    """
    for op, settings in configured(fleet):
        enabled = [fw for fw in op.frameworks if fw in fleet.kueue.frameworks]
        if not enabled or settings.workers is None:
            continue
        running = set(operator_workers(fleet, settings))
        for s in dispatch_sets(fleet):
            for worker in s.workers:
                if worker in running:
                    continue
                queues = ", ".join(s.queues) or "-"
                yield Issue(
                    _key(op.key, "workers"),
                    f"worker {worker!r} is in dispatch set {s.name!r} (manager ClusterQueues "
                    f"{queues}) but does not run the {op.title}: the manager's MultiKueue watch "
                    f"of {', '.join(enabled)} fails there, so {worker!r} never becomes Active and "
                    f"a job sent to it would never run; add {worker!r} to "
                    f"{_key(op.key, 'workers')}, or remove it from that set",
                )


def check_installed_elsewhere(fleet: FleetConfig) -> Iterator[Issue]:
    """An `installedElsewhere` entry names a third-party framework this stack does not install."""
    own = {fw for op, _ in configured(fleet) for fw in op.frameworks}
    for name, entry in fleet.operators.installed_elsewhere.items():
        path = key_path("operators", "installedElsewhere", name)
        if name not in FRAMEWORK_CRDS:
            yield Issue(
                path,
                f"{name!r} is not a Kueue framework with a CRD of its own; allowed: "
                + ", ".join(sorted(FRAMEWORK_CRDS)),
            )
        elif name in own:
            op = operator_for(name)
            key = op.key if op is not None else "?"
            yield Issue(
                path,
                f"{name} is installed by this stack (operators.{key}): declare it in one place",
            )
        elif name not in fleet.kueue.frameworks:
            yield Issue(
                path,
                f"{name} is not in kueue.frameworks: Kueue does not manage it, so this entry "
                "changes nothing",
                "warning",
            )
        else:
            yield Issue(
                path,
                f"{name} {entry.version} is declared installed elsewhere: this stack cannot "
                f"prove that its CRD ({FRAMEWORK_CRDS[name]}) is on the manager and every "
                "worker, nor that the version honours managedBy and that no controller for it "
                "runs on the manager",
                "warning",
            )


def check_operators_are_used(fleet: FleetConfig) -> Iterator[Issue]:
    """An operator none of whose kinds is in kueue.frameworks runs jobs Kueue never queues."""
    for op, _ in configured(fleet):
        if not any(fw in fleet.kueue.frameworks for fw in op.frameworks):
            yield Issue(
                key_path("operators", op.key),
                f"none of {', '.join(op.frameworks)} is in kueue.frameworks: the {op.title} "
                "would run such jobs on the workers outside Kueue's quota",
                "warning",
            )


PYTORCH: str = "kubeflow.org/pytorchjob"


def check_pytorch_master_under_restricted(fleet: FleetConfig) -> Iterator[Issue]:
    """The training operator v1.9.3 gives a PyTorchJob's Worker pods an `init-pytorch` container
    (when the job has a Master) with no securityContext (pkg/controller.v1/pytorch/
    initcontainer.go), which Pod Security `restricted` refuses: such jobs never start in a
    restricted namespace of a cluster running the operator (found on the twin)."""
    settings = fleet.operators.training_operator
    if settings is None or PYTORCH not in fleet.kueue.frameworks:
        return
    runs = set(operator_workers(fleet, settings))
    for i, c in enumerate(fleet.clusters):
        # The manager's namespaces are mirrored to the workers it dispatches to.
        if c.name not in runs and c.role != "manager":
            continue
        for j, ns in enumerate(c.queues.namespaces):
            if ns.pod_security != "restricted":
                continue
            yield Issue(
                key_path("clusters", i, "queues", "namespaces", j, "podSecurity"),
                f"namespace {ns.name!r} on {c.name} enforces Pod Security restricted, and the "
                f"training operator {version_of(settings)} adds an init-pytorch container "
                "without a securityContext to the Worker pods of a PyTorchJob with a Master, which "
                "restricted refuses: such jobs never start there. Set podSecurity: baseline "
                "for this namespace, or submit PyTorchJobs without a Master (docs/ai-jobs.md)",
                "warning",
            )


def _multi_pod_set_frameworks(fleet: FleetConfig) -> list[str]:
    own = {fw for op, _ in configured(fleet) for fw in op.frameworks}
    return [
        fw
        for fw in fleet.kueue.frameworks
        if fw in own or fw in fleet.operators.installed_elsewhere
    ]


def check_gang_gates_one_pool(fleet: FleetConfig) -> Iterator[Issue]:
    """A gate over flavors on two pools that both start empty cannot scale a gang atomically.

    Kueue v0.19.2 sends one ProvisioningRequest per workload with every pod set that uses the
    gate's managed resources (all of them without `managedResources`; provisioning/controller.go,
    requiredPodSets and mergePodSets). The cluster autoscaler's best-effort-atomic class drops the
    pods that fit existing nodes and then needs ONE node group that fits all the rest
    (core/scaleup/orchestrator/orchestrator.go: allOrNothing), so a RayJob whose CPU head and GPU
    workers both need new nodes, on two pools, is never provisioned.
    """
    frameworks = _multi_pod_set_frameworks(fleet)
    if not frameworks:
        return
    for i, c in enumerate(fleet.clusters):
        q = c.queues
        for j, cq in enumerate(q.cluster_queues):
            ref = cq.provisioning_gate
            gate = q.gate(ref.name) if ref is not None else None
            if gate is None:
                continue
            pools: dict[str, PoolConfig] = {}
            for name in gate_flavors(q, cq) or cq.flavor_names:
                flavor = q.flavor(name)
                pool = c.pool(flavor.pool) if flavor is not None and flavor.pool else None
                if pool is not None:
                    pools[pool.name] = pool
            empty = sorted(p.name for p in pools.values() if p.min_count == 0)
            if len(empty) < 2:
                continue
            yield Issue(
                key_path("clusters", i, "queues", "clusterQueues", j),
                f"gate {gate.name!r} covers flavors on pools {', '.join(empty)}, which all scale "
                f"from zero: a job of {', '.join(frameworks)} whose pod sets land on two of them "
                "gets one ProvisioningRequest, and the cluster autoscaler's atomic scale-up "
                "needs a single pool that fits every pod not fitting an existing node, so it is "
                "never provisioned; keep one node up in every pool but the gang's (minCount: 1 "
                "on the CPU pool of the heads), or gate only nvidia.com/gpu on a queue of its own",
                "warning",
            )


def pools_fitting(
    fleet: FleetConfig, worker: ClusterConfig, cluster_queue: str, requests: Mapping[str, str]
) -> list[str]:
    """The pools of `worker`'s ClusterQueue whose one node fits a pod with these requests.

    Kueue places a pod set on one flavor and its pods on that flavor's pool; a pod that no
    pool's node can hold waits for ever (the autoscaler adds nodes of that size only). The
    stack does not know a job's pod sets, so this is the check a test (or a team) runs on its
    manifests: tests/test_ray_pytorch_frameworks.py does it for examples/.
    """
    cq = worker.queues.cluster_queue(cluster_queue)
    if cq is None:
        return []
    shapes = custom_shapes(fleet)
    fits: list[str] = []
    for name in cq.flavor_names:
        flavor = worker.queues.flavor(name)
        pool = worker.pool(flavor.pool) if flavor is not None and flavor.pool else None
        if pool is None:
            continue
        shape = lookup_vm(pool.vm_size, shapes)
        if shape is None:
            continue
        node = node_allocatable(shape, pool.max_pods or DEFAULT_MAX_PODS[worker.network_mode])
        have = {
            "cpu": Decimal(node.cpu_millis) / 1000,
            "memory": Decimal(node.memory_mib) * 2**20,
            GPU_RESOURCE: Decimal(node.gpus),
        }
        if all(quantity_value(v) <= have.get(r, Decimal(0)) for r, v in requests.items()):
            fits.append(pool.name)
    return fits


def worker_queues(fleet: FleetConfig, manager_queue: str) -> list[tuple[ClusterConfig, str]]:
    """(worker, its ClusterQueue) for each worker a manager ClusterQueue dispatches to."""
    target = worker_queue_for(fleet, manager_queue)
    out: list[tuple[ClusterConfig, str]] = []
    for s in dispatch_sets(fleet):
        if manager_queue in s.queues:
            out += [(c, target) for w in s.workers if (c := fleet.cluster(w)) is not None]
    return out


FRAMEWORK_CHECKS: tuple[Check, ...] = (
    check_operator_versions,
    check_operator_workers,
    check_dispatch_sets_run_operators,
    check_installed_elsewhere,
    check_operators_are_used,
    check_gang_gates_one_pool,
    check_pytorch_master_under_restricted,
)


def operator_files(fleet: FleetConfig, crds: Path, gomod: Path) -> tuple[list[str], str | None]:
    """The manager's pinned CRD files of the enabled kinds, and the training operator's overlay.

    Both come from what scripts/fetch-crds placed (`crds`: .cache/crds, `gomod`: its Go module
    cache); missing ones are errors naming the operator's key and the command.
    """
    issues: list[Issue] = []
    files: list[str] = []
    for project, version, name in manager_crd_files(fleet):
        path = crds / project / version / name
        if path.is_file():
            files.append(str(path))
        else:
            op = next(o for o in OPERATORS if o.project == project)
            issues.append(
                Issue(
                    key_path("operators", op.key),
                    f"no pinned {name} in {crds / project / version}: run scripts/fetch-crds "
                    "(pins: scripts/crd-pins.json)",
                )
            )
    overlay: str | None = None
    installs = training_operator_installs(fleet)
    if installs:
        first = installs[0]
        directory = gomod / f"{first.module}@{first.version}" / first.path
        if (directory / "kustomization.yaml").is_file():
            overlay = str(directory)
        else:
            issues.append(
                Issue(
                    key_path("operators", TRAINING_OPERATOR.key),
                    f"no {first.path} of {first.module}@{first.version} in {gomod}: run "
                    f"rm -rf {crds / TRAINING_OPERATOR.project} && scripts/fetch-crds (the "
                    "module comes with its pinned CRDs)",
                )
            )
    if issues:
        raise ConfigError(issues)
    return files, overlay
