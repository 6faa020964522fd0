"""OpenKruise: Helm values for members, and the CRD-only install for the Karmada API server. Pure.

Chart facts (openkruise/charts, `versions/kruise/<v>/`; read at tags kruise-1.8.3 and
kruise-1.9.0-alpha4, whose values.yaml differ only in the image tag, and on master `next`):
- `featureGates` is one comma-separated string passed to kruise-manager and kruise-daemon;
  the chart default is "ImagePullJobGate=true", so we merge over it instead of replacing it.
- The chart renders the `kruise-system` Namespace itself (`installation.createNamespace`) with
  the label `control-plane: openkruise`, which its own pod webhook (failurePolicy Fail) skips.
  A namespace made by `helm --create-namespace` lacks that label, and kruise-manager's pods
  would then wait on the webhook they serve. So the release record lives in `default` (as in
  upstream's README `helm install kruise openkruise/kruise`) and the chart makes kruise-system.
- kruise-daemon (hostNetwork, mounts the CRI socket: it cannot run on ACI) has hard-coded
  `tolerations: [{operator: Exists}]`, so taints do not keep it off virtual nodes. Only its
  `daemon.affinity` does; since chart 1.7.0 the default is a required nodeAffinity
  `type NotIn [virtual-kubelet]` (the label AKS virtual nodes carry). We set the same value
  explicitly so that a changed chart default cannot silently put it back on virtual nodes.
- kruise-manager has no tolerations by default; AKS system pools here carry
  CriticalAddonsOnly, and a dev worker's user pools scale from zero, so we let the manager
  (a cluster add-on) run on the system pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from builders.manifest import HelmRelease
from config.karmada import KruiseSettings
from upstream.aks import CRITICAL_ADDONS_TAINT, VIRTUAL_NODE_LABELS

CHART: Final = "kruise"
REPO: Final = "https://openkruise.github.io/charts"
RELEASE: Final = "kruise"
RELEASE_NAMESPACE: Final = "default"
NAMESPACE: Final = "kruise-system"
CHART_FEATURE_GATES: Final = {"ImagePullJobGate": True}

# The chart's default `daemon.affinity` (values.yaml since 1.7.0, unchanged in 1.9.0-alpha4).
CHART_DAEMON_AFFINITY: Final[dict[str, Any]] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]}
                    ]
                }
            ]
        }
    }
}


def feature_gates(gates: Mapping[str, bool]) -> str:
    """Chart default gates, overridden by config, as the chart's `A=true,B=false` string."""
    merged = {**CHART_FEATURE_GATES, **gates}
    return ",".join(f"{name}={'true' if on else 'false'}" for name, on in sorted(merged.items()))


def critical_addons_toleration() -> dict[str, str]:
    """Tolerates the system pool's CriticalAddonsOnly taint (any value, any effect)."""
    key = CRITICAL_ADDONS_TAINT.partition("=")[0]
    return {"key": key, "operator": "Exists"}


def daemon_affinity() -> dict[str, Any]:
    """Required nodeAffinity keeping kruise-daemon off AKS virtual nodes."""
    expression = {"key": "type", "operator": "NotIn", "values": [VIRTUAL_NODE_LABELS["type"]]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expression]}]
            }
        }
    }


def kruise_values(settings: KruiseSettings, *, on_aks: bool) -> dict[str, Any]:
    """Values for the pinned `kruise` chart on one member cluster."""
    aks = settings.aks_integration if settings.aks_integration is not None else on_aks
    return {
        "installation": {"namespace": NAMESPACE, "createNamespace": True},
        # Chart 1.9.0: on AKS, exclude namespaces labelled control-plane=true or
        # kubernetes.azure.com/managedby=aks from every webhook. Otherwise the pod webhook
        # (failurePolicy Fail) also gates AKS's own namespaces, and AKS's admissions enforcer
        # rewrites the selectors (drift from the release).
        "webhookConfiguration": {"aksIntegration": aks},
        "featureGates": feature_gates(settings.feature_gates),
        "manager": {
            "replicas": settings.manager_replicas,
            "tolerations": [critical_addons_toleration()],
        },
        "daemon": {"affinity": daemon_affinity()},
    }


def kruise_release(member: str, settings: KruiseSettings, *, on_aks: bool) -> HelmRelease:
    return HelmRelease(
        target=member,
        release=RELEASE,
        chart=CHART,
        version=settings.chart_version,
        namespace=RELEASE_NAMESPACE,
        values=kruise_values(settings, on_aks=on_aks),
        repo=REPO,
    )
