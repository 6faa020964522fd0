"""The AKS layer's resource graph under mocks: what `pulumi up` would create, and how."""

from __future__ import annotations

import pytest
import yaml

from testkit.mocks import Graph, Registered, built_stack, is_secret
from testkit.repo import COMMITTED_STACKS

MC = "azure-native:containerservice:ManagedCluster"
ROLE = "azure-native:authorization:RoleAssignment"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
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


def test_spot_pools_send_the_taint_and_label_aks_adds(prod: Graph) -> None:
    # AKS stamps these on every Spot pool; a request without them is a nodeTaints change that
    # AKS refuses on the next update, and a diff after every refresh.
    pools = {(r.inputs["resourceName"], r.inputs["agentPoolName"]): r for r in prod.of_type(POOL)}
    spot = pools[("worker-3", "spot")]
    assert spot.inputs["nodeTaints"] == ["kubernetes.azure.com/scalesetpriority=spot:NoSchedule"]
    assert spot.inputs["nodeLabels"] == {
        "workload": "batch-spot",
        "kubernetes.azure.com/scalesetpriority": "spot",
    }
    regular = pools[("worker-3", "cpu")]
    assert regular.inputs["nodeLabels"] == {"workload": "batch"}
    assert "nodeTaints" not in regular.inputs or regular.inputs["nodeTaints"] == []


def test_only_the_system_pool_is_inline(prod: Graph) -> None:
    graph = prod
    for mc in graph.of_type(MC):
        profiles = mc.inputs["agentPoolProfiles"]
        assert [p["mode"] for p in profiles] == ["System"]
        assert profiles[0]["nodeTaints"] == ["CriticalAddonsOnly=true:NoSchedule"]
        assert mc.inputs["oidcIssuerProfile"] == {"enabled": True}
        assert mc.inputs["securityProfile"] == {"workloadIdentity": {"enabled": True}}
        assert mc.inputs["kubernetesVersion"] == "1.36"


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
    roles = {r.name: r for r in graph.of_type(ROLE)}
    aci = roles["fleet-worker-1-aci-network"]
    # As `az aks enable-addons --addons virtual-node` grants it: Contributor on the VNet.
    assert aci.inputs["principalId"] == "worker-1-aci-identity"
    assert aci.inputs["scope"] == "fleet-worker-1-vnet_id"
    assert aci.inputs["roleDefinitionId"].endswith("b24988ac-6180-42a0-ab88-20f7382dd24c")
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


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_own_vnet_clusters_use_a_user_assigned_identity_granted_first(stack: str) -> None:
    graph = built_stack(stack).graph
    roles = {r.name: r for r in graph.of_type(ROLE)}
    own_vnet = {
        r.name.removesuffix("-vnet").removeprefix("fleet-")
        for r in graph.of_type("azure-native:network:VirtualNetwork")
    }
    assert own_vnet or stack not in {"dev", "prod"}  # both have virtual-node workers
    for mc in graph.of_type(MC):
        short = mc.inputs["resourceName"]
        if short not in own_vnet:
            assert mc.inputs["identity"] == {"type": "SystemAssigned"}, short
            continue
        identity = graph.one(IDENTITY, f"fleet-{short}-identity")
        assert identity.inputs["resourceName"] == f"{short}-control-plane"
        assert mc.inputs["identity"] == {
            "type": "UserAssigned",
            "userAssignedIdentities": [f"fleet-{short}-identity_id"],
        }
        grant = roles[f"fleet-{short}-vnet-network"]
        assert grant.inputs["principalId"] == f"fleet-{short}-identity-principal"
        assert grant.inputs["scope"] == f"fleet-{short}-vnet_id"
        assert grant.inputs["roleDefinitionId"].endswith("4d97b98b-1d4f-4787-a291-c67834d212e7")
        # Granted before the cluster exists, not after (a system identity can only be after).
        assert grant.urn in mc.dependencies
        assert identity.urn in grant.dependencies


def test_subnets_of_one_vnet_are_created_one_after_the_other(dev: Graph) -> None:
    subnets = {
        r.inputs["subnetName"]: r
        for r in dev.of_type("azure-native:network:Subnet")
        if r.name.startswith("fleet-worker-1-")
    }
    assert subnets["nodes"].urn in subnets["aci"].dependencies


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_clusters_use_entra_id_azure_rbac_and_no_local_accounts(stack: str) -> None:
    graph = built_stack(stack).graph
    roles = {r.name: r for r in graph.of_type(ROLE)}
    for mc in graph.of_type(MC):
        short = mc.inputs["resourceName"]
        assert mc.inputs["disableLocalAccounts"] is True, short
        assert mc.inputs["aadProfile"]["managed"] is True
        assert mc.inputs["aadProfile"]["enableAzureRBAC"] is True
        deployer = roles[f"fleet-{short}-deployer-rbac"]
        # AKS RBAC Cluster Admin for whoever runs `pulumi up`, on this cluster.
        assert deployer.inputs["principalId"] == "o"
        assert deployer.inputs["scope"] == f"fleet-{short}-aks_id"
        assert deployer.inputs["roleDefinitionId"].endswith("b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b")
        provider = next(p for p in cluster_providers(graph) if p.name == f"fleet-{short}-k8s")
        assert deployer.urn in provider.dependencies
    calls = [
        c.args
        for c in graph.mocks.calls
        if c.token == "azure-native:containerservice:listManagedClusterUserCredentials"
    ]
    assert calls
    assert all(c.get("format") == "exec" for c in calls)


def test_provider_kubeconfig_is_kubelogin_without_a_person() -> None:
    value, secret = built_stack("dev").outputs["provider-kubeconfig:worker-1"]
    assert secret is True
    user = yaml.safe_load(value)["users"][0]["user"]
    assert user["exec"]["command"] == "kubelogin"
    assert user["exec"]["args"] == [
        "get-token",
        "--login",
        "azurecli",
        "--server-id",
        "6dae42f8-4368-4678-94ff-3960e28e3630",
    ]
    # The output for people keeps AKS's document: no key, no token; kubelogin completes it.
    people = yaml.safe_load(built_stack("dev").outputs["kubeconfigs"][0]["worker-1"])
    assert "--login" in people["users"][0]["user"]["exec"]["args"]
    assert "client-key-data" not in people["users"][0]["user"]


def test_gpu_pools_get_the_pinned_nvidia_device_plugin(prod: Graph) -> None:
    releases = {
        r.name: r for r in prod.of_type("kubernetes:helm.sh/v3:Release") if "nvidia" in r.name
    }
    assert list(releases) == ["fleet-worker-4-nvidia-device-plugin"]
    release = releases["fleet-worker-4-nvidia-device-plugin"]
    assert release.inputs["chart"] == "nvidia-device-plugin"
    assert release.inputs["version"] == "0.17.1"
    assert release.inputs["repositoryOpts"] == {
        "repo": "https://nvidia.github.io/k8s-device-plugin"
    }
    values = release.inputs["values"]
    term = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {"key": "kubernetes.azure.com/agentpool", "operator": "In", "values": ["gpu"]}
            ]
        }
    ]
    assert values["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]
    # Through worker-4's own provider.
    assert prod.provider_urn(release).endswith("fleet-worker-4-k8s")


def test_virtual_node_workloads_wait_for_the_connector_grants(dev: Graph) -> None:
    grants = {r.urn for r in dev.of_type(ROLE) if r.name.endswith("-aci-network")}
    assert len(grants) == 2  # worker-1 and worker-2
    apps = [
        r
        for r in dev.of_type("kubernetes:apps.kruise.io/v1alpha1:UnitedDeployment")
        if r.name.endswith("-ud")
    ]
    assert apps
    for app in apps:
        assert grants <= set(app.dependencies), app.name


def test_group_roles_and_authorized_ranges_reach_azure(graph: Graph) -> None:
    from checks.stack import parse_fleet  # noqa: PLC0415
    from components.fleet import Fleet, FleetArgs  # noqa: PLC0415
    from testkit.mocks import run_program  # noqa: PLC0415

    group = "11111111-2222-3333-4444-555555555555"
    raw = {
        "location": "westeurope",
        "access": {
            "authorizedIpRanges": ["20.1.2.0/24"],
            "groups": [{"objectId": group, "role": "writer", "namespace": "team-a"}],
        },
        "clusters": [{"name": "solo", "role": "standalone"}],
    }
    fleet_config, _ = parse_fleet(raw)
    run_program(lambda: Fleet("fleet", FleetArgs(config=fleet_config, stack="t")))
    mc = cluster_named(graph, "solo")
    assert mc.inputs["apiServerAccessProfile"] == {"authorizedIPRanges": ["20.1.2.0/24"]}
    roles = {r.name: r for r in graph.of_type(ROLE)}
    writer = roles["fleet-solo-group0-rbac"]
    assert writer.inputs["principalId"] == group
    assert writer.inputs["principalType"] == "Group"
    assert writer.inputs["scope"] == "fleet-solo-aks_id/namespaces/team-a"
    assert roles["fleet-solo-group0-user-rbac"].inputs["scope"] == "fleet-solo-aks_id"
