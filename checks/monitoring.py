"""Rules of `monitoring` that relate it to other keys (docs/metrics.md)."""

from __future__ import annotations

from collections.abc import Iterator

from checks.common import Check
from config.errors import Issue, key_path
from config.models import FleetConfig
from upstream.azure_monitor import AMA_NAMESPACE, AMA_SCRAPE_CONFIGMAP


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
    for c in fleet.clusters:
        if c.source == "existing":
            yield Issue(
                f"clusters[{c.name}].source",
                f"existing cluster {c.name}: the stack writes the metrics add-on's one scrape "
                f"ConfigMap {AMA_NAMESPACE}/{AMA_SCRAPE_CONFIGMAP}; one already there is taken "
                "over (its prometheus-config becomes the Kueue job, or `up` stops on a field "
                "conflict) and deleted by destroy: move its jobs into PodMonitors or "
                "ServiceMonitors first (docs/metrics.md)",
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
