"""Where a real test's time goes: the engine, the twins' start and stop, and the rest.

Each real test's wall time (setup, call and teardown, as pytest's JUnit XML counts it) is split:
- `engine`: the Pulumi engine (`Stack.up/preview/refresh/destroy`, the `pulumi` CLI);
- `twins`: starting and stopping loopback planes, nodes, Kueue, Karmada, kruise-manager;
- the rest: what the test itself waits for (controllers: Kueue admitting, the autoscaler, Karmada
  placing, pods finishing), its checks and its deliberate holds.

Time is exclusive: a timed call inside another counts for the inner one only (the engine run a
twin makes while starting is `engine`, not `twins`). Calls on other threads are counted too, so
`engine` plus `twins` can exceed the wall time when a test runs an `up` beside its own waits; the
rest is then 0. tests/realtier/conftest.py records the split as the JUnit property `phases`, which
`scripts/test-times` prints.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Final, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

ENGINE: Final = "engine"
TWINS: Final = "twins"

_lock = threading.Lock()
_totals: dict[str, float] = {}
_local = threading.local()  # .stack: list[list[str | float]]: [phase, started] per thread


def _add(name: str, seconds: float) -> None:
    with _lock:
        _totals[name] = _totals.get(name, 0.0) + seconds


def timed(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Count the decorated call's exclusive time under `name`."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            stack: list[tuple[str, float]] = getattr(_local, "stack", None) or []
            _local.stack = stack
            now = time.monotonic()
            if stack:  # pause the outer phase
                outer, started = stack[-1]
                _add(outer, now - started)
            stack.append((name, now))
            try:
                return fn(*args, **kwargs)
            finally:
                _, started = stack.pop()
                now = time.monotonic()
                _add(name, now - started)
                if stack:  # resume the outer phase
                    stack[-1] = (stack[-1][0], now)

        return inner

    return wrap


def take() -> dict[str, float]:
    """The seconds counted per phase since the last take (and start counting afresh)."""
    with _lock:
        out = dict(_totals)
        _totals.clear()
    return out
