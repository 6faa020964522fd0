"""How the real tier starts its processes and tells a dead one from a slow one
(testkit/realtier/harness.py: `spawn_logged`, `check_running`, `answers_ok`), offline with
`sh` and a loopback HTTP server: every plane, Kueue, kruise-manager and job operator goes
through these."""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.realtier.harness import StartError, answers_ok, check_running, spawn_logged


def test_a_process_that_exits_is_reported_with_its_code_and_last_log_lines(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "kueue.log"
    process = spawn_logged(
        "kueue-worker-1",
        ["sh", "-c", 'echo "starting in $PWD"; echo "flag provided but not defined" >&2; exit 3'],
        log,
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
    )
    assert process.popen.wait(timeout=10) == 3
    with pytest.raises(StartError) as failed:
        check_running(process, "worker-1", "kueue")
    message = str(failed.value)
    assert message.startswith(f"[worker-1] kueue exited with 3; last log lines ({log}):")
    assert f"starting in {tmp_path}" in message  # stdout, from cwd
    assert "flag provided but not defined" in message  # stderr too
    process.log.close()


def test_a_running_process_passes_and_its_name_is_the_default(tmp_path: Path) -> None:
    process = spawn_logged(
        "kruise-worker-2", ["sleep", "30"], tmp_path / "k.log", cwd=tmp_path, env={}
    )
    try:
        check_running(process, "worker-2")
        assert os.getpgid(process.popen.pid) == process.popen.pid  # a group of its own
        process.popen.kill()
        process.popen.wait(timeout=10)
        with pytest.raises(StartError, match=r"^\[worker-2\] kruise-worker-2 exited with -9;"):
            check_running(process, "worker-2")
    finally:
        process.popen.kill()
        process.log.close()


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/readyz" else 503)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def health() -> Iterator[int]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_answers_ok_is_200_only(health: int) -> None:
    assert answers_ok(f"http://127.0.0.1:{health}/readyz")
    assert not answers_ok(f"http://127.0.0.1:{health}/healthz")  # 503
    free = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    port = free.server_address[1]
    free.server_close()
    assert not answers_ok(f"http://127.0.0.1:{port}/readyz")  # nothing listens
