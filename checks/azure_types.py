"""Which Azure model describes each azure-native type the program sends (pure data).

One entry per type token: the ARM type, the REST API version pulumi-azure-native 3.29.0 sends
it at, and where Azure's model of that version's request body is (an `azure-mgmt-*` module, or
"" for checks/azure_spec.py's models written from the REST spec). checks/azure_api.py walks the
bodies against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# azure-native type token -> where Azure's model of its request body is, at the API version the
# pinned provider sends. The SDK packages are pinned in pyproject.toml to versions that ship
# exactly these API versions (docs/azure-api-check.md).
CONTAINERSERVICE = "2025-09-01"
NETWORK = "2024-05-01"
MSI = "2023-01-31"
AUTHORIZATION = "2022-04-01"
RESOURCES = "2024-03-01"
MONITOR = "2022-06-01"  # data collection endpoints, rules and associations
MONITOR_ACCOUNTS = "2023-04-03"  # Azure Monitor workspaces
ALERTS = "2023-03-01"  # Prometheus rule groups

# Enums that list some values of an open set, not a rule: a data flow's streams are also
# `Custom-<table>`, and `Microsoft-PrometheusMetrics` is missing from 2022-06-01's list though
# Azure's own managed Prometheus template sends it at that version (builders/azure_monitor.py).
OPEN_ENUMS = frozenset({"KnownDataFlowStreams"})

MC_OPS = "azure.mgmt.containerservice.operations._managed_clusters_operations"
POOL_OPS = "azure.mgmt.containerservice.operations._agent_pools_operations"

# Path parameters whose rules the SDK's request builder declares (pattern, length): the inputs
# named here go into the URL, not the body. input name -> builder keyword.
_MC_PATH = {"resourceGroupName": "resource_group_name", "resourceName": "resource_name"}


@dataclass(frozen=True, slots=True)
class ApiType:
    """One azure-native resource type (or invoke) and Azure's model of its request."""

    arm_type: str
    api_version: str
    models: str  # module of the SDK's models at that API version
    body: str | None  # model of the request body; None: an invoke without a body
    # Inputs that are URL path (or query) parameters, never body properties.
    path: tuple[str, ...] = ()
    # The SDK's request builder that validates the path parameters (module, function, names).
    builder: tuple[str, str, Mapping[str, str]] | None = None
    query_enums: Mapping[str, str] = field(default_factory=dict[str, str])


TYPES: dict[str, ApiType] = {
    "azure-native:resources:ResourceGroup": ApiType(
        "Microsoft.Resources/resourceGroups", RESOURCES, "", "ResourceGroup", ("resourceGroupName",)
    ),
    "azure-native:containerservice:ManagedCluster": ApiType(
        "Microsoft.ContainerService/managedClusters",
        CONTAINERSERVICE,
        "azure.mgmt.containerservice.models",
        "ManagedCluster",
        ("resourceGroupName", "resourceName"),
        (MC_OPS, "build_create_or_update_request", _MC_PATH),
    ),
    "azure-native:containerservice:AgentPool": ApiType(
        "Microsoft.ContainerService/managedClusters/agentPools",
        CONTAINERSERVICE,
        "azure.mgmt.containerservice.models",
        "AgentPool",
        ("resourceGroupName", "resourceName", "agentPoolName"),
        (
            POOL_OPS,
            "build_create_or_update_request",
            {**_MC_PATH, "agentPoolName": "agent_pool_name"},
        ),
    ),
    "azure-native:containerservice:MaintenanceConfiguration": ApiType(
        "Microsoft.ContainerService/managedClusters/maintenanceConfigurations",
        CONTAINERSERVICE,
        "azure.mgmt.containerservice.models",
        "MaintenanceConfiguration",
        ("resourceGroupName", "resourceName", "configName"),
        (
            "azure.mgmt.containerservice.operations._maintenance_configurations_operations",
            "build_create_or_update_request",
            {**_MC_PATH, "configName": "config_name"},
        ),
    ),
    "azure-native:containerservice:listManagedClusterUserCredentials": ApiType(
        "Microsoft.ContainerService/managedClusters/listClusterUserCredential",
        CONTAINERSERVICE,
        "azure.mgmt.containerservice.models",
        None,
        ("resourceGroupName", "resourceName", "serverFqdn", "format"),
        (MC_OPS, "build_list_cluster_user_credentials_request", _MC_PATH),
        {"format": "Format"},
    ),
    "azure-native:network:VirtualNetwork": ApiType(
        "Microsoft.Network/virtualNetworks",
        NETWORK,
        "azure.mgmt.network.models",
        "VirtualNetwork",
        ("resourceGroupName", "virtualNetworkName"),
    ),
    "azure-native:network:Subnet": ApiType(
        "Microsoft.Network/virtualNetworks/subnets",
        NETWORK,
        "azure.mgmt.network.models",
        "Subnet",
        ("resourceGroupName", "virtualNetworkName", "subnetName"),
    ),
    "azure-native:network:PublicIPAddress": ApiType(
        "Microsoft.Network/publicIPAddresses",
        NETWORK,
        "azure.mgmt.network.models",
        "PublicIPAddress",
        ("resourceGroupName", "publicIpAddressName"),
    ),
    "azure-native:managedidentity:UserAssignedIdentity": ApiType(
        "Microsoft.ManagedIdentity/userAssignedIdentities",
        MSI,
        "azure.mgmt.msi.v2023_01_31.models",
        "Identity",
        ("resourceGroupName", "resourceName"),
    ),
    "azure-native:monitor:AzureMonitorWorkspace": ApiType(
        "Microsoft.Monitor/accounts",
        MONITOR_ACCOUNTS,
        "",
        "AzureMonitorWorkspace",
        ("resourceGroupName", "azureMonitorWorkspaceName"),
    ),
    "azure-native:monitor:DataCollectionEndpoint": ApiType(
        "Microsoft.Insights/dataCollectionEndpoints",
        MONITOR,
        "azure.mgmt.monitor.v2022_06_01.models",
        "DataCollectionEndpointResource",
        ("resourceGroupName", "dataCollectionEndpointName"),
        (
            "azure.mgmt.monitor.v2022_06_01.operations._data_collection_endpoints_operations",
            "build_create_request",
            {
                "resourceGroupName": "resource_group_name",
                "dataCollectionEndpointName": "data_collection_endpoint_name",
            },
        ),
    ),
    "azure-native:monitor:DataCollectionRule": ApiType(
        "Microsoft.Insights/dataCollectionRules",
        MONITOR,
        "azure.mgmt.monitor.v2022_06_01.models",
        "DataCollectionRuleResource",
        ("resourceGroupName", "dataCollectionRuleName"),
        (
            "azure.mgmt.monitor.v2022_06_01.operations._data_collection_rules_operations",
            "build_create_request",
            {
                "resourceGroupName": "resource_group_name",
                "dataCollectionRuleName": "data_collection_rule_name",
            },
        ),
    ),
    "azure-native:monitor:DataCollectionRuleAssociation": ApiType(
        "Microsoft.Insights/dataCollectionRuleAssociations",
        MONITOR,
        "azure.mgmt.monitor.v2022_06_01.models",
        "DataCollectionRuleAssociationProxyOnlyResource",
        ("resourceUri", "associationName"),
    ),
    "azure-native:alertsmanagement:PrometheusRuleGroup": ApiType(
        "Microsoft.AlertsManagement/prometheusRuleGroups",
        ALERTS,
        "",
        "PrometheusRuleGroup",
        ("resourceGroupName", "ruleGroupName"),
    ),
    "azure-native:authorization:RoleAssignment": ApiType(
        "Microsoft.Authorization/roleAssignments",
        AUTHORIZATION,
        "azure.mgmt.authorization.v2022_04_01.models",
        "RoleAssignmentCreateParameters",
        ("scope", "roleAssignmentName"),
    ),
}
