"""Karmada: chart values, push-mode member registration, applications. Pure.

Upstream, read at karmada-io/karmada v1.18.2 (commit 0533b555):
- charts/karmada/values.yaml and templates: host mode; the API server Service
  `<release>-apiserver` listens on 5443 and takes only `apiServer.serviceType` and
  `apiServer.serviceAnnotations` (no loadBalancerIP value), so the Azure static IP is bound by
  annotation; `certs.auto.hosts` replaces the SAN list (we keep the chart's entries) and is
  used once, by the pre-install hook; that hook writes Secret `<release>-kubeconfig`
  (key `kubeconfig`, server `https://<release>-apiserver.<ns>.svc.cluster.local:5443`).
- pkg/karmadactl/join/join.go, pkg/util/credential.go, pkg/util/serviceaccount.go,
  pkg/util/names/names.go: what `karmadactl join` creates, reproduced object by object below.
Every component and hook job gets a CriticalAddonsOnly toleration: AKS system pools here carry
that taint, and a manager may have no other pool to run the control plane on.
"""

from __future__ import annotations

import base64
from typing import Any, Final, cast

import yaml

from builders.applications import (
    application_namespaces,
    cluster_taint_policy,
    headless_service,
    propagation_policy,
    united_deployment,
)
from builders.interpreter import united_deployment_interpreter
from builders.kruise import critical_addons_toleration, kruise_release
from builders.manifest import KARMADA_TARGET, HelmRelease, Manifest
from config.karmada import KarmadaSettings
from config.models import ClusterConfig, FleetConfig
from config.resolve import credential_schedule, host_name, member_names
from constants import WAIT_FOR
from upstream.aks import (
    ALLOWED_RANGES_ANNOTATION,
    INTERNAL_ANNOTATION,
    IPV4_ANNOTATION,
    PIP_GROUP_ANNOTATION,
    PIP_NAME_ANNOTATION,
)
from upstream.podsecurity import labels as pod_security_labels
from upstream.podsecurity import policy_version

CHART: Final = "oci://docker.io/karmada/karmada"  # `make push-chart` at each release tag
RELEASE: Final = "karmada"
NAMESPACE: Final = "karmada-system"
API_PORT: Final = 5443
KUBECONFIG_SECRET: Final = f"{RELEASE}-kubeconfig"
KUBECONFIG_KEY: Final = "kubeconfig"

CLUSTER_API: Final = "cluster.karmada.io/v1alpha1"
CLUSTER_NAMESPACE: Final = "karmada-cluster"  # karmadactl join --cluster-namespace default
SYSTEM_LABELS: Final = {"karmada.io/system": "true"}
IMPERSONATOR: Final = "karmada-impersonator"  # names.GenerateServiceAccountName("impersonator")
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


# charts/karmada/values.yaml certs.auto.hosts (rendered with tpl by the chart).
CHART_CERT_HOSTS: Final = (
    "kubernetes.default.svc",
    "*.etcd.{{ .Release.Namespace }}.svc.{{ .Values.clusterDomain }}",
    "*.{{ .Release.Namespace }}.svc.{{ .Values.clusterDomain }}",
    "*.{{ .Release.Namespace }}.svc",
    "localhost",
    "127.0.0.1",
)
HOOK_JOBS: Final = (
    "preInstallJob",
    "preUpdateJob",
    "staticResourceJob",
    "postInstallJob",
    "postDeleteJob",
)
COMPONENTS: Final = (
    "apiServer",
    "aggregatedApiServer",
    "kubeControllerManager",
    "controllerManager",
    "scheduler",
    "webhook",
)

# Offline rendering: values known only at deploy time.
ADDRESS_PLACEHOLDER: Final = "<karmada-api-address>"
NODE_GROUP_PLACEHOLDER: Final = "<aks-node-resource-group>"
REDACTED: Final = base64.b64encode(b"<redacted>").decode()


# --- host, address, chart -------------------------------------------------------------------


def settings_of(fleet: FleetConfig) -> KarmadaSettings:
    if fleet.karmada is None:
        raise ValueError("this fleet has no karmada settings")
    return fleet.karmada


def host_cluster(fleet: FleetConfig) -> ClusterConfig:
    name = host_name(fleet)
    cluster = fleet.cluster(name) if name else None
    if cluster is None:
        raise ValueError("no Karmada host cluster (config validation reports why)")
    return cluster


def member_clusters(fleet: FleetConfig) -> list[ClusterConfig]:
    return [c for name in member_names(fleet) if (c := fleet.cluster(name)) is not None]


def location_of(fleet: FleetConfig, cluster: ClusterConfig) -> str:
    return cluster.location or fleet.location or ""


def region_of(fleet: FleetConfig, cluster: ClusterConfig) -> str | None:
    """A member's Karmada `spec.region`: its Azure location (unknown for existing clusters)."""
    if cluster.source != "aks":
        return cluster.location
    return location_of(fleet, cluster) or None


def public_ip_name(host: str) -> str:
    """The Azure public IP of the API server (in the host's node resource group)."""
    return f"{host}-karmada-apiserver"


def api_server_fqdn(fleet: FleetConfig) -> str | None:
    """`<dnsLabel>.<location>.cloudapp.azure.com` when a DNS label is configured."""
    settings = settings_of(fleet)
    label = settings.api_server.dns_label
    if label is None or settings.api_server.exposure != "public":
        return None
    return f"{label}.{location_of(fleet, host_cluster(fleet))}.cloudapp.azure.com"


def api_server_url(address: str) -> str:
    return f"https://{address}:{API_PORT}"


def internal_address(settings: KarmadaSettings) -> str | None:
    ip = settings.api_server.internal_ip
    return str(ip) if settings.api_server.exposure == "internal" and ip is not None else None


def service_annotations(
    settings: KarmadaSettings, *, pip_name: str, address: str, resource_group: str
) -> dict[str, str]:
    """Bind the API server's LoadBalancer Service to the static address, from allowed sources."""
    api = settings.api_server
    if api.exposure == "internal":
        out = {INTERNAL_ANNOTATION: "true", IPV4_ANNOTATION: address}
    else:
        # The IP lives in the AKS node resource group, which the cluster identity already
        # manages: no extra role assignment. The group annotation says so explicitly.
        out = {PIP_NAME_ANNOTATION: pip_name, PIP_GROUP_ANNOTATION: resource_group}
    if api.allowed_source_ranges:
        out[ALLOWED_RANGES_ANNOTATION] = ",".join(str(r) for r in api.allowed_source_ranges)
    return out


def cert_hosts(fleet: FleetConfig, address: str) -> list[str]:
    """The chart's SANs plus the address (and DNS name) the runner and members use."""
    hosts = [*CHART_CERT_HOSTS, address]
    fqdn = api_server_fqdn(fleet)
    if fqdn:
        hosts.append(fqdn)
    return hosts


def karmada_values(fleet: FleetConfig, *, address: str, resource_group: str) -> dict[str, Any]:
    """Values of the karmada chart (host mode) for the host cluster."""
    settings = settings_of(fleet)
    tolerations = [critical_addons_toleration()]
    etcd: dict[str, Any] = {
        "replicaCount": settings.etcd.replicas,
        "storageType": settings.etcd.storage,
        "tolerations": tolerations,
    }
    if settings.etcd.storage == "pvc":
        etcd["pvc"] = {"storageClass": settings.etcd.storage_class, "size": settings.etcd.size}
    values: dict[str, Any] = {
        "installMode": "host",
        "certs": {"mode": "auto", "auto": {"hosts": cert_hosts(fleet, address)}},
        "etcd": {"mode": "internal", "internal": etcd},
    }
    replicas = settings.control_plane.replicas
    for component in COMPONENTS:
        values[component] = {"tolerations": tolerations, "replicaCount": replicas}
        if replicas > 1:
            # The chart renders a PodDisruptionBudget per component only when this is non-empty.
            values[component]["podDisruptionBudget"] = {"maxUnavailable": 1}
    # The chart passes PropagateDeps=false, overriding the binary default: without it the
    # dependencies distributor never runs and GetDependencies is dead code. Failover is off in
    # the binary (Beta) and only on when configured.
    values["controllerManager"]["featureGates"] = {
        "PropagateDeps": True,
        "Failover": settings.failover.enabled,
    }
    if settings.failover.enabled:
        # Off by default: without it the taint manager never evicts from a NoExecute-tainted
        # member (cmd/controller-manager/app/options/cluster_failover.go).
        values["controllerManager"]["extraCommandArgs"] = {
            "enable-no-execute-taint-eviction": "true"
        }
    values["apiServer"] |= {
        "serviceType": "LoadBalancer",
        "serviceAnnotations": service_annotations(
            settings,
            pip_name=public_ip_name(host_cluster(fleet).name),
            address=address,
            resource_group=resource_group,
        ),
    }
    for job in HOOK_JOBS:
        values[job] = {"tolerations": tolerations}
    return values


def karmada_release(fleet: FleetConfig, *, address: str, resource_group: str) -> HelmRelease:
    settings = settings_of(fleet)
    return HelmRelease(
        target=host_cluster(fleet).name,
        release=RELEASE,
        chart=CHART,
        version=settings.chart_version,
        namespace=NAMESPACE,
        values=karmada_values(fleet, address=address, resource_group=resource_group),
    )


def karmada_releases(fleet: FleetConfig) -> list[HelmRelease]:
    """The Karmada release for offline rendering (a public address is known only after deploy)."""
    if fleet.karmada is None or fleet.karmada.source == "existing":
        return []
    address = internal_address(fleet.karmada) or ADDRESS_PLACEHOLDER
    return [karmada_release(fleet, address=address, resource_group=NODE_GROUP_PLACEHOLDER)]


def kruise_releases(fleet: FleetConfig) -> list[HelmRelease]:
    """One pinned Kruise release per Karmada member (none with `kruise.install: manifests-only`)."""
    if fleet.karmada is None or fleet.karmada.kruise.install == "manifests-only":
        return []
    return [
        kruise_release(name, fleet.karmada.kruise, on_aks=on_aks(fleet, name))
        for name in member_names(fleet)
    ]


def on_aks(fleet: FleetConfig, member: str) -> bool:
    """Whether a member is an AKS cluster this stack creates (existing ones may be anything)."""
    cluster = fleet.cluster(member)
    return cluster is not None and cluster.source == "aks"


def rewrite_kubeconfig_server(kubeconfig: str, server: str) -> str:
    """The chart's kubeconfig with every cluster's server set to the reachable address."""
    doc = cast("dict[str, Any]", yaml.safe_load(kubeconfig))
    for entry in cast("list[dict[str, Any]]", doc.get("clusters") or []):
        entry.setdefault("cluster", {})["server"] = server
    return yaml.safe_dump(doc, sort_keys=False)


# --- member registration (what `karmadactl join` does, push mode) ----------------------------


def member_generation(fleet: FleetConfig, member: str) -> int:
    """The member token's generation today (`karmada.rotation` plus the schedule's periods)."""
    return credential_schedule(fleet, member, "karmada").generation


# The chart's controller manager Deployment (`{{ release }}-controller-manager`, charts/karmada/
# templates/karmada-controller-manager.yaml at v1.18.2) and the pod template annotation whose
# change rolls it after a member credential rotation (controller_manager_restart).
CONTROLLER_MANAGER: Final = f"{RELEASE}-controller-manager"
MEMBER_GENERATIONS_ANNOTATION: Final = "aks-batch-fleet.io/member-credential-generations"


def member_generations(fleet: FleetConfig) -> dict[str, int]:
    """Each member's credential generation today, by member name."""
    return {member: member_generation(fleet, member) for member in member_names(fleet)}


def controller_manager_restart(fleet: FleetConfig) -> dict[str, Any] | None:
    """The patch of the chart's controller manager that restarts it once members have rotated.

    Karmada v1.18.2 builds a member's informers once, with the token of that moment, and stops
    them only when the Cluster is deleted (pkg/controllers/status/cluster_status_controller.go);
    after a rotation revokes that token, the member's work status freezes until the controller
    manager restarts. A pod template annotation that names every member's generation changes
    exactly when a token rotates, so the Deployment rolls, and its new pods build their
    informers from the Clusters' new `secretRef`. None while every generation is 0 (nothing
    rotated: a first `up` restarts nothing) and when the stack does not install Karmada.
    """
    settings = settings_of(fleet)
    generations = member_generations(fleet)
    if settings.source == "existing" or not any(generations.values()):
        return None
    stamp = ",".join(f"{m}={g}" for m, g in sorted(generations.items()))
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": CONTROLLER_MANAGER, "namespace": NAMESPACE},
        "spec": {"template": {"metadata": {"annotations": {MEMBER_GENERATIONS_ANNOTATION: stamp}}}},
    }


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


# --- offline rendering ------------------------------------------------------------------------


def render_karmada(fleet: FleetConfig) -> list[Manifest]:
    """Everything for the Karmada API server (credentials redacted) and each member's side.

    Not included: the Kruise CRDs, applied from the pinned files (config.loader.kruise_crd_files:
    `kruise.crdDir`, else the pinned copy of the members' Kruise release), and Helm releases
    (karmada_releases, kruise_releases).
    Nor the `karmada-cluster` Namespace on the Karmada API server: the chart's static-resource
    job (or `karmadactl init`) makes it, and creating it again fails with AlreadyExists.
    """
    if fleet.karmada is None:
        return []
    out: list[Manifest] = []
    settings = fleet.karmada
    for cluster in member_clusters(fleet):
        name = cluster.name
        generation = member_generation(fleet, name)
        out += member_objects(name, settings, fleet.known_version_of(cluster), generation)
        secret = credential_secret(name, token=REDACTED, ca_bundle=REDACTED, generation=generation)
        out.append(Manifest(KARMADA_TARGET, secret))
        if not scoped(settings):
            out.append(
                Manifest(
                    KARMADA_TARGET,
                    impersonator_secret(name, token=REDACTED, generation=generation),
                )
            )
        out.append(
            Manifest(
                KARMADA_TARGET,
                karmada_cluster(
                    name,
                    api_endpoint=placeholder_endpoint(cluster),
                    region=region_of(fleet, cluster),
                    impersonator=not scoped(settings),
                    generation=generation,
                ),
            )
        )
    out.append(Manifest(KARMADA_TARGET, united_deployment_interpreter()))
    if fleet.karmada.failover.enabled:
        out.append(Manifest(KARMADA_TARGET, cluster_taint_policy(member_names(fleet))))
    apps = fleet.karmada.applications
    out += [
        Manifest(KARMADA_TARGET, ns)
        for ns in application_namespaces(apps, propagate=not scoped(settings))
    ]
    for app in apps:
        out.append(Manifest(KARMADA_TARGET, propagation_policy(app, fleet.karmada.failover)))
        service = headless_service(app)
        if service is not None:
            out.append(Manifest(KARMADA_TARGET, service))
        out.append(Manifest(KARMADA_TARGET, united_deployment(app)))
    return out
