"""The one date the stack is judged on: AKS_BATCH_FLEET_TODAY (YYYY-MM-DD) if set, else UTC today.

Two answers depend on it: the AKS calendar check (checks.upgrades) and the credential
generations (config.resolve.credential_schedule), both taking the day as an optional argument
and reading it here when it is not given. The offline tests pin it (tests/conftest.py):
preflight answers "what does this stack look like on that day".
"""

from __future__ import annotations

import os
from datetime import UTC, date, datetime

TODAY_ENV = "AKS_BATCH_FLEET_TODAY"


def today() -> date:
    """AKS_BATCH_FLEET_TODAY if set, else today in UTC.

    Raises ValueError for a value that is not an ISO date (`checks.upgrades.check_calendar`
    reports it).
    """
    raw = os.environ.get(TODAY_ENV)
    return date.fromisoformat(raw) if raw else datetime.now(UTC).date()
