"""Names that the program, preflight and tests share: project, its directory, config key, outputs.

Version pins live next to what they pin: Python packages in pyproject.toml/uv.lock, charts and
per-version facts in upstream/ (kueue.py, karmada.py), CRD schemas in scripts/crd-pins.json;
docs/architecture.md "Pins" lists every one.
"""

from pathlib import Path
from typing import Final

PROJECT: Final = "aks-batch-fleet"
# The project's directory: the stack files, scripts/crd-pins.json and the fetched CRDs under it.
PROJECT_ROOT: Final = Path(__file__).resolve().parent
CONFIG_KEY: Final = "fleet"
TYPE_PREFIX: Final = "fleet:index"

# Stack outputs users rely on (docs/configuration.md "Outputs").
OUT_KUBECONFIGS: Final = "kubeconfigs"
OUT_CLUSTER_NAMES: Final = "clusterNames"
OUT_API_SERVERS: Final = "apiServerFqdns"
OUT_RESOURCE_GROUP: Final = "resourceGroup"
OUT_OIDC_ISSUERS: Final = "oidcIssuerUrls"
OUT_KARMADA_KUBECONFIG: Final = "karmadaKubeconfig"
OUT_QUEUES: Final = "queues"

# Tags the program puts on every Azure resource (besides the config's own): they count against
# Azure's limit of 50 a resource, and obey its name rules (no '/': ARM refuses it).
TAG_MANAGED_BY: Final = "managed-by"
TAG_STACK: Final = "stack"
TAG_CLUSTER: Final = "aks-batch-fleet-cluster"
PROGRAM_TAGS: Final = (TAG_MANAGED_BY, TAG_STACK, TAG_CLUSTER)

# Kubernetes versions: Kueue needs >= 1.29 (the ProvisioningRequest gate's minimum on AKS is an
# upstream fact: upstream/aks.py PROVISIONING_REQUEST_SINCE).
MIN_KUBERNETES: Final = (1, 29)

ACI_DELEGATION: Final = "Microsoft.ContainerInstance/containerGroups"
ACI_ADDON: Final = "aciConnectorLinux"

# pulumi-kubernetes readiness annotation: the object counts as created only once this holds.
WAIT_FOR: Final = "pulumi.com/waitFor"
# Server-side apply with force on every object the program owns (components/kube.py `owned`):
# a killed `up` leaves the objects it was creating owned by its own random field manager, and
# without force the next change of such a field fails with an SSA conflict against that dead
# manager (found by tests/realtier/test_faults_deploy.py).
PATCH_FORCE: Final = "pulumi.com/patchForce"
# pulumi-kubernetes: how long create/update waits for that (default 10 minutes), in seconds.
TIMEOUT_SECONDS: Final = "pulumi.com/timeoutSeconds"
# A waitFor on the value of a Kueue object's Active condition, blind to its observedGeneration.
# Kueue v0.19.2 writes a MultiKueueCluster's or provisioning AdmissionCheck's status only when
# the condition's status, reason or message change (multikueuecluster.go updateStatus and
# admissioncheck_reconciler.go; kueue#15962/#15989 fixed it after v0.19.2), so after an
# in-place spec change its condition keeps the old observedGeneration and `condition=Active`,
# which requires it current, never holds. The provider's JSONPath wait looks only at a
# top-level status.observedGeneration, which neither kind has (pulumi-kubernetes 4.25.0,
# await/condition/jsonpath.go).
ACTIVE_STATUS: Final = 'jsonpath={.status.conditions[?(@.type=="Active")].status}=True'

# The kubernetes provider plugin every cluster's Provider runs: the version the real tier tests
# (scripts/build-real-tier-tools builds it: the module proxy serves only that commit), not the
# 4.34.2 the locked Python SDK would ask for. The SDK's generated resources take a provider's
# `version` option over their own default, so this is the plugin `pulumi up` loads. Changing it
# means running the real tier against the new provider (docs/architecture.md "Pins").
KUBERNETES_PROVIDER_VERSION: Final = "4.25.0"

# The project's MultiKueue objects on the manager: the default AdmissionCheck and MultiKueueConfig
# (a queue with its own workers gets `multikueue-<queue>`).
MULTIKUEUE_ADMISSION_CHECK: Final = "multikueue"
MULTIKUEUE_CONFIG: Final = "multikueue"


def resource_group_of(configured: str | None, stack: str) -> str:
    """The stack's resource group: `resourceGroup`, else `aks-batch-fleet-<stack>`."""
    return configured or f"{PROJECT}-{stack}"
