"""MultiKueue objects: worker access (RBAC, token), worker kubeconfig, the manager link. Pure.

Worker side, one set per worker, on the worker's API server: a ServiceAccount in Kueue's namespace;
the rules of the pinned Kueue version's `create-multikueue-kubeconfig.sh` narrowed to the enabled
frameworks, cut in two: the reads (get/list/watch) in a ClusterRole bound cluster-wide, the writes
in a ClusterRole bound by a RoleBinding in each namespace the manager dispatches to that worker
(`write_role_bindings`, after the Namespace); a Role letting the account read itself (the
credential proof, PROOF_ROLE); and a `kubernetes.io/service-account-token`
Secret whose name carries a rotation generation (a new generation is a new Secret, so a new token).

Manager side: per worker a Secret (data key `kubeconfig`, its name also carrying the generation)
and a MultiKueueCluster pointing at it; per dispatch set (`config.resolve.dispatch_sets`) one
MultiKueueConfig listing its workers and one AdmissionCheck (`kueue.x-k8s.io/multikueue`) that its
ClusterQueues carry. Shapes:
kueue.x-k8s.io/v1beta2 at v0.17.8 and v0.19.2 (checked against the pinned CRDs by the tests); the
worker RBAC tables live in `upstream.kueue`.

Values known only at deploy time (token, CA, API server, the encoded kubeconfig) are arguments, so
the components pass Outputs and the offline renderer passes redacted placeholders.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

import yaml

from builders.manifest import Manifest
from config.models import ClusterConfig, FleetConfig
from config.resolve import (
    clusters_by_name,
    dispatch_order,
    dispatch_sets,
    dispatched_namespaces,
    enabled_workers,
    rotation_of,
)
from constants import (
    ACTIVE_STATUS,
    MULTIKUEUE_ADMISSION_CHECK,
    MULTIKUEUE_CONFIG,
    TIMEOUT_SECONDS,
    WAIT_FOR,
)
from upstream.k8s import dns_subdomain_problem
from upstream.kueue import (
    CLUSTER_ROLE,
    CLUSTER_ROLE_BINDING,
    DEFAULT_CONNECT_TIMEOUT,
    KUBECONFIG_KEY,
    KUEUE_API,
    KUEUE_NAMESPACE,
    MAX_WORKERS,
    MULTIKUEUE_CONTROLLER,
    SERVICE_ACCOUNT,
    WRITE_ROLE,
)
from upstream.kueue_rbac import Rule, worker_read_rules, worker_write_rules

REDACTED: Final = "REDACTED"
LABELS: Final = {
    "app.kubernetes.io/part-of": "aks-batch-fleet",
    "app.kubernetes.io/component": "multikueue",
}


# --------------------------------------------------------------------------------------------
# Worker objects


def _meta(name: str, namespace: str | None = None, **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(LABELS)}
    if namespace is not None:
        meta["namespace"] = namespace
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def service_account(namespace: str = KUEUE_NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _meta(SERVICE_ACCOUNT, namespace),
    }


def _cluster_role(name: str, rules: Iterable[Rule]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta(name),
        "rules": [rule.to_obj() for rule in rules],
    }


def cluster_role(
    version: str, frameworks: Iterable[str], feature_gates: Mapping[str, bool] | None = None
) -> dict[str, Any]:
    """The read half of the worker rules (get/list/watch), bound cluster-wide."""
    return _cluster_role(CLUSTER_ROLE, worker_read_rules(version, frameworks, feature_gates))


def write_role(
    version: str, frameworks: Iterable[str], feature_gates: Mapping[str, bool] | None = None
) -> dict[str, Any]:
    """The write half (create/delete/update/patch): bound only in dispatched namespaces."""
    return _cluster_role(WRITE_ROLE, worker_write_rules(version, frameworks, feature_gates))


def write_role_binding(team_namespace: str, namespace: str = KUEUE_NAMESPACE) -> dict[str, Any]:
    """The write half for the worker's account in one namespace the manager dispatches to."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(WRITE_ROLE, team_namespace),
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": WRITE_ROLE,
        },
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}],
    }


def write_role_bindings(fleet: FleetConfig, worker: str) -> list[Manifest]:
    """The worker's write RoleBindings, one per dispatched namespace, each after its Namespace
    (created with the mirrored queues, `config.resolve.mirrored_queues`)."""
    return [
        Manifest(worker, write_role_binding(ns), needs=(f"Namespace/{ns}",))
        for ns in dispatched_namespaces(fleet).get(worker, [])
    ]


def cluster_role_binding(namespace: str = KUEUE_NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(CLUSTER_ROLE_BINDING),
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": CLUSTER_ROLE,
        },
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}],
    }


# The credential proof (see multikueue_cluster): the worker's account may read itself and
# nothing more, so `pulumi up` can prove a new token against the worker before the manager uses
# it. Reading its own ServiceAccount shows nothing the token does not already carry.
PROOF_ROLE: Final = f"{SERVICE_ACCOUNT}-whoami"


def proof_role(namespace: str = KUEUE_NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(PROOF_ROLE, namespace),
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["serviceaccounts"],
                "resourceNames": [SERVICE_ACCOUNT],
                "verbs": ["get"],
            }
        ],
    }


def proof_role_binding(namespace: str = KUEUE_NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(PROOF_ROLE, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": PROOF_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}],
    }


def token_secret_name(rotation: int) -> str:
    """A new rotation generation is a new Secret, hence a new token (the old one is deleted)."""
    return f"{SERVICE_ACCOUNT}-token-{rotation}"


def token_secret(rotation: int, namespace: str = KUEUE_NAMESPACE) -> dict[str, Any]:
    """The token controller fills `data.token` and `data['ca.crt']`; Pulumi waits for the token."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": _meta(
            token_secret_name(rotation),
            namespace,
            **{
                "kubernetes.io/service-account.name": SERVICE_ACCOUNT,
                WAIT_FOR: "jsonpath={.data.token}",
            },
        ),
    }


def worker_objects(
    version: str,
    frameworks: Iterable[str],
    rotation: int,
    namespace: str = KUEUE_NAMESPACE,
    feature_gates: Mapping[str, bool] | None = None,
) -> list[dict[str, Any]]:
    """Everything one worker needs, in creation order (the Secret needs the account first)."""
    return [
        service_account(namespace),
        cluster_role(version, frameworks, feature_gates),
        cluster_role_binding(namespace),
        write_role(version, frameworks, feature_gates),
        proof_role(namespace),
        proof_role_binding(namespace),
        token_secret(rotation, namespace),
    ]


# --------------------------------------------------------------------------------------------
# Worker kubeconfig


def _check_server(server: str) -> None:
    parts = urlsplit(server)
    host = (parts.hostname or "").lower()
    if parts.scheme != "https" or not host:
        raise ValueError(f"server {server!r} must be an https:// URL with a host")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        # Kueue rejects a host that is neither an IP nor a DNS-1123 subdomain (isValidHostname).
        if dns_subdomain_problem(host) is not None:
            raise ValueError(f"server host {host!r} is not a DNS-1123 name or an IP") from None


def worker_kubeconfig(name: str, server: str, ca_data_b64: str, token: str) -> str:
    """A kubeconfig Kueue accepts for a worker: inline CA and bearer token, nothing else.

    Kueue's MultiKueueCluster controller rejects tokenFile, insecure-skip-tls-verify, CA file
    paths, an empty server, basic auth, exec plugins and auth providers (validateKubeconfig,
    multikueuecluster.go at v0.19.2), so none of them can appear here.
    """
    _check_server(server)
    if not token or any(ch.isspace() for ch in token):
        raise ValueError("token must be a non-empty string without whitespace")
    try:
        base64.b64decode(ca_data_b64, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("ca_data_b64 must be base64 (certificate-authority-data)") from None
    if not ca_data_b64:
        raise ValueError("ca_data_b64 must not be empty")
    user = f"{name}-{SERVICE_ACCOUNT}"
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": server, "certificate-authority-data": ca_data_b64}}
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
        "current-context": name,
        "preferences": {},
    }
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def encode(text: str) -> str:
    """Secret `data` values are base64 (we write `data`, not `stringData`: SSA handles it well)."""
    return base64.b64encode(text.encode()).decode()


def api_server_url(fqdn: str) -> str:
    return f"https://{fqdn}:443"


def redacted_kubeconfig(name: str, server: str) -> str:
    """What offline rendering shows in place of a worker kubeconfig: the shape, no credential."""
    return worker_kubeconfig(name, server, encode(REDACTED), REDACTED)


# --------------------------------------------------------------------------------------------
# Manager objects


def k8s_name(cluster: str) -> str:
    """A fleet cluster name as a Kubernetes object name (AKS allows '_' and capitals)."""
    return cluster.lower().replace("_", "-")


def kubeconfig_secret_name(worker: str, rotation: int) -> str:
    """Named by generation, so a rotation changes the MultiKueueCluster's spec (see below)."""
    return f"multikueue-{k8s_name(worker)}-kubeconfig-{rotation}"


def kubeconfig_secret(
    worker: str, kubeconfig_b64: Any, rotation: int, namespace: str = KUEUE_NAMESPACE
) -> dict[str, Any]:
    """The manager's copy of a worker kubeconfig; `kubeconfig_b64` may be an Output."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _meta(kubeconfig_secret_name(worker, rotation), namespace),
        "data": {KUBECONFIG_KEY: kubeconfig_b64},
    }


def multikueue_cluster(
    worker: str, rotation: int, connect_timeout: int = DEFAULT_CONNECT_TIMEOUT
) -> dict[str, Any]:
    """Kueue connects to the worker with the Secret's kubeconfig; Pulumi waits for `Active`.

    A rotation points the spec at the new generation's Secret, and Kueue reconnects with it
    (a changed kubeconfig stops the old watches and opens new ones: updateConfigAndRefreshWatchers,
    multikueuecluster.go at v0.19.2). Kueue v0.19.2 does not rewrite an unchanged condition, so
    after a good -> good rotation `Active` keeps the old observedGeneration: a
    `condition=Active` wait, which requires it current, would never hold (kueue#15962). The
    wait is therefore on the condition's value (ACTIVE_STATUS), and the new credential is
    proven before the spec changes: the components read the worker's own ServiceAccount with
    the new kubeconfig (PROOF_ROLE) and store the Secret only after that read succeeded, so a
    refused token fails `up` there and Kueue keeps the old, working Secret. After
    `connect_timeout` seconds without Active, `pulumi up` fails naming the worker.
    """
    return {
        "apiVersion": KUEUE_API,
        "kind": "MultiKueueCluster",
        "metadata": _meta(
            k8s_name(worker),
            **{WAIT_FOR: ACTIVE_STATUS, TIMEOUT_SECONDS: str(connect_timeout)},
        ),
        "spec": {
            "clusterSource": {
                "kubeConfig": {
                    "location": kubeconfig_secret_name(worker, rotation),
                    "locationType": "Secret",
                }
            }
        },
    }


def multikueue_config(workers: Sequence[str], name: str = MULTIKUEUE_CONFIG) -> dict[str, Any]:
    """The workers in config order (the Incremental dispatcher nominates in this order)."""
    if not 1 <= len(workers) <= MAX_WORKERS:
        raise ValueError(
            f"a MultiKueueConfig lists 1..{MAX_WORKERS} clusters (Kueue's CRD: spec.clusters "
            f"maxItems {MAX_WORKERS}), got {len(workers)}"
        )
    return {
        "apiVersion": KUEUE_API,
        "kind": "MultiKueueConfig",
        "metadata": _meta(name),
        "spec": {"clusters": [k8s_name(w) for w in workers]},
    }


def admission_check(
    name: str = MULTIKUEUE_ADMISSION_CHECK, config_name: str = MULTIKUEUE_CONFIG
) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "AdmissionCheck",
        "metadata": _meta(name, **{WAIT_FOR: "condition=Active"}),
        "spec": {
            "controllerName": MULTIKUEUE_CONTROLLER,
            "parameters": {
                "apiGroup": "kueue.x-k8s.io",
                "kind": "MultiKueueConfig",
                "name": config_name,
            },
        },
    }


def manager_objects(
    workers: Sequence[tuple[str, Any, int]],
    namespace: str = KUEUE_NAMESPACE,
    connect_timeout: int = DEFAULT_CONNECT_TIMEOUT,
    *,
    configs: Sequence[tuple[str, Sequence[str]]],
) -> list[dict[str, Any]]:
    """(worker, encoded kubeconfig, rotation) per worker -> the manager's objects, in order.

    `configs` is (name, workers) per MultiKueueConfig (config.resolve.dispatch_sets): required, so
    no caller can forget a stack's own dispatch sets.
    The AdmissionChecks are not among them: each is created with the manager's queues, which
    name it (builders.fleet), so that destroy deletes those queues first.
    """
    out: list[dict[str, Any]] = []
    for worker, encoded, rotation in workers:
        out.append(kubeconfig_secret(worker, encoded, rotation, namespace))
        out.append(multikueue_cluster(worker, rotation, connect_timeout))
    out += [multikueue_config(members, name) for name, members in configs]
    return out


# --------------------------------------------------------------------------------------------
# Offline rendering


def placeholder_server(cluster: ClusterConfig, location: str | None) -> str:
    """The worker API server as far as config knows it (AKS adds a hash to the DNS prefix)."""
    if cluster.source == "aks":
        prefix = (cluster.dns_prefix or cluster.name).lower()
        region = cluster.location or location or "region"
        return api_server_url(f"{prefix}-{REDACTED.lower()}.hcp.{region}.azmk8s.io")
    return api_server_url(f"{k8s_name(cluster.name)}.{REDACTED.lower()}.invalid")


def render_multikueue(fleet: FleetConfig) -> list[Manifest]:
    """Worker-side and manager-side objects; kubeconfig Secrets hold a redacted placeholder."""
    manager = fleet.manager
    if manager is None or fleet.multi_kueue is None:
        return []
    out: list[Manifest] = []
    links: list[tuple[str, Any, int]] = []
    by_name = clusters_by_name(fleet)
    for name in enabled_workers(fleet):
        if name not in by_name:
            continue
        cluster = by_name[name][1]
        rotation = rotation_of(fleet, name)
        version, frameworks = fleet.kueue.version, fleet.kueue.frameworks
        gates = fleet.kueue.feature_gates
        objects = worker_objects(version, frameworks, rotation, feature_gates=gates)
        out += [Manifest(name, o) for o in objects]
        out += write_role_bindings(fleet, name)
        doc = redacted_kubeconfig(k8s_name(name), placeholder_server(cluster, fleet.location))
        links.append((name, encode(doc), rotation))
    timeout = fleet.multi_kueue.connect_timeout_seconds
    configs = [(s.name, dispatch_order(fleet, s)) for s in dispatch_sets(fleet)]
    objects = manager_objects(links, connect_timeout=timeout, configs=configs)
    out += [Manifest(manager.name, o) for o in objects]
    return out
