"""One rule per kind of value: the same verdict wherever the config takes it (upstream/k8s.py).

The quantity grammar is checked against apimachinery's own table (k8s.io/apimachinery
pkg/api/resource/quantity_test.go, TestQuantityParse: its accepted inputs and its `invalid` list).
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest
import yaml

from checks.stack import parse_fleet
from config.errors import ConfigError
from testkit.repo import ROOT
from upstream.k8s import label_key_problem, quantity_problem, quantity_value

# (input, value in base units) for TestQuantityParse rows whose value is exact (no rounding to
# nano units, which apimachinery applies and a quota never needs).
ACCEPTED = [
    ("0", Decimal(0)),
    ("0n", Decimal(0)),
    ("0Ki", Decimal(0)),
    ("1", Decimal(1)),
    ("1Ki", Decimal(1024)),
    ("7Mi", Decimal(7 * 2**20)),
    ("6Gi", Decimal(6 * 2**30)),
    ("3Ei", Decimal(3 * 2**60)),
    ("5n", Decimal("5e-9")),
    ("4u", Decimal("4e-6")),
    ("3m", Decimal("0.003")),
    ("50k", Decimal(50_000)),
    ("2P", Decimal(2 * 10**15)),
    ("1E", Decimal(10**18)),
    ("1E-3", Decimal("0.001")),
    ("1e3", Decimal(1000)),
    ("1E18", Decimal(10**18)),
    ("100.035k", Decimal(100_035)),
    ("0.0005k", Decimal("0.5")),
    ("0.5e-2", Decimal("0.005")),
    ("1.3E+6", Decimal(1_300_000)),
    ("1.53E12", Decimal(153 * 10**10)),
    ("7.123456M", Decimal(7_123_456)),
    ("100.035Ki", Decimal("102435.84")),
    ("0.5Mi", Decimal(2**19)),
    (".001", Decimal("0.001")),
    (".0001k", Decimal("0.1")),
    ("1.", Decimal(1)),
    ("1.G", Decimal(10**9)),
    ("+1Gi", Decimal(2**30)),
]
INVALID = [
    "1.1.M",
    "1+1.0M",
    "0.1mi",
    "0.1am",
    "aoeu",
    ".5i",
    "1i",
    "-3.01i",
    "-3.01e-",
    " 1",
    "1 ",
]


@pytest.mark.parametrize(("text", "value"), ACCEPTED)
def test_quantities_apimachinery_accepts(text: str, value: Decimal) -> None:
    assert quantity_value(text) == value


@pytest.mark.parametrize("text", [*INVALID, "", "1e999999999", "1" * 200, "1\n"])
def test_quantities_apimachinery_refuses_and_absurd_ones(text: str) -> None:
    assert quantity_problem(text) is not None


def test_negative_quantities_are_refused_as_config_values() -> None:
    assert quantity_problem("-1") == "'-1' must be >= 0"
    assert quantity_problem("+1") is None


@pytest.mark.parametrize("key", ["/foo", "a/", "Upper.Case/x", "-x", "x" * 64, "a b"])
def test_bad_label_keys(key: str) -> None:
    assert label_key_problem(key) is not None


# --- the same value through every config key that takes it --------------------------------------


def dev() -> dict[str, Any]:
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    raw = copy.deepcopy(document["config"]["aks-batch-fleet:fleet"])
    raw.setdefault("location", "westeurope")
    return raw


def verdict(edit: Any) -> list[str]:
    raw = dev()
    edit(raw)
    try:
        parse_fleet(raw)
    except ConfigError as err:
        return [f"{i.path}: {i.message}" for i in err.errors]
    return []


def worker(raw: dict[str, Any]) -> dict[str, Any]:
    return raw["clusters"][1]


LABEL_KEY_PLACES = {
    "pool label": lambda raw, key: worker(raw)["pools"][0]["labels"].update({key: "x"}),
    "pool taint": lambda raw, key: worker(raw)["pools"][0].update(
        {"taints": [f"{key}=x:NoSchedule"]}
    ),
    "flavor node label": lambda raw, key: worker(raw)["queues"]["flavors"].append(
        {"name": "extra", "nodeLabels": {key: "x"}}
    ),
    "namespace label": lambda raw, key: worker(raw)["queues"]["namespaces"][0].update(
        {"labels": {key: "x"}}
    ),
    "subset node selector": lambda raw, key: raw["karmada"]["applications"][0]["subsets"][0].update(
        {"nodeSelectorTerm": {"matchExpressions": [{"key": key, "operator": "Exists"}]}}
    ),
}


@pytest.mark.parametrize("place", sorted(LABEL_KEY_PLACES))
def test_label_key_slash_foo_is_refused_everywhere(place: str) -> None:
    errors = verdict(lambda raw: LABEL_KEY_PLACES[place](raw, "/foo"))
    assert any(
        "'/foo'" in e and "prefix '' must be a lowercase DNS subdomain" in e for e in errors
    ), errors


@pytest.mark.parametrize("place", sorted(LABEL_KEY_PLACES))
def test_a_good_label_key_is_accepted_everywhere(place: str) -> None:
    errors = verdict(lambda raw: LABEL_KEY_PLACES[place](raw, "example.com/tier"))
    assert not [e for e in errors if "label key" in e], errors


def set_quota(raw: dict[str, Any], value: str) -> None:
    manager = raw["clusters"][0]["queues"]["clusterQueues"][0]
    manager["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = value


def set_app_request(raw: dict[str, Any], value: str) -> None:
    raw["karmada"]["applications"][0]["template"]["resources"]["requests"]["cpu"] = value


def set_etcd_size(raw: dict[str, Any], value: str) -> None:
    raw["karmada"].setdefault("etcd", {})["size"] = value


QUANTITY_PLACES = {
    "queue quota": set_quota,
    "application request": set_app_request,
    "karmada etcd size": set_etcd_size,
}


@pytest.mark.parametrize("value", ["5e7", "+50m", "50000u"])
@pytest.mark.parametrize("place", sorted(QUANTITY_PLACES))
def test_valid_quantities_are_accepted_everywhere(place: str, value: str) -> None:
    errors = verdict(lambda raw: QUANTITY_PLACES[place](raw, value))
    assert not [e for e in errors if "quantity" in e], errors


@pytest.mark.parametrize("value", ["1.1.M", "lots", "-1"])
@pytest.mark.parametrize("place", sorted(QUANTITY_PLACES))
def test_invalid_quantities_are_refused_everywhere(place: str, value: str) -> None:
    errors = verdict(lambda raw: QUANTITY_PLACES[place](raw, value))
    assert any(repr(value) in e for e in errors), errors
