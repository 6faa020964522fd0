"""Azure's request models that no pinned `azure-mgmt-*` release ships at the API version
azure-native sends: written here from Azure's REST specs, in the SDK models' shape
(`_validation`, `_attribute_map`), so checks/azure_api.py walks them like the others.

- Microsoft.Resources 2024-03-01 is in no `azure-mgmt-resource` release (23.2 stops at
  2022-09-01, 23.3 starts at 2024-07-01): `specification/resources/.../stable/2024-03-01/
  resources.json`.
- Microsoft.Monitor/accounts (Azure Monitor workspaces) 2023-04-03 is only in
  `azure-mgmt-monitor` 7.0.0, which drops the data collection API version 2022-06-01 that
  azure-native 3.29.0 sends (pinned 6.0.2 has that, not this): `specification/monitor/
  resource-manager/Microsoft.Monitor/stable/2023-04-03/monitoringAccounts_API.json`.
- Microsoft.AlertsManagement/prometheusRuleGroups 2023-03-01 is in no `azure-mgmt-alertsmanagement`
  release (1.0.1 stops at 2019-06-01): the 2023-03-01 deployment schema of
  Microsoft.AlertsManagement (`schemas/2023-03-01/Microsoft.AlertsManagement.json`, read
  2026-12-05: `scopes` and `rules` required, a rule's `expression` required, severity 0-4).
"""

from __future__ import annotations

import re
from typing import Any, Final

_READONLY: Final = {"readonly": True}
_TRACKED: Final = {
    "id": {"key": "id", "type": "str"},
    "name": {"key": "name", "type": "str"},
    "type": {"key": "type", "type": "str"},
    "location": {"key": "location", "type": "str"},
    "tags": {"key": "tags", "type": "{str}"},
}
_TRACKED_RULES: Final = {
    "id": _READONLY,
    "name": _READONLY,
    "type": _READONLY,
    "location": {"required": True},
}


class ResourceGroup:
    """`ResourceGroup` of Microsoft.Resources 2024-03-01."""

    _validation: dict[str, dict[str, Any]] = {**_TRACKED_RULES, "properties": _READONLY}
    _attribute_map: dict[str, dict[str, str]] = {
        **_TRACKED,
        "properties": {"key": "properties", "type": "object"},
        "managed_by": {"key": "managedBy", "type": "str"},
    }


class AzureMonitorWorkspace:
    """`AzureMonitorWorkspaceResource` of Microsoft.Monitor 2023-04-03 (what a request sets)."""

    _validation: dict[str, dict[str, Any]] = {
        **_TRACKED_RULES,
        "account_id": _READONLY,
        "provisioning_state": _READONLY,
        "default_ingestion_settings": _READONLY,
        "metrics": _READONLY,
        "private_endpoint_connections": _READONLY,
        "etag": _READONLY,
    }
    _attribute_map: dict[str, dict[str, str]] = {
        **_TRACKED,
        "etag": {"key": "etag", "type": "str"},
        "account_id": {"key": "properties.accountId", "type": "str"},
        "metrics": {"key": "properties.metrics", "type": "object"},
        "provisioning_state": {"key": "properties.provisioningState", "type": "str"},
        "default_ingestion_settings": {
            "key": "properties.defaultIngestionSettings",
            "type": "object",
        },
        "private_endpoint_connections": {
            "key": "properties.privateEndpointConnections",
            "type": "[object]",
        },
        "public_network_access": {"key": "properties.publicNetworkAccess", "type": "str"},
    }


class PrometheusRuleGroupAction:
    _validation: dict[str, dict[str, Any]] = {}
    _attribute_map: dict[str, dict[str, str]] = {
        "action_group_id": {"key": "actionGroupId", "type": "str"},
        "action_properties": {"key": "actionProperties", "type": "{str}"},
    }


class PrometheusRuleResolveConfiguration:
    _validation: dict[str, dict[str, Any]] = {}
    _attribute_map: dict[str, dict[str, str]] = {
        "auto_resolved": {"key": "autoResolved", "type": "bool"},
        "time_to_resolve": {"key": "timeToResolve", "type": "str"},
    }


class PrometheusRule:
    """An alerting or recording rule."""

    _validation: dict[str, dict[str, Any]] = {
        "expression": {"required": True},
        "severity": {"minimum": 0, "maximum": 4},
    }
    _attribute_map: dict[str, dict[str, str]] = {
        "record": {"key": "record", "type": "str"},
        "alert": {"key": "alert", "type": "str"},
        "enabled": {"key": "enabled", "type": "bool"},
        "expression": {"key": "expression", "type": "str"},
        "severity": {"key": "severity", "type": "int"},
        "for_": {"key": "for", "type": "str"},
        "labels": {"key": "labels", "type": "{str}"},
        "annotations": {"key": "annotations", "type": "{str}"},
        "actions": {"key": "actions", "type": "[PrometheusRuleGroupAction]"},
        "resolve_configuration": {
            "key": "resolveConfiguration",
            "type": "PrometheusRuleResolveConfiguration",
        },
    }


class PrometheusRuleGroup:
    """`PrometheusRuleGroupResource` of Microsoft.AlertsManagement 2023-03-01."""

    _validation: dict[str, dict[str, Any]] = {
        **_TRACKED_RULES,
        # "This api-version is currently limited to creating with one scope."
        "scopes": {"required": True, "max_items": 1},
        "rules": {"required": True},
    }
    _attribute_map: dict[str, dict[str, str]] = {
        **_TRACKED,
        "description": {"key": "properties.description", "type": "str"},
        "enabled": {"key": "properties.enabled", "type": "bool"},
        "cluster_name": {"key": "properties.clusterName", "type": "str"},
        "scopes": {"key": "properties.scopes", "type": "[str]"},
        "interval": {"key": "properties.interval", "type": "str"},
        "rules": {"key": "properties.rules", "type": "[PrometheusRule]"},
    }


SPEC_MODELS: Final[dict[str, type]] = {
    cls.__name__: cls
    for cls in (
        ResourceGroup,
        AzureMonitorWorkspace,
        PrometheusRuleGroupAction,
        PrometheusRuleResolveConfiguration,
        PrometheusRule,
        PrometheusRuleGroup,
    )
}

# The resource group name's rule in the same spec (the `resourceGroupName` path parameter).
RESOURCE_GROUP_NAME: Final = re.compile(r"^[-\w\._\(\)]+$")
RESOURCE_GROUP_NAME_MAX: Final = 90
