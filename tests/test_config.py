"""Config validation: every mistake gives a message that names its key path; all at once."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from checks.stack import load_from_file, parse_fleet
from config.errors import ConfigError
from config.loader import SECRET_PLACEHOLDER
from testkit.repo import COMMITTED_STACKS
from testkit.shared.config import BASE, errors_for, with_change


def test_base_is_valid() -> None:
    fleet, warnings = parse_fleet(BASE)
    assert [c.name for c in fleet.clusters] == ["manager", "worker-1"]
    assert warnings == []


BAD: list[tuple[str, Any, str]] = [
    ("clusters[1].pools[0].maxCount", 0, "clusters[1].pools[0].maxCount: Input should be greater"),
    ("clusters[1].pools[0].minCount", 7, "clusters[1].pools[0].minCount: must be <= maxCount (5)"),
    ("clusters[1].pools[0].count", 9, "clusters[1].pools[0].count: initial count 9 must be within"),
    ("clusters[1].pools[0].name", "Batch", "clusters[1].pools[0].name: 'Batch' is not allowed"),
    ("clusters[1].pools[0].name", "averyveryverylong", "1-12 lowercase letters and digits"),
    ("clusters[1].pools[0].name", "system", "pool name 'system' is used twice"),
    ("clusters[1].pools[0].vmSize", "Standard_Q9_v9", "unknown VM size 'Standard_Q9_v9'"),
    ("clusters[1].pools[0].vmSize", "big", "is not an Azure VM size name"),
    ("clusters[1].pools[0].maxPods", 300, "clusters[1].pools[0].maxPods: Input should be less"),
    ("clusters[1].pools[0].zones", ["4"], "clusters[1].pools[0].zones[0]: Input should be '1'"),
    (
        "clusters[1].pools[0].labels",
        {"kubernetes.azure.com/x": "y"},
        "labels.kubernetes.azure.com/x",
    ),
    ("clusters[1].pools[0].labels", {"agentpool": "y"}, "reserved: AKS sets 'agentpool'"),
    ("clusters[1].pools[0].labels", {"bad key!": "y"}, "label key 'bad key!': name must be"),
    ("clusters[1].pools[0].labels", {"k": "-x-"}, "label value '-x-'"),
    ("clusters[1].pools[0].taints", ["gpu=yes:Sometimes"], "Effect one of NoSchedule"),
    ("clusters[1].pools[0].taints", ["a=1:NoSchedule", "a=2:NoSchedule"], "appears 2 times"),
    ("clusters[1].pools[0].spotMaxPrice", 0.5, "only allowed with priority: Spot"),
    ("clusters[1].pools[0].priority", "Cheap", "clusters[1].pools[0].priority: Input should be"),
    ("clusters[1].pools[0].maxCuont", 3, "unknown key; did you mean 'maxCount'?"),
    ("clusters[1].pools[0].vmSize", ..., "clusters[1].pools[0].vmSize: required"),
    ("clusters[1].role", "boss", "clusters[1].role: Input should be 'manager'"),
    ("clusters[1].role", "manager", "clusters[1].role: at most one manager per stack"),
    ("clusters[0].role", "standalone", "clusters[1].role: worker 'worker-1' needs a cluster"),
    ("clusters[1].name", "manager", "clusters[1].name: 'manager' is used by more than one cluster"),
    ("clusters[1].name", "-bad", "clusters[1].name: '-bad' is not allowed"),
    ("clusters[1].name", "under_score", "clusters[1].dnsPrefix: cluster name 'under_score' cannot"),
    ("clusters[1].kubernetesVersion", "1.27", "clusters[1].kubernetesVersion: must be >= 1.29"),
    ("clusters[1].kubernetesVersion", "v1.30", "'1.MINOR' or '1.MINOR.PATCH'"),
    (
        "clusters[1].systemPool.vmSize",
        "Standard_B4ms",
        "Standard_B4ms (B-series); system node pools need",
    ),
    ("clusters[1].systemPool.count", 0, "clusters[1].systemPool.count: Input should be greater"),
    ("clusters[1].systemPool.minCount", 1, "minCount/maxCount need autoscaling: true"),
    ("clusters[1].systemPool.autoscaling", True, "autoscaling needs minCount and maxCount"),
    ("clusters[1].network.mode", "kubenet", "clusters[1].network.mode: Input should be"),
    ("clusters[1].network.dnsServiceIp", "10.1.0.10", "must be inside serviceCidr (10.0.0.0/16)"),
    ("clusters[1].network.podCidr", "10.0.0.0/8", "overlaps serviceCidr"),
    ("clusters[1].network.serviceCidr", "10.0.0.0/33", "clusters[1].network.serviceCidr:"),
    ("clusters[1].network.podCidr", True, "must be written as a string"),
    ("clusters[1].virtualNodes", {"enabled": True, "extra": 1}, "virtualNodes.extra: unknown key"),
    ("clusters[1].autoscalerProfile.scanInterval", "10", "should match pattern"),
    ("clusters[1].autoscalerProfile.expander", "cheapest", "autoscalerProfile.expander: Input"),
    ("clusters", [], "clusters: List should have at least 1 item"),
    ("location", ..., "location: required: set fleet.location or `azure-native:location`"),
    ("resourceGroup", "rg.", "resourceGroup: 'rg.' is not allowed"),
    ("vmSizes", {"Standard_X": {"vcpus": 0, "memoryGib": 1}}, "vmSizes.Standard_X.vcpus"),
]


@pytest.mark.parametrize(
    ("path", "value", "expected"), BAD, ids=[b[0] + "=" + str(b[1]) for b in BAD]
)
def test_bad_input_names_its_key(path: str, value: Any, expected: str) -> None:
    messages = errors_for(with_change(path, value))
    assert any(expected in m for m in messages), messages


def test_virtual_nodes_reject_overlay() -> None:
    raw = with_change("clusters[1].virtualNodes", {"enabled": True})
    raw["clusters"][1]["network"] = {"mode": "overlay"}
    assert any("clusters[1].network.mode: virtual nodes need" in m for m in errors_for(raw))


def test_virtual_nodes_default_to_node_subnet() -> None:
    fleet, _ = parse_fleet(with_change("clusters[1].virtualNodes", {"enabled": True}))
    assert fleet.clusters[1].network_mode == "nodeSubnet"
    assert fleet.clusters[0].network_mode == "overlay"


def test_node_subnet_too_small_for_pods() -> None:
    raw = with_change("clusters[1].virtualNodes", {"enabled": True})
    raw["clusters"][1]["network"] = {"nodeSubnetCidr": "10.224.0.0/26"}
    assert any(
        "clusters[1].network.nodeSubnetCidr: 10.224.0.0/26 has 59" in m for m in errors_for(raw)
    )


def test_aci_subnet_outside_vnet() -> None:
    raw = with_change("clusters[1].virtualNodes", {"enabled": True})
    raw["clusters"][1]["network"] = {"aciSubnetCidr": "192.168.0.0/24"}
    assert any("aciSubnetCidr: 192.168.0.0/24 must lie inside" in m for m in errors_for(raw))


def test_all_errors_at_once() -> None:
    raw = copy.deepcopy(BASE)
    raw["clusters"][1]["pools"][0] |= {"minCount": 9, "vmSize": "Standard_Nope_v1"}
    raw["clusters"].append({"name": "worker-1", "role": "manager"})
    messages = errors_for(raw)
    assert len(messages) >= 4, messages
    assert any("minCount" in m for m in messages)
    assert any("Standard_Nope_v1" in m for m in messages)
    assert any("at most one manager" in m for m in messages)
    assert any("used by more than one cluster" in m for m in messages)


def test_structural_errors_all_at_once() -> None:
    raw = copy.deepcopy(BASE)
    raw["clusters"][0]["role"] = "boss"
    raw["clusters"][1]["pools"][0]["maxCount"] = "many"
    raw["bogus"] = 1
    messages = errors_for(raw)
    assert {m.split(":")[0] for m in messages} >= {
        "clusters[0].role",
        "clusters[1].pools[0].maxCount",
        "bogus",
    }


def test_manager_without_workers_is_a_warning() -> None:
    _, warnings = parse_fleet(
        {"location": "westeurope", "clusters": [{"name": "m", "role": "manager"}]}
    )
    assert [w.path for w in warnings] == ["clusters[0].role"]


def test_custom_vm_size_declared() -> None:
    raw = with_change("clusters[1].pools[0].vmSize", "Standard_Q9_v9")
    raw["vmSizes"] = {"Standard_Q9_v9": {"vcpus": 8, "memoryGib": 32}}
    fleet, _ = parse_fleet(raw)
    assert fleet.clusters[1].pools[0].vm_size == "Standard_Q9_v9"


def test_tiny_vm_size_rejected() -> None:
    raw = with_change("clusters[1].pools[0].vmSize", "Standard_A1_v2")
    raw["vmSizes"] = {"Standard_A1_v2": {"vcpus": 1, "memoryGib": 2}}
    assert any("need VM sizes with >= 2 vCPU" in m for m in errors_for(raw))


def test_not_a_mapping() -> None:
    assert errors_for(["clusters"]) == [
        "aks-batch-fleet:fleet: must be a mapping with at least `clusters`"
    ]


def test_config_is_frozen() -> None:
    fleet, _ = parse_fleet(BASE)
    with pytest.raises(ValueError, match="frozen"):
        fleet.clusters[0].name = "x"  # type: ignore[misc]


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_committed_stacks_are_valid(stack: str) -> None:
    _, warnings = load_from_file(stack)
    assert [w for w in warnings if w.severity == "error"] == []


def test_file_loader_keeps_secrets_opaque(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.s.yaml").write_text(
        "config:\n"
        "  aks-batch-fleet:fleet:\n"
        "    location: westeurope\n"
        "    kueue: {values: {webhook: {token: {secure: v1:AAAA}}}}\n"
        "    clusters: [{name: a, role: standalone}]\n"
    )
    fleet, _ = load_from_file("s", tmp_path)
    assert fleet.kueue.values == {"webhook": {"token": SECRET_PLACEHOLDER}}


def test_file_loader_errors_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.s.yaml").write_text("config: {}\n")
    with pytest.raises(ConfigError, match=r"aks-batch-fleet:fleet: required in Pulumi\.s\.yaml"):
        load_from_file("s", tmp_path)
    with pytest.raises(ConfigError, match=r"no stack file Pulumi\.t\.yaml"):
        load_from_file("t", tmp_path)
    (tmp_path / "Pulumi.y.yaml").write_text("config: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_from_file("y", tmp_path)
