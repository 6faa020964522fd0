"""Kubeconfigs for unattended runs: kubelogin's exec user rewritten for a non-interactive login.

AKS with Entra ID hands out kubeconfigs whose user runs `kubelogin get-token --login devicecode`,
which waits for a person. `convert` rewrites such a user's exec args the way `kubelogin
convert-kubeconfig -l LOGIN` does (Azure/kubelogin v0.2.19, pkg/internal/converter/convert.go):
`get-token --login LOGIN --server-id ID`, plus what that login keeps from the old args. The
credentials themselves come from the environment kubelogin reads at get-token time (`az login`'s
cache for azurecli; AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE for
workloadidentity; AAD_SERVICE_PRINCIPAL_CLIENT_ID and AAD_SERVICE_PRINCIPAL_CLIENT_SECRET, or
AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, for spn). Pure: documents in, documents out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

LOGINS: Final = ("azurecli", "workloadidentity", "spn")
# convert.go: execName, getTokenCommand, execAPIVersion.
EXEC_COMMAND: Final = "kubelogin"
EXEC_API_VERSION: Final = "client.authentication.k8s.io/v1beta1"
INSTALL_HINT: Final = (
    "\nkubelogin is not installed which is required to connect to AAD enabled cluster.\n\n"
    "To learn more, please go to https://azure.github.io/kubelogin/\n"
)
# Logins that wait for a person (kubelogin's token/options.go DeviceCodeLogin, InteractiveLogin).
INTERACTIVE: Final = ("devicecode", "interactive")


def _arg(args: Sequence[str], flag: str) -> str | None:
    """convert.go getExecArg: the value after `flag`."""
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return str(args[i + 1])
    return None


def current_user(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The `user` of the current context (what the Kubernetes client will run)."""
    contexts = {c.get("name"): c.get("context") or {} for c in doc.get("contexts") or []}
    context = contexts.get(doc.get("current-context")) or {}
    users = {u.get("name"): u.get("user") or {} for u in doc.get("users") or []}
    user = users.get(context.get("user"))
    return user if isinstance(user, Mapping) else None


def exec_of(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The current user's exec plugin block, or None."""
    user = current_user(doc)
    found = (user or {}).get("exec")
    return found if isinstance(found, Mapping) else None


def login_of(doc: Mapping[str, Any]) -> str | None:
    """The `--login` a kubelogin exec user runs (kubelogin's default is devicecode), else None."""
    ex = exec_of(doc)
    if ex is None or EXEC_COMMAND not in str(ex.get("command") or "").lower():
        return None
    return _arg([str(a) for a in ex.get("args") or []], "--login") or "devicecode"


class ConvertError(ValueError):
    """The kubeconfig cannot be converted (kubelogin's own refusals)."""


def _convert_args(args: Sequence[str], login: str) -> list[str]:
    server = _arg(args, "--server-id")
    if not server:
        raise ConvertError("--server-id is required")  # convert.go: argServerID required
    out = ["get-token", "--login", login, "--server-id", server]
    cache = _arg(args, "--cache-dir") or _arg(args, "--token-cache-dir")
    if cache:
        out += ["--cache-dir", cache]
    if login == "spn":
        client, tenant = _arg(args, "--client-id"), _arg(args, "--tenant-id")
        if not client:
            raise ConvertError("--client-id is required")
        if not tenant:
            raise ConvertError("--tenant-id is required")
        out += ["--client-id", client, "--tenant-id", tenant]
        environment = _arg(args, "--environment")
        if environment:
            out += ["--environment", environment]
        if "--legacy" in args:
            out.append("--legacy")
    return out


def convert(doc: Mapping[str, Any], login: str) -> dict[str, Any]:
    """A copy of `doc` with every kubelogin exec user switched to `login` (others untouched)."""
    if login not in LOGINS:
        raise ConvertError(f"--login {login!r}: expected one of {', '.join(LOGINS)}")
    out = dict(doc)
    users = []
    for entry in doc.get("users") or []:
        user = dict(entry.get("user") or {})
        ex = user.get("exec")
        if isinstance(ex, Mapping) and EXEC_COMMAND in str(ex.get("command") or "").lower():
            new: dict[str, Any] = {
                "apiVersion": EXEC_API_VERSION,
                "command": EXEC_COMMAND,
                "args": _convert_args([str(a) for a in ex.get("args") or []], login),
                "installHint": ex.get("installHint") or INSTALL_HINT,
            }
            user["exec"] = new
            user.pop("auth-provider", None)
        users.append({**entry, "user": user})
    out["users"] = users
    return out
