"""pytest plugin: at the end of a run, list every CEL rule crdschema.validate() could not evaluate.

Enabled from tests/conftest.py with `pytest_plugins = ["tests.conftest_crd"]`. A skipped rule is a
check the API server makes and these tests did not, so it belongs in the output, not in a log.
"""

from __future__ import annotations

import pytest

from testkit import crdschema

_LEDGER = pytest.StashKey[crdschema.ValidationLedger]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_LEDGER] = crdschema.push_ledger()


def pytest_unconfigure(config: pytest.Config) -> None:
    # After the terminal summary: the ledger must outlive pytest_sessionfinish.
    ledger = config.stash.get(_LEDGER, None)
    if ledger is not None:
        crdschema.pop_ledger(ledger)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    ledger = config.stash.get(_LEDGER, None)
    if ledger is None or not ledger.objects:
        return
    terminalreporter.write_sep("-", "CRD schema validation: CEL rules per CRD (crdschema)")
    for line in ledger.summary_lines():
        terminalreporter.write_line(line)
