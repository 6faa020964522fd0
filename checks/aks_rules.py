"""AKS's server-side rules (upstream.aks_rules), each refused here with its key path and source.

An Azure model declares shapes and enums; these are what the AKS resource provider refuses on top
(or what locks a stack out of its own clusters). Every message ends with the rule's text, code and
source (`AksRule.cite`), so a refusal can be checked against where AKS states it. The rules the
program satisfies by construction (a Spot pool's inherited max surge left out, the system pool's
version, the deployer's principal type, the egress IP's grant before the create) have no check:
docs/checks.md says which, and the tests check the requests.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from decimal import Decimal
from ipaddress import IPv4Network

from builders.egress import admitted_callers
from checks.common import Check
from config.errors import Issue, key_path
from config.models import AccessConfig, ClusterConfig, FleetConfig
from config.resolve import access_of, custom_shapes, fleet_ranges_skipped
from upstream.aks import DEFAULT_MAX_PODS, lookup_vm
from upstream.aks_rules import (
    EGRESS_HINT,
    MAX_AUTHORIZED_RANGES,
    NON_PUBLIC_RANGES,
    REGIONS,
    RESERVED_SERVICE_RANGES,
    RULES,
    SERVICE_CIDR_MIN_PREFIX,
    SPOT_PRICE_DECIMALS,
    SYSTEM_POOL_MIN_MEMORY_MIB,
    SYSTEM_POOL_MIN_PODS,
    SYSTEM_POOL_MIN_VCPUS,
)

ZERO_RANGE = IPv4Network("0.0.0.0/32")


def _aks(fleet: FleetConfig) -> Iterator[tuple[int, ClusterConfig]]:
    return ((i, c) for i, c in enumerate(fleet.clusters) if c.source == "aks")


# --- networking ----------------------------------------------------------------------------


def check_service_cidr(fleet: FleetConfig) -> Iterator[Issue]:
    for i, c in _aks(fleet):
        cidr = c.network.service_cidr
        at = key_path("clusters", i, "network", "serviceCidr")
        reserved = [str(r) for r in RESERVED_SERVICE_RANGES if cidr.overlaps(r)]
        if reserved:
            rule = RULES["service-cidr-reserved"]
            yield Issue(at, f"{cidr} overlaps {', '.join(reserved)}; {rule.cite()}")
        if cidr.prefixlen < SERVICE_CIDR_MIN_PREFIX:
            yield Issue(
                at,
                f"{cidr} is larger than /{SERVICE_CIDR_MIN_PREFIX}; "
                + RULES["service-cidr-size"].cite(),
            )


# --- pools ---------------------------------------------------------------------------------


def check_spot_pools(fleet: FleetConfig) -> Iterator[Issue]:
    for i, c in _aks(fleet):
        for j, pool in enumerate(c.pools):
            if pool.priority != "Spot":
                continue
            at = key_path("clusters", i, "pools", j)
            if pool.upgrade_settings is not None and pool.upgrade_settings.max_surge is not None:
                yield Issue(
                    f"{at}.upgradeSettings.maxSurge",
                    "remove it (a cluster's upgrades.nodePools.maxSurge is left out of Spot pools "
                    f"by the program); {RULES['spot-max-surge'].cite()}",
                )
            price = pool.spot_max_price
            if price is not None and price > 0:
                exponent = Decimal(repr(price)).as_tuple().exponent
                if isinstance(exponent, int) and -exponent > SPOT_PRICE_DECIMALS:
                    yield Issue(
                        f"{at}.spotMaxPrice",
                        f"{price!r} has more than {SPOT_PRICE_DECIMALS} decimal places; "
                        + RULES["spot-max-price"].cite(),
                    )


def check_system_pools(fleet: FleetConfig) -> Iterator[Issue]:
    shapes = custom_shapes(fleet)
    for i, c in _aks(fleet):
        sp = c.system_pool
        at = key_path("clusters", i, "systemPool")
        max_pods = sp.max_pods or DEFAULT_MAX_PODS[c.network_mode]
        nodes = sp.min_count if sp.autoscaling and sp.min_count is not None else sp.count
        if max_pods * nodes < SYSTEM_POOL_MIN_PODS:
            key = "maxPods" if sp.max_pods is not None else "count"
            yield Issue(
                f"{at}.{key}",
                f"{nodes} node(s) x {max_pods} pods = {max_pods * nodes}; "
                + RULES["system-pool-pods"].cite(),
            )
        shape = lookup_vm(sp.vm_size, shapes)
        small = shape is not None and (
            shape.vcpus < SYSTEM_POOL_MIN_VCPUS or shape.memory_mib < SYSTEM_POOL_MIN_MEMORY_MIB
        )
        if small or sp.vm_size.lower().startswith("standard_b"):
            what = (
                f"{shape.vcpus} vCPUs, {shape.memory_mib // 1024} GiB"
                if shape is not None and small
                else "B-series"
            )
            yield Issue(
                f"{at}.vmSize",
                f"{sp.vm_size} ({what}); {RULES['system-pool-vm'].cite()}",
            )


# --- access --------------------------------------------------------------------------------


def _ranges_path(i: int, c: ClusterConfig) -> str:
    return (
        key_path("clusters", i, "access", "authorizedIpRanges")
        if c.access is not None
        else "access.authorizedIpRanges"
    )


def check_range_counts(fleet: FleetConfig) -> Iterator[Issue]:
    """What each API server gets: the written ranges plus the program's egress /32s."""
    for i, c in _aks(fleet):
        access = access_of(fleet, c)
        written = list(access.authorized_ip_ranges)
        if not written:
            continue
        callers = admitted_callers(fleet, c)
        path = _ranges_path(i, c)
        total = len(written) + len(callers)
        if total > MAX_AUTHORIZED_RANGES:
            yield Issue(
                path,
                f"{c.name!r} would get {total} ranges ({len(written)} written + {len(callers)} "
                f"egress /32 of {', '.join(callers)}); {RULES['authorized-ranges-count'].cite()}",
            )
        if ZERO_RANGE in written and total > 1:
            yield Issue(
                f"{path}[{written.index(ZERO_RANGE)}]",
                f"{c.name!r} gets other ranges too"
                + (f" (the egress of {', '.join(callers)})" if callers else "")
                + f"; {RULES['authorized-ranges-zero'].cite()}",
            )


def _non_public(cidr: IPv4Network) -> str | None:
    if cidr == ZERO_RANGE or cidr.prefixlen == 0:
        return None  # the 'egress only' form and the open range have rules of their own
    return next((why for net, why in NON_PUBLIC_RANGES if cidr.overlaps(net)), None)


def _access_sections(fleet: FleetConfig) -> Iterator[tuple[str, AccessConfig, list[str]]]:
    """Each written `access` section of AKS clusters, its path and the clusters it reaches."""
    aks = list(_aks(fleet))
    shared = [c.name for _, c in aks if c.access is None and not fleet_ranges_skipped(fleet, c)]
    if shared:
        yield "access", fleet.access, shared
    for i, c in aks:
        if c.access is not None:
            yield key_path("clusters", i, "access"), c.access, [c.name]


def _virtual(fleet: FleetConfig, name: str) -> bool:
    """A cluster with virtual nodes: AKS lets it take no ranges (checks.aks)."""
    cluster = fleet.cluster(name)
    return cluster is not None and cluster.virtual_nodes.enabled


def check_public_ranges(fleet: FleetConfig) -> Iterator[Issue]:
    """Placeholder and non-public ranges admit nobody: an error for production, else a warning."""
    production = fleet.environment == "production"
    severity = "error" if production else "warning"
    rule = RULES["authorized-ranges-public"]
    for path, access, clusters in _access_sections(fleet):
        for j, cidr in enumerate(access.authorized_ip_ranges):
            why = _non_public(cidr)
            if why is None:
                continue
            yield Issue(
                f"{path}.authorizedIpRanges[{j}]",
                f"{cidr} is {why}: {', '.join(clusters)} would admit nobody from it; "
                f"{EGRESS_HINT}; {rule.cite()}",
                severity,
            )
        open_ = [n for n in clusters if not _virtual(fleet, n)]
        if production and not access.authorized_ip_ranges and open_:
            yield Issue(
                f"{path}.authorizedIpRanges",
                f"production API servers of {', '.join(open_)} take any source address "
                f"(Entra ID and Azure RBAC still apply): {EGRESS_HINT}",
                "warning",
            )


# --- regions -------------------------------------------------------------------------------


def _region_issue(path: str, location: str) -> Issue | None:
    if location in REGIONS:
        return None
    rule = RULES["region-name"]
    close = difflib.get_close_matches(location, sorted(REGIONS), n=3, cutoff=0.8)
    if close:
        return Issue(path, f"{location!r}: did you mean {' or '.join(close)}? {rule.cite()}")
    return Issue(
        path,
        f"{location!r} is not in the region list this project pins ({rule.read}); if Azure "
        f"opened it since, ignore this; {rule.cite()}",
        "warning",
    )


def check_regions(fleet: FleetConfig) -> Iterator[Issue]:
    if fleet.location is not None:
        found = _region_issue("location", fleet.location)
        if found:
            yield found
    for i, c in _aks(fleet):
        if c.location is not None:
            found = _region_issue(key_path("clusters", i, "location"), c.location)
            if found:
                yield found


AKS_RULE_CHECKS: tuple[Check, ...] = (
    check_service_cidr,
    check_spot_pools,
    check_system_pools,
    check_range_counts,
    check_public_ranges,
    check_regions,
)


# --- across stacks -------------------------------------------------------------------------


def shared_resource_groups(stack: str, groups: Mapping[str, tuple[str, str | None]]) -> list[Issue]:
    """Stacks that claim this stack's resource group (in one subscription, or one not named).

    `groups`: every stack of the project -> (its resource group, its `azure-native:subscriptionId`
    or None), this one included.
    """
    if stack not in groups:
        return []
    mine, my_sub = groups[stack]
    others = sorted(
        other
        for other, (group, sub) in groups.items()
        if other != stack
        and group.lower() == mine.lower()  # ARM resource group names are case-insensitive
        and (my_sub is None or sub is None or sub == my_sub)
    )
    if not others:
        return []
    return [
        Issue(
            "resourceGroup",
            f"{mine!r} is also the resource group of stack(s) {', '.join(others)} "
            f"(Pulumi.{others[0]}.yaml): give this stack its own resourceGroup, or set "
            "azure-native:subscriptionId on both if they deploy to different subscriptions; "
            + RULES["shared-resource-group"].cite(),
        )
    ]
