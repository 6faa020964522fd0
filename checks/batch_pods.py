"""Pods Kueue admitted through AKS's node upgrades (`upgrades.batchPods`, builders.batch_pods).

- Under `protect`, a pool whose `undrainableNodeBehavior` is `Schedule` keeps its batch pods but
  not their node out of use: at the drain timeout AKS makes the blocked node schedulable again on
  its old image, new pods start there, and it is never emptied for the next run: a warning.
- `Cordon` on a Spot pool: Cordon puts a surge node in a blocked node's place, and AKS refuses any
  surge on a Spot pool, so the upgrade is cancelled instead: a warning.
- `evict` in a production stack whose cluster runs Kueue's pods and has a node OS channel that
  acts: every node-image run restarts the running batch pods, each restart a failure against its
  Job's backoffLimit: a warning.
"""

from __future__ import annotations

from collections.abc import Iterator

from checks.common import Check
from config.errors import Issue, key_path
from config.models import ClusterConfig, FleetConfig, PoolConfig, SystemPoolConfig
from config.resolve import dispatch_sets, with_mirrored_queues
from config.upgrades import UpgradeSettings

ACTING_NODE_OS = ("NodeImage", "SecurityPatch")


def _settings_path(
    i: int, c: ClusterConfig, pool: PoolConfig | SystemPoolConfig, j: int | None
) -> str:
    """Where a pool's upgrade settings are written: the pool's own, the cluster's, the fleet's."""
    if pool.upgrade_settings is not None:
        at = ("systemPool",) if j is None else ("pools", j)
        return key_path("clusters", i, *at, "upgradeSettings")
    if c.upgrades is not None:
        return key_path("clusters", i, "upgrades", "nodePools")
    return "upgrades.nodePools"


def _pool_issues(i: int, c: ClusterConfig, up: UpgradeSettings) -> Iterator[Issue]:
    pools: list[tuple[PoolConfig | SystemPoolConfig, int | None]] = [(c.system_pool, None)]
    pools += [(p, j) for j, p in enumerate(c.pools)]
    for pool, j in pools:
        behavior = (pool.upgrade_settings or up.node_pools).undrainable_node_behavior
        path = f"{_settings_path(i, c, pool, j)}.undrainableNodeBehavior"
        spot = isinstance(pool, PoolConfig) and pool.priority == "Spot"
        if spot and behavior == "Cordon":
            yield Issue(
                path,
                f"Cordon on {c.name!r} pool {pool.name!r} (Spot): AKS puts a surge node in a "
                "blocked node's place and refuses any surge on a Spot pool, so the upgrade is "
                "cancelled instead; leave it unset there",
                "warning",
            )
        elif behavior == "Schedule" and up.batch_pods == "protect":
            yield Issue(
                path,
                f"Schedule on {c.name!r} pool {pool.name!r} with batchPods: protect: at the drain "
                "timeout AKS makes a node whose batch pods still run schedulable again on its old "
                "image, so new pods start there and it never empties; Cordon (the default under "
                "protect) keeps new pods off it",
                "warning",
            )


def _running_kueue_pods(fleet: FleetConfig) -> set[str]:
    """Clusters where Kueue admits pods to run: a LocalQueue whose ClusterQueue does not dispatch
    to workers (the manager's dispatching queues run nothing there)."""
    dispatched = {q for s in dispatch_sets(fleet) for q in s.queues}
    manager = fleet.manager.name if fleet.manager is not None else None
    return {
        c.name
        for c in with_mirrored_queues(fleet).clusters
        if any(
            not (c.name == manager and lq.cluster_queue in dispatched)
            for lq in c.queues.local_queues
        )
    }


def check_batch_pods(fleet: FleetConfig) -> Iterator[Issue]:
    """Each AKS cluster's pools against its `upgrades.batchPods` (warnings, with key paths)."""
    runs_pods = _running_kueue_pods(fleet)
    for i, c in enumerate(fleet.clusters):
        if c.source != "aks":
            continue
        up = fleet.upgrades_of(c)
        yield from _pool_issues(i, c, up)
        if (
            fleet.environment == "production"
            and up.batch_pods == "evict"
            and c.name in runs_pods
            and up.node_os_channel in ACTING_NODE_OS
        ):
            base = key_path("clusters", i, "upgrades") if c.upgrades is not None else "upgrades"
            yield Issue(
                f"{base}.batchPods",
                f"evict on {c.name!r}: every {up.node_os_channel} run drains its nodes and "
                "restarts the batch pods running there, each restart a failure against its Job's "
                "backoffLimit (a job longer than the gap between two runs never finishes); "
                "protect keeps them to their end",
                "warning",
            )


BATCH_POD_CHECKS: tuple[Check, ...] = (check_batch_pods,)
