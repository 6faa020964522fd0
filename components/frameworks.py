"""Job operators on one cluster: operators on a worker, CRDs on the manager."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from builders.frameworks import Kustomization
from builders.manifest import HelmRelease
from constants import TYPE_PREFIX

# The operator's Deployment must be Available before `up` moves on: a worker that MultiKueue
# reaches while its operator is still starting holds dispatched jobs with no pods.
OPERATOR_TIMEOUT_SECONDS = 600


@dataclass(frozen=True, kw_only=True)
class JobOperatorsArgs:
    """What one cluster gets (builders.frameworks) and its provider."""

    provider: k8s.Provider
    # A worker: the operators' Helm releases and kustomize overlays (each brings its CRDs).
    releases: Sequence[HelmRelease] = ()
    kustomizations: Sequence[Kustomization] = ()
    # The training operator's overlay on disk (checks.frameworks.operator_files).
    overlay_dir: str | None = None
    # The manager: the pinned CRD files of the enabled kinds, and no controller.
    crd_files: Sequence[str] = ()


class JobOperators(pulumi.ComponentResource):
    """The job operators of one worker, or the kinds' CRDs alone on the manager."""

    ready: list[pulumi.Resource]

    def __init__(
        self, name: str, args: JobOperatorsArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(f"{TYPE_PREFIX}:JobOperators", name, None, opts)
        on_cluster = pulumi.ResourceOptions(parent=self, provider=args.provider)
        self.ready = []
        for spec in args.releases:
            self.ready.append(
                k8s.helm.v3.Release(
                    f"{name}-{spec.release}",
                    name=spec.release,  # explicit: the chart's object names derive from it
                    chart=spec.chart,
                    version=spec.version,
                    repository_opts={"repo": spec.repo} if spec.repo else None,
                    namespace=spec.namespace,
                    create_namespace=True,
                    values=spec.values,
                    skip_await=False,
                    atomic=True,
                    timeout=OPERATOR_TIMEOUT_SECONDS,
                    max_history=10,
                    opts=on_cluster,
                )
            )
        for kz in args.kustomizations:
            if args.overlay_dir is None:
                raise ValueError(f"{name}: no overlay directory for {kz.module}@{kz.version}")
            self.ready.append(
                k8s.kustomize.v2.Directory(
                    f"{name}-{kz.module.rsplit('/', 1)[-1]}",
                    directory=args.overlay_dir,
                    opts=on_cluster,
                )
            )
        if args.crd_files:
            # Server-side apply, as Kueue's own CRDs: the files are large.
            self.ready.append(
                k8s.yaml.v2.ConfigGroup(f"{name}-crds", files=list(args.crd_files), opts=on_cluster)
            )
        self.register_outputs({})
