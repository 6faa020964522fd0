"""Azure's own models of the API versions sent (checks/azure_api.py), on every Azure request.

Under mocks any property is accepted; here every Azure resource and invoke the program registers
for dev, prod and a generated 1 + 20 fleet is rebuilt as its ARM body and checked against the
azure-mgmt models of the API version pulumi-azure-native 3.29.0 sends. Preflight
(builders/azure.py) reads the lists the components register (builders/azure_resource.py): the
bodies it checks are the registered ones once each reference is resolved, each list names only
what its component can resolve, and a deliberately wrong body of each kind fails with the
resource, the property path and the API version.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from builders.azure import KNOWN_AFTER_DEPLOY, azure_requests
from builders.azure_cluster import (
    DEPLOYER_OBJECT_ID,
    EGRESS_IP_ID,
    SUBSCRIPTION_ID,
    admitted_range,
    cluster_resources,
)
from builders.azure_fleet import NODE_RESOURCE_GROUP, fleet_resources, karmada_resources
from builders.azure_monitor import cluster_id, monitor_resources
from builders.azure_resource import (
    RESOURCE_GROUP_NAME,
    USER_CREDENTIALS,
    VALUE,
    AzureResource,
    Ref,
)
from builders.egress import admitted_callers, egress_clusters
from checks.azure_api import arm_body, azure_issues, check_request, url_params
from checks.azure_types import TYPES
from checks.stack import load_from_file, parse_fleet
from components.fleet import Fleet, FleetArgs
from config.loader import read_stack_file
from config.models import FleetConfig
from constants import PROJECT
from testkit.fleetgen import fleet as generated_fleet
from testkit.mocks import BuiltStack, built_stack, mocked_engine, run_program
from testkit.repo import ROOT
from upstream.aks import ROLE_NETWORK_CONTRIBUTOR

STACKS = sorted(p.name.split(".")[1] for p in Path(ROOT).glob("Pulumi.*.yaml"))
GENERATED = "gen-1-20"
# What the azure-native SDK adds to a request by itself (its Args defaults): registered, not
# built. Each is checked against the model like every other property.
SDK_DEFAULTS = {
    "azure-native:network:VirtualNetwork": {"enableDdosProtection", "enableVmProtection"},
    "azure-native:network:Subnet": {
        "privateEndpointNetworkPolicies",
        "privateLinkServiceNetworkPolicies",
    },
}
_GENERATED: dict[str, tuple[FleetConfig, BuiltStack]] = {}


def _generated() -> tuple[FleetConfig, BuiltStack]:
    if not _GENERATED:
        from components.fleet import Fleet, FleetArgs  # noqa: PLC0415 - Pulumi only here

        config, _ = parse_fleet(generated_fleet(20))
        with mocked_engine(GENERATED) as g:
            run_program(lambda: Fleet("fleet", FleetArgs(config=config, stack=GENERATED)))
        _GENERATED["gen"] = (config, BuiltStack(graph=g, outputs={}))
    return _GENERATED["gen"]


def _stack(stack: str) -> tuple[FleetConfig, BuiltStack]:
    if stack == GENERATED:
        return _generated()
    return load_from_file(stack)[0], built_stack(stack)


def _registered(built: BuiltStack) -> list[tuple[str, str, dict[str, Any]]]:
    """(token, name, inputs) of every Azure resource and credential invoke the program sent."""
    out = [
        (r.type, r.name, r.inputs)
        for r in built.graph.resources
        if r.type.startswith("azure-native:") and r.custom
    ]
    for call in built.graph.mocks.calls:
        if call.token in TYPES:
            args = dict(call.args)
            out.append((call.token, f"fleet-{args['resourceName']}-credentials", args))
    return out


@pytest.mark.parametrize("stack", [*STACKS, GENERATED])
def test_every_registered_azure_request_passes_azures_model(stack: str) -> None:
    _, built = _stack(stack)
    requests = _registered(built)
    tokens = {token for token, _, _ in requests}
    assert "azure-native:containerservice:ManagedCluster" in tokens
    assert "azure-native:containerservice:listManagedClusterUserCredentials" in tokens
    findings = [str(f) for t, n, i in requests for f in check_request(t, n, i)]
    assert findings == []


def test_the_stacks_checked_send_every_kind_the_check_knows() -> None:
    tokens = {
        token for stack in [*STACKS, GENERATED] for token, _, _ in _registered(_stack(stack)[1])
    }
    assert sorted(set(TYPES) - tokens) == []


def _same(built: Any, registered: Any, where: str) -> list[str]:
    """Where the built body differs; a KNOWN_AFTER_DEPLOY value matches anything."""
    if built == KNOWN_AFTER_DEPLOY:
        return []
    if isinstance(built, dict) and isinstance(registered, dict):
        if KNOWN_AFTER_DEPLOY in built:  # a map keyed by an id (userAssignedIdentities)
            (unknown,) = [k for k in registered if k not in built] or [KNOWN_AFTER_DEPLOY]
            built = {unknown if k == KNOWN_AFTER_DEPLOY else k: v for k, v in built.items()}
        out: list[str] = []
        for key in built.keys() | registered.keys():
            if key not in registered or key not in built:
                out.append(f"{where}.{key}: built {built.get(key)!r}, sent {registered.get(key)!r}")
            else:
                out += _same(built[key], registered[key], f"{where}.{key}")
        return out
    if isinstance(built, list) and isinstance(registered, list) and len(built) == len(registered):
        return [
            d
            for i, (b, r) in enumerate(zip(built, registered, strict=False))
            for d in _same(b, r, f"{where}[{i}]")
        ]
    return [] if built == registered else [f"{where}: built {built!r}, sent {registered!r}"]


@pytest.mark.parametrize("stack", [*STACKS, GENERATED])
def test_preflight_checks_the_bodies_the_program_sends(stack: str) -> None:
    """Each list read both ways: preflight's requests (references as planned) are the bodies the
    components register (references resolved), request for request."""
    config, built = _stack(stack)
    sent = {(t, n): i for t, n, i in _registered(built)}
    made = {
        (r.token, "fleet" + r.name.removeprefix(PROJECT)): r for r in azure_requests(config, stack)
    }
    assert sorted(made) == sorted(sent)
    differences: list[str] = []
    for key, request in made.items():
        token, name = key
        registered = {k: v for k, v in sent[key].items() if k not in SDK_DEFAULTS.get(token, ())}
        differences += _same(
            url_params(token, request.inputs), url_params(token, registered), f"{name} (URL)"
        )
        if TYPES[token].body is not None:
            built_body = json.loads(json.dumps(arm_body(token, request.inputs)))
            differences += _same(built_body, arm_body(token, registered), name)
    assert differences == [], "\n".join(differences)


def _refs(value: Any) -> list[Ref]:
    if isinstance(value, Ref):
        return [value]
    if isinstance(value, dict):
        return [r for v in value.values() for r in _refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def _lists(config: FleetConfig, stack: str) -> list[tuple[str, list[AzureResource], set[str]]]:
    """Each list a component registers: its prefix, its requests, the values made outside it
    that the component maps (components/fleet.py, aks.py, monitoring.py, karmada.py)."""
    aks = [c for c in config.clusters if c.source == "aks"]
    out = [("fleet", fleet_resources(config, stack), set[str]())]
    for cluster in aks:
        outside = {RESOURCE_GROUP_NAME, SUBSCRIPTION_ID, DEPLOYER_OBJECT_ID}
        outside |= {admitted_range(c) for c in admitted_callers(config, cluster)}
        if cluster.name in egress_clusters(config):
            outside.add(EGRESS_IP_ID)
        out.append((f"fleet-{cluster.name}", cluster_resources(config, cluster, stack), outside))
    monitored = {RESOURCE_GROUP_NAME, *(cluster_id(c.name) for c in aks)}
    out.append(("fleet", monitor_resources(config, stack), monitored))
    out.append(("fleet-karmada", karmada_resources(config, stack), {NODE_RESOURCE_GROUP}))
    return out


@pytest.mark.parametrize("stack", [*STACKS, GENERATED])
def test_each_list_names_only_what_its_component_resolves(stack: str) -> None:
    """Each request of a list waits for and reads only requests before it (the component
    registers them in order) or the values made outside it that the component maps."""
    from components.azure import CLASSES  # noqa: PLC0415 - the one token table

    config = parse_fleet(generated_fleet(20))[0] if stack == GENERATED else load_from_file(stack)[0]
    for prefix, requests, outside in _lists(config, stack):
        before: set[str] = set()
        for r in requests:
            where = f"{prefix}-{r.name}"
            assert r.token in CLASSES or r.token == USER_CREDENTIALS, where
            assert r.name not in before, where
            assert set(r.depends_on) <= before, where
            for ref in _refs(r.args):
                assert ref.of in (outside if ref.output == VALUE else before), (where, ref)
            before.add(r.name)


def test_preflight_finds_nothing_in_the_committed_stacks() -> None:
    for stack in STACKS:
        fleet, _ = load_from_file(stack)
        assert azure_issues(fleet, stack) == [], stack


# --- deliberate mistakes -----------------------------------------------------------------------

MC = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"


def _prod(token: str) -> tuple[str, dict[str, Any]]:
    _, built = _stack("prod")
    name, inputs = next((n, i) for t, n, i in _registered(built) if t == token)
    return name, json.loads(json.dumps(inputs))


def _one(token: str, inputs: dict[str, Any], name: str = "r") -> str:
    findings = check_request(token, name, inputs)
    assert len(findings) == 1, [str(f) for f in findings]
    return str(findings[0])


def test_a_misspelled_property_is_unknown_at_its_path() -> None:
    name, inputs = _prod(MC)
    inputs["agentPoolProfiles"][0]["enableAutoScalling"] = True
    message = _one(MC, inputs, name)
    assert message.startswith(
        f"{name} (Microsoft.ContainerService/managedClusters api-version 2025-09-01): "
        "properties.agentPoolProfiles[0].enableAutoScalling: unknown property"
    )


def test_a_property_at_the_wrong_level_is_unknown_there() -> None:
    name, inputs = _prod(MC)
    inputs["vmSize"] = "Standard_D4ds_v5"  # a pool's property on the cluster
    assert "api-version 2025-09-01): vmSize: unknown property" in _one(MC, inputs, name)


def test_a_value_outside_the_enum_names_the_allowed_values() -> None:
    name, inputs = _prod(MC)
    inputs["networkProfile"]["outboundType"] = "natGateway"
    message = _one(MC, inputs, name)
    assert "properties.networkProfile.outboundType: 'natGateway' is not one of" in message
    assert "'managedNATGateway'" in message
    assert "(OutboundType)" in message


def test_a_read_only_property_sent_is_refused() -> None:
    name, inputs = _prod(POOL)
    inputs["provisioningState"] = "Succeeded"
    message = _one(POOL, inputs, name)
    assert (
        "managedClusters/agentPools api-version 2025-09-01): properties.provisioningState"
        in message
    )
    assert "read-only" in message


def test_an_agent_pool_name_outside_the_apis_pattern_fails() -> None:
    name, inputs = _prod(POOL)
    inputs["agentPoolName"] = "Batch-Pool"
    message = _one(POOL, inputs, name)
    assert "agentPoolName (URL): 'Batch-Pool'" in message
    assert "^[a-z][a-z0-9]{0,11}$" in message


def test_a_limit_the_api_declares_is_enforced() -> None:
    name, inputs = _prod(POOL)
    inputs["osDiskSizeGB"] = 4096
    assert "properties.osDiskSizeGB: 4096 is above the API's maximum 2048" in _one(
        POOL, inputs, name
    )


def test_a_required_property_left_out_is_reported() -> None:
    token = "azure-native:authorization:RoleAssignment"
    name, inputs = _prod(token)
    del inputs["principalId"]
    message = _one(token, inputs, name)
    assert "roleAssignments api-version 2022-04-01): properties.principalId: required" in message


def test_a_wrong_type_is_reported() -> None:
    name, inputs = _prod(POOL)
    inputs["enableAutoScaling"] = "yes"
    assert "properties.enableAutoScaling: must be true or false" in _one(POOL, inputs, name)


def test_a_bad_enum_in_the_credential_invoke_fails() -> None:
    token = "azure-native:containerservice:listManagedClusterUserCredentials"
    message = _one(token, {"resourceGroupName": "rg", "resourceName": "c", "format": "kubelogin"})
    assert "listClusterUserCredential api-version 2025-09-01): format: 'kubelogin'" in message


def test_a_subnet_delegation_typo_is_found_in_the_nested_properties() -> None:
    token = "azure-native:network:Subnet"
    _, built = _stack("prod")
    name, inputs = next(
        (n, json.loads(json.dumps(i)))
        for t, n, i in _registered(built)
        if t == token and "delegations" in i
    )
    inputs["delegations"][0]["serviceNames"] = inputs["delegations"][0].pop("serviceName")
    message = _one(token, inputs, name)
    assert (
        "subnets api-version 2024-05-01): properties.delegations[0].serviceNames: unknown"
        in message
    )


def test_a_finding_names_the_config_key_that_sets_it() -> None:
    fleet, _ = load_from_file("prod")
    index, cluster = next((i, c) for i, c in enumerate(fleet.clusters) if c.pools)
    pools = [cluster.pools[0].model_copy(update={"name": "Batch-Pool"}), *cluster.pools[1:]]
    broken = fleet.model_copy(
        update={
            "clusters": [
                c.model_copy(update={"pools": pools}) if i == index else c
                for i, c in enumerate(fleet.clusters)
            ]
        }
    )
    issues = azure_issues(broken, "prod")
    assert [i.path for i in issues] == [f"clusters[{index}].pools[0].name"]
    assert "agentPoolName (URL): 'Batch-Pool'" in issues[0].message


def test_preflight_refuses_a_stack_whose_azure_request_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import checks.azure_api as api  # noqa: PLC0415
    from builders.azure import AzureRequest  # noqa: PLC0415
    from preflight.__main__ import main  # noqa: PLC0415

    real = api.azure_requests

    def with_a_bad_pool(
        fleet: FleetConfig, stack: str, deployer_type: str = "User"
    ) -> list[AzureRequest]:
        out = real(fleet, stack, deployer_type)
        pool = next(i for i, r in enumerate(out) if r.token == POOL)
        out[pool] = AzureRequest(
            POOL, out[pool].name, {**out[pool].inputs, "os_disk_size_gb": 4096}, out[pool].at
        )
        return out

    assert main(["prod", "--json"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(api, "azure_requests", with_a_bad_pool)
    assert main(["prod", "--json"]) == 1
    (error,) = json.loads(capsys.readouterr().out)["errors"]
    assert error["path"].endswith(".pools[0].osDiskSizeGb")
    assert "properties.osDiskSizeGB: 4096 is above the API's maximum 2048" in error["message"]


RUNNERS = "20.50.0.0/24"  # a range of the runners' egress, as a production stack lists it


@pytest.fixture(scope="module")
def ranged_prod() -> dict[str, Any]:
    """prod with fleet-wide authorized ranges, as its comment says to add them: name -> resource."""
    raw, _ = read_stack_file("prod")
    fleet_config, _ = parse_fleet({**raw, "access": {"authorizedIpRanges": [RUNNERS]}})
    with mocked_engine("prod") as g:
        run_program(lambda: Fleet("fleet", FleetArgs(config=fleet_config, stack="prod")))
    return {r.name: r for r in g.resources}


def test_a_ranged_worker_admits_the_managers_egress_ip_without_waiting_for_the_manager(
    ranged_prod: dict[str, Any],
) -> None:
    """prod: worker-3 admits the manager's static egress IP output; clusters stay parallel."""
    by_name = ranged_prod
    egress, manager = by_name["fleet-manager-egress"], by_name["fleet-manager-aks"]
    worker = by_name["fleet-worker-3-aks"]
    # The mocks answer every Public IP with ipAddress 20.1.2.3; the dependency says whose it is.
    assert worker.inputs["apiServerAccessProfile"] == {
        "authorizedIPRanges": [RUNNERS, "20.1.2.3/32"]
    }
    assert egress.urn in worker.dependencies
    assert manager.urn not in worker.dependencies
    # The egress Public IP's id (the mocks' resource id) is the manager's outbound IP.
    assert manager.inputs["networkProfile"]["loadBalancerProfile"] == {
        "outboundIPs": {"publicIPs": [{"id": f"{egress.name}_id"}]}
    }
    assert egress.inputs["publicIPAllocationMethod"] == "Static"
    assert egress.inputs["sku"] == {"name": "Standard", "tier": "Regional"}
    # Virtual nodes do not support ranges: worker-1 and worker-2 have none.
    for name in ("worker-1", "worker-2"):
        assert "apiServerAccessProfile" not in by_name[f"fleet-{name}-aks"].inputs
    assert "loadBalancerProfile" not in worker.inputs["networkProfile"]


def test_the_cluster_identity_may_join_its_egress_ip_before_the_cluster_exists(
    ranged_prod: dict[str, Any],
) -> None:
    """A system-assigned identity exists only after the create, and AKS joins the outbound IP at
    create: the manager gets a user-assigned identity, granted on its egress IP first."""
    by_name = ranged_prod
    grant = by_name["fleet-manager-egress-network"]
    identity = by_name["fleet-manager-identity"]
    manager = by_name["fleet-manager-aks"]
    assert grant.inputs["scope"] == "fleet-manager-egress_id"
    assert grant.inputs["principalType"] == "ServicePrincipal"
    assert identity.urn in grant.dependencies  # its principal is the identity's
    assert grant.inputs["roleDefinitionId"].endswith(ROLE_NETWORK_CONTRIBUTOR)
    assert manager.inputs["identity"]["type"] == "UserAssigned"
    assert grant.urn in manager.dependencies
    assert "fleet-worker-3-egress-network" not in by_name
    assert "fleet-worker-3-identity" not in by_name  # overlay, no egress of its own
