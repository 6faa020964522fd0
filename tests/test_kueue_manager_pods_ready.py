"""The manager's waitForPodsReady kept off with and without the DisableWaitForPodsReady gate.

Kueue v0.19.2 marks the gate "Deprecated: planned to be removed in 0.21" (pkg/features/
kube_features.go:51), and a Kueue without it refuses to start when it is set. The other way off on
the manager is a block that never evicts: recoveryTimeout 0s turns recovery checking off
(pkg/controller/core/core.go:151), blockAdmission false, and a timeout no start takes
(upstream/kueue.py, INERT_WAIT_FOR_PODS_READY). Expected values below are written out by hand.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from builders.kueue import wait_for_pods_ready_on
from checks.stack import load_from_file
from testkit.repo import COMMITTED_STACKS, ROOT
from testkit.shared.kueue_config import BASE, texts
from testkit.shared.kueue_production import (
    WAIT_FOR_PODS_READY,
    config_of,
    fleet_of,
    gates_of,
    with_manager,
)
from upstream import kueue as facts
from upstream.k8s import go_duration_seconds

GATE = "DisableWaitForPodsReady"
OFF = "kueue.managerConfiguration.waitForPodsReadyOff"
INERT = {"timeout": "8760h", "blockAdmission": False, "recoveryTimeout": "0s"}
KUEUE_SOURCE = ROOT / ".cache" / "gomod" / "sigs.k8s.io" / "kueue@v0.19.2"


def fleet_raw(kueue: dict[str, Any], *, version: str = "0.19.2") -> dict[str, Any]:
    """A manager (cluster 0) and BASE's cluster as its worker (cluster 1)."""
    raw = with_manager(copy.deepcopy(BASE))
    raw["kueue"] = {**kueue, "version": version}
    if version == "0.17.8":
        raw["kubernetesVersion"] = "1.35"  # the newest minor Kueue 0.17.8 supports
    return raw


def warnings_at(raw: dict[str, Any], path: str) -> list[str]:
    return [t for t in texts(raw, "warning") if t.startswith(path)]


@pytest.fixture
def without_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The facts of a Kueue that no longer has the gate (0.21's), in place of 0.19.2's."""
    monkeypatch.setitem(facts.FEATURE_GATES, "0.19.2", facts.FEATURE_GATES["0.19.2"] - {GATE})
    monkeypatch.setitem(facts.DISABLE_WAIT_FOR_PODS_READY_STAGE, "0.19.2", None)


# ------------------------------------------------------------------------------------------------
# Upstream facts


def test_the_gate_table_says_which_pinned_versions_have_the_gate() -> None:
    assert facts.DISABLE_WAIT_FOR_PODS_READY_STAGE == {"0.19.2": "alpha", "0.17.8": None}
    assert set(facts.DISABLE_WAIT_FOR_PODS_READY_STAGE) == set(facts.KUEUE_VERSIONS)
    for version, stage in facts.DISABLE_WAIT_FOR_PODS_READY_STAGE.items():
        assert facts.has_disable_gate(version) == (stage is not None), version
    assert facts.DISABLE_WAIT_FOR_PODS_READY_REMOVED_IN == "0.21"


def test_the_pinned_kueue_source_says_what_the_facts_say() -> None:
    """Read from the module bootstrap fetched: the planned removal, the gate's only effect, and
    that recoveryTimeout 0s is no recovery timeout (what makes the inert block inert)."""
    features = (KUEUE_SOURCE / "pkg/features/kube_features.go").read_text()
    assert "// Deprecated: planned to be removed in 0.21." in features
    assert (
        'DisableWaitForPodsReady: {\n\t\t{Version: version.MustParse("0.19"), Default: false, '
        "PreRelease: featuregate.Alpha},\n\t},"
    ) in features
    enabled = (KUEUE_SOURCE / "pkg/util/waitforpodsready/waitforpodsready.go").read_text()
    assert "if features.Enabled(features.DisableWaitForPodsReady) {\n\t\treturn false" in enabled
    core = (KUEUE_SOURCE / "pkg/controller/core/core.go").read_text()
    assert "if cfg.RecoveryTimeout != nil && cfg.RecoveryTimeout.Duration > 0 {" in core


def test_the_inert_block_is_one_kueue_accepts_and_never_a_short_timeout() -> None:
    """Kueue's validateWaitForPodsReady: timeout > 0, nothing negative; under Go's max Duration."""
    assert facts.INERT_WAIT_FOR_PODS_READY == INERT
    assert set(INERT) <= WAIT_FOR_PODS_READY  # Kueue's own json names
    timeout = go_duration_seconds(INERT["timeout"])
    assert 30 * 24 * 3600 < timeout < 290 * 365 * 24 * 3600
    assert go_duration_seconds(INERT["recoveryTimeout"]) == 0


# ------------------------------------------------------------------------------------------------
# What each form renders, per pinned version


def test_omitted_on_0_19_2_keeps_the_gate_on_the_manager_only() -> None:
    fleet = fleet_of(fleet_raw({}))
    assert gates_of(fleet, 0) == {GATE: True}
    assert "waitForPodsReady" not in config_of(fleet, 0)
    assert gates_of(fleet, 1) == {}
    assert warnings_at(fleet_raw({}), OFF) == []


@pytest.mark.parametrize("manager", [{}, {"waitForPodsReady": {"enable": False}}])
def test_inert_block_on_0_19_2_renders_the_block_and_no_gate(manager: dict[str, Any]) -> None:
    raw = fleet_raw({"managerConfiguration": {**manager, "waitForPodsReadyOff": "inertBlock"}})
    fleet = fleet_of(raw)
    assert gates_of(fleet, 0) == {}
    assert config_of(fleet, 0)["waitForPodsReady"] == INERT
    assert not wait_for_pods_ready_on(fleet.kueue, fleet.clusters[0])
    # The worker is untouched: Kueue's default there, no block, no gate.
    assert gates_of(fleet, 1) == {}
    assert "waitForPodsReady" not in config_of(fleet, 1)
    assert wait_for_pods_ready_on(fleet.kueue, fleet.clusters[1])
    assert texts(raw) == []
    assert warnings_at(raw, "kueue") == []


def test_feature_gate_on_0_19_2_renders_the_gate_and_warns_before_0_21() -> None:
    raw = fleet_raw({"managerConfiguration": {"waitForPodsReadyOff": "featureGate"}})
    fleet = fleet_of(raw)
    assert gates_of(fleet, 0) == {GATE: True}
    assert "waitForPodsReady" not in config_of(fleet, 0)
    (warning,) = warnings_at(raw, OFF)
    assert f"{OFF}: relies on the {GATE} gate: featureGate works with Kueue 0.19 and 0.20 only" in (
        warning
    )
    assert "0.19.2 (alpha)" in warning
    assert "Kueue plans to remove it in 0.21" in warning
    assert "Before upgrading to Kueue 0.21, set inertBlock" in warning


@pytest.mark.parametrize("form", ["featureGate", "inertBlock"])
def test_on_0_17_8_neither_form_emits_anything(form: str) -> None:
    raw = fleet_raw({"managerConfiguration": {"waitForPodsReadyOff": form}}, version="0.17.8")
    fleet = fleet_of(raw)
    for i in (0, 1):
        assert gates_of(fleet, i) == {}  # 0.17.8 has no such gate: it would not start
        assert "waitForPodsReady" not in config_of(fleet, i)
    assert not wait_for_pods_ready_on(fleet.kueue, fleet.clusters[0])
    (warning,) = warnings_at(raw, OFF)
    assert "Kueue 0.17.8 runs waitForPodsReady only where a block is written" in warning


# ------------------------------------------------------------------------------------------------
# A Kueue without the gate (0.21's facts, patched in)


@pytest.mark.usefixtures("without_gate")
def test_without_the_gate_the_default_is_the_inert_block_never_the_gate() -> None:
    raw = fleet_raw({})
    fleet = fleet_of(raw)
    for i in (0, 1):
        assert GATE not in gates_of(fleet, i)
    assert config_of(fleet, 0)["waitForPodsReady"] == INERT
    assert not wait_for_pods_ready_on(fleet.kueue, fleet.clusters[0])
    assert texts(raw) == []
    assert warnings_at(raw, "kueue") == []


@pytest.mark.usefixtures("without_gate")
def test_without_the_gate_the_feature_gate_form_is_an_error_naming_the_versions() -> None:
    raw = fleet_raw({"managerConfiguration": {"waitForPodsReadyOff": "featureGate"}})
    (error,) = [t for t in texts(raw) if t.startswith(OFF)]
    assert f"Kueue 0.19.2 has no {GATE} gate and refuses to start with it; set inertBlock" in error
    assert "featureGate works with Kueue 0.19 and 0.20 only" in error
    assert "inertBlock needs no gate and works from 0.19 on" in error


@pytest.mark.usefixtures("without_gate")
def test_without_the_gate_a_worker_cannot_turn_it_off() -> None:
    raw = fleet_raw({"configuration": {"waitForPodsReady": {"enable": False}}})
    (error,) = [t for t in texts(raw) if t.startswith("kueue.configuration.waitForPodsReady")]
    assert error.startswith(
        f"kueue.configuration.waitForPodsReady.enable: Kueue 0.19.2 has no {GATE} gate, so "
        "waitForPodsReady cannot be turned off there"
    )


@pytest.mark.usefixtures("without_gate")
def test_without_the_gate_setting_it_by_hand_is_an_unknown_gate() -> None:
    raw = fleet_raw({"featureGates": {GATE: True}})
    assert any(t.startswith(f"kueue.featureGates.{GATE}") for t in texts(raw)), texts(raw)


# ------------------------------------------------------------------------------------------------
# Bad values name their key path


@pytest.mark.parametrize(
    ("kueue", "expected"),
    [
        ({"managerConfiguration": {"waitForPodsReadyOff": "gate"}}, f"{OFF}: "),
        ({"managerConfiguration": {"waitForPodsReadyOff": True}}, f"{OFF}: "),
        (
            {
                "managerConfiguration": {
                    "waitForPodsReady": {"timeout": "2h"},
                    "waitForPodsReadyOff": "inertBlock",
                }
            },
            "kueue.managerConfiguration: waitForPodsReadyOff applies only while the manager's "
            "waitForPodsReady is off",
        ),
    ],
)
def test_bad_off_form_is_an_error_at_its_key(kueue: dict[str, Any], expected: str) -> None:
    errors = texts(fleet_raw(kueue))
    assert any(t.startswith(expected) for t in errors), errors


def test_off_form_without_a_manager_is_a_warning() -> None:
    raw = copy.deepcopy(BASE)
    raw["kueue"] = {"managerConfiguration": {"waitForPodsReadyOff": "inertBlock"}}
    (warning,) = warnings_at(raw, OFF)
    assert "applies to a cluster with role 'manager'; this stack has none" in warning


def test_a_worker_timeout_past_the_inert_one_warns() -> None:
    raw = fleet_raw(
        {
            "configuration": {"waitForPodsReady": {"timeout": "9000h"}},
            "managerConfiguration": {"waitForPodsReadyOff": "inertBlock"},
        }
    )
    (warning,) = warnings_at(raw, "kueue.configuration.waitForPodsReady.timeout")
    assert "9000h is not shorter than the manager's inert timeout (8760h)" in warning
    raw["kueue"]["configuration"]["waitForPodsReady"]["timeout"] = "8000h"
    assert warnings_at(raw, "kueue.configuration.waitForPodsReady.timeout") == []


def test_gate_false_by_hand_warns_only_where_the_manager_still_gets_it() -> None:
    raw = fleet_raw({"featureGates": {GATE: False}})
    assert warnings_at(raw, f"kueue.featureGates.{GATE}")
    raw["kueue"]["managerConfiguration"] = {"waitForPodsReadyOff": "inertBlock"}
    assert warnings_at(raw, f"kueue.featureGates.{GATE}") == []
    assert gates_of(fleet_of(raw), 0) == {GATE: False}  # as written: no gate forced on


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_committed_stacks_pass_with_no_pods_ready_findings(stack: str) -> None:
    _, warnings = load_from_file(stack)
    assert [w for w in warnings if "waitForPodsReady" in w.path or GATE in w.path] == []
