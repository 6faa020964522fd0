"""What a Karmada member credential may do in its member: the ClusterRole and per-namespace Role
rules for `memberAccess` (scoped, the default, or `karmadactl join`'s wildcard), and the Pod
Security level of the applications' namespaces. Pure; each rule cites the Karmada v1.18.2 code that
needs it."""

from __future__ import annotations

from typing import Final

from config.karmada import KarmadaSettings

# util.ClusterPolicyRules: what `karmadactl join` grants (memberAccess: wildcard, opt-in):
# any kind can be propagated, and a Karmada compromise is admin on every member.
WILDCARD_RULES: Final[list[dict[str, list[str]]]] = [
    {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
    {"nonResourceURLs": ["*"], "verbs": ["get"]},
]
READ: Final = ["get", "list", "watch"]
WATCH: Final = ["list", "watch"]
WRITE: Final = ["get", "create", "update", "patch", "delete"]
RBAC_API: Final = "rbac.authorization.k8s.io"
# memberAccess: scoped (the default): what the push-mode controllers of Karmada v1.18.2 do in a
# member for what this stack propagates, and nothing that reaches beyond the applications'
# namespaces (proven by tests/realtier/test_karmada.py; table in tests/test_member_access.py):
# - cluster status (pkg/controllers/status/cluster_status_controller.go): /readyz, else /healthz
#   (healthEndpointCheck), /version and discovery (getKubernetesVersion, getAPIEnablements),
#   and typed informers on nodes and pods for the resource summary (buildInformerForCluster:
#   list/watch, cluster-wide).
# - execution (pkg/controllers/execution/execution_controller.go tryCreateOrUpdateWorkload,
#   pkg/util/objectwatcher): get (from the informer, else a direct GET,
#   pkg/util/helper/cache.go GetObjectFromCache), create, update, delete of each object of a
#   Work, in the object's namespace: the UnitedDeployments and what PropagateDeps adds beside them
#   (our GetDependencies script: ConfigMaps, Secrets, ServiceAccounts, PVCs), only in the
#   applications' namespaces (a Role and RoleBinding there).
# - work status (pkg/controllers/status/work_status_controller.go registerInformersAndStart):
#   a dynamic informer per propagated kind, and informers are cluster-wide
#   (pkg/util/fedinformer/genericmanager/single-cluster-manager.go:
#   NewDynamicSharedInformerFactory, no namespace): list/watch of those kinds everywhere,
#   except Secrets: a cluster-wide Secret list reads every token of the member. A Secret
#   dependency is still created and updated (the direct GET fallback), but Karmada cannot watch
#   it (its Work reports no status); the stack's templates refer to none.
# Not granted, because nothing this stack runs needs it: namespace writes (the applications'
# namespaces are made on each member by the program and are not auto-propagated, label
# namespace.karmada.io/skip-auto-propagation), RBAC objects and impersonation (the Cluster has
# no impersonatorSecretRef, so unified auth leaves the member alone:
# pkg/controllers/unifiedauth/unified_auth_controller.go Reconcile; Karmada's cluster proxy is
# then unavailable for it), any other kind or verb.
SCOPED_CLUSTER_RULES: Final[list[dict[str, list[str]]]] = [
    {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": list(WATCH)},
    # The propagated kinds and namespaces: get as well as list/watch (get reveals nothing a list
    # does not). Deleting a Work reads its object from the informer, or, while that informer has
    # not synced, with a direct GET (pkg/util/helper/cache.go GetObjectFromCache ->
    # getObjectFromSingleCluster); a refused GET holds the Work's finalizer and with it unjoining
    # the member. Seen live: a namespace someone else created on Karmada is synced to every member
    # (and refused there); without `get`, deleting the Cluster hung on that namespace's Work.
    {
        "apiGroups": [""],
        "resources": ["configmaps", "serviceaccounts", "persistentvolumeclaims", "services"],
        "verbs": list(READ),
    },
    {"apiGroups": ["apps.kruise.io"], "resources": ["uniteddeployments"], "verbs": list(READ)},
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": list(READ)},
    {
        "nonResourceURLs": [
            "/readyz",
            "/healthz",
            "/livez",
            "/version",
            "/api",
            "/api/*",
            "/apis",
            "/apis/*",
        ],
        "verbs": ["get"],
    },
]
PROPAGATED_RESOURCES: Final[dict[str, tuple[str, ...]]] = {
    # services: a StatefulSet template's headless Service (applications.headless_service).
    "": ("configmaps", "secrets", "serviceaccounts", "persistentvolumeclaims", "services"),
    "apps.kruise.io": ("uniteddeployments",),
}
SCOPED_NAMESPACE_RULES: Final[list[dict[str, list[str]]]] = [
    {"apiGroups": [group], "resources": list(resources), "verbs": list(WRITE)}
    for group, resources in PROPAGATED_RESOURCES.items()
]
# An application namespace on a member: the credential may create workloads there (Kruise then
# makes their pods), so the namespace enforces `baseline` (no privileged, host namespaces,
# hostPath or host ports). Not `restricted`: a UnitedDeployment template has no securityContext
# setting here, and restricted refuses a pod without one.
APP_POD_SECURITY: Final = "baseline"


def scoped(settings: KarmadaSettings) -> bool:
    return settings.member_access == "scoped"


def member_rules(settings: KarmadaSettings) -> list[dict[str, list[str]]]:
    """The member ClusterRole's rules for the configured `memberAccess`."""
    rules = SCOPED_CLUSTER_RULES if scoped(settings) else WILDCARD_RULES
    return [{k: list(v) for k, v in rule.items()} for rule in rules]


def member_namespace_rules(settings: KarmadaSettings) -> list[dict[str, list[str]]]:
    """The Role's rules in each application namespace (none with the wildcard)."""
    rules = SCOPED_NAMESPACE_RULES if scoped(settings) else []
    return [{k: list(v) for k, v in rule.items()} for rule in rules]


def app_namespace_names(settings: KarmadaSettings) -> list[str]:
    """The applications' namespaces, sorted (`default` included: it exists everywhere)."""
    return sorted({a.namespace for a in settings.applications})
