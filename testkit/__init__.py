"""Test machinery that is a library, not a test: the strict Pulumi mocks engine (`mocks`), the
preflight sources for a throw-away project (`sources`) and generated fleets of any size
(`fleetgen`). Used by tests/ and scripts/bench.py; it never imports tests/ (an import contract)."""
