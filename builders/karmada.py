"""Karmada: the host, its API server's address, the chart's values, and every object on the
Karmada API server and each member with what it needs (render_karmada: the list the component
applies and preflight renders). Pure. What a member credential may do is
builders.karmada_access; the objects of a member's registration are builders.karmada_members.

Upstream, read at karmada-io/karmada v1.18.2 (commit 0533b555):
- charts/karmada/values.yaml and templates: host mode; the API server Service
  `<release>-apiserver` listens on 5443 and takes only `apiServer.serviceType` and
  `apiServer.serviceAnnotations` (no loadBalancerIP value), so the Azure static IP is bound by
  annotation; `certs.auto.hosts` replaces the SAN list (we keep the chart's entries) and is
  used once, by the pre-install hook; that hook writes Secret `<release>-kubeconfig`
  (key `kubeconfig`, server `https://<release>-apiserver.<ns>.svc.cluster.local:5443`).
Every component and hook job gets a CriticalAddonsOnly toleration: AKS system pools here carry
that taint, and a manager may have no other pool to run the control plane on.
"""

from __future__ import annotations

import base64
from typing import Any, Final, cast

import yaml

from builders.applications import (
    SUBSET_PLACEMENT_PATHS,
    application_namespaces,
    cluster_taint_policy,
    headless_service,
    propagation_policy,
    united_deployment,
)
from builders.interpreter import united_deployment_interpreter
from builders.karmada_access import scoped
from builders.karmada_members import (
    CLUSTER_NAMESPACE,
    IMPERSONATOR,
    credential_secret,
    impersonator_secret,
    karmada_cluster,
    member_generation,
    member_objects,
    member_service_account,
    placeholder_endpoint,
    token_secret_name,
)
from builders.kruise import critical_addons_toleration, kruise_release
from builders.manifest import KARMADA_TARGET, HelmRelease, Manifest, elsewhere
from config.karmada import ApplicationConfig, KarmadaSettings
from config.models import ClusterConfig, FleetConfig
from config.resolve import host_name, member_names
from upstream.aks import (
    ALLOWED_RANGES_ANNOTATION,
    INTERNAL_ANNOTATION,
    IPV4_ANNOTATION,
    PIP_GROUP_ANNOTATION,
    PIP_NAME_ANNOTATION,
)

CHART: Final = "oci://docker.io/karmada/karmada"  # `make push-chart` at each release tag
RELEASE: Final = "karmada"
NAMESPACE: Final = "karmada-system"
API_PORT: Final = 5443
KUBECONFIG_SECRET: Final = f"{RELEASE}-kubeconfig"
KUBECONFIG_KEY: Final = "kubeconfig"


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


# --- restarting the controller manager after a member credential rotation --------------------


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


# --- every object, with what it needs ---------------------------------------------------------


# What Karmada's objects need that is no object of render_karmada's list (Manifest.needs,
# builders.manifest.elsewhere); components/karmada.py maps each to the resources that make it.
# The control plane: the chart release, whose static-resource job makes the `karmada-cluster`
# Namespace the credential Secrets go into (none for an existing Karmada).
CONTROL_PLANE: Final = elsewhere(KARMADA_TARGET, "release")
# The Kruise CRDs on the Karmada API server (the pinned files, a ConfigGroup).
KRUISE_CRDS: Final = elsewhere(KARMADA_TARGET, "kruise-crds")


def kruise_on(member: str) -> str:
    """Kruise's release on a member (none with `kruise.install: manifests-only`)."""
    return elsewhere(member, "kruise")


def virtual_node_grant(member: str) -> str:
    """The member's ACI connector grant on its VNet (an AKS member with virtual nodes)."""
    return elsewhere(member, "virtual-node-grant")


def render_karmada(fleet: FleetConfig) -> list[Manifest]:
    """Everything for the Karmada API server and each member, in apply order, each naming what it
    needs: components/karmada.py applies this list (with the credentials and API endpoints known
    at deploy time in place of the redacted ones) and preflight renders it.

    Per member: its registration objects (builders.karmada_members), then on Karmada the
    credential Secrets (after the control plane and the member's token Secret: a credential is
    built from a filled token only) and the Cluster, Ready only after every member object and
    the member's Kruise (its API list must include UnitedDeployment). Then the interpreter,
    the failover taint policy, the applications' namespaces, and per application its
    PropagationPolicy, headless Service and UnitedDeployment (last: after the Kruise CRDs, the
    interpreter, every Ready member, and with a virtual-node subset the members' ACI grants).

    Not included: the Kruise CRDs, applied from the pinned files (config.loader.kruise_crd_files:
    `kruise.crdDir`, else the pinned copy of the members' Kruise release), and Helm releases
    (karmada_releases, kruise_releases).
    Nor the `karmada-cluster` Namespace on the Karmada API server: the chart's static-resource
    job (or `karmadactl init`) makes it, and creating it again fails with AlreadyExists.
    """
    if fleet.karmada is None:
        return []
    settings = fleet.karmada
    out: list[Manifest] = []
    clusters: list[str] = []
    for cluster in member_clusters(fleet):
        registration = _member_registration(fleet, cluster)
        out += registration
        clusters.append(registration[-1].key)
    interpreter = Manifest(KARMADA_TARGET, united_deployment_interpreter())
    out.append(interpreter)
    if settings.failover.enabled:
        out.append(Manifest(KARMADA_TARGET, cluster_taint_policy(member_names(fleet))))
    out += [
        Manifest(KARMADA_TARGET, ns)
        for ns in application_namespaces(settings.applications, propagate=not scoped(settings))
    ]
    for app in settings.applications:
        out += _application(fleet, app, after=(KRUISE_CRDS, interpreter.key, *clusters))
    return out


def _token_need(member: str, service_account: str, generation: int) -> str:
    """The member token Secret a credential on Karmada is built from."""
    return elsewhere(
        member, f"Secret/{CLUSTER_NAMESPACE}/{token_secret_name(service_account, generation)}"
    )


def _member_registration(fleet: FleetConfig, cluster: ClusterConfig) -> list[Manifest]:
    """One member's objects (on the member), its credential Secrets and Cluster (on Karmada, the
    Cluster last)."""
    settings = settings_of(fleet)
    name = cluster.name
    generation = member_generation(fleet, name)
    on_member = member_objects(name, settings, fleet.known_version_of(cluster), generation)
    secret = credential_secret(name, token=REDACTED, ca_bundle=REDACTED, generation=generation)
    account = member_service_account(name)
    credentials = [
        Manifest(KARMADA_TARGET, secret, (CONTROL_PLANE, _token_need(name, account, generation)))
    ]
    if not scoped(settings):
        impersonator = impersonator_secret(name, token=REDACTED, generation=generation)
        token = _token_need(name, IMPERSONATOR, generation)
        credentials.append(Manifest(KARMADA_TARGET, impersonator, (CONTROL_PLANE, token)))
    registration = karmada_cluster(
        name,
        api_endpoint=placeholder_endpoint(cluster),
        region=region_of(fleet, cluster),
        impersonator=not scoped(settings),
        generation=generation,
    )
    needs = (
        *(c.key for c in credentials),
        *(elsewhere(name, m.key) for m in on_member),
        kruise_on(name),
    )
    return [*on_member, *credentials, Manifest(KARMADA_TARGET, registration, needs)]


def _application(
    fleet: FleetConfig, app: ApplicationConfig, *, after: tuple[str, ...]
) -> list[Manifest]:
    """An application's PropagationPolicy, headless Service (a StatefulSet template's) and
    UnitedDeployment; the UnitedDeployment also waits for `after` (the Kruise CRDs, the
    interpreter, every member's Cluster) and, with a virtual-node subset, the members' ACI
    grants."""
    settings = settings_of(fleet)
    namespace = f"Namespace/{app.namespace}"  # none made for `default`: nothing to wait for
    policy = Manifest(KARMADA_TARGET, propagation_policy(app, settings.failover), (namespace,))
    service_obj = headless_service(app)
    service = (
        [Manifest(KARMADA_TARGET, service_obj, (policy.key, namespace))]
        if service_obj is not None
        else []
    )
    grants = (
        [virtual_node_grant(c) for c in member_names(fleet)]
        if any(s.virtual_nodes for s in app.subsets)
        else []
    )
    needs = (*after, policy.key, namespace, *grants, *(s.key for s in service))
    # A changed subset placement replaces the UnitedDeployment: Kruise refuses it as an update
    # in every member (SUBSET_PLACEMENT_PATHS).
    workload = Manifest(KARMADA_TARGET, united_deployment(app), needs, SUBSET_PLACEMENT_PATHS)
    return [policy, *service, workload]
