"""What tests/realtier/test_worker_upgrade.py shares with other test modules (they import it from
here, not from a test module): version_of and what they need."""

from __future__ import annotations

import json

from testkit.realtier.harness import ControlPlane


def version_of(plane: ControlPlane) -> str:
    status, body = plane.get("/version")
    assert status == 200, f"[{plane.name}] /version: {status}"
    return str(json.loads(body)["gitVersion"])
