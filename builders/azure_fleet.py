"""The fleet's Azure resources beside its clusters: the resource group, the static egress Public IPs
and the Karmada API server's Public IP, each as the one list its component registers.

components/fleet.py registers `fleet_resources`, components/karmada.py `karmada_resources`, each
in a loop (components/azure.py); preflight checks the same lists (builders/azure.py).
"""

from __future__ import annotations

from typing import Any

from builders import karmada as kb
from builders.azure_resource import (
    PUBLIC_IP,
    RESOURCE_GROUP,
    VALUE,
    AzureResource,
    Ref,
    fleet_tags,
)
from builders.egress import egress_clusters, egress_ip_name
from config.models import FleetConfig
from constants import resource_group_of

# The resource group's name in `fleet_resources`; a static egress IP's is `<caller>-egress`.
GROUP = "rg"
EGRESS_SUFFIX = "-egress"
# The Karmada Public IP's name in `karmada_resources`, and the value made outside its list: the
# host cluster's node resource group, where the IP goes.
KARMADA_IP = "ip"
NODE_RESOURCE_GROUP = "@node-resource-group"


def _static_ip(name: str, group: Ref, location: str, tags: dict[str, str]) -> dict[str, Any]:
    return {
        "public_ip_address_name": name,
        "resource_group_name": group,
        "location": location,
        "sku": {"name": "Standard", "tier": "Regional"},
        "public_ip_allocation_method": "Static",
        "public_ip_address_version": "IPv4",
        "tags": tags,
    }


def fleet_resources(fleet: FleetConfig, stack: str) -> list[AzureResource]:
    """The resource group, then the static egress Public IP of each cluster others admit
    (builders.egress); none without an AKS cluster. Named by the Fleet component's prefix."""
    if not any(c.source == "aks" for c in fleet.clusters):
        return []
    tags = fleet_tags(fleet, stack)
    name = resource_group_of(fleet.resource_group, stack)
    group = {
        "resource_group_name": name,
        **({"location": fleet.location} if fleet.location else {}),
        "tags": tags,
    }
    out = [AzureResource(RESOURCE_GROUP, GROUP, group)]
    # Static egress first, for the clusters others admit: a worker's ranges name the manager's
    # egress IP, and no cluster waits on another cluster (builders.egress).
    for caller in egress_clusters(fleet):
        cfg = fleet.cluster(caller)
        location = (cfg.location if cfg is not None else None) or fleet.location or ""
        ip = _static_ip(egress_ip_name(caller), Ref(GROUP, "name", planned=name), location, tags)
        out.append(AzureResource(PUBLIC_IP, f"{caller}{EGRESS_SUFFIX}", ip))
    return out


def karmada_resources(fleet: FleetConfig, stack: str) -> list[AzureResource]:
    """The Karmada API server's static Public IP when the stack makes one: Karmada installed on an
    AKS host, exposed publicly. Named by the Karmada component's prefix."""
    settings = fleet.karmada
    if (
        settings is None
        or settings.source == "existing"
        or kb.internal_address(settings) is not None
    ):
        return []
    host = kb.host_cluster(fleet)
    if host.source != "aks":
        return []
    # In the node resource group: the cluster identity already manages that group, so no extra
    # role assignment is needed (elsewhere it would need Network Contributor on the whole group,
    # because the cloud provider lists the group's IPs).
    group = Ref(NODE_RESOURCE_GROUP, VALUE)
    ip = _static_ip(
        kb.public_ip_name(host.name), group, kb.location_of(fleet, host), fleet_tags(fleet, stack)
    )
    label = settings.api_server.dns_label
    if label:
        ip["dns_settings"] = {"domain_name_label": label}
    return [AzureResource(PUBLIC_IP, KARMADA_IP, ip)]
