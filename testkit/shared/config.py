"""What tests/test_config.py shares with other test modules (they import it from here, not from a
test module): BASE, errors_for, with_change and what they need."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from checks.stack import parse_fleet
from config.errors import ConfigError

BASE: dict[str, Any] = {
    "location": "westeurope",
    "clusters": [
        {"name": "manager", "role": "manager"},
        {
            "name": "worker-1",
            "role": "worker",
            "pools": [{"name": "batch", "vmSize": "Standard_D4s_v5", "minCount": 0, "maxCount": 5}],
        },
    ],
}


def with_change(path: str, value: Any, base: dict[str, Any] = BASE) -> dict[str, Any]:
    """Copy of `base` with `a.b[0].c` set (or deleted when value is ...)."""
    raw = copy.deepcopy(base)
    node: Any = raw
    parts = path.replace("]", "").replace("[", ".").split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    last = parts[-1]
    if value is ...:
        del node[int(last) if last.isdigit() else last]
    elif last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return raw


def errors_for(raw: Any) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_fleet(raw)
    return [str(i) for i in info.value.errors]
