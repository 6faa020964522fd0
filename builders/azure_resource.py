"""An Azure resource as a builder states it: token, name, arguments and needs. Shared by the lists.

Each of the program's Azure lists (a cluster's, builders/azure_cluster.py; the resource group and
egress IPs, builders/azure_fleet.py; the Karmada address, ibid.; Managed Prometheus,
builders/azure_monitor.py) is registered in a loop by its component (components/azure.py) and
checked by preflight (builders/azure.py, checks/azure_api.py): the one spelling of every
property. Arguments are the azure-native SDK's snake_case keyword arguments; what only the deploy
knows (an id, a principal id, the resource group's name as created) is a `Ref` the component
resolves to an Output and preflight to the value the program planned, or `KNOWN_AFTER_DEPLOY`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from config.models import FleetConfig
from constants import PROJECT, TAG_MANAGED_BY, TAG_STACK, resource_group_of

KNOWN_AFTER_DEPLOY = "(known after deploy)"

# The tokens of what the lists hold (components/azure.py maps each to its azure-native class).
RESOURCE_GROUP = "azure-native:resources:ResourceGroup"
PUBLIC_IP = "azure-native:network:PublicIPAddress"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"
MAINTENANCE = "azure-native:containerservice:MaintenanceConfiguration"
USER_CREDENTIALS = "azure-native:containerservice:listManagedClusterUserCredentials"
VNET = "azure-native:network:VirtualNetwork"
SUBNET = "azure-native:network:Subnet"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
MONITOR_WORKSPACE = "azure-native:monitor:AzureMonitorWorkspace"
DATA_COLLECTION_ENDPOINT = "azure-native:monitor:DataCollectionEndpoint"
DATA_COLLECTION_RULE = "azure-native:monitor:DataCollectionRule"
DATA_COLLECTION_ASSOCIATION = "azure-native:monitor:DataCollectionRuleAssociation"
PROMETHEUS_RULE_GROUP = "azure-native:alertsmanagement:PrometheusRuleGroup"

# What a Ref reads: an output of a request in the same list, or (`VALUE`) a value made outside it.
Output = Literal["id", "name", "principal_id", "aci_object_id", "value"]
VALUE: Output = "value"
# The fleet's resource group's name as created (builders.azure_fleet makes it), outside its list.
RESOURCE_GROUP_NAME = "@resource-group-name"


@dataclass(frozen=True, slots=True)
class Ref:
    """A value known at deploy time: output `output` of the request named `of` in the same list,
    or (`output` VALUE) of the value made outside it that `of` names; `prefix` + it + `suffix`.

    `planned` is what preflight checks in its place: a value the program chose (a name), None
    when only Azure knows it (KNOWN_AFTER_DEPLOY).
    """

    of: str
    output: Output = "id"
    prefix: str = ""
    suffix: str = ""
    planned: str | None = None


@dataclass(frozen=True, slots=True)
class AzureResource:
    """One Azure resource (or the credential invoke) of a list, and what it needs.

    `name` is the suffix of its Pulumi name (`<prefix>-<name>`, the prefix its component's) and
    how other requests of the list name it in `Ref.of` and `depends_on`; `args` may hold `Ref`s
    at any depth.
    """

    token: str
    name: str
    args: Mapping[str, Any]
    depends_on: tuple[str, ...] = ()
    ignore_changes: tuple[str, ...] = ()


def planned(value: Any) -> Any:
    """`value` with each Ref as preflight sees it: its planned value, else KNOWN_AFTER_DEPLOY."""
    if isinstance(value, Ref):
        return value.planned if value.planned is not None else KNOWN_AFTER_DEPLOY
    if isinstance(value, Mapping):
        return {k: planned(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [planned(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def resource_group(fleet: FleetConfig, stack: str) -> Ref:
    """The fleet's resource group's name, from outside a list (planned: the name the stack sets)."""
    return Ref(RESOURCE_GROUP_NAME, VALUE, planned=resource_group_of(fleet.resource_group, stack))


def fleet_tags(fleet: FleetConfig, stack: str) -> dict[str, str]:
    """The tags of every fleet-wide Azure resource (a cluster's add its own)."""
    return {TAG_MANAGED_BY: PROJECT, TAG_STACK: stack, **fleet.tags}
