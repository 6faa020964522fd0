"""Karmada checks: host and members, API server exposure, Kruise gates, applications.

Applications are checked as Karmada's scheduler and Kruise's webhook would see them: weights on
members, subsets Kruise accepts (the placement is computed with `upstream.placement`), virtual-node
subsets only on members that have virtual nodes. `placement_report` is the preflight table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from checks.common import Check
from config.errors import Issue, key_path
from config.karmada import NodeSelectorRequirement, Toleration
from config.models import ClusterConfig, FleetConfig
from config.resolve import MEMBER_ROLES, host_name, member_names, subset_specs
from upstream.k8s import dns_label_problem, label_key_problem
from upstream.karmada import (
    CLUSTER_NAME_MAX,
    FEATURE_GATE,
    RESERVED_NAMESPACE_PREFIXES,
    RESERVED_NAMESPACES,
)
from upstream.placement import PlacementPlan, plan_placement

# An FNV-32a-odd template UID: Karmada then breaks exact weight ties by descending name.
_ODD_UID: Final = "b"


def _cluster(fleet: FleetConfig, name: str) -> ClusterConfig | None:
    return next((c for c in fleet.clusters if c.name == name), None)


# Keys that configure the installed control plane: meaningless for an existing one.
CHART_ONLY_KEYS: Final = ("host", "chart_version", "api_server", "etcd", "control_plane")


def check_karmada_source(fleet: FleetConfig) -> Iterator[Issue]:
    """`source: existing` takes exactly one kubeconfig and none of the chart's keys."""
    settings = fleet.karmada
    if settings is None:
        return
    if settings.source == "chart":
        if settings.existing is not None:
            yield Issue("karmada.existing", "only with source: existing")
        return
    e = settings.existing
    if e is None or (e.kubeconfig_path is None) == (e.kubeconfig_secret is None):
        yield Issue(
            "karmada.existing",
            "source: existing needs exactly one of kubeconfigPath (a file) or kubeconfigSecret "
            "(a secret stack config key holding the Karmada API server's kubeconfig)",
        )
    for key in CHART_ONLY_KEYS:
        if key in settings.model_fields_set:
            alias = type(settings).model_fields[key].alias or key
            yield Issue(
                f"karmada.{alias}",
                "only with source: chart (this stack does not install an existing control plane)",
            )
    if settings.failover.enabled:
        yield Issue(
            "karmada.failover.enabled",
            "the existing control plane's karmada-controller-manager needs "
            "--feature-gates=Failover=true and --enable-no-execute-taint-eviction=true (both off "
            "by default), and on a karmada-webhook that validates ClusterTaintPolicies (upstream "
            "artifacts/deploy, local-up) --allow-no-execute-taint-policy; this stack cannot set "
            "them",
            "warning",
        )


def check_karmada_clusters(fleet: FleetConfig) -> Iterator[Issue]:
    """Host and members name clusters of this stack; members are workers/standalone clusters."""
    settings = fleet.karmada
    if settings is None:
        return
    host = host_name(fleet)
    if settings.source == "existing":
        pass  # no host: check_karmada_source
    elif settings.host is not None and _cluster(fleet, settings.host) is None:
        yield Issue("karmada.host", f"no cluster named {settings.host!r} in clusters")
    elif host is None:
        yield Issue(
            "karmada.host",
            "required: there is no manager and more than one cluster; name the cluster that "
            "hosts the Karmada control plane",
        )
    elif (cluster := _cluster(fleet, host)) is not None and cluster.source != "aks":
        yield Issue(
            "karmada.host" if settings.host is not None else "karmada",
            f"the Karmada host {host!r} must be an AKS cluster of this stack (source: aks): its "
            "API server is bound to an Azure load balancer address",
        )
    members = member_names(fleet)
    base = "karmada.members"
    if not members:
        yield Issue(base, "Karmada needs at least one member (a worker or standalone cluster)")
    for dup in {m for m, n in Counter(members).items() if n > 1}:
        yield Issue(base, f"{dup!r} is listed more than once")
    for i, member in enumerate(members):
        path = key_path("karmada", "members", i) if settings.members is not None else base
        cluster = _cluster(fleet, member)
        if cluster is None:
            yield Issue(path, f"no cluster named {member!r} in clusters")
            continue
        if cluster.role not in MEMBER_ROLES:
            yield Issue(
                path,
                f"{member!r} has role {cluster.role!r}; members must be worker or standalone "
                "clusters (the manager dispatches, it does not run the applications)",
            )
        if len(member) > CLUSTER_NAME_MAX or dns_label_problem(member) is not None:
            yield Issue(
                path,
                f"{member!r} cannot be a Karmada cluster name: a lowercase DNS-1123 label of at "
                f"most {CLUSTER_NAME_MAX} characters (the namespace karmada-es-<name> "
                "must stay a label)",
            )


def check_karmada_api_server(fleet: FleetConfig) -> Iterator[Issue]:
    """Exposure settings that fit together, with an internal address known before install."""
    settings = fleet.karmada
    if settings is None or settings.source == "existing":
        return
    api = settings.api_server
    base = "karmada.apiServer"
    if api.exposure == "public":
        if api.internal_ip is not None:
            yield Issue(f"{base}.internalIp", "only with exposure: internal")
        if api.allowed_source_ranges is None:
            yield Issue(
                f"{base}.allowedSourceRanges",
                "required with exposure: public: the CIDRs that may reach port 5443 (the Pulumi "
                "runner's and admins' egress); its kubeconfig is cluster admin. Use "
                "exposure: internal, or ['0.0.0.0/0'] to open it to the Internet on purpose",
            )
        return
    if api.dns_label is not None:
        yield Issue(f"{base}.dnsLabel", "only with exposure: public (a public IP's DNS name)")
    host = _cluster(fleet, host_name(fleet) or "")
    if api.internal_ip is None:
        yield Issue(
            f"{base}.internalIp",
            "required with exposure: internal: a free address in the host cluster's node subnet; "
            "the certificate is issued for it at the first install",
        )
    elif host is not None:
        subnet = host.network.node_subnet_cidr
        if host.network_mode != "nodeSubnet":
            yield Issue(
                f"{base}.exposure",
                f"internal needs host {host.name!r} in a VNet node subnet we manage "
                "(network.mode: nodeSubnet); with overlay the AKS-managed subnet is not ours",
            )
        elif api.internal_ip not in subnet or api.internal_ip in (
            *(subnet.network_address + k for k in range(4)),
            subnet.broadcast_address,
        ):
            yield Issue(
                f"{base}.internalIp",
                f"{api.internal_ip} must be a usable address of {host.name!r}'s node subnet "
                f"{subnet} (Azure reserves the first four and the last)",
            )


def _schedulable_nodes(cluster: ClusterConfig) -> int:
    """Nodes the control plane may use at the pools' minimum: system pool and untainted pools."""
    system = cluster.system_pool
    count = system.min_count if system.autoscaling and system.min_count else system.count
    return count + sum(p.min_count for p in cluster.pools if not p.taints)


def check_karmada_control_plane(fleet: FleetConfig) -> Iterator[Issue]:
    """etcd members and API server replicas each need their own node (the chart's values.yaml
    gives both a required pod anti-affinity on kubernetes.io/hostname)."""
    settings = fleet.karmada
    if settings is None or settings.source == "existing":
        return
    host = _cluster(fleet, host_name(fleet) or "")
    if host is None or host.source != "aks":
        return
    nodes = _schedulable_nodes(host)
    for path, count, what in (
        ("karmada.etcd.replicas", settings.etcd.replicas, "etcd members"),
        ("karmada.controlPlane.replicas", settings.control_plane.replicas, "API server replicas"),
    ):
        if count > nodes:
            yield Issue(
                path,
                f"{count} {what} need as many nodes on {host.name!r} (one per node); its "
                f"system pool and untainted pools have {nodes} at their minimum",
            )


def check_karmada_failover(fleet: FleetConfig) -> Iterator[Issue]:
    settings = fleet.karmada
    if settings is None:
        return
    failover = settings.failover
    if failover.application is not None and not failover.enabled:
        yield Issue("karmada.failover.application", "only with failover.enabled: true")
    app = failover.application
    if app is not None and app.grace_period_seconds is not None and app.purge_mode != "Gracefully":
        yield Issue(
            "karmada.failover.application.gracePeriodSeconds",
            "only with purgeMode: Gracefully (how long the old copy waits for the new one)",
        )


def check_kruise(fleet: FleetConfig) -> Iterator[Issue]:
    settings = fleet.karmada
    if settings is None:
        return
    for gate in settings.kruise.feature_gates:
        if not FEATURE_GATE.fullmatch(gate):
            yield Issue(
                f"karmada.kruise.featureGates.{gate}",
                "feature gate names are CamelCase identifiers (e.g. ImagePullJobGate)",
            )


def _requirement_issues(path: str, req: NodeSelectorRequirement) -> Iterator[Issue]:
    problem = label_key_problem(req.key)
    if problem:
        yield Issue(f"{path}.key", problem)
    if req.operator in ("In", "NotIn") and not req.values:
        yield Issue(f"{path}.values", f"operator {req.operator} needs at least one value")
    elif req.operator in ("Exists", "DoesNotExist") and req.values:
        yield Issue(f"{path}.values", f"operator {req.operator} takes no values")
    elif req.operator in ("Gt", "Lt") and (len(req.values) != 1 or not req.values[0].isdigit()):
        yield Issue(f"{path}.values", f"operator {req.operator} needs exactly one integer value")


def _toleration_issues(path: str, tol: Toleration) -> Iterator[Issue]:
    if tol.operator == "Exists" and tol.value:
        yield Issue(f"{path}.value", "must be empty with operator Exists")
    if tol.key is None and tol.operator != "Exists":
        yield Issue(f"{path}.operator", "an empty key (all taints) needs operator Exists")
    if tol.toleration_seconds is not None and tol.effect != "NoExecute":
        yield Issue(f"{path}.tolerationSeconds", "only with effect NoExecute")


def check_karmada_applications(fleet: FleetConfig) -> Iterator[Issue]:
    """Names, namespaces, weights on members, virtual nodes, and a placement Kruise accepts."""
    settings = fleet.karmada
    if settings is None:
        return
    members = set(member_names(fleet))
    seen = Counter((a.namespace, a.name) for a in settings.applications)
    for i, app in enumerate(settings.applications):
        base = key_path("karmada", "applications", i)
        if seen[(app.namespace, app.name)] > 1:
            yield Issue(f"{base}.name", f"{app.namespace}/{app.name} is declared more than once")
        if app.namespace in RESERVED_NAMESPACES or app.namespace.startswith(
            RESERVED_NAMESPACE_PREFIXES
        ):
            yield Issue(
                f"{base}.namespace",
                f"Karmada never propagates objects in {app.namespace!r} (karmada-system, "
                "karmada-cluster, karmada-es-* and kube-* are skipped); use another namespace",
            )
        if app.namespace == "default" and settings.member_access == "scoped":
            yield Issue(
                f"{base}.namespace",
                "'default' (also what an omitted namespace means) exists on every member before "
                "this stack and is not the stack's to label or delete, so its pods would run "
                "without the Pod Security level (baseline) every application namespace the "
                "program creates gets; name a namespace of the application's own",
            )
        weights = app.propagation.weights
        for member, weight in weights.items():
            path = f"{base}.propagation.weights.{member}"
            if member not in members:
                yield Issue(
                    path,
                    f"{member!r} is not a Karmada member (members: {', '.join(sorted(members))})",
                )
            if weight < 1:
                yield Issue(path, f"weight must be >= 1 (PropagationPolicy CRD), got {weight}")
        subset_names = Counter(s.name for s in app.subsets)
        for j, subset in enumerate(app.subsets):
            spath = f"{base}.subsets[{j}]"
            if subset_names[subset.name] > 1:
                yield Issue(f"{spath}.name", f"subset {subset.name!r} is declared more than once")
            if subset.node_selector_term is not None:
                for k, req in enumerate(subset.node_selector_term.match_expressions):
                    yield from _requirement_issues(
                        f"{spath}.nodeSelectorTerm.matchExpressions[{k}]", req
                    )
                if subset.virtual_nodes is not None and any(
                    r.key == "type" for r in subset.node_selector_term.match_expressions
                ):
                    yield Issue(
                        f"{spath}.nodeSelectorTerm",
                        "virtualNodes already sets the 'type' expression; drop one of them",
                    )
            for k, tol in enumerate(subset.tolerations):
                yield from _toleration_issues(f"{spath}.tolerations[{k}]", tol)
            if subset.virtual_nodes:
                for member in weights:
                    cluster = _cluster(fleet, member)
                    if cluster is not None and not cluster.virtual_nodes.enabled:
                        yield Issue(
                            f"{spath}.virtualNodes",
                            f"member {member!r} receives this subset but has no virtual nodes: "
                            f"set virtualNodes.enabled on {member!r} or drop its weight",
                        )
        for port in app.template.ports:
            if not 1 <= port <= 65535:
                yield Issue(f"{base}.template.ports", f"port {port} is not in 1..65535")
        if all(w >= 1 for w in weights.values()) and max(subset_names.values()) == 1:
            try:
                plan_placement(app.replicas, weights, subset_specs(app))
            except ValueError as err:
                yield Issue(f"{base}.subsets", f"OpenKruise would reject this placement: {err}")


KARMADA_CHECKS: tuple[Check, ...] = (
    check_karmada_source,
    check_karmada_clusters,
    check_karmada_api_server,
    check_karmada_control_plane,
    check_karmada_failover,
    check_kruise,
    check_karmada_applications,
)


# --- where replicas land ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ApplicationPlacement:
    """Replicas of one application per member and per subset, as Karmada and Kruise split them."""

    namespace: str
    name: str
    plan: PlacementPlan
    virtual_subsets: tuple[str, ...]
    # True when an exact weight tie makes the split depend on the object's UID (known after create).
    uid_dependent: bool

    def rows(self) -> list[tuple[str, str, int, bool]]:
        """(member, subset, replicas, on virtual nodes) for every member and subset."""
        return [
            (member, subset, count, subset in self.virtual_subsets)
            for member, split in self.plan.member_subsets.items()
            for subset, count in split.items()
        ]


def placement_report(fleet: FleetConfig) -> list[ApplicationPlacement]:
    """Per application: replicas per member (Karmada static weights), then per subset (Kruise)."""
    if fleet.karmada is None:
        return []
    report: list[ApplicationPlacement] = []
    for app in fleet.karmada.applications:
        weights = app.propagation.weights
        plan = plan_placement(app.replicas, weights, subset_specs(app))
        other = plan_placement(app.replicas, weights, subset_specs(app), resource_uid=_ODD_UID)
        report.append(
            ApplicationPlacement(
                namespace=app.namespace,
                name=app.name,
                plan=plan,
                virtual_subsets=tuple(s.name for s in app.subsets if s.virtual_nodes),
                uid_dependent=dict(plan.members) != dict(other.members),
            )
        )
    return report
