"""Names the AKS metrics add-on (Azure Monitor managed Prometheus, ama-metrics) reads. Pinned.

Read on 2026-12-03 from Azure's docs (MicrosoftDocs/azure-docs,
articles/azure-monitor/containers/prometheus-metrics-scrape-configuration.md: "All config-maps
should be applied to kube-system"; `ama-metrics-prometheus-config`, "Recommended", is the scrape
config of the add-on's singleton replica, in the format of a Prometheus configuration file, only
`global` and `scrape_configs`, discovery by `static_configs` or `kubernetes_sd_configs`) and from
the add-on's sample (Azure/prometheus-collector,
otelcollector/configmaps/ama-metrics-prometheus-config-configmap.yaml: data key
`prometheus-config`). The add-on's pods run as ServiceAccount `ama-metrics-serviceaccount` in
kube-system (the ClusterRoleBindings in Azure's docs and in prometheus-collector's addon chart).
"""

from __future__ import annotations

from typing import Final

AMA_NAMESPACE: Final = "kube-system"
AMA_SCRAPE_CONFIGMAP: Final = "ama-metrics-prometheus-config"
AMA_SCRAPE_KEY: Final = "prometheus-config"
AMA_SERVICE_ACCOUNT: Final = "ama-metrics-serviceaccount"
# Where a pod's own ServiceAccount token is mounted (Kubernetes' projected default volume).
POD_TOKEN_FILE: Final = "/var/run/secrets/kubernetes.io/serviceaccount/token"
