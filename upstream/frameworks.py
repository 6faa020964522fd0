"""Per-version facts of the job operators the stack can install for Kueue frameworks.

MultiKueue dispatches a RayJob or a PyTorchJob by creating it on the manager with
`managedBy: kueue.x-k8s.io/multikueue` (the operator there must leave it alone) and copying it to a
worker without that field (the operator there runs it). So the manager holds only the kinds' CRDs,
and every worker a queue dispatches to runs the operator, in a version that honours `managedBy`.

Sources, read 2026-12-05 from the Go module proxy (`go mod download -json MODULE@VERSION`, never
committed) and from the Kueue v0.19.2 tag:
- KubeRay: module github.com/ray-project/kuberay/ray-operator@v1.5.0 (h1:KCjCQ7PS...):
  apis/ray/v1/rayjob_types.go and raycluster_types.go carry `spec.managedBy` (immutable, values
  'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'), CRDs in config/crd/bases/. Its Helm
  chart `kuberay-operator` is published at https://ray-project.github.io/kuberay-helm/ with the
  same version as the operator (ray-project/kuberay-helm; docs.ray.io "KubeRay Operator
  Installation"). `managedBy` first shipped in KubeRay 1.3.0 (RayJob and RayCluster).
- Kubeflow training operator: module github.com/kubeflow/training-operator. v1.8.1 (h1:mVvoBSCI...)
  has no `managedBy` anywhere in pkg/apis/kubeflow.org/v1 (grep of the module); v1.9.3
  (h1:aaSHqskO...), the version Kueue v0.19.2's go.mod requires, has `runPolicy.managedBy`
  (common_types.go:231-239, constant MultiKueueController). Upstream installs it with kustomize
  (manifests/overlays/standalone: namespace `kubeflow`, image
  ghcr.io/kubeflow/training-v1/training-operator:v1-d6eb98e); there is no chart.
- Kueue v0.19.2: pkg/controller/jobs/ray/ray_multikueue_adapter.go (RayJob, RayCluster) and
  pkg/controller/jobs/kubeflow/kubeflowjob/kubeflowjob_multikueue_adapter.go (the kubeflow.org
  kinds): what the manager's credential does on a worker (upstream/kueue_rbac.py, ADAPTER_RULES).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# The value Kueue's MultiKueue writes into a dispatched job's managedBy field.
MULTIKUEUE_MANAGED_BY: Final = "kueue.x-k8s.io/multikueue"


def version_tuple(version: str) -> tuple[int, ...]:
    """'v1.9.3' or '1.9.3' -> (1, 9, 3); a part that is no number counts as 0."""
    parts = version.removeprefix("v").split("-", 1)[0].split(".")
    return tuple(int(p) if p.isdigit() else 0 for p in parts)


@dataclass(frozen=True, slots=True)
class Operator:
    """One job operator the stack can install on workers, and the facts preflight judges."""

    key: str  # its config key under `operators`
    title: str
    frameworks: tuple[str, ...]  # Kueue framework names it runs
    crd_files: dict[str, str]  # framework -> pinned CRD file (.cache/crds/<project>/v<version>/)
    project: str  # .cache/crds/<project>
    module: str  # Go module holding its CRDs (scripts/crd-pins.json)
    pinned: tuple[str, ...]  # versions whose CRDs are pinned (manager) and that it installs
    default_version: str
    managed_by_since: str  # the first release whose kinds honour managedBy
    managed_by_field: str  # where the field sits, for messages
    namespace: str
    install: str  # how the stack installs it on a worker, for the plan and docs


KUBERAY: Final = Operator(
    key="kuberay",
    title="KubeRay operator",
    frameworks=("ray.io/rayjob", "ray.io/raycluster"),
    crd_files={
        "ray.io/rayjob": "ray.io_rayjobs.yaml",
        "ray.io/raycluster": "ray.io_rayclusters.yaml",
    },
    project="kuberay",
    module="github.com/ray-project/kuberay/ray-operator",
    pinned=("1.5.0",),
    default_version="1.5.0",
    managed_by_since="1.3.0",
    managed_by_field="spec.managedBy",
    namespace="kuberay-system",
    install="Helm chart kuberay-operator (https://ray-project.github.io/kuberay-helm/)",
)
KUBERAY_CHART: Final = "kuberay-operator"
KUBERAY_REPO: Final = "https://ray-project.github.io/kuberay-helm/"

# Kueue's kubeflow.org/mpijob is mpi-operator's v2beta1 MPIJob, not the training operator's v1
# MPIJob: it is not offered here.
TRAINING_OPERATOR: Final = Operator(
    key="trainingOperator",
    title="Kubeflow training operator",
    frameworks=(
        "kubeflow.org/pytorchjob",
        "kubeflow.org/tfjob",
        "kubeflow.org/xgboostjob",
        "kubeflow.org/paddlejob",
        "kubeflow.org/jaxjob",
    ),
    crd_files={
        "kubeflow.org/pytorchjob": "kubeflow.org_pytorchjobs.yaml",
        "kubeflow.org/tfjob": "kubeflow.org_tfjobs.yaml",
        "kubeflow.org/xgboostjob": "kubeflow.org_xgboostjobs.yaml",
        "kubeflow.org/paddlejob": "kubeflow.org_paddlejobs.yaml",
        "kubeflow.org/jaxjob": "kubeflow.org_jaxjobs.yaml",
    },
    project="training-operator",
    module="github.com/kubeflow/training-operator",
    pinned=("1.9.3",),
    default_version="1.9.3",
    managed_by_since="1.9.0",
    managed_by_field="spec.runPolicy.managedBy",
    namespace="kubeflow",
    install="kustomize overlay manifests/overlays/standalone of the pinned Go module",
)
# Inside the pinned module (the Go module cache scripts/fetch-crds fills): the upstream overlay.
TRAINING_OPERATOR_OVERLAY: Final = "manifests/overlays/standalone"

OPERATORS: Final = (KUBERAY, TRAINING_OPERATOR)


def operator_for(framework: str) -> Operator | None:
    """The operator this stack can install for a Kueue framework name, if any."""
    return next((o for o in OPERATORS if framework in o.frameworks), None)


def supports_managed_by(operator: Operator, version: str) -> bool:
    return version_tuple(version) >= version_tuple(operator.managed_by_since)
