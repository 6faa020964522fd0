"""`operators`: the job operators this stack installs for Kueue frameworks, or says run elsewhere.

A framework in `kueue.frameworks` other than Kueue's built-in kinds needs its CRD on the manager
and its operator on every worker MultiKueue sends it to (upstream/frameworks.py). This section
says which operator the stack installs, where, in which pinned version, and which frameworks some
other installer provides. The rules across fields (versions, workers, coverage) are in
checks/frameworks.py.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from config.base import Model
from config.types import ClusterName, Quantity
from upstream.frameworks import KUBERAY, TRAINING_OPERATOR

# '1.5.0' or 'v1.5.0' (a release, not a range): what a Helm chart or Go module is published as.
Release = Annotated[str, StringConstraints(pattern=r"^v?\d+\.\d+\.\d+$", max_length=32)]
FrameworkName = Annotated[str, StringConstraints(min_length=1, max_length=128)]


class ResourceList(Model):
    """cpu and memory of a container (Kubernetes quantities)."""

    cpu: Quantity | None = None
    memory: Quantity | None = None


class Resources(Model):
    """The operator container's requests and limits."""

    requests: ResourceList | None = None
    limits: ResourceList | None = None


class OperatorSettings(Model):
    """One operator: its pinned version, the workers that run it, typed values."""

    # Default every `role: worker` cluster (and no standalone one); never the manager.
    workers: list[ClusterName] | None = Field(default=None, max_length=1000)


class KubeRaySettings(OperatorSettings):
    """KubeRay (ray.io/rayjob, ray.io/raycluster): the `kuberay-operator` Helm chart."""

    chart_version: Release = KUBERAY.default_version
    resources: Resources | None = None  # chart value `resources`


class TrainingOperatorSettings(OperatorSettings):
    """The Kubeflow training operator (kubeflow.org/pytorchjob, ...): its kustomize overlay.

    Applied as upstream publishes it: the overlay has no values to type.
    """

    version: Release = TRAINING_OPERATOR.default_version


class InstalledElsewhere(Model):
    """A framework whose CRDs and operator someone else installs, in the version named."""

    version: Release
    # Who installs it (a team, a GitOps repository): shown in the plan, nothing checks it.
    by: str | None = Field(default=None, min_length=1, max_length=200)


class OperatorsSettings(Model):
    """The job operators for `kueue.frameworks` beyond Kueue's built-in kinds."""

    kuberay: KubeRaySettings | None = None
    training_operator: TrainingOperatorSettings | None = None
    # Kueue framework name -> the version running on the manager (CRDs) and workers (operator).
    installed_elsewhere: dict[FrameworkName, InstalledElsewhere] = Field(
        default_factory=dict[str, InstalledElsewhere], max_length=32
    )
