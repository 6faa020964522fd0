"""Kubernetes value syntax, once (k8s.io/apimachinery v0.33: validation, resource.Quantity).

Names (DNS labels and subdomains), qualified names (label keys, resource names), label values,
quantities, taints and Go durations. Each `*_problem` function returns why a value is refused, or
None; config types and checks turn that text into errors with key paths.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, DecimalException, InvalidOperation
from typing import Final

# pkg/util/validation: IsDNS1123Label (<= 63), IsDNS1123Subdomain (<= 253).
DNS_LABEL: Final = re.compile(r"^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$")
DNS_LABEL_MAX: Final = 63
DNS_SUBDOMAIN: Final = re.compile(
    r"^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$"
)
DNS_SUBDOMAIN_MAX: Final = 253
# IsQualifiedName's name part and IsValidLabelValue.
_NAME_PART: Final = re.compile(r"^[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE: Final = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
NAME_PART_MAX: Final = 63

# The label every namespace carries (kube-apiserver sets it; selectors may use it).
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def dns_label_problem(value: str) -> str | None:
    """Why `value` is not a DNS-1123 label (Namespace, Service, most object names), or None."""
    if len(value) > DNS_LABEL_MAX or not DNS_LABEL.fullmatch(value):
        return (
            f"{value!r} must be a DNS-1123 label: 1-63 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return None


def dns_subdomain_problem(value: str) -> str | None:
    """Why `value` is not a DNS-1123 subdomain (most cluster-scoped object names), or None."""
    if len(value) > DNS_SUBDOMAIN_MAX or not DNS_SUBDOMAIN.fullmatch(value):
        return (
            f"{value!r} must be a DNS-1123 subdomain: 1-253 lowercase letters, digits, '-' and '.'"
        )
    return None


def qualified_name_problem(value: str, what: str = "name") -> str | None:
    """Why `value` is not a qualified name (label key, taint key, resource name), or None."""
    prefix, slash, name = value.rpartition("/")
    if slash and (
        not prefix or len(prefix) > DNS_SUBDOMAIN_MAX or not DNS_SUBDOMAIN.fullmatch(prefix)
    ):
        return f"{what} {value!r}: prefix {prefix!r} must be a lowercase DNS subdomain"
    if len(name) > NAME_PART_MAX or not _NAME_PART.fullmatch(name):
        return (
            f"{what} {value!r}: name must be 1-63 characters of [A-Za-z0-9_.-], "
            "starting and ending alphanumeric"
        )
    return None


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a label key, or None."""
    return qualified_name_problem(key, "label key")


def label_value_problem(value: str) -> str | None:
    """Why `value` is not a label value (empty is allowed), or None."""
    if len(value) > NAME_PART_MAX or not _LABEL_VALUE.fullmatch(value):
        return (
            f"label value {value!r} must be at most 63 characters of [A-Za-z0-9_.-], "
            "starting and ending alphanumeric"
        )
    return None


def selector_matches(
    match_labels: Mapping[str, str],
    match_expressions: list[tuple[str, str, list[str]]],
    labels: Mapping[str, str],
) -> bool:
    """Label-selector semantics (apimachinery labels.Selector): every term must hold."""
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    for key, operator, values in match_expressions:
        present, value = key in labels, labels.get(key)
        ok = {
            "In": present and value in values,
            "NotIn": not present or value not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }[operator]
        if not ok:
            return False
    return True


# ------------------------------------------------------------------------------------------------
# resource.Quantity (api/resource/quantity.go; the grammar its doc comment and the CRDs state):
#   <quantity> ::= <signedNumber><suffix>; <suffix> ::= <binarySI> | <decimalExponent> | <decimalSI>
_QUANTITY: Final = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_NUMBER: Final = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_SUFFIX: Final = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
# apimachinery caps exponents well inside int64; a 1e999999999 quota is a typo, not a number.
_MAX_EXPONENT: Final = 100
_MAX_LENGTH: Final = 100


def quantity_value(value: str | int) -> Decimal:
    """A quantity in base units ('500m' -> 0.5, '2Gi' -> 2147483648); ValueError if not one."""
    text = str(value)
    if len(text) > _MAX_LENGTH or not _QUANTITY.fullmatch(text):
        raise ValueError(f"{text!r} is not a Kubernetes quantity (e.g. '8', '500m', '64Gi')")
    number = _NUMBER.match(text)
    assert number is not None  # the grammar above guarantees a leading number
    rest = text[number.end() :]
    try:
        base = Decimal(number.group(0))
        # "E" and "Ei" are suffixes (exa, exbi); "e3", "E-3", "E+6" are exponents.
        if rest[:1] in ("e", "E") and rest not in _SUFFIX:
            exponent = Decimal(rest[1:])
            if abs(exponent) > _MAX_EXPONENT:
                raise ValueError(f"{text!r}: exponent out of range (|e| <= {_MAX_EXPONENT})")
            return base * Decimal(10) ** exponent
        return base * _SUFFIX[rest]
    except (InvalidOperation, DecimalException, KeyError):
        raise ValueError(f"{text!r} is not a Kubernetes quantity") from None


def quantity_problem(value: str | int) -> str | None:
    """Why `value` is not a non-negative quantity, or None."""
    try:
        amount = quantity_value(value)
    except ValueError as err:
        return str(err)
    if amount < 0:
        return f"{str(value)!r} must be >= 0"
    return None


def format_quantity(resource: str, amount: Decimal) -> str:
    """A quantity as Kubernetes takes it: memory in Gi/Mi when exact, CPU in millicores."""
    if resource == "memory" or resource.startswith("hugepages-") or "storage" in resource:
        for suffix, unit in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount >= unit and amount % unit == 0:
                return f"{int(amount // unit)}{suffix}"
    if amount == amount.to_integral_value():
        return str(int(amount))
    return f"{int(amount * 1000)}m"


# ------------------------------------------------------------------------------------------------
# Taints as AKS and kubectl write them: `key=value:Effect` or `key:Effect`.


def parse_taint(value: str) -> tuple[str, str | None, str]:
    """`key=value:Effect` or `key:Effect` -> (key, value, effect); ValueError with the rule."""
    body, sep, effect = value.rpartition(":")
    if not sep or effect not in TAINT_EFFECTS:
        raise ValueError(
            f"taint {value!r} must be 'key=value:Effect' or 'key:Effect' with Effect one of "
            f"{', '.join(TAINT_EFFECTS)}"
        )
    key, eq, taint_value = body.partition("=")
    problem = label_key_problem(key)
    if problem:
        raise ValueError(f"taint {value!r}: {problem}")
    if eq:
        problem = label_value_problem(taint_value)
        if problem:
            raise ValueError(f"taint {value!r}: {problem}")
        return key, taint_value, effect
    return key, None, effect


def toleration_for_taint(taint: str) -> dict[str, str]:
    """The toleration that lets a pod onto nodes with `taint` ('k=v:Effect' or 'k:Effect')."""
    key, value, effect = parse_taint(taint)
    if value is None:
        return {"key": key, "operator": "Exists", "effect": effect}
    return {"key": key, "operator": "Equal", "value": value, "effect": effect}


# Go's time.ParseDuration as Kueue's config fields take it (no sign; units ns..h).
GO_DURATION: Final = re.compile(r"^(?:0|(?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|s|m|h))+)$")
_DURATION_PART: Final = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
_DURATION_UNIT: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def go_duration_seconds(value: str) -> float:
    """Seconds in a duration GO_DURATION accepts ('0', '90s', '1h30m')."""
    return sum(float(n) * _DURATION_UNIT[u] for n, u in _DURATION_PART.findall(value))


def minor_of(version: str) -> tuple[int, int]:
    """A Kubernetes version's (major, minor): '1.36.2' -> (1, 36)."""
    major, minor, *_ = version.split(".")
    return int(major), int(minor)
