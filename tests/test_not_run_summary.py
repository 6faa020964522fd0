"""`scripts/check` ends with what it did not run, why, and the command that runs it
(tests/conftest_skipped.py), and keeps pytest's exit status."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

INNER = """
import pytest

pytest_plugins = ["pytester"]

@pytest.mark.real
def test_twin():
    pytest.skip("real tier: etcd: not built (/cache/etcd)")

@pytest.mark.real
def test_engine():
    pytest.skip("real tier: etcd: not built (/cache/etcd)")

def test_lint():
    pytest.skip("actionlint not installed: run scripts/bootstrap")

def test_ok():
    assert {outcome}
"""


def test_skipped_tiers_are_listed_last_with_the_command(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nmarkers =\n    real: real tier\n")
    pytester.makepyfile(test_inner=INNER.format(outcome="False"))
    result = pytester.runpytest_inprocess("-q", "-p", "tests.conftest_skipped")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the failure still decides the status
    out = result.stdout.str()
    summary = out[out.index("not run (skipped), why, and how to run it") :]
    assert summary.splitlines()[1:6] == [
        "real tier (marker `real`, tests/realtier): 2 test(s) not run",
        "  2x real tier: etcd: not built (/cache/etcd)",
        "  run them: scripts/build-real-tier-tools && scripts/real-tier",
        "offline tier: 1 test(s) not run",
        "  1x actionlint not installed: run scripts/bootstrap",
    ]


def test_nothing_is_printed_when_nothing_was_skipped(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner="def test_ok():\n    pass\n")
    result = pytester.runpytest_inprocess("-q", "-p", "tests.conftest_skipped")
    assert result.ret == 0
    assert "not run (skipped)" not in result.stdout.str()
