"""The only part of fleetview that talks to clusters: kubeconfigs in, `Snapshot`s out.

Reads only (GET of lists, docs/observability.md "RBAC"). Every cluster is read in its own daemon
thread with one deadline: a cluster that refuses, hangs, or whose credential plugin waits for a
person becomes a Snapshot with an `error`, never a traceback or a hang of the command.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

import yaml

from constants import OUT_KUBECONFIGS
from fleetview.kubelogin import INTERACTIVE, ConvertError, convert, exec_of, login_of
from fleetview.objects import (
    KINDS,
    VISIBILITY_GROUP,
    VISIBILITY_VERSION,
    Obj,
    Snapshot,
    name,
)

ROOT: Final = Path(__file__).resolve().parents[1]
DEFAULT_TIMEOUT: Final = 10.0
# `pulumi stack output` may log in to a backend first: bounded too, but more generously.
PULUMI_TIMEOUT: Final = 120.0


class SourceError(Exception):
    """The kubeconfigs could not be had (no pulumi, no stack, a bad --kubeconfig): a usage error."""


def from_stack(stack: str | None, cwd: Path = ROOT) -> dict[str, str]:
    """`pulumi stack output --show-secrets kubeconfigs --json`: cluster name -> kubeconfig."""
    pulumi = shutil.which("pulumi")
    if pulumi is None:
        raise SourceError("no `pulumi` CLI on PATH: pass --kubeconfig NAME=PATH instead")
    argv = [pulumi, "stack", "output", "--show-secrets", OUT_KUBECONFIGS, "--json"]
    if stack:
        argv += ["--stack", stack]
    try:
        done = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=PULUMI_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as e:
        raise SourceError(f"`{' '.join(argv[1:])}` gave no answer in {PULUMI_TIMEOUT:.0f}s") from e
    if done.returncode != 0:
        raise SourceError(f"`{' '.join(argv[1:])}` failed: {done.stderr.strip()}")
    try:
        value = json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise SourceError(f"stack output {OUT_KUBECONFIGS} is not JSON: {e}") from e
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise SourceError(f"stack output {OUT_KUBECONFIGS} is not a map of cluster -> kubeconfig")
    return {str(k): v for k, v in value.items()}


def from_files(pairs: Sequence[str]) -> dict[str, str]:
    """`NAME=PATH` pairs (`--kubeconfig manager=manager.kubeconfig`), in the order given."""
    out: dict[str, str] = {}
    for pair in pairs:
        cluster, sep, path = pair.partition("=")
        if not sep or not cluster or not path:
            raise SourceError(f"--kubeconfig {pair!r}: expected NAME=PATH, e.g. manager=./m.yaml")
        try:
            data = Path(path).expanduser().read_bytes()
        except OSError as e:
            raise SourceError(f"--kubeconfig {cluster}: cannot read {path}: {e.strerror}") from e
        # Not text is that cluster's row ("malformed kubeconfig"), not a traceback here.
        out[cluster] = data.decode("utf-8", errors="replace")
    return out


def selected_stack(cwd: Path = ROOT) -> str | None:
    """The name of Pulumi's selected stack (for its timings), or None when there is none."""
    pulumi = shutil.which("pulumi")
    if pulumi is None:
        return None
    try:
        done = subprocess.run(
            [pulumi, "stack", "--show-name"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=PULUMI_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def parse_kubeconfig(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The kubeconfig document, or (None, why it is not one) in one line."""
    if "\x00" in text or "\ufffd" in text:
        return None, "malformed kubeconfig: binary data, not YAML"
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or type(e).__name__
        return None, f"malformed kubeconfig: not YAML{where}: {problem}"
    if not isinstance(doc, dict):
        return None, "malformed kubeconfig: not a mapping of clusters, users and contexts"
    config = cast("dict[str, Any]", doc)
    missing = [k for k in ("clusters", "users", "contexts") if not config.get(k)]
    if missing:
        return None, f"malformed kubeconfig: no {', '.join(missing)}"
    return config, None


def _plugin_problem(doc: dict[str, Any]) -> str | None:
    """A credential plugin the kubeconfig runs that is not on PATH (the client would only log
    it and go on without a token, so the cluster would answer "Unauthorized")."""
    ex = exec_of(doc)
    command = str((ex or {}).get("command") or "")
    if not command or shutil.which(command) is not None:
        return None
    hint = (
        " (install it: `az aks install-cli`, or https://azure.github.io/kubelogin/)"
        if "kubelogin" in command.lower()
        else ""
    )
    return f"credential plugin `{command}` is not on PATH{hint}"


def _interactive_hint(doc: dict[str, Any]) -> str:
    login = login_of(doc)
    if login not in INTERACTIVE:
        return ""
    return (
        f"; its kubeconfig runs kubelogin --login {login}, which waits for a person: "
        "pass --login azurecli, workloadidentity or spn"
    )


def _path(group: str, version: str, plural: str) -> str:
    return f"/apis/{group}/{version}/{plural}" if group else f"/api/{version}/{plural}"


def _read(cluster: str, kubeconfig: str, timeout: float, login: str | None = None) -> Snapshot:
    """One cluster's lists, each request bounded by what is left of `timeout`."""
    # Imported only when a cluster is read (read_all has imported it already).
    from kubernetes import client, config  # noqa: PLC0415
    from urllib3.exceptions import InsecureRequestWarning  # noqa: PLC0415

    # A kubeconfig with insecure-skip-tls-verify is the user's choice: no warning per request.
    warnings.simplefilter("ignore", InsecureRequestWarning)

    t0 = time.monotonic()
    deadline = t0 + timeout
    configuration = client.Configuration()
    document, problem = parse_kubeconfig(kubeconfig)
    if document is not None and login:
        try:
            document = convert(document, login)
        except ConvertError as e:
            problem = f"malformed kubeconfig: cannot convert it for --login {login}: {e}"
    if document is not None and problem is None:
        problem = _plugin_problem(document)
    if document is None or problem is not None:
        return Snapshot(cluster, error=problem, seconds=time.monotonic() - t0)
    hint = _interactive_hint(document)
    try:
        config.load_kube_config_from_dict(
            document, client_configuration=configuration, persist_config=False
        )
    except Exception as e:  # any kubeconfig problem is this cluster's row
        error = f"malformed kubeconfig: {_one_line(e)}{hint}"
        return Snapshot(cluster, error=error, seconds=time.monotonic() - t0)
    failed = _PLUGIN_LOG.take()
    if failed:
        # The client logs a failing credential plugin and goes on without a token; without its
        # words the row would only say "Unauthorized".
        hint += f"; the credential plugin failed: {failed}"
    # One try per request: urllib3's default retries would multiply the bound.
    configuration.retries = False
    api = client.ApiClient(configuration)
    lists: dict[str, Any] = {}
    missing: list[str] = []
    try:
        for field, (group, version, plural, _) in KINDS.items():
            url, response, body = _get(api, _path(group, version, plural), deadline)
            if response.status == 404 and not group:
                return Snapshot(
                    cluster,
                    error=f"not a Kubernetes API server ({url}: HTTP 404)",
                    seconds=time.monotonic() - t0,
                )
            if response.status == 404:
                missing.append(f"{plural}.{group}" if group else plural)
                continue
            if response.status >= 400:
                message = _status_message(body) or f"HTTP {response.status}"
                kind = {401: "unauthorized", 403: "forbidden"}.get(response.status, "error")
                if response.status in TRANSIENT:
                    message += f" (HTTP {response.status} until the --timeout, asked again)"
                return Snapshot(
                    cluster,
                    error=f"{kind}: list {plural}: {message}{hint}",
                    seconds=time.monotonic() - t0,
                )
            try:
                lists[field] = list(json.loads(body).get("items") or [])
            except (ValueError, AttributeError, TypeError):
                return Snapshot(
                    cluster,
                    error=f"not a Kubernetes API server ({url}: the answer is not a JSON list)",
                    seconds=time.monotonic() - t0,
                )
        pending, note = _pending_workloads(api, lists.get("cluster_queues") or [], deadline)
    except Exception as e:  # refused, reset, TLS, timeout: this cluster's row
        seconds = time.monotonic() - t0
        what = "no answer" if seconds >= timeout else _one_line(e)
        error = f"unreachable: {what} ({configuration.host}, after {seconds:.1f}s){hint}"
        return Snapshot(cluster, error=error, seconds=seconds)
    finally:
        api.close()
    return Snapshot(
        cluster,
        seconds=time.monotonic() - t0,
        missing=tuple(missing),
        pending_workloads=pending,
        visibility_note=note,
        **lists,
    )


# An API server answers 429 or 503 while a list's storage is (re)initializing: after a CRD is
# created or updated (Kueue's cert controller writes its CRDs' caBundle at start and on rotation,
# a Helm upgrade rewrites them) and while it starts. Transient by design, with a Retry-After:
# asked again until the deadline, never reported as an unreadable cluster at the first answer.
TRANSIENT: Final = frozenset({429, 503})
RETRY_CAP: Final = 1.0


def _get(api: Any, path: str, deadline: float) -> tuple[str, Any, bytes]:
    """GET `path` within `deadline`, asking again while the answer is transient (429/503)."""
    pause = 0.1
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        method, url, headers, _, _ = api.param_serialize(
            "GET",
            path,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        response = api.call_api(method, url, header_params=headers, _request_timeout=left)
        body = response.read()
        if response.status not in TRANSIENT:
            return url, response, body
        wait = min(_retry_after(response) or pause, RETRY_CAP)
        if time.monotonic() + wait >= deadline:
            return url, response, body  # out of time: this answer is the one reported
        time.sleep(wait)
        pause = min(pause * 2, RETRY_CAP)


def _retry_after(response: Any) -> float | None:
    try:
        value = response.getheader("Retry-After")
        return float(value) if value else None
    except (AttributeError, TypeError, ValueError):
        return None


def _pending_workloads(
    api: Any, cluster_queues: list[Obj], deadline: float
) -> tuple[dict[str, list[Obj]] | None, str]:
    """Kueue's visibility API per ClusterQueue: its pending Workloads in queue order.

    Optional: a cluster that does not serve it (or forbids it, or runs out of time) gives None
    and the reason, never an error row.
    """
    out: dict[str, list[Obj]] = {}
    for cq in cluster_queues:
        if deadline <= time.monotonic():
            return None, "not read: the --timeout ran out first"
        path = (
            f"/apis/{VISIBILITY_GROUP}/{VISIBILITY_VERSION}/clusterqueues/{name(cq)}"
            "/pendingworkloads"
        )
        try:
            _, response, body = _get(api, path, deadline)
        except Exception as e:  # optional: its failure is a note
            return None, f"not read: {_one_line(e)}"
        if response.status == 404:
            return None, "not served (HTTP 404)"
        if response.status >= 400:
            message = _status_message(body) or f"HTTP {response.status}"
            return None, f"not available (HTTP {response.status}: {message})"
        try:
            out[name(cq)] = list(json.loads(body).get("items") or [])
        except (ValueError, AttributeError):
            return None, "not read: the answer is not JSON"
    return out, ""


def _status_message(body: bytes) -> str:
    try:
        return str(json.loads(body).get("message", ""))
    except (ValueError, AttributeError):
        return ""


_ERRNO: Final = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


def _one_line(e: BaseException) -> str:
    """A short reason: the socket's own words when there are some (urllib3 wraps them twice)."""
    text = str(e)
    found = _ERRNO.search(text)
    if found:
        return found.group(1).strip().lower()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:300]


class _PluginLog(logging.Handler):
    """What the Kubernetes client logs while it runs a kubeconfig's credential plugin, per thread
    (kube_config.py `_load_from_exec_plugin` logs the plugin's failure and carries on)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self._by_thread: dict[int, list[str]] = {}
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock:
            self._by_thread.setdefault(record.thread or 0, []).append(record.getMessage())

    def take(self) -> str:
        """This thread's messages so far, in one line (and forgets them)."""
        with self._lock:
            found = self._by_thread.pop(threading.get_ident(), [])
        lines = [line.strip() for m in found for line in m.splitlines() if line.strip()]
        return " ".join(lines)[:300]


_PLUGIN_LOG: Final = _PluginLog()


def read_all(
    kubeconfigs: Mapping[str, str], timeout: float = DEFAULT_TIMEOUT, login: str | None = None
) -> list[Snapshot]:
    """Every cluster at once; each one's row within `timeout` (+1 s to gather), whatever it does."""
    # The client imports in ~0.5 s (more on a busy machine): once, here, before any clock runs.
    import kubernetes.client  # noqa: PLC0415, F401

    results: dict[str, Snapshot] = {}
    lock = threading.Lock()

    def run(cluster: str, kubeconfig: str) -> None:
        try:
            snap = _read(cluster, kubeconfig, timeout, login)
        except Exception as e:  # a bug here must still be a row, not a crash
            snap = Snapshot(cluster, error=_one_line(e))
        with lock:
            results[cluster] = snap

    # Captured for the rows (and kept off stderr, where they were stray "ERROR:root:" lines).
    root = logging.getLogger()
    if _PLUGIN_LOG not in root.handlers:
        root.addHandler(_PLUGIN_LOG)
    threads = [
        threading.Thread(target=run, args=item, name=f"fleetview-{item[0]}", daemon=True)
        for item in kubeconfigs.items()
    ]
    for t in threads:
        t.start()
    end = time.monotonic() + timeout + 1.0
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))
    root.removeHandler(_PLUGIN_LOG)
    with lock:
        out: list[Snapshot] = []
        for c, text in kubeconfigs.items():
            found = results.get(c)
            if found is None:
                doc, _ = parse_kubeconfig(text)
                hint = _interactive_hint(doc) if doc is not None and not login else ""
                late = f"unreachable: no answer within {timeout:.0f}s (still waiting){hint}"
                found = Snapshot(c, error=late, seconds=timeout)
            out.append(found)
        return out
