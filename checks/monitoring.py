"""Rules of `monitoring` that relate it to other keys (docs/metrics.md)."""

from __future__ import annotations

from collections.abc import Iterator

from checks.common import Check
from config.errors import Issue, key_path
from config.models import FleetConfig


def check_azure_monitor(fleet: FleetConfig) -> Iterator[Issue]:
    """The add-on's scrape job finds Kueue's pods only where this stack installs the chart."""
    if not fleet.monitoring.azure_monitor.enabled:
        return
    if fleet.kueue.install != "helm":
        yield Issue(
            key_path("monitoring", "azureMonitor", "enabled"),
            "kueue.install is manifests-only: no Kueue controller of this stack serves metrics; "
            "the scrape job finds Kueue only if something else runs the chart's pods in "
            "kueue-system",
            "warning",
        )
    settings = fleet.monitoring.azure_monitor
    if fleet.environment == "production" and settings.alerts and not settings.action_groups:
        yield Issue(
            key_path("monitoring", "azureMonitor", "actionGroups"),
            "production ships the fleet's alert rules to Azure Monitor with no action group: "
            "they fire and notify no one; name the on-call action group (its ARM id), or set "
            "alerts: false",
            "warning",
        )
    if all(c.source == "existing" for c in fleet.clusters):
        yield Issue(
            key_path("monitoring", "azureMonitor", "enabled"),
            "every cluster is existing: the program sets no cluster's azureMonitorProfile, only "
            "the scrape config; the add-on must already run there",
            "warning",
        )


MONITORING_CHECKS: tuple[Check, ...] = (check_azure_monitor,)
