"""What a builder hands to components and to the offline renderer: objects and Helm releases."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KARMADA_TARGET = "karmada"  # render target for the Karmada API server (not an AKS cluster)


@dataclass(frozen=True, slots=True)
class Manifest:
    """One Kubernetes object for one API server (`target` is a cluster name or `karmada`)."""

    target: str
    obj: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])


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
