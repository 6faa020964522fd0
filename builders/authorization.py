"""What a cluster's API server must allow the deploying identity before the program's first object
there, and what `up` says while it waits and when it gives up. Pure.

A role assignment that exists is not yet a permission the API server knows: Azure RBAC for
Kubernetes takes up to AZURE_RBAC_PROPAGATION_MINUTES to reach it. So before anything is applied
to an Entra ID cluster, `up` asks the API server (SelfSubjectAccessReview, as `kubectl auth
can-i` does) whether the identity may do what the cluster's first objects need, until it may or
the bound passes (components/authorization.py does the asking).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from config.errors import key_path
from config.models import AccessConfig, ClusterConfig, FleetConfig
from config.resolve import access_of
from upstream.aks import AZURE_RBAC_PROPAGATION_MINUTES
from upstream.kueue import KUEUE_NAMESPACE

ACCESS_REVIEW_API = "authorization.k8s.io/v1"
SELF_REVIEW_API = "authentication.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class Probe:
    """One action the identity must be allowed (a SelfSubjectAccessReview's resourceAttributes)."""

    verb: str
    resource: str
    group: str = ""
    namespace: str | None = None

    def __str__(self) -> str:
        what = f"{self.resource}.{self.group}" if self.group else self.resource
        return f"{self.verb} {what}" + (f" in {self.namespace}" if self.namespace else "")

    def review(self) -> dict[str, Any]:
        """The SelfSubjectAccessReview that asks the API server about this action."""
        attributes: dict[str, str] = {"verb": self.verb, "group": self.group}
        attributes["resource"] = self.resource
        if self.namespace:
            attributes["namespace"] = self.namespace
        return {
            "apiVersion": ACCESS_REVIEW_API,
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }


@dataclass(frozen=True, slots=True)
class ServedApi:
    """An API the cluster must serve before the first object: `GET /apis/<group_version>` lists
    `resource` (API discovery, as a client's REST mapper asks)."""

    group_version: str
    resource: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind} ({self.group_version})"

    @property
    def path(self) -> str:
        return f"/apis/{self.group_version}"


# Kueue v0.19.2 sets up its provisioning admission check only if the API server serves
# ProvisioningRequest autoscaling.x-k8s.io/v1 when it starts (cmd/kueue/main.go:
# `provisioning.ServerSupportsProvisioningRequest`, a REST mapping asked once); otherwise it logs
# "Skipping ... Provisioning Requests not supported" and no gate of the cluster ever acts.
PROVISIONING_REQUEST_API = ServedApi(
    "autoscaling.x-k8s.io/v1", "provisioningrequests", "ProvisioningRequest"
)
# AKS installs that API with its managed cluster autoscaler (upstream.aks
# PROVISIONING_REQUEST_SOURCE), on its own schedule after the create: no documented bound. A
# cluster with local accounts only (no authorization wait) still waits this long for it.
SERVED_API_SECONDS = 600


def self_review() -> dict[str, Any]:
    """The SelfSubjectReview that names the identity (`kubectl auth whoami`)."""
    return {"apiVersion": SELF_REVIEW_API, "kind": "SelfSubjectReview"}


_CRDS = ("customresourcedefinitions", "apiextensions.k8s.io")
_WEBHOOKS = "admissionregistration.k8s.io"
_RBAC = "rbac.authorization.k8s.io"


def kueue_release_probes() -> tuple[Probe, ...]:
    """What the Kueue chart's install creates (its templates at the pinned version): the
    namespace, CRDs, cluster RBAC, webhooks; in kueue-system Helm's release Secret, the
    controller's Deployment, Service, ServiceAccount, ConfigMap and namespaced RBAC."""
    cluster_wide = [
        Probe("create", "namespaces"),
        Probe("create", *_CRDS),
        Probe("create", "clusterroles", _RBAC),
        Probe("create", "clusterrolebindings", _RBAC),
        Probe("create", "mutatingwebhookconfigurations", _WEBHOOKS),
        Probe("create", "validatingwebhookconfigurations", _WEBHOOKS),
    ]
    namespaced = [
        Probe("create", resource, group, KUEUE_NAMESPACE)
        for resource, group in (
            ("secrets", ""),
            ("configmaps", ""),
            ("serviceaccounts", ""),
            ("services", ""),
            ("deployments", "apps"),
            ("roles", _RBAC),
            ("rolebindings", _RBAC),
        )
    ]
    return (*cluster_wide, *namespaced)


def kueue_manifests_probes() -> tuple[Probe, ...]:
    """`install: manifests-only`: the CRDs and kueue-system, by server-side apply (a patch that
    creates what is missing)."""
    return tuple(
        Probe(verb, resource, group)
        for resource, group in (_CRDS, ("namespaces", ""))
        for verb in ("create", "patch")
    )


@dataclass(frozen=True, slots=True)
class AuthorizationWait:
    """One cluster's wait: its bound, the config key that sets it, what to ask, what to check."""

    cluster: str
    timeout_seconds: int
    key: str  # the config key path of the bound
    probes: tuple[Probe, ...]
    first: str  # what the probes are for, in words
    # What a person checks when the bound passes. `{cluster_id}` and `{identity}` are filled in
    # at deploy time (the cluster's Azure id; the identity the API server names).
    check: str
    # APIs the cluster must serve, once the identity is authorized, before the first object.
    apis: tuple[ServedApi, ...] = ()


def _aks_check(access: AccessConfig, base: str) -> str:
    """What to check on an AKS cluster; `base` is the key path of its `access`."""
    if access.azure_rbac and access.deploy_identity_role != "none":
        return (
            f"the program granted this identity AKS RBAC Cluster Admin on the cluster "
            f"({base}.deployIdentityRole), and Azure takes up to "
            f"{AZURE_RBAC_PROPAGATION_MINUTES} minutes to bring a new grant to the API server. "
            "See that the grant is there (`az role assignment list --scope {cluster_id} "
            "--assignee <the identity's object id> -o table`) and that `pulumi up` runs as the "
            "identity the provider logs in as ({identity}), then run `pulumi up` again, or raise "
            f"{base}.authorizationTimeoutSeconds"
        )
    if access.azure_rbac:
        return (
            f"{base}.deployIdentityRole is none: the stack grants this identity nothing. Give "
            "{identity} AKS RBAC Cluster Admin on the cluster (`az role assignment create "
            "--role 'Azure Kubernetes Service RBAC Cluster Admin' --scope {cluster_id} "
            "--assignee <its object id>`), then run `pulumi up` again"
        )
    return (
        "Entra ID with Kubernetes RBAC: {identity} is cluster-admin only as a member of a "
        f"group in {base}.adminGroupObjectIds. See that it is one, then run `pulumi up` again"
    )


def _index(fleet: FleetConfig, cluster: ClusterConfig) -> int:
    return next(i for i, c in enumerate(fleet.clusters) if c.name == cluster.name)


def _first(fleet: FleetConfig) -> tuple[str, tuple[Probe, ...]]:
    if fleet.kueue.install == "helm":
        return "Kueue's Helm release", kueue_release_probes()
    return "Kueue's CRDs and kueue-system (manifests-only)", kueue_manifests_probes()


def authorization_wait(fleet: FleetConfig, cluster: ClusterConfig) -> AuthorizationWait | None:
    """The wait before the cluster's first object, or None when there is none.

    AKS clusters with Entra ID wait up to `access.authorizationTimeoutSeconds` (a local account's
    certificate is cluster-admin at once). Existing clusters wait only when
    `existing.authorizationTimeoutSeconds` says so: their credential is the user's, which
    usually works already.
    """
    first, probes = _first(fleet)
    i = _index(fleet, cluster)
    if cluster.source == "existing":
        seconds = cluster.existing.authorization_timeout_seconds if cluster.existing else 0
        key = key_path("clusters", i, "existing", "authorizationTimeoutSeconds")
        check = (
            "give {identity} these rights in the cluster (a ClusterRoleBinding, or the "
            "cluster's own access system); `kubectl auth can-i --list` with the same kubeconfig "
            f"shows what it has. Then run `pulumi up` again, or raise {key}"
        )
    else:
        access = access_of(fleet, cluster)
        seconds = access.authorization_timeout_seconds if access.entra_id else 0
        base = "access" if cluster.access is None else key_path("clusters", i, "access")
        key = f"{base}.authorizationTimeoutSeconds"
        check = _aks_check(access, base)
        if cluster.queues.provisioning_gates:
            # AKS serves the ProvisioningRequest API on its own schedule; Kueue looks once.
            if seconds == 0:
                seconds, probes = SERVED_API_SECONDS, ()
            return AuthorizationWait(
                cluster.name, seconds, key, probes, first, check, (PROVISIONING_REQUEST_API,)
            )
    if seconds == 0:
        return None
    return AuthorizationWait(cluster.name, seconds, key, probes, first, check)


# ---- what `up` says --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Observation:
    """One round of questions to the API server: who it says the identity is, which probes it
    denied (with its reason), or why it could not be asked."""

    identity: str | None = None
    denied: tuple[tuple[Probe, str], ...] = ()
    problem: str | None = None
    # Required APIs the server does not serve yet (asked only once every probe is allowed).
    missing: tuple[ServedApi, ...] = ()

    @property
    def authorized(self) -> bool:
        return self.problem is None and not self.denied

    @property
    def ready(self) -> bool:
        return self.authorized and not self.missing


def _identity(seen: Observation, user: str) -> str:
    return seen.identity or f"the kubeconfig's user {user!r}"


def _denied(seen: Observation) -> str:
    parts = [f"{p}" + (f" ({reason})" if reason else "") for p, reason in seen.denied]
    return "; ".join(parts)


def _missing(seen: Observation) -> str:
    return ", ".join(str(api) for api in seen.missing)


def waiting_message(wait: AuthorizationWait, server: str, user: str, seen: Observation) -> str:
    """Said once, when the first answer is not yet a yes."""
    if seen.authorized and seen.missing:
        return (
            f"cluster {wait.cluster!r}: waiting up to {wait.timeout_seconds}s ({wait.key}) for "
            f"the API server {server} to serve {_missing(seen)} before {wait.first}: AKS's "
            "cluster autoscaler installs it, and Kueue looks for it only when it starts"
        )
    why = f"it may not {_denied(seen)}" if seen.denied else seen.problem
    return (
        f"cluster {wait.cluster!r}: waiting up to {wait.timeout_seconds}s ({wait.key}) for the "
        f"API server {server} to authorize {_identity(seen, user)} before {wait.first}: {why}"
    )


def timeout_message(
    wait: AuthorizationWait, server: str, user: str, seen: Observation, facts: dict[str, str]
) -> str:
    """Why `up` stops, what it saw last, and what to check."""
    identity = _identity(seen, user)
    if seen.authorized and seen.missing:
        return (
            f"cluster {wait.cluster!r}: the API server {server} did not serve {_missing(seen)} "
            f"within {wait.timeout_seconds}s ({wait.key}). Nothing was applied to this cluster: "
            f"Kueue started without it would never run the cluster's provisioning gates (Kueue "
            "checks once, at start). Check: `kubectl get crd "
            "provisioningrequests.autoscaling.x-k8s.io` and that the cluster's pools autoscale "
            "(AKS's managed cluster autoscaler serves the API from Kubernetes 1.33), then run "
            f"`pulumi up` again, or raise {wait.key}."
        )
    if seen.denied:
        last = f"it may still not {_denied(seen)}"
    else:
        last = f"the last answer: {seen.problem}"
    check = wait.check.format(identity=identity, **facts)
    return (
        f"cluster {wait.cluster!r}: the API server {server} did not authorize {identity} within "
        f"{wait.timeout_seconds}s ({wait.key}); {last}. Nothing was applied to this cluster: "
        f"its first objects ({wait.first}) wait for this. Check: {check}."
    )
