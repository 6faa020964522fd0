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
The objects of steps 4 and 5 and what each waits for are builders.karmada.render_karmada's (the
list preflight renders): this component applies it with apply_manifests, mapping the needs on
what is no object of the list (the release, the Kruise CRDs, a member's Kruise and ACI grant) to
their resources, and filling in what is known only at deploy time (tokens, API endpoints).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, cast

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import network

from builders import karmada as kb
from builders import karmada_members as km
from builders.applications import FAILOVER_TAINT_POLICY
from builders.azure_fleet import KARMADA_IP, NODE_RESOURCE_GROUP
from builders.azure_resource import AzureResource
from builders.interpreter import DEFAULT_NAME as INTERPRETER_NAME
from builders.interpreter import KIND as INTERPRETER_KIND
from builders.kruise import kruise_release
from builders.kubeconfig import host_of, server_of
from builders.manifest import KARMADA_TARGET, Manifest, elsewhere
from components.aks import AksCluster
from components.azure import register_azure
from components.existing import ExistingCluster
from components.kruise import Kruise, KruiseArgs
from components.kube import apply_manifests
from components.tokensecret import token_field
from config.karmada import KubeconfigSource
from config.models import FleetConfig
from config.resolve import member_names
from constants import KUBERNETES_PROVIDER_VERSION, TYPE_PREFIX, WAIT_FOR


@dataclass(frozen=True, kw_only=True)
class KarmadaArgs:
    """The validated fleet (with `karmada` set) and its clusters, by config name."""

    fleet: FleetConfig
    clusters: Mapping[str, AksCluster | ExistingCluster]
    # builders.azure_fleet.karmada_resources: the API server's static Public IP, when public.
    resources: Sequence[AzureResource] = ()
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
        objects = kb.render_karmada(fleet)
        # What the objects need that is not among them (builders.karmada: CONTROL_PLANE, ...).
        known: dict[str, list[pulumi.Resource]] = {kb.CONTROL_PLANE: control_plane}

        # 4. Members: Kruise (`kruise.install: manifests-only`: it already runs there), and the
        # objects of each member's registration, on the member.
        self.kruise = {}
        for member in member_names(fleet):
            cluster = args.clusters[member]
            if settings.kruise.install == "helm":
                self.kruise[member] = Kruise(
                    f"{name}-{member}-kruise",
                    KruiseArgs(
                        release=kruise_release(
                            member, settings.kruise, on_aks=kb.on_aks(fleet, member)
                        ),
                        provider=cluster.provider,
                    ),
                    pulumi.ResourceOptions(parent=self),
                )
                known[kb.kruise_on(member)] = [self.kruise[member]]
            if isinstance(cluster, AksCluster) and cluster.virtual_node_grant is not None:
                known[kb.virtual_node_grant(member)] = [cluster.virtual_node_grant]
            made = apply_manifests(
                [m for m in objects if m.target == member],
                pulumi.ResourceOptions(parent=self, provider=cluster.provider),
                name_of=lambda m, member=member: (
                    f"{name}-{member}-{m.kind.lower()}-{m.name.replace(':', '-')}"
                ),
            )
            known |= {elsewhere(member, key): [r] for key, r in made.items()}

        # Then on Karmada, each object after what it needs: the members' credentials and
        # Clusters, the Kruise CRDs, the interpreter and the applications.
        self.crds = k8s.yaml.v2.ConfigGroup(
            f"{name}-kruise-crds",
            files=list(args.kruise_crd_files),
            opts=on_karmada,
        )
        known[kb.KRUISE_CRDS] = [self.crds]
        names = _karmada_names(name, fleet)
        on_plane = apply_manifests(
            [_live(m, args.clusters, known) for m in objects if m.target == KARMADA_TARGET],
            on_karmada,
            name_of=lambda m: names[m.key],
            metadata=_karmada_metadata,
            known=known,
        )
        self.members = {m: on_plane[f"Cluster/{m}"] for m in member_names(fleet)}
        self.interpreter = on_plane[f"{INTERPRETER_KIND}/{INTERPRETER_NAME}"]
        self.taint_policy: pulumi.Resource | None = on_plane.get(
            f"ClusterTaintPolicy/{FAILOVER_TAINT_POLICY}"
        )
        self.applications = {
            f"{m.obj['metadata']['namespace']}-{m.name}": r
            for m, r in ((m, on_plane[m.key]) for m in objects if m.kind == "UnitedDeployment")
        }

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
            # In the host's node resource group (builders.azure_fleet.karmada_resources).
            group = host.managed_cluster.node_resource_group.apply(lambda g: g or "")
            made = register_azure(name, args.resources, {NODE_RESOURCE_GROUP: group}, parent=self)
            self.public_ip = cast(network.PublicIPAddress, made[KARMADA_IP])
            self.address = self.public_ip.ip_address.apply(lambda a: a or "")

        # 2. The control plane: the release preflight renders, with the address and group.
        (chart,) = kb.karmada_releases(fleet)
        values = pulumi.Output.all(self.address, group).apply(
            lambda v: kb.karmada_release(fleet, address=v[0], resource_group=v[1]).values
        )
        release = k8s.helm.v3.Release(
            f"{name}-release",
            name=chart.release,
            chart=chart.chart,
            version=chart.version,
            namespace=chart.namespace,
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


def _live(
    m: Manifest,
    clusters: Mapping[str, AksCluster | ExistingCluster],
    known: Mapping[str, Sequence[pulumi.Resource]],
) -> Manifest:
    """A Karmada object with the values known only at deploy time in place of the rendered ones:
    a Cluster's API endpoint from its member, a credential Secret's data from the member token
    Secret it needs (filled: the provider waited for the token controller, and an unfilled field
    is an error, never an empty credential)."""
    if m.kind == "Cluster":
        spec = m.obj["spec"]
        endpoint = clusters[m.name].api_server_url
        return replace(
            m, obj={**m.obj, "spec": endpoint.apply(lambda url: {**spec, "apiEndpoint": url})}
        )
    if m.kind != "Secret":
        return m
    tokens = [r for k in m.needs for r in known.get(k, ()) if isinstance(r, k8s.core.v1.Secret)]
    if len(tokens) != 1:
        raise ValueError(f"{m.key} needs one member token Secret, found {len(tokens)}")
    fields = list(m.obj["data"])  # caBundle and token, or the impersonator's token alone
    data = tokens[0].data.apply(lambda d: {f: _data(d, TOKEN_FIELDS[f]) for f in fields})
    return replace(m, obj={**m.obj, "data": data})


# A credential Secret's field on Karmada -> the member token Secret's field it is copied from.
TOKEN_FIELDS: Final = {"caBundle": "ca.crt", "token": "token"}


def _karmada_metadata(m: Manifest) -> dict[str, Any]:
    """A Cluster is Ready once the status controller reached the member and, in the same update,
    listed its APIs (which include UnitedDeployment: Kruise was installed first)."""
    meta = dict(m.obj["metadata"])
    if m.kind == "Cluster":
        meta["annotations"] = {**meta.get("annotations", {}), WAIT_FOR: "condition=Ready"}
    return meta


# The resource names (so the URNs) a stack's Karmada objects have had since they were first made.
_APP_SUFFIX = {"PropagationPolicy": "pp", "Service": "svc", "UnitedDeployment": "ud"}


def _karmada_names(name: str, fleet: FleetConfig) -> dict[str, str]:
    """The resource name of each object on the Karmada API server, by its key."""
    out = {
        f"{INTERPRETER_KIND}/{INTERPRETER_NAME}": f"{name}-ud-interpreter",
        f"ClusterTaintPolicy/{FAILOVER_TAINT_POLICY}": f"{name}-failover-taints",
    }
    for member in member_names(fleet):
        generation = km.member_generation(fleet, member)
        secrets = f"Secret/{km.CLUSTER_NAMESPACE}"
        out[f"{secrets}/{km.credential_secret_name(member, generation)}"] = (
            f"{name}-{member}-credentials"
        )
        out[f"{secrets}/{km.impersonator_secret_name(member, generation)}"] = (
            f"{name}-{member}-impersonator"
        )
        out[f"Cluster/{member}"] = f"{name}-{member}-cluster"
    for ns in {a.namespace for a in kb.settings_of(fleet).applications}:
        out[f"Namespace/{ns}"] = f"{name}-ns-{ns}"
    for app in kb.settings_of(fleet).applications:
        for kind, suffix in _APP_SUFFIX.items():
            out[f"{kind}/{app.namespace}/{app.name}"] = (
                f"{name}-{app.namespace}-{app.name}-{suffix}"
            )
    return out
