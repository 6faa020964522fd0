"""Composition root: load and validate the stack config, build the Fleet, export outputs."""

from pathlib import Path

import pulumi

import constants as c
from checks.stack import parse_fleet
from components.aks import AksCluster
from components.fleet import Fleet, FleetArgs
from config.errors import ConfigError, Issue
from config.loader import (
    FULL_KEY,
    kueue_crd_files,
    read_existing_kubeconfigs,
    read_karmada_kubeconfig,
    with_default_location,
)

ROOT = Path(__file__).parent

try:
    raw = pulumi.Config(c.PROJECT).get_object(c.CONFIG_KEY)
    if raw is None:
        raise ConfigError([Issue(FULL_KEY, "required: the stack config has no fleet")])
    location = pulumi.Config("azure-native").get("location")
    fleet_config, warnings = parse_fleet(
        with_default_location(raw, location), source=f"stack {pulumi.get_stack()}"
    )
    kubeconfig_files = read_existing_kubeconfigs(fleet_config, ROOT)
    karmada_file = read_karmada_kubeconfig(fleet_config, ROOT)
    crd_files = kueue_crd_files(fleet_config, ROOT)
except ConfigError as err:
    # A clean, complete message and no resources: nothing is registered before this point.
    raise pulumi.RunError(str(err)) from None
for warning in warnings:
    pulumi.log.warn(str(warning))

# Clusters the stack does not create: kubeconfigs from files or secret config keys, read here
# so that components never read config or files.
existing: dict[str, pulumi.Input[str]] = {
    name: pulumi.Output.secret(text) for name, text in kubeconfig_files.items()
}
for cluster in fleet_config.clusters:
    if cluster.existing is not None and cluster.existing.kubeconfig_secret:
        key = cluster.existing.kubeconfig_secret
        existing[cluster.name] = pulumi.Config().require_secret(key)

# An existing Karmada control plane (`karmada.source: existing`): its kubeconfig, likewise.
karmada_kubeconfig: pulumi.Input[str] | None = None
karmada_source = fleet_config.karmada.existing if fleet_config.karmada else None
if karmada_file is not None:
    karmada_kubeconfig = pulumi.Output.secret(karmada_file)
elif karmada_source is not None and karmada_source.kubeconfig_secret:
    karmada_kubeconfig = pulumi.Config().require_secret(karmada_source.kubeconfig_secret)

fleet = Fleet(
    c.PROJECT,
    FleetArgs(
        config=fleet_config,
        stack=pulumi.get_stack(),
        existing_kubeconfigs=existing,
        kueue_crd_files=crd_files,
        karmada_kubeconfig=karmada_kubeconfig,
    ),
)

pulumi.export(c.OUT_RESOURCE_GROUP, fleet.resource_group_name)
pulumi.export(c.OUT_KUBECONFIGS, fleet.kubeconfigs)
pulumi.export(c.OUT_CLUSTER_NAMES, {n: k.cluster_name for n, k in fleet.clusters.items()})
pulumi.export(c.OUT_API_SERVERS, {n: k.fqdn for n, k in fleet.clusters.items()})
pulumi.export(
    c.OUT_OIDC_ISSUERS,
    {n: k.oidc_issuer_url for n, k in fleet.clusters.items() if isinstance(k, AksCluster)},
)
pulumi.export(
    c.OUT_QUEUES,
    {
        n: {"clusterQueues": k.cluster_queues, "localQueues": k.local_queues}
        for n, k in fleet.kueues.items()
    },
)
# Only for a control plane the stack installs: an existing one's kubeconfig is the user's already,
# and exporting it would copy an admin credential into the stack's outputs.
if fleet.karmada is not None and fleet.karmada.release is not None:
    pulumi.export(c.OUT_KARMADA_KUBECONFIG, fleet.karmada.karmada_kubeconfig)
