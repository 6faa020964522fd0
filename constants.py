"""Names that the program, preflight and tests share: project, config key, outputs, pins.

Every external version pin that is not a Python package lives here (Python packages: pyproject.toml
and uv.lock). Changing a pin is a one-line change plus the tests that check it against
../shared/crds.
"""

from typing import Final

PROJECT: Final = "aks-batch-fleet"
CONFIG_KEY: Final = "fleet"
TYPE_PREFIX: Final = "fleet:index"

# Stack outputs users rely on (README "Outputs").
OUT_KUBECONFIGS: Final = "kubeconfigs"
OUT_CLUSTER_NAMES: Final = "clusterNames"
OUT_API_SERVERS: Final = "apiServerFqdns"
OUT_RESOURCE_GROUP: Final = "resourceGroup"
OUT_OIDC_ISSUERS: Final = "oidcIssuerUrls"

# Kubernetes versions: Kueue needs >= 1.29; the ProvisioningRequest gate on AKS needs >= 1.33.
MIN_KUBERNETES: Final = (1, 29)
MIN_KUBERNETES_PROVISIONING: Final = (1, 33)

# Azure built-in role: Network Contributor (for the ACI connector and a cluster in a BYO subnet).
ROLE_NETWORK_CONTRIBUTOR: Final = "4d97b98b-1d4f-4787-a291-c67834d212e7"
ACI_DELEGATION: Final = "Microsoft.ContainerInstance/containerGroups"
ACI_ADDON: Final = "aciConnectorLinux"
