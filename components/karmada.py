"""Karmada: control plane on the host, members registered in push mode, applications propagated.

With `karmada.source: existing` steps 1-3 are one: a provider from the given kubeconfig.
Order, each step waiting for the one before:
1. the API server address: a static public IP in the host's AKS node resource group (or the
   configured internal address), so it is in the certificate SANs at the first install;
2. the karmada chart on the host, its Service bound to that address;
3. the chart's kubeconfig Secret, read back, server rewritten to the address: the Karmada provider;
4. Kruise on every member (unless `kruise.install: manifests-only`), the member-side service
   accounts and token Secrets, then on Karmada the credential Secrets and the Cluster objects
   (Ready, so their API list includes UnitedDeployment); once a member token has rotated, a
   patch that rolls the chart's controller manager after the Clusters;
5. the Kruise CRDs (the pinned release's, by URL or from `kruise.crdDir`), the UnitedDeployment
   interpreter, and the applications: PropagationPolicy first, UnitedDeployment last.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import network

from builders import applications as apps
from builders import karmada as kb
from builders import karmada_access as ka
from builders import karmada_members as km
from builders.interpreter import united_deployment_interpreter
from builders.kruise import kruise_release
from builders.kubeconfig import host_of, server_of
from components.aks import AksCluster
from components.existing import ExistingCluster
from components.kruise import Kruise, KruiseArgs
from components.kube import apply_manifests, kube_object, owned
from components.tokensecret import token_field
from config.karmada import KarmadaSettings, KubeconfigSource
from config.models import FleetConfig
from config.resolve import member_names
from constants import KUBERNETES_PROVIDER_VERSION, TYPE_PREFIX, WAIT_FOR


@dataclass(frozen=True, kw_only=True)
class KarmadaArgs:
    """The validated fleet (with `karmada` set) and its clusters, by config name."""

    fleet: FleetConfig
    clusters: Mapping[str, AksCluster | ExistingCluster]
    tags: dict[str, str] = field(default_factory=dict[str, str])
    # `karmada.source: existing`: the Karmada API server's kubeconfig (file or secret config key).
    existing_kubeconfig: pulumi.Input[str] | None = None
    # The Kruise CRD files for the Karmada API server, found by the composition root; empty:
    # fetched by URL from the pinned Kruise release.
    kruise_crd_files: Sequence[str] = ()


def _data(data: Mapping[str, str] | None, key: str) -> str:
    return token_field(data, key, secret="a Karmada member token Secret")


def _kubeconfig(data: Mapping[str, str] | None, address: str) -> str:
    chart_doc = base64.b64decode(_data(data, kb.KUBECONFIG_KEY)).decode()
    return kb.rewrite_kubeconfig_server(chart_doc, kb.api_server_url(address))


class Karmada(pulumi.ComponentResource):
    """Karmada control plane (the chart, or an existing one), push-mode members with Kruise, and
    the applications."""

    address: pulumi.Output[str]
    public_ip: network.PublicIPAddress | None
    release: k8s.helm.v3.Release | None
    karmada_kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    kruise: dict[str, Kruise]
    members: dict[str, pulumi.Resource]
    crds: k8s.yaml.v2.ConfigGroup
    interpreter: pulumi.Resource
    applications: dict[str, pulumi.Resource]

    def __init__(
        self, name: str, args: KarmadaArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}:Karmada", name, None, opts)
        fleet = args.fleet
        settings = kb.settings_of(fleet)
        self.public_ip = None
        if settings.source == "existing":
            if args.existing_kubeconfig is None:
                # Config validation requires a kubeconfig source; __main__ reads it.
                raise ValueError("karmada.source existing needs its kubeconfig")
            self.release = None
            self._existing(name, args.existing_kubeconfig, settings.existing)
            control_plane: list[pulumi.Resource] = []
        else:
            self.release = self._chart(name, args)
            # The `karmada-cluster` Namespace on the Karmada API server is the chart's (its
            # static-resource hook job makes it, as `karmadactl init` does): the credential
            # Secrets go into it once the release is done; the program never creates it.
            control_plane = [self.release]
        on_karmada = pulumi.ResourceOptions(parent=self, provider=self.provider)

        # 4. Members.
        self.kruise = {}
        self.members = {}
        for member in member_names(fleet):
            # `kruise.install: manifests-only`: Kruise already runs on the member.
            if settings.kruise.install == "helm":
                self.kruise[member] = Kruise(
                    f"{name}-{member}-kruise",
                    KruiseArgs(
                        release=kruise_release(
                            member, settings.kruise, on_aks=kb.on_aks(fleet, member)
                        ),
                        provider=args.clusters[member].provider,
                    ),
                    pulumi.ResourceOptions(parent=self),
                )
            member_cfg = fleet.cluster(member)
            region = kb.region_of(fleet, member_cfg) if member_cfg else None
            self.members[member] = self._register(
                name,
                member=member,
                cluster=args.clusters[member],
                control_plane=control_plane,
                settings=settings,
                version=fleet.known_version_of(member_cfg) if member_cfg else None,
                region=region,
                # Computed once per member, so both sides name one generation.
                generation=km.member_generation(fleet, member),
            )

        # After a member credential rotation, roll the chart's controller manager once the
        # Clusters name the new Secrets: its per-member informers keep the token they started
        # with (kb.controller_manager_restart). An existing Karmada is restarted by its owner.
        self.controller_manager_restart: pulumi.Resource | None = None
        restart = kb.controller_manager_restart(fleet)
        if restart is not None and self.release is not None:
            host = args.clusters[kb.host_cluster(fleet).name]
            self.controller_manager_restart = k8s.apps.v1.DeploymentPatch(
                f"{name}-controller-manager-restart",
                metadata=restart["metadata"],
                spec=restart["spec"],
                opts=pulumi.ResourceOptions(
                    parent=self,
                    provider=host.provider,
                    depends_on=[self.release, *self.members.values()],
                ),
            )

        # 5. Kruise CRDs only (no controllers, no webhooks), the interpreter, the applications.
        self.crds = k8s.yaml.v2.ConfigGroup(
            f"{name}-kruise-crds",
            files=list(args.kruise_crd_files),
            opts=on_karmada,
        )
        self.interpreter = kube_object(
            f"{name}-ud-interpreter", united_deployment_interpreter(), on_karmada
        )
        # Cluster failover: members are tainted NoExecute while not Ready (ClusterTaintPolicy).
        self.taint_policy: pulumi.Resource | None = None
        if settings.failover.enabled:
            self.taint_policy = kube_object(
                f"{name}-failover-taints",
                apps.cluster_taint_policy(member_names(fleet)),
                on_karmada,
            )
        namespaces = {
            ns["metadata"]["name"]: kube_object(
                f"{name}-ns-{ns['metadata']['name']}", ns, on_karmada
            )
            for ns in apps.application_namespaces(
                settings.applications, propagate=not ka.scoped(settings)
            )
        }
        self.applications = {}
        for app in settings.applications:
            key = f"{app.namespace}-{app.name}"
            in_namespace = [namespaces[app.namespace]] if app.namespace in namespaces else []
            policy = kube_object(
                f"{name}-{key}-pp",
                apps.propagation_policy(app, settings.failover),
                pulumi.ResourceOptions.merge(
                    on_karmada, pulumi.ResourceOptions(depends_on=in_namespace)
                ),
            )
            # After the CRD, the interpreter (replicas are read by our script from the first
            # schedule), Ready members (the scheduler skips clusters whose API list lacks the
            # kind) and its policy (so it is scheduled as soon as it exists).
            # A subset on virtual nodes also waits for the members' ACI connector grants:
            # without them its pods sit in ProviderFailed until RBAC catches up.
            grants = [
                grant
                for member in self.members
                if any(s.virtual_nodes for s in app.subsets)
                and isinstance(cluster := args.clusters[member], AksCluster)
                and (grant := cluster.virtual_node_grant) is not None
            ]
            # A StatefulSet template's governing Service, propagated by the same policy.
            service_obj = apps.headless_service(app)
            service = (
                kube_object(
                    f"{name}-{key}-svc",
                    service_obj,
                    pulumi.ResourceOptions.merge(
                        on_karmada, pulumi.ResourceOptions(depends_on=[policy, *in_namespace])
                    ),
                )
                if service_obj is not None
                else None
            )
            after: Sequence[pulumi.Resource] = [
                self.crds,
                self.interpreter,
                *self.members.values(),
                policy,
                *in_namespace,
                *grants,
                *([service] if service is not None else []),
            ]
            # A changed subset placement replaces the UnitedDeployment (same name, so delete
            # first): Kruise refuses it as an update in every member (apps.SUBSET_PLACEMENT_PATHS).
            self.applications[key] = kube_object(
                f"{name}-{key}-ud",
                apps.united_deployment(app),
                pulumi.ResourceOptions.merge(
                    on_karmada,
                    pulumi.ResourceOptions(
                        depends_on=after,
                        replace_on_changes=list(apps.SUBSET_PLACEMENT_PATHS),
                        delete_before_replace=True,
                    ),
                ),
            )

        self.register_outputs(
            {"address": self.address, "karmadaKubeconfig": self.karmada_kubeconfig}
        )

    def _existing(
        self, name: str, kubeconfig: pulumi.Input[str], source: KubeconfigSource | None
    ) -> None:
        """A Karmada API server this stack does not install: its kubeconfig, as given."""
        context = source.context if source else None
        self.karmada_kubeconfig = pulumi.Output.secret(kubeconfig)
        # The server is not a credential: unsecret it so it can appear in outputs and logs.
        self.address = pulumi.Output.unsecret(
            self.karmada_kubeconfig.apply(lambda doc: host_of(server_of(doc, context)))
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.karmada_kubeconfig,
            context=context,
            cluster_identifier="karmada-existing",
            enable_server_side_apply=True,
            delete_unreachable=False,  # not ours: never forget its objects silently
            # Pinned like every other Kubernetes provider (constants.KUBERNETES_PROVIDER_VERSION).
            opts=pulumi.ResourceOptions(parent=self, version=KUBERNETES_PROVIDER_VERSION),
        )

    def _chart(self, name: str, args: KarmadaArgs) -> k8s.helm.v3.Release:
        """Steps 1-3: the address, the chart on the host, the provider from its kubeconfig."""
        fleet = args.fleet
        settings = kb.settings_of(fleet)
        host_cfg = kb.host_cluster(fleet)
        host = args.clusters[host_cfg.name]
        if not isinstance(host, AksCluster):
            # Config validation rejects this; the address binding below is Azure's.
            raise TypeError(f"the Karmada host {host_cfg.name!r} must be an AKS cluster")

        # 1. The address, before the chart: its certificate is generated once, at install.
        internal = kb.internal_address(settings)
        if internal is not None:
            self.address = pulumi.Output.from_input(internal)
            group: pulumi.Output[str] = pulumi.Output.from_input("")
        else:
            # In the node resource group: the cluster identity already manages that group, so no
            # extra role assignment is needed (elsewhere it would need Network Contributor on the
            # whole group, because the cloud provider lists the group's IPs).
            group = host.managed_cluster.node_resource_group.apply(lambda g: g or "")
            label = settings.api_server.dns_label
            self.public_ip = network.PublicIPAddress(
                f"{name}-ip",
                public_ip_address_name=kb.public_ip_name(host_cfg.name),
                resource_group_name=group,
                location=kb.location_of(fleet, host_cfg),
                sku={"name": "Standard", "tier": "Regional"},
                public_ip_allocation_method="Static",
                public_ip_address_version="IPv4",
                dns_settings={"domain_name_label": label} if label else None,
                tags=args.tags,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.address = self.public_ip.ip_address.apply(lambda a: a or "")

        # 2. The control plane.
        values = pulumi.Output.all(self.address, group).apply(
            lambda v: kb.karmada_values(fleet, address=v[0], resource_group=v[1])
        )
        release = k8s.helm.v3.Release(
            f"{name}-release",
            name=kb.RELEASE,
            chart=kb.CHART,
            version=settings.chart_version,
            namespace=kb.NAMESPACE,
            create_namespace=True,
            values=values,
            # Hook jobs generate certificates and apply CRDs before anything is ready.
            timeout=1200,
            opts=pulumi.ResourceOptions(parent=self, provider=host.provider),
        )

        # 3. The Karmada API server provider. The Secret comes from a hook job, so it is not a
        # tracked release object: read it once the release is done. An id derived from the
        # release's status stays unknown in a preview that creates the release, so the read is
        # not attempted against a Secret that does not exist yet.
        secret_id = release.status.apply(lambda _: f"{kb.NAMESPACE}/{kb.KUBECONFIG_SECRET}")
        chart_kubeconfig = k8s.core.v1.Secret.get(
            f"{name}-chart-kubeconfig",
            secret_id,
            opts=pulumi.ResourceOptions(parent=self, provider=host.provider, depends_on=[release]),
        )
        self.karmada_kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(chart_kubeconfig.data, self.address).apply(
                lambda v: _kubeconfig(v[0], v[1])
            )
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.karmada_kubeconfig,
            cluster_identifier=f"karmada-{host_cfg.name}",
            enable_server_side_apply=True,
            # Never forget Karmada's objects because its API server did not answer a refresh
            # (components/aks.py says why; docs/upgrades.md how to delete on purpose).
            delete_unreachable=False,
            opts=pulumi.ResourceOptions(parent=self, version=KUBERNETES_PROVIDER_VERSION),
        )
        return release

    def _register(
        self,
        name: str,
        *,
        member: str,
        cluster: AksCluster | ExistingCluster,
        control_plane: Sequence[pulumi.Resource],
        settings: KarmadaSettings,
        version: str | None,
        region: str | None,
        generation: int = 0,
    ) -> pulumi.Resource:
        """What `karmadactl join` does for one member; returns its Karmada Cluster object.

        Ready only after every member object: with `memberAccess: scoped` the applications'
        namespaces and Roles exist before anything is propagated into them.
        """
        on_member = pulumi.ResourceOptions(parent=self, provider=cluster.provider)
        made = apply_manifests(
            km.member_objects(member, settings, version, generation),
            on_member,
            name_of=lambda m: f"{name}-{member}-{m.kind.lower()}-{m.name.replace(':', '-')}",
        )
        token = km.token_secret_name(km.member_service_account(member), generation)
        account = made[f"Secret/{km.CLUSTER_NAMESPACE}/{token}"]
        assert isinstance(account, k8s.core.v1.Secret)

        on_karmada = pulumi.ResourceOptions(
            parent=self, provider=self.provider, depends_on=list(control_plane)
        )
        credentials = k8s.core.v1.Secret(
            f"{name}-{member}-credentials",
            metadata=owned(
                km.credential_secret(member, token="", ca_bundle="", generation=generation)[
                    "metadata"
                ]
            ),
            data=account.data.apply(
                lambda d: km.credential_secret(
                    member, token=_data(d, "token"), ca_bundle=_data(d, "ca.crt")
                )["data"]
            ),
            opts=on_karmada,
        )
        unified_auth = not ka.scoped(settings)
        impersonation: list[pulumi.Resource] = []
        if unified_auth:
            impersonator_token = km.token_secret_name(km.IMPERSONATOR, generation)
            impersonator = made[f"Secret/{km.CLUSTER_NAMESPACE}/{impersonator_token}"]
            assert isinstance(impersonator, k8s.core.v1.Secret)
            impersonation.append(
                k8s.core.v1.Secret(
                    f"{name}-{member}-impersonator",
                    metadata=owned(
                        km.impersonator_secret(member, token="", generation=generation)["metadata"]
                    ),
                    data=impersonator.data.apply(
                        lambda d: km.impersonator_secret(member, token=_data(d, "token"))["data"]
                    ),
                    opts=on_karmada,
                )
            )
        spec = cluster.api_server_url.apply(
            lambda url: km.karmada_cluster(
                member,
                api_endpoint=url,
                region=region,
                impersonator=unified_auth,
                generation=generation,
            )["spec"]
        )
        # Ready: the status controller has reached the member and, in the same update, listed its
        # APIs, which include UnitedDeployment because Kruise was installed first.
        return k8s.apiextensions.CustomResource(
            f"{name}-{member}-cluster",
            api_version=km.CLUSTER_API,
            kind="Cluster",
            metadata=owned({"name": member, "annotations": {WAIT_FOR: "condition=Ready"}}),
            spec=spec,
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=self.provider,
                depends_on=[
                    credentials,
                    *impersonation,
                    *made.values(),
                    *([self.kruise[member]] if member in self.kruise else []),
                ],
            ),
        )
