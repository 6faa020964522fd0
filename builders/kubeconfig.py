"""Reading kubeconfig documents (clusters this stack does not create; AKS exec configs). Pure."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlparse

import yaml

from config import yamlsafe


class KubeconfigError(ValueError):
    """A kubeconfig that cannot be used: says what is missing."""


def _named(items: Any, name: str, what: str) -> dict[str, Any]:
    for item in cast("list[dict[str, Any]]", items or []):
        if item.get("name") == name:
            return cast("dict[str, Any]", item.get(what) or {})
    raise KubeconfigError(f"no {what} named {name!r}")


def _context(document: str, context: str | None) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """(its cluster, its user's name, the whole document) of a kubeconfig's context."""
    try:
        # The safe loader's messages name a line, never its text (which may hold a token).
        doc = yamlsafe.load(document, name="the kubeconfig", sensitive=True)
    except yamlsafe.YamlError as exc:
        raise KubeconfigError(str(exc)) from None
    if not isinstance(doc, dict):
        raise KubeconfigError("not a kubeconfig mapping")
    config = cast("dict[str, Any]", doc)
    name = context or config.get("current-context")
    if not name:
        raise KubeconfigError("no context given and no current-context")
    ctx = _named(config.get("contexts"), str(name), "context")
    cluster = _named(config.get("clusters"), str(ctx.get("cluster", "")), "cluster")
    server = cluster.get("server")
    if not isinstance(server, str) or not urlparse(server).hostname:
        raise KubeconfigError(f"context {name!r} has no usable server URL")
    return cluster, str(ctx.get("user") or ""), config


def server_of(document: str, context: str | None = None) -> str:
    """The API server URL of `context` (default: current-context) in a kubeconfig document."""
    cluster, _, _ = _context(document, context)
    return str(cluster["server"])


def host_of(server: str) -> str:
    return urlparse(server).hostname or ""


def kubelogin_noninteractive(document: str, login: str) -> str:
    """An AKS exec kubeconfig (`format=exec`) rewritten for `kubelogin get-token --login <login>`.

    What `kubelogin convert-kubeconfig -l <login>` does, done here so the provider's kubeconfig
    needs no step on the runner: AKS returns `--login devicecode` with the Azure CLI's public
    client id, which waits for a person. Non-interactive modes take their identity from the
    environment (azurecli: `az login`; workloadidentity: AZURE_CLIENT_ID, AZURE_TENANT_ID,
    AZURE_FEDERATED_TOKEN_FILE; spn: AAD_SERVICE_PRINCIPAL_CLIENT_ID/_SECRET; msi).
    """
    doc = cast("dict[str, Any]", yamlsafe.load(document, name="the kubeconfig", sensitive=True))
    for user in cast("list[dict[str, Any]]", doc.get("users") or []):
        spec = cast("dict[str, Any]", user.get("user") or {})
        exec_ = cast("dict[str, Any] | None", spec.get("exec"))
        if not exec_ or "kubelogin" not in str(exec_.get("command", "")):
            raise KubeconfigError(f"user {user.get('name')!r} has no kubelogin exec plugin")
        given = _flags(cast("list[str]", exec_.get("args") or []))
        if "--server-id" not in given:
            raise KubeconfigError(f"user {user.get('name')!r}: kubelogin args lack --server-id")
        args = ["get-token", "--login", login, "--server-id", given["--server-id"]]
        keep = ("--environment", "--tenant-id") if login == "spn" else ()
        for flag in keep:
            if flag in given:
                args += [flag, given[flag]]
        exec_["args"] = args
    return yaml.safe_dump(doc, sort_keys=False)


def _flags(args: list[str]) -> dict[str, str]:
    """`--flag value` pairs of an argument list (the first, a subcommand, is skipped)."""
    return {args[i]: args[i + 1] for i in range(1, len(args) - 1) if args[i].startswith("--")}


@dataclass(frozen=True, slots=True)
class ExecPlugin:
    """A kubeconfig user's `exec` credential plugin (kubelogin on AKS Entra ID clusters)."""

    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    api_version: str


@dataclass(frozen=True, slots=True)
class Connection:
    """How a client reaches and authenticates to one context's API server, as written.

    Files (`tokenFile`, `client-certificate`, ...) are named, not read: reading is I/O.
    `unsupported` names what the document uses that this reading does not follow.
    """

    server: str
    user: str
    ca_data: bytes | None = None
    ca_file: str | None = None
    insecure: bool = False
    token: str | None = None
    token_file: str | None = None
    cert_data: bytes | None = None
    key_data: bytes | None = None
    cert_file: str | None = None
    key_file: str | None = None
    exec_plugin: ExecPlugin | None = None
    unsupported: tuple[str, ...] = ()


# Fields of a kubeconfig cluster or user that change how a client connects, and that
# `connection_of` does not follow.
_UNSUPPORTED_CLUSTER = ("proxy-url", "tls-server-name")
_UNSUPPORTED_USER = ("auth-provider", "username", "as", "as-groups", "as-uid")


def _data(value: Any, what: str) -> bytes | None:
    if value is None:
        return None
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise KubeconfigError(f"{what} is not base64") from None


def _exec_plugin(spec: Mapping[str, Any], user: str) -> ExecPlugin:
    command = spec.get("command")
    if not isinstance(command, str) or not command:
        raise KubeconfigError(f"user {user!r}: exec has no command")
    env = tuple(
        (str(e.get("name")), str(e.get("value")))
        for e in cast("list[dict[str, Any]]", spec.get("env") or [])
    )
    return ExecPlugin(
        command=command,
        args=tuple(str(a) for a in cast("list[Any]", spec.get("args") or [])),
        env=env,
        api_version=str(spec.get("apiVersion") or "client.authentication.k8s.io/v1"),
    )


def connection_of(document: str, context: str | None = None) -> Connection:
    """The server, trust and credential of `context` (default: current-context)."""
    cluster, user_name, config = _context(document, context)
    user = _named(config.get("users"), user_name, "user") if user_name else {}
    unsupported = tuple(
        [f"cluster.{k}" for k in _UNSUPPORTED_CLUSTER if cluster.get(k)]
        + [f"user.{k}" for k in _UNSUPPORTED_USER if user.get(k)]
    )
    exec_spec = user.get("exec")
    return Connection(
        server=str(cluster["server"]),
        user=user_name,
        ca_data=_data(cluster.get("certificate-authority-data"), "certificate-authority-data"),
        ca_file=cluster.get("certificate-authority"),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        token=user.get("token"),
        token_file=user.get("tokenFile"),
        cert_data=_data(user.get("client-certificate-data"), "client-certificate-data"),
        key_data=_data(user.get("client-key-data"), "client-key-data"),
        cert_file=user.get("client-certificate"),
        key_file=user.get("client-key"),
        exec_plugin=_exec_plugin(cast("dict[str, Any]", exec_spec), user_name)
        if isinstance(exec_spec, dict)
        else None,
        unsupported=unsupported,
    )
