"""Upgrades in the plan and the plan diff: versions, support ends, channels, windows, pool surge;
and the one-minor-at-a-time rule between the stack at a ref and the stack now."""

from __future__ import annotations

from typing import Any

from builders.aks import sent_upgrade_settings
from config.models import ClusterConfig, FleetConfig
from config.resolve import version_key
from upstream.aks_versions import CALENDAR, LTS_PLAN, RULE_ONE_MINOR
from upstream.k8s import minor_of


def upgrade_fields(fleet: FleetConfig, index: int, cluster: ClusterConfig) -> dict[str, Any]:
    """What a cluster row of the plan says about its version's life and its upgrades."""
    key = version_key(index, cluster)
    if cluster.source != "aks":
        return {"versionKey": key, "supportPlan": "-", "supportEnds": "-",
                "upgradeChannel": "-", "nodeOsChannel": "-", "upgradeWindow": "-",
                "nodeOsWindow": "-",
                "batchPods": fleet.upgrades_of(cluster).batch_pods}  # fmt: skip
    up = fleet.upgrades_of(cluster)
    row = CALENDAR.get(minor_of(fleet.version_of(cluster)))
    lts = cluster.support_plan == LTS_PLAN
    ends = "-"
    if row is not None:
        ends = f"{row.lts_end} (LTS)" if lts else f"{row.end_of_life} (end of life)"
    return {
        "versionKey": key,
        "supportPlan": cluster.support_plan,
        "supportEnds": ends,
        "upgradeChannel": up.channel,
        "nodeOsChannel": up.node_os_channel,
        "upgradeWindow": up.window.describe() if up.window else "any time",
        "nodeOsWindow": up.node_os_window.describe() if up.node_os_window else "any time",
        "batchPods": up.batch_pods,
    }


def add_pool_upgrades(
    fleet: FleetConfig, cluster: ClusterConfig, rows: list[dict[str, Any]]
) -> None:
    """Each pool row gets its Kubernetes version and its upgrade settings as sent (in place)."""
    upgrades = fleet.upgrades_of(cluster)
    pools = {p.name: p for p in (cluster.system_pool, *cluster.pools)}
    for row in rows:
        pool = pools[row["pool"]]
        row["kubernetesVersion"] = fleet.pool_version_of(cluster, pool)
        written = pool.upgrade_settings or upgrades.node_pools
        sent = sent_upgrade_settings(pool, upgrades)
        dropped = written.max_surge is not None and sent.max_surge is None
        row["upgrade"] = sent.describe() + (" (no surge: Spot)" if dropped else "")


def version_steps(base: dict[str, Any], head: dict[str, Any]) -> list[dict[str, str]]:
    """Control planes and pools whose version moves more than one minor up, or down, between
    two snapshots: AKS refuses both (an LTS cluster may skip minors to a higher LTS)."""
    out: list[dict[str, str]] = []
    for name in sorted(base["clusters"].keys() & head["clusters"].keys()):
        old, new = base["clusters"][name], head["clusters"][name]
        lts = old.get("supportPlan") == LTS_PLAN and new.get("supportPlan") == LTS_PLAN
        problem = _step(old["kubernetesVersion"], new["kubernetesVersion"], lts)
        if problem:
            path = new.get("versionKey", "kubernetesVersion")
            out.append({"path": path, "what": f"{name} control plane", "problem": problem})
    for key in sorted(base["pools"].keys() & head["pools"].keys()):
        old, new = (
            base["pools"][key].get("kubernetesVersion"),
            head["pools"][key].get("kubernetesVersion"),
        )
        if old and new and (problem := _step(old, new, lts=False)):
            out.append({"path": key, "what": f"pool {key}", "problem": problem})
    return out


def _step(old: str, new: str, lts: bool) -> str | None:
    (a, b), (c, d) = minor_of(old), minor_of(new)
    if (c, d) < (a, b):
        return f"{old} -> {new} goes back a minor: AKS does not downgrade"
    if a == c and d - b > 1 and not lts:
        between = ", ".join(f"{a}.{m}" for m in range(b + 1, d))
        return f"{old} -> {new} skips {between}: {RULE_ONE_MINOR}; deploy {a}.{b + 1} first"
    return None
