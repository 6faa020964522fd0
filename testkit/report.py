"""Where the real tier's "measured" lines are kept: the key of their list in pytest's config
stash. Tests and fixtures append to it; the plugin tests/conftest_report.py prints the lines at the
end of the run (and hands them from xdist's workers to the controller)."""

from __future__ import annotations

import pytest

REPORT_KEY = pytest.StashKey[list[str]]()
