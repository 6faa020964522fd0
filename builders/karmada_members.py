"""Karmada member registration, push mode: what `karmadactl join` creates, reproduced object by
object (the member's namespace, service accounts, token Secrets and RBAC; the Karmada side's
credential Secrets and Cluster), and their names across credential generations. Pure.

Upstream, read at karmada-io/karmada v1.18.2 (commit 0533b555): pkg/karmadactl/join/join.go,
pkg/util/credential.go, pkg/util/serviceaccount.go, pkg/util/names/names.go.
"""

from __future__ import annotations

from typing import Any, Final

from builders.karmada_access import (
    APP_POD_SECURITY,
    RBAC_API,
    app_namespace_names,
    member_namespace_rules,
    member_rules,
    scoped,
)
from builders.manifest import Manifest
from config.karmada import KarmadaSettings
from config.models import ClusterConfig, FleetConfig
from config.resolve import credential_schedule
from constants import WAIT_FOR
from upstream.podsecurity import labels as pod_security_labels
from upstream.podsecurity import policy_version

CLUSTER_API: Final = "cluster.karmada.io/v1alpha1"
CLUSTER_NAMESPACE: Final = "karmada-cluster"  # karmadactl join --cluster-namespace default
SYSTEM_LABELS: Final = {"karmada.io/system": "true"}
IMPERSONATOR: Final = "karmada-impersonator"  # names.GenerateServiceAccountName("impersonator")


def member_generation(fleet: FleetConfig, member: str) -> int:
    """The member token's generation today (`karmada.rotation` plus the schedule's periods)."""
    return credential_schedule(fleet, member, "karmada").generation


def member_service_account(cluster: str) -> str:
    return f"karmada-{cluster}"  # names.GenerateServiceAccountName(cluster)


def member_role(cluster: str) -> str:
    return f"karmada-controller-manager:{member_service_account(cluster)}"


def _meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = dict(SYSTEM_LABELS)
    return meta | extra


def token_secret_name(service_account: str, generation: int = 0) -> str:
    """The member-side token Secret: generation 0 keeps `karmadactl join`'s name (the account's).

    A new generation is a new Secret, hence a new token; the old Secret is deleted at the end of
    that `pulumi up`, which revokes its token (legacy tokens are checked against their Secret).
    """
    return service_account if generation == 0 else f"{service_account}-token-{generation}"


def credential_secret_name(cluster: str, generation: int = 0) -> str:
    """The Karmada-side Secret the Cluster's secretRef names; moves with the token's generation."""
    return cluster if generation == 0 else f"{cluster}-token-{generation}"


def impersonator_secret_name(cluster: str, generation: int = 0) -> str:
    base = f"{cluster}-impersonator"
    return base if generation == 0 else f"{base}-{generation}"


def _token_secret(service_account: str, generation: int = 0) -> dict[str, Any]:
    # The token controller fills data.token and data["ca.crt"] after the create: the provider
    # waits for the token (pulumi.com/waitFor) before anything reads it, as `karmadactl join`
    # waits, so a credential is never built from an unfilled Secret.
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": _meta(
            token_secret_name(service_account, generation),
            CLUSTER_NAMESPACE,
            annotations={
                "kubernetes.io/service-account.name": service_account,
                WAIT_FOR: "jsonpath={.data.token}",
            },
        ),
    }


def member_objects(
    cluster: str,
    settings: KarmadaSettings,
    kubernetes_version: str | None = None,
    generation: int = 0,
) -> list[Manifest]:
    """In the member, in apply order: namespace, service account(s) with token Secrets, RBAC.

    A token Secret needs its account (the token controller fills it only for an existing one).
    `wildcard` is what `karmadactl join` makes (with the impersonator account unified auth
    uses); `scoped` has no impersonator, a ClusterRole of watches and discovery, and in each
    application namespace (made here, Pod Security `baseline`) a Role with the writes.
    """
    account = member_service_account(cluster)
    role = member_role(cluster)
    namespace = f"Namespace/{CLUSTER_NAMESPACE}"
    subject = {"kind": "ServiceAccount", "name": account, "namespace": CLUSTER_NAMESPACE}

    def with_token(service_account: str) -> list[Manifest]:
        account_key = f"ServiceAccount/{CLUSTER_NAMESPACE}/{service_account}"
        return [
            Manifest(
                cluster,
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": _meta(service_account, CLUSTER_NAMESPACE),
                },
                (namespace,),
            ),
            Manifest(cluster, _token_secret(service_account, generation), (namespace, account_key)),
        ]

    out = [
        Manifest(
            cluster, {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(CLUSTER_NAMESPACE)}
        ),
        *([] if scoped(settings) else with_token(IMPERSONATOR)),
        *with_token(account),
        Manifest(
            cluster,
            {
                "apiVersion": f"{RBAC_API}/v1",
                "kind": "ClusterRole",
                "metadata": _meta(role),
                "rules": member_rules(settings),
            },
        ),
        Manifest(
            cluster,
            {
                "apiVersion": f"{RBAC_API}/v1",
                "kind": "ClusterRoleBinding",
                "metadata": _meta(role),
                "roleRef": {"apiGroup": RBAC_API, "kind": "ClusterRole", "name": role},
                "subjects": [subject],
            },
            (f"ClusterRole/{role}",),
        ),
    ]
    if not scoped(settings):
        return out
    version = policy_version(kubernetes_version)
    for ns in app_namespace_names(settings):
        needs: tuple[str, ...] = ()
        if ns != "default":
            labels = pod_security_labels(APP_POD_SECURITY, version)
            out.append(
                Manifest(
                    cluster,
                    {
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"name": ns, "labels": labels},
                    },
                )
            )
            needs = (f"Namespace/{ns}",)
        out.append(
            Manifest(
                cluster,
                {
                    "apiVersion": f"{RBAC_API}/v1",
                    "kind": "Role",
                    "metadata": _meta(role, ns),
                    "rules": member_namespace_rules(settings),
                },
                needs,
            )
        )
        out.append(
            Manifest(
                cluster,
                {
                    "apiVersion": f"{RBAC_API}/v1",
                    "kind": "RoleBinding",
                    "metadata": _meta(role, ns),
                    "roleRef": {"apiGroup": RBAC_API, "kind": "Role", "name": role},
                    "subjects": [subject],
                },
                (*needs, f"Role/{ns}/{role}"),
            )
        )
    return out


def credential_secret(
    cluster: str, *, token: str, ca_bundle: str, generation: int = 0
) -> dict[str, Any]:
    """Push-mode credentials; `token` and `ca_bundle` already base64 (as in the member Secret)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(credential_secret_name(cluster, generation), CLUSTER_NAMESPACE),
        "data": {"caBundle": ca_bundle, "token": token},
    }


def impersonator_secret(cluster: str, *, token: str, generation: int = 0) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(impersonator_secret_name(cluster, generation), CLUSTER_NAMESPACE),
        "data": {"token": token},
    }


def karmada_cluster(
    cluster: str,
    *,
    api_endpoint: str,
    region: str | None = None,
    impersonator: bool = True,
    generation: int = 0,
) -> dict[str, Any]:
    """The cluster-scoped Cluster object `join` creates (spec.id omitted: optional).

    Without `impersonator` (memberAccess: scoped) unified auth skips the member. The secretRef
    names the generation's Secret: Karmada v1.18.2 reads the Secret by that name each time it
    builds a member client (pkg/util/membercluster_client.go BuildClusterConfig: the cluster
    status controller per sync, the object watcher per create/update/delete), so the next
    request after the Cluster's update uses the new token.
    """
    spec: dict[str, Any] = {
        "syncMode": "Push",
        "apiEndpoint": api_endpoint,
        "secretRef": {
            "namespace": CLUSTER_NAMESPACE,
            "name": credential_secret_name(cluster, generation),
        },
    }
    if impersonator:
        spec["impersonatorSecretRef"] = {
            "namespace": CLUSTER_NAMESPACE,
            "name": impersonator_secret_name(cluster, generation),
        }
    if region:
        spec["region"] = region
    return {
        "apiVersion": CLUSTER_API,
        "kind": "Cluster",
        "metadata": {"name": cluster},
        "spec": spec,
    }


def member_api_endpoint(fqdn: str) -> str:
    """AKS API servers listen on 443; Karmada needs a full URL (a bare host:port has no host)."""
    return f"https://{fqdn}:443"


def placeholder_endpoint(cluster: ClusterConfig) -> str:
    # `.invalid` (RFC 2606): obviously not an address, yet a URL with a host, as Karmada requires.
    return member_api_endpoint(f"{cluster.dns_prefix or cluster.name}.aks-fqdn.invalid".lower())
