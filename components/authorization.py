"""A cluster's kubeconfig as its provider gets it: during `up`, only once the API server
authorizes the identity in it (builders/authorization.py: what is asked, what is said).

The wait sits on the Output that feeds the provider's `kubeconfig`, so every object on the
cluster waits with it, and the engine's model (dependencies, previews, secrets) is untouched:
nothing is registered for it, `preview` never waits (`is_dry_run`), and the document is passed
on as it came. Not a dynamic provider: those need the `pulumi-resource-pulumi-python` plugin at
deploy time and the program's modules importable from the plugin's process, neither of which
the real tier's engine (an inline Automation API program) has.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

import pulumi

from builders.authorization import (
    AuthorizationWait,
    Observation,
    Probe,
    ServedApi,
    self_review,
    timeout_message,
    waiting_message,
)
from builders.kubeconfig import Connection, ExecPlugin, KubeconfigError, connection_of

POLL_SECONDS: Final = 2.0
REQUEST_SECONDS: Final = 10.0
EXEC_SECONDS: Final = 60.0
_ACCESS_REVIEWS: Final = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
_SELF_REVIEWS: Final = "/apis/authentication.k8s.io/v1/selfsubjectreviews"

# One round of questions: (probes and required APIs, seconds it may take) -> what it said.
Observe = Callable[[Sequence[Probe | ServedApi], float], Observation]


class CredentialError(Exception):
    """The kubeconfig's credential cannot be had here (its plugin missing or failing): waiting
    would not change that."""


def open_api_server(conn: Connection) -> Observe:
    """Ask `conn`'s API server, as the provider would reach it (same trust, same credential)."""
    return _ApiServer(conn).observe


class _ApiServer:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._token: str | None = None
        self._opener: urllib.request.OpenerDirector | None = None
        self._identity: str | None = None

    def observe(self, asked: Sequence[Probe | ServedApi], budget: float) -> Observation:
        deadline = time.monotonic() + budget
        probes = [p for p in asked if isinstance(p, Probe)]
        apis = [a for a in asked if isinstance(a, ServedApi)]
        if self._identity is None:
            code, body, problem = self._post(_SELF_REVIEWS, self_review(), deadline)
            if problem is not None:
                return Observation(problem=problem)
            if code in (200, 201):
                status: dict[str, Any] = body.get("status") or {}
                user: dict[str, Any] = status.get("userInfo") or {}
                self._identity = repr(str(user.get("username", "")))
            elif code == 401:
                return self._unauthenticated()
            # 403 or 404 (SelfSubjectReview off): the reviews below still answer.
        denied: list[tuple[Probe, str]] = []
        for probe in probes:
            code, body, problem = self._post(_ACCESS_REVIEWS, probe.review(), deadline)
            if problem is not None:
                return Observation(self._identity, problem=problem)
            if code == 401:
                return self._unauthenticated()
            if code not in (200, 201):
                reason = (body.get("message") or "") if body else ""
                return Observation(
                    self._identity, problem=f"SelfSubjectAccessReview answered {code} {reason}"
                )
            status: dict[str, Any] = body.get("status") or {}
            if not status.get("allowed"):
                reason = str(status.get("reason") or status.get("evaluationError") or "")
                denied.append((probe, reason))
        if denied or not apis:
            return Observation(self._identity, tuple(denied))
        missing: list[ServedApi] = []
        for api in apis:
            code, body, problem = self._request(api.path, None, deadline)
            if problem is not None:
                return Observation(self._identity, problem=problem)
            resources: list[Any] = body.get("resources") or []
            served = {
                str(cast("dict[str, Any]", r).get("name")) for r in resources if isinstance(r, dict)
            }
            if code != 200 or api.resource not in served:
                missing.append(api)
        return Observation(self._identity, missing=tuple(missing))

    def _unauthenticated(self) -> Observation:
        self._token = None  # an exec credential is fetched again next round
        return Observation(
            self._identity,
            problem="401 Unauthorized: the API server does not accept the credential",
        )

    def _post(
        self, path: str, body: Mapping[str, Any], deadline: float
    ) -> tuple[int, dict[str, Any], str | None]:
        return self._request(path, body, deadline)

    def _request(
        self, path: str, body: Mapping[str, Any] | None, deadline: float
    ) -> tuple[int, dict[str, Any], str | None]:
        """POST `body` (GET when None): (status, JSON body, None), or (0, {}, why) when the
        server could not be asked."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        token = self._bearer()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(
            self._conn.server.rstrip("/") + path,
            data=None if body is None else json.dumps(body).encode(),
            headers=headers,
            method="GET" if body is None else "POST",
        )
        timeout = max(1.0, min(REQUEST_SECONDS, deadline - time.monotonic()))
        try:
            with self._open().open(request, timeout=timeout) as response:
                return response.status, _json(response.read()), None
        except urllib.error.HTTPError as exc:
            return exc.code, _json(exc.read()), None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            return 0, {}, f"cannot reach the API server: {reason}"

    def _bearer(self) -> str | None:
        conn = self._conn
        if conn.token:
            return conn.token
        if conn.token_file:
            return Path(conn.token_file).read_text().strip()
        if conn.exec_plugin is not None and self._token is None:
            token, cert, key = _exec_credential(conn.exec_plugin)
            self._token = token
            if cert and key:
                self._opener = self._build(cert, key)
        return self._token

    def _open(self) -> urllib.request.OpenerDirector:
        if self._opener is None:
            self._opener = self._build(self._conn.cert_data, self._conn.key_data)
        return self._opener

    def _build(self, cert: bytes | None, key: bytes | None) -> urllib.request.OpenerDirector:
        conn = self._conn
        if conn.insecure:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif conn.ca_data:
            context = ssl.create_default_context(cadata=conn.ca_data.decode())
        else:
            context = ssl.create_default_context(cafile=conn.ca_file)
        if cert and key:
            _load_pair(context, cert, key)
        elif conn.cert_file and conn.key_file:
            context.load_cert_chain(conn.cert_file, conn.key_file)
        return urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))


def _load_pair(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """A client certificate from memory: the ssl module loads pairs from files only, so they
    live in a private directory for the moment it reads them."""
    with tempfile.TemporaryDirectory(prefix="authz-") as directory:
        cert_path, key_path = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        for path, data in ((cert_path, cert), (key_path, key)):
            path.touch(mode=0o600)
            path.write_bytes(data)
        context.load_cert_chain(str(cert_path), str(key_path))


def _json(raw: bytes) -> dict[str, Any]:
    with contextlib.suppress(ValueError):
        found = json.loads(raw)
        if isinstance(found, dict):
            return dict(found)  # pyright: ignore[reportUnknownArgumentType]
    return {}


def _exec_credential(plugin: ExecPlugin) -> tuple[str | None, bytes | None, bytes | None]:
    """Run the credential plugin as client-go does (non-interactive): (token, cert, key)."""
    info = {"apiVersion": plugin.api_version, "kind": "ExecCredential"}
    env = {
        **os.environ,
        **dict(plugin.env),
        "KUBERNETES_EXEC_INFO": json.dumps({**info, "spec": {"interactive": False}}),
    }
    # The command and its subcommand only: arguments may name tenants and clients.
    shown = " ".join([plugin.command, *plugin.args[:1]])
    try:
        done = subprocess.run(
            [plugin.command, *plugin.args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=EXEC_SECONDS,
            check=False,
        )
    except FileNotFoundError:
        raise CredentialError(f"the credential plugin `{plugin.command}` is not on PATH") from None
    except subprocess.TimeoutExpired:
        raise CredentialError(f"`{shown}` did not answer in {EXEC_SECONDS:.0f}s") from None
    if done.returncode != 0:
        tail = " ".join(done.stderr.strip().splitlines()[-3:])[:400]
        raise CredentialError(f"`{shown}` failed (exit {done.returncode}): {tail}")
    status: dict[str, Any] = _json(done.stdout.encode()).get("status") or {}
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    return (
        status.get("token"),
        str(cert).encode() if cert else None,
        str(key).encode() if key else None,
    )


async def wait_until_authorized(
    document: str,
    wait: AuthorizationWait,
    *,
    context: str | None = None,
    facts: Mapping[str, str] | None = None,
    say: Callable[[str], None] = pulumi.log.info,
    open_server: Callable[[Connection], Observe] | None = None,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> str:
    """`document`, once its API server allows every probe; a RunError when `wait`'s bound
    passes first (or the credential cannot be had). Each round runs in a worker thread."""
    try:
        conn = connection_of(document, context)
    except KubeconfigError as exc:
        raise pulumi.RunError(f"cluster {wait.cluster!r}: its kubeconfig: {exc}") from None
    if conn.unsupported:
        say(
            f"cluster {wait.cluster!r}: not waiting for authorization: the kubeconfig uses "
            f"{', '.join(conn.unsupported)}, which this check does not follow"
        )
        return document
    observe = (open_server or open_api_server)(conn)
    deadline = clock() + wait.timeout_seconds
    said = False
    while True:
        try:
            asked = (*wait.probes, *wait.apis)
            seen = await asyncio.to_thread(observe, asked, max(1.0, deadline - clock()))
        except (CredentialError, OSError) as exc:
            raise pulumi.RunError(
                f"cluster {wait.cluster!r}: cannot get the credential of the kubeconfig's user "
                f"{conn.user!r}: {exc}"
            ) from None
        if seen.ready:
            return document
        if clock() + POLL_SECONDS >= deadline:
            raise pulumi.RunError(
                timeout_message(wait, conn.server, conn.user, seen, dict(facts or {}))
            )
        if not said:
            say(waiting_message(wait, conn.server, conn.user, seen))
            said = True
        await pause(POLL_SECONDS)


def authorized(
    kubeconfig: pulumi.Output[str],
    wait: AuthorizationWait | None,
    *,
    context: str | None = None,
    facts: Mapping[str, pulumi.Input[str]] | None = None,
    log_to: pulumi.Resource | None = None,
) -> pulumi.Output[str]:
    """`kubeconfig`, resolved during `up` only once its API server authorizes its identity.

    `facts` (e.g. the cluster's Azure id, or the role assignment's id) are waited for first, so
    the grant exists before the first question, and fill the timeout message's placeholders.
    """
    if wait is None:
        return kubeconfig

    def say(message: str) -> None:
        pulumi.log.info(message, resource=log_to)

    def gate(args: list[Any]) -> str | Awaitable[str]:
        document, values = str(args[0]), dict(args[1])
        if pulumi.runtime.is_dry_run():
            return document
        found = {k: str(v) for k, v in values.items()}
        return wait_until_authorized(document, wait, context=context, facts=found, say=say)

    gated: pulumi.Output[str] = pulumi.Output.all(
        kubeconfig, pulumi.Output.all(**(facts or {}))
    ).apply(gate)
    return gated
