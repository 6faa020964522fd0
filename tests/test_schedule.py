"""testkit/schedule.py: the longest test files go first, and every real-tier file has its place."""

from __future__ import annotations

from pathlib import Path

from testkit.schedule import LONGEST_FIRST, TESTS, rank


def test_every_listed_file_exists_once() -> None:
    assert sorted(set(LONGEST_FIRST)) == sorted(LONGEST_FIRST)
    missing = [name for name in LONGEST_FIRST if not (TESTS / name).is_file()]
    assert missing == [], f"testkit/schedule.py lists files that are gone: {missing}"


def test_every_real_tier_file_is_placed() -> None:
    real = {p.relative_to(TESTS).as_posix() for p in (TESTS / "realtier").glob("test_*.py")}
    unplaced = sorted(real - set(LONGEST_FIRST))
    assert unplaced == [], (
        f"place these in testkit/schedule.py LONGEST_FIRST by their measured seconds: {unplaced}"
    )


def test_listed_files_rank_in_order_and_the_rest_after() -> None:
    ranks = [rank(TESTS / name) for name in LONGEST_FIRST]
    assert ranks == list(range(len(LONGEST_FIRST)))
    assert rank(TESTS / "test_schedule.py") == len(LONGEST_FIRST)
    assert rank(Path("/elsewhere/test_x.py")) == len(LONGEST_FIRST)
