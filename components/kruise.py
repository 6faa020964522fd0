"""Kruise: the pinned OpenKruise Helm release on one member cluster."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from builders.manifest import HelmRelease
from constants import TYPE_PREFIX


@dataclass(frozen=True, kw_only=True)
class KruiseArgs:
    """The release a builder computed (builders.kruise.kruise_release) and the member's provider."""

    release: HelmRelease
    provider: k8s.Provider


class Kruise(pulumi.ComponentResource):
    """kruise-manager, kruise-daemon, the CRDs and webhooks, installed by a real Helm release."""

    release: k8s.helm.v3.Release

    def __init__(
        self, name: str, args: KruiseArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}:Kruise", name, None, opts)
        spec = args.release
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=spec.release,
            chart=spec.chart,
            version=spec.version,
            repository_opts={"repo": spec.repo} if spec.repo else None,
            # The chart creates kruise-system itself (see builders.kruise); the release record
            # goes to a namespace that exists.
            namespace=spec.namespace,
            create_namespace=False,
            values=spec.values,
            timeout=600,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider),
        )
        self.register_outputs({"status": self.release.status})
