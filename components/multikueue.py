"""MultiKueue wiring: least-privilege access on each worker, and the manager's link to them."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from builders import multikueue as mk
from components.kube import custom_resource, kube_object, owned
from components.retire import RetireGuard
from components.tokensecret import token_field
from config.models import FleetConfig
from config.resolve import (
    dispatch_order,
    dispatch_sets,
    dispatched_namespaces,
    enabled_workers,
    rotation_of,
)
from constants import (
    KUBERNETES_PROVIDER_VERSION,
    MULTIKUEUE_ADMISSION_CHECK,
    MULTIKUEUE_CONFIG,
    TYPE_PREFIX,
)
from upstream.kueue import DEFAULT_CONNECT_TIMEOUT, KUEUE_NAMESPACE, SERVICE_ACCOUNT


def _options(
    parent: pulumi.Resource,
    provider: k8s.Provider,
    depends_on: Sequence[pulumi.Resource],
    *extra: pulumi.Resource,
) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(
        parent=parent, provider=provider, depends_on=[*depends_on, *extra]
    )


@dataclass(frozen=True, kw_only=True)
class MultiKueueWorkerAccessArgs:
    """One worker: its provider, the Kueue version and frameworks, the credential generation."""

    provider: k8s.Provider
    kueue_version: str
    frameworks: Sequence[str]
    rotation: int = 0
    feature_gates: Mapping[str, bool] = field(default_factory=dict[str, bool])
    namespace: str = KUEUE_NAMESPACE
    # The worker's Kueue Helm release: it creates the namespace.
    depends_on: Sequence[pulumi.Resource] = field(default_factory=list[pulumi.Resource])
    # The namespaces the manager dispatches into on this worker (config.resolve
    # .dispatched_namespaces), each with what its RoleBinding waits for (its Namespace object,
    # when this stack makes it): the only places the account may create, update and delete.
    write_namespaces: Mapping[str, Sequence[pulumi.Resource]] = field(
        default_factory=dict[str, Sequence[pulumi.Resource]]
    )


class MultiKueueWorkerAccess(pulumi.ComponentResource):
    """ServiceAccount, read ClusterRole and its cluster-wide binding, write ClusterRole bound in
    each dispatched namespace, proof Role and token Secret on a worker; exposes token and CA, and
    the proof RoleBinding a read with the token must wait for."""

    token: pulumi.Output[str]
    ca_data: pulumi.Output[str]
    token_secret: k8s.core.v1.Secret
    proof_binding: pulumi.Resource
    write_bindings: list[pulumi.Resource]

    def __init__(
        self,
        name: str,
        args: MultiKueueWorkerAccessArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}:MultiKueueWorkerAccess", name, None, opts)
        ns = args.namespace
        after_kueue = _options(self, args.provider, args.depends_on)
        account = kube_object(f"{name}-sa", mk.service_account(ns), after_kueue)
        role = kube_object(
            f"{name}-role",
            mk.cluster_role(args.kueue_version, args.frameworks, args.feature_gates),
            after_kueue,
        )
        kube_object(
            f"{name}-binding",
            mk.cluster_role_binding(ns),
            _options(self, args.provider, args.depends_on, account, role),
        )
        write_role = kube_object(
            f"{name}-write-role",
            mk.write_role(args.kueue_version, args.frameworks, args.feature_gates),
            after_kueue,
        )
        self.write_bindings = [
            kube_object(
                f"{name}-write-{team_ns}",
                mk.write_role_binding(team_ns, ns),
                _options(self, args.provider, args.depends_on, account, write_role, *team_ns_after),
            )
            for team_ns, team_ns_after in args.write_namespaces.items()
        ]
        proof_role = kube_object(f"{name}-proof-role", mk.proof_role(ns), after_kueue)
        self.proof_binding = kube_object(
            f"{name}-proof-binding",
            mk.proof_role_binding(ns),
            _options(self, args.provider, args.depends_on, account, proof_role),
        )
        # The token controller deletes a token Secret whose ServiceAccount does not exist yet.
        self.token_secret = k8s.core.v1.Secret(
            f"{name}-token",
            metadata=owned((secret_obj := mk.token_secret(args.rotation, ns))["metadata"]),
            type=secret_obj["type"],
            opts=_options(self, args.provider, args.depends_on, account),
        )
        data = self.token_secret.data
        what = "the MultiKueue token Secret"
        self.token = pulumi.Output.secret(
            data.apply(lambda d: base64.b64decode(token_field(d, "token", secret=what)).decode())
        )
        # Kept base64: a kubeconfig's certificate-authority-data is base64 too.
        self.ca_data = pulumi.Output.secret(
            data.apply(lambda d: token_field(d, "ca.crt", secret=what))
        )
        self.register_outputs({"token": self.token, "caData": self.ca_data})


@dataclass(frozen=True, kw_only=True)
class WorkerLink:
    """How the manager reaches one worker: API server URL, CA (base64), token, generation."""

    name: str
    server: pulumi.Input[str]
    ca_data: pulumi.Input[str]
    token: pulumi.Input[str]
    rotation: int = 0
    # What a read with the token needs on the worker first (MultiKueueWorkerAccess.proof_binding).
    proof_after: Sequence[pulumi.Resource] = ()
    # What the worker needs before the manager sends it work: its queue objects and the account's
    # write access in the dispatched namespaces. The MultiKueueConfigs that list it wait for them.
    ready: Sequence[pulumi.Resource] = ()


@dataclass(frozen=True, kw_only=True)
class MultiKueueManagerArgs:
    """The manager's provider and its workers, in dispatch order."""

    provider: k8s.Provider
    workers: Sequence[WorkerLink]
    namespace: str = KUEUE_NAMESPACE
    # Seconds `pulumi up` waits for each MultiKueueCluster to be Active.
    connect_timeout: int = DEFAULT_CONNECT_TIMEOUT
    # The manager's Kueue Helm release: CRDs, webhooks and the namespace.
    depends_on: Sequence[pulumi.Resource] = field(default_factory=list[pulumi.Resource])
    # (name, workers) per MultiKueueConfig (config.resolve.dispatch_sets); default: one,
    # `multikueue`, listing every worker.
    configs: Sequence[tuple[str, Sequence[str]]] | None = None
    # The manager's kubeconfig: with it, a RetireGuard reads the manager before a worker leaves
    # the MultiKueueConfigs (components/retire.py). None: no guard.
    kubeconfig: pulumi.Input[str] | None = None
    # `multiKueue.forceRetire`: removed workers the guard lets go even with work admitted.
    force_retire: Sequence[str] = ()


class MultiKueueManager(pulumi.ComponentResource):
    """Per worker a kubeconfig Secret and MultiKueueCluster; per dispatch set a MultiKueueConfig."""

    kubeconfigs: pulumi.Output[dict[str, str]]
    admission_check_name: str
    config: k8s.apiextensions.CustomResource
    configs: dict[str, k8s.apiextensions.CustomResource]
    clusters: dict[str, k8s.apiextensions.CustomResource]

    def __init__(
        self,
        name: str,
        args: MultiKueueManagerArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}:MultiKueueManager", name, None, opts)
        self.guard: RetireGuard | None = None
        guarded: list[pulumi.Resource] = []
        configs = args.configs
        if configs is None:
            configs = [(MULTIKUEUE_CONFIG, [w.name for w in args.workers])]
        if args.kubeconfig is not None:
            # Before the configs: a worker leaves them only once the guard found it empty.
            self.guard = RetireGuard(
                f"{name}-retire-guard",
                workers=[w.name for w in args.workers],
                links={set_name: sorted(members) for set_name, members in configs},
                force_retire=args.force_retire,
                kubeconfig=args.kubeconfig,
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on)),
            )
            guarded.append(self.guard)
        kubeconfigs: dict[str, pulumi.Output[str]] = {}
        self.clusters = {}
        for worker in args.workers:
            kubeconfig = pulumi.Output.secret(
                pulumi.Output.all(worker.server, worker.ca_data, worker.token).apply(
                    lambda a, w=worker.name: mk.worker_kubeconfig(mk.k8s_name(w), a[0], a[1], a[2])
                )
            )
            kubeconfigs[worker.name] = kubeconfig
            proof = self._proof(name, worker, kubeconfig, args.namespace)
            secret_obj = mk.kubeconfig_secret(
                worker.name, kubeconfig.apply(mk.encode), worker.rotation, args.namespace
            )
            secret = kube_object(
                f"{name}-{worker.name}-kubeconfig",
                secret_obj,
                _options(self, args.provider, args.depends_on, proof),
            )
            self.clusters[worker.name] = custom_resource(
                f"{name}-{worker.name}",
                mk.multikueue_cluster(worker.name, worker.rotation, args.connect_timeout),
                _options(self, args.provider, args.depends_on, secret),
            )
        links = {w.name: w for w in args.workers}
        self.configs = {
            # The default set keeps the resource name (so the URN) stacks already have.
            set_name: custom_resource(
                f"{name}-config" if set_name == MULTIKUEUE_CONFIG else f"{name}-config-{set_name}",
                mk.multikueue_config(members, set_name),
                _options(
                    self, args.provider, args.depends_on, *guarded, *self._joined(members, links)
                ),
            )
            for set_name, members in configs
        }
        self.config = next(iter(self.configs.values()))
        # The AdmissionCheck itself is created with the manager's queues (builders.fleet): the
        # ClusterQueues that list it must depend on it, so that destroy deletes them first.
        # Otherwise Kueue's resource-in-use finalizer holds the check and destroy stalls.
        self.admission_check_name = MULTIKUEUE_ADMISSION_CHECK
        self.kubeconfigs = pulumi.Output.secret(pulumi.Output.all(**kubeconfigs))
        self.register_outputs({"kubeconfigs": self.kubeconfigs})

    def _joined(
        self, members: Sequence[str], links: Mapping[str, WorkerLink]
    ) -> list[pulumi.Resource]:
        """What a MultiKueueConfig waits for: each member's MultiKueueCluster (Active: Kueue is
        connected to it) and what the worker needs to take work (`WorkerLink.ready`).

        A worker added to a running fleet joins the config only then. Kueue v0.19.2 dispatches
        a Workload to the config's connected clusters alone and requeues every Workload of the
        config when its cluster list changes; a cluster that connects later requeues only the
        Workloads with a copy there (pkg/controller/admissionchecks/multikueue/workload.go,
        remoteClientsForAC and configHandler.Update; multikueuecluster.go, Reconcile). A config
        listing the worker before Kueue is connected to it would leave the queued Workloads
        without a copy there until something else touches them (docs/operations.md, "Adding a
        worker")."""
        out: list[pulumi.Resource] = []
        for member in members:
            if member in self.clusters:
                out.append(self.clusters[member])
            if member in links:
                out += links[member].ready
        return out

    def _proof(
        self, name: str, worker: WorkerLink, kubeconfig: pulumi.Output[str], namespace: str
    ) -> pulumi.Resource:
        """Read the worker's ServiceAccount with the very kubeconfig Kueue will get.

        The kubeconfig Secret (hence the MultiKueueCluster) waits for this read, so a token the
        worker refuses fails `up` here, naming the worker, before Kueue is pointed at it (a 401
        leaves the provider without the API's schema: "cluster is unreachable ... the server has
        asked for the client to provide credentials").
        Kueue v0.19.2 gives no generation-current verdict after a good -> good rotation (see
        builders.multikueue.multikueue_cluster), so this read is the proof of the new token.
        """
        provider = k8s.Provider(
            f"{name}-{worker.name}-proof",
            kubeconfig=kubeconfig,
            cluster_identifier=f"{worker.name}-{SERVICE_ACCOUNT}",
            enable_server_side_apply=True,
            delete_unreachable=False,
            opts=pulumi.ResourceOptions(parent=self, version=KUBERNETES_PROVIDER_VERSION),
        )
        return k8s.core.v1.ServiceAccount.get(
            f"{name}-{worker.name}-proof",
            f"{namespace}/{SERVICE_ACCOUNT}",
            opts=pulumi.ResourceOptions(
                parent=self, provider=provider, depends_on=[*worker.proof_after]
            ),
        )


@dataclass(frozen=True, kw_only=True)
class MultiKueueArgs:
    """The fleet config and, per cluster name, its provider, API server URL and Kueue release."""

    fleet: FleetConfig
    providers: Mapping[str, k8s.Provider]
    api_servers: Mapping[str, pulumi.Input[str]]
    kueue_releases: Mapping[str, pulumi.Resource]
    # Per cluster, the kubeconfig its provider uses: the manager's feeds the RetireGuard.
    kubeconfigs: Mapping[str, pulumi.Input[str]] = field(
        default_factory=dict[str, pulumi.Input[str]]
    )
    # Per cluster, its Kueue component's objects by key (`Namespace/team-a`): a worker's write
    # RoleBinding in a namespace waits for that Namespace.
    kueue_objects: Mapping[str, Mapping[str, pulumi.Resource]] = field(
        default_factory=dict[str, Mapping[str, pulumi.Resource]]
    )


class MultiKueue(pulumi.ComponentResource):
    """Access on every enabled worker, and the manager's link to them (from `fleet.multiKueue`)."""

    workers: dict[str, MultiKueueWorkerAccess]
    manager: MultiKueueManager

    def __init__(
        self, name: str, args: MultiKueueArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}:MultiKueue", name, None, opts)
        fleet = args.fleet
        manager = fleet.manager
        if manager is None or fleet.multi_kueue is None:
            raise ValueError("MultiKueue needs `multiKueue` settings and a manager (config checks)")
        child = pulumi.ResourceOptions(parent=self)
        self.workers = {}
        links: list[WorkerLink] = []
        namespaces = dispatched_namespaces(fleet)
        for worker in enabled_workers(fleet):
            rotation = rotation_of(fleet, worker)
            objects = args.kueue_objects.get(worker, {})
            access = MultiKueueWorkerAccess(
                f"{name}-{worker}",
                MultiKueueWorkerAccessArgs(
                    provider=args.providers[worker],
                    kueue_version=fleet.kueue.version,
                    frameworks=fleet.kueue.frameworks,
                    rotation=rotation,
                    feature_gates=fleet.kueue.feature_gates,
                    depends_on=[args.kueue_releases[worker]],
                    write_namespaces={
                        ns: [o for o in [objects.get(f"Namespace/{ns}")] if o is not None]
                        for ns in namespaces.get(worker, [])
                    },
                ),
                child,
            )
            self.workers[worker] = access
            links.append(
                WorkerLink(
                    name=worker,
                    server=args.api_servers[worker],
                    ca_data=access.ca_data,
                    token=access.token,
                    rotation=rotation,
                    proof_after=[access.proof_binding],
                    ready=[*access.write_bindings, *objects.values()],
                )
            )
        self.manager = MultiKueueManager(
            f"{name}-{manager.name}",
            MultiKueueManagerArgs(
                provider=args.providers[manager.name],
                workers=links,
                connect_timeout=fleet.multi_kueue.connect_timeout_seconds,
                depends_on=[args.kueue_releases[manager.name]],
                configs=[(s.name, dispatch_order(fleet, s)) for s in dispatch_sets(fleet)],
                kubeconfig=args.kubeconfigs.get(manager.name),
                force_retire=fleet.multi_kueue.force_retire,
            ),
            child,
        )
        self.register_outputs({"kubeconfigs": self.manager.kubeconfigs})
