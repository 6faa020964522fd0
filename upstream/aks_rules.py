"""AKS's server-side rules: what the AKS resource provider (or ARM) refuses at create or update time
that no Azure API model declares. One entry a rule; `checks.aks_rules` enforces each with a key
path, and docs/checks.md lists them (a test holds the table and this catalogue equal).

Each rule says what AKS refuses, the error code where one is known, where the rule is stated (an
AKS doc page or an issue thread quoting the refusal) and when it was read. Rules whose source is a
refusal quoted in a tracker are as exact as that quote; rules from a doc page are as exact as the
page. Re-read a rule before relying on it past its date.

Families: networking, versions, pools, identity, access, regions.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Final, Literal

Family = Literal["networking", "versions", "pools", "identity", "access", "regions"]
# How the project holds a rule: preflight (and the program, first) refuses a config that breaks
# it (`check`), or the program builds every request so that it cannot (`program`), or both.
Held = Literal["check", "program", "check+program"]

READ: Final = "2026-12-05"


@dataclass(frozen=True, slots=True)
class AksRule:
    """One thing AKS refuses: what, the error code, where it is stated, when that was read."""

    id: str
    family: Family
    refuses: str
    source: str
    code: str | None = None
    held: Held = "check"
    read: str = READ

    def cite(self) -> str:
        """The rule as a message tail: what AKS refuses, then (code; source)."""
        where = f"{self.code}; {self.source}" if self.code else self.source
        return f"{self.refuses} ({where})"


_RULES: tuple[AksRule, ...] = (
    # --- networking -------------------------------------------------------------------------
    AksRule(
        "service-cidr-reserved",
        "networking",
        "AKS clusters may not use 169.254.0.0/16, 172.30.0.0/16, 172.31.0.0/16 or 192.0.2.0/24 "
        "for the Kubernetes service address range",
        "learn.microsoft.com/azure/aks/configure-azure-cni, prerequisites",
    ),
    AksRule(
        "service-cidr-size",
        "networking",
        "the Kubernetes API server refuses a service range larger than /12 (more than 20 host "
        "bits for IPv4)",
        "kubernetes/kubernetes cmd/kube-apiserver/app/options/validation.go, "
        "validateMaxCIDRRange: 'for 32-bit addresses, the mask must be >= 12'",
    ),
    AksRule(
        "outbound-ip-identity",
        "identity",
        "a load balancer outbound Public IP outside the node resource group needs the cluster "
        "identity to hold join rights on it before the cluster uses it; a system-assigned "
        "identity exists only after the create",
        "Azure/AKS#1945; learn.microsoft.com/azure/aks/load-balancer-standard, "
        "'Provide your own outbound public IPs'",
        "LinkedAuthorizationFailed",
        held="program",
    ),
    # --- pools ------------------------------------------------------------------------------
    AksRule(
        "spot-max-surge",
        "pools",
        "Spot pools can't set max surge (agentPoolProfile.upgrade.maxSurge)",
        "hashicorp/terraform-provider-azurerm#19355; Azure/bicep-types-az#2217",
        "InvalidParameter",
        held="check+program",
    ),
    AksRule(
        "spot-max-price",
        "pools",
        "a Spot pool's max price is -1 (pay up to the on-demand price) or a positive US dollar "
        "price with at most 5 decimal places",
        "learn.microsoft.com/azure/aks/spot-node-pool, 'Max price for a spot pool'",
    ),
    AksRule(
        "system-pool-pods",
        "pools",
        "a system node pool must support at least 30 pods (maxPods x nodes)",
        "learn.microsoft.com/azure/aks/use-system-pools, 'System and user node pools'",
    ),
    AksRule(
        "system-pool-vm",
        "pools",
        "system node pools need a VM size with at least 2 vCPUs and 4 GB of memory, and no "
        "B-series size",
        "learn.microsoft.com/azure/aks/use-system-pools, 'Limitations'",
    ),
    # --- versions ---------------------------------------------------------------------------
    AksRule(
        "system-pool-version",
        "versions",
        "a node pool may be at most three minors behind its control plane; a control plane "
        "whose minor moves while its system pool keeps its own is refused once the skew is "
        "exceeded, and the system pool is not upgraded with the control plane unless its "
        "orchestratorVersion is sent too",
        "Azure/AKS#2905, #3087; learn.microsoft.com/azure/aks/supported-kubernetes-versions",
        held="program",
    ),
    # --- identity ---------------------------------------------------------------------------
    AksRule(
        "principal-type",
        "identity",
        "a role assignment whose principalType does not match its principal (User for a "
        "service principal or managed identity) is refused; azure-native sends User when no "
        "type is given",
        "Azure/modern-web-app-pattern-dotnet#129 (the refusal quoted); "
        "learn.microsoft.com/azure/role-based-access-control/role-assignments-template",
        "UnmatchedPrincipalType",
        held="program",
    ),
    # --- access -----------------------------------------------------------------------------
    AksRule(
        "authorized-ranges-count",
        "access",
        "at most 200 authorized IP ranges on one API server, counting every range sent "
        "(the program's own egress /32s too)",
        "learn.microsoft.com/azure/aks/api-server-authorized-ip-ranges, 'Limitations'; "
        "MicrosoftDocs/azure-docs#81008",
    ),
    AksRule(
        "authorized-ranges-zero",
        "access",
        "0.0.0.0/32 (the 'allow only the cluster's egress' form) is not allowed with other IP "
        "ranges",
        "Azure/terraform-azurerm-aks#378",
        "InvalidParameter",
    ),
    AksRule(
        "authorized-ranges-public",
        "access",
        "authorized IP ranges are matched against public source addresses: a documentation "
        "(RFC 5737), private, shared, loopback or link-local range admits nobody, and a stack "
        "that lists only such ranges locks its own runner out",
        "learn.microsoft.com/azure/aks/api-server-authorized-ip-ranges; "
        "MicrosoftDocs/azure-docs#113991",
    ),
    # --- regions ----------------------------------------------------------------------------
    AksRule(
        "region-name",
        "regions",
        "ARM refuses a location that is not one of Azure's region names",
        "learn.microsoft.com/rest/api/resources/subscriptions/list-locations",
        "LocationNotAvailableForResourceGroup",
    ),
    AksRule(
        "shared-resource-group",
        "regions",
        "two stacks that name the same resource group (in one subscription) claim the same "
        "clusters: each `up` updates the other's, and each destroy deletes both",
        "ARM: a resource is identified by subscription, resource group, type and name",
    ),
)

RULES: Final[dict[str, AksRule]] = {r.id: r for r in _RULES}

# The ranges `authorized-ranges-public` means, with why each admits nobody on the Internet.
NON_PUBLIC_RANGES: Final[tuple[tuple[IPv4Network, str], ...]] = (
    (IPv4Network("192.0.2.0/24"), "a documentation range (RFC 5737, TEST-NET-1)"),
    (IPv4Network("198.51.100.0/24"), "a documentation range (RFC 5737, TEST-NET-2)"),
    (IPv4Network("203.0.113.0/24"), "a documentation range (RFC 5737, TEST-NET-3)"),
    (IPv4Network("10.0.0.0/8"), "a private range (RFC 1918)"),
    (IPv4Network("172.16.0.0/12"), "a private range (RFC 1918)"),
    (IPv4Network("192.168.0.0/16"), "a private range (RFC 1918)"),
    (IPv4Network("100.64.0.0/10"), "shared address space (RFC 6598)"),
    (IPv4Network("127.0.0.0/8"), "loopback"),
    (IPv4Network("169.254.0.0/16"), "link-local"),
)
# How to find the range to write instead (docs/security.md, "Exposure").
EGRESS_HINT: Final = (
    "list your runners' and admins' public egress (`curl -s https://api.ipify.org` prints this "
    "machine's; GitHub-hosted runners: use self-hosted runners or a NAT with a static IP)"
)

MAX_AUTHORIZED_RANGES: Final = 200
SERVICE_CIDR_MIN_PREFIX: Final = 12
RESERVED_SERVICE_RANGES: Final = tuple(
    IPv4Network(r) for r in ("169.254.0.0/16", "172.30.0.0/16", "172.31.0.0/16", "192.0.2.0/24")
)
SYSTEM_POOL_MIN_PODS: Final = 30
SYSTEM_POOL_MIN_VCPUS: Final = 2
SYSTEM_POOL_MIN_MEMORY_MIB: Final = 4096
SPOT_PRICE_DECIMALS: Final = 5

# Azure's public-cloud region names (`az account list-locations --query "[].name"`, physical
# regions), written on READ from Azure's published region list; not read from a live
# subscription here (no Azure). A name that is not here but close to one is refused as a typo; any
# other unknown name is a warning (Azure may have opened a region after READ).
REGIONS: Final = frozenset(
    {
        "australiacentral",
        "australiacentral2",
        "australiaeast",
        "australiasoutheast",
        "austriaeast",
        "belgiumcentral",
        "brazilsouth",
        "brazilsoutheast",
        "canadacentral",
        "canadaeast",
        "centralindia",
        "centralus",
        "chilecentral",
        "denmarkeast",
        "eastasia",
        "eastus",
        "eastus2",
        "francecentral",
        "francesouth",
        "germanynorth",
        "germanywestcentral",
        "indonesiacentral",
        "israelcentral",
        "italynorth",
        "japaneast",
        "japanwest",
        "jioindiacentral",
        "jioindiawest",
        "koreacentral",
        "koreasouth",
        "malaysiawest",
        "mexicocentral",
        "newzealandnorth",
        "northcentralus",
        "northeurope",
        "norwayeast",
        "norwaywest",
        "polandcentral",
        "qatarcentral",
        "southafricanorth",
        "southafricawest",
        "southcentralus",
        "southeastasia",
        "southindia",
        "spaincentral",
        "swedencentral",
        "swedensouth",
        "switzerlandnorth",
        "switzerlandwest",
        "uaecentral",
        "uaenorth",
        "uksouth",
        "ukwest",
        "westcentralus",
        "westeurope",
        "westindia",
        "westus",
        "westus2",
        "westus3",
    }
)
