"""Where Azure Monitor managed Prometheus sends the fleet's metrics, and the alerts it evaluates.

Pure: `monitor_resources` is the one list of these Azure resources (builders/azure_resource.py):
components/monitoring.py registers it in a loop, ids known only at deploy time resolved, and
preflight checks the same list (builders/azure.py).

`azureMonitorProfile.metrics.enabled` only starts the AKS metrics add-on's collectors
(ama-metrics); they send nothing until the cluster is associated with a data collection rule
whose destination is an Azure Monitor workspace. `az aks update --enable-azure-monitor-metrics`
creates those by itself; an ARM deployment must create them, as Azure's own template does
(Azure/prometheus-collector `AddonBicepTemplate/FullAzureMonitorMetricsProfile.bicep` and
`nested_azuremonitormetrics_dcra_clusterResourceId.bicep`, read 2026-12-05): per cluster a data
collection endpoint and a data collection rule named `MSProm-<workspace region>-<cluster>`, kind
Linux, in the workspace's region, the rule forwarding the stream `Microsoft-PrometheusMetrics`
(data source `prometheusForwarder`) to the workspace; and an association
`MSProm-<cluster region>-<cluster>` on the cluster naming the rule.

The alert rules are builders/alerts.py's, in the form Azure Monitor evaluates them: one
Prometheus rule group (Microsoft.AlertsManagement/prometheusRuleGroups 2023-03-01) scoped to the
workspace, so one rule sees every cluster's series (each carries `fleet_cluster`).
"""

from __future__ import annotations

import re
from typing import Any, Final

from builders.alerts import AlertRule, alert_rules
from builders.azure_resource import (
    DATA_COLLECTION_ASSOCIATION,
    DATA_COLLECTION_ENDPOINT,
    DATA_COLLECTION_RULE,
    MONITOR_WORKSPACE,
    PROMETHEUS_RULE_GROUP,
    VALUE,
    AzureResource,
    Ref,
    fleet_tags,
    resource_group,
)
from config.models import ClusterConfig, FleetConfig
from constants import PROJECT

# The stream and data source names of the add-on's rule (Azure's template, above).
STREAM: Final = "Microsoft-PrometheusMetrics"
DATA_SOURCE: Final = "PrometheusDataSource"
DESTINATION: Final = "MonitoringAccount1"
# Data collection endpoint names are 3-44 characters (Azure's template takes the first 44).
NAME_MAX: Final = 44
# Azure Monitor's alert severities: 0 Critical, 1 Error, 2 Warning, 3 Informational, 4 Verbose.
SEVERITY: Final = {"critical": 0, "warning": 2}
RULE_INTERVAL: Final = "PT1M"
DESCRIPTION: Final = (
    "Association of data collection rule. Deleting this association will break the data "
    "collection for this AKS Cluster."
)
# The names of `monitor_resources`' requests (each after its component's prefix).
WORKSPACE: Final = "amw"
ALERTS: Final = "alerts"
ASSOCIATION_SUFFIX: Final = "-prom-dcra"


def cluster_id(cluster: str) -> str:
    """The `Ref.of` of an AKS cluster's ManagedCluster id, made outside the list (its scope)."""
    return f"@cluster-id/{cluster}"


def workspace_name(stack: str) -> str:
    """The Azure Monitor workspace the stack creates when `workspace` is not given."""
    return f"amw-{PROJECT}-{stack}"


def workspace_location(fleet: FleetConfig) -> str:
    """The given workspace's region, else where the stack creates it: the fleet's location,
    else the first AKS cluster's."""
    settings = fleet.monitoring.azure_monitor
    if settings.workspace is not None:
        return settings.workspace.location
    if fleet.location:
        return fleet.location
    return next((c.location or "" for c in fleet.clusters if c.source == "aks"), "")


def ingested(fleet: FleetConfig) -> list[ClusterConfig]:
    """The clusters whose metrics the stack wires to the workspace: the AKS ones it creates with
    the add-on on. An existing cluster's add-on and its rule are whoever enabled it's."""
    if not fleet.monitoring.azure_monitor.enabled:
        return []
    return [c for c in fleet.clusters if c.source == "aks"]


def workspace(fleet: FleetConfig) -> str | Ref:
    """The workspace's id: the given one's, else the one the stack creates (`WORKSPACE`)."""
    given = fleet.monitoring.azure_monitor.workspace
    return given.resource_id if given is not None else Ref(WORKSPACE)


def _workspace_inputs(
    fleet: FleetConfig, stack: str, group: Any, tags: dict[str, str]
) -> dict[str, Any]:
    return {
        "azure_monitor_workspace_name": workspace_name(stack),
        "resource_group_name": group,
        "location": workspace_location(fleet),
        "tags": tags,
    }


def _name(region: str, cluster: str) -> str:
    return f"MSProm-{region}-{cluster}"[:NAME_MAX]


def _endpoint_inputs(
    fleet: FleetConfig, cluster: ClusterConfig, group: Any, tags: dict[str, str]
) -> dict[str, Any]:
    return {
        "data_collection_endpoint_name": _name(workspace_location(fleet), cluster.name),
        "resource_group_name": group,
        "location": workspace_location(fleet),
        "kind": "Linux",
        "tags": tags,
    }


def _rule_inputs(  # noqa: PLR0917 - one rule: where it is and the two ids it joins
    fleet: FleetConfig,
    cluster: ClusterConfig,
    group: Any,
    tags: dict[str, str],
    endpoint_id: Any,
    workspace_id: Any,
) -> dict[str, Any]:
    return {
        "data_collection_rule_name": _name(workspace_location(fleet), cluster.name),
        "resource_group_name": group,
        "location": workspace_location(fleet),
        "kind": "Linux",
        "description": "DCR for Azure Monitor Metrics Profile (Managed Prometheus)",
        "data_collection_endpoint_id": endpoint_id,
        "data_sources": {
            "prometheusForwarder": [
                {"name": DATA_SOURCE, "streams": [STREAM], "labelIncludeFilter": {}}
            ]
        },
        "destinations": {
            "monitoringAccounts": [{"accountResourceId": workspace_id, "name": DESTINATION}]
        },
        "data_flows": [{"streams": [STREAM], "destinations": [DESTINATION]}],
        "tags": tags,
    }


def _association_inputs(
    fleet: FleetConfig, cluster: ClusterConfig, cluster_id: Any, rule_id: Any
) -> dict[str, Any]:
    return {
        "association_name": _name(cluster.location or fleet.location or "", cluster.name),
        "resource_uri": cluster_id,
        "data_collection_rule_id": rule_id,
        "description": DESCRIPTION,
    }


_DURATION = re.compile(r"^(\d+)([smh])$")


def iso_duration(prometheus: str) -> str | None:
    """`5m` -> `PT5M`; None for a zero duration (the rule fires at once: `for` left out)."""
    found = _DURATION.match(prometheus)
    if found is None:
        raise ValueError(f"not a Prometheus duration of s, m or h: {prometheus!r}")
    amount, unit = int(found.group(1)), found.group(2)
    return f"PT{amount}{unit.upper()}" if amount else None


def azure_rule(rule: AlertRule, action_groups: list[str]) -> dict[str, Any]:
    """One alert rule in Azure Monitor's form (PrometheusRule of 2023-03-01)."""
    out: dict[str, Any] = {
        "alert": rule.name,
        "expression": rule.expr,
        "severity": SEVERITY[rule.severity],
        "labels": {"severity": rule.severity},
        "annotations": {"summary": rule.summary, "description": rule.description},
        "enabled": True,
        "resolveConfiguration": {"autoResolved": True, "timeToResolve": "PT10M"},
    }
    hold = iso_duration(rule.hold)
    if hold is not None:
        out["for"] = hold
    if action_groups:
        out["actions"] = [{"actionGroupId": group} for group in action_groups]
    return out


def rule_group_name(stack: str) -> str:
    return f"{PROJECT}-{stack}-alerts"


def _rule_group_inputs(
    fleet: FleetConfig, stack: str, group: Any, tags: dict[str, str], workspace_id: Any
) -> dict[str, Any] | None:
    """The alert rules as a Prometheus rule group on the workspace; None when not shipped."""
    settings = fleet.monitoring.azure_monitor
    if not ingested(fleet) or not settings.alerts:
        return None
    groups = list(settings.action_groups)
    return {
        "rule_group_name": rule_group_name(stack),
        "resource_group_name": group,
        "location": workspace_location(fleet),
        "description": f"{PROJECT} {stack}: the fleet's alert rules (builders/alerts.py)",
        "enabled": True,
        "interval": RULE_INTERVAL,
        "scopes": [workspace_id],
        "rules": [azure_rule(r, groups) for r in alert_rules(fleet)],
        "tags": tags,
    }


def monitor_resources(fleet: FleetConfig, stack: str) -> list[AzureResource]:
    """Managed Prometheus ingestion and alerts, in program order; none unless `ingested`.

    The workspace unless given, per ingested cluster `<cluster>-prom-dce`, `-prom-dcr` and the
    association on the cluster (`cluster_id`), then the alert rule group.
    """
    clusters = ingested(fleet)
    if not clusters:
        return []
    group, tags = resource_group(fleet, stack), fleet_tags(fleet, stack)
    out: list[AzureResource] = []
    workspace_id = workspace(fleet)
    if isinstance(workspace_id, Ref):
        args = _workspace_inputs(fleet, stack, group, tags)
        out.append(AzureResource(MONITOR_WORKSPACE, WORKSPACE, args))
    for cluster in clusters:
        dce, dcr = f"{cluster.name}-prom-dce", f"{cluster.name}-prom-dcr"
        rule = _rule_inputs(fleet, cluster, group, tags, Ref(dce), workspace_id)
        link = _association_inputs(fleet, cluster, Ref(cluster_id(cluster.name), VALUE), Ref(dcr))
        out += [
            AzureResource(
                DATA_COLLECTION_ENDPOINT, dce, _endpoint_inputs(fleet, cluster, group, tags)
            ),
            AzureResource(DATA_COLLECTION_RULE, dcr, rule),
            AzureResource(DATA_COLLECTION_ASSOCIATION, f"{cluster.name}{ASSOCIATION_SUFFIX}", link),
        ]
    rules = _rule_group_inputs(fleet, stack, group, tags, workspace_id)
    if rules is not None:
        out.append(AzureResource(PROMETHEUS_RULE_GROUP, ALERTS, rules))
    return out
