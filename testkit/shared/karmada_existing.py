"""What tests/test_karmada_existing.py shares with other test modules (they import it from here, not
from a test module): RAW and what they need."""

from __future__ import annotations

from typing import Any

from testkit.shared.karmada_config import APP

RAW: dict[str, Any] = {
    "location": "westeurope",
    "clusters": [
        {"name": "worker-1", "role": "standalone", "virtualNodes": {"enabled": True}},
        {"name": "worker-2", "role": "standalone", "virtualNodes": {"enabled": True}},
    ],
    "karmada": {
        "source": "existing",
        "existing": {"kubeconfigSecret": "karmadaKubeconfig"},
        "applications": [APP],
    },
}
