"""Maintenance windows against dispatch sets: no two workers of one set in maintenance at once.

AKS drains a pool's nodes in a node-image or Kubernetes upgrade (surge, cordon, drain, remove) only
inside the cluster's planned-maintenance windows (`aksManagedAutoUpgradeSchedule`,
`aksManagedNodeOSUpgradeSchedule`). If two workers that MultiKueue dispatches one queue's jobs to
are drained at the same time, the queue loses both at once, and a job evicted from one has nowhere
to go. So the windows of the workers of one dispatch set may not overlap: an error with the key
path of the window and an example of the overlap. A worker of a set of two or more whose channel
may act with no window ("any time") is a warning in a production stack.

Occurrences are compared over one year from a fixed Monday, every interval taken as 1: AKS counts
`intervalWeeks`, `intervalDays` and `intervalMonths` from each configuration's start date, which
the stack does not set, so two windows that could coincide are taken to coincide.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from datetime import date, datetime, timedelta

from checks.common import Check
from config.errors import Issue, key_path
from config.models import ClusterConfig, FleetConfig
from config.resolve import dispatch_sets
from config.upgrades import MaintenanceWindow, UpgradeSettings

FROM = date(2027, 1, 4)  # a Monday; the horizon starts here
DAYS = 366
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
WEEK_INDEX = {"First": 0, "Second": 1, "Third": 2, "Fourth": 3}

Span = tuple[datetime, datetime]


def _days(window: MaintenanceWindow) -> Iterator[date]:
    s = window.schedule
    for n in range(DAYS):
        day = FROM + timedelta(days=n)
        if s.daily is not None:
            yield day
        elif s.weekly is not None:
            if WEEKDAYS[day.weekday()] == s.weekly.day_of_week:
                yield day
        elif s.absolute_monthly is not None:
            if day.day == s.absolute_monthly.day_of_month:
                yield day
        elif s.relative_monthly is not None:
            r = s.relative_monthly
            if WEEKDAYS[day.weekday()] != r.day_of_week:
                continue
            last = calendar.monthrange(day.year, day.month)[1]
            if r.week_index == "Last":
                if day.day + 7 > last:
                    yield day
            elif (day.day - 1) // 7 == WEEK_INDEX[r.week_index]:
                yield day


def spans(window: MaintenanceWindow) -> list[Span]:
    """Each occurrence of `window` in the horizon, in UTC."""
    sign = 1 if window.utc_offset.startswith("+") else -1
    hours, minutes = (int(x) for x in window.utc_offset[1:].split(":"))
    offset = sign * timedelta(hours=hours, minutes=minutes)
    start_h, start_m = (int(x) for x in window.start_time.split(":"))
    out: list[Span] = []
    for day in _days(window):
        start = datetime(day.year, day.month, day.day, start_h, start_m) - offset
        out.append((start, start + timedelta(hours=window.duration_hours)))
    return out


def _first_overlap(a: list[Span], b: list[Span]) -> Span | None:
    i = j = 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            return start, end
        if a[i][1] <= b[j][1]:
            i += 1
        else:
            j += 1
    return None


def _windows(fleet: FleetConfig, i: int, c: ClusterConfig) -> list[tuple[str, MaintenanceWindow]]:
    """A worker's windows that can drain nodes, with their key paths."""
    up = fleet.upgrades_of(c)
    base = key_path("clusters", i, "upgrades") if c.upgrades is not None else "upgrades"
    out: list[tuple[str, MaintenanceWindow]] = []
    if up.window is not None and up.channel != "none":
        out.append((f"{base}.window", up.window))
    if up.node_os_window is not None and up.node_os_channel in ("NodeImage", "SecurityPatch"):
        out.append((f"{base}.nodeOsWindow", up.node_os_window))
    return out


def _any_time(up: UpgradeSettings) -> list[str]:
    """What may drain a worker's nodes at any time (a channel that acts with no window)."""
    out: list[str] = []
    if up.channel != "none" and up.window is None:
        out.append(f"upgrades.channel {up.channel}")
    if up.node_os_channel in ("NodeImage", "SecurityPatch") and up.node_os_window is None:
        out.append(f"upgrades.nodeOsChannel {up.node_os_channel}")
    return out


def check_staggered_windows(fleet: FleetConfig) -> Iterator[Issue]:
    index = {c.name: i for i, c in enumerate(fleet.clusters)}
    for dispatch in dispatch_sets(fleet):
        workers = [
            (index[w], fleet.clusters[index[w]])
            for w in dispatch.workers
            if w in index and fleet.clusters[index[w]].source == "aks"
        ]
        if len(workers) < 2:
            continue
        queues = ", ".join(dispatch.queues) or dispatch.name
        yield from _overlaps(fleet, workers, queues)
        if fleet.environment != "production":
            continue
        for i, c in workers:
            loose = _any_time(fleet.upgrades_of(c))
            if loose:
                base = key_path("clusters", i, "upgrades") if c.upgrades else "upgrades"
                yield Issue(
                    base,
                    f"{c.name!r} has {' and '.join(loose)} with no window: AKS may drain its "
                    f"nodes at any time, also while other workers of {queues} are",
                    "warning",
                )


def _overlaps(
    fleet: FleetConfig, workers: list[tuple[int, ClusterConfig]], queues: str
) -> Iterator[Issue]:
    windows = {c.name: _windows(fleet, i, c) for i, c in workers}
    # One window written once and inherited by several workers: one error for all of them.
    users: dict[str, list[str]] = {}
    for name, found in windows.items():
        for path, _ in found:
            users.setdefault(path, []).append(name)
    for path, names in users.items():
        if len(names) > 1:
            yield Issue(
                path,
                f"workers {', '.join(names)} of the dispatch set of {queues} share this window: "
                "AKS drains their nodes in the same hours and the queue loses all of them at "
                "once; stagger them (a worker's own clusters[].upgrades replaces the fleet's)",
            )
    timed = {name: [(p, spans(w)) for p, w in found] for name, found in windows.items()}
    names = list(windows)
    for n, a in enumerate(names):
        for b in names[n + 1 :]:
            hit = next(
                (
                    (pa, pb, found)
                    for pa, sa in timed[a]
                    for pb, sb in timed[b]
                    if pa != pb and (found := _first_overlap(sa, sb)) is not None
                ),
                None,
            )
            if hit is None:
                continue
            pa, pb, (start, end) = hit
            yield Issue(
                pb,
                f"overlaps {pa} ({a!r}): workers {a!r} and {b!r} of the dispatch set of {queues} "
                f"may be in maintenance at once, e.g. {start:%a %H:%M}-{end:%H:%M} UTC; stagger "
                "them",
            )


MAINTENANCE_CHECKS: tuple[Check, ...] = (check_staggered_windows,)
