"""Annotated pydantic types for the config's values, each over one rule of `upstream`.

Every key that takes a Kubernetes name, label, quantity or taint, or an AKS name, uses these, so
the same value gets the same verdict wherever the config takes it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import Decimal
from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, PlainValidator

from upstream import aks, k8s


def _rule(problem: Callable[[str], str | None]) -> AfterValidator:
    def check(value: str) -> str:
        found = problem(value)
        if found:
            raise ValueError(found)
        return value

    return AfterValidator(check)


def _pattern(regex: re.Pattern[str], allowed: str) -> AfterValidator:
    return _rule(lambda v: None if regex.fullmatch(v) else f"{v!r} is not allowed: {allowed}")


# The SI suffixes a fractional number is written with, finest last (Kubernetes keeps nano).
_FRACTION_SUFFIXES = (("m", 10**3), ("u", 10**6), ("n", 10**9))


def _from_number(value: float) -> str | int:
    """A YAML number as Kubernetes reads a JSON number quantity: `0.5` is 500m, `5e7` 50000000."""
    amount = Decimal(repr(value))  # the shortest decimal that is this float: what was written
    if amount == amount.to_integral_value():
        return int(amount)
    for suffix, scale in _FRACTION_SUFFIXES:
        scaled = amount * scale
        if scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    raise ValueError(f"{value!r} is finer than Kubernetes keeps (1n); round it, e.g. to '1m'")


def _quantity(value: object) -> str | int:
    # One validator for every form (no str | int union), so a bad value gets one message and
    # never pydantic's per-branch errors (`.str`, `.int`).
    if isinstance(value, float) and math.isfinite(value):
        value = _from_number(value)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(
            f"must be a Kubernetes quantity such as 8, '500m' or '64Gi', got {value!r}"
        )
    problem = k8s.quantity_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _taint(value: str) -> str:
    k8s.parse_taint(value)
    return value


# Kubernetes (apimachinery validation).
DnsLabel = Annotated[str, _rule(k8s.dns_label_problem)]
DnsSubdomain = Annotated[str, _rule(k8s.dns_subdomain_problem)]
LabelKey = Annotated[str, _rule(k8s.label_key_problem)]
LabelValue = Annotated[str, _rule(k8s.label_value_problem)]
ResourceName = Annotated[str, _rule(lambda v: k8s.qualified_name_problem(v, "resource name"))]
# Stored as written (Kueue and Kubernetes take `16` and "16" alike), a YAML float as Kubernetes
# reads it; >= 0.
Quantity = Annotated[str | int, PlainValidator(_quantity)]
Taint = Annotated[str, AfterValidator(_taint)]
GoDuration = Annotated[str, _pattern(k8s.GO_DURATION, "a Go duration such as '30s', '1m' or '15m'")]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

# AKS and ARM.
ClusterName = Annotated[
    str,
    _pattern(
        aks.CLUSTER_NAME,
        "1-63 letters, digits, '-' and '_', starting and ending with a letter or digit",
    ),
]
DnsPrefix = Annotated[
    str,
    _pattern(
        aks.DNS_PREFIX, "1-54 letters, digits and '-', starting and ending with a letter or digit"
    ),
]
PoolName = Annotated[
    str,
    _pattern(
        aks.POOL_NAME, "1-12 lowercase letters and digits, starting with a letter (AKS, Linux)"
    ),
]
Location = Annotated[str, _pattern(aks.LOCATION, "an Azure region name such as 'westeurope'")]
KubernetesVersion = Annotated[
    str, _pattern(aks.K8S_VERSION, "'1.MINOR' or '1.MINOR.PATCH', e.g. '1.33' or '1.33.2'")
]
Zone = Literal["1", "2", "3"]
EntraObjectId = Annotated[str, _pattern(aks.ENTRA_OBJECT_ID, "an Entra ID object id (a GUID)")]
TagName = Annotated[str, _rule(aks.tag_name_problem)]
TagValue = Annotated[str, _rule(aks.tag_value_problem)]


# IPv4 (written as text in YAML).
def _text_only(value: object) -> object:
    # pydantic would read `true` or `5` as an address (0.0.0.1); YAML users mean a typo.
    if not isinstance(value, str | IPv4Network | IPv4Address):
        raise ValueError(f"must be written as a string such as '10.0.0.0/16', got {value!r}")
    return value


def _network(value: object) -> object:
    # Strict models take instances only: parse the text here (ValueError says what is wrong).
    value = _text_only(value)
    return IPv4Network(value) if isinstance(value, str) else value


def _address(value: object) -> object:
    value = _text_only(value)
    return IPv4Address(value) if isinstance(value, str) else value


Cidr = Annotated[IPv4Network, BeforeValidator(_network)]
IpAddress = Annotated[IPv4Address, BeforeValidator(_address)]
