"""Builder Azure resources (builders/azure_resource.py) as azure-native ones: the one place that
maps them. Each component with an Azure list registers it here, in its order; preflight checks the
same list (builders/azure.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
from pulumi_azure_native import (
    alertsmanagement,
    authorization,
    containerservice,
    managedidentity,
    monitor,
    network,
    resources,
)

from builders import aks as shapes
from builders.azure_resource import (
    AGENT_POOL,
    DATA_COLLECTION_ASSOCIATION,
    DATA_COLLECTION_ENDPOINT,
    DATA_COLLECTION_RULE,
    IDENTITY,
    MAINTENANCE,
    MANAGED_CLUSTER,
    MONITOR_WORKSPACE,
    PROMETHEUS_RULE_GROUP,
    PUBLIC_IP,
    RESOURCE_GROUP,
    ROLE_ASSIGNMENT,
    SUBNET,
    VALUE,
    VNET,
    AzureResource,
    Ref,
)

# The azure-native class of each resource token a list may hold.
CLASSES: dict[str, Callable[..., pulumi.CustomResource]] = {
    RESOURCE_GROUP: resources.ResourceGroup,
    PUBLIC_IP: network.PublicIPAddress,
    VNET: network.VirtualNetwork,
    SUBNET: network.Subnet,
    IDENTITY: managedidentity.UserAssignedIdentity,
    ROLE_ASSIGNMENT: authorization.RoleAssignment,
    MANAGED_CLUSTER: containerservice.ManagedCluster,
    AGENT_POOL: containerservice.AgentPool,
    MAINTENANCE: containerservice.MaintenanceConfiguration,
    MONITOR_WORKSPACE: monitor.AzureMonitorWorkspace,
    DATA_COLLECTION_ENDPOINT: monitor.DataCollectionEndpoint,
    DATA_COLLECTION_RULE: monitor.DataCollectionRule,
    DATA_COLLECTION_ASSOCIATION: monitor.DataCollectionRuleAssociation,
    PROMETHEUS_RULE_GROUP: alertsmanagement.PrometheusRuleGroup,
}


def _output(resource: Any, ref: Ref) -> pulumi.Output[Any]:
    if ref.output == "aci_object_id":
        return resource.addon_profiles.apply(_aci_identity)
    return getattr(resource, ref.output)


def resolved(
    value: Any, made: Mapping[str, pulumi.Resource], outside: Mapping[str, pulumi.Input[str]]
) -> Any:
    """`value` with each Ref as the Output it names (builders.azure_resource.Ref)."""
    if isinstance(value, Ref):
        found = outside[value.of] if value.output == VALUE else _output(made[value.of], value)
        if not (value.prefix or value.suffix):
            return found
        return pulumi.Output.concat(value.prefix, found, value.suffix)
    if isinstance(value, dict):
        return {k: resolved(v, made, outside) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [resolved(v, made, outside) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def register_azure(
    prefix: str,
    requests: Sequence[AzureResource],
    outside: Mapping[str, pulumi.Input[str]],
    parent: pulumi.Resource,
) -> dict[str, pulumi.CustomResource]:
    """Each request as `<prefix>-<name>`, in order, each after the ones it names; by name.

    `outside` maps each value made outside the list (`Ref.of` with `output` VALUE) to its Output.
    """
    made: dict[str, pulumi.CustomResource] = {}
    for r in requests:
        inputs = resolved(dict(r.args), made, outside)
        # azure-native names the ARM resource name `resource_name_`: `resource_name` is Pulumi's
        # own (the logical name).
        kwargs = {("resource_name_" if k == "resource_name" else k): v for k, v in inputs.items()}
        made[r.name] = CLASSES[r.token](
            f"{prefix}-{r.name}",
            **kwargs,
            opts=pulumi.ResourceOptions(
                parent=parent,
                depends_on=[made[d] for d in r.depends_on],
                ignore_changes=list(r.ignore_changes),
            ),
        )
    return made


def _aci_identity(addons: Mapping[str, Any] | None) -> str:
    profile: Any = (addons or {}).get(shapes.ACI_ADDON)
    identity: Any = getattr(profile, "identity", None)
    return getattr(identity, "object_id", None) or ""
