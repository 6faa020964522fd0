"""Who runs `pulumi up`: the Azure principal type of the login azure-native will use.

The deploying identity gets role assignments (the AKS RBAC role on each cluster), and ARM refuses
one whose `principalType` does not match the principal (UnmatchedPrincipalType; azure-native sends
`User` when none is given). The object id comes from `getClientConfig` at deploy time; its type
does not, so it is read here, from the same places azure-native reads its credentials, in its
order (pulumi-azure-native's provider: a client id with a secret, certificate or OIDC token first,
then managed identity, then the Azure CLI's login):

1. `ARM_CLIENT_ID` (or `azure-native:clientId`) with `ARM_CLIENT_SECRET`,
   `ARM_CLIENT_CERTIFICATE_PATH`, `ARM_USE_OIDC`/`ARM_OIDC_TOKEN`: a service principal.
2. `ARM_USE_MSI` (or `azure-native:useMsi`): a managed identity, `ServicePrincipal` to ARM.
3. The Azure CLI's profile (`$AZURE_CONFIG_DIR/azureProfile.json`, else `~/.azure/`): the default
   subscription's `user.type`, `user` or `servicePrincipal` (`az login --service-principal`).
4. Nothing found: `User` (a person's `az login` is the common case), and the plan says so.

A stack can also name it (`deployerPrincipalType`); that wins.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

PrincipalType = Literal["User", "ServicePrincipal"]
_TRUE = ("1", "true", "yes")


@dataclass(frozen=True, slots=True)
class DeployerLogin:
    """The resolved principal type and why (for the plan)."""

    principal_type: PrincipalType
    reason: str


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() in _TRUE


def _cli_profile(env: Mapping[str, str], home: Path) -> tuple[str | None, str]:
    """The Azure CLI's default subscription's `user.type` and the file read, or None."""
    folder = Path(env["AZURE_CONFIG_DIR"]) if env.get("AZURE_CONFIG_DIR") else home / ".azure"
    profile = folder / "azureProfile.json"
    try:
        # The CLI writes it with a byte order mark.
        data: Any = json.loads(profile.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return None, str(profile)
    subscriptions = (
        cast("dict[str, Any]", data).get("subscriptions") if isinstance(data, dict) else None
    )
    if not isinstance(subscriptions, list):
        return None, str(profile)
    wanted = env.get("ARM_SUBSCRIPTION_ID")
    for raw in cast("list[Any]", subscriptions):
        if not isinstance(raw, dict):
            continue
        sub = cast("dict[str, Any]", raw)
        chosen = sub.get("id") == wanted if wanted else sub.get("isDefault") is True
        user = sub.get("user")
        if chosen and isinstance(user, dict):
            kind = cast("dict[str, Any]", user).get("type")
            return (kind if isinstance(kind, str) else None), str(profile)
    return None, str(profile)


def detect(
    env: Mapping[str, str] | None = None,
    provider_config: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> DeployerLogin:
    """The principal type of the login azure-native would use here (see the module text)."""
    env = os.environ if env is None else env
    config = provider_config or {}
    client_id = env.get("ARM_CLIENT_ID") or config.get("clientId")
    secret = (
        env.get("ARM_CLIENT_SECRET")
        or env.get("ARM_CLIENT_CERTIFICATE_PATH")
        or config.get("clientSecret")
        or config.get("clientCertPath")
    )
    oidc = (
        _true(env.get("ARM_USE_OIDC"))
        or bool(env.get("ARM_OIDC_TOKEN"))
        or _true(config.get("useOidc"))
    )
    if client_id and (secret or oidc):
        how = "OIDC" if oidc and not secret else "a secret or certificate"
        return DeployerLogin("ServicePrincipal", f"ARM_CLIENT_ID with {how}: a service principal")
    if _true(env.get("ARM_USE_MSI")) or _true(config.get("useMsi")):
        return DeployerLogin("ServicePrincipal", "ARM_USE_MSI: a managed identity")
    kind, where = _cli_profile(env, Path.home() if home is None else home)
    if kind == "servicePrincipal":
        return DeployerLogin("ServicePrincipal", f"az login --service-principal ({where})")
    if kind == "user":
        return DeployerLogin("User", f"az login as a person ({where})")
    return DeployerLogin(
        "User",
        "no service-principal login found (ARM_CLIENT_ID, ARM_USE_MSI, az CLI profile): a "
        "person is assumed; set deployerPrincipalType if not",
    )


def resolve(configured: str, login: DeployerLogin | None = None) -> DeployerLogin:
    """The stack's `deployerPrincipalType`, or the detected login's for `auto`."""
    if configured == "User":
        return DeployerLogin("User", "deployerPrincipalType: User")
    if configured == "ServicePrincipal":
        return DeployerLogin("ServicePrincipal", "deployerPrincipalType: ServicePrincipal")
    return login if login is not None else detect()


def provider_keys(stack_config: Mapping[str, Any]) -> dict[str, str]:
    """The azure-native credential keys of a stack file's `config` (a `secure:` value as "set")."""
    found: dict[str, str] = {}
    for key in ("clientId", "clientSecret", "clientCertPath", "useOidc", "useMsi"):
        value = stack_config.get(f"azure-native:{key}")
        if value is not None:
            found[key] = "set" if isinstance(value, dict) else str(value)
    return found
