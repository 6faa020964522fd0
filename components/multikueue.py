"""MultiKueue wiring: least-privilege access on each worker, and the manager's link to them."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from builders import multikueue as mk
from config.models import FleetConfig
from config.multikueue import enabled_workers, rotation_of
from constants import TYPE_PREFIX


def _meta(obj: Mapping[str, Any]) -> k8s.meta.v1.ObjectMetaArgs:
    meta: Mapping[str, Any] = obj["metadata"]
    return k8s.meta.v1.ObjectMetaArgs(
        name=meta["name"],
        namespace=meta.get("namespace"),
        labels=meta.get("labels"),
        annotations=meta.get("annotations"),
    )


def _custom(
    name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> k8s.apiextensions.CustomResource:
    return k8s.apiextensions.CustomResource(
        name,
        api_version=obj["apiVersion"],
        kind=obj["kind"],
        metadata=_meta(obj),
        spec=obj["spec"],
        opts=opts,
    )


def _options(
    parent: pulumi.Resource,
    provider: k8s.Provider,
    depends_on: Sequence[pulumi.Resource],
    *extra: pulumi.Resource,
) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(
        parent=parent, provider=provider, depends_on=[*depends_on, *extra]
    )


def _snake(obj: Mapping[str, Any]) -> dict[str, Any]:
    """`apiGroup` -> `api_group`, for the SDK's Args classes."""
    return {"".join(f"_{c.lower()}" if c.isupper() else c for c in k): v for k, v in obj.items()}


def _data_field(data: Mapping[str, str] | None, key: str) -> str:
    """A field of the token Secret as the API server returned it (after the waitFor)."""
    value = (data or {}).get(key)
    if not value:
        raise RuntimeError(
            f"the MultiKueue token Secret has no data[{key!r}]: the token controller did not fill "
            "it (does the ServiceAccount exist?)"
        )
    return value


@dataclass(frozen=True, kw_only=True)
class MultiKueueWorkerAccessArgs:
    """One worker: its provider, the Kueue version and frameworks, the credential generation."""

    provider: k8s.Provider
    kueue_version: str
    frameworks: Sequence[str]
    rotation: int = 0
    namespace: str = mk.KUEUE_NAMESPACE
    # The worker's Kueue Helm release: it creates the namespace.
    depends_on: Sequence[pulumi.Resource] = field(default_factory=list[pulumi.Resource])


class MultiKueueWorkerAccess(pulumi.ComponentResource):
    """ServiceAccount, ClusterRole, binding and token Secret on a worker; exposes token and CA."""

    token: pulumi.Output[str]
    ca_data: pulumi.Output[str]
    token_secret: k8s.core.v1.Secret

    def __init__(
        self,
        name: str,
        args: MultiKueueWorkerAccessArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}:MultiKueueWorkerAccess", name, None, opts)
        ns = args.namespace
        after_kueue = _options(self, args.provider, args.depends_on)
        sa_obj = mk.service_account(ns)
        account = k8s.core.v1.ServiceAccount(f"{name}-sa", metadata=_meta(sa_obj), opts=after_kueue)
        role_obj = mk.cluster_role(args.kueue_version, args.frameworks)
        role = k8s.rbac.v1.ClusterRole(
            f"{name}-role",
            metadata=_meta(role_obj),
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=r["apiGroups"], resources=r["resources"], verbs=r["verbs"]
                )
                for r in role_obj["rules"]
            ],
            opts=after_kueue,
        )
        binding_obj = mk.cluster_role_binding(ns)
        k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding",
            metadata=_meta(binding_obj),
            role_ref=k8s.rbac.v1.RoleRefArgs(**_snake(binding_obj["roleRef"])),
            subjects=[k8s.rbac.v1.SubjectArgs(**_snake(s)) for s in binding_obj["subjects"]],
            opts=_options(self, args.provider, args.depends_on, account, role),
        )
        secret_obj = mk.token_secret(args.rotation, ns)
        # The token controller deletes a token Secret whose ServiceAccount does not exist yet.
        self.token_secret = k8s.core.v1.Secret(
            f"{name}-token",
            metadata=_meta(secret_obj),
            type=secret_obj["type"],
            opts=_options(self, args.provider, args.depends_on, account),
        )
        data = self.token_secret.data
        self.token = pulumi.Output.secret(
            data.apply(lambda d: base64.b64decode(_data_field(d, "token")).decode())
        )
        # Kept base64: a kubeconfig's certificate-authority-data is base64 too.
        self.ca_data = pulumi.Output.secret(data.apply(lambda d: _data_field(d, "ca.crt")))
        self.register_outputs({"token": self.token, "caData": self.ca_data})


@dataclass(frozen=True, kw_only=True)
class WorkerLink:
    """How the manager reaches one worker: API server URL, CA (base64), token, generation."""

    name: str
    server: pulumi.Input[str]
    ca_data: pulumi.Input[str]
    token: pulumi.Input[str]
    rotation: int = 0


@dataclass(frozen=True, kw_only=True)
class MultiKueueManagerArgs:
    """The manager's provider and its workers, in dispatch order."""

    provider: k8s.Provider
    workers: Sequence[WorkerLink]
    namespace: str = mk.KUEUE_NAMESPACE
    # The manager's Kueue Helm release: CRDs, webhooks and the namespace.
    depends_on: Sequence[pulumi.Resource] = field(default_factory=list[pulumi.Resource])


class MultiKueueManager(pulumi.ComponentResource):
    """Per worker a kubeconfig Secret and MultiKueueCluster; one MultiKueueConfig and check."""

    kubeconfigs: pulumi.Output[dict[str, str]]
    admission_check_name: str
    admission_check: k8s.apiextensions.CustomResource
    clusters: dict[str, k8s.apiextensions.CustomResource]

    def __init__(
        self,
        name: str,
        args: MultiKueueManagerArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}:MultiKueueManager", name, None, opts)
        after_kueue = _options(self, args.provider, args.depends_on)
        kubeconfigs: dict[str, pulumi.Output[str]] = {}
        self.clusters = {}
        for worker in args.workers:
            kubeconfig = pulumi.Output.secret(
                pulumi.Output.all(worker.server, worker.ca_data, worker.token).apply(
                    lambda a, w=worker.name: mk.worker_kubeconfig(mk.k8s_name(w), a[0], a[1], a[2])
                )
            )
            kubeconfigs[worker.name] = kubeconfig
            secret_obj = mk.kubeconfig_secret(
                worker.name, kubeconfig.apply(mk.encode), worker.rotation, args.namespace
            )
            secret = k8s.core.v1.Secret(
                f"{name}-{worker.name}-kubeconfig",
                metadata=_meta(secret_obj),
                type=secret_obj["type"],
                data=secret_obj["data"],
                opts=after_kueue,
            )
            self.clusters[worker.name] = _custom(
                f"{name}-{worker.name}",
                mk.multikueue_cluster(worker.name, worker.rotation),
                _options(self, args.provider, args.depends_on, secret),
            )
        config = _custom(
            f"{name}-config",
            mk.multikueue_config([w.name for w in args.workers]),
            after_kueue,
        )
        check_obj = mk.admission_check()
        self.admission_check_name = check_obj["metadata"]["name"]
        # Active only once some worker is connected, so it waits for the clusters' readiness.
        self.admission_check = _custom(
            f"{name}-check",
            check_obj,
            _options(self, args.provider, args.depends_on, config, *self.clusters.values()),
        )
        self.kubeconfigs = pulumi.Output.secret(pulumi.Output.all(**kubeconfigs))
        self.register_outputs({"kubeconfigs": self.kubeconfigs})


@dataclass(frozen=True, kw_only=True)
class MultiKueueArgs:
    """The fleet config and, per cluster name, its provider, API server URL and Kueue release."""

    fleet: FleetConfig
    providers: Mapping[str, k8s.Provider]
    api_servers: Mapping[str, pulumi.Input[str]]
    kueue_releases: Mapping[str, pulumi.Resource]


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
        for worker in enabled_workers(fleet):
            rotation = rotation_of(fleet, worker)
            access = MultiKueueWorkerAccess(
                f"{name}-{worker}",
                MultiKueueWorkerAccessArgs(
                    provider=args.providers[worker],
                    kueue_version=fleet.kueue.version,
                    frameworks=fleet.kueue.frameworks,
                    rotation=rotation,
                    depends_on=[args.kueue_releases[worker]],
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
                )
            )
        self.manager = MultiKueueManager(
            f"{name}-{manager.name}",
            MultiKueueManagerArgs(
                provider=args.providers[manager.name],
                workers=links,
                depends_on=[args.kueue_releases[manager.name]],
            ),
            child,
        )
        self.register_outputs({"kubeconfigs": self.manager.kubeconfigs})
