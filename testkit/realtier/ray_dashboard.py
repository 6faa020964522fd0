"""A STAND-IN for the Ray dashboard's job API, for KubeRay's RayJob controller on the twins.

Not Ray: no Ray cluster, driver, GCS or job runs anywhere. kwok plays the Ray pods (no container
starts), so nothing would answer the dashboard KubeRay v1.5.0 polls to finish a RayJob. This server
answers the requests of KubeRay's own client
(ray-operator/controllers/ray/utils/dashboardclient/dashboard_httpclient.go at v1.5.0), with the
JSON shapes it parses (controllers/ray/utils/types/dashboard_httpclient.go), and moves each
submitted job PENDING -> RUNNING -> SUCCEEDED on a timer.

How KubeRay reaches it. Without `--use-kubernetes-proxy`, KubeRay's dashboard client is a plain
`http.Client` on `http://<head service>.<namespace>.svc.cluster.local:<dashboard port>`
(`GetRayDashboardClientFunc`, `FetchHeadServiceURL` in controllers/ray/utils/util.go). Go's default
transport sends plain-HTTP requests through `$HTTP_PROXY`; the test starts the operator with
`HTTP_PROXY` set to this server, so every dashboard request arrives here as a proxy request whose
URL names the head Service it was meant for (`Request.host`). The operator's API-server traffic is
HTTPS to a loopback address: no proxy applies to it.

What it honours (the calls of the v1.5.0 client; the RayJob controller in `HTTPMode` uses the
first three):
- `GET /api/jobs/<id>`: the job as `RayJobInfo` JSON (`status`, `submission_id`, `job_id`,
  `entrypoint`, `message`, `metadata`, `start_time` and `end_time` in ms), 404 for an unknown id;
- `POST /api/jobs/`: a `RayJobRequest` (`entrypoint`, `submission_id`, ...); answers
  `{"job_id", "submission_id"}`, and 500 with Ray's "Please use a different submission_id" text
  for an id already used (the client's own check for that case);
- `POST /api/jobs/<id>/stop`: `{"stopped": true}` and the job STOPPED if it was not terminal
  (`{"stopped": false}` otherwise), as Ray answers;
- `DELETE /api/jobs/<id>`, `GET /api/jobs/` (the list), `GET /api/jobs/<id>/logs` (`{"logs"}`).
Anything else (the Serve API of RayService) is 404. For a K8sJobMode RayJob, whose submitter
pod kwok runs without running `ray job submit`, the test makes that pod's submission itself
(`submit_for_submitter`). docs/testing.md lists what it does not do.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import urlsplit

JOBS: Final = "/api/jobs/"
TERMINAL: Final = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})


@dataclass
class Request:
    """One request the stand-in answered: what KubeRay asked and of which head Service."""

    method: str
    host: str  # the URL's host:port, `<head svc>.<ns>.svc.cluster.local:<port>` through a proxy
    path: str
    status: int
    by: str = "kuberay"  # or "submitter": `submit_for_submitter`, not an HTTP request


@dataclass
class Job:
    submission_id: str
    job_id: str
    entrypoint: str
    metadata: dict[str, str]
    host: str
    submitted: float  # time.monotonic()
    submitted_ms: int  # wall clock, as Ray reports it
    pending: float  # the stand-in's timer when it was submitted
    running: float
    outcome: str
    stopped_at: float | None = None
    statuses: list[str] = field(default_factory=list[str])  # every status served, in order


class StandInDashboard:
    """The stand-in on 127.0.0.1:`port` (0: any free one): a job is PENDING for `pending` s,
    RUNNING for `running` s, then SUCCEEDED (or the status of `outcome`), with the values these
    attributes have when it is submitted."""

    def __init__(
        self,
        *,
        port: int = 0,
        pending: float = 2.0,
        running: float = 5.0,
        outcome: str = "SUCCEEDED",
    ) -> None:
        self.pending = pending
        self.running = running
        self.outcome = outcome
        self.jobs: dict[str, Job] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                del format, args

            def _answer(self, status: int, body: Any) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self) -> None:
                url = urlsplit(self.path)
                host = url.netloc or self.headers.get("Host", "")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, answer = stand_in.handle(self.command, url.path, host, body)
                with stand_in._lock:
                    stand_in.requests.append(Request(self.command, host, url.path, status))
                self._answer(status, answer)

            do_GET = do_POST = do_DELETE = do_PUT = _handle  # noqa: N815 - http.server's names

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> StandInDashboard:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def submit_for_submitter(self, address: str, submission_id: str, entrypoint: str) -> int:
        """The one request a K8sJobMode submitter pod's `ray job submit --no-wait` makes (KubeRay's
        common/job.go BuildJobSubmitCommand), made by the test for the pod kwok runs: POST
        /api/jobs/ to `address` (the pod's RAY_DASHBOARD_ADDRESS) with its submission id. The
        submitter's `ray job status` before it and `ray job logs --follow` after it are not made."""
        body = json.dumps({"entrypoint": entrypoint, "submission_id": submission_id}).encode()
        status, _ = self.handle("POST", JOBS, address, body)
        with self._lock:
            self.requests.append(Request("POST", address, JOBS, status, by="submitter"))
        return status

    def status(self, job: Job, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        if job.stopped_at is not None:
            return "STOPPED"
        age = now - job.submitted
        if age < job.pending:
            return "PENDING"
        if age < job.pending + job.running:
            return "RUNNING"
        return job.outcome

    def info(self, job: Job) -> dict[str, Any]:
        status = self.status(job)
        job.statuses.append(status)
        out: dict[str, Any] = {
            "type": "SUBMISSION",
            "submission_id": job.submission_id,
            "job_id": job.job_id if status != "PENDING" else None,
            "entrypoint": job.entrypoint,
            "status": status,
            "message": {
                "PENDING": "Job has not started yet. It may be waiting for the runtime environment "
                "to be set up.",
                "RUNNING": "Job is currently running.",
                "SUCCEEDED": "Job finished successfully.",
                "FAILED": "Job failed.",
                "STOPPED": "Job was intentionally stopped.",
            }[status],
            "metadata": job.metadata,
            "runtime_env": {},
            "start_time": job.submitted_ms,
            "end_time": 0,
        }
        if out["job_id"] is None:
            del out["job_id"]
        if status in TERMINAL:
            ended = (
                job.stopped_at
                if job.stopped_at is not None
                else (job.submitted + job.pending + job.running)
            )
            out["end_time"] = job.submitted_ms + int((ended - job.submitted) * 1000)
        else:
            del out["end_time"]
        return out

    def handle(self, method: str, path: str, host: str, body: bytes) -> tuple[int, Any]:
        if not path.startswith(JOBS.rstrip("/")):
            return 404, {"error": f"not served by the stand-in dashboard: {path}"}
        rest = path[len(JOBS) :] if path.startswith(JOBS) else ""
        parts = [p for p in rest.split("/") if p]
        with self._lock:
            if not parts:
                if method == "GET":
                    return 200, [self.info(j) for j in self.jobs.values()]
                if method == "POST":
                    return self._submit(json.loads(body or b"{}"), host)
                return 405, {"error": method}
            job = self.jobs.get(parts[0])
            if job is None:
                return 404, {"error": f"Job {parts[0]} does not exist"}
            if len(parts) == 1 and method == "GET":
                return 200, self.info(job)
            if len(parts) == 1 and method == "DELETE":
                if self.status(job) not in TERMINAL:
                    return 400, {"error": "Job is not in a terminal state"}
                del self.jobs[parts[0]]
                return 200, {"deleted": True}
            if parts[1:] == ["stop"] and method == "POST":
                if self.status(job) in TERMINAL:
                    return 200, {"stopped": False}
                job.stopped_at = time.monotonic()
                return 200, {"stopped": True}
            if parts[1:] == ["logs"] and method == "GET":
                return 200, {"logs": f"stand-in dashboard: no driver ran `{job.entrypoint}`\n"}
            return 404, {"error": f"not served by the stand-in dashboard: {method} {path}"}

    def _submit(self, request: dict[str, Any], host: str) -> tuple[int, Any]:
        submission_id = str(request.get("submission_id") or f"raysubmit_{uuid.uuid4().hex[:16]}")
        if submission_id in self.jobs:
            return 500, (
                f"Job with submission_id {submission_id} already exists. "
                "Please use a different submission_id."
            ).encode()
        job = Job(
            submission_id=submission_id,
            job_id=f"{len(self.jobs) + 1:02x}000000",
            entrypoint=str(request.get("entrypoint", "")),
            metadata=dict(request.get("metadata") or {}),
            host=host,
            submitted=time.monotonic(),
            submitted_ms=int(time.time() * 1000),
            pending=self.pending,
            running=self.running,
            outcome=self.outcome,
        )
        self.jobs[submission_id] = job
        return 200, {"job_id": submission_id, "submission_id": submission_id}
