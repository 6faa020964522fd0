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

# Paths under tests/, longest first. Seconds: the run of 2026-12-06 18:51 UTC.
LONGEST_FIRST: Final = (
    "realtier/test_faults_deploy.py",  # 378
    "realtier/test_faults_runtime.py",  # 326
    "realtier/test_azure_twin.py",  # 306
    "realtier/test_pulumi_engine.py",  # 269
    "realtier/test_manager_maintenance.py",  # 257
    "realtier/test_azure_twin_prod.py",  # 184
    "realtier/test_karmada_engine.py",  # 162
    "realtier/test_twin_jobs.py",  # 159
    "realtier/test_worker_upgrade.py",  # 159
    "realtier/test_kueue_preemption.py",  # 154
    "realtier/test_worker_add.py",  # 141
    "realtier/test_rayjob_real.py",  # 139
    "realtier/test_fleetview_gate_retry.py",  # 127
    "realtier/test_karmada.py",  # 121
    "realtier/test_alerts_prometheus.py",  # 113
    "realtier/test_worker_drain.py",  # 111
    "realtier/test_fleetview_states.py",  # 109
    "realtier/test_first_up.py",  # 99
    "realtier/test_worker_maintenance.py",  # 96
    "realtier/test_fleetview_pods_ready.py",  # 92
    "realtier/test_karmada_failover.py",  # 92
    "realtier/test_provisioning_gate.py",  # 87
    "realtier/test_azure_twin_entra_groups.py",  # 75
    "test_bench.py",  # 63
    "realtier/test_pytorchjob_real.py",  # 61
    "realtier/test_kruise.py",  # 61
    "realtier/test_dashboard_prometheus.py",  # 60
    "realtier/test_api_servers.py",  # 59
    "realtier/test_kueue_manager_config.py",  # 54
    "realtier/test_fleetview_real.py",  # 50
    "test_azure_api.py",  # 47
    "test_config_error_lines.py",  # 41
    "test_fleetview_unattended.py",  # 30
    "realtier/test_kueue_contention.py",  # 27
    "test_committed_stacks.py",  # 26
    "test_stack.py",  # 26
    "realtier/test_extra_spec_real.py",  # 23
    "test_multikueue_component.py",  # 17
    "test_mutation_property.py",  # 17
    "test_preflight.py",  # 15
    "test_layers.py",  # 15
    "realtier/test_kueue_dispatch.py",  # 3
    "realtier/test_metrics_rbac.py",  # 2
    "realtier/test_pod_security.py",  # 1
)

TESTS: Final = Path(__file__).resolve().parent.parent / "tests"


def rank(path: Path) -> int:
    """Where a test file goes: its place in LONGEST_FIRST, else after all of them."""
    try:
        return LONGEST_FIRST.index(path.resolve().relative_to(TESTS).as_posix())
    except ValueError:
        return len(LONGEST_FIRST)
