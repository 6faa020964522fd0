"""Credential rotation: the schedule's values, and which clusters a generation or override names.

What each credential may do is `checks.access`; when it rotates is `config.resolve
.credential_schedule`; this module only refuses what cannot be a schedule, with its key path.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

from checks.common import Check
from config.credentials import MAX_ROTATE_DAYS, WARN_ROTATE_DAYS
from config.errors import Issue
from config.models import FleetConfig
from config.multikueue import MAX_ROTATION
from config.resolve import enabled_workers, member_names


def _days_issues(days: int | None, path: str) -> Iterator[Issue]:
    if days is None:
        return
    if not 1 <= days <= MAX_ROTATE_DAYS:
        yield Issue(
            path,
            f"must be a number of days, 1..{MAX_ROTATE_DAYS} (e.g. 90); leave it out for no "
            "schedule (tokens then rotate only when a generation is raised by hand)",
        )
    elif days > WARN_ROTATE_DAYS:
        yield Issue(
            path,
            f"{days} days: a token may then live over a year; rotating every 90 days or less is "
            "the usual policy",
            "warning",
        )


def _start_issue(start: str | None, path: str) -> Iterator[Issue]:
    if start is None:
        return
    try:
        date.fromisoformat(start)
    except ValueError:
        yield Issue(path, f"{start!r} is not a calendar date (YYYY-MM-DD)")


def check_credentials(fleet: FleetConfig) -> Iterator[Issue]:
    """`credentials.*` and `karmada.rotation.*`: bounds, dates, and only known clusters."""
    settings = fleet.credentials
    yield from _days_issues(settings.rotate_every_days, "credentials.rotateEveryDays")
    yield from _start_issue(settings.schedule_start, "credentials.scheduleStart")
    if settings.rotate_every_days is not None and settings.schedule_start is None:
        yield Issue(
            "credentials.scheduleStart",
            "required with rotateEveryDays: the day the schedule counts from (YYYY-MM-DD); "
            "today's date rotates nothing now, the first rotation is rotateEveryDays later",
        )
    workers = enabled_workers(fleet)
    members = member_names(fleet)
    holders = list(dict.fromkeys([*workers, *members]))
    for name, own in settings.clusters.items():
        path = f"credentials.clusters.{name}"
        if name not in holders:
            yield Issue(
                path,
                f"{name!r} holds no credential the stack mints (MultiKueue workers and Karmada "
                f"members: {', '.join(holders) or 'none'})",
            )
        yield from _days_issues(own.rotate_every_days, f"{path}.rotateEveryDays")
        yield from _start_issue(own.schedule_start, f"{path}.scheduleStart")
        if (
            own.rotate_every_days is not None
            and (own.schedule_start or settings.schedule_start) is None
        ):
            yield Issue(
                f"{path}.scheduleStart",
                "required with rotateEveryDays (here or as credentials.scheduleStart)",
            )
    karmada = fleet.karmada
    if karmada is None:
        return
    for name, generation in karmada.rotation.items():
        path = f"karmada.rotation.{name}"
        if name not in members:
            yield Issue(path, f"{name!r} is not a Karmada member ({', '.join(members) or 'none'})")
        if not 0 <= generation <= MAX_ROTATION:
            yield Issue(path, f"must be 0..{MAX_ROTATION}")


CREDENTIAL_CHECKS: tuple[Check, ...] = (check_credentials,)
