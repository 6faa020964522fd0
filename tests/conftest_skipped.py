"""What the run did not run: skipped tests grouped by tier and reason, and the command that runs
them, printed last (so `scripts/check` ends with it).

Enabled from tests/conftest.py with `pytest_plugins`. The exit status is pytest's own: a skip is
reported, never turned into a failure here (CI-only failures live where the skip is decided).
"""

from __future__ import annotations

from collections import Counter

import pytest

REAL_TIER_COMMAND = "scripts/build-real-tier-tools && scripts/real-tier"
MAX_REASONS = 6
MAX_REASON_CHARS = 160


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    text = text.removeprefix("Skipped: ").splitlines()[0] if text else "no reason given"
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 3] + "..."


def _is_real(report: pytest.TestReport | pytest.CollectReport) -> bool:
    keywords = getattr(report, "keywords", {})
    return "real" in keywords or "/realtier/" in f"/{report.nodeid}"


def not_run_lines(skipped: list[pytest.TestReport | pytest.CollectReport]) -> list[str]:
    """The summary's lines: per tier, how many tests, the commonest reasons, the command."""
    real = [r for r in skipped if _is_real(r)]
    other = [r for r in skipped if not _is_real(r)]
    lines: list[str] = []
    for tier, reports, command in (
        ("real tier (marker `real`, tests/realtier)", real, REAL_TIER_COMMAND),
        ("offline tier", other, None),
    ):
        if not reports:
            continue
        lines.append(f"{tier}: {len(reports)} test(s) not run")
        reasons = Counter(_reason(r) for r in reports).most_common()
        lines += [f"  {n}x {reason}" for reason, n in reasons[:MAX_REASONS]]
        if len(reasons) > MAX_REASONS:
            lines.append(f"  ... and {len(reasons) - MAX_REASONS} other reason(s) (pytest -rs)")
        if command:
            lines.append(f"  run them: {command}")
    return lines


@pytest.hookimpl(trylast=True)  # after the other summaries: the last thing scripts/check prints
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = not_run_lines(terminalreporter.stats.get("skipped", []))
    if lines:
        terminalreporter.write_sep("-", "not run (skipped), why, and how to run it")
        for line in lines:
            terminalreporter.write_line(line)
