"""Credential rotation (`credentials`): how often the stack mints new worker and member tokens.

The MultiKueue worker token (`multiKueue.rotation.<worker>`) and the Karmada member token
(`karmada.rotation.<member>`) each have a generation: a new generation is a new token Secret,
hence a new token, and the old one is deleted (revoked). With `rotateEveryDays` the generation
also counts the whole periods since `scheduleStart`, so the first `pulumi up` of each period
rotates without anyone editing config (config.resolve.credential_schedule). The day comes
from config.clock.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field

from config.base import Model

# A period longer than this is allowed (validation warns): a token older than about a year is
# what the rotation exists to avoid.
WARN_ROTATE_DAYS: Final = 400
MAX_ROTATE_DAYS: Final = 36_500
DATE_PATTERN: Final = r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"


class RotationOverride(Model):
    """One cluster's own schedule for the tokens minted on it (MultiKueue, Karmada)."""

    # 0 and negatives are refused with the key path (checks.credentials), not by pydantic's
    # bounds, so the message names what is allowed.
    rotate_every_days: int | None = None
    schedule_start: str | None = Field(default=None, pattern=DATE_PATTERN)


class CredentialSettings(Model):
    """The fleet's rotation schedule, and per-cluster overrides (`clusters.<name>`)."""

    # None: no schedule; tokens rotate only when a generation is raised by hand.
    rotate_every_days: int | None = None
    # Day zero of the schedule (YYYY-MM-DD, UTC): rotations fall on scheduleStart + k *
    # rotateEveryDays. Required with rotateEveryDays, so turning the schedule on (with a start
    # in the current period) rotates nothing by itself.
    schedule_start: str | None = Field(default=None, pattern=DATE_PATTERN)
    clusters: dict[str, RotationOverride] = Field(default_factory=dict[str, RotationOverride])
