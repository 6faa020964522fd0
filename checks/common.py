"""What every check module shares: the check signature and small helpers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from config.errors import Issue
from config.models import FleetConfig

# A check reads the whole parsed fleet and yields every problem it finds, with its key path.
Check = Callable[[FleetConfig], Iterator[Issue]]


def duplicates(names: Iterable[str]) -> set[str]:
    """The names that occur more than once."""
    return {n for n, c in Counter(names).items() if c > 1}
