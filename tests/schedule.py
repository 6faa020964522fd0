"""The order in which the two pytest processes of `scripts/check` take test files.

`scripts/check` runs pytest-xdist with `--dist loadfile --no-loadscope-reorder`: each process
takes whole files, the next one in collection order when it is free. xdist's default would
reorder files by their *number* of tests, which puts the offline files (hundreds of small tests)
first and the real tier's long files (a few tests of minutes each) last, so one process could
start a 10-minute file while the other had nothing left. Here the longest files go first
(longest-processing-time-first: the short ones at the end fill the gaps), by the seconds each
took in a full run on this 2-core machine (the comments; `scripts/test-times` from the run's
JUnit XML). Files not listed come after, in pytest's order; every real-tier file must be listed
(tests/test_schedule.py), so a new one is placed by its measured time, not by accident.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

# Paths under tests/, longest first. Seconds: the run of 2026-12-04 10:15 UTC (gate 1).
LONGEST_FIRST: Final = (
    "realtier/test_faults_deploy.py",  # 668
    "realtier/test_faults_runtime.py",  # 357
    "realtier/test_pulumi_engine.py",  # 319
    "realtier/test_twin_jobs.py",  # 281
    "realtier/test_azure_twin.py",  # new, 347 alone (2026-12-05)
    "realtier/test_karmada_engine.py",  # 202
    "realtier/test_worker_upgrade.py",  # 152
    "realtier/test_worker_add.py",  # 146
    "realtier/test_azure_twin_prod.py",  # new, 144 alone (2026-12-06)
    "realtier/test_kueue_preemption.py",  # 143
    "realtier/test_karmada.py",  # 130
    "realtier/test_karmada_failover.py",  # 116
    "realtier/test_worker_drain.py",  # 98
    "realtier/test_provisioning_gate.py",  # 80
    "realtier/test_first_up.py",  # 76
    "realtier/test_dashboard_prometheus.py",  # 59
    "realtier/test_kruise.py",  # 54
    "test_bench.py",  # 50 (offline: timed runs of the program)
    "realtier/test_api_servers.py",  # 44
    "realtier/test_kueue_manager_config.py",  # 42
    "realtier/test_kueue_contention.py",  # 26
    "realtier/test_extra_spec_real.py",  # new, about 25
    "realtier/test_kueue_dispatch.py",  # 20
    "realtier/test_fleetview_real.py",  # 16
    "realtier/test_metrics_rbac.py",  # 1
    "realtier/test_pod_security.py",  # 0 (skips, or reads the shared planes)
)

TESTS: Final = Path(__file__).resolve().parent


def rank(path: Path) -> int:
    """Where a test file goes: its place in LONGEST_FIRST, else after all of them."""
    try:
        return LONGEST_FIRST.index(path.resolve().relative_to(TESTS).as_posix())
    except ValueError:
        return len(LONGEST_FIRST)
