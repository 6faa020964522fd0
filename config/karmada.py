"""Karmada + OpenKruise settings (`fleet.karmada`) and their cross-field checks.

The models depend on pydantic only: `config.models` imports this module for `FleetConfig.karmada`,
so importing `config.models` here would be circular. The checks receive the whole FleetConfig and
return Issues with camelCase key paths, like the checks in `config.validate`.

Upstream facts behind the rules (../shared/notes/karmada-kruise.md): Karmada v1.18.2 cluster names
are DNS-1123 labels of <= 48 characters; a PropagationPolicy's static weights are >= 1 and its
enums are exact (`Divided`, `Weighted`); objects in karmada-system, karmada-cluster, karmada-es-*
and kube-* are never propagated; OpenKruise v1.9.0 UnitedDeployment subsets take an integer or
"N%" and only their nodeSelectorTerm.matchExpressions are used.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from ipaddress import IPv4Address
from typing import TYPE_CHECKING, Annotated, Final, Literal

from pydantic import AfterValidator, Field, StrictInt

from builders.placement import SubsetSpec, plan_placement
from config.base import Model
from config.errors import Issue, key_path

if TYPE_CHECKING:
    from config.models import ClusterConfig, FleetConfig

# Pins (chart versions). Karmada charts carry a leading "v"; OpenKruise charts do not, and their
# appVersion (the kruise-manager image and the git tag the CRDs come from) is "v" + chart version.
DEFAULT_KARMADA_CHART_VERSION: Final = "v1.18.2"
DEFAULT_KRUISE_CHART_VERSION: Final = "1.9.0"

KARMADA_CLUSTER_NAME_MAX: Final = 48
DNS_LABEL: Final = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
FEATURE_GATE: Final = re.compile(r"^[A-Z][A-Za-z0-9]*$")
# Kubernetes resource.Quantity, decimal and binary suffixes (no exponent forms: nobody writes them).
QUANTITY: Final = re.compile(r"^(?:\d+(?:\.\d+)?|\.\d+)(?:m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
# Namespaces whose objects Karmada never propagates (names.IsReservedNamespace, and the
# controller-manager default --skipped-propagating-namespaces=kube-.*).
RESERVED_NAMESPACES: Final = ("karmada-system", "karmada-cluster")
RESERVED_NAMESPACE_PREFIXES: Final = ("karmada-es-", "kube-")
MEMBER_ROLES: Final = ("worker", "standalone")


def _dns_label(value: str) -> str:
    if not DNS_LABEL.match(value):
        raise ValueError(
            f"{value!r} must be a DNS-1123 label: 1-63 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return value


def _replicas(value: int | str) -> int | str:
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value} must be >= 0")
    elif not re.fullmatch(r"(?:100|[1-9]?[0-9])%", value):
        raise ValueError(f"{value!r} must be an integer or a percentage 'N%' with N in 0..100")
    return value


def _quantity(value: str) -> str:
    if not QUANTITY.match(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. '250m', '1', '512Mi')")
    return value


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
SubsetReplicas = Annotated[StrictInt | str, AfterValidator(_replicas)]
Quantity = Annotated[str, AfterValidator(_quantity)]
ResourceName = Literal["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu"]


class NodeSelectorRequirement(Model):
    """One `matchExpressions` entry of a subset's nodeSelectorTerm (core/v1 shape)."""

    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = Field(default_factory=list[str])


class NodeSelectorTerm(Model):
    """Kruise uses only matchExpressions (matchFields is ignored), so only they are accepted."""

    match_expressions: list[NodeSelectorRequirement] = Field(min_length=1)


class Toleration(Model):
    """A pod toleration (core/v1 shape)."""

    key: str | None = None
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = Field(default=None, ge=0)


class SubsetConfig(Model):
    """One UnitedDeployment subset: where a share of each member's replicas runs.

    `virtualNodes: true` puts the subset on AKS virtual nodes (their `type=virtual-kubelet` label
    and `virtual-kubelet.io/provider` toleration); `false` keeps it off them explicitly; unset adds
    nothing (pods without the toleration never land on virtual nodes anyway).
    """

    name: DnsLabel
    replicas: SubsetReplicas | None = None
    node_selector_term: NodeSelectorTerm | None = None
    tolerations: list[Toleration] = Field(default_factory=list[Toleration])
    virtual_nodes: bool | None = None


class ContainerResources(Model):
    requests: dict[ResourceName, Quantity] = Field(default_factory=dict[ResourceName, str])
    limits: dict[ResourceName, Quantity] = Field(default_factory=dict[ResourceName, str])


WorkloadKind = Literal["deployment", "cloneSet", "statefulSet", "advancedStatefulSet"]


class WorkloadTemplate(Model):
    """The workload each subset runs: which Kruise template kind, and its one container."""

    kind: WorkloadKind = "deployment"
    image: str = Field(min_length=1)
    container_name: DnsLabel | None = None
    ports: list[int] = Field(default_factory=list[int])
    resources: ContainerResources = ContainerResources()
    labels: dict[str, str] = Field(default_factory=dict[str, str])


class PropagationConfig(Model):
    """Karmada placement: Divided replicas, Weighted by a static weight per member cluster."""

    weights: dict[str, StrictInt] = Field(min_length=1)


class ApplicationConfig(Model):
    """A UnitedDeployment on the Karmada API server and the PropagationPolicy that spreads it."""

    name: DnsLabel
    namespace: DnsLabel = "default"
    # Always set: Karmada's GetReplicas fails on a nil spec.replicas (notes 5.6 item 3).
    replicas: StrictInt = Field(ge=0, le=2**31 - 1)
    template: WorkloadTemplate
    subsets: list[SubsetConfig] = Field(min_length=1)
    propagation: PropagationConfig


class ApiServerConfig(Model):
    """How the Pulumi runner reaches the Karmada API server (port 5443 on a LoadBalancer)."""

    exposure: Literal["public", "internal"] = "public"
    # internal: a free address in the host cluster's node subnet, fixed before the first install.
    internal_ip: IPv4Address | None = None
    # public: `<dnsLabel>.<location>.cloudapp.azure.com` on the static IP, also a certificate SAN.
    dns_label: DnsLabel | None = None


class EtcdConfig(Model):
    """Karmada's internal etcd. `pvc` survives node replacement; `hostPath` (chart default) not."""

    storage: Literal["pvc", "hostPath"] = "pvc"
    storage_class: str = "managed-csi"
    size: Quantity = "8Gi"


class KruiseSettings(Model):
    """OpenKruise on every Karmada member (the `kruise` chart from openkruise/charts)."""

    chart_version: str = Field(
        default=DEFAULT_KRUISE_CHART_VERSION, pattern=r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?$"
    )
    # Merged over the chart default (ImagePullJobGate=true) into its comma-separated string.
    feature_gates: dict[str, bool] = Field(default_factory=dict[str, bool])
    manager_replicas: int = Field(default=2, ge=1, le=10)


class KarmadaSettings(Model):
    """Karmada control plane (host mode) on one cluster, its members, and the applications."""

    host: str | None = None
    members: list[str] | None = None
    chart_version: str = Field(
        default=DEFAULT_KARMADA_CHART_VERSION, pattern=r"^v\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?$"
    )
    api_server: ApiServerConfig = ApiServerConfig()
    etcd: EtcdConfig = EtcdConfig()
    kruise: KruiseSettings = KruiseSettings()
    applications: list[ApplicationConfig] = Field(default_factory=list[ApplicationConfig])


# --- resolution (shared by checks, builders and components) ----------------------------------


def host_name(fleet: FleetConfig) -> str | None:
    """The Karmada host: configured, else the manager, else the only cluster."""
    settings = fleet.karmada
    if settings is None:
        return None
    if settings.host is not None:
        return settings.host
    if fleet.manager is not None:
        return fleet.manager.name
    return fleet.clusters[0].name if len(fleet.clusters) == 1 else None


def member_names(fleet: FleetConfig) -> list[str]:
    """The Karmada members: configured, else every worker and standalone cluster."""
    settings = fleet.karmada
    if settings is None:
        return []
    if settings.members is not None:
        return list(settings.members)
    return [c.name for c in fleet.clusters if c.role in MEMBER_ROLES]


def subset_specs(app: ApplicationConfig) -> list[SubsetSpec]:
    return [SubsetSpec(s.name, s.replicas) for s in app.subsets]


# --- checks ---------------------------------------------------------------------------------


def _cluster(fleet: FleetConfig, name: str) -> ClusterConfig | None:
    return next((c for c in fleet.clusters if c.name == name), None)


def check_karmada_clusters(fleet: FleetConfig) -> Iterator[Issue]:
    """Host and members name clusters of this stack; members are workers/standalone clusters."""
    settings = fleet.karmada
    if settings is None:
        return
    host = host_name(fleet)
    if settings.host is not None and _cluster(fleet, settings.host) is None:
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
        if len(member) > KARMADA_CLUSTER_NAME_MAX or not DNS_LABEL.match(member):
            yield Issue(
                path,
                f"{member!r} cannot be a Karmada cluster name: a lowercase DNS-1123 label of at "
                f"most {KARMADA_CLUSTER_NAME_MAX} characters (the namespace karmada-es-<name> "
                "must stay a label)",
            )


def check_karmada_api_server(fleet: FleetConfig) -> Iterator[Issue]:
    """Exposure settings that fit together, with an internal address known before install."""
    settings = fleet.karmada
    if settings is None:
        return
    api = settings.api_server
    base = "karmada.apiServer"
    if api.exposure == "public":
        if api.internal_ip is not None:
            yield Issue(f"{base}.internalIp", "only with exposure: internal")
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


def check_kruise(fleet: FleetConfig) -> Iterator[Issue]:
    settings = fleet.karmada
    if settings is None:
        return
    for gate in settings.kruise.feature_gates:
        if not FEATURE_GATE.match(gate):
            yield Issue(
                f"karmada.kruise.featureGates.{gate}",
                "feature gate names are CamelCase identifiers (e.g. ImagePullJobGate)",
            )


def _requirement_issues(path: str, req: NodeSelectorRequirement) -> Iterator[Issue]:
    from config.models import label_key_problem  # noqa: PLC0415 - models.py imports this module

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


KARMADA_CHECKS: Final = (
    check_karmada_clusters,
    check_karmada_api_server,
    check_kruise,
    check_karmada_applications,
)
