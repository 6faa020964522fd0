"""AzureMonitor: where the AKS metrics add-on of each cluster sends, and the fleet's alerts.

Registers builders.azure_monitor.monitor_resources' list (the one preflight checks) in a loop
(components/azure.py): the workspace (created unless `monitoring.azureMonitor.workspace` names
one), per AKS cluster a data collection endpoint, a rule to the workspace and the association on
the cluster, and the alert rules as a Prometheus rule group on the workspace. Nothing here waits
on Kubernetes: it runs beside the clusters' Kubernetes half.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import pulumi
from pulumi_azure_native import alertsmanagement, monitor

from builders import azure_monitor as amw
from builders.azure_resource import DATA_COLLECTION_ASSOCIATION, AzureResource
from components.azure import register_azure, resolved
from config.models import FleetConfig
from constants import TYPE_PREFIX


@dataclass(frozen=True, kw_only=True)
class AzureMonitorArgs:
    config: FleetConfig
    # The fleet's name: the prefix of every resource name (builders/azure.py's requests).
    prefix: str
    # builders.azure_monitor.monitor_resources: every resource, in order.
    resources: Sequence[AzureResource]
    # The values made outside the list: the resource group's name and each AKS cluster's
    # ManagedCluster id (amw.cluster_id, the association's scope).
    outside: Mapping[str, pulumi.Input[str]]


class AzureMonitor(pulumi.ComponentResource):
    """Managed Prometheus ingestion (workspace, endpoints, rules, associations) and alerts."""

    workspace_id: pulumi.Output[str]

    def __init__(
        self, name: str, args: AzureMonitorArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(f"{TYPE_PREFIX}:AzureMonitor", name, None, opts)
        made = register_azure(args.prefix, args.resources, args.outside, parent=self)
        self.workspace_id = pulumi.Output.from_input(resolved(amw.workspace(args.config), made, {}))
        self.associations = {
            r.name.removesuffix(amw.ASSOCIATION_SUFFIX): cast(
                monitor.DataCollectionRuleAssociation, made[r.name]
            )
            for r in args.resources
            if r.token == DATA_COLLECTION_ASSOCIATION
        }
        alerts = made.get(amw.ALERTS)
        self.alerts = None if alerts is None else cast(alertsmanagement.PrometheusRuleGroup, alerts)
        self.register_outputs({"workspaceId": self.workspace_id})
