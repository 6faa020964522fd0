"""The real tier's polling waits (testkit/realtier/wait.py), offline: bounded, and a failure says
what was waited for and the last thing seen."""

from __future__ import annotations

import time

import pytest

from testkit.realtier.wait import holds, until


def test_until_returns_the_first_truthy_value() -> None:
    values = iter([None, 0, {}, {"ready": 2}, {"ready": 3}])
    assert until(lambda: next(values), 5.0, "ready", poll=0.001) == {"ready": 2}


def test_until_fails_after_its_timeout_naming_what_and_the_last_value() -> None:
    t0 = time.monotonic()
    with pytest.raises(AssertionError) as failed:
        until(lambda: [], 0.05, "the queue non-empty", poll=0.01)
    assert time.monotonic() - t0 < 2.0
    assert str(failed.value) == "the queue non-empty: not after 0s; last seen: []"


def test_until_reports_what_seen_returns_instead() -> None:
    with pytest.raises(AssertionError, match=r"^Job done: not after 0s; last seen: 1 of 3 pods$"):
        until(lambda: False, 0.02, "Job done", seen=lambda: "1 of 3 pods", poll=0.005)


def test_a_seen_that_raises_does_not_hide_the_timeout() -> None:
    def broken() -> str:
        raise RuntimeError("plane gone")

    with pytest.raises(AssertionError, match=r"^up: not after 0s; last seen: \(seen\(\) raised "):
        until(lambda: 0, 0.02, "up", seen=broken, poll=0.005)


def test_until_checks_alive_before_each_poll() -> None:
    polls: list[int] = []

    def alive() -> None:
        if len(polls) == 3:
            raise RuntimeError("kube-apiserver exited")

    with pytest.raises(RuntimeError, match="kube-apiserver exited"):
        until(lambda: polls.append(1), 5.0, "never", alive=alive, poll=0.001)
    assert len(polls) == 3


def test_holds_passes_when_the_condition_stays_true_for_the_window() -> None:
    t0 = time.monotonic()
    holds(lambda: True, 0.05, "stays", poll=0.005)
    assert time.monotonic() - t0 >= 0.05


def test_holds_fails_the_moment_the_condition_breaks() -> None:
    states = iter([True, True, False, True])
    t0 = time.monotonic()
    with pytest.raises(AssertionError) as failed:
        holds(lambda: next(states), 5.0, "no eviction", seen=lambda: "evicted: wl-1", poll=0.001)
    assert time.monotonic() - t0 < 1.0
    message = str(failed.value)
    assert message.startswith("no eviction: broke after ")
    assert message.endswith(" of 5s; seen: evicted: wl-1")
