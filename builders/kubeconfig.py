"""Reading kubeconfig documents (clusters this stack does not create; AKS exec configs). Pure."""

from __future__ import annotations

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


def server_of(document: str, context: str | None = None) -> str:
    """The API server URL of `context` (default: current-context) in a kubeconfig document."""
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
    return server


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
