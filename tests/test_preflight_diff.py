"""The plan diff (`python -m preflight <stack> --against REF`): one test per section and flag."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from checks.stack import load_from_file
from preflight import diagram
from preflight.diff import compare
from preflight.diff_render import render_markdown, render_text
from preflight.gitref import stack_at_ref
from preflight.snapshot import Snapshot, empty, snapshot
from preflight.sources import extra_sections
from testkit.mocks import FAKE_KUBECONFIG
from testkit.repo import ROOT
from testkit.shared.preflight_diff import Fleet, edited, flags, section
from testkit.sources import copy_preflight_sources


@pytest.fixture(scope="module")
def dev() -> Snapshot:
    return snapshot("dev")


def cluster(fleet: Fleet, name: str) -> dict[str, Any]:
    return next(c for c in fleet["clusters"] if c["name"] == name)


def worker_quota(fleet: Fleet, name: str, resource: str) -> dict[str, Any]:
    flavors = cluster(fleet, name)["queues"]["clusterQueues"][0]["resourceGroups"][0]["flavors"]
    return next(r for r in flavors[0]["resources"] if r["name"] == resource)


def test_same_stack_is_no_change(dev: Snapshot) -> None:
    diff = compare(dev, snapshot("dev"), ref="main")
    assert diff["sections"] == []
    assert diff["changed"] is False
    assert render_text(diff).splitlines()[-1] == "no change"
    assert "No change." in render_markdown(diff)


def test_weight_moves_replicas_between_members(dev: Snapshot, tmp_path: Path) -> None:
    def weight(fleet: Fleet) -> None:
        fleet["karmada"]["applications"][0]["propagation"]["weights"]["worker-1"] = 2

    diff = compare(dev, edited(tmp_path, weight))
    # 6 replicas at 2:2 instead of 1:2; Kruise's 50% subset-a in each member follows.
    assert section(diff, "Karmada placement") == [
        "sample/sample-ud: worker-1 2 -> 3, worker-2 4 -> 3 (subsets worker-1/subset-a 1 -> 2, "
        "worker-2/subset-b 2 -> 1; weights worker-1 1 -> 2)"
    ]
    assert [s["title"] for s in diff["sections"]] == ["Karmada placement"]
    assert flags(diff) == []


def test_pool_max_changes_nodes_capacity_and_quota_headroom(dev: Snapshot, tmp_path: Path) -> None:
    def pool_max(fleet: Fleet) -> None:
        cluster(fleet, "worker-1")["pools"][0]["maxCount"] = 8

    diff = compare(dev, edited(tmp_path, pool_max))
    # D4s_v5 on a node subnet gives 3.86 CPU per node: 5 nodes 19.3, 8 nodes 30.88.
    assert section(diff, "Node pools") == [
        "worker-1/batch: nodes 0..5 -> 0..8; max allocatable 19.3 CPU, 76.3Gi -> 30.88 CPU, 122.1Gi"
    ]
    assert section(diff, "Quota vs pool capacity") == [
        "worker-1/team-a/batch/cpu: capacity 19.3 -> 30.88",
        "worker-1/team-a/batch/memory: capacity 78170Mi (76.3Gi) -> 125072Mi (122.1Gi)",
    ]
    assert flags(diff) == []


def test_pool_shrink_below_quota_is_a_new_error(dev: Snapshot, tmp_path: Path) -> None:
    def pool_max(fleet: Fleet) -> None:
        cluster(fleet, "worker-2")["pools"][0]["maxCount"] = 4

    head = edited(tmp_path, pool_max)
    diff = compare(dev, head)
    assert head["valid"] is False
    assert diff["validNow"] is False
    (error,) = diff["sections"][0]["changes"]
    assert diff["sections"][0]["title"] == "Errors"
    assert error["change"] == "added"
    assert error["flag"] == "new error"
    # 4 x 3.86 = 15.44 CPU cannot hold team-a's 16.
    assert error["key"].startswith("clusters[worker-2].queues.clusterQueues[team-a]")
    assert "15.44" in error["text"]
    assert any("invalid now" in n for n in diff["notes"])
    # Without a plan now, nothing else is compared (not "everything removed").
    assert [s["title"] for s in diff["sections"]] == ["Errors"]
    # The reverse: the error disappears, nothing is flagged.
    back = compare(head, dev)
    assert [c["change"] for c in back["sections"][0]["changes"]] == ["removed"]
    assert flags(back) == []


def test_quota_change_shows_per_queue_and_manager_status(dev: Snapshot, tmp_path: Path) -> None:
    def quota(fleet: Fleet) -> None:
        worker_quota(fleet, "worker-1", "cpu")["nominalQuota"] = "18"

    diff = compare(dev, edited(tmp_path, quota))
    assert section(diff, "Quota vs pool capacity") == [
        "worker-1/team-a/batch/cpu: nominal 16 -> 18; with borrowing 16 -> 18"
    ]
    assert section(diff, "MultiKueue manager quota") == [
        "team-a/cpu: workers 32 -> 34; per worker worker-1=16, worker-2=16 -> "
        "worker-1=18, worker-2=16; status ok -> low"
    ]
    assert flags(diff) == [("team-a/cpu", "manager quota low")]
    (warning,) = section(diff, "Warnings")
    assert "manager quota 32 < the workers' 34" in warning


def test_dispatch_set_and_worker_access_shrink(dev: Snapshot, tmp_path: Path) -> None:
    def one_worker(fleet: Fleet) -> None:
        fleet["multiKueue"] = {"workers": ["worker-1"]}

    diff = compare(dev, edited(tmp_path, one_worker))
    assert section(diff, "MultiKueue dispatch") == [
        "manager/team-a dispatches to worker-1, worker-2 -> worker-1 (-worker-2)"
    ]
    removed = [c for s in diff["sections"] for c in s["changes"] if c["change"] == "removed"]
    assert {c["key"] for c in removed} == {
        "worker-2: ClusterRole multikueue-sa-role",
        "worker-2: ClusterRoleBinding multikueue-sa-crb",
        "worker-2: ClusterRole multikueue-sa-write",
        "worker-2: RoleBinding team-a/multikueue-sa-write",
        "worker-2: Role kueue-system/multikueue-sa-whoami",
        "worker-2: RoleBinding kueue-system/multikueue-sa-whoami",
        # The token is no longer minted (Credentials).
        "worker-2: MultiKueue worker token",
        # It leaves MultiKueue (MultiKueue retire): `up` reads the manager first.
        "worker-2",
    }
    # Narrowing access is not flagged; a worker leaving is, for its live check at `up`.
    assert {c["key"]: c["flag"] for c in removed if c["flag"]} == {"worker-2": "live check at up"}


def test_new_framework_widens_worker_rbac_and_is_flagged(dev: Snapshot, tmp_path: Path) -> None:
    def pods(fleet: Fleet) -> None:
        fleet["kueue"]["frameworks"].append("pod")

    head = edited(tmp_path, pods)
    diff = compare(dev, head)
    rbac = section(diff, "Access (RBAC rules)")
    assert len(rbac) == 4
    # Exactly what the worker RBAC adds for the pod framework, nothing else: reads cluster-wide,
    # writes in the role bound only in the dispatched namespaces.
    assert rbac[:2] == [
        "worker-1: ClusterRole multikueue-sa-role: + core/pods: get, list, watch",
        "worker-1: ClusterRole multikueue-sa-write: + core/pods: create, delete",
    ]
    assert flags(diff) == [
        ("worker-1: ClusterRole multikueue-sa-role", "widens access"),
        ("worker-1: ClusterRole multikueue-sa-write", "widens access"),
        ("worker-2: ClusterRole multikueue-sa-role", "widens access"),
        ("worker-2: ClusterRole multikueue-sa-write", "widens access"),
    ]
    markdown = render_markdown(diff)
    assert "**Needs a second look:**" in markdown
    assert "- :warning: **widens access**: `worker-1: ClusterRole multikueue-sa-role`" in markdown
    assert f"! {rbac[0]}   <- widens access" in markdown.split("**Access (RBAC rules)**")[1]
    # Taking the framework away again narrows access: shown, not flagged.
    assert flags(compare(head, dev)) == []
    assert section(compare(head, dev), "Access (RBAC rules)")[0].startswith(
        "worker-1: ClusterRole multikueue-sa-role: - "
    )


def test_a_new_worker_is_new_access_and_new_capacity(dev: Snapshot, tmp_path: Path) -> None:
    def third(fleet: Fleet) -> None:
        worker = copy.deepcopy(cluster(fleet, "worker-2"))
        worker["name"] = "worker-3"
        fleet["clusters"].append(worker)

    diff = compare(dev, edited(tmp_path, third))
    assert section(diff, "Clusters") == [
        "worker-3 (worker, k8s 1.36, Free, nodeSubnet, virtual nodes)"
    ]
    assert "worker-3/batch Standard_D4s_v5 0..5 nodes, max allocatable 19.3 CPU, 76.3Gi" in section(
        diff, "Node pools"
    )
    assert section(diff, "Idle cost drivers") == ["idle: nodes 3 -> 4; vCPU 6 -> 8"]
    assert section(diff, "MultiKueue dispatch") == [
        "manager/team-a dispatches to worker-1, worker-2 -> "
        "worker-1, worker-2, worker-3 (+worker-3)"
    ]
    flagged = dict(flags(diff))
    assert flagged["worker-3: ClusterRoleBinding multikueue-sa-crb"] == "widens access"
    assert flagged["worker-3: ClusterRole multikueue-sa-role"] == "widens access"
    assert flagged["idle"] == "costs more idle"


def test_exposure_internal_to_public_is_flagged(tmp_path: Path) -> None:
    def internal(fleet: Fleet) -> None:
        cluster(fleet, "manager")["network"] = {"mode": "nodeSubnet"}
        fleet["karmada"]["apiServer"] = {"exposure": "internal", "internalIp": "10.224.0.200"}

    def public(fleet: Fleet) -> None:
        cluster(fleet, "manager")["network"] = {"mode": "nodeSubnet"}

    base = edited(tmp_path / "a", internal)
    head = edited(tmp_path / "b", public)
    diff = compare(base, head)
    assert section(diff, "Exposure") == ["manager: karmada apiServer: internal -> public"]
    assert flags(diff) == [("manager: karmada apiServer", "widens exposure")]
    assert flags(compare(head, base)) == []


def test_cluster_fields_and_paid_tier(dev: Snapshot, tmp_path: Path) -> None:
    def standard(fleet: Fleet) -> None:
        cluster(fleet, "manager")["skuTier"] = "Standard"

    diff = compare(dev, edited(tmp_path, standard))
    assert section(diff, "Clusters") == ["manager: tier Free -> Standard"]
    assert section(diff, "Idle cost drivers") == ["idle: paid control planes none -> manager"]
    assert flags(diff) == [("idle", "costs more idle")]


def test_removed_gates_change_queues(dev: Snapshot, tmp_path: Path) -> None:
    def no_gates(fleet: Fleet) -> None:
        for name in ("worker-1", "worker-2"):
            queues = cluster(fleet, name)["queues"]
            queues.pop("provisioningGates")
            queues["clusterQueues"][0].pop("provisioningGate")

    diff = compare(dev, edited(tmp_path, no_gates))
    assert section(diff, "Queues") == [
        "worker-1/team-a: admission checks batch-scaleup -> -",
        "worker-2/team-a: admission checks batch-scaleup -> -",
    ]
    # dev's gated workers run 1.36, where AKS serves ProvisioningRequest: no gate warning before
    # or after (checks/preconditions.py), so the diff has none to drop.
    warnings = [c for s in diff["sections"] if s["title"] == "Warnings" for c in s["changes"]]
    assert not [c for c in warnings if "provisioningGates" in c["key"]], warnings


def test_stack_absent_at_ref_shows_everything_added(dev: Snapshot) -> None:
    diff = compare(empty("dev", exists=False), dev, ref="abc1234")
    kinds = {c["change"] for s in diff["sections"] for c in s["changes"]}
    assert kinds == {"added"}
    assert "does not exist at abc1234" in diff["notes"][0]
    added = {s["title"]: len(s["changes"]) for s in diff["sections"]}
    assert added["Clusters"] == len(dev["clusters"])
    assert added["Node pools"] == len(dev["pools"])
    assert added["Karmada placement"] == 1
    # Everything that grants access or exposes a service is new: all flagged.
    assert added["Access (RBAC rules)"] == len(dev["rbac"]) > 0
    assert ("manager: karmada apiServer", "widens exposure") in flags(diff)


def test_a_new_error_says_where_it_is_now(dev: Snapshot, tmp_path: Path) -> None:
    def pool_max(fleet: Fleet) -> None:
        cluster(fleet, "worker-2")["pools"][0]["maxCount"] = 4

    head = edited(tmp_path, pool_max)
    (error,) = compare(dev, head)["sections"][0]["changes"]
    text = (tmp_path / "edited" / "Pulumi.dev.yaml").read_text().splitlines()
    at, _, rest = error["text"].partition(": ")
    file, _, number = at.partition(":")
    assert file == "Pulumi.dev.yaml"
    assert "nominalQuota" in text[int(number) - 1]
    # The key leaves the line out: an edit above it does not make the same error new.
    assert rest == error["key"]


def test_invalid_at_ref_shows_the_errors_that_disappear(dev: Snapshot, tmp_path: Path) -> None:
    def broken(fleet: Fleet) -> None:
        cluster(fleet, "worker-1")["role"] = "wrker"

    base = edited(tmp_path, broken)
    assert base["valid"] is False
    diff = compare(base, dev, ref="main")
    assert diff["sections"][0]["title"] == "Errors"
    assert {c["change"] for c in diff["sections"][0]["changes"]} == {"removed"}
    assert any("invalid at main" in n for n in diff["notes"])
    assert "Traceback" not in render_text(diff)


# --- end to end: a temporary git repository, as CI sees one -------------------------------------


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def preflight(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "preflight", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The project's code and dev stack committed on `main`, then a branch `change`."""
    copy_preflight_sources(tmp_path, "Pulumi.dev.yaml")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "base")
    git(tmp_path, "checkout", "-qb", "change")
    return tmp_path


def test_against_merge_base_through_git(repo: Path) -> None:
    stack = repo / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("worker-1: 1", "worker-1: 2"))
    git(repo, "commit", "-qam", "more replicas on worker-1")
    git(repo, "checkout", "-q", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "main moves on")
    git(repo, "checkout", "-q", "change")

    result = preflight(repo, "dev", "--against", "--markdown")
    assert result.returncode == 0, result.stderr
    base = git(repo, "merge-base", "HEAD", "main")[:7]
    assert f"against `merge base with main, {base}`" in result.stdout
    assert "! sample/sample-ud: worker-1 2 -> 3, worker-2 4 -> 3" in result.stdout
    assert "```diff" in result.stdout

    same = preflight(repo, "dev", "--against", "HEAD", "--json")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["sections"] == []

    as_json = preflight(repo, "dev", "--against", "main", "--json", "--diagram")
    data = json.loads(as_json.stdout)
    assert data["changed"] is True
    assert data["mermaid"].startswith("flowchart LR\n")


def test_against_bad_refs_and_new_stack(repo: Path) -> None:
    unknown = preflight(repo, "dev", "--against", "no-such-ref")
    assert unknown.returncode == 2
    assert "unknown git ref 'no-such-ref'" in unknown.stderr

    dev = (repo / "Pulumi.dev.yaml").read_text()
    (repo / "Pulumi.qa.yaml").write_text(dev.replace("aks-batch-fleet-dev", "aks-batch-fleet-qa"))
    new = preflight(repo, "qa", "--against", "main")
    assert new.returncode == 0, new.stderr
    assert "does not exist at main" in new.stdout
    assert "+ manager (manager, k8s 1.36" in new.stdout

    git(repo, "branch", "-qm", "main", "trunk")  # neither main nor origin/main any more
    orphan = preflight(repo, "dev", "--against")
    assert orphan.returncode == 2
    assert "no merge base with main or origin/main" in orphan.stderr
    assert "Traceback" not in orphan.stderr


def test_invalid_now_exits_1_with_errors_in_the_diff(repo: Path) -> None:
    stack = repo / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("maxCount: 5", "maxCount: 0"))
    result = preflight(repo, "dev", "--against", "main", "--markdown")
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    assert "new error" in result.stdout
    assert "clusters[worker-1].pools[batch].maxCount" in result.stdout


# --- the preview workflow's plan-diff job ---------------------------------------------------------


def plan_diff_job() -> dict[str, Any]:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "preview.yml").read_text())
    assert list(workflow[True]) == ["pull_request"]  # YAML 1.1 reads the key `on` as true
    return workflow["jobs"]["plan-diff"]


def test_plan_diff_job_needs_no_secrets_and_only_comments() -> None:
    job = plan_diff_job()
    assert job["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert "needs" not in job  # runs even when the Pulumi preview cannot (forks: no secrets)
    text = yaml.safe_dump(job)
    assert "secrets." not in text
    assert "ARM_" not in text
    assert "PULUMI_" not in text
    post = job["steps"][-1]
    assert post["env"]["GH_TOKEN"] == "${{ github.token }}"
    assert "head.repo.full_name == github.repository" in post["if"]


def test_plan_diff_job_script_runs_on_a_merge_commit(repo: Path, tmp_path: Path) -> None:
    """The job's own script, in a repository shaped like GitHub's pull-request checkout."""
    stack = repo / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("worker-1: 1", "worker-1: 2"))
    git(repo, "commit", "-qam", "more replicas on worker-1")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge the pull request", "change")
    # Stand-ins for the runner's tools: bootstrap is done, `uv run --frozen python` is python.
    (repo / "scripts").mkdir()
    (repo / "scripts" / "bootstrap").write_text("#!/bin/sh\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "uv").write_text(f'#!/bin/sh\nshift 3\nexec "{sys.executable}" "$@"\n')
    for tool in (repo / "scripts" / "bootstrap", bin_dir / "uv"):
        tool.chmod(0o755)
    script = next(s["run"] for s in plan_diff_job()["steps"] if "preflight" in s.get("run", ""))
    summary = tmp_path / "summary.md"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(summary),
        "HEAD_SHA": "0123456789abcdef",
    }
    result = subprocess.run(  # GitHub's `shell: bash`: bash --noprofile --norc -eo pipefail
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    comment = (repo / "plan-diff.md").read_text()
    assert comment.startswith("<!-- preflight-plan-diff -->\n")
    assert "! sample/sample-ud: worker-1 2 -> 3, worker-2 4 -> 3" in comment
    assert "```mermaid\nflowchart LR\n" in comment
    assert "at 0123456." in comment
    assert summary.read_text() == comment


def test_docs_example_is_what_the_command_prints(dev: Snapshot, tmp_path: Path) -> None:
    """The docs' example diff and picture stay the real output for their dev-stack change."""

    def change(fleet: Fleet) -> None:
        fleet["kueue"]["frameworks"].append("pod")
        cluster(fleet, "worker-1")["pools"][0]["maxCount"] = 8
        fleet["karmada"]["applications"][0]["propagation"]["weights"]["worker-1"] = 2

    head = edited(tmp_path, change)
    page = (ROOT / "docs" / "preflight.md").read_text()
    body = render_markdown(compare(dev, head)).split("\n", 1)[1]  # all but the ref heading
    assert body.strip() in page
    assert diagram.render_markdown(head) in page


def test_smaller_pool_with_smaller_quota_flags_the_shrink(dev: Snapshot, tmp_path: Path) -> None:
    def smaller(fleet: Fleet) -> None:
        cluster(fleet, "worker-1")["pools"][0]["maxCount"] = 4
        worker_quota(fleet, "worker-1", "cpu")["nominalQuota"] = "12"

    diff = compare(dev, edited(tmp_path, smaller))
    assert section(diff, "Node pools") == [
        "worker-1/batch: nodes 0..5 -> 0..4; max allocatable 19.3 CPU, 76.3Gi -> 15.44 CPU, 61.1Gi"
    ]
    assert ("worker-1/batch", "capacity shrinks") in flags(diff)
    assert section(diff, "Quota vs pool capacity")[0] == (
        "worker-1/team-a/batch/cpu: nominal 16 -> 12; with borrowing 16 -> 12; "
        "capacity 19.3 -> 15.44"
    )


def test_subject_gaining_a_binding_and_unknown_plan_tables(dev: Snapshot) -> None:
    """Shapes no committed stack produces yet: a second subject, a plan table added later."""
    head = copy.deepcopy(dev)
    key = "worker-1: ClusterRoleBinding multikueue-sa-crb"
    head["bindings"][key]["subjects"].append("Group system:authenticated")
    head["other"]["future"] = {"title": "Future table", "rows": ["cluster=worker-1, thing=1"]}
    diff = compare(dev, head)
    assert section(diff, "Access (bindings)") == [
        f"{key}: subjects ServiceAccount kueue-system/multikueue-sa -> "
        "ServiceAccount kueue-system/multikueue-sa, Group system:authenticated"
    ]
    assert flags(diff) == [(key, "widens access")]
    assert section(diff, "Other plan tables") == ["Future table: cluster=worker-1, thing=1"]


def test_stack_at_ref_with_a_kubeconfig_file(tmp_path: Path) -> None:
    """Only the stack file is taken from the ref: the files its keys name are not there, and
    the base side of the diff must not turn invalid for it."""
    (tmp_path / "kube").mkdir()
    (tmp_path / "kube" / "a.yaml").write_text(FAKE_KUBECONFIG.format(name="a"))
    existing = {"kubeconfigPath": "kube/a.yaml"}
    cluster = {"name": "a", "role": "standalone", "source": "existing", "existing": existing}
    document = {"config": {"aks-batch-fleet:fleet": {"clusters": [cluster]}}}
    (tmp_path / "Pulumi.e.yaml").write_text(yaml.safe_dump(document))
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "base")
    assert snapshot("e", root=tmp_path)["valid"] is True  # the file is checked where it exists
    assert stack_at_ref("e", "main", root=tmp_path)["valid"] is True


def test_a_wider_karmada_member_role_is_flagged(dev: Snapshot, tmp_path: Path) -> None:
    """`memberAccess: wildcard` makes the member credential cluster admin; the diff shows the
    member ClusterRole gaining `*` and flags it."""

    def wildcard(fleet: Fleet) -> None:
        fleet["karmada"]["memberAccess"] = "wildcard"

    diff = compare(dev, edited(tmp_path, wildcard))
    flagged = [key for key, flag in flags(diff) if flag == "widens access"]
    for member in ("worker-1", "worker-2"):
        assert f"{member}: ClusterRole karmada-controller-manager:karmada-{member}" in flagged
    rbac = section(diff, "Access (RBAC rules)")
    assert any("karmada-worker-1" in text and "*" in text for text in rbac), rbac
    # And the plan's warnings say what the wildcard gives away.
    assert any("cluster admin on every member" in w for w in section(diff, "Warnings")), diff


RUNNERS = "20.50.0.0/24"  # the runners' egress, as a production stack lists it


def ranged(fleet: Fleet, *ranges: str) -> None:
    """prod's fleet-wide ranges, added as its comment says (it ships none: they are yours)."""
    fleet["access"] = {"authorizedIpRanges": list(ranges or (RUNNERS,))}


def test_an_api_server_range_change_shows_per_cluster_with_its_source(tmp_path: Path) -> None:
    title = "AKS API server authorized IP ranges (apiServerAccessProfile)"
    base = edited(tmp_path / "base", ranged, "prod")
    head = edited(tmp_path / "head", lambda f: ranged(f, RUNNERS, "20.51.0.0/24"), "prod")
    diff = compare(base, head)
    assert section(diff, "Other plan tables") == [
        f"{title}: cluster={name}, range=20.51.0.0/24, from=access.authorizedIpRanges"
        for name in ("manager", "worker-3", "worker-4")
    ]
    # The manager's egress stays admitted on the ranged workers, and the plan says why.
    rows = base["other"]["apiServerRanges"]["rows"]
    assert (
        "cluster=worker-3, range=<manager-egress>/32, from=manager's static egress (the "
        "MultiKueue manager; access.admitFleetEgress)"
    ) in rows
    # worker-1 runs virtual nodes: the fleet's ranges skip it, and the plan says why.
    assert (
        "cluster=worker-1, range=any (no ranges), from=clusters[1].virtualNodes.enabled: AKS "
        "virtual nodes take no authorized ranges: access.authorizedIpRanges skip it"
    ) in rows


def test_an_api_server_losing_its_ranges_widens_exposure(tmp_path: Path) -> None:
    def open_worker_3(fleet: Fleet) -> None:
        ranged(fleet)
        cluster(fleet, "worker-3")["access"] = {}

    base = edited(tmp_path / "base", ranged, "prod")
    head = edited(tmp_path / "head", open_worker_3, "prod")
    diff = compare(base, head)
    assert section(diff, "Exposure") == ["worker-3: AKS API server: ranged -> public"]
    assert flags(diff) == [("worker-3: AKS API server", "widens exposure")]
    assert flags(compare(head, base)) == []


def test_turning_virtual_nodes_on_under_the_fleets_ranges_widens_exposure(tmp_path: Path) -> None:
    """The fleet's ranges skip a cluster with virtual nodes: the diff says it becomes public."""

    def no_virtual_nodes(fleet: Fleet) -> None:
        ranged(fleet)
        cluster(fleet, "worker-1")["virtualNodes"] = {"enabled": False}

    base = edited(tmp_path / "base", no_virtual_nodes, "prod")
    head = edited(tmp_path / "head", ranged, "prod")
    diff = compare(base, head)
    assert "worker-1: AKS API server: ranged -> public" in section(diff, "Exposure")
    assert ("worker-1: AKS API server", "widens exposure") in flags(diff)


def test_reworded_plan_tables_keep_their_place_in_the_diff(
    dev: Snapshot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Titles and column headings are for people: rewording every one of them leaves the diff of
    quotas, manager quotas, placement and credentials as it was (the diff keys on each table's
    kind), rather than moving those tables to "Other plan tables"."""

    def change(fleet: Fleet) -> None:
        cluster(fleet, "worker-1")["pools"][0]["maxCount"] = 4
        worker_quota(fleet, "worker-1", "cpu")["nominalQuota"] = "12"
        fleet["karmada"]["applications"][0]["propagation"]["weights"]["worker-1"] = 2
        fleet["multiKueue"]["rotation"] = {"worker-2": 1}

    as_written = compare(dev, edited(tmp_path / "as-written", change))
    compared = {s["title"] for s in as_written["sections"]}
    assert {"Quota vs pool capacity", "MultiKueue manager quota"} <= compared
    assert {"Karmada placement", "Credentials"} <= compared

    def reworded(fleet: Any) -> tuple[list[dict[str, Any]], list[Any]]:
        sections, warnings = extra_sections(fleet)
        return [
            s
            | {
                "title": f"{s['title']}, reworded",
                "columns": [f"{c}, reworded" for c in s["columns"]],
            }
            for s in sections
        ], warnings

    monkeypatch.setattr("preflight.snapshot.extra_sections", reworded)
    assert compare(snapshot("dev"), edited(tmp_path / "reworded", change)) == as_written


def test_every_plan_table_has_a_kind_of_its_own() -> None:
    """The id the diff keys a table on (and `--json` carries): one per table, never shared."""
    fleet, _ = load_from_file("prod")
    sections, _ = extra_sections(fleet)
    kinds = [s["kind"] for s in sections]
    assert len(kinds) == len(set(kinds)), kinds
    assert all(isinstance(k, str) and k for k in kinds), kinds
