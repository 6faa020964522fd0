"""What tests/realtier/test_kueue_preemption.py shares with other test modules (they import it from
here, not from a test module): FIXTURE, PRIORITY_LABEL and what they need."""

from __future__ import annotations

from pathlib import Path
from typing import Final

FIXTURE: Final = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "priority.yaml"
PRIORITY_LABEL: Final = "kueue.x-k8s.io/priority-class"
