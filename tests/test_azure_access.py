"""Azure access and quota in the plan and the plan diff."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from checks.stack import load_from_file
from preflight.access import DEPLOYER, azure_access
from preflight.diff import compare
from preflight.diff_render import render_markdown
from preflight.snapshot import snapshot
from testkit.repo import ROOT
from testkit.shared.preflight_diff import edited, flags, section

GROUP = "11111111-2222-3333-4444-555555555555"
CLUSTER_ADMIN = "Azure Kubernetes Service RBAC Cluster Admin"


def test_plan_lists_every_role_assignment_of_prod() -> None:
    fleet, _ = load_from_file("prod")
    rows = azure_access(fleet)
    # The deploying identity is cluster admin on each of the five clusters (access default).
    deployer = [r for r in rows if r["principal"] == DEPLOYER]
    assert [r["scope"] for r in deployer] == [f"cluster {c.name}" for c in fleet.clusters]
    assert {r["role"] for r in deployer} == {CLUSTER_ADMIN}
    # worker-1 and worker-2 run in the program's VNet with virtual nodes: two VNet grants each.
    vnet = {(r["scope"], r["role"], r["principal"]) for r in rows if r["scope"].startswith("VNet")}
    assert vnet == {
        (f"VNet of cluster {w}", role, f"{who} identity of {w}")
        for w in ("worker-1", "worker-2")
        for role, who in (
            ("Network Contributor", "control-plane"),
            ("Contributor", "ACI connector"),
        )
    }


def test_a_group_made_cluster_admin_is_flagged_as_widened_azure_access(tmp_path: Path) -> None:
    base = snapshot("prod")

    def admin_group(fleet: dict[str, Any]) -> None:
        # Only the group: prod's access also holds its API server ranges, which stay.
        access = fleet.get("access", {})
        fleet["access"] = {**access, "groups": [{"objectId": GROUP, "role": "clusterAdmin"}]}

    head = edited(tmp_path, admin_group, "prod")
    diff = compare(base, head, ref="main")
    widened = [k for k, flag in flags(diff) if flag == "widens Azure access"]
    clusters = ["manager", "worker-1", "worker-2", "worker-3", "worker-4"]
    # On every cluster: the RBAC role and the Cluster User role (to fetch the kubeconfig).
    assert sorted(widened) == sorted(f"cluster {c}: Group {GROUP}" for c in clusters)
    text = section(diff, "Access (Azure role assignments)")
    assert (
        f"cluster worker-4: Group {GROUP}: Azure Kubernetes Service Cluster User Role, "
        f"{CLUSTER_ADMIN}" in text
    )
    assert f"{len(clusters)} flagged" in render_markdown(diff)


def test_a_wider_role_for_the_same_group_is_flagged(tmp_path: Path) -> None:
    def reader(fleet: dict[str, Any]) -> None:
        fleet["access"] = {"groups": [{"objectId": GROUP, "role": "reader"}]}

    def admin(fleet: dict[str, Any]) -> None:
        fleet["access"] = {"groups": [{"objectId": GROUP, "role": "admin"}]}

    base = edited(tmp_path / "a", reader, "prod")
    diff = compare(base, edited(tmp_path / "b", admin, "prod"), ref="base")
    changed = [c for s in diff["sections"] for c in s["changes"] if c["flag"]]
    assert {c["key"] for c in changed} == {
        f"cluster {c}: Group {GROUP}"
        for c in ("manager", "worker-1", "worker-2", "worker-3", "worker-4")
    }
    assert all("+ Azure Kubernetes Service RBAC Admin" in c["text"] for c in changed)
    # Back to reader narrows it: shown, not flagged.
    back = compare(edited(tmp_path / "c", admin, "prod"), base, ref="base")
    assert not [f for f in flags(back) if f[1] == "widens Azure access"]


def test_the_vcpu_quota_per_family_and_region_is_in_the_diff(tmp_path: Path) -> None:
    def bigger(fleet: dict[str, Any]) -> None:
        worker = next(c for c in fleet["clusters"] if c["name"] == "worker-4")
        worker["pools"][0]["maxCount"] = 10

    diff = compare(snapshot("prod"), edited(tmp_path, bigger, "prod"), ref="main")
    text = section(diff, "Azure quotas")
    # 2 more Standard_NC24ads_A100_v4 nodes of 24 vCPUs each.
    assert any(
        t.startswith("westeurope: NCADSv4_A100 family vCPUs: at max 192 -> 240") for t in text
    ), text
    assert any(t.startswith("westeurope: Total regional vCPUs") and "-> " in t for t in text)


def test_preflight_json_carries_the_access_rows() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "preflight", "dev", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    plan = json.loads(result.stdout)
    assert {r["role"] for r in plan["azureAccess"]} >= {CLUSTER_ADMIN, "Network Contributor"}
