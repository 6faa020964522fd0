"""Kueue checks: frameworks, feature gates, Helm values, queue names and references, quotas.

Each rule is one Kueue would enforce at startup or in its webhooks, or one that keeps a queue from
ever admitting (every issue names its key path). Quota against pool capacity: `checks.capacity`.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterator, Mapping
from typing import Any, cast

from builders.kueue import manager_off_form, resource_flavor
from checks.common import Check, duplicates
from config.errors import Issue, key_path
from config.kueue import ClusterQueueConfig, CohortConfig, FairShare, MultiKueueManagerSettings
from config.models import ClusterConfig, FleetConfig
from upstream.aks import AGENTPOOL_LABELS
from upstream.k8s import NAMESPACE_NAME_LABEL, go_duration_seconds, quantity_value
from upstream.kueue import (
    BATCH_JOB,
    DEFAULT_WORKER_LOST_TIMEOUT,
    DISABLE_WAIT_FOR_PODS_READY,
    FAIR_SHARING_STRATEGIES,
    FEATURE_GATES,
    FRAMEWORK_GATES,
    FRAMEWORKS,
    INCREMENTAL_CONFIG_VERSIONS,
    KUEUE_NAMESPACE,
    KUEUE_VERSIONS,
    LOCKED_GATES,
    MIN_QUIET_WORKER_LOST_TIMEOUT_SECONDS,
    MIN_WEIGHT,
    OWNED_VALUES,
    PROHIBITED_MANAGED_NAMESPACES,
    REMOVED_GATES,
    RESERVED_NAMESPACES,
)


def _base(i: int) -> str:
    return key_path("clusters", i, "queues")


def check_kueue_settings(fleet: FleetConfig) -> Iterator[Issue]:
    """Frameworks, feature gates and Helm values that would stop Kueue from starting."""
    s = fleet.kueue
    known = FEATURE_GATES[s.version]
    for i, name in enumerate(s.frameworks):
        path = key_path("kueue", "frameworks", i)
        if name not in FRAMEWORKS:
            hint = difflib.get_close_matches(name, FRAMEWORKS, n=1)
            yield Issue(
                path,
                f"unknown integration {name!r}"
                + (f"; did you mean {hint[0]!r}?" if hint else "")
                + f" Allowed: {', '.join(FRAMEWORKS)}",
            )
        gate = FRAMEWORK_GATES.get(name)
        if gate and not s.feature_gates.get(gate):
            yield Issue(path, f"{name} is alpha in Kueue: set kueue.featureGates.{gate}: true")
    for name in duplicates(s.frameworks):
        yield Issue(key_path("kueue", "frameworks"), f"{name!r} is listed more than once")
    if BATCH_JOB not in s.frameworks:
        yield Issue(
            key_path("kueue", "frameworks"),
            f"must include {BATCH_JOB!r}: the queues and the example Job are batch Jobs",
        )
    for name, enabled in s.feature_gates.items():
        path = f"kueue.featureGates.{name}"
        if name in REMOVED_GATES:
            yield Issue(path, f"remove it: {REMOVED_GATES[name]}; Kueue fails on unknown gates")
        elif name not in known:
            other = [v for v in KUEUE_VERSIONS if name in FEATURE_GATES[v]]
            hint = difflib.get_close_matches(name, known, n=1)
            yield Issue(
                path,
                f"Kueue {s.version} has no feature gate {name!r} and would not start"
                + (f" (it exists in {', '.join(other)})" if other else "")
                + (f"; did you mean {hint[0]!r}?" if hint else ""),
            )
        elif LOCKED_GATES[s.version].get(name, enabled) != enabled:
            locked = LOCKED_GATES[s.version][name]
            yield Issue(
                path,
                f"locked to {str(locked).lower()} in Kueue {s.version}; any other value stops "
                "it at startup: remove the key",
            )
    for owned, why in OWNED_VALUES.items():
        node: Any = s.values
        for part in owned.split("."):
            node = cast("dict[str, Any]", node).get(part) if isinstance(node, dict) else None
        if node is not None:
            yield Issue(f"kueue.values.{owned}", f"set by the program ({why}); remove it here")
    if fleet.manager is None and s.multi_kueue != MultiKueueManagerSettings():
        yield Issue(
            "kueue.multiKueue",
            "applies only to a cluster with role 'manager'; this stack has none",
            "warning",
        )


def _check_worker_lost_timeout(mk: MultiKueueManagerSettings) -> Iterator[Issue]:
    """`multiKueue.workerLostTimeout`: 0 or a few seconds turn any blip into re-run jobs."""
    if mk.worker_lost_timeout is None:
        return  # Kueue's DEFAULT_WORKER_LOST_TIMEOUT
    path = "kueue.multiKueue.workerLostTimeout"
    seconds = go_duration_seconds(mk.worker_lost_timeout)
    if seconds == 0:
        yield Issue(
            path,
            "must be more than 0: the manager would re-admit a worker's running jobs elsewhere "
            f"at its first failed connection (Kueue's default: {DEFAULT_WORKER_LOST_TIMEOUT})",
        )
    elif seconds < MIN_QUIET_WORKER_LOST_TIMEOUT_SECONDS:
        yield Issue(
            path,
            f"{mk.worker_lost_timeout}: a worker API outage longer than this (an AKS upgrade, a "
            "network blip) re-admits its running jobs on another worker, where their work "
            f"starts over (Kueue's default: {DEFAULT_WORKER_LOST_TIMEOUT})",
            "warning",
        )


def _check_wait_for_pods_ready(fleet: FleetConfig) -> Iterator[Issue]:
    """`kueue.configuration` (workers, standalone) and `kueue.managerConfiguration` (manager)."""
    s = fleet.kueue
    gate = s.feature_gates.get(DISABLE_WAIT_FOR_PODS_READY)
    blocks = (
        ("kueue.configuration.waitForPodsReady", s.configuration.wait_for_pods_ready, "worker"),
        (
            "kueue.managerConfiguration.waitForPodsReady",
            s.manager_configuration.wait_for_pods_ready,
            "manager",
        ),
    )
    for path, wait, side in blocks:
        if wait is None or not wait.enable:
            continue
        if wait.timeout is not None and go_duration_seconds(wait.timeout) == 0:
            yield Issue(f"{path}.timeout", "must be more than 0 (Kueue refuses to start)")
        if gate:
            yield Issue(
                path,
                f"ignored: kueue.featureGates.{DISABLE_WAIT_FOR_PODS_READY} is true",
                "warning",
            )
        if side == "worker" and not any(cl.role != "manager" for cl in fleet.clusters):
            yield Issue(
                path, "applies to workers and standalone clusters; this stack has none", "warning"
            )
        if side == "manager" and fleet.manager is None:
            yield Issue(
                path, "applies to a cluster with role 'manager'; this stack has none", "warning"
            )
    if (
        gate is False
        and fleet.manager is not None
        and s.manager_configuration.wait_for_pods_ready is None
        and manager_off_form(s) == "featureGate"
    ):
        yield Issue(
            f"kueue.featureGates.{DISABLE_WAIT_FOR_PODS_READY}",
            "the manager still gets it true (waitForPodsReady off there); to run waitForPodsReady "
            "on the manager, set kueue.managerConfiguration.waitForPodsReady",
            "warning",
        )


def check_kueue_configuration(fleet: FleetConfig) -> Iterator[Issue]:
    """The typed Configuration settings as Kueue's own config validation would judge them."""
    s = fleet.kueue
    c = s.configuration
    yield from _check_wait_for_pods_ready(fleet)
    fair = c.fair_sharing
    if fair is not None and list(fair.preemption_strategies) not in FAIR_SHARING_STRATEGIES:
        yield Issue(
            "kueue.configuration.fairSharing.preemptionStrategies",
            "Kueue accepts only "
            + "; ".join(", ".join(x) for x in FAIR_SHARING_STRATEGIES)
            + " (in that order)",
        )
    mk = s.multi_kueue
    yield from _check_worker_lost_timeout(mk)
    if mk.incremental_dispatcher_config is not None:
        path = "kueue.multiKueue.incrementalDispatcherConfig"
        if mk.dispatcher != "Incremental":
            yield Issue(
                path, "needs kueue.multiKueue.dispatcher: Incremental (Kueue refuses it else)"
            )
        if s.version not in INCREMENTAL_CONFIG_VERSIONS:
            yield Issue(
                path,
                f"Kueue {s.version} has no such setting (from "
                f"{', '.join(INCREMENTAL_CONFIG_VERSIONS)}); it would be dropped silently",
            )
        elif s.feature_gates.get("MultiKueueIncrementalDispatcherConfig") is False:
            yield Issue(
                path,
                "ignored: kueue.featureGates.MultiKueueIncrementalDispatcherConfig is false",
                "warning",
            )
    if s.replicas >= 2:
        for i, cl in enumerate(fleet.clusters):
            pool = cl.system_pool
            nodes = pool.max_count if pool.autoscaling and pool.max_count else pool.count
            if nodes < 2:
                yield Issue(
                    key_path("clusters", i, "systemPool"),
                    f"{nodes} node: Kueue's {s.replicas} replicas share it, so draining it still "
                    "stops Kueue (and its fail-closed Job webhooks)",
                    "warning",
                )


def check_queue_names(fleet: FleetConfig) -> Iterator[Issue]:
    """Names unique per cluster (per namespace for LocalQueues); no system namespaces."""
    for i, c in enumerate(fleet.clusters):
        q, base = c.queues, _base(i)
        lists: list[tuple[str, list[str]]] = [
            ("namespaces", [n.name for n in q.namespaces]),
            ("flavors", [f.name for f in q.flavors]),
            ("provisioningGates", [g.name for g in q.provisioning_gates]),
            ("clusterQueues", [x.name for x in q.cluster_queues]),
            ("cohorts", [x.name for x in q.cohorts]),
            ("localQueues", [f"{lq.namespace}/{lq.name}" for lq in q.local_queues]),
        ]
        for field, names in lists:
            for dup in duplicates(names):
                for j in (j for j, n in enumerate(names) if n == dup):
                    yield Issue(f"{base}.{field}[{j}].name", f"{dup!r} is declared more than once")
        configs = [g.prc_name for g in q.provisioning_gates]
        for dup in duplicates(configs):
            for j in (j for j, n in enumerate(configs) if n == dup):
                yield Issue(
                    f"{base}.provisioningGates[{j}].configName",
                    f"ProvisioningRequestConfig name {dup!r} is used by more than one gate",
                )
        for j, ns in enumerate(q.namespaces):
            if ns.name in RESERVED_NAMESPACES:
                yield Issue(
                    f"{base}.namespaces[{j}].name",
                    f"{ns.name!r} is not a team namespace (reserved: "
                    f"{', '.join(RESERVED_NAMESPACES)})",
                )


def check_flavors(fleet: FleetConfig) -> Iterator[Issue]:
    """Flavor -> pool references, and what AKS and the CRD allow on a flavor."""
    for i, c in enumerate(fleet.clusters):
        q, base = c.queues, _base(i)
        user_pools = [p.name for p in c.pools]
        used = {n for cq in q.cluster_queues for n in cq.flavor_names}
        for j, f in enumerate(q.flavors):
            path = f"{base}.flavors[{j}]"
            if f.pool is not None:
                if f.pool not in user_pools:
                    system = " (that is the system pool)" if f.pool == c.system_pool.name else ""
                    yield Issue(
                        f"{path}.pool",
                        f"no user pool {f.pool!r} in cluster {c.name!r}{system}; allowed: "
                        + (", ".join(user_pools) or "none (declare pools first)"),
                    )
                    continue
                if f.node_labels or f.tolerations:
                    yield Issue(
                        path,
                        f"nodeLabels and tolerations come from pool {f.pool!r} when `pool` is "
                        "set (so the two cannot drift apart); remove them here",
                    )
                    continue
            else:
                for key in AGENTPOOL_LABELS:
                    named = f.node_labels.get(key)
                    if named in user_pools:
                        yield Issue(
                            f"{path}.nodeLabels",
                            f"selects pool {named!r} by label: use `pool: {named}` to get its "
                            "taints as tolerations and a capacity check",
                            "warning",
                        )
                    elif named is not None:
                        yield Issue(
                            f"{path}.nodeLabels.{key}",
                            f"cluster {c.name!r} has no user pool {named!r}; pods of this "
                            "flavor would never schedule",
                            "warning",
                        )
            # The typed part only: extraSpec is checked against the CRD by checks.extraspec.
            spec = resource_flavor(f.model_copy(update={"extra_spec": {}}), c)["spec"]
            for field, limit in (("nodeLabels", 8), ("tolerations", 8)):
                if len(spec.get(field, ())) > limit:
                    yield Issue(
                        path,
                        f"the ResourceFlavor would get {len(spec[field])} {field}; Kueue allows "
                        f"at most {limit} (fewer pool labels/taints, or a flavor without `pool`)",
                    )
            if f.name not in used:
                yield Issue(f"{path}.name", "not used by any ClusterQueue", "warning")


def _check_groups(c: ClusterConfig, cq: ClusterQueueConfig, path: str) -> Iterator[Issue]:
    flavors_seen: dict[str, str] = {}
    resources_seen: dict[str, str] = {}
    total_flavors = total_covered = 0
    for k, group in enumerate(cq.resource_groups):
        gpath = f"{path}.resourceGroups[{k}]"
        total_flavors += len(group.flavors)
        total_covered += len(group.covered_resources)
        for r, res in enumerate(group.covered_resources):
            if res in resources_seen:
                yield Issue(
                    f"{gpath}.coveredResources[{r}]",
                    f"{res!r} is already covered by {resources_seen[res]}; a resource belongs "
                    "to one group",
                )
            else:
                resources_seen[res] = gpath
        if sum(len(f.resources) for f in group.flavors) > 512:
            yield Issue(gpath, "at most 512 flavor x resource quotas per group")
        for m, fq in enumerate(group.flavors):
            fpath = f"{gpath}.flavors[{m}]"
            if c.queues.flavor(fq.name) is None:
                known = ", ".join(f.name for f in c.queues.flavors) or "none declared"
                yield Issue(
                    f"{fpath}.name",
                    f"no flavor {fq.name!r} in clusters[].queues.flavors of {c.name!r} "
                    f"(declared: {known})",
                )
            if fq.name in flavors_seen:
                yield Issue(
                    f"{fpath}.name",
                    f"flavor {fq.name!r} is already used in {flavors_seen[fq.name]}; a flavor "
                    "belongs to one group",
                )
            else:
                flavors_seen[fq.name] = gpath
            names = [r.name for r in fq.resources]
            if names != group.covered_resources:
                yield Issue(
                    f"{fpath}.resources",
                    f"must list {', '.join(group.covered_resources)} in that order (the "
                    f"group's coveredResources); got {', '.join(names)}",
                )
            for n, rq in enumerate(fq.resources):
                rpath = f"{fpath}.resources[{n}]"
                for field, value in (
                    ("borrowingLimit", rq.borrowing_limit),
                    ("lendingLimit", rq.lending_limit),
                ):
                    if value is not None and cq.cohort_name is None:
                        yield Issue(
                            f"{rpath}.{field}",
                            "needs cohortName on the ClusterQueue (limits are about sharing "
                            "within a cohort)",
                        )
                if rq.lending_limit is not None and quantity_value(
                    rq.lending_limit
                ) > quantity_value(rq.nominal_quota):
                    yield Issue(
                        f"{rpath}.lendingLimit",
                        f"{rq.lending_limit} must be <= nominalQuota ({rq.nominal_quota})",
                    )
    if total_flavors > 256:
        yield Issue(f"{path}.resourceGroups", "at most 256 flavors across all groups")
    if total_covered > 256:
        yield Issue(f"{path}.resourceGroups", "at most 256 covered resources across all groups")


def check_cluster_queues(fleet: FleetConfig) -> Iterator[Issue]:
    """References (flavors, gates, onFlavors) and the quota rules Kueue's webhook enforces."""
    for i, c in enumerate(fleet.clusters):
        q, base = c.queues, _base(i)
        used_gates: set[str] = set()
        for j, cq in enumerate(q.cluster_queues):
            path = f"{base}.clusterQueues[{j}]"
            yield from _check_groups(c, cq, path)
            ref = cq.provisioning_gate
            if ref is None:
                continue
            used_gates.add(ref.name)
            gate = q.gate(ref.name)
            if gate is None:
                known = ", ".join(g.name for g in q.provisioning_gates) or "none declared"
                yield Issue(
                    f"{path}.provisioningGate.name",
                    f"no provisioning gate {ref.name!r} in cluster {c.name!r} (declared: {known})",
                )
                continue
            for n, flavor in enumerate(ref.on_flavors or []):
                if flavor not in cq.flavor_names:
                    yield Issue(
                        f"{path}.provisioningGate.onFlavors[{n}]",
                        f"{flavor!r} is not a flavor of this ClusterQueue; allowed: "
                        + ", ".join(cq.flavor_names),
                    )
            covered = {r for g in cq.resource_groups for r in g.covered_resources}
            for res in gate.managed_resources:
                if res not in covered:
                    yield Issue(
                        f"{path}.provisioningGate",
                        f"gate {gate.name!r} manages {res!r}, which this queue does not cover: "
                        "its workloads pass the gate without a ProvisioningRequest",
                        "warning",
                    )
        for g, gate in enumerate(q.provisioning_gates):
            if gate.name not in used_gates:
                yield Issue(
                    f"{base}.provisioningGates[{g}].name",
                    "not used by any ClusterQueue (provisioningGate.name)",
                    "warning",
                )


def check_local_queues(fleet: FleetConfig) -> Iterator[Issue]:
    """LocalQueue -> ClusterQueue and namespace resolve, and the queue admits that namespace."""
    for i, c in enumerate(fleet.clusters):
        q, base = c.queues, _base(i)
        for j, lq in enumerate(q.local_queues):
            path = f"{base}.localQueues[{j}]"
            ns = q.namespace(lq.namespace)
            cq = q.cluster_queue(lq.cluster_queue)
            if ns is None:
                known = ", ".join(n.name for n in q.namespaces) or "none declared"
                yield Issue(
                    f"{path}.namespace",
                    f"no team namespace {lq.namespace!r} in cluster {c.name!r} (declared: {known})",
                )
            if cq is None:
                known = ", ".join(x.name for x in q.cluster_queues) or "none declared"
                yield Issue(
                    f"{path}.clusterQueue",
                    f"no ClusterQueue {lq.cluster_queue!r} in cluster {c.name!r} (declared: "
                    f"{known})",
                )
            if ns is not None and cq is not None:
                labels = {**ns.labels, NAMESPACE_NAME_LABEL: ns.name}
                if not cq.namespace_selector.matches(labels):
                    yield Issue(
                        f"{path}.namespace",
                        f"ClusterQueue {cq.name!r} does not select namespace {ns.name!r} (its "
                        "namespaceSelector); Kueue would mark every workload inadmissible",
                    )


def check_gate_conflicts(
    fleet: FleetConfig, multikueue_queues: Mapping[str, Collection[str]]
) -> Iterator[Issue]:
    """Hook for MultiKueue: `{cluster: ClusterQueue names given the MultiKueue check}`.

    Kueue deactivates a ClusterQueue that has both a MultiKueue and a ProvisioningRequest check
    (reason MultiKueueWithProvisioningRequest): gates belong on the worker queues.
    """
    for i, c in enumerate(fleet.clusters):
        names = multikueue_queues.get(c.name, ())
        for j, cq in enumerate(c.queues.cluster_queues):
            if cq.name in names and cq.provisioning_gate is not None:
                yield Issue(
                    f"{_base(i)}.clusterQueues[{j}].provisioningGate",
                    f"ClusterQueue {cq.name!r} also gets the MultiKueue admission check; Kueue "
                    "keeps a queue with both inactive: put the gate on the workers' queues",
                )


def _weight_issues(path: str, share: FairShare | None, fair_on: bool, what: str) -> Iterator[Issue]:
    if share is None:
        return
    # Negative ones never get here: a config quantity is >= 0 (config.types.Quantity).
    if 0 < quantity_value(share.weight) <= MIN_WEIGHT:
        yield Issue(f"{path}.weight", "when not 0, must be more than 1e-9 (Kueue refuses it)")
    if not fair_on:
        yield Issue(path, f"ignored: {what} is off; set {what} to turn it on", "warning")


def _cohort_cycles(cohorts: list[CohortConfig]) -> list[int]:
    """Indexes of Cohorts on a parentName cycle (Kueue deactivates every member of one)."""
    parent = {c.name: c.parent_name for c in cohorts}
    on_cycle: list[int] = []
    for j, c in enumerate(cohorts):
        seen: set[str] = set()
        node: str | None = c.name
        while node is not None and node not in seen:
            seen.add(node)
            node = parent.get(node)
        if node == c.name:
            on_cycle.append(j)
    return on_cycle


def check_fair_sharing(fleet: FleetConfig) -> Iterator[Issue]:
    """Weights, Cohorts, priority classes and the managed-jobs selector, as Kueue judges them."""
    s = fleet.kueue
    fair_on = s.configuration.fair_sharing is not None
    admission_on = s.configuration.admission_fair_sharing is not None and s.feature_gates.get(
        "AdmissionFairSharing", True
    )
    fs, afs = "kueue.configuration.fairSharing", "kueue.configuration.admissionFairSharing"
    for i, c in enumerate(fleet.clusters):
        q, base = c.queues, _base(i)
        flavors = {f.name for f in q.flavors}
        for j, cq in enumerate(q.cluster_queues):
            path = f"{base}.clusterQueues[{j}]"
            yield from _weight_issues(f"{path}.fairSharing", cq.fair_sharing, fair_on, fs)
            if cq.admission_scope is not None and not admission_on:
                yield Issue(f"{path}.admissionScope", f"ignored: set {afs}", "warning")
        for j, lq in enumerate(q.local_queues):
            path = f"{base}.localQueues[{j}].fairSharing"
            yield from _weight_issues(path, lq.fair_sharing, admission_on, afs)
        for j, co in enumerate(q.cohorts):
            path = f"{base}.cohorts[{j}]"
            yield from _weight_issues(f"{path}.fairSharing", co.fair_sharing, fair_on, fs)
            if co.parent_name == co.name:
                yield Issue(f"{path}.parentName", "a Cohort cannot be its own parent")
            for g, group in enumerate(co.resource_groups):
                for k, fq in enumerate(group.flavors):
                    fpath = f"{path}.resourceGroups[{g}].flavors[{k}]"
                    if fq.name not in flavors:
                        yield Issue(f"{fpath}.name", f"no flavor {fq.name!r} in this cluster")
                    for r, rq in enumerate(fq.resources):
                        limits = (
                            ("borrowingLimit", rq.borrowing_limit),
                            ("lendingLimit", rq.lending_limit),
                        )
                        for key, limit in limits:
                            if limit is not None and co.parent_name is None:
                                yield Issue(
                                    f"{fpath}.resources[{r}].{key}",
                                    "needs the Cohort to have a parentName (Kueue refuses it)",
                                )
        for j in _cohort_cycles(q.cohorts):
            co = q.cohorts[j]
            if co.parent_name != co.name:
                yield Issue(
                    f"{base}.cohorts[{j}].parentName",
                    f"Cohort {co.name!r} is on a parentName cycle: Kueue deactivates every "
                    "ClusterQueue under it until the cycle is gone",
                )
    names = [w.name for w in s.workload_priority_classes]
    for dup in duplicates(names):
        for j in (j for j, n in enumerate(names) if n == dup):
            yield Issue(
                f"kueue.workloadPriorityClasses[{j}].name", f"{dup!r} is declared more than once"
            )
    selector = s.configuration.managed_jobs_namespace_selector
    if selector is not None:
        for ns in PROHIBITED_MANAGED_NAMESPACES:
            if selector.matches({NAMESPACE_NAME_LABEL: ns}):
                yield Issue(
                    "kueue.configuration.managedJobsNamespaceSelector",
                    f"selects namespace {ns!r}: Kueue refuses to start; exclude it, e.g. "
                    f"matchExpressions [{{key: {NAMESPACE_NAME_LABEL}, operator: NotIn, values: "
                    f"[kube-system, {KUEUE_NAMESPACE}]}}]",
                )
    afs_config = s.configuration.admission_fair_sharing
    if afs_config is not None:
        if go_duration_seconds(afs_config.usage_half_life_time) < 0:
            yield Issue(f"{afs}.usageHalfLifeTime", "must not be negative")
        interval = afs_config.usage_sampling_interval
        if interval is not None and go_duration_seconds(interval) <= 0:
            yield Issue(f"{afs}.usageSamplingInterval", "must be more than 0 (Kueue refuses it)")
        if s.feature_gates.get("AdmissionFairSharing") is False:
            yield Issue(afs, "ignored: kueue.featureGates.AdmissionFairSharing is false", "warning")


KUEUE_CHECKS: tuple[Check, ...] = (
    check_kueue_settings,
    check_kueue_configuration,
    check_queue_names,
    check_flavors,
    check_cluster_queues,
    check_local_queues,
    check_fair_sharing,
)
