"""Reading kubeconfig documents (for clusters this stack does not create). Pure."""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlparse

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
