"""Versions Azure serves and how clusters move between them: the AKS calendar, LTS, version skew
between a control plane and its pools, Kueue's tested minors, channels and maintenance windows.

The calendar check depends on the date (as do credential generations, config.resolve): it reads
today through config.clock, AKS_BATCH_FLEET_TODAY (YYYY-MM-DD) when set, else the UTC date.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

from checks.common import Check
from config.clock import TODAY_ENV, today
from config.errors import Issue, Severity, key_path
from config.models import ClusterConfig, FleetConfig
from config.resolve import custom_shapes, version_key
from config.upgrades import MaintenanceWindow, UpgradeSettings
from upstream.aks import lookup_vm
from upstream.aks_versions import (
    CALENDAR,
    CALENDAR_SOURCE,
    LTS_PLAN,
    LTS_TIER,
    MAX_POOL_SKEW,
    RULE_AUTO_UPGRADE_POOLS,
    RULE_LTS,
    RULE_POOL_SKEW,
    RULE_SECURITY_PATCH_GPU,
    WARN_DAYS,
    supported_on,
)
from upstream.k8s import minor_of
from upstream.kueue import KUEUE_KUBERNETES

UNTESTED_KEY = "kueue.untestedKubernetesMinor"


def _name(minor: tuple[int, int]) -> str:
    return f"{minor[0]}.{minor[1]}"


def calendar_issues(fleet: FleetConfig, day: date) -> Iterator[Issue]:
    """Every AKS cluster's minor against AKS's calendar on `day`: refused past its end (standard,
    or LTS when the cluster is on LTS), warned within WARN_DAYS of it. Clusters that share a
    version key and a verdict share one issue."""
    low, high = KUEUE_KUBERNETES[fleet.kueue.version]
    usable = [r.name for r in supported_on(day) if low <= r.minor <= high]
    kueue = fleet.kueue.version
    serves = f"AKS serves {', '.join(usable) or 'none'} on {day} that Kueue {kueue} runs on"
    found: dict[tuple[str, str, Severity], list[str]] = {}
    for i, c in enumerate(fleet.clusters):
        if c.source != "aks":
            continue  # an existing cluster's version is its owner's business
        version = fleet.version_of(c)
        minor = minor_of(version)
        lts = c.support_plan == LTS_PLAN
        verdict = _verdict(version, minor, lts, day, serves)
        if verdict is not None:
            who = f"{c.name!r} ({c.sku_tier} tier{', LTS' if lts else ''})"
            found.setdefault((version_key(i, c), *verdict), []).append(who)
    for (path, text, severity), who in found.items():
        yield Issue(path, text.format(who=", ".join(who)), severity)


def _verdict(
    version: str, minor: tuple[int, int], lts: bool, day: date, serves: str
) -> tuple[str, Severity] | None:
    """What the calendar says of one version on `day` ({who} stands for the clusters)."""
    row = CALENDAR.get(minor)
    if row is None:
        known = sorted(CALENDAR)
        where = "older than" if minor < known[0] else "newer than"
        return (
            f"{version} for {{who}} is {where} every minor in the {CALENDAR_SOURCE} "
            f"({_name(known[0])}-{_name(known[-1])}); {serves}",
            "error",
        )
    if day < row.ga:
        return (
            f"{version} for {{who}} is not GA on AKS before {row.ga:%b %Y} ({row.row()}; "
            f"{CALENDAR_SOURCE}); {serves}",
            "error",
        )
    end = row.lts_end if lts else row.end_of_life
    if day > end:
        lts_way = (
            f"; or keep {row.name} on LTS until {row.lts_end}: skuTier: {LTS_TIER} and "
            f"supportPlan: {LTS_PLAN}"
            if not lts and day <= row.lts_end
            else ""
        )
        return (
            f"{version} for {{who}} left AKS support on {end}: AKS creates no cluster on it and "
            f"supports none ({row.row()}; {CALENDAR_SOURCE}). Use one: {serves}{lts_way}",
            "error",
        )
    if (end - day).days <= WARN_DAYS:
        return (
            f"{version} for {{who}} leaves AKS support in {(end - day).days} days, on {end} "
            f"({row.row()}); plan the upgrade to {_name((minor[0], minor[1] + 1))}, one minor at "
            "a time",
            "warning",
        )
    return None


def check_calendar(fleet: FleetConfig) -> Iterator[Issue]:
    try:
        day = today()
    except ValueError:
        yield Issue(TODAY_ENV, "must be a date, YYYY-MM-DD (the day the AKS calendar is read on)")
        return
    yield from calendar_issues(fleet, day)


def check_support_plan(fleet: FleetConfig) -> Iterator[Issue]:
    for i, c in enumerate(fleet.clusters):
        base = key_path("clusters", i)
        if c.source != "aks" and (c.support_plan == LTS_PLAN or c.upgrades is not None):
            key = "supportPlan" if c.support_plan == LTS_PLAN else "upgrades"
            yield Issue(f"{base}.{key}", "only with source: aks (an existing cluster has its own)")
        elif c.support_plan == LTS_PLAN and c.sku_tier != LTS_TIER:
            yield Issue(f"{base}.supportPlan", f"set skuTier: {LTS_TIER}; {RULE_LTS}")


def check_kueue_minor(fleet: FleetConfig) -> Iterator[Issue]:
    """Every cluster runs the pinned Kueue: its control plane stays in Kueue's tested minors, or
    on the one minor after them that `kueue.untestedKubernetesMinor` accepts (a warning)."""
    low, high = KUEUE_KUBERNETES[fleet.kueue.version]
    after = (high[0], high[1] + 1)
    accepted: tuple[int, int] | None = None
    untested = fleet.kueue.untested_kubernetes_minor
    if untested is not None:
        written = minor_of(untested)
        if written != after or untested.count(".") != 1:
            yield Issue(
                UNTESTED_KEY,
                f"{untested!r}: allowed only {_name(after)!r}, the minor after Kueue "
                f"{fleet.kueue.version}'s newest e2e-tested one ({_name(high)}), or nothing",
            )
        else:
            accepted = written
    on_it: list[str] = []
    for i, c in enumerate(fleet.clusters):
        if c.source != "aks":
            continue
        minor = minor_of(fleet.version_of(c))
        if minor == accepted:
            on_it.append(c.name)
            yield Issue(
                version_key(i, c),
                f"{fleet.version_of(c)} for cluster {c.name!r}: Kueue {fleet.kueue.version} was "
                f"e2e-tested up to Kubernetes {_name(high)}; {UNTESTED_KEY} accepts "
                f"{_name(after)} untested. Run a non-production stack on it first, and move "
                "Kueue (kueue.version) when a version tested there is pinned",
                severity="warning",
            )
        elif not low <= minor <= high:
            yield Issue(
                version_key(i, c),
                f"{fleet.version_of(c)} for cluster {c.name!r}: Kueue {fleet.kueue.version} runs "
                f"on Kubernetes {_name(low)} to {_name(high)} (its README's minimum and newest "
                "e2e-tested minor); move Kueue first (kueue.version) or stay on a tested minor"
                + (
                    f", or accept {_name(after)} untested ({UNTESTED_KEY})"
                    if minor == after
                    else ""
                ),
            )
    if accepted is not None and not on_it:
        yield Issue(
            UNTESTED_KEY,
            f"no AKS cluster is on {_name(accepted)}: remove it, so that a later bump is checked "
            "again",
            severity="warning",
        )


def _window_issues(window: MaintenanceWindow, path: str) -> Iterator[Issue]:
    s = window.schedule
    chosen = [x for x in (s.daily, s.weekly, s.absolute_monthly, s.relative_monthly) if x]
    if len(chosen) != 1:
        yield Issue(
            f"{path}.schedule",
            "set exactly one of daily, weekly, absoluteMonthly, relativeMonthly "
            f"(got {len(chosen)})",
        )
    for j, span in enumerate(window.not_allowed_dates):
        try:
            start, end = date.fromisoformat(span.start), date.fromisoformat(span.end)
        except ValueError:
            yield Issue(f"{path}.notAllowedDates[{j}]", "not a calendar date")
            continue
        if end < start:
            yield Issue(f"{path}.notAllowedDates[{j}].end", f"before start ({span.start})")


def _section_issues(up: UpgradeSettings, path: str) -> Iterator[Issue]:
    """One `upgrades` section on its own (the fleet's, or a cluster's)."""
    if up.channel in ("stable", "rapid"):
        yield Issue(
            f"{path}.channel",
            f"{up.channel!r} moves the cluster to other minors by itself while this stack "
            "declares kubernetesVersion: the next `up` would ask AKS to go back, which it "
            "refuses. Use patch (newest patch of the declared minor; minors move by config, one "
            "at a time) or none",
        )
    if up.channel == "node-image":
        yield Issue(
            f"{path}.channel",
            "'node-image' is AKS's legacy channel: set channel: none or patch and "
            "nodeOsChannel: NodeImage",
        )
    if up.window is not None:
        yield from _window_issues(up.window, f"{path}.window")
        if up.channel == "none":
            yield Issue(f"{path}.window", "does nothing with channel: none", "warning")
    if up.node_os_window is not None:
        yield from _window_issues(up.node_os_window, f"{path}.nodeOsWindow")
        if up.node_os_channel in ("None", "Unmanaged"):
            yield Issue(
                f"{path}.nodeOsWindow",
                f"does nothing with nodeOsChannel: {up.node_os_channel} (AKS does not replace "
                "node images then)",
                "warning",
            )


def _cluster_issues(
    fleet: FleetConfig, i: int, c: ClusterConfig, up: UpgradeSettings, path: str
) -> Iterator[Issue]:
    """A section against one cluster it applies to: its version and its pools."""
    version = fleet.version_of(c)
    if up.channel != "none" and version.count(".") == 2:
        yield Issue(
            version_key(i, c),
            f"{version} pins a patch while upgrades.channel is {up.channel!r}: AKS moves the "
            f"patch and the next `up` would ask it back; write {'.'.join(version.split('.')[:2])}",
        )
    if up.node_os_channel == "SecurityPatch":
        shapes = custom_shapes(fleet)
        gpu = [
            p.name
            for p in (c.system_pool, *c.pools)
            if p.os_sku == "AzureLinux"
            and (shape := lookup_vm(p.vm_size, shapes)) is not None
            and shape.gpus > 0
        ]
        if gpu:
            yield Issue(
                f"{path}.nodeOsChannel",
                f"{c.name!r} has Azure Linux GPU pools ({', '.join(gpu)}): use "
                f"NodeImage, or osSku: Ubuntu on those pools; {RULE_SECURITY_PATCH_GPU}",
            )


def check_upgrades(fleet: FleetConfig) -> Iterator[Issue]:
    """Channels, windows and pool versions against AKS's rules, per AKS cluster."""
    yield from _section_issues(fleet.upgrades, "upgrades")
    seen: set[Issue] = set()
    for i, c in enumerate(fleet.clusters):
        if c.source != "aks":
            continue
        up = fleet.upgrades_of(c)
        path = "upgrades"
        if c.upgrades is not None:
            path = key_path("clusters", i, "upgrades")
            yield from _section_issues(up, path)
        for issue in _cluster_issues(fleet, i, c, up, path):
            if issue not in seen:  # the fleet's version and section serve several clusters
                seen.add(issue)
                yield issue
        plane = minor_of(fleet.version_of(c))
        for j, pool in enumerate(c.pools):
            if pool.kubernetes_version is None:
                continue
            at = key_path("clusters", i, "pools", j, "kubernetesVersion")
            minor = minor_of(pool.kubernetes_version)
            control = fleet.version_of(c)
            newer_patch = minor == plane and -1 < _patch(control) < _patch(pool.kubernetes_version)
            if minor > plane or newer_patch:
                yield Issue(
                    at,
                    f"{pool.kubernetes_version} is newer than its control plane ({control}); "
                    + RULE_POOL_SKEW,
                )
            elif plane[1] - minor[1] > MAX_POOL_SKEW or plane[0] != minor[0]:
                yield Issue(
                    at,
                    f"{pool.kubernetes_version} is {plane[1] - minor[1]} minors behind its "
                    f"control plane ({fleet.version_of(c)}); {RULE_POOL_SKEW}",
                )
            elif up.channel != "none" and minor != plane:
                yield Issue(
                    at,
                    f"{pool.kubernetes_version} lags {fleet.version_of(c)} while upgrades.channel "
                    f"is {up.channel!r}: AKS would move it; {RULE_AUTO_UPGRADE_POOLS}",
                )


def _patch(version: str) -> int:
    parts = version.split(".")
    return int(parts[2]) if len(parts) == 3 else -1


UPGRADE_CHECKS: tuple[Check, ...] = (
    check_support_plan,
    check_kueue_minor,
    check_upgrades,
    check_calendar,
)
