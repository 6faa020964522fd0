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

# Paths under tests/, longest first. Seconds: the run of 2026-12-06 14:27 UTC.
LONGEST_FIRST: Final = (
    "realtier/test_faults_deploy.py",  # 378
    "realtier/test_faults_runtime.py",  # 323
    "realtier/test_azure_twin.py",  # 315
    "realtier/test_manager_maintenance.py",  # 248
    "realtier/test_pulumi_engine.py",  # 192
    "realtier/test_azure_twin_prod.py",  # 187
    "realtier/test_karmada_engine.py",  # 185
    "realtier/test_twin_jobs.py",  # 178
    "realtier/test_worker_upgrade.py",  # 164
    "realtier/test_kueue_preemption.py",  # 155
    "realtier/test_worker_add.py",  # 124
    "realtier/test_alerts_prometheus.py",  # 114
    "realtier/test_karmada_failover.py",  # 111
    "realtier/test_rayjob_real.py",  # 104
    "realtier/test_karmada.py",  # 98
    "realtier/test_fleetview_gate_retry.py",  # 94 alone (not yet in a whole run)
    "realtier/test_worker_drain.py",  # 81
    "realtier/test_worker_maintenance.py",  # 78
    "realtier/test_provisioning_gate.py",  # 74
    "realtier/test_fleetview_pods_ready.py",  # 74
    "realtier/test_fleetview_states.py",  # 73
    "realtier/test_first_up.py",  # 62
    "realtier/test_azure_twin_entra_groups.py",  # 57
    "realtier/test_kruise.py",  # 48
    "realtier/test_pytorchjob_real.py",  # 43
    "realtier/test_api_servers.py",  # 42
    "test_bench.py",  # 42
    "realtier/test_dashboard_prometheus.py",  # 41
    "test_azure_api.py",  # 38
    "realtier/test_kueue_manager_config.py",  # 37
    "realtier/test_fleetview_real.py",  # 34
    "test_config_error_lines.py",  # 30
    "test_fleetview_unattended.py",  # 29
    "realtier/test_kueue_contention.py",  # 26
    "test_committed_stacks.py",  # 23
    "realtier/test_extra_spec_real.py",  # 21
    "test_stack.py",  # 19
    "test_program_secrets.py",  # 15
    "realtier/test_kueue_dispatch.py",  # 5
    "realtier/test_metrics_rbac.py",  # 1
    "realtier/test_pod_security.py",  # 1
)

TESTS: Final = Path(__file__).resolve().parent.parent / "tests"


def rank(path: Path) -> int:
    """Where a test file goes: its place in LONGEST_FIRST, else after all of them."""
    try:
        return LONGEST_FIRST.index(path.resolve().relative_to(TESTS).as_posix())
    except ValueError:
        return len(LONGEST_FIRST)
