"""How AKS upgrades a cluster: auto-upgrade channels, maintenance windows, pool surge and drain.

The shapes are AKS's own (ManagedCluster `autoUpgradeProfile`, MaintenanceConfiguration
`maintenanceWindow`, AgentPool `upgradeSettings`), with its single-field ranges
(`upstream.aks_versions`). Rules that relate fields (one schedule, a window that does nothing,
channels against versions and pools) live in `checks.upgrades`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from config.base import Model

WeekDay = Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_DATE = r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"


class DailySchedule(Model):
    interval_days: int = Field(default=1, ge=1, le=7)


class WeeklySchedule(Model):
    day_of_week: WeekDay
    interval_weeks: int = Field(default=1, ge=1, le=4)


class AbsoluteMonthlySchedule(Model):
    day_of_month: int = Field(ge=1, le=31)
    interval_months: int = Field(default=1, ge=1, le=6)


class RelativeMonthlySchedule(Model):
    day_of_week: WeekDay
    week_index: Literal["First", "Second", "Third", "Fourth", "Last"]
    interval_months: int = Field(default=1, ge=1, le=6)


class MaintenanceSchedule(Model):
    """Exactly one of the four (checks.upgrades says so with the key path)."""

    daily: DailySchedule | None = None
    weekly: WeeklySchedule | None = None
    absolute_monthly: AbsoluteMonthlySchedule | None = None
    relative_monthly: RelativeMonthlySchedule | None = None

    def describe(self) -> str:
        """'Saturday every week', for the plan."""
        if self.weekly is not None:
            w = self.weekly
            every = "week" if w.interval_weeks == 1 else f"{w.interval_weeks} weeks"
            return f"{w.day_of_week} every {every}"
        if self.daily is not None:
            d = self.daily.interval_days
            return "every day" if d == 1 else f"every {d} days"
        if self.absolute_monthly is not None:
            a = self.absolute_monthly
            return f"day {a.day_of_month} every {a.interval_months} month(s)"
        if self.relative_monthly is not None:
            r = self.relative_monthly
            return f"{r.week_index} {r.day_of_week} every {r.interval_months} month(s)"
        return "-"


class DateSpan(Model):
    """Dates (inclusive, in the window's utcOffset) on which AKS may not start maintenance."""

    start: str = Field(pattern=_DATE)
    end: str = Field(pattern=_DATE)


class MaintenanceWindow(Model):
    """An AKS planned-maintenance window (`aksManagedAutoUpgradeSchedule` and friends)."""

    schedule: MaintenanceSchedule
    # AKS: 4 to 24 hours; auto-upgrade needs at least four.
    duration_hours: int = Field(ge=4, le=24)
    start_time: str = Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$")
    utc_offset: str = Field(default="+00:00", pattern=r"^[+-](0\d|1[0-4]):[0-5]\d$")
    not_allowed_dates: list[DateSpan] = Field(default_factory=list[DateSpan])

    def describe(self) -> str:
        return (
            f"{self.schedule.describe()}, {self.start_time} UTC{self.utc_offset} "
            f"for {self.duration_hours}h"
        )


class PoolUpgradeSettings(Model):
    """AgentPool `upgradeSettings`: how AKS replaces a pool's nodes in an upgrade."""

    # Extra nodes during an upgrade: a count ('1'..'1000') or a share of the pool ('1%'..'100%').
    # AKS's default is 10%; it recommends 33% for production.
    max_surge: str | None = Field(default=None, pattern=r"^([1-9]\d{0,2}|1000|[1-9]\d?%|100%)$")
    # AKS: 5 minutes to 24 hours (default 30): how long a node's drain may wait on its pods.
    drain_timeout_minutes: int | None = Field(default=None, ge=5, le=1440)
    # AKS: 0-30 minutes (default 0): wait after draining a node before the next one.
    node_soak_minutes: int | None = Field(default=None, ge=0, le=30)
    # Nodes taken out at once with no surge node for them: a count or a share (AKS's default 0).
    max_unavailable: str | None = Field(default=None, pattern=r"^(\d{1,3}|1000|\d{1,2}%|100%)$")
    # What AKS does with a node whose drain is still blocked at the drain timeout (a
    # PodDisruptionBudget, as `batchPods: protect` sets): `Cordon` leaves it cordoned and labelled
    # Quarantined with a surge node in its place and moves on; `Schedule` makes it schedulable
    # again, not upgraded. Either way the upgrade ends Failed. Unset: `Cordon` under
    # `batchPods: protect` (not on Spot pools, which have no surge), else AKS's default.
    undrainable_node_behavior: Literal["Cordon", "Schedule"] | None = None

    def describe(self) -> str:
        parts = [
            f"surge {self.max_surge}" if self.max_surge else "",
            f"unavailable {self.max_unavailable}" if self.max_unavailable else "",
            f"drain {self.drain_timeout_minutes}m" if self.drain_timeout_minutes else "",
            f"soak {self.node_soak_minutes}m" if self.node_soak_minutes is not None else "",
            f"undrainable: {self.undrainable_node_behavior}"
            if self.undrainable_node_behavior
            else "",
        ]
        return ", ".join(p for p in parts if p) or "AKS defaults"


class UpgradeSettings(Model):
    """A cluster's upgrade policy (docs/upgrades.md). A cluster's `upgrades` replaces the
    fleet's whole, as `access` does."""

    # autoUpgradeProfile.upgradeChannel. `patch` keeps the minor this stack declares and takes
    # its newest patch; minors move only by config (checks.upgrades refuses stable/rapid).
    channel: Literal["none", "patch", "stable", "rapid", "node-image"] = "none"
    # autoUpgradeProfile.nodeOSUpgradeChannel (AKS's default for new clusters: NodeImage).
    node_os_channel: Literal["None", "Unmanaged", "NodeImage", "SecurityPatch"] = "NodeImage"
    # The MaintenanceConfiguration `aksManagedAutoUpgradeSchedule`: when `channel` may act.
    window: MaintenanceWindow | None = None
    # The MaintenanceConfiguration `aksManagedNodeOSUpgradeSchedule`: when node images change.
    node_os_window: MaintenanceWindow | None = None
    # Every pool's `upgradeSettings` unless the pool sets its own `upgradeSettings`.
    node_pools: PoolUpgradeSettings = PoolUpgradeSettings()
    # Pods Kueue admitted, when AKS drains their node in an upgrade. `protect`: a
    # PodDisruptionBudget in each team namespace refuses their eviction, so they run to the end on
    # the old node (AKS waits `drainTimeoutMinutes`, then, with `Cordon`, quarantines the node
    # and goes on). `evict`: AKS's default; each eviction restarts the pod and counts against its
    # Job's backoffLimit (docs/upgrades.md, "Batch pods through node upgrades").
    batch_pods: Literal["protect", "evict"] = "protect"
