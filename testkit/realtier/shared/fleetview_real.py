"""What tests/realtier/test_fleetview_real.py shares with other test modules (they import it from
here, not from a test module): pending_count and what they need."""

from __future__ import annotations

import json

from testkit.realtier.e2e import TEAM
from testkit.realtier.harness import ControlPlane
from testkit.realtier.shared.kueue_dispatch import KUEUE_API


def pending_count(manager: ControlPlane) -> int:
    status, body = manager.get(f"{KUEUE_API}/clusterqueues/{TEAM}")
    if status != 200:
        return 0
    return int((json.loads(body).get("status") or {}).get("pendingWorkloads") or 0)
