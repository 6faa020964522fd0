"""The AKS layer's resource graph under mocks: what `pulumi up` would create, and how."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import Graph, Registered, built_stack, is_secret

MC = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"
PROVIDER = "pulumi:providers:kubernetes"


@pytest.fixture(scope="module")
def dev() -> Graph:
    return built_stack("dev").graph


@pytest.fixture(scope="module")
def prod() -> Graph:
    return built_stack("prod").graph


def cluster_named(graph: Graph, name: str) -> Registered:
    return next(r for r in graph.of_type(MC) if r.inputs["resourceName"] == name)


def test_every_resource_has_a_component_parent(dev: Graph) -> None:
    graph = dev
    fleet_urn = graph.one("fleet:index:Fleet", "fleet").urn
    for r in graph.resources:
        if r.type == "fleet:index:Fleet":
            continue
        chain = [a.urn for a in graph.ancestors(r)]
        assert fleet_urn in chain, f"{r.type} {r.name} is not under the Fleet"
        assert graph.by_urn(r.parent).type.startswith("fleet:index:"), r.name


def test_user_pools_autoscale_and_ignore_count(prod: Graph) -> None:
    graph = prod
    pools = {(r.inputs["resourceName"], r.inputs["agentPoolName"]): r for r in graph.of_type(POOL)}
    cpu = pools[("worker-1", "cpu")]
    assert cpu.inputs["enableAutoScaling"] is True
    assert (cpu.inputs["minCount"], cpu.inputs["maxCount"], cpu.inputs["count"]) == (1, 20, 1)
    assert cpu.inputs["mode"] == "User"
    assert cpu.inputs["availabilityZones"] == ["1", "2", "3"]
    assert cpu.inputs["maxPods"] == 110
    for pool in pools.values():
        assert pool.ignore_changes == ["count"], pool.name
        assert pool.inputs["enableAutoScaling"] is True
    spot = pools[("worker-3", "spot")]
    assert spot.inputs["scaleSetPriority"] == "Spot"
    assert spot.inputs["spotMaxPrice"] == -1
    gpu = pools[("worker-4", "gpu")]
    assert gpu.inputs["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule"]


def test_only_the_system_pool_is_inline(prod: Graph) -> None:
    graph = prod
    for mc in graph.of_type(MC):
        profiles = mc.inputs["agentPoolProfiles"]
        assert [p["mode"] for p in profiles] == ["System"]
        assert profiles[0]["nodeTaints"] == ["CriticalAddonsOnly=true:NoSchedule"]
        assert mc.inputs["oidcIssuerProfile"] == {"enabled": True}
        assert mc.inputs["securityProfile"] == {"workloadIdentity": {"enabled": True}}
        assert mc.inputs["identity"] == {"type": "SystemAssigned"}
        assert mc.inputs["kubernetesVersion"] == "1.33"


def test_clusters_do_not_depend_on_each_other(prod: Graph) -> None:
    graph = prod
    cluster_urns = {r.urn for r in graph.of_type(MC)}
    by_cluster: dict[str, set[str]] = {}
    for mc in graph.of_type(MC):
        deps = set(mc.dependencies)
        assert not deps & cluster_urns, f"{mc.name} depends on another cluster"
        by_cluster[mc.name] = deps
    # Their only Azure dependency is the shared group (and their own subnets).
    groups = {r.urn for r in graph.of_type("azure-native:resources:ResourceGroup")}
    for name, deps in by_cluster.items():
        assert deps & groups, name


def test_overlay_network_by_default(dev: Graph) -> None:
    graph = dev
    net = cluster_named(graph, "manager").inputs["networkProfile"]
    assert net == {
        "networkPlugin": "azure",
        "networkPluginMode": "overlay",
        "podCidr": "10.244.0.0/16",
        "serviceCidr": "10.0.0.0/16",
        "dnsServiceIP": "10.0.0.10",
        "outboundType": "loadBalancer",
        "loadBalancerSku": "standard",
    }
    assert "addonProfiles" not in cluster_named(graph, "manager").inputs


def test_virtual_nodes_get_a_vnet_delegated_subnet_and_roles(dev: Graph) -> None:
    graph = dev
    mc = cluster_named(graph, "worker-1")
    assert mc.inputs["addonProfiles"] == {
        "aciConnectorLinux": {"enabled": True, "config": {"SubnetName": "aci"}}
    }
    assert "networkPluginMode" not in mc.inputs["networkProfile"]
    subnets = {r.inputs["subnetName"]: r for r in graph.of_type("azure-native:network:Subnet")}
    assert subnets["aci"].inputs["delegations"] == [
        {"name": "aci", "serviceName": "Microsoft.ContainerInstance/containerGroups"}
    ]
    assert mc.inputs["agentPoolProfiles"][0]["vnetSubnetID"].endswith("worker-1-nodes-subnet_id")
    roles = {r.name: r for r in graph.of_type("azure-native:authorization:RoleAssignment")}
    aci = roles["fleet-worker-1-aci-network"]
    assert aci.inputs["principalId"] == "worker-1-aci-identity"
    assert aci.inputs["scope"].endswith("worker-1-aci-subnet_id")
    assert aci.inputs["roleDefinitionId"].endswith("4d97b98b-1d4f-4787-a291-c67834d212e7")
    assert roles["fleet-worker-1-subnet-network"].inputs["principalId"] == "worker-1-principal"
    # Clusters without virtual nodes make no network resources at all.
    assert {r.name.split("-")[1] for r in graph.of_type("azure-native:network:VirtualNetwork")} == {
        "worker"
    }


def test_autoscaler_profile_is_strings(prod: Graph) -> None:
    graph = prod
    profile = cluster_named(graph, "worker-1").inputs["autoScalerProfile"]
    assert profile == {
        "scanInterval": "10s",
        "scaleDownUnneededTime": "10m",
        "scaleDownDelayAfterAdd": "10m",
        "expander": "least-waste",
        "balanceSimilarNodeGroups": "true",
    }


def cluster_providers(graph: Graph) -> list[Registered]:
    return [
        p
        for p in graph.of_type(PROVIDER)
        if graph.by_urn(p.parent).type == "fleet:index:AksCluster"
    ]


def test_kubeconfig_is_secret_and_feeds_the_provider(dev: Graph) -> None:
    graph = dev
    outputs = built_stack("dev").outputs
    providers = cluster_providers(graph)
    assert len(providers) == 3
    for p in providers:
        assert is_secret(p.inputs["kubeconfig"])
        assert p.inputs["enableServerSideApply"] == "true"
    value, secret = outputs["kubeconfigs"]
    assert secret is True
    assert set(value) == {"manager", "worker-1", "worker-2"}
    doc = yaml.safe_load(value["worker-1"])
    assert doc["kind"] == "Config"
    assert doc["clusters"][0]["name"] == "worker-1"
    _, one_secret = outputs["kubeconfig:manager"]
    assert one_secret is True


def test_credentials_invoke_targets_each_cluster(dev: Graph) -> None:
    graph = dev
    calls = [
        c.args
        for c in graph.mocks.calls
        if c.token == "azure-native:containerservice:listManagedClusterUserCredentials"
    ]
    assert sorted(c["resourceName"] for c in calls) == ["manager", "worker-1", "worker-2"]
    assert {c["resourceGroupName"] for c in calls} == {"aks-batch-fleet-dev"}


def test_every_provider_is_secret_and_server_side(dev: Graph) -> None:
    graph = dev
    assert len(cluster_providers(graph)) == 3
    for p in graph.of_type(PROVIDER):
        assert is_secret(p.inputs["kubeconfig"]), p.name
        assert p.inputs["enableServerSideApply"] == "true", p.name
