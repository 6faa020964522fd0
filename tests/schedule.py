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

# Paths under tests/, longest first. Seconds: the run of 2026-12-06 00:50 UTC.
LONGEST_FIRST: Final = (
    "realtier/test_faults_deploy.py",  # 596
    "realtier/test_faults_runtime.py",  # 409
    "realtier/test_manager_maintenance.py",  # not in that run: 214-360 alone (two twins)
    "realtier/test_pulumi_engine.py",  # 235
    "realtier/test_karmada_engine.py",  # 168
    "realtier/test_azure_twin_prod.py",  # not in that run: 132-144 alone, more beside another file
    "realtier/test_kueue_preemption.py",  # 150
    "realtier/test_worker_upgrade.py",  # 147
    "realtier/test_azure_twin.py",  # 141
    "realtier/test_twin_jobs.py",  # 138
    "realtier/test_worker_add.py",  # 117
    "realtier/test_alerts_prometheus.py",  # not in that run: 109-127 alone, load 6-9
    "realtier/test_karmada.py",  # 113
    "realtier/test_worker_maintenance.py",  # not in that run: 95-105 alone (2026-12-06)
    "realtier/test_fleetview_states.py",  # not in that run: 92 alone (2026-12-06)
    "realtier/test_worker_drain.py",  # 89
    "realtier/test_karmada_failover.py",  # 80
    "realtier/test_provisioning_gate.py",  # 80
    "realtier/test_kruise.py",  # 67
    "realtier/test_first_up.py",  # 64
    "realtier/test_dashboard_prometheus.py",  # 39
    "realtier/test_api_servers.py",  # 38
    "realtier/test_kueue_manager_config.py",  # 33
    "realtier/test_kueue_contention.py",  # 24
    "test_bench.py",  # 24
    "test_fleetview_unattended.py",  # 20
    "realtier/test_extra_spec_real.py",  # 17
    "realtier/test_fleetview_real.py",  # 16
    "realtier/test_kueue_dispatch.py",  # 15
    "realtier/test_metrics_rbac.py",  # 1
    "realtier/test_pod_security.py",  # 0
)

TESTS: Final = Path(__file__).resolve().parent


def rank(path: Path) -> int:
    """Where a test file goes: its place in LONGEST_FIRST, else after all of them."""
    try:
        return LONGEST_FIRST.index(path.resolve().relative_to(TESTS).as_posix())
    except ValueError:
        return len(LONGEST_FIRST)
