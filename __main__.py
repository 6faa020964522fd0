"""Composition root: load and validate the stack config, build the Fleet, export outputs."""

import pulumi

import constants as c
from components.fleet import Fleet, FleetArgs
from config import ConfigError, load_from_pulumi

try:
    fleet_config, warnings = load_from_pulumi()
except ConfigError as err:
    # A clean, complete message and no resources: nothing is registered before this point.
    raise pulumi.RunError(str(err)) from None
for warning in warnings:
    pulumi.log.warn(str(warning))

fleet = Fleet(c.PROJECT, FleetArgs(config=fleet_config, stack=pulumi.get_stack()))

pulumi.export(c.OUT_RESOURCE_GROUP, fleet.resource_group_name)
pulumi.export(c.OUT_KUBECONFIGS, fleet.kubeconfigs)
pulumi.export(c.OUT_CLUSTER_NAMES, {n: k.cluster_name for n, k in fleet.clusters.items()})
pulumi.export(c.OUT_API_SERVERS, {n: k.fqdn for n, k in fleet.clusters.items()})
pulumi.export(c.OUT_OIDC_ISSUERS, {n: k.oidc_issuer_url for n, k in fleet.clusters.items()})
