"""`kueue.multiKueue.workerLostTimeout`: typed, validated with its key path, and rendered into the
manager's Kueue Configuration only when set (unset: Kueue's own default, 15m at v0.19.2).

The real tier measures what the key does (tests/realtier/test_faults_runtime.py): a lost worker's
jobs are admitted again on another worker `workerLostTimeout` after the loss.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from builders.kueue import helm_values
from checks.stack import load_from_file, parse_fleet
from config.errors import ConfigError
from testkit.repo import COMMITTED_STACKS
from testkit.shared.kueue_config import base
from upstream.kueue import DEFAULT_WORKER_LOST_TIMEOUT

PATH = "kueue.multiKueue.workerLostTimeout"


def fleet_with(timeout: str | None) -> dict[str, Any]:
    raw = base()
    raw["clusters"][0]["role"] = "manager"
    raw["clusters"].append({"name": "w", "role": "worker"})
    if timeout is not None:
        raw["kueue"] = {"multiKueue": {"workerLostTimeout": timeout}}
    return raw


def manager_configuration(raw: dict[str, Any]) -> dict[str, Any]:
    fleet, _ = parse_fleet(raw)
    values = helm_values(fleet.kueue, fleet.clusters[0])
    return yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


def test_kueues_default_is_recorded() -> None:
    # v0.19.2 apis/config/v1beta2/defaults.go: DefaultMultiKueueWorkerLostTimeout = 15 * time.Minute
    assert DEFAULT_WORKER_LOST_TIMEOUT == "15m"


def test_unset_leaves_kueues_default() -> None:
    config = manager_configuration(fleet_with(None))
    assert "workerLostTimeout" not in config.get("multiKueue", {})


def test_set_reaches_the_managers_configuration_only() -> None:
    raw = fleet_with("5m")
    assert manager_configuration(raw)["multiKueue"] == {"workerLostTimeout": "5m"}
    fleet, warnings = parse_fleet(raw)
    assert [w for w in warnings if w.path == PATH] == []
    worker = yaml.safe_load(
        helm_values(fleet.kueue, fleet.clusters[1])["managerConfig"]["controllerManagerConfigYaml"]
    )
    assert "multiKueue" not in worker


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("15 minutes", f"{PATH}: '15 minutes'"),
        ("0s", f"{PATH}: must be more than 0"),
        ("0", f"{PATH}: must be more than 0"),
    ],
)
def test_bad_value_names_the_key(value: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_fleet(fleet_with(value))
    assert expected in str(err.value)


def test_a_few_seconds_is_a_warning() -> None:
    _, warnings = parse_fleet(fleet_with("20s"))
    [warning] = [w for w in warnings if w.path == PATH]
    assert warning.severity == "warning"
    assert "20s: a worker API outage longer than this" in warning.message
    assert "(Kueue's default: 15m)" in warning.message


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_committed_stacks_keep_a_safe_timeout(stack: str) -> None:
    _, warnings = load_from_file(stack)
    assert [w for w in warnings if w.path == PATH] == []
