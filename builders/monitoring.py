"""Kueue's metrics on every cluster, and the Azure Monitor add-on's scrape job for them. Pure.

The scrape job is a Prometheus `scrape_configs` entry: the add-on reads it from its ConfigMap
(`upstream.azure_monitor`), and any Prometheus takes the same job (docs/metrics.md). Kueue serves
/metrics over HTTPS and asks the API server whether the caller may `get` it, so the add-on's
ServiceAccount gets a ClusterRole for exactly that non-resource URL.
"""

from __future__ import annotations

from typing import Any

import yaml

from builders.manifest import Manifest
from config.models import ClusterConfig, FleetConfig
from constants import PROJECT
from upstream.azure_monitor import (
    AMA_NAMESPACE,
    AMA_SCRAPE_CONFIGMAP,
    AMA_SCRAPE_KEY,
    AMA_SERVICE_ACCOUNT,
    POD_TOKEN_FILE,
)
from upstream.kueue import (
    KUEUE_METRICS_PATH,
    KUEUE_METRICS_PORT,
    KUEUE_NAMESPACE,
    KUEUE_SELECTOR_LABELS,
)

SCRAPE_JOB = "kueue"
# The label every scraped series gets: the stack's name of the cluster that reported it. Kueue's
# MultiKueue counters already carry `cluster` (the worker a manager dispatched to), so the
# reporting cluster needs a label of its own (docs/metrics.md "Labels").
CLUSTER_LABEL = "fleet_cluster"
METRICS_READER = f"{PROJECT}-kueue-metrics-reader"


def _meta_label(key: str) -> str:
    """A pod label key as Prometheus' Kubernetes discovery names it."""
    return "__meta_kubernetes_pod_label_" + "".join(c if c.isalnum() else "_" for c in key)


def scrape_job(cluster: str, interval: str) -> dict[str, Any]:
    """The Prometheus scrape job for one cluster's Kueue controller pods (each replica)."""
    selector = sorted(KUEUE_SELECTOR_LABELS.items())
    return {
        "job_name": SCRAPE_JOB,
        "scrape_interval": interval,
        "scheme": "https",
        "metrics_path": KUEUE_METRICS_PATH,
        # Kueue's labels win over target labels (MultiKueue's `cluster`).
        "honor_labels": True,
        "authorization": {"credentials_file": POD_TOKEN_FILE},
        # Kueue's metrics certificate is self-signed by its internal cert management (as the
        # chart's own ServiceMonitor, `insecureSkipVerify: true`); the token still has to pass
        # Kueue's TokenReview and SubjectAccessReview.
        "tls_config": {"insecure_skip_verify": True},
        "kubernetes_sd_configs": [{"role": "pod", "namespaces": {"names": [KUEUE_NAMESPACE]}}],
        "relabel_configs": [
            {
                "source_labels": [
                    *(_meta_label(k) for k, _ in selector),
                    "__meta_kubernetes_pod_container_port_name",
                ],
                "regex": ";".join([*(v for _, v in selector), KUEUE_METRICS_PORT]),
                "action": "keep",
            },
            {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
            {"target_label": CLUSTER_LABEL, "replacement": cluster},
        ],
    }


def scrape_config(cluster: str, interval: str) -> dict[str, Any]:
    """A Prometheus configuration holding only the Kueue job (what the add-on accepts)."""
    return {"scrape_configs": [scrape_job(cluster, interval)]}


def monitoring_objects(fleet: FleetConfig, cluster: ClusterConfig) -> list[Manifest]:
    """With `monitoring.azureMonitor.enabled`: the add-on's scrape config and its RBAC."""
    if not fleet.monitoring.azure_monitor.enabled:
        return []
    interval = fleet.monitoring.azure_monitor.scrape_interval
    reader = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": METRICS_READER},
        "rules": [{"nonResourceURLs": [KUEUE_METRICS_PATH], "verbs": ["get"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": METRICS_READER},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": METRICS_READER,
        },
        "subjects": [
            {"kind": "ServiceAccount", "name": AMA_SERVICE_ACCOUNT, "namespace": AMA_NAMESPACE}
        ],
    }
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": AMA_SCRAPE_CONFIGMAP, "namespace": AMA_NAMESPACE},
        "data": {
            AMA_SCRAPE_KEY: yaml.safe_dump(scrape_config(cluster.name, interval), sort_keys=False)
        },
    }
    target = cluster.name
    return [
        Manifest(target, reader),
        Manifest(target, binding, (f"ClusterRole/{METRICS_READER}",)),
        Manifest(target, configmap, (f"ClusterRoleBinding/{METRICS_READER}",)),
    ]


def azure_monitor_profile(fleet: FleetConfig) -> dict[str, Any] | None:
    """ManagedCluster `azureMonitorProfile`; None (not sent) while the key is unset."""
    enabled = fleet.monitoring.azure_monitor.enabled
    return None if enabled is None else {"metrics": {"enabled": enabled}}
