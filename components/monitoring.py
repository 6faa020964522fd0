"""AzureMonitor: where the AKS metrics add-on of each cluster sends, and the fleet's alerts.

Registers builders/azure_monitor.py's inputs, ids known only at deploy time filled in: the
workspace (created unless `monitoring.azureMonitor.workspace` names one), per AKS cluster a data
collection endpoint, a rule to the workspace and the association on the cluster, and the alert
rules as a Prometheus rule group on the workspace. Nothing here waits on Kubernetes: it runs
beside the clusters' Kubernetes half.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import alertsmanagement, monitor

from builders import azure_monitor as amw
from config.models import FleetConfig
from constants import TYPE_PREFIX


@dataclass(frozen=True, kw_only=True)
class AzureMonitorArgs:
    config: FleetConfig
    stack: str
    # The fleet's name: the prefix of every resource name (builders/azure.py's requests).
    prefix: str
    resource_group_name: pulumi.Input[str]
    tags: dict[str, str]
    # Each AKS cluster's ManagedCluster id (the association's scope).
    cluster_ids: Mapping[str, pulumi.Input[str]]


class AzureMonitor(pulumi.ComponentResource):
    """Managed Prometheus ingestion (workspace, endpoints, rules, associations) and alerts."""

    workspace_id: pulumi.Output[str]

    def __init__(
        self, name: str, args: AzureMonitorArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(f"{TYPE_PREFIX}:AzureMonitor", name, None, opts)
        cfg, group, tags, prefix = args.config, args.resource_group_name, args.tags, args.prefix
        child = pulumi.ResourceOptions(parent=self)
        given = cfg.monitoring.azure_monitor.workspace
        if given is None:
            workspace = monitor.AzureMonitorWorkspace(
                f"{prefix}-amw", **amw.workspace_inputs(cfg, args.stack, group, tags), opts=child
            )
            self.workspace_id = workspace.id
        else:
            self.workspace_id = pulumi.Output.from_input(given.resource_id)
        self.associations: dict[str, monitor.DataCollectionRuleAssociation] = {}
        for cluster in amw.ingested(cfg):
            base = f"{prefix}-{cluster.name}"
            endpoint = monitor.DataCollectionEndpoint(
                f"{base}-prom-dce", **amw.endpoint_inputs(cfg, cluster, group, tags), opts=child
            )
            rule = monitor.DataCollectionRule(
                f"{base}-prom-dcr",
                **amw.rule_inputs(cfg, cluster, group, tags, endpoint.id, self.workspace_id),
                opts=child,
            )
            self.associations[cluster.name] = monitor.DataCollectionRuleAssociation(
                f"{base}-prom-dcra",
                **amw.association_inputs(cfg, cluster, args.cluster_ids[cluster.name], rule.id),
                opts=child,
            )
        rules = amw.rule_group_inputs(cfg, args.stack, group, tags, self.workspace_id)
        self.alerts: alertsmanagement.PrometheusRuleGroup | None = None
        if rules is not None:
            self.alerts = alertsmanagement.PrometheusRuleGroup(
                f"{prefix}-alerts", **rules, opts=child
            )
        self.register_outputs({"workspaceId": self.workspace_id})
