"""What AKS refuses is refused first: network combinations, access settings, GPU quotas.

Each case is refused by `parse_fleet` (the program and preflight both call it), with its key
path and the AKS rule; the hostile ones also through `python -m preflight` and `__main__.py`.
"""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from builders.egress import ANY_ADDRESS, admitted_callers, api_server_ranges, egress_clusters
from checks.stack import parse_fleet
from config.errors import ConfigError
from config.resolve import access_of
from testkit.mocks import Graph, run_program, set_stack_config
from testkit.repo import ROOT
from testkit.shared.config import BASE, errors_for, with_change
from testkit.sources import copy_preflight_sources

VN = {"enabled": True}
GROUP = "11111111-2222-3333-4444-555555555555"

REFUSED: list[tuple[dict[str, Any], str]] = [
    # Network (AKS: NetworkPolicy enum; Cilium docs; nat-gateway docs).
    (
        {"network": {"networkPolicy": "cilium"}},
        "network.networkPolicy: set networkDataplane: cilium; AKS refuses networkPolicy 'cilium'",
    ),
    (
        {"network": {"networkDataplane": "cilium", "networkPolicy": "calico"}},
        "network.networkDataplane: networkPolicy 'calico' is refused",
    ),
    (
        {"virtualNodes": VN, "network": {"outboundType": "managedNATGateway"}},
        "network.outboundType: use loadBalancer (or network mode overlay); managed NAT gateway "
        "is incompatible with custom virtual networks",
    ),
    (
        {"network": {"mode": "nodeSubnet", "outboundType": "managedNATGateway"}},
        "network.outboundType: use loadBalancer",
    ),
    # Access (ManagedCluster disableLocalAccounts; Azure RBAC needs managed Entra ID).
    (
        {"access": {"entraId": False}},
        "access.localAccounts: false needs entraId: true",
    ),
    (
        {"access": {"entraId": False, "localAccounts": True}},
        "access.azureRbac: set entraId: true or azureRbac: false",
    ),
    (
        {"access": {"azureRbac": False}},
        "access.deployIdentityRole: an Azure role grants nothing",
    ),
    (
        {"access": {"azureRbac": False, "deployIdentityRole": "none"}},
        "access.adminGroupObjectIds: with Entra ID, Kubernetes RBAC and no local accounts",
    ),
    (
        {"access": {"groups": [{"objectId": GROUP, "role": "clusterAdmin", "namespace": "a"}]}},
        "access.groups[0].namespace: clusterAdmin is cluster-wide",
    ),
    (
        {"access": {"groups": [{"objectId": "team-a", "role": "reader"}]}},
        "access.groups[0].objectId: 'team-a' is not allowed: an Entra ID object id",
    ),
    (
        {"access": {"groups": [{"objectId": GROUP, "role": "reader"}] * 2}},
        "access.groups[1]: listed twice",
    ),
    (
        {"access": {"authorizedIpRanges": ["20.1.2.0/24", "20.1.2.0/24"]}},
        "access.authorizedIpRanges: 20.1.2.0/24 is listed twice",
    ),
    (
        {"access": {"authorizedIpRanges": ["20.1.2.3/24"]}},
        "access.authorizedIpRanges[0]",
    ),
]


@pytest.mark.parametrize(("change", "expected"), REFUSED, ids=[r[1][:48] for r in REFUSED])
def test_refused_with_key_path_and_rule(change: dict[str, Any], expected: str) -> None:
    raw = with_change("clusters[1]", {**BASE["clusters"][1], **change})
    messages = errors_for(raw)
    assert any(m.startswith("clusters[1]." + expected) for m in messages), messages


def test_fleet_access_is_reported_once_at_its_own_path() -> None:
    raw = {**BASE, "access": {"entraId": False}}
    messages = errors_for(raw)
    assert [m for m in messages if "localAccounts" in m] == [
        "access.localAccounts: false needs entraId: true (or set localAccounts: true); AKS "
        "allows disableLocalAccounts only on clusters with Entra ID integration (ManagedCluster "
        "disableLocalAccounts)"
    ]


ACCEPTED: list[dict[str, Any]] = [
    {"network": {"networkDataplane": "cilium", "networkPolicy": "cilium"}},
    {"network": {"outboundType": "managedNATGateway"}},  # overlay: AKS's own VNet
    {"access": {"entraId": False, "azureRbac": False, "localAccounts": True}},
    {"access": {"azureRbac": False, "deployIdentityRole": "none", "adminGroupObjectIds": [GROUP]}},
    {"access": {"groups": [{"objectId": GROUP, "role": "writer", "namespace": "team-a"}]}},
]


@pytest.mark.parametrize("change", ACCEPTED)
def test_what_aks_takes_passes(change: dict[str, Any]) -> None:
    parse_fleet(with_change("clusters[1]", {**BASE["clusters"][1], **change}))


def test_virtual_nodes_with_network_policy_warn() -> None:
    raw = with_change(
        "clusters[1]",
        {**BASE["clusters"][1], "virtualNodes": VN, "network": {"networkPolicy": "azure"}},
    )
    _, warnings = parse_fleet(raw)
    assert any("virtual nodes do not enforce" in str(w) for w in warnings)


def dev_raw() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]["aks-batch-fleet:fleet"]


def _ranged_dev(**access: Any) -> dict[str, Any]:
    """dev with fleet-wide authorized ranges and its workers' virtual nodes off."""
    raw = dev_raw()
    clusters = [
        {**c, "virtualNodes": {"enabled": False}} if c["role"] == "worker" else c
        for c in raw["clusters"]
    ]
    ranges = {"authorizedIpRanges": ["20.50.0.0/24"], **access}
    # Its Karmada application places a subset on virtual nodes.
    karmada = {k: v for k, v in raw["karmada"].items() if k != "applications"}
    return {
        **raw,
        "location": "westeurope",
        "clusters": clusters,
        "access": ranges,
        "karmada": karmada,
    }


def test_the_fleets_ranges_skip_clusters_with_virtual_nodes_and_nothing_else() -> None:
    group = {"objectId": GROUP, "role": "clusterAdmin"}
    access = {"authorizedIpRanges": ["20.1.2.0/24"], "groups": [group]}
    fleet, warnings = parse_fleet({**dev_raw(), "location": "westeurope", "access": access})
    assert [str(w) for w in warnings if "authorizedIpRanges" in w.path] == []
    got = {c.name: access_of(fleet, c) for c in fleet.clusters}
    assert {n: [str(r) for r in a.authorized_ip_ranges] for n, a in got.items()} == {
        "manager": ["20.1.2.0/24"],
        "worker-1": [],
        "worker-2": [],
    }
    # Only the ranges are left off: the fleet's groups reach the virtual-node workers too.
    assert all(a.groups == fleet.access.groups for a in got.values())
    # Nobody admits the manager's egress, so it gets no static Public IP.
    assert egress_clusters(fleet) == []
    rows = {(r.cluster, r.range, r.source) for r in api_server_ranges(fleet)}
    assert (
        "worker-1",
        ANY_ADDRESS,
        "clusters[1].virtualNodes.enabled: AKS virtual nodes take no authorized ranges: "
        "access.authorizedIpRanges skip it",
    ) in rows


def test_a_virtual_node_clusters_own_ranges_are_refused() -> None:
    raw = dev_raw()
    worker = {**raw["clusters"][1], "access": {"authorizedIpRanges": ["20.1.2.0/24"]}}
    raw = {
        **raw,
        "location": "westeurope",
        "clusters": [raw["clusters"][0], worker, *raw["clusters"][2:]],
    }
    with pytest.raises(ConfigError) as caught:
        parse_fleet(raw)
    refused = [str(i) for i in caught.value.errors if "virtual nodes" in i.message]
    assert refused == [
        "clusters[1].access.authorizedIpRanges: 'worker-1' has virtualNodes.enabled: AKS virtual "
        "nodes do not support API server authorized IP ranges (AKS virtual nodes limitations: ACI "
        "pods must reach the API server to configure their networking); leave ranges out of its "
        "access, or turn virtual nodes off"
    ]


def test_a_worker_admits_the_managers_egress_by_default_without_a_warning() -> None:
    fleet, warnings = parse_fleet(_ranged_dev())
    assert [str(w) for w in warnings if "authorizedIpRanges" in w.path] == []
    # dev's manager is also the Karmada host: one egress, admitted once by each worker.
    assert egress_clusters(fleet) == ["manager"]
    workers = [c for c in fleet.clusters if c.role == "worker"]
    assert [admitted_callers(fleet, c) for c in workers] == [["manager"], ["manager"]]


def test_with_admitting_off_each_called_cluster_warns_whose_egress_it_needs() -> None:
    fleet, warnings = parse_fleet(_ranged_dev(admitFleetEgress=False))
    assert egress_clusters(fleet) == []
    assert [str(w) for w in warnings if "authorizedIpRanges" in w.path] == [
        f"access.authorizedIpRanges: '{name}' is called by the MultiKueue manager and the "
        "Karmada control plane (on 'manager'): its egress address must be in these ranges (AKS "
        "adds only the cluster's own egress; admitFleetEgress: false)"
        for name in ("worker-1", "worker-2")
    ]


def test_a_caller_behind_a_managed_nat_gateway_cannot_be_admitted() -> None:
    raw = _ranged_dev()
    manager = raw["clusters"][0]
    raw["clusters"][0] = {**manager, "network": {"outboundType": "managedNATGateway"}}
    with pytest.raises(ConfigError) as caught:
        parse_fleet(raw)
    assert [i.path for i in caught.value.errors] == ["clusters[0].network.outboundType"] * 2


def test_existing_clusters_take_no_access_section() -> None:
    raw = with_change(
        "clusters[1]",
        {
            **BASE["clusters"][1],
            "source": "existing",
            "existing": {"kubeconfigPath": "k.yaml"},
            "access": {"localAccounts": True},
        },
    )
    assert any(m.startswith("clusters[1].access: only with source: aks") for m in errors_for(raw))


GPU_CLUSTER: dict[str, Any] = {
    "name": "worker-1",
    "role": "worker",
    "pools": [{"name": "gpu", "vmSize": "Standard_NC24ads_A100_v4", "minCount": 0, "maxCount": 2}],
    "queues": {
        "flavors": [{"name": "a100", "pool": "gpu"}],
        "clusterQueues": [
            {
                "name": "q",
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "a100",
                                "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2}],
                            }
                        ],
                    }
                ],
            }
        ],
    },
}


def test_gpu_flavor_without_the_device_plugin_is_an_error() -> None:
    parse_fleet(with_change("clusters[1]", GPU_CLUSTER))
    off = with_change("clusters[1]", {**GPU_CLUSTER, "gpu": {"devicePlugin": False}})
    messages = errors_for(off)
    assert any(
        m.startswith("clusters[1].queues.flavors[0].pool: pool 'gpu' has GPUs") for m in messages
    )
    assert any(m.startswith("clusters[1].queues.clusterQueues[0].resourceGroups") for m in messages)


# The hostile ones, end to end: preflight exits 1 naming the key; the program registers nothing.
def test_preflight_refuses_cilium_policy_and_managed_nat_on_own_vnet(tmp_path: Path) -> None:
    copy_preflight_sources(tmp_path)
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    # worker-1 has virtual nodes: the program makes its VNet.
    text = text.replace(
        "        virtualNodes:\n          enabled: true\n",
        "        virtualNodes:\n          enabled: true\n        network:\n"
        "          networkPolicy: cilium\n          outboundType: managedNATGateway\n",
        1,
    )
    (tmp_path / "Pulumi.dev.yaml").write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "preflight", "dev", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    paths = {e["path"] for e in json.loads(result.stdout)["errors"]}
    assert paths == {"clusters[1].network.networkPolicy", "clusters[1].network.outboundType"}


def test_program_refuses_them_before_registering_anything(graph: Graph) -> None:
    raw = dev_raw()
    raw["clusters"][1]["network"] = {"networkPolicy": "cilium", "outboundType": "managedNATGateway"}
    set_stack_config(raw)
    with pytest.raises(pulumi.RunError) as info:
        run_program(lambda: runpy.run_path(str(ROOT / "__main__.py")))
    assert "clusters[worker-1].network.networkPolicy" in str(info.value)
    assert "clusters[worker-1].network.outboundType" in str(info.value)
    assert graph.resources == []


def test_kubelogin_rewrite_keeps_only_what_the_login_mode_reads() -> None:
    from builders.kubeconfig import KubeconfigError, kubelogin_noninteractive  # noqa: PLC0415
    from testkit.mocks import FAKE_EXEC_KUBECONFIG, FAKE_KUBECONFIG  # noqa: PLC0415

    doc = FAKE_EXEC_KUBECONFIG.format(name="c")
    server = ["--server-id", "6dae42f8-4368-4678-94ff-3960e28e3630"]

    def args(login: str) -> list[str]:
        out = yaml.safe_load(kubelogin_noninteractive(doc, login))
        return out["users"][0]["user"]["exec"]["args"]

    assert args("workloadidentity") == ["get-token", "--login", "workloadidentity", *server]
    # The AKS CLI's public client id belongs to devicecode; spn keeps tenant and cloud.
    assert args("spn") == [
        "get-token", "--login", "spn", *server,
        "--environment", "AzurePublicCloud", "--tenant-id", "t",
    ]  # fmt: skip
    with pytest.raises(KubeconfigError, match="no kubelogin exec plugin"):
        kubelogin_noninteractive(FAKE_KUBECONFIG.format(name="c"), "azurecli")


def test_groups_get_their_role_and_one_cluster_user_grant_each() -> None:
    from builders.aks import access_grants  # noqa: PLC0415
    from config.models import AccessConfig  # noqa: PLC0415

    access = AccessConfig.model_validate(
        {
            "groups": [
                {"objectId": GROUP, "role": "writer", "namespace": "team-a"},
                {"objectId": GROUP, "role": "reader", "namespace": "team-b"},
            ]
        }
    )
    grants = {g.key: g for g in access_grants(access, "ServicePrincipal")}
    assert list(grants) == ["deployer", "group0", "group0-user", "group1"]
    assert grants["deployer"].principal_id is None  # the identity running `pulumi up`
    assert grants["deployer"].principal_type == "ServicePrincipal"
    assert grants["group0"].namespace == "team-a"
    assert grants["group0"].role_definition == "a7ffa36f-339b-4b5c-8bdf-e2c188b2c0eb"
    assert grants["group0-user"].role_definition == "4abbcc35-e782-43d8-92c5-2d3f1bd2253f"
    local = AccessConfig.model_validate(
        {"entraId": False, "azureRbac": False, "localAccounts": True}
    )
    assert access_grants(local, "User") == []
