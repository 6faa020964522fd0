"""The node reimage stand-in's batch size (testkit/realtier/reimage.py): AKS's `maxSurge`, a node
count or a percentage of the pool at the time of the upgrade, "For percentages, fractional nodes
are rounded up" (AgentPoolUpgradeSettings.maxSurge)."""

from __future__ import annotations

import pytest

from testkit.realtier.reimage import surge_count


@pytest.mark.parametrize(
    ("max_surge", "nodes", "batch"),
    [
        ("10%", 2, 1),  # AKS's default on a small pool: one node at a time
        ("10%", 11, 2),  # 1.1 rounded up
        ("33%", 8, 3),  # prod's setting on worker-4's eight GPU nodes
        ("100%", 4, 4),
        ("1", 5, 1),
        ("3", 2, 2),  # never more than the nodes left to upgrade
        ("10%", 0, 1),
    ],
)
def test_a_batch_is_max_surge_of_the_pool_rounded_up(
    max_surge: str, nodes: int, batch: int
) -> None:
    assert surge_count(max_surge, nodes) == batch
