"""AKS's Kubernetes calendar and upgrade rules: which minors Azure serves, until when, and how a
cluster moves between them. Dated facts: re-read them before relying on a date past `READ_ON`.

Sources (read on READ_ON from MicrosoftDocs/azure-aks-docs at commit fb060ab, 2026-08-21):
- `articles/aks/supported-kubernetes-versions.md`, "AKS Kubernetes release calendar" and "LTS
  versions": "Unless an explicit date is provided, the End of Life (EOL) date is the last day of
  the specified month"; "the creation of new clusters isn't possible during the platform support
  period"; node pools may be up to three minors behind the control plane (from 1.28); a supported
  non-LTS cluster upgrades one minor at a time.
- `articles/aks/long-term-support.md`: "Enabling LTS requires moving your cluster to the Premium
  tier and explicitly selecting the LTS support plan" (`supportPlan: AKSLongTermSupport`).
- `articles/aks/auto-upgrade-cluster.md`: cluster auto-upgrade "always upgrades the control plane
  and the node pools together"; `node-image` is a legacy channel.
- `articles/aks/planned-maintenance.md`: `aksManagedAutoUpgradeSchedule` and
  `aksManagedNodeOSUpgradeSchedule`; "use a maintenance window with a duration of four hours or
  more". Field ranges (durationHours 4-24, intervalDays 1-7, intervalWeeks 1-4, intervalMonths
  1-6, dayOfMonth 1-31) are the REST API's, as the azure-native SDK (API 2025-09-01) and AVM's
  managed-cluster module state them.
- `articles/aks/upgrade-aks-node-pools-rolling.md`: drain timeout 5 minutes to 24 hours (default
  30), node soak 0-30 minutes, max surge an integer or a percentage (production: 33%).
- `articles/aks/auto-upgrade-node-os-image.md`: "Azure Linux doesn't support [SecurityPatch] on
  GPU-enabled VMs".
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date
from typing import Final

READ_ON: Final = date(2026, 12, 3)
CALENDAR_SOURCE: Final = (
    "AKS release calendar, learn.microsoft.com/azure/aks/supported-kubernetes-versions "
    f"(read {READ_ON.isoformat()})"
)


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _month(year: int, month: int) -> date:
    """A calendar month as AKS writes it ('Jun 2026'): its first day for GA dates."""
    return date(year, month, 1)


@dataclass(frozen=True, slots=True)
class AksMinor:
    """One row of AKS's calendar: when AKS serves a minor, with and without LTS."""

    minor: tuple[int, int]
    ga: date  # first day of the GA month
    end_of_life: date  # end of community (standard) support
    lts_end: date  # end of long-term support (Premium tier + AKSLongTermSupport)
    platform_support: str  # as the calendar says it ("until 1.37 GA"); no new clusters in it

    @property
    def name(self) -> str:
        return f"{self.minor[0]}.{self.minor[1]}"

    def row(self) -> str:
        """The calendar row in the calendar's own words, for messages."""
        return (
            f"AKS {self.name}: GA {self.ga:%b %Y}, end of life {self.end_of_life:%b %d, %Y}, "
            f"platform support {self.platform_support} (no new clusters), "
            f"LTS until {self.lts_end:%b %d, %Y}"
        )


CALENDAR: Final[dict[tuple[int, int], AksMinor]] = {
    row.minor: row
    for row in (
        AksMinor((1, 29), _month(2024, 3), _month_end(2025, 3), _month_end(2026, 4), "-"),
        AksMinor((1, 30), _month(2024, 7), date(2025, 8, 22), _month_end(2026, 7), "-"),
        AksMinor((1, 31), _month(2024, 11), date(2025, 11, 1), _month_end(2026, 11), "-"),
        AksMinor(
            (1, 32), _month(2025, 4), _month_end(2026, 3), _month_end(2027, 3), "until 1.36 GA"
        ),
        AksMinor(
            (1, 33), _month(2025, 6), _month_end(2026, 7), _month_end(2027, 7), "until 1.37 GA"
        ),
        AksMinor(
            (1, 34), _month(2025, 11), _month_end(2026, 11), _month_end(2027, 11), "until 1.38 GA"
        ),
        AksMinor(
            (1, 35), _month(2026, 3), _month_end(2027, 3), _month_end(2028, 3), "until 1.39 GA"
        ),
        AksMinor(
            (1, 36), _month(2026, 6), _month_end(2027, 6), _month_end(2028, 6), "until 1.40 GA"
        ),
        AksMinor(
            (1, 37), _month(2026, 10), _month_end(2027, 10), _month_end(2028, 10), "until 1.41 GA"
        ),
    )
}

# Preflight warns this many days before a minor's end (standard or LTS).
WARN_DAYS: Final = 60
# Node pools may run up to this many minors behind their control plane (AKS, from 1.28).
MAX_POOL_SKEW: Final = 3
LTS_TIER: Final = "Premium"
LTS_PLAN: Final = "AKSLongTermSupport"

RULE_LTS: Final = (
    "LTS needs the Premium tier (AKS long-term-support: 'Enabling LTS requires moving your "
    "cluster to the Premium tier')"
)
RULE_ONE_MINOR: Final = (
    "a supported non-LTS AKS cluster upgrades one minor at a time (AKS upgrade rules)"
)
RULE_POOL_SKEW: Final = (
    f"AKS node pools run at most {MAX_POOL_SKEW} minors behind their control plane, never ahead "
    "of it (AKS version skew policy, from 1.28)"
)
RULE_AUTO_UPGRADE_POOLS: Final = (
    "cluster auto-upgrade always upgrades the control plane and the node pools together "
    "(AKS auto-upgrade-cluster)"
)
RULE_SECURITY_PATCH_GPU: Final = (
    "Azure Linux doesn't support the SecurityPatch node OS channel on GPU-enabled VMs "
    "(AKS auto-upgrade-node-os-image)"
)

# Cluster auto-upgrade channels (ManagedClusterAutoUpgradeProfile.upgradeChannel) and node OS
# channels (nodeOSUpgradeChannel), as the azure-native SDK's enums spell them.
UPGRADE_CHANNELS: Final = ("none", "patch", "stable", "rapid", "node-image")
NODE_OS_CHANNELS: Final = ("None", "Unmanaged", "NodeImage", "SecurityPatch")
# The maintenance configurations' fixed names (MaintenanceConfiguration configName).
AUTO_UPGRADE_SCHEDULE: Final = "aksManagedAutoUpgradeSchedule"
NODE_OS_SCHEDULE: Final = "aksManagedNodeOSUpgradeSchedule"


def supported_on(day: date, *, lts: bool = False) -> list[AksMinor]:
    """The minors AKS serves for a new cluster on `day` (GA reached, end not passed)."""
    return [
        row
        for row in CALENDAR.values()
        if row.ga <= day <= (row.lts_end if lts else row.end_of_life)
    ]
