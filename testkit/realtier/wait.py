"""The real tier's two polling waits: `until` something is true, and that it `holds` for a while.

Both are bounded, and their failure says what was waited for and the last thing seen (the
condition's own last value, or `seen()` when the caller has something more telling), so a red
run names the state it stopped in. Timeouts stay at the call sites: each is measured for what it
waits on. Offline tests: tests/test_realtier_wait.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, TypeVar

T = TypeVar("T")

POLL: Final = 0.25


def _describe(last: object, seen: Callable[[], object] | None) -> object:
    if seen is None:
        return last
    try:
        return seen()
    except Exception as exc:  # the timeout being reported matters more than this
        return f"(seen() raised {type(exc).__name__}: {exc}; the condition last gave {last!r})"


def until(
    condition: Callable[[], T | None],
    timeout: float,
    what: str,
    *,
    seen: Callable[[], object] | None = None,
    poll: float = POLL,
    alive: Callable[[], object] | None = None,
) -> T:
    """Poll `condition()` until it is truthy; return that value. Fails after `timeout` seconds
    with `what` and the last thing seen. `alive` runs before each poll (e.g. a check that the
    planes' processes still run, so a crash fails at once instead of at the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        if alive is not None:
            alive()
        last = condition()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what}: not after {timeout:.0f}s; last seen: {_describe(last, seen)}"
            )
        time.sleep(poll)


def holds(
    condition: Callable[[], object],
    window: float,
    what: str,
    *,
    seen: Callable[[], object] | None = None,
    poll: float = POLL,
) -> None:
    """`condition()` stays truthy for `window` seconds (polled; fails the moment it is not, with
    `what`, when it broke and what was seen)."""
    t0 = time.monotonic()
    while True:
        last = condition()
        if not last:
            raise AssertionError(
                f"{what}: broke after {time.monotonic() - t0:.1f}s of {window:.0f}s; "
                f"seen: {_describe(last, seen)}"
            )
        if time.monotonic() - t0 >= window:
            return
        time.sleep(poll)
