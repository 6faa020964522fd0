"""What a credential the stack mints may do: Kubernetes RBAC evaluated over the built objects.

The authorizer's rules (k8s.io/kubernetes plugin/pkg/auth/authorizer/rbac: rule_allows,
a ClusterRoleBinding grants everywhere, a RoleBinding only in its namespace; `*` matches any verb,
group or resource; resourceNames restrict get/update/patch/delete but never create, list or
watch, whose requests carry no name). Used for the member credential's can-i table (tests and
`preflight plan`) and for the escalations `memberAccess: scoped` must never allow.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from builders import karmada as kb
from builders import karmada_access as ka
from builders import karmada_members as km
from builders import multikueue as mk
from builders.manifest import Manifest
from config.errors import Issue
from config.models import FleetConfig
from config.resolve import member_names
from upstream.kueue import KUEUE_NAMESPACE, SERVICE_ACCOUNT


@dataclass(frozen=True, slots=True)
class Request:
    """One API request: `namespace` None means cluster-scoped, or every namespace (a list)."""

    verb: str
    group: str
    resource: str
    namespace: str | None = None
    name: str | None = None
    url: str | None = None  # a non-resource request (then only `verb` and `url` count)

    def __str__(self) -> str:
        if self.url is not None:
            return f"{self.verb} {self.url}"
        kind = f"{self.resource}.{self.group}" if self.group else self.resource
        where = f" -n {self.namespace}" if self.namespace else " (cluster-wide)"
        return f"{self.verb} {kind}{'/' + self.name if self.name else ''}{where}"


Rule = Mapping[str, Sequence[str]]


def _has(values: Sequence[str], value: str) -> bool:
    return "*" in values or value in values


def _url_matches(patterns: Sequence[str], url: str) -> bool:
    return any(p == url or (p.endswith("*") and url.startswith(p[:-1])) for p in patterns)


def rule_allows(rule: Rule, request: Request) -> bool:
    """rbac/v1 PolicyRule semantics for one request."""
    if not _has(rule.get("verbs", ()), request.verb):
        return False
    if request.url is not None:
        return _url_matches(rule.get("nonResourceURLs", ()), request.url)
    if "nonResourceURLs" in rule:
        return False
    if not (
        _has(rule.get("apiGroups", ()), request.group)
        and _has(rule.get("resources", ()), request.resource)
    ):
        return False
    names = rule.get("resourceNames")
    return not names or (request.name is not None and request.name in names)


@dataclass(frozen=True, slots=True)
class Grants:
    """The rules one subject holds on one cluster: everywhere, and per namespace."""

    cluster_wide: tuple[Rule, ...]
    per_namespace: Mapping[str, tuple[Rule, ...]]

    def allows(self, request: Request) -> bool:
        if any(rule_allows(r, request) for r in self.cluster_wide):
            return True
        if request.namespace is None or request.url is not None:
            return False
        return any(rule_allows(r, request) for r in self.per_namespace.get(request.namespace, ()))


def _bound(binding: Mapping[str, Any], subject: Mapping[str, str]) -> bool:
    subjects = cast("list[Mapping[str, str]]", binding.get("subjects") or [])
    return any(
        s.get("kind") == subject["kind"]
        and s.get("name") == subject["name"]
        and s.get("namespace", "") == subject.get("namespace", "")
        for s in subjects
    )


def grants_of(objects: Iterable[Manifest], target: str, subject: Mapping[str, str]) -> Grants:
    """The subject's rules from the RBAC objects built for `target`."""
    mine = [m for m in objects if m.target == target]
    cluster_roles = {m.name: m.obj.get("rules") or [] for m in mine if m.kind == "ClusterRole"}
    roles = {
        (m.obj["metadata"]["namespace"], m.name): m.obj.get("rules") or []
        for m in mine
        if m.kind == "Role"
    }
    everywhere: list[Rule] = []
    per_ns: dict[str, list[Rule]] = {}
    for m in mine:
        if m.kind not in ("ClusterRoleBinding", "RoleBinding") or not _bound(m.obj, subject):
            continue
        ref = m.obj["roleRef"]
        if m.kind == "ClusterRoleBinding":
            everywhere += cluster_roles.get(ref["name"], [])
            continue
        ns = m.obj["metadata"]["namespace"]
        rules = (
            cluster_roles.get(ref["name"], [])
            if ref["kind"] == "ClusterRole"
            else roles.get((ns, ref["name"]), [])
        )
        per_ns.setdefault(ns, []).extend(rules)
    return Grants(tuple(everywhere), {ns: tuple(r) for ns, r in per_ns.items()})


def member_subject(member: str) -> dict[str, str]:
    return {
        "kind": "ServiceAccount",
        "name": km.member_service_account(member),
        "namespace": km.CLUSTER_NAMESPACE,
    }


# What a member credential must never be able to do (any one is a way to cluster admin on the
# member, or to take a system component away): read any Secret outside the applications'
# namespaces (tokens, including MultiKueue's), mint a token, write RBAC, impersonate, run a pod
# or workload outside the applications' namespaces, take a namespace or a webhook away.
ESCALATIONS: Final[tuple[Request, ...]] = (
    Request("list", "", "secrets"),
    Request("get", "", "secrets", "kube-system", "any"),
    Request("list", "", "secrets", "kueue-system"),
    Request("create", "", "secrets", "kube-system"),
    Request("create", "", "serviceaccounts/token", "kube-system", "any"),
    Request("create", "", "serviceaccounts", "kube-system"),
    Request("create", "rbac.authorization.k8s.io", "clusterroles"),
    Request("create", "rbac.authorization.k8s.io", "clusterrolebindings"),
    Request("create", "rbac.authorization.k8s.io", "rolebindings", "kube-system"),
    Request("bind", "rbac.authorization.k8s.io", "clusterroles", None, "cluster-admin"),
    Request("escalate", "rbac.authorization.k8s.io", "clusterroles", None, "any"),
    Request("impersonate", "", "users", None, "system:admin"),
    Request("impersonate", "", "groups", None, "system:masters"),
    Request("impersonate", "", "serviceaccounts", "kube-system", "any"),
    Request("create", "", "pods", "kube-system"),
    Request("create", "", "pods/exec", "kube-system", "any"),
    Request("create", "apps", "daemonsets", "kube-system"),
    Request("create", "apps.kruise.io", "uniteddeployments", "kube-system"),
    Request("create", "apps.kruise.io", "uniteddeployments", "kueue-system"),
    Request("delete", "", "namespaces", None, "kueue-system"),
    Request("create", "", "namespaces"),
    Request("update", "", "namespaces", None, "kube-system"),
    Request("patch", "", "nodes", None, "any"),
    Request("delete", "admissionregistration.k8s.io", "validatingwebhookconfigurations", None, "x"),
    Request("create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    Request("get", "", "", url="/metrics"),
)


def needed(settings_namespaces: Sequence[str]) -> list[Request]:
    """What Karmada v1.18.2's push-mode controllers do in a member for this stack's applications
    (builders.karmada_access cites the source of each)."""
    out = [Request("get", "", "", url=u) for u in ("/readyz", "/healthz", "/version", "/api")]
    out += [Request("get", "", "", url="/apis/apps.kruise.io/v1alpha1")]
    out += [Request(v, "", r) for v in ("list", "watch") for r in ("nodes", "pods")]
    out += [Request(v, "apps.kruise.io", "uniteddeployments") for v in ("list", "watch")]
    out += [Request(v, "", r) for v in ("list", "watch") for r in ("configmaps", "namespaces")]
    # Deleting a Work whose kind's informer has not synced reads the member object directly
    # (pkg/util/helper/cache.go GetObjectFromCache -> getObjectFromSingleCluster), in whatever
    # namespace the Work names; a refused GET holds the Work's finalizer, and with it the unjoin.
    out += [Request("get", "", "namespaces", name="x")]
    out += [Request("get", "apps.kruise.io", "uniteddeployments", "elsewhere", "x")]
    for ns in settings_namespaces:
        out += [
            Request(v, group, resource, ns, "x" if v not in ("create",) else None)
            for v in ("get", "create", "update", "patch", "delete")
            for group, resources in ka.PROPAGATED_RESOURCES.items()
            for resource in resources
        ]
    return out


def member_access_table(fleet: FleetConfig, member: str) -> list[tuple[Request, bool]]:
    """Each needed request and each escalation, with whether the member credential may do it."""
    settings = kb.settings_of(fleet)
    objects = km.member_objects(member, settings)
    grants = grants_of(objects, member, member_subject(member))
    requests = [*needed(ka.app_namespace_names(settings)), *ESCALATIONS]
    return [(r, grants.allows(r)) for r in requests]


def check_member_access(fleet: FleetConfig) -> Iterator[Issue]:
    """`memberAccess: wildcard` is what `karmadactl join` grants: say what it gives away."""
    settings = fleet.karmada
    if settings is None or ka.scoped(settings):
        return
    members = member_names(fleet)
    if not members:
        return
    table = member_access_table(fleet, members[0])
    granted = [str(r) for r, ok in table if ok and r in ESCALATIONS]
    if granted:
        yield Issue(
            "karmada.memberAccess",
            f"wildcard: the Karmada member credential is cluster admin on every member "
            f"(it may {', '.join(granted[:3])}, ...): a Karmada compromise is one on each "
            "member; `scoped` (the default) grants only what the stack's applications need",
            "warning",
        )


def check_open_ranges(fleet: FleetConfig) -> Iterator[Issue]:
    """An allowed range of `/0` opens an admin endpoint to the whole Internet: say so."""
    where = [("access.authorizedIpRanges", fleet.access.authorized_ip_ranges, "AKS API servers")]
    where += [
        (
            f"clusters[{i}].access.authorizedIpRanges",
            c.access.authorized_ip_ranges,
            "AKS API server",
        )
        for i, c in enumerate(fleet.clusters)
        if c.source == "aks" and c.access is not None
    ]
    if fleet.karmada is not None and fleet.karmada.source == "chart":
        ranges = fleet.karmada.api_server.allowed_source_ranges or []
        where.append(("karmada.apiServer.allowedSourceRanges", ranges, "Karmada API server"))
    for path, ranges, what in where:
        for j, cidr in enumerate(ranges):
            if cidr.prefixlen == 0:
                yield Issue(
                    f"{path}[{j}]",
                    f"{cidr} lets every address on the Internet reach the {what}, whose "
                    "credentials are cluster admin: list your runners' and admins' egress "
                    "CIDRs instead (docs/security.md says how to find them)",
                    "warning",
                )


# --- one line per credential, for the plan -------------------------------------------------


def _denied(grants: Grants) -> str:
    allowed = [r for r in ESCALATIONS if grants.allows(r)]
    if not allowed:
        return f"all {len(ESCALATIONS)} escalations denied"
    return f"{len(allowed)} of {len(ESCALATIONS)} escalations allowed (e.g. {allowed[0]})"


WRITE_VERBS: Final = frozenset({"create", "update", "patch", "delete", "*"})


def _resources(rules: Iterable[Rule], *, writes: bool = False) -> list[str]:
    return sorted(
        {
            r
            for rule in rules
            if not writes or WRITE_VERBS & set(rule.get("verbs", ()))
            for r in rule.get("resources", ())
        }
    )


def _some(kinds: Sequence[str]) -> str:
    shown = ", ".join(kinds[:2])
    return f"{len(kinds)} kinds ({shown}{', ...' if len(kinds) > 2 else ''})"


def multikueue_worker_access(fleet: FleetConfig, worker: str) -> str:
    """What the manager's token on `worker` may do, in one line (from the built RBAC objects)."""
    kueue = fleet.kueue
    objects = [
        Manifest(worker, o)
        for o in mk.worker_objects(
            kueue.version, kueue.frameworks, 0, feature_gates=kueue.feature_gates
        )
    ]
    objects += mk.write_role_bindings(fleet, worker)
    subject = {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": KUEUE_NAMESPACE}
    grants = grants_of(objects, worker, subject)
    per_ns = {
        ns: w for ns, rules in grants.per_namespace.items() if (w := _resources(rules, writes=True))
    }
    namespaces = sorted(per_ns)
    writes = sorted({r for w in per_ns.values() for r in w})
    return (
        f"reads {len(_resources(grants.cluster_wide))} kinds cluster-wide; writes "
        f"{_some(writes)} only in {', '.join(namespaces) or 'no namespace'}; {_denied(grants)}"
    )


def karmada_member_access(fleet: FleetConfig, member: str) -> str:
    """What Karmada's token on `member` may do, in one line (`memberAccess` and its can-i)."""
    settings = kb.settings_of(fleet)
    grants = grants_of(km.member_objects(member, settings), member, member_subject(member))
    if not ka.scoped(settings):
        return f"wildcard: any verb on any kind (cluster admin); {_denied(grants)}"
    namespaces = ka.app_namespace_names(settings)
    writes = _resources(
        (r for ns in namespaces for r in grants.per_namespace.get(ns, ())), writes=True
    )
    return (
        f"scoped: writes {_some(writes)} only in {', '.join(namespaces) or 'no namespace'}; "
        f"{_denied(grants)}"
    )
