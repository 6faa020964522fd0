"""No config mistake ends in a traceback: random damage to the committed stacks either
validates or raises ConfigError (bounded, seeded, so it is repeatable)."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from checks.stack import parse_fleet
from config.errors import ConfigError
from testkit.repo import COMMITTED_STACKS, ROOT

ODD_VALUES: list[Any] = [None, "", "x", -1, 0, 10**9, 1.5, True, [], {}, ["a"], {"a": 1}, "50%"]


def raw_stack(stack: str) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    fleet = doc["config"]["aks-batch-fleet:fleet"]
    fleet.setdefault("location", doc["config"].get("azure-native:location"))
    return fleet


def paths(node: Any, here: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path in a YAML document."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*here, key)
            yield from paths(value, (*here, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield (*here, i)
            yield from paths(value, (*here, i))


def damaged(raw: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    for _ in range(rng.randint(1, 3)):
        target = rng.choice(list(paths(out)))
        parent: Any = out
        for part in target[:-1]:
            parent = parent[part]
        if rng.random() < 0.25:
            del parent[target[-1]]
        else:
            parent[target[-1]] = copy.deepcopy(rng.choice(ODD_VALUES))
    return out


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_damaged_config_fails_cleanly(stack: str) -> None:
    rng = random.Random(20261130)
    raw = raw_stack(stack)
    rejected: list[ConfigError] = []
    for _ in range(400):
        try:
            parse_fleet(damaged(raw, rng))
        except ConfigError as err:  # anything else fails the test with its traceback
            rejected.append(err)
    assert len(rejected) > 200  # the damage is real
    for err in rejected:
        assert err.errors, "a ConfigError must carry at least one error"
        assert all(i.path or i.message.startswith("aks-batch-fleet") for i in err.errors)
