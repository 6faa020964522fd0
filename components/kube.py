"""Builder objects (plain dicts) as Pulumi Kubernetes resources: the one place that maps them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from builders.manifest import Manifest
from constants import PATCH_FORCE


def owned(meta: Mapping[str, Any]) -> Any:  # ObjectMeta input: the SDK types it loosely
    """An object's metadata as the program applies it: server-side apply with force.

    The stack owns what it declares. A `pulumi up` killed mid-create leaves those objects
    co-owned by the dead run's field manager (pulumi-kubernetes draws one at random per
    resource); the recovery adopts them under a new one, and without force the next change of
    a shared field fails with an SSA conflict against the dead manager.
    """
    annotations: dict[str, Any] = {**(meta.get("annotations") or {}), PATCH_FORCE: "true"}
    return {**meta, "annotations": annotations}


def kube_object(name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """One builder object as the matching typed resource (CustomResource for the rest)."""
    kind, meta = obj["kind"], owned(obj["metadata"])
    if kind == "Namespace":
        return k8s.core.v1.Namespace(name, metadata=meta, opts=opts)
    if kind == "ServiceAccount":
        return k8s.core.v1.ServiceAccount(name, metadata=meta, opts=opts)
    if kind == "Secret":
        return k8s.core.v1.Secret(
            name, metadata=meta, type=obj.get("type"), data=obj.get("data"), opts=opts
        )
    if kind == "ConfigMap":
        return k8s.core.v1.ConfigMap(name, metadata=meta, data=obj.get("data"), opts=opts)
    if kind == "Service":
        return k8s.core.v1.Service(name, metadata=meta, spec=obj["spec"], opts=opts)
    if kind == "PodDisruptionBudget":
        return k8s.policy.v1.PodDisruptionBudget(name, metadata=meta, spec=obj["spec"], opts=opts)
    if kind == "ClusterRole":
        return k8s.rbac.v1.ClusterRole(name, metadata=meta, rules=obj["rules"], opts=opts)
    if kind == "ClusterRoleBinding":
        return k8s.rbac.v1.ClusterRoleBinding(
            name, metadata=meta, role_ref=obj["roleRef"], subjects=obj["subjects"], opts=opts
        )
    if kind == "Role":
        return k8s.rbac.v1.Role(name, metadata=meta, rules=obj["rules"], opts=opts)
    if kind == "RoleBinding":
        return k8s.rbac.v1.RoleBinding(
            name, metadata=meta, role_ref=obj["roleRef"], subjects=obj["subjects"], opts=opts
        )
    if set(obj) - {"apiVersion", "kind", "metadata", "spec"}:
        # Kinds with top-level fields and no spec (WorkloadPriorityClass: value, description):
        # the typed class carries only `spec`, the provider takes any field of the object.
        return _TopLevelFields(name, obj, opts)
    return custom_resource(name, obj, opts)


def custom_resource(
    name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> k8s.apiextensions.CustomResource:
    """A custom resource from a builder object (apiVersion, kind, metadata, spec).

    A core kind (apiVersion without a group, "v1") is refused: pulumi-kubernetes registers it as
    `kubernetes:v1:<Kind>`, which the SDK's mocks accept and the provider rejects at `up`
    ("apiVersion does not have both a group and a version"). Core kinds get their typed class in
    kube_object.
    """
    if "/" not in obj["apiVersion"]:
        raise TypeError(
            f"{obj['kind']} {name}: core kind (apiVersion {obj['apiVersion']!r}) has no typed "
            "class in components.kube.kube_object; add one there"
        )
    return k8s.apiextensions.CustomResource(
        name,
        api_version=obj["apiVersion"],
        kind=obj["kind"],
        metadata=owned(obj["metadata"]),
        spec=obj.get("spec"),
        opts=opts,
    )


class _TopLevelFields(pulumi.CustomResource):
    """A custom resource whose fields are not under `spec`, registered as the provider's
    `kubernetes:<apiVersion>:<kind>` type with every field of the object as an input."""

    def __init__(self, name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions) -> None:
        props: dict[str, Any] = {**obj, "metadata": owned(obj["metadata"])}
        super().__init__(f"kubernetes:{obj['apiVersion']}:{obj['kind']}", name, props, opts)


def apply_manifests(
    manifests: Sequence[Manifest],
    opts: pulumi.ResourceOptions,
    *,
    name_of: Callable[[Manifest], str],
    after: Sequence[pulumi.Resource] = (),
    metadata: Callable[[Manifest], Mapping[str, Any]] | None = None,
    also_after: Mapping[str, Sequence[pulumi.Resource]] | None = None,
    known: Mapping[str, Sequence[pulumi.Resource]] | None = None,
) -> dict[str, pulumi.Resource]:
    """Each manifest as a resource (keyed by `Manifest.key`), after the objects it `needs`.

    `after` is what every object waits for (a Helm release: CRDs and webhooks); `also_after`
    adds resources made elsewhere that one object (by key) waits for; `known` maps the `needs`
    entries naming what is not in `manifests` (builders.manifest.elsewhere) to the resources that
    make it. A need found in neither is not made by this stack. On destroy the engine reverses
    the order, so an object goes before what it names (Kueue's finalizers).
    """
    made: dict[str, pulumi.Resource] = {}
    extra = also_after or {}
    outside = known or {}
    for m in manifests:
        needed = [r for k in m.needs for r in ([made[k]] if k in made else outside.get(k, ()))]
        depends = [*after, *extra.get(m.key, ()), *needed]
        obj = m.obj if metadata is None else {**m.obj, "metadata": metadata(m)}
        child = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=depends))
        if m.replace_on:
            replace = pulumi.ResourceOptions(
                replace_on_changes=list(m.replace_on), delete_before_replace=True
            )
            child = pulumi.ResourceOptions.merge(child, replace)
        made[m.key] = kube_object(name_of(m), obj, child)
    return made


def deleted_with_clusters(
    clusters: Sequence[tuple[pulumi.ProviderResource, pulumi.Resource]],
) -> pulumi.ResourceTransformation:
    """Every resource applied through one of these clusters' Kubernetes providers is
    `deleted_with` that cluster: a `destroy`, or a cluster's removal, deletes the cluster and
    skips the Delete of each object in it (the cluster's deletion takes them), instead of
    deleting, and waiting on, every Helm release, namespace and queue object first. A resource
    in a cluster that stays (a manager's Secret for a retired worker) is deleted as before.

    An in-process transformation (children inherit it from the component given it): it sees
    the provider object itself. Objects a provider registers on its own (the children of a
    `yaml/v2:ConfigGroup`) do not pass through it and are deleted one by one, as before.
    """

    def transform(
        args: pulumi.ResourceTransformationArgs,
    ) -> pulumi.ResourceTransformationResult | None:
        provider = args.opts.provider
        if provider is None or not isinstance(args.resource, pulumi.CustomResource):
            return None
        cluster = next((c for p, c in clusters if p is provider), None)
        if cluster is None or args.opts.deleted_with is not None:
            return None
        return pulumi.ResourceTransformationResult(
            args.props,
            pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(deleted_with=cluster)),
        )

    return transform
