"""What a builder hands to components and to the offline renderer: objects and Helm releases."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

KARMADA_TARGET = "karmada"  # render target for the Karmada API server (not an AKS cluster)


def object_key(obj: Mapping[str, Any]) -> str:
    """`Kind/name` or `Kind/namespace/name`: how objects name each other in `Manifest.needs`."""
    meta = obj["metadata"]
    return "/".join(p for p in (obj["kind"], meta.get("namespace"), meta["name"]) if p)


def elsewhere(target: str, what: str) -> str:
    """A `Manifest.needs` entry for what is not an object of the same list: an object of another
    API server (`what` is its `object_key`) or a resource that is no Kubernetes object of a
    builder (a Helm release, CRD files). The component applying the list maps each such entry to
    the resources that make it (components.kube.apply_manifests `known`); one it does not map is
    not made by this stack (nothing to wait for)."""
    return f"{target}:{what}"


@dataclass(frozen=True, slots=True)
class Manifest:
    """One Kubernetes object for one API server (`target` is a cluster name or `karmada`).

    `needs` holds the keys (`object_key`) of objects this one names: created first, deleted after
    (`elsewhere` for what is not in the same list). `replace_on` holds the property paths whose
    change replaces the object, deleting it first (same name), where an update would be refused.
    """

    target: str
    obj: dict[str, Any]
    needs: tuple[str, ...] = ()
    replace_on: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def key(self) -> str:
        return object_key(self.obj)


@dataclass(frozen=True, slots=True)
class HelmRelease:
    """One Helm release: chart, pinned version, namespace and the values a builder computed."""

    target: str
    release: str
    chart: str
    version: str
    namespace: str
    values: dict[str, Any] = field(default_factory=dict[str, Any])
    repo: str | None = None
