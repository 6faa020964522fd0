"""A field of a service-account token Secret as the API server returned it (after its waitFor), for
the components that build a credential from one: MultiKueue's worker access and Karmada's
members."""

from __future__ import annotations

from collections.abc import Mapping


def token_field(data: Mapping[str, str] | None, key: str, *, secret: str) -> str:
    """`data[key]` of the token Secret `secret` names; an unfilled field is an error, so no
    credential is ever built from an empty token or CA."""
    value = (data or {}).get(key)
    if not value:
        raise RuntimeError(
            f"{secret} has no data[{key!r}]: the token controller did not fill it (does the "
            "ServiceAccount exist?); no credential is built from it"
        )
    return value
