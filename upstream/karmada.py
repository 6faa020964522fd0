"""Karmada v1.18.2 and OpenKruise v1.9.0 facts the config and builders rely on.

Chart pins: Karmada charts carry a leading "v"; OpenKruise charts do not, and their appVersion (the
kruise-manager image and the git tag the CRDs come from) is "v" + chart version.
"""

from __future__ import annotations

import re
from typing import Final

DEFAULT_KARMADA_CHART_VERSION: Final = "v1.18.2"
DEFAULT_KRUISE_CHART_VERSION: Final = "1.9.0"

# The Kubernetes minors their own CI runs members on (docs/upgrades.md; facts, not rules):
# Karmada v1.18.2 `.github/workflows/ci.yml` e2e matrix v1.33.0-v1.35.0, built against client-go
# 0.35.3; OpenKruise v1.9.1 e2e workflows up to kind 1.32, built against k8s.io 0.32.10.
KARMADA_TESTED_KUBERNETES: Final = ((1, 33), (1, 35))
KRUISE_TESTED_KUBERNETES: Final = ((1, 24), (1, 32))

# A Karmada cluster name is a DNS-1123 label of at most 48 characters (the execution namespace
# karmada-es-<name> must stay a label): pkg/apis/cluster/validation/validation.go.
CLUSTER_NAME_MAX: Final = 48
# Namespaces whose objects Karmada never propagates (names.IsReservedNamespace, and the
# controller-manager default --skipped-propagating-namespaces=kube-.*).
RESERVED_NAMESPACES: Final = ("karmada-system", "karmada-cluster")
RESERVED_NAMESPACE_PREFIXES: Final = ("karmada-es-", "kube-")
# Kubernetes-style feature gate names (k8s.io/component-base/featuregate).
FEATURE_GATE: Final = re.compile(r"^[A-Z][A-Za-z0-9]*$")

# The Karmada API server needs only the kinds we create there: UnitedDeployment. Its subset
# workloads (CloneSet, StatefulSet, ...) are made by kruise-manager inside each member. The
# StatefulSet CRD also carries a conversion webhook that would point at nothing there.
KARMADA_CRD_FILES: Final = ("apps.kruise.io_uniteddeployments.yaml",)


def kruise_app_version(chart_version: str) -> str:
    """The kruise-manager image tag and the git tag of the CRDs for a chart version."""
    return f"v{chart_version}"
