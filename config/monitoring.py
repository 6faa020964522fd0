"""`monitoring`: who scrapes Kueue's Prometheus metrics (docs/metrics.md)."""

from __future__ import annotations

from pydantic import Field

from config.base import Model


class AzureMonitorMetrics(Model):
    """Azure Monitor managed Prometheus on the stack's clusters (opt-in).

    `enabled`: true turns on the AKS metrics add-on (`azureMonitorProfile.metrics`) of every AKS
    cluster the stack creates and gives every cluster the add-on's scrape job for Kueue; false
    turns the add-on off; unset (the default) sends nothing and leaves the add-on as it is.
    """

    enabled: bool | None = None
    # How often the add-on scrapes Kueue (a Prometheus duration; Azure's default is 30s).
    scrape_interval: str = Field(default="30s", pattern=r"^[1-9][0-9]{0,3}[sm]$")


class MonitoringSettings(Model):
    """Who scrapes Kueue's metrics (what Kueue reports: `kueue.configuration.metrics`)."""

    azure_monitor: AzureMonitorMetrics = AzureMonitorMetrics()
