"""testkit/realtier/phases.py: a real test's time split into engine, twins and the rest."""

from __future__ import annotations

import contextlib
import threading
import time

from testkit.realtier import phases


def test_time_is_counted_once_by_the_innermost_phase() -> None:
    @phases.timed(phases.ENGINE)
    def engine() -> None:
        time.sleep(0.2)

    @phases.timed(phases.TWINS)
    def twin() -> None:
        time.sleep(0.1)
        engine()  # a twin that deploys by the engine: that part is the engine's
        time.sleep(0.1)

    phases.take()
    twin()
    split = phases.take()
    assert 0.19 <= split[phases.ENGINE] < 0.35, split
    assert 0.19 <= split[phases.TWINS] < 0.35, split
    assert phases.take() == {}, "take() starts counting afresh"


def test_a_phase_that_raises_is_counted_and_other_threads_add_up() -> None:
    @phases.timed(phases.ENGINE)
    def failing_up() -> None:
        time.sleep(0.1)
        raise RuntimeError("engine failed")

    def beside() -> None:
        with contextlib.suppress(RuntimeError):
            failing_up()

    phases.take()
    threads = [threading.Thread(target=beside) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 0.19 <= phases.take()[phases.ENGINE] < 0.4
