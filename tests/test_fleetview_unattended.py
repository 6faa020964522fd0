"""fleetview run by a machine: exit codes, one line per cluster it could not read, no traceback on
any input, Entra ID kubeconfigs converted for a non-interactive login.

The API servers here are small local HTTP servers answering as the Kubernetes API server does
(lists, 401 Status, 404 for an unserved group), so the whole fetch path runs offline.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetview.kubelogin import convert, login_of
from testkit.fleetview_objects import (
    JOB,
    PENDING_MESSAGE,
    TEAM,
    cluster_queue,
    cond,
    local_queue,
    pending_workloads,
    workload,
)
from testkit.repo import ROOT

SERVER_ID = "6dae42f8-4368-4678-94ff-3960e28e3630"  # AKS's Entra ID server app
CLIENT_ID = "80faf920-1908-4b52-b5ef-a8e7bedfc67a"  # Azure CLI's client app, as AKS writes it
TENANT_ID = "00000000-0000-0000-0000-0000000000aa"


def kubeconfig(name: str, server: str, user: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "users": [{"name": f"clusterUser_rg_{name}", "user": user or {"token": "t"}}],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": f"clusterUser_rg_{name}"}}
        ],
        "current-context": name,
    }


def aks_devicecode_user(command: str = "kubelogin", cache: str | None = None) -> dict[str, Any]:
    """The user `az aks get-credentials` writes for an Entra ID cluster (kubelogin's exec)."""
    args = [
        "get-token",
        "--environment",
        "AzurePublicCloud",
        "--server-id",
        SERVER_ID,
        "--client-id",
        CLIENT_ID,
        "--tenant-id",
        TENANT_ID,
    ]
    args += ["--token-cache-dir", cache] if cache else []
    args += ["--login", "devicecode"]
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": command,
            "args": args,
            "env": None,
            "installHint": "install kubelogin",
            "interactiveMode": "IfAvailable",
            "provideClusterInfo": False,
        }
    }


class _Api(BaseHTTPRequestHandler):
    """GET lists of a Kubernetes API server; `status` forces one answer for every path."""

    status: int = 200
    lists: dict[str, list[dict[str, Any]]] = {}
    # Kueue's visibility API (None: not served, 404 as from an API server without it).
    pending: list[dict[str, Any]] | None = None
    # plural -> how many more times its list answers as a list whose storage is (re)initializing
    # (what kube-apiserver's cacher answers after a CRD is created or updated).
    initializing: dict[str, int] = {}

    def do_GET(self) -> None:
        if self.status == 299:  # a web server, not an API server: 200 with a page
            data = b"<html><body>It works!</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        if self.status != 200:
            body = {"kind": "Status", "status": "Failure", "message": "Unauthorized", "code": 401}
            return self._send(self.status, body)
        plural = self.path.rstrip("/").split("/")[-1]
        if self.initializing.get(plural, 0) > 0:
            self.initializing[plural] -= 1
            body = {"kind": "Status", "status": "Failure", "code": 429}
            return self._send(429, {**body, "message": "storage is (re)initializing"}, retry=1)
        if "visibility.kueue.x-k8s.io" in self.path:
            if self.pending is None or not self.path.endswith(
                f"/clusterqueues/{TEAM}/pendingworkloads"
            ):
                return self._send(
                    404, {"kind": "Status", "message": "the server could not find it"}
                )
            return self._send(200, {"kind": "PendingWorkloadsSummary", "items": self.pending})
        return self._send(200, {"kind": "List", "items": self.lists.get(plural, [])})

    def _send(self, code: int, body: dict[str, Any], retry: int | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        if retry is not None:
            self.send_header("Retry-After", str(retry))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


def _serve(
    status: int,
    lists: dict[str, list[dict[str, Any]]] | None = None,
    pending: list[dict[str, Any]] | None = None,
    initializing: dict[str, int] | None = None,
) -> Iterator[str]:
    attrs = {"status": status, "lists": lists or {}, "pending": pending}
    handler = type("Handler", (_Api,), {**attrs, "initializing": dict(initializing or {})})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def healthy() -> Iterator[str]:
    yield from _serve(200, {"clusterqueues": [cluster_queue(TEAM)]})


@pytest.fixture
def reinitializing() -> Iterator[str]:
    """Kueue's CRDs just rewritten: two lists answer 429 "storage is (re)initializing" twice."""
    yield from _serve(
        200,
        {"clusterqueues": [cluster_queue(TEAM)]},
        initializing={"provisioningrequestconfigs": 2, "workloads": 1},
    )


@pytest.fixture
def inactive_queue() -> Iterator[str]:
    cq = cluster_queue(
        TEAM, active=("False", "AdmissionCheckInactive", "Can't admit new workloads")
    )
    yield from _serve(200, {"clusterqueues": [cq]})


def _queue() -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """Three Workloads pending in team-a, ours last; the lists and the visibility API's items."""
    ahead = [
        workload(TEAM, job, uid=f"5000000{i}-0000-0000-0000-000000000000", conditions=[waiting])
        for i, job in enumerate(("first", "second"))
        for waiting in [cond("QuotaReserved", "False", "Pending", PENDING_MESSAGE)]
    ]
    mine = workload(
        TEAM, JOB, conditions=[cond("QuotaReserved", "False", "Pending", PENDING_MESSAGE)]
    )
    wls = [*ahead, mine]
    lists = {
        "clusterqueues": [cluster_queue(TEAM)],
        "localqueues": [local_queue(TEAM, TEAM, TEAM)],
        "workloads": wls,
    }
    return lists, pending_workloads([(w, TEAM) for w in wls])


@pytest.fixture
def visible_queue() -> Iterator[str]:
    lists, pending = _queue()
    yield from _serve(200, lists, pending)


@pytest.fixture
def invisible_queue() -> Iterator[str]:
    lists, _ = _queue()
    yield from _serve(200, lists)


@pytest.fixture
def web_page() -> Iterator[str]:
    yield from _serve(299)


@pytest.fixture
def unauthorized() -> Iterator[str]:
    yield from _serve(401)


def _write(tmp_path: Path, name: str, doc: dict[str, Any] | bytes) -> str:
    path = tmp_path / f"{name}.kubeconfig"
    if isinstance(doc, bytes):
        path.write_bytes(doc)
    else:
        path.write_text(json.dumps(doc))
    return f"{name}={path}"


def _cli(*args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "fleetview", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


def _refused() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"https://127.0.0.1:{s.getsockname()[1]}"  # closed when the block ends


def test_status_exits_2_when_a_cluster_cannot_be_read_with_one_line_each(
    tmp_path: Path, healthy: str, unauthorized: str
) -> None:
    out = _cli(
        "status",
        "--json",
        "--timeout",
        "5",
        "--kubeconfig",
        _write(tmp_path, "manager", kubeconfig("manager", healthy)),
        "--kubeconfig",
        _write(tmp_path, "worker-1", kubeconfig("worker-1", _refused())),
        "--kubeconfig",
        _write(tmp_path, "worker-2", kubeconfig("worker-2", unauthorized)),
        "--kubeconfig",
        _write(tmp_path, "worker-3", b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe binary"),
    )
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    assert [line.split(": ")[1] for line in lines] == ["worker-1", "worker-2", "worker-3"], lines
    assert lines[0].startswith("fleetview: worker-1: unreachable: connection refused"), lines
    assert lines[1] == "fleetview: worker-2: unauthorized: list nodes: Unauthorized", lines
    assert lines[2] == "fleetview: worker-3: malformed kubeconfig: binary data, not YAML", lines
    report = json.loads(out.stdout)  # the answer is still printed, for the clusters that answered
    assert [c["reachable"] for c in report["clusters"]] == [True, False, False, False]


def test_a_list_whose_storage_is_reinitializing_is_asked_again_not_a_lost_cluster(
    tmp_path: Path, reinitializing: str
) -> None:
    # The real tier saw this on all three planes at once, right after Kueue rewrote its CRDs:
    # one 429 made every cluster "unreadable" and the fleet look down.
    out = _cli(
        "status",
        "--json",
        "--timeout",
        "10",
        "--kubeconfig",
        _write(tmp_path, "manager", kubeconfig("manager", reinitializing)),
    )
    assert out.returncode == 0, out.stderr
    [row] = json.loads(out.stdout)["clusters"]
    assert row["reachable"] is True, row
    assert [q["name"] for q in row["clusterQueues"]] == [TEAM], row


def test_status_exits_0_on_a_healthy_fleet_and_1_with_fail_on_warning(
    tmp_path: Path, healthy: str, inactive_queue: str
) -> None:
    ok = _write(tmp_path, "manager", kubeconfig("manager", healthy))
    assert _cli("status", "--kubeconfig", ok).returncode == 0
    assert _cli("status", "--fail-on", "warning", "--kubeconfig", ok).returncode == 0
    warned = _write(tmp_path, "other", kubeconfig("other", inactive_queue))
    assert _cli("status", "--kubeconfig", warned).returncode == 0
    flagged = _cli("status", "--json", "--fail-on", "warning", "--kubeconfig", warned)
    assert flagged.returncode == 1, flagged.stderr
    assert [w["kind"] for w in json.loads(flagged.stdout)["warnings"]] == ["InactiveClusterQueue"]


def test_an_address_that_answers_html_is_one_line_not_a_traceback(
    tmp_path: Path, web_page: str
) -> None:
    out = _cli("status", "--kubeconfig", _write(tmp_path, "web", kubeconfig("web", web_page)))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    [line] = out.stderr.splitlines()
    assert line.startswith("fleetview: web: not a Kubernetes API server ("), line
    assert line.endswith("/api/v1/nodes: the answer is not a JSON list)"), line


def test_status_judges_waits_by_the_stack_named_in_timings_from(
    tmp_path: Path, healthy: str
) -> None:
    kc = _write(tmp_path, "manager", kubeconfig("manager", healthy))
    out = _cli("status", "--json", "--timings-from", "prod", "--kubeconfig", kc)
    assert out.returncode == 0, out.stderr
    timings = json.loads(out.stdout)["timings"]
    assert (timings["source"], timings["dispatcher"], timings["stepSize"]) == (
        "Pulumi.prod.yaml",
        "Incremental",
        1,
    )
    plain = json.loads(_cli("status", "--json", "--kubeconfig", kc).stdout)["timings"]
    assert (plain["source"], plain["dispatcher"]) == ("Kueue v0.19.2 defaults", "AllAtOnce")


def test_timings_from_takes_a_stack_files_path_outside_the_project(
    tmp_path: Path, healthy: str
) -> None:
    """A fleet that is no committed stack (an edited copy, the real tier's twins) is judged by
    its own file: `--timings-from PATH` to a Pulumi.<stack>.yaml."""
    kc = _write(tmp_path, "manager", kubeconfig("manager", healthy))
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    kueue = doc["config"]["aks-batch-fleet:fleet"]["kueue"]
    kueue["multiKueue"] = {"dispatcher": "Incremental", "workerLostTimeout": "20s"}
    edited = tmp_path / "elsewhere" / "Pulumi.twin.yaml"
    edited.parent.mkdir()
    edited.write_text(yaml.safe_dump(doc))
    out = _cli("status", "--json", "--timings-from", str(edited), "--kubeconfig", kc)
    assert out.returncode == 0, out.stderr
    timings = json.loads(out.stdout)["timings"]
    assert (timings["source"], timings["dispatcher"], timings["workerLostTimeoutSeconds"]) == (
        str(edited),
        "Incremental",
        20.0,
    )
    # A path whose name is not a stack file's is not read, and says so.
    other = tmp_path / "fleet.yaml"
    other.write_text(yaml.safe_dump(doc))
    out = _cli("status", "--json", "--timings-from", str(other), "--kubeconfig", kc)
    timings = json.loads(out.stdout)["timings"]
    assert (timings["source"], timings["note"]) == (
        "Kueue v0.19.2 defaults",
        f"{other} not used (not a Pulumi.<stack>.yaml file name)",
    )


def test_garbage_kubeconfigs_are_one_line_each_never_a_traceback(tmp_path: Path) -> None:
    cases = {
        "text": b"just some words",
        "yaml": b"clusters: [unclosed",
        "list": b"- a\n- b\n",
        "empty": b"",
        "utf16": "apiVersion: v1".encode("utf-16"),
    }
    args = [
        arg
        for name, data in cases.items()
        for arg in ("--kubeconfig", _write(tmp_path, name, data))
    ]
    out = _cli("status", "--timeout", "3", *args)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == len(cases), lines
    assert all(": malformed kubeconfig: " in line for line in lines), lines


def test_a_missing_kubelogin_is_named_not_reported_as_unauthorized(
    tmp_path: Path, healthy: str
) -> None:
    user = aks_devicecode_user(command="kubelogin-not-installed-here")
    kc = _write(tmp_path, "manager", kubeconfig("manager", healthy, user))
    out = _cli("status", "--kubeconfig", kc)
    assert out.returncode == 2
    [line] = out.stderr.splitlines()
    assert line.startswith(
        "fleetview: manager: credential plugin `kubelogin-not-installed-here` is not on PATH "
        "(install it: `az aks install-cli`"
    ), line
    assert "Unauthorized" not in out.stderr


def test_a_failing_credential_plugin_is_quoted_in_the_row_not_left_as_a_stray_log_line(
    tmp_path: Path, unauthorized: str
) -> None:
    """kubelogin azurecli without `az login`: the client logs the plugin's failure and sends no
    token, so the API server says 401; the row carries the plugin's own words."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "kubelogin"
    fake.write_text(
        "#!/bin/sh\necho \"ERROR: Please run 'az login' to setup account.\" >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    kc = _write(tmp_path, "manager", kubeconfig("manager", unauthorized, aks_devicecode_user()))
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    out = _cli("status", "--login", "azurecli", "--kubeconfig", kc, path=path)
    assert out.returncode == 2
    [line] = out.stderr.splitlines()
    assert line.startswith("fleetview: manager: unauthorized: list nodes: Unauthorized; "), line
    assert "the credential plugin failed: exec: process returned 1." in line, line
    assert "Please run 'az login' to setup account." in line, line


def test_login_converts_a_devicecode_kubeconfig_so_the_read_runs_unattended(
    tmp_path: Path, healthy: str
) -> None:
    """A fake kubelogin on PATH answers get-token only for `--login azurecli`, as a device-code
    login would hang for a person; with --login azurecli every list is answered."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "kubelogin"
    fake.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" --login azurecli "*) ;; *) sleep 8; exit 1;; esac\n'
        'echo \'{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",'
        '"status":{"token":"t"}}\'\n'
    )
    fake.chmod(0o755)
    kc = _write(tmp_path, "manager", kubeconfig("manager", healthy, aks_devicecode_user()))
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    waits = _cli("status", "--timeout", "3", "--kubeconfig", kc, path=path)
    assert waits.returncode == 2
    assert "kubelogin --login devicecode, which waits for a person: pass --login" in waits.stderr
    converted = _cli(
        "status", "--timeout", "10", "--login", "azurecli", "--kubeconfig", kc, path=path
    )
    assert converted.returncode == 0, converted.stderr


def test_why_reads_the_position_from_the_visibility_api_where_served_and_says_when_not(
    tmp_path: Path, visible_queue: str, invisible_queue: str
) -> None:
    served = _write(tmp_path, "solo", kubeconfig("solo", visible_queue))
    out = _cli("why", f"{TEAM}/{JOB}", "--json", "--kubeconfig", served)
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["state"] == "pending"
    assert (
        "2 Workloads ahead of it in ClusterQueue team-a (2 in LocalQueue team-a), of 3"
        in (answer["verdict"])
    )
    unserved = _write(tmp_path, "old", kubeconfig("old", invisible_queue))
    out = _cli("why", f"{TEAM}/{JOB}", "--json", "--kubeconfig", unserved)
    assert out.returncode == 0, out.stderr
    assert "visibility API on old: not served (HTTP 404)" in json.loads(out.stdout)["verdict"]


def _pairs(args: list[str]) -> set[tuple[str, str]]:
    """Flag/value pairs after `get-token` (kubelogin's tests compare them as a set)."""
    assert args[0] == "get-token"
    return {(args[i], args[i + 1]) for i in range(1, len(args), 2)}


@pytest.mark.parametrize(
    ("login", "cache", "expected"),
    [
        # Azure/kubelogin v0.2.19 pkg/internal/converter/convert_test.go, the exec-format cases
        # "convert from devicecode to azurecli" (with --token-cache-dir), "... to spn" and
        # "... to workloadidentity".
        (
            "azurecli",
            "/tmp/kc",
            {("--server-id", SERVER_ID), ("--login", "azurecli"), ("--cache-dir", "/tmp/kc")},
        ),
        (
            "spn",
            None,
            {
                ("--environment", "AzurePublicCloud"),
                ("--server-id", SERVER_ID),
                ("--tenant-id", TENANT_ID),
                ("--client-id", CLIENT_ID),
                ("--login", "spn"),
            },
        ),
        ("workloadidentity", None, {("--server-id", SERVER_ID), ("--login", "workloadidentity")}),
    ],
)
def test_login_rewrites_exec_args_as_kubelogin_convert_kubeconfig_does(
    login: str, cache: str | None, expected: set[tuple[str, str]]
) -> None:
    doc = kubeconfig("manager", "https://x", aks_devicecode_user(cache=cache))
    assert login_of(doc) == "devicecode"
    out = convert(doc, login)
    ex = out["users"][0]["user"]["exec"]
    assert (ex["command"], ex["apiVersion"]) == (
        "kubelogin",
        "client.authentication.k8s.io/v1beta1",
    )
    assert _pairs(ex["args"]) == expected
    assert login_of(out) == login
    assert doc["users"][0]["user"]["exec"]["args"][-1] == "devicecode"  # the input is untouched


def test_login_leaves_token_users_alone_and_refuses_a_kubeconfig_without_server_id() -> None:
    plain = kubeconfig("manager", "https://x")
    assert convert(plain, "azurecli") == plain
    broken = aks_devicecode_user()
    broken["exec"]["args"] = ["get-token", "--login", "devicecode"]
    with pytest.raises(ValueError, match="--server-id is required"):
        convert(kubeconfig("manager", "https://x", broken), "azurecli")
