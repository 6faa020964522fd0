"""fleetview offline: its pure part on Kueue v0.19.2-shaped objects, its CLI, its time bound.

The live states (a real Kueue on each plane) are in tests/realtier/test_fleetview_real.py.
"""

from __future__ import annotations

import ast
import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from fleetview.fetch import read_all
from fleetview.objects import KINDS, VISIBILITY_GROUP, Snapshot
from fleetview.rbac import reader_role
from fleetview.render import print_status
from fleetview.status import report
from fleetview.why import explain
from testkit import crdschema
from testkit.fleetview_objects import (
    JOB,
    NOW,
    PENDING_MESSAGE,
    TEAM,
    WL,
    Obj,
    check_state,
    cluster_queue,
    cond,
    manager,
    provisioning_request,
    worker,
    workload,
)
from testkit.repo import ROOT


def pending_on_quota() -> Obj:
    return workload(
        TEAM, JOB, conditions=[cond("QuotaReserved", "False", "Pending", PENDING_MESSAGE)]
    )


def reserved(seconds: float, nominated: list[str] | None = None) -> Obj:
    return workload(
        TEAM,
        JOB,
        conditions=[cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved", seconds)],
        checks=[check_state("multikueue", "Pending", "", seconds)],
        nominated=nominated,
        admitted_to=TEAM,
    )


def dispatched(to: str) -> Obj:
    return workload(
        TEAM,
        JOB,
        conditions=[
            cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue team-a"),
            cond("Admitted", "True", "Admitted", "The workload is admitted"),
        ],
        checks=[check_state("multikueue", "Ready", f'The workload was admitted on "{to}"')],
        cluster_name=to,
        admitted_to=TEAM,
    )


def copy_running() -> Obj:
    return workload(
        TEAM,
        JOB,
        conditions=[
            cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved"),
            cond("Admitted", "True", "Admitted", "The workload is admitted"),
            # jobframework/reconciler.go: PodsReady once every pod is ready.
            cond(
                "PodsReady",
                "True",
                "Started",
                "All pods reached readiness and the workload is running",
                seconds=30,
            ),
        ],
        checks=[check_state("provisioning", "Ready", "")],
        admitted_to=TEAM,
        origin=True,
    )


def copy_waiting_for_capacity() -> Obj:
    return workload(
        TEAM,
        JOB,
        conditions=[cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved")],
        checks=[check_state("provisioning", "Pending", "")],
        admitted_to=TEAM,
        origin=True,
    )


def waiting_pr() -> Obj:
    return provisioning_request(
        TEAM,
        WL,
        [
            cond(
                "Provisioned",
                "False",
                "CapacityIsNotFound",
                "Capacity is not found, CA will try to find it later.",
            )
        ],
    )


def failed_pr() -> Obj:
    return provisioning_request(
        TEAM,
        WL,
        [
            cond(
                "Failed",
                "True",
                "FailedToCreatePods",
                "missing pod templates, 1 pod templates were referenced, 1 templates were missing",
            )
        ],
    )


def every_fixture_object() -> Iterator[tuple[str, Obj]]:
    snaps = [
        manager(pending_on_quota(), reserved(30), dispatched("worker-2"), down=("worker-1",)),
        worker("worker-2", copy_running(), copy_waiting_for_capacity(), prs=(waiting_pr(),)),
        worker("worker-1", prs=(failed_pr(),)),
    ]
    for snap in snaps:
        for field in (
            "cluster_queues",
            "local_queues",
            "workloads",
            "admission_checks",
            "multikueue_clusters",
            "multikueue_configs",
            "provisioning_requests",
            "provisioning_request_configs",
        ):
            for obj in getattr(snap, field):
                yield f"{snap.cluster} {obj['kind']} {obj['metadata']['name']}", obj


@pytest.mark.parametrize(("what", "obj"), list(every_fixture_object()), ids=lambda x: str(x)[:60])
def test_every_fixture_object_is_valid_against_the_pinned_schemas(what: str, obj: Obj) -> None:
    del what  # the test id
    project, version = (
        ("cluster-autoscaler", "v0.0.0-20240830133931-adfbe7e45277")
        if obj["kind"] == "ProvisioningRequest"
        else ("kueue", "v0.19.2")
    )
    crdschema.assert_valid(obj, project, version)


# ---- status ---------------------------------------------------------------------------------


def test_status_rows_queues_usage_dispatch_pools_and_requests() -> None:
    out = report(
        [
            manager(dispatched("worker-2")),
            worker("worker-2", copy_running(), prs=(waiting_pr(),)),
        ],
        NOW,
    )
    m, w2 = out["clusters"]
    assert (m["role"], w2["role"]) == ("manager", "worker")
    [cq] = m["clusterQueues"]
    assert (cq["name"], cq["active"], cq["pending"], cq["admitted"]) == (TEAM, True, 1, 1)
    assert cq["admissionChecks"] == ["multikueue"]
    cpu = next(u for u in cq["usage"] if u["resource"] == "cpu")
    assert (cpu["flavor"], cpu["used"], cpu["nominal"], cpu["usedPercent"]) == (
        "default",
        "3",
        "4",
        75.0,
    )
    assert [(r["name"], r["active"], r["sinceSeconds"]) for r in m["multiKueueClusters"]] == [
        ("worker-1", True, 400.0),
        ("worker-2", True, 400.0),
    ]
    [ds] = m["dispatchSets"]
    assert ds["config"] == "multikueue"
    assert ds["workers"] == ["worker-1", "worker-2"]
    [row] = ds["workloads"]
    assert (row["name"], row["phase"], row["worker"], row["checkState"]) == (
        WL,
        "admitted",
        "worker-2",
        "Ready",
    )
    assert w2["nodePools"] == [
        {"pool": "batch", "nodes": 2, "ready": 1, "quarantined": 0},
        {"pool": "system", "nodes": 1, "ready": 1, "quarantined": 0},
    ]
    [pr] = w2["provisioningRequests"]
    assert (pr["workload"], pr["state"], pr["reason"]) == (WL, "waiting", "CapacityIsNotFound")
    assert out["warnings"] == []


def test_a_quarantined_node_is_counted_in_its_pool_and_is_not_a_warning() -> None:
    """AKS's Cordon at an upgrade's drain timeout (batch pods kept: upgrades.batchPods):
    counted and shown, no warning (the node is upgraded once its pods have finished)."""
    w2 = worker("worker-2", copy_running())
    held = w2.nodes[1]
    held["metadata"]["labels"]["kubernetes.azure.com/upgrade-status"] = "Quarantined"
    held["spec"] = {"unschedulable": True}
    out = report([manager(dispatched("worker-2")), w2], NOW)
    pools = {p["pool"]: p for p in out["clusters"][1]["nodePools"]}
    assert pools["batch"] == {"pool": "batch", "nodes": 2, "ready": 0, "quarantined": 1}
    assert out["warnings"] == []
    console = Console(record=True, width=200)
    print_status(out, console)
    assert "batch 0/2 (1 quarantined)" in console.export_text()


def test_status_warns_of_stranding_only_past_the_bound() -> None:
    fresh = report([manager(reserved(30))], NOW, stranded_after=300)
    assert fresh["warnings"] == []
    old = report([manager(reserved(900))], NOW, stranded_after=300)
    [warning] = old["warnings"]
    assert (warning["kind"], warning["object"]) == ("Undispatched", f"{TEAM}/{WL}")
    assert "15m00s ago" in warning["message"]
    assert "multikueue" in warning["message"]


def test_status_warns_of_inactive_queues_lost_workers_failed_requests_and_silent_clusters() -> None:
    inactive = manager()
    inactive.cluster_queues[0] = cluster_queue(
        TEAM, active=("False", "AdmissionCheckInactive", "Can't admit new workloads: ...")
    )
    out = report(
        [
            inactive,
            worker("worker-1", prs=(failed_pr(),)),
            Snapshot("worker-2", error="unreachable (no answer after 10.0s)"),
        ],
        NOW,
    )
    kinds = {(w["kind"], w["cluster"], w["object"]) for w in out["warnings"]}
    assert kinds == {
        ("InactiveClusterQueue", "manager", TEAM),
        ("ProvisioningRequestFailed", "worker-1", f"{TEAM}/{WL}-provisioning-1"),
        ("Unreachable", "worker-2", "-"),
    }
    # The manager names worker-2 as a MultiKueueCluster: a silent worker is still a worker.
    assert [c["role"] for c in out["clusters"]] == ["manager", "worker", "worker"]

    lost = report([manager(down=("worker-1",))], NOW)
    [warning] = lost["warnings"]
    assert (warning["kind"], warning["object"]) == ("MultiKueueClusterNotActive", "worker-1")
    assert "ClientConnectionFailed for 6m40s" in warning["message"]


def _doc_keys(section: str) -> set[str]:
    """The keys docs/observability.md lists in a "JSON" table (`key` in the first column)."""
    text = (ROOT / "docs" / "observability.md").read_text()
    block = text.split(f"<!-- keys: {section} -->", 1)[1].split("<!-- /keys -->", 1)[0]
    return set(re.findall(r"^\| `([A-Za-z.\[\]]+)`", block, re.M))


def _keys(value: Any, prefix: str = "") -> set[str]:
    if isinstance(value, dict):
        out: set[str] = set()
        for k, v in value.items():
            out |= {f"{prefix}{k}"} | _keys(v, f"{prefix}{k}.")
        return out
    if isinstance(value, list):
        return set().union(*(_keys(v, f"{prefix.rstrip('.')}[].") for v in value))
    return set()


def test_the_json_keys_are_the_documented_ones() -> None:
    """--json is an interface: every key a report or answer has is in the docs' tables."""
    status = report(
        [
            manager(dispatched("worker-2")),
            worker("worker-2", copy_running(), prs=(waiting_pr(),)),
            Snapshot("worker-1", error="unreachable"),
        ],
        NOW,
    )
    status["warnings"].append({"kind": "", "cluster": "", "object": "", "message": ""})
    assert _keys(status) == _doc_keys("status")
    why = explain(
        [manager(dispatched("worker-2")), worker("worker-2", copy_running())], f"{TEAM}/{JOB}", NOW
    )
    assert _keys(why) == _doc_keys("why")


# ---- why ------------------------------------------------------------------------------------


def why(*snaps: Snapshot, stranded_after: float = 300) -> dict[str, Any]:
    return explain(list(snaps), f"{TEAM}/{JOB}", NOW, stranded_after)


def test_why_pending_on_quota_names_the_queue_and_kueues_message() -> None:
    answer = why(manager(pending_on_quota()), worker("worker-1"))
    assert (answer["cluster"], answer["workload"], answer["phase"]) == ("manager", WL, "pending")
    assert "waits for quota on manager (ClusterQueue team-a)" in answer["verdict"]
    assert PENDING_MESSAGE in answer["verdict"]
    assert "get clusterqueue team-a" in answer["next"]


def test_why_dispatched_and_running_names_the_worker() -> None:
    answer = why(manager(dispatched("worker-2")), worker("worker-2", copy_running()))
    assert answer["worker"] == "worker-2"
    assert "dispatched to worker-2" in answer["verdict"]
    assert "admitted on worker-2 and runs there" in answer["verdict"]
    facts = {(f["cluster"], f["object"]) for f in answer["facts"]}
    assert ("worker-2", f"Workload {TEAM}/{WL} (copy)") in facts
    assert "worker-2.kubeconfig get pods -n team-a" in answer["next"]


def test_why_waiting_on_the_provisioning_request_says_the_autoscaler_has_not_answered() -> None:
    answer = why(
        manager(dispatched("worker-1")),
        worker("worker-1", copy_waiting_for_capacity(), prs=(waiting_pr(),)),
    )
    assert answer["state"] == "at-gate"
    assert (
        "waits at its provisioning gate provisioning (Pending, first attempt); the cluster "
        "autoscaler says waiting: Capacity is not found, CA will try to find it later."
    ) in answer["verdict"]
    assert "get provisioningrequests -n team-a" in answer["next"]
    assert any(f["object"].startswith("ProvisioningRequest ") for f in answer["facts"])


def test_why_a_lost_worker_is_named_with_the_managers_condition() -> None:
    answer = why(
        manager(dispatched("worker-2"), down=("worker-2",)),
        Snapshot("worker-2", error="unreachable (no answer after 10.0s)"),
    )
    assert "dispatched to worker-2, and worker-2 is lost" in answer["verdict"]
    assert "ClientConnectionFailed, since 6m40s" in answer["verdict"]
    assert "get multikueuecluster worker-2" in answer["next"]
    assert ("worker-2", "-") in {(f["cluster"], f["object"]) for f in answer["facts"]}


def test_why_a_nominated_job_waiting_for_worker_quota_is_backlog_not_stranded() -> None:
    """15 minutes nominated to worker-1, whose queue is full: Kueue's normal wait, not stranding
    (a verdict that counted only the manager's quota would call it stranded)."""
    answer = why(
        manager(reserved(900, nominated=["worker-1"])),
        worker(
            "worker-1",
            workload(
                TEAM,
                JOB,
                conditions=[cond("QuotaReserved", "False", "Pending", PENDING_MESSAGE)],
                origin=True,
            ),
        ),
    )
    assert answer["state"] == "nominated"
    assert "holds quota on manager ClusterQueue team-a for 15m00s" in answer["verdict"]
    assert "nominated to worker-1" in answer["verdict"]
    assert "stranded" not in answer["verdict"]
    assert f"on worker-1 it waits for quota: {PENDING_MESSAGE}" in answer["verdict"]


def test_why_no_active_worker_in_the_set() -> None:
    answer = why(manager(reserved(30), down=("worker-1", "worker-2")))
    assert answer["state"] == "no-worker"
    assert "No worker of dispatch set multikueue is Active" in answer["verdict"]
    assert "it looks stranded" not in answer["verdict"]


def test_why_unknown_job_says_kueue_never_saw_it() -> None:
    answer = why(manager(), worker("worker-1"))
    assert (answer["workload"], answer["state"]) == (None, "not-found")
    assert "No Workload for team-a/train on manager" in answer["verdict"]


# ---- the command and its bound ----------------------------------------------------------------


def _kubeconfig(tmp_path: Path, name: str, server: str, user: Obj | None = None) -> Path:
    path = tmp_path / f"{name}.kubeconfig"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": server, "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": name, "user": user or {"token": "t"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP port that accepts connections and never says a word (a hung API server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    listener.close()


def test_a_hung_a_refusing_and_a_plugin_waiting_cluster_each_answer_within_the_bound(
    tmp_path: Path, silent_server: str
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        refused = f"https://127.0.0.1:{s.getsockname()[1]}"  # closed when the block ends
    sleeper = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "sleep",
            "args": ["20"],
            "interactiveMode": "Never",
        }
    }
    configs = {
        "manager": _kubeconfig(tmp_path, "manager", silent_server).read_text(),
        "worker-1": _kubeconfig(tmp_path, "worker-1", refused).read_text(),
        "worker-2": _kubeconfig(tmp_path, "worker-2", silent_server, sleeper).read_text(),
        "worker-3": "not: [a kubeconfig",
    }
    read_all({})  # the client's import (seconds on a loaded machine) is not the clusters' time
    t0 = time.monotonic()
    snaps = read_all(configs, timeout=2.0)
    elapsed = time.monotonic() - t0
    # The bound + 1 s to gather, + margin for a loaded machine; the hangs would take 20 s or more.
    assert elapsed < 2.0 + 3.0, f"read_all took {elapsed:.1f}s for a 2 s bound"
    errors = {s.cluster: s.error or "" for s in snaps}
    assert [s.cluster for s in snaps] == list(configs)
    assert errors["manager"].startswith("unreachable: no answer (https://127.0.0.1:"), errors
    assert errors["worker-1"].startswith("unreachable: connection refused (https://"), errors
    assert errors["worker-2"], errors  # the plugin never returned: a row, not a hang
    assert errors["worker-3"].startswith("malformed kubeconfig: not YAML"), errors


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fleetview", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_bad_usage_is_a_message_and_exit_2(tmp_path: Path) -> None:
    bad = _cli("status", "--kubeconfig", "manager")
    gone = _cli("status", "--kubeconfig", f"manager={tmp_path / 'absent'}")
    job = _cli("why", "no-slash", "--kubeconfig", "m=x")
    for out, says in ((bad, "expected NAME=PATH"), (gone, "cannot read"), (job, "NAMESPACE/JOB")):
        assert (out.returncode, says in out.stderr) == (2, True), out.stderr
        assert "Traceback" not in out.stderr


def test_cli_status_on_an_unreachable_fleet_answers_in_json_and_rows(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        server = f"https://127.0.0.1:{s.getsockname()[1]}"
    path = _kubeconfig(tmp_path, "manager", server)
    out = _cli("status", "--json", "--timeout", "3", "--kubeconfig", f"manager={path}")
    # Answered (JSON on stdout), and exit 2: a cluster could not be read.
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("fleetview: manager: unreachable: connection refused"), out.stderr
    data = json.loads(out.stdout)
    assert data["clusters"][0]["reachable"] is False
    assert data["warnings"][0]["kind"] == "Unreachable"
    table = _cli("why", f"{TEAM}/{JOB}", "--timeout", "3", "--kubeconfig", f"manager={path}")
    assert table.returncode == 2, table.stderr
    assert "unreachable" in table.stdout
    assert "Traceback" not in table.stderr


def test_only_fetch_imports_the_kubernetes_client_in_every_fleetview_module() -> None:
    """The import-linter contract names fleetview's modules one by one; this holds every module,
    new ones included (kueuestate, settings, kubelogin are pure: objects in, words out)."""
    importing = set()
    for path in sorted((ROOT / "fleetview").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "kubernetes" or n.startswith("kubernetes.") for n in names):
                importing.add(path.name)
    assert importing == {"fetch.py"}


def test_the_reader_role_lists_what_fleetview_lists_and_gets_only_the_visibility_api() -> None:
    """get/list on every kind fleetview lists; on Kueue's visibility API `get` alone, the verb
    of a GET of a named ClusterQueue's pendingworkloads (test_fleetview_states.py reads it
    through the real Kueue with `get` alone and is refused with `list` alone); no writes."""
    rules = reader_role()["rules"]
    listed = {(g, p) for g, _, p, _ in KINDS.values()}
    assert {
        (r["apiGroups"][0], res)
        for r in rules
        if r["verbs"] == ["get", "list"]
        for res in r["resources"]
    } == listed
    assert [r for r in rules if r["apiGroups"] == [VISIBILITY_GROUP]] == [
        {
            "apiGroups": [VISIBILITY_GROUP],
            "resources": ["clusterqueues/pendingworkloads"],
            "verbs": ["get"],
        }
    ]
    assert all(len(r["apiGroups"]) == 1 for r in rules)
    assert {v for r in rules for v in r["verbs"]} == {"get", "list"}
    assert not any("secrets" in r["resources"] for r in rules)
