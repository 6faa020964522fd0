"""Offline checks of the stand-in Ray dashboard (testkit/realtier/ray_dashboard.py).

Each request is the one KubeRay v1.5.0's dashboard client makes (dashboardclient/
dashboard_httpclient.go), sent the way KubeRay sends it on the twin: as a plain-HTTP proxy
request (absolute URL) naming the head Service.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from testkit.realtier.ray_dashboard import StandInDashboard

HEAD: str = "http://rj-abcde-head-svc.ml.svc.cluster.local:8265"


@pytest.fixture
def dashboard() -> Iterator[StandInDashboard]:
    stand_in = StandInDashboard(pending=0.3, running=0.3).start()
    yield stand_in
    stand_in.stop()


def _call(dashboard: StandInDashboard, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", dashboard.port, timeout=5)
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if data else {}
    conn.request(method, HEAD + path, body=data, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    try:
        return response.status, json.loads(raw)
    except json.JSONDecodeError:
        return response.status, raw.decode()


def test_a_submitted_job_goes_pending_running_succeeded_as_kuberay_reads_it(
    dashboard: StandInDashboard,
) -> None:
    # GetJobInfo before the submission: 404 (KubeRay then submits, in HTTPMode)
    assert _call(dashboard, "GET", "/api/jobs/rj-x")[0] == 404
    status, answer = _call(
        dashboard,
        "POST",
        "/api/jobs/",
        {"entrypoint": "python -c 'print(1)'", "submission_id": "rj-x", "metadata": {"a": "b"}},
    )
    assert (status, answer) == (200, {"job_id": "rj-x", "submission_id": "rj-x"})
    first = _call(dashboard, "GET", "/api/jobs/rj-x")[1]
    assert first["status"] == "PENDING"
    assert first["submission_id"] == "rj-x"
    assert first["metadata"] == {"a": "b"}
    assert "end_time" not in first
    time.sleep(0.35)
    assert _call(dashboard, "GET", "/api/jobs/rj-x")[1]["status"] == "RUNNING"
    time.sleep(0.35)
    done = _call(dashboard, "GET", "/api/jobs/rj-x")[1]
    assert done["status"] == "SUCCEEDED"
    assert done["end_time"] >= done["start_time"] > 0
    # the same submission id again: Ray's text, which KubeRay's client looks for
    again = _call(dashboard, "POST", "/api/jobs/", {"entrypoint": "x", "submission_id": "rj-x"})
    assert again[0] == 500
    assert "Please use a different submission_id" in again[1]
    assert [j["submission_id"] for j in _call(dashboard, "GET", "/api/jobs/")[1]] == ["rj-x"]
    assert "logs" in _call(dashboard, "GET", "/api/jobs/rj-x/logs")[1]
    # the request named the head Service it was for
    assert {r.host for r in dashboard.requests} == {HEAD.removeprefix("http://")}
    assert dashboard.jobs["rj-x"].host == HEAD.removeprefix("http://")


def test_stop_and_delete_answer_as_ray_does(dashboard: StandInDashboard) -> None:
    dashboard.running = 60.0
    _call(dashboard, "POST", "/api/jobs/", {"entrypoint": "x", "submission_id": "long"})
    assert _call(dashboard, "DELETE", "/api/jobs/long")[0] == 400  # not terminal yet
    assert _call(dashboard, "POST", "/api/jobs/long/stop") == (200, {"stopped": True})
    assert _call(dashboard, "GET", "/api/jobs/long")[1]["status"] == "STOPPED"
    assert _call(dashboard, "POST", "/api/jobs/long/stop") == (200, {"stopped": False})
    assert _call(dashboard, "DELETE", "/api/jobs/long")[0] == 200
    assert _call(dashboard, "GET", "/api/jobs/long")[0] == 404
    # the Serve API (RayService) is not served
    assert _call(dashboard, "GET", "/api/serve/applications/?api_type=declarative")[0] == 404


def test_a_submitters_submission_is_recorded_as_the_submitters(dashboard: StandInDashboard) -> None:
    address = HEAD.removeprefix("http://")
    assert dashboard.submit_for_submitter(address, "rj-k8s", "python x.py") == 200
    assert dashboard.submit_for_submitter(address, "rj-k8s", "python x.py") == 500  # used id
    assert [(r.by, r.status) for r in dashboard.requests] == [
        ("submitter", 200),
        ("submitter", 500),
    ]
    assert _call(dashboard, "GET", "/api/jobs/rj-k8s")[1]["entrypoint"] == "python x.py"
    assert dashboard.requests[-1].by == "kuberay"
