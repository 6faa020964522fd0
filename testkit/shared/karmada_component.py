"""What tests/test_karmada_component.py shares with other test modules (they import it from here,
not from a test module): SECRET, build and what they need."""

from __future__ import annotations

from typing import Any

from checks.stack import parse_fleet
from config.loader import kruise_crd_files
from testkit.mocks import Graph, mocked_engine, resolve
from testkit.mocks import run_program as run
from testkit.repo import ROOT

SECRET = "kubernetes:core/v1:Secret"
Built = tuple[Graph, dict[str, tuple[Any, bool]]]


def build(raw: dict[str, Any]) -> Built:
    from components.fleet import Fleet, FleetArgs  # noqa: PLC0415 - after the mocks are set

    fleet_config, _ = parse_fleet(raw)
    with mocked_engine() as g:
        files = kruise_crd_files(fleet_config, ROOT)
        fleet = run(
            lambda: Fleet(
                "fleet", FleetArgs(config=fleet_config, stack="test", kruise_crd_files=files)
            )
        )
        assert fleet.karmada is not None
        outputs = {
            "karmadaKubeconfig": resolve(fleet.karmada.karmada_kubeconfig),
            "address": resolve(fleet.karmada.address),
        }
    return g, outputs
