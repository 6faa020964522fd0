"""Every rule that relates several keys, or judges built objects, capacity and placement.

Each check reads the parsed fleet and yields `Issue`s with key paths; `validate` runs them all,
so a user sees every problem at once, before any resource is registered. Preflight and the
program both call it (through `checks.stack`).
"""

from __future__ import annotations

from checks.access import check_member_access, check_open_ranges
from checks.aks import AKS_CHECKS
from checks.aks_rules import AKS_RULE_CHECKS
from checks.batch_pods import BATCH_POD_CHECKS
from checks.capacity import check_capacity, check_manager_quota
from checks.common import Check
from checks.credentials import CREDENTIAL_CHECKS
from checks.extraspec import EXTRA_SPEC_CHECKS
from checks.fleet import FLEET_CHECKS
from checks.frameworks import FRAMEWORK_CHECKS
from checks.karmada import KARMADA_CHECKS
from checks.kueue import KUEUE_CHECKS
from checks.kueue_pods_ready import KUEUE_PODS_READY_CHECKS
from checks.kueue_queues import QUEUE_CHECKS
from checks.maintenance import MAINTENANCE_CHECKS
from checks.monitoring import MONITORING_CHECKS
from checks.multikueue import MULTIKUEUE_CHECKS
from checks.semantics import SEMANTIC_CHECKS
from checks.upgrades import UPGRADE_CHECKS
from config.errors import Issue
from config.models import FleetConfig

CHECKS: tuple[Check, ...] = (
    *FLEET_CHECKS,
    *AKS_CHECKS,
    *AKS_RULE_CHECKS,
    *KARMADA_CHECKS,
    check_member_access,
    check_open_ranges,
    *CREDENTIAL_CHECKS,
    *KUEUE_CHECKS,
    *QUEUE_CHECKS,
    *KUEUE_PODS_READY_CHECKS,
    *EXTRA_SPEC_CHECKS,
    check_capacity,
    *MULTIKUEUE_CHECKS,
    check_manager_quota,
    *SEMANTIC_CHECKS,
    *FRAMEWORK_CHECKS,
    *UPGRADE_CHECKS,
    *MAINTENANCE_CHECKS,
    *BATCH_POD_CHECKS,
    *MONITORING_CHECKS,
)


def validate(fleet: FleetConfig, checks: tuple[Check, ...] = CHECKS) -> list[Issue]:
    """Run every check; errors and warnings, in config order."""
    return [issue for check in checks for issue in check(fleet)]
