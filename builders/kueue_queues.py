"""Every queue object of a cluster from config: team namespaces, ResourceFlavors, provisioning
gates (ProvisioningRequestConfig and AdmissionCheck), ClusterQueues, Cohorts,
WorkloadPriorityClasses and LocalQueues, and what extraSpec may add to them (`OWNED_SPEC`);
`cluster_objects` is one cluster's set. Pure. Kueue's install (waitForPodsReady, feature gates,
the manager's Configuration, Helm values and releases) is builders.kueue.

Object shapes are kueue.x-k8s.io/v1beta2 as served by the pinned chart (checked against the pinned
CRDs by tests/test_kueue_schema.py). Objects carry no Pulumi annotations: readiness
(`pulumi.com/waitFor`) is the component's business, so rendered YAML stays what `kubectl apply`
would take. Each object declares the objects it names (`Manifest.needs`), which sets the apply
order.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final, cast

from builders.aks import pool_node_labels, pool_node_taints
from builders.batch_pods import batch_pod_budget
from builders.kueue import deep_merge, namespace_selector
from builders.manifest import Manifest
from config.kueue import (
    ClusterQueueConfig,
    CohortConfig,
    FlavorConfig,
    KueueObjects,
    LocalQueueConfig,
    ProvisioningGate,
    ResourceGroup,
    TeamNamespace,
    Toleration,
    WorkloadPriorityClassConfig,
)
from config.models import ClusterConfig, PoolConfig
from config.resolve import gate_flavors
from upstream.k8s import toleration_for_taint
from upstream.kueue import KUEUE_API, KUEUE_GROUP, PROVISIONING_CONTROLLER
from upstream.podsecurity import labels as pod_security_labels
from upstream.podsecurity import policy_version

# ClusterQueue name -> admission checks another layer adds to it (MultiKueue's, on the manager).
AdmissionChecks = Mapping[str, Sequence[str]]


# ------------------------------------------------------------------------------------------------
# extraSpec: the escape hatch for queue-object fields that have no typed key

# Per kind, the spec fields the builders below write from typed keys or decide themselves: the
# position in `spec` -> who owns it (a typed key's name, or "program: why"). `extraSpec` may set
# any other field of the pinned CRD (deep-merged into the rendered spec, checked against the CRD
# by checks.extraspec); never one of these, not even while its typed key is unset (a typed key
# set later would silently take over). A mapping that holds owned fields (`flavorFungibility`)
# is open below them: its other fields (`flavorFungibility.preference`) may come from extraSpec.
OWNED_SPEC: Final[Mapping[str, Mapping[tuple[str, ...], str]]] = {
    "ClusterQueue": {
        ("cohortName",): "cohortName",
        ("namespaceSelector",): "namespaceSelector",
        ("queueingStrategy",): "queueingStrategy",
        ("preemption", "withinClusterQueue"): "preemption.withinClusterQueue",
        ("preemption", "reclaimWithinCohort"): "preemption.reclaimWithinCohort",
        ("preemption", "borrowWithinCohort"): "preemption.borrowWithinCohort",
        ("flavorFungibility", "whenCanBorrow"): "flavorFungibility.whenCanBorrow",
        ("flavorFungibility", "whenCanPreempt"): "flavorFungibility.whenCanPreempt",
        ("resourceGroups",): "resourceGroups",
        ("fairSharing", "weight"): "fairSharing.weight",
        ("admissionScope", "admissionMode"): "admissionScope.admissionMode",
        ("admissionChecksStrategy",): (
            "program: provisioningGate names the gate and MultiKueue adds its check"
        ),
    },
    "Cohort": {
        ("parentName",): "parentName",
        ("resourceGroups",): "resourceGroups",
        ("fairSharing", "weight"): "fairSharing.weight",
    },
    "LocalQueue": {
        ("clusterQueue",): "clusterQueue",
        ("fairSharing", "weight"): "fairSharing.weight",
        ("stopPolicy",): "program: multiKueue.drain holds a drained worker's queues with it",
    },
    "ResourceFlavor": {
        ("nodeLabels",): "nodeLabels",
        ("tolerations",): "tolerations",
    },
}
PROGRAM_OWNED: Final = "program: "


def owned_in_extra_spec(
    kind: str, extra: Mapping[str, Any]
) -> list[tuple[tuple[str, ...], list[str]]]:
    """Where `extra` (an extraSpec) sets a field the program owns, and the owners (OWNED_SPEC).

    A non-mapping value on the way to owned fields (`preemption: null`) would replace them: it is
    reported at its own position, with the owners of every field under it.
    """
    owned = OWNED_SPEC[kind]
    out: list[tuple[tuple[str, ...], list[str]]] = []

    def walk(node: Mapping[str, Any], at: tuple[str, ...]) -> None:
        for key, value in node.items():
            here = (*at, key)
            if here in owned:
                out.append((here, [owned[here]]))
                continue
            below = [use for path, use in owned.items() if path[: len(here)] == here]
            if not below:
                continue
            if isinstance(value, Mapping):
                walk(cast("Mapping[str, Any]", value), here)
            else:
                out.append((here, below))

    walk(extra, ())
    return out


def with_extra_spec(kind: str, spec: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """`spec` with an extraSpec deep-merged in: mappings key by key, anything else replaced.

    Raises ValueError if `extra` sets an owned field (checks.extraspec refuses that first, with
    the key path).
    """
    owned = owned_in_extra_spec(kind, extra)
    if owned:
        fields = ", ".join(".".join(path) for path, _ in owned)
        raise ValueError(f"{kind} extraSpec sets fields the program owns: {fields}")
    return deep_merge(spec, copy.deepcopy(dict(extra)))


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    return {"name": name} if namespace is None else {"name": name, "namespace": namespace}


def namespace(ns: TeamNamespace, kubernetes_version: str | None = None) -> dict[str, Any]:
    """A team namespace (v1 Namespace) with its Pod Security Admission labels.

    The policy version is the cluster's minor when known (an upgrade then moves it on purpose,
    with the program), else `latest`.
    """
    meta = _meta(ns.name)
    version = policy_version(kubernetes_version)
    meta["labels"] = dict(ns.labels) | pod_security_labels(ns.pod_security, version)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def _toleration(t: Toleration) -> dict[str, str]:
    out = {"key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect}
    return {k: v for k, v in out.items() if v is not None}


def resource_flavor(flavor: FlavorConfig, cluster: ClusterConfig) -> dict[str, Any]:
    """A ResourceFlavor; a pool-bound flavor takes the pool's node labels and taints."""
    pool: PoolConfig | None = cluster.pool(flavor.pool) if flavor.pool else None
    if pool is not None:
        labels = pool_node_labels(pool)
        tolerations = [toleration_for_taint(t) for t in pool_node_taints(pool)]
    else:
        labels = dict(flavor.node_labels)
        tolerations = [_toleration(t) for t in flavor.tolerations]
    spec: dict[str, Any] = {}
    if labels:
        spec["nodeLabels"] = labels
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": _meta(flavor.name),
        "spec": with_extra_spec("ResourceFlavor", spec, flavor.extra_spec),
    }


def provisioning_request_config(gate: ProvisioningGate) -> dict[str, Any]:
    """The ProvisioningRequestConfig behind a gate (class, managed resources, retries)."""
    spec: dict[str, Any] = {"provisioningClassName": gate.provisioning_class_name}
    if gate.parameters:
        spec["parameters"] = dict(gate.parameters)
    if gate.managed_resources:
        spec["managedResources"] = list(gate.managed_resources)
    if gate.retry_strategy is not None:
        r = gate.retry_strategy
        spec["retryStrategy"] = {
            "backoffLimitCount": r.backoff_limit_count,
            "backoffBaseSeconds": r.backoff_base_seconds,
            "backoffMaxSeconds": r.backoff_max_seconds,
        }
    if gate.pod_set_updates:
        spec["podSetUpdates"] = {
            "nodeSelector": [
                {
                    "key": u.key,
                    "valueFromProvisioningClassDetail": u.value_from_provisioning_class_detail,
                }
                for u in gate.pod_set_updates
            ]
        }
    if gate.pod_set_merge_policy is not None:
        spec["podSetMergePolicy"] = gate.pod_set_merge_policy
    return {
        "apiVersion": KUEUE_API,
        "kind": "ProvisioningRequestConfig",
        "metadata": _meta(gate.prc_name),
        "spec": spec,
    }


def provisioning_admission_check(gate: ProvisioningGate) -> dict[str, Any]:
    """The AdmissionCheck a gated ClusterQueue names; it points at the gate's config."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "AdmissionCheck",
        "metadata": _meta(gate.name),
        "spec": {
            "controllerName": PROVISIONING_CONTROLLER,
            "parameters": {
                "apiGroup": KUEUE_GROUP,
                "kind": "ProvisioningRequestConfig",
                "name": gate.prc_name,
            },
        },
    }


def _check_entry(name: str, on_flavors: Sequence[str] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name}
    if on_flavors:
        entry["onFlavors"] = list(on_flavors)
    return entry


def cluster_queue(
    cq: ClusterQueueConfig,
    queues: KueueObjects,
    added_checks: Sequence[str] = (),
) -> dict[str, Any]:
    """A ClusterQueue; its provisioning gate (if any) and `added_checks` go into the strategy."""
    spec: dict[str, Any] = {
        # Absent would admit no namespace at all; {} (the config default) admits every namespace.
        "namespaceSelector": namespace_selector(cq.namespace_selector),
        "queueingStrategy": cq.queueing_strategy,
    }
    if cq.cohort_name is not None:
        spec["cohortName"] = cq.cohort_name
    if cq.preemption is not None:
        p = cq.preemption
        preemption: dict[str, Any] = {
            "withinClusterQueue": p.within_cluster_queue,
            "reclaimWithinCohort": p.reclaim_within_cohort,
        }
        if p.borrow_within_cohort is not None:
            b = p.borrow_within_cohort
            borrow: dict[str, Any] = {"policy": b.policy}
            if b.max_priority_threshold is not None:
                borrow["maxPriorityThreshold"] = b.max_priority_threshold
            preemption["borrowWithinCohort"] = borrow
        spec["preemption"] = preemption
    if cq.fair_sharing is not None:
        spec["fairSharing"] = {"weight": str(cq.fair_sharing.weight)}
    if cq.admission_scope is not None:
        spec["admissionScope"] = {"admissionMode": cq.admission_scope.admission_mode}
    if cq.flavor_fungibility is not None:
        spec["flavorFungibility"] = {
            "whenCanBorrow": cq.flavor_fungibility.when_can_borrow,
            "whenCanPreempt": cq.flavor_fungibility.when_can_preempt,
        }
    spec["resourceGroups"] = _resource_groups(cq.resource_groups)
    checks: list[dict[str, Any]] = []
    if cq.provisioning_gate is not None:
        checks.append(_check_entry(cq.provisioning_gate.name, gate_flavors(queues, cq)))
    checks += [_check_entry(name, None) for name in added_checks]
    names = [c["name"] for c in checks]
    if len(set(names)) != len(names):
        raise ValueError(f"ClusterQueue {cq.name!r}: admission check listed twice in {names}")
    if checks:
        # v1beta2 has only the strategy form; the v1beta1 `admissionChecks` list is gone.
        spec["admissionChecksStrategy"] = {"admissionChecks": checks}
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": _meta(cq.name),
        "spec": with_extra_spec("ClusterQueue", spec, cq.extra_spec),
    }


def _resource_groups(groups: Sequence[ResourceGroup]) -> list[dict[str, Any]]:
    return [
        {
            "coveredResources": list(group.covered_resources),
            "flavors": [
                {
                    "name": fq.name,
                    "resources": [
                        _quota(rq.name, rq.nominal_quota, rq.borrowing_limit, rq.lending_limit)
                        for rq in fq.resources
                    ],
                }
                for fq in group.flavors
            ],
        }
        for group in groups
    ]


def cohort(c: CohortConfig) -> dict[str, Any]:
    """A Cohort (v1beta2): its parent, its own quota, its fair-sharing weight."""
    spec: dict[str, Any] = {}
    if c.parent_name is not None:
        spec["parentName"] = c.parent_name
    if c.resource_groups:
        spec["resourceGroups"] = _resource_groups(c.resource_groups)
    if c.fair_sharing is not None:
        spec["fairSharing"] = {"weight": str(c.fair_sharing.weight)}
    return {
        "apiVersion": KUEUE_API,
        "kind": "Cohort",
        "metadata": _meta(c.name),
        "spec": with_extra_spec("Cohort", spec, c.extra_spec),
    }


def workload_priority_class(w: WorkloadPriorityClassConfig) -> dict[str, Any]:
    """A WorkloadPriorityClass (`value` and `description` are top-level fields, no spec)."""
    obj: dict[str, Any] = {
        "apiVersion": KUEUE_API,
        "kind": "WorkloadPriorityClass",
        "metadata": _meta(w.name),
        "value": w.value,
    }
    if w.description is not None:
        obj["description"] = w.description
    return obj


def _quota(
    name: str, nominal: str | int, borrowing: str | int | None, lending: str | int | None
) -> dict[str, str]:
    out = {"name": name, "nominalQuota": str(nominal)}
    if borrowing is not None:
        out["borrowingLimit"] = str(borrowing)
    if lending is not None:
        out["lendingLimit"] = str(lending)
    return out


def local_queue(lq: LocalQueueConfig, *, hold: bool = False) -> dict[str, Any]:
    """A LocalQueue (its `clusterQueue` is immutable: changing it replaces the object).

    `hold`: `stopPolicy: Hold`, a drained worker's mirrored queue (config.resolve.
    held_local_queues): nothing new is admitted, admitted Workloads run to completion. Dropping
    it gives the queue back Kueue's default, `None` (server-side apply removes the field).
    """
    spec: dict[str, Any] = {"clusterQueue": lq.cluster_queue}
    if lq.fair_sharing is not None:
        spec["fairSharing"] = {"weight": str(lq.fair_sharing.weight)}
    if hold:
        spec["stopPolicy"] = "Hold"
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": _meta(lq.name, lq.namespace),
        "spec": with_extra_spec("LocalQueue", spec, lq.extra_spec),
    }


def _cluster_queue_manifest(
    target: str, cq: ClusterQueueConfig, queues: KueueObjects, added_checks: Sequence[str]
) -> Manifest:
    obj = cluster_queue(cq, queues, added_checks)
    strategy = obj["spec"].get("admissionChecksStrategy", {})
    needs = [f"ResourceFlavor/{name}" for name in cq.flavor_names]
    if cq.cohort_name is not None and queues.cohort(cq.cohort_name) is not None:
        needs.append(f"Cohort/{cq.cohort_name}")
    needs += [f"AdmissionCheck/{c['name']}" for c in strategy.get("admissionChecks", [])]
    return Manifest(target, obj, tuple(needs))


def _namespace_manifest(
    target: str, ns: TeamNamespace, queues: KueueObjects, kubernetes_version: str | None
) -> Manifest:
    """A team namespace, made after (so deleted before) the ClusterQueues that admit from it.

    A ClusterQueue keeps its `kueue.x-k8s.io/resource-in-use` finalizer while it has admitted
    Workloads; only deleting their namespace deletes the Jobs and so the Workloads. Deleted the
    other way round, `destroy` with jobs running waits on the ClusterQueue until it times out.
    """
    admit = dict.fromkeys(lq.cluster_queue for lq in queues.local_queues if lq.namespace == ns.name)
    return Manifest(
        target, namespace(ns, kubernetes_version), tuple(f"ClusterQueue/{cq}" for cq in admit)
    )


def _cohort_manifest(target: str, c: CohortConfig, declared: set[str]) -> Manifest:
    needs = [f"ResourceFlavor/{f.name}" for g in c.resource_groups for f in g.flavors]
    if c.parent_name is not None and c.parent_name in declared:
        needs.append(f"Cohort/{c.parent_name}")
    return Manifest(target, cohort(c), tuple(dict.fromkeys(needs)))


def cluster_objects(
    cluster: ClusterConfig,
    added_checks: AdmissionChecks | None = None,
    kubernetes_version: str | None = None,
    priority_classes: Sequence[WorkloadPriorityClassConfig] = (),
    held: Collection[tuple[str, str]] = (),
    *,
    protect_batch_pods: bool = False,
) -> list[Manifest]:
    """Every queue object of one cluster, each naming what it needs, referenced objects first.

    `held`: (namespace, name) of LocalQueues that get `stopPolicy: Hold` (a drained worker's).

    `protect_batch_pods`: each team namespace gets the budget that keeps Kueue's pods through a
    node drain (`upgrades.batchPods: protect`, builders.batch_pods).

    `kubernetes_version`: the cluster's, when the stack knows it (pins the Pod Security version).
    """
    q, target = cluster.queues, cluster.name
    added = added_checks or {}
    used_gates = {cq.provisioning_gate.name for cq in q.cluster_queues if cq.provisioning_gate}
    gates = [g for g in q.provisioning_gates if g.name in used_gates]
    declared = {c.name for c in q.cohorts}
    return [
        *(Manifest(target, workload_priority_class(w)) for w in priority_classes),
        *(Manifest(target, resource_flavor(f, cluster)) for f in q.flavors),
        *(_cohort_manifest(target, c, declared) for c in q.cohorts),
        *(Manifest(target, provisioning_request_config(g)) for g in gates),
        *(
            Manifest(
                target,
                provisioning_admission_check(g),
                (f"ProvisioningRequestConfig/{g.prc_name}",),
            )
            for g in gates
        ),
        *(
            _cluster_queue_manifest(target, cq, q, added.get(cq.name, ()))
            for cq in q.cluster_queues
        ),
        *(_namespace_manifest(target, ns, q, kubernetes_version) for ns in q.namespaces),
        *(
            Manifest(
                target,
                local_queue(lq, hold=(lq.namespace, lq.name) in held),
                (f"Namespace/{lq.namespace}", f"ClusterQueue/{lq.cluster_queue}"),
            )
            for lq in q.local_queues
        ),
        *(
            Manifest(target, batch_pod_budget(ns.name), (f"Namespace/{ns.name}",))
            for ns in q.namespaces
            if protect_batch_pods
        ),
    ]
