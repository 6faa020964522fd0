"""The real tier's "measured" lines: what each test and fixture measured, printed at the end.

Enabled from tests/conftest.py with `pytest_plugins`, so the hooks exist in every pytest process:
under `pytest -n 2` (pytest-xdist) the tests run in worker processes, each collecting its lines
in its own config stash; a worker hands them over at its end (`workeroutput`) and the controller,
which prints the summary, gathers them (`pytest_testnodedown`). Without xdist the one process
collects and prints.
"""

from __future__ import annotations

from typing import Any

import pytest

from testkit.report import REPORT_KEY

_WORKER_KEY = "realtier_measured"


def pytest_configure(config: pytest.Config) -> None:
    config.stash[REPORT_KEY] = []


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput: dict[str, Any] | None = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the lines to the controller
        workeroutput[_WORKER_KEY] = list(session.config.stash.get(REPORT_KEY, []))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any) -> None:
    lines = (getattr(node, "workeroutput", None) or {}).get(_WORKER_KEY) or []
    node.config.stash[REPORT_KEY].extend(lines)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    lines = config.stash.get(REPORT_KEY, [])
    if lines:
        terminalreporter.write_sep("-", "real tier: measured")
        for line in lines:
            terminalreporter.write_line(line)
