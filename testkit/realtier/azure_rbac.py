"""Azure RBAC for Kubernetes authorization on the Azure twin's planes.

On AKS with `aadProfile.enableAzureRBAC`, the API server asks an authorization webhook (AKS's
guard) about every request its own RBAC does not allow, and the webhook answers from the Azure
role assignments whose scope is the cluster (every namespace) or one of its namespaces
(`<cluster id>/namespaces/<name>`). A new assignment reaches it only after a while: "New role
assignments can take up to five minutes to propagate and be updated by the authorization
server" (learn.microsoft.com/azure/aks/manage-azure-rbac, read 2026-12-03).

The twin's planes do the same through kube-apiserver's own webhook authorizer: each plane's
`--authorization-webhook-config-file` points at the twin's endpoint for that cluster, which
answers a SubjectAccessReview from the role assignments the twin holds, each counted only from
its creation plus the twin's propagation delay. A request the assignments do not allow gets no
opinion (allowed false, not denied), as AKS's guard gives, so Kubernetes RBAC still decides.

The four built-in AKS RBAC roles, from their role definitions' data actions (Azure built-in
roles, Containers; read 2026-12-06), as Kubernetes verbs on (group, resource):
- Cluster Admin: everything.
- Admin: everything but writing namespaces and resource quotas.
- Writer: read and write namespaced objects, Secrets included; no Roles or RoleBindings, and no
  write to namespaces or resource quotas.
- Reader: read namespaced objects except Secrets, Roles and RoleBindings.
Namespaced grants reach only their namespace's objects; cluster-scoped resources (nodes, CRDs,
namespaces themselves, cluster roles) need a cluster-scope assignment.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from upstream.aks import AKS_RBAC_ROLES

READS: Final = frozenset({"get", "list", "watch"})
ADMIN_GROUPS_BINDING: Final = "aks-cluster-admin-binding-aad"
# Writes these roles keep from namespaces and quotas (Admin, Writer).
_QUOTA_AND_NAMESPACE: Final = frozenset({("", "namespaces"), ("", "resourcequotas")})
_RBAC_OBJECTS: Final = frozenset(
    {
        ("rbac.authorization.k8s.io", "roles"),
        ("rbac.authorization.k8s.io", "rolebindings"),
    }
)
# RBAC's own checks against escalation (bind, escalate) and impersonation are verbs on RBAC
# objects and users; only Cluster Admin and Admin hold them.
_PRIVILEGED_VERBS: Final = frozenset({"bind", "escalate", "impersonate"})


@dataclass(frozen=True, slots=True)
class Request:
    """What a SubjectAccessReview asks (spec.resourceAttributes / nonResourceAttributes)."""

    uid: str
    user: str
    verb: str
    group: str
    resource: str
    namespace: str
    path: str  # a non-resource request's path ("" for a resource request)

    @property
    def is_write(self) -> bool:
        return self.verb not in READS

    def __str__(self) -> str:
        if self.path:
            return f"{self.verb} {self.path}"
        where = f" in {self.namespace}" if self.namespace else ""
        what = f"{self.resource}.{self.group}" if self.group else self.resource
        return f"{self.verb} {what}{where}"


def request_of(review: Mapping[str, Any]) -> Request:
    spec: Mapping[str, Any] = review.get("spec") or {}
    attrs: Mapping[str, Any] = spec.get("resourceAttributes") or {}
    other: Mapping[str, Any] = spec.get("nonResourceAttributes") or {}
    resource = str(attrs.get("resource", ""))
    if attrs.get("subresource"):
        resource = f"{resource}/{attrs['subresource']}"
    return Request(
        uid=str(spec.get("uid", "")),
        user=str(spec.get("user", "")),
        verb=str(attrs.get("verb") or other.get("verb") or ""),
        group=str(attrs.get("group", "")),
        resource=resource,
        namespace=str(attrs.get("namespace", "")),
        path=str(other.get("path", "")),
    )


def role_allows(role: str, request: Request, *, namespaced_grant: bool) -> bool:
    """Whether one built-in AKS RBAC role (its definition's GUID) allows `request`."""
    if request.path:  # discovery, /healthz, /version: Kubernetes RBAC allows those to everyone
        return role == AKS_RBAC_ROLES["clusterAdmin"]
    key = (request.group, request.resource.split("/", 1)[0])
    if namespaced_grant and not request.namespace:
        return False
    if role == AKS_RBAC_ROLES["clusterAdmin"]:
        return True
    if role == AKS_RBAC_ROLES["admin"]:
        return not (request.is_write and key in _QUOTA_AND_NAMESPACE)
    if not request.namespace or request.verb in _PRIVILEGED_VERBS:
        return False
    if role == AKS_RBAC_ROLES["writer"]:
        return key not in _RBAC_OBJECTS and not (request.is_write and key in _QUOTA_AND_NAMESPACE)
    if role == AKS_RBAC_ROLES["reader"]:
        return not request.is_write and key not in _RBAC_OBJECTS and key != ("", "secrets")
    return False  # a role the twin does not know grants nothing


@dataclass(frozen=True, slots=True)
class Grant:
    """A role assignment as the authorization server sees it once it has propagated."""

    principal: str
    role: str  # the role definition's GUID
    namespace: str | None  # None: the whole cluster


def grant_of(cluster_id: str, inputs: Mapping[str, Any]) -> Grant | None:
    """The assignment's grant on the cluster `cluster_id`, or None when its scope is not that
    cluster (nor one of its namespaces)."""
    scope = str(inputs.get("scope", ""))
    if scope == cluster_id:
        namespace = None
    elif scope.startswith(f"{cluster_id}/namespaces/"):
        namespace = scope.removeprefix(f"{cluster_id}/namespaces/")
    else:
        return None
    role = str(inputs.get("roleDefinitionId", "")).rsplit("/", 1)[-1]
    return Grant(str(inputs.get("principalId", "")), role, namespace)


def decide(grants: Iterable[Grant], request: Request) -> bool:
    """Allowed by one of the principal's grants (the token's uid is its Entra object id)."""
    return any(
        g.principal == request.uid
        and (g.namespace is None or g.namespace == request.namespace)
        and role_allows(g.role, request, namespaced_grant=g.namespace is not None)
        for g in grants
    )


def review_answer(allowed: bool, reason: str) -> dict[str, Any]:
    """The SubjectAccessReview the webhook returns: allowed, or no opinion."""
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "status": {"allowed": allowed, "reason": reason},
    }


def azure_rbac_enabled(cluster_inputs: Mapping[str, Any]) -> bool:
    """The ManagedCluster's `aadProfile.enableAzureRBAC`, as the engine sent it."""
    profile: Mapping[str, Any] = cluster_inputs.get("aadProfile") or {}
    return any(k.lower() == "enableazurerbac" and v is True for k, v in profile.items())


def admin_groups(cluster_inputs: Mapping[str, Any]) -> list[str]:
    """The ManagedCluster's `aadProfile.adminGroupObjectIDs` with managed Entra ID, as sent."""
    profile: Mapping[str, Any] = cluster_inputs.get("aadProfile") or {}
    if not any(k.lower() == "managed" and v is True for k, v in profile.items()):
        return []
    return [
        str(g) for k, v in profile.items() if k.lower() == "admingroupobjectids" for g in (v or [])
    ]


def admin_groups_binding(groups: list[str]) -> dict[str, Any]:
    """What AKS binds for `adminGroupObjectIDs`: `cluster-admin` to each group, by object id
    (the group claim of an Entra token). The binding's name is AKS's as remembered, not read
    from a cluster; nothing judges it."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": ADMIN_GROUPS_BINDING},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "cluster-admin",
        },
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g} for g in groups
        ],
    }


def webhook_kubeconfig(url: str) -> str:
    """kube-apiserver's `--authorization-webhook-config-file`: where to send its reviews."""
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: azure-rbac\n  cluster:\n    server: {url}\n"
        "users:\n- name: kube-apiserver\n  user: {}\n"
        "contexts:\n- name: azure-rbac\n  context:\n    cluster: azure-rbac\n"
        "    user: kube-apiserver\n"
        "current-context: azure-rbac\n"
    )
