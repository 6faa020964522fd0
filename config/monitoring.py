"""`monitoring`: who scrapes Kueue's Prometheus metrics (docs/metrics.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from config.base import Model

# ARM ids of an Azure Monitor workspace and of an action group (case as Azure writes them; ARM
# compares ids without case).
WORKSPACE_ID = (
    r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Monitor/accounts/[^/]+$"
)
ACTION_GROUP_ID = (
    r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/(?i:microsoft\.insights)"
    r"/actionGroups/[^/]+$"
)


class MonitorWorkspace(Model):
    """An Azure Monitor workspace that already exists: the metrics and alerts go there."""

    # /subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.Monitor/accounts/<name>
    resource_id: str = Field(pattern=WORKSPACE_ID)
    # Its region: the data collection endpoints and rules are created there.
    location: str = Field(min_length=1)


class AzureMonitorMetrics(Model):
    """Azure Monitor managed Prometheus on the stack's clusters (opt-in).

    `enabled`: true turns on the AKS metrics add-on (`azureMonitorProfile.metrics`) of every AKS
    cluster the stack creates, wires each to an Azure Monitor workspace (data collection endpoint,
    rule and association) and gives every cluster the add-on's scrape job for Kueue; false turns
    the add-on off; unset (the default) sends nothing and leaves the add-on as it is.
    """

    enabled: bool | None = None
    # How often the add-on scrapes Kueue (a Prometheus duration; Azure's default is 30s).
    scrape_interval: str = Field(default="30s", pattern=r"^[1-9][0-9]{0,3}[sm]$")
    # Where the metrics go (builders/azure_monitor.py): unset, the stack creates a workspace.
    workspace: MonitorWorkspace | None = None
    # The fleet's alert rules as an Azure Monitor Prometheus rule group on the workspace.
    alerts: bool = True
    # Action groups every alert notifies (ARM ids); none: alerts fire and tell no one.
    action_groups: list[Annotated[str, StringConstraints(pattern=ACTION_GROUP_ID)]] = []


class MonitoringSettings(Model):
    """Who scrapes Kueue's metrics (what Kueue reports: `kueue.configuration.metrics`)."""

    azure_monitor: AzureMonitorMetrics = AzureMonitorMetrics()
