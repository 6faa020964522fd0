"""The order in which the pytest processes of `scripts/check` take test files.

`scripts/check` runs pytest-xdist with `--dist loadfile --no-loadscope-reorder`: each process
takes whole files, the next one in collection order when it is free. xdist's default would
reorder files by their *number* of tests, which puts the offline files (hundreds of small tests)
first and the real tier's long files (a few tests of minutes each) last, so one process could
start a 10-minute file while the others had nothing left. Here the longest files go first
(longest-processing-time-first: the short ones at the end fill the gaps), by the seconds each
took in a full run on this 2-core machine (the comments; `scripts/test-times` from the run's
JUnit XML). Files not listed come after, in pytest's order; every real-tier file must be listed
(tests/test_schedule.py), so a new one is placed by its measured time, not by accident.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

# Paths under tests/, longest first. Seconds: the run of 2026-12-06 05:36 UTC.
LONGEST_FIRST: Final = (
    "realtier/test_faults_deploy.py",  # 697
    # not in that run with its 7 tests: 320 alone (2026-12-06 09:58, the offline tier beside it)
    "realtier/test_azure_twin.py",
    "realtier/test_faults_runtime.py",  # 449
    "realtier/test_manager_maintenance.py",  # 288
    "realtier/test_pulumi_engine.py",  # 271
    "realtier/test_azure_twin_prod.py",  # 237
    "realtier/test_karmada_engine.py",  # 180
    "realtier/test_worker_upgrade.py",  # 179
    "realtier/test_twin_jobs.py",  # 171
    "realtier/test_kueue_preemption.py",  # 156
    "realtier/test_karmada.py",  # 134
    "realtier/test_worker_add.py",  # 127
    "realtier/test_karmada_failover.py",  # 127
    "realtier/test_fleetview_states.py",  # not in that run: 92 alone, 128-169 beside a full run
    "realtier/test_alerts_prometheus.py",  # 122
    "realtier/test_rayjob_real.py",  # not in that run: 99 alone, 174 at load 12 (2026-12-06)
    "realtier/test_worker_drain.py",  # 93
    "realtier/test_fleetview_pods_ready.py",  # not in that run: 91-124 alone (2026-12-06)
    "realtier/test_azure_twin_entra_groups.py",  # not in that run: 68 alone (2026-12-06)
    "realtier/test_worker_maintenance.py",  # 91
    "realtier/test_first_up.py",  # 78
    "realtier/test_provisioning_gate.py",  # 77
    "realtier/test_kruise.py",  # 52
    "realtier/test_dashboard_prometheus.py",  # 43
    "realtier/test_pytorchjob_real.py",  # not in that run: 40 alone (2026-12-06)
    "realtier/test_api_servers.py",  # 38
    "realtier/test_kueue_manager_config.py",  # 34
    "test_azure_api.py",  # 34
    "realtier/test_fleetview_real.py",  # 32
    "test_config_error_lines.py",  # 31
    "test_bench.py",  # 31
    "realtier/test_kueue_contention.py",  # 25
    "realtier/test_extra_spec_real.py",  # 24
    "test_fleetview_unattended.py",  # 23
    "test_committed_stacks.py",  # 19
    "test_program_secrets.py",  # 19
    "test_stack.py",  # 18
    "test_urn_record.py",  # 18
    "realtier/test_kueue_dispatch.py",  # 3
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
