"""The stand-in `kubelogin`'s `convert-kubeconfig`, as the real one rewrites a kubeconfig.

`kubelogin convert-kubeconfig -l <login> --kubeconfig F` (Azure/kubelogin,
pkg/internal/converter/convert.go) rewrites, in place, every user of F whose exec command is
kubelogin: a new exec of `kubelogin get-token --login <login> --server-id <the old
--server-id>` (and the old `--cache-dir`), the old install hint kept; `azurecli` takes no
client, tenant or environment from the old arguments (the Azure CLI's sign-in decides them), so
AKS's devicecode arguments (`--client-id`, `--tenant-id`, `--environment`) are dropped. Only
the logins the Azure twin's README run needs are modelled: `azurecli`; others are refused.

Run: `python -m testkit.realtier.kubelogin_standin convert-kubeconfig -l azurecli --kubeconfig F`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Final

import yaml

LOGINS: Final = ("azurecli",)
EXEC_API: Final = "client.authentication.k8s.io/v1beta1"


def _arg(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args[:-1] else None


def convert(doc: dict[str, Any], login: str) -> dict[str, Any]:
    """`doc` with every kubelogin user converted to `login` (the module's docstring)."""
    if login not in LOGINS:
        raise ValueError(f"stand-in kubelogin: login {login!r} is not modelled ({LOGINS})")
    for entry in doc.get("users") or []:
        user = entry.get("user") or {}
        old = user.get("exec") or {}
        if "kubelogin" not in str(old.get("command", "")).lower():
            continue
        args = [str(a) for a in old.get("args") or []]
        server = _arg(args, "--server-id")
        if not server:
            raise ValueError("--server-id is required")
        new_args = ["get-token", "--login", login, "--server-id", server]
        cache = _arg(args, "--cache-dir") or _arg(args, "--token-cache-dir")
        if cache:
            new_args += ["--cache-dir", cache]
        exec_config: dict[str, Any] = {
            "apiVersion": EXEC_API,
            "command": "kubelogin",
            "args": new_args,
            "env": None,
            "provideClusterInfo": False,
        }
        if old.get("installHint"):
            exec_config["installHint"] = old["installHint"]
        user["exec"] = exec_config
        user.pop("auth-provider", None)
        entry["user"] = user
    return doc


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kubelogin")
    parser.add_argument("command", choices=["convert-kubeconfig"])
    parser.add_argument("-l", "--login", required=True)
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    options = parser.parse_args(argv)
    if not options.kubeconfig:
        sys.stderr.write("stand-in kubelogin: --kubeconfig (or KUBECONFIG) is required\n")
        return 1
    path = Path(options.kubeconfig)
    try:
        doc = convert(yaml.safe_load(path.read_text()) or {}, options.login)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"stand-in kubelogin: {exc}\n")
        return 1
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
