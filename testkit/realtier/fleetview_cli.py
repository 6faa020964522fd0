"""`python -m fleetview` as users run it against a twin's planes: each plane's kubeconfig file
given as `--kubeconfig NAME=PATH`.

FLEETVIEW_CAPTURE=DIR keeps the human outputs of the calls that name a `capture`
(docs/observability.md shows such a capture).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from testkit.realtier.harness import ROOT, ControlPlane

TIMEOUT: Final = 60  # seconds: one fleetview process, every plane read
# The clusters read: the dev stack's (a session's planes also hold Karmada's API server).
CLUSTERS: Final = ("manager", "worker-1", "worker-2")


def fleetview(
    planes: Mapping[str, ControlPlane],
    *args: str,
    capture: str | None = None,
    clusters: Sequence[str] = CLUSTERS,
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`python -m fleetview ARGS --kubeconfig NAME=PATH ...` over `clusters`' planes: its
    result and wall time."""
    sources = [a for n in clusters for a in ("--kubeconfig", f"{n}={planes[n].kubeconfig}")]
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "fleetview", *args, *sources],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "COLUMNS": "118"},
        check=False,
    )
    elapsed = time.monotonic() - t0
    keep = os.environ.get("FLEETVIEW_CAPTURE")
    if keep and capture:
        (Path(keep) / f"{capture}.txt").write_text(done.stdout)
    return done, elapsed
