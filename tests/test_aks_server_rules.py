"""Every rule of AKS's server-side catalogue (upstream.aks_rules) is held: a mutation of a
committed stack that breaks a `check` rule is refused with its key path and the rule's source;
a `program` rule is met by what the program sends (the tests named in PROGRAM_TESTS).
"""

from __future__ import annotations

import copy
import json
import runpy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from checks.stack import load_from_file, parse_fleet
from config import login
from config.errors import ConfigError, Issue
from config.loader import read_stack_file
from testkit.mocks import Graph, built_stack, run_program, set_stack_config
from testkit.repo import COMMITTED_STACKS, ROOT
from upstream.aks_rules import RULES

Raw = dict[str, Any]


def committed(stack: str) -> Raw:
    raw, _ = read_stack_file(stack)
    # A JSON round trip: prod's workers share sections through YAML anchors.
    return json.loads(json.dumps(raw))


def _set(raw: Raw, path: str, value: Any) -> Raw:
    """`raw` with `clusters.3.pools.1.spotMaxPrice` (dots and list indexes) set to `value`."""
    node: Any = raw
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    node[parts[-1]] = value
    return raw


def mutated(stack: str, *changes: tuple[str, Any]) -> Callable[[], Raw]:
    def make() -> Raw:
        raw = committed(stack)
        for path, value in changes:
            _set(raw, path, value)
        return raw

    return make


# rule id -> (the mutation, the key path it is refused at, its severity there).
CHECKED: dict[str, tuple[Callable[[], Raw], str, str]] = {
    "service-cidr-reserved": (
        mutated(
            "dev",
            ("clusters.0.network.serviceCidr", "172.30.0.0/16"),
            ("clusters.0.network.dnsServiceIp", "172.30.0.10"),
        ),
        "clusters[0].network.serviceCidr",
        "error",
    ),
    "service-cidr-size": (
        mutated("dev", ("clusters.0.network.serviceCidr", "10.0.0.0/11")),
        "clusters[0].network.serviceCidr",
        "error",
    ),
    "spot-max-surge": (
        mutated("prod", ("clusters.3.pools.1.upgradeSettings", {"maxSurge": "10%"})),
        "clusters[3].pools[1].upgradeSettings.maxSurge",
        "error",
    ),
    "spot-max-price": (
        mutated("prod", ("clusters.3.pools.1.spotMaxPrice", 0.123456)),
        "clusters[3].pools[1].spotMaxPrice",
        "error",
    ),
    "system-pool-pods": (
        mutated("dev", ("clusters.0.systemPool.maxPods", 20)),
        "clusters[0].systemPool.maxPods",
        "error",
    ),
    "system-pool-vm": (
        mutated(
            "dev",
            ("vmSizes", {"Standard_A1_v2": {"vcpus": 1, "memoryGib": 2}}),
            ("clusters.0.systemPool.vmSize", "Standard_A1_v2"),
        ),
        "clusters[0].systemPool.vmSize",
        "error",
    ),
    "authorized-ranges-count": (
        # 200 written is the schema's cap; worker-3 also gets the manager's egress /32.
        mutated(
            "prod", ("access", {"authorizedIpRanges": [f"20.60.{i}.0/24" for i in range(200)]})
        ),
        "access.authorizedIpRanges",
        "error",
    ),
    "authorized-ranges-zero": (
        mutated("prod", ("access", {"authorizedIpRanges": ["0.0.0.0/32"]})),
        "access.authorizedIpRanges[0]",
        "error",
    ),
    "authorized-ranges-public": (
        # The placeholder prod shipped before: an error in a production stack.
        mutated("prod", ("access", {"authorizedIpRanges": ["203.0.113.0/24"]})),
        "access.authorizedIpRanges[0]",
        "error",
    ),
    "region-name": (
        mutated("dev", ("location", "westeurop")),
        "location",
        "error",
    ),
}

# Rules the program meets by construction -> the tests that check what it sends.
PROGRAM_TESTS: dict[str, list[str]] = {
    "outbound-ip-identity": [
        "tests/test_azure_api.py::"
        "test_the_cluster_identity_may_join_its_egress_ip_before_the_cluster_exists"
    ],
    "spot-max-surge": ["tests/test_upgrades.py::test_prod_sends_channels_windows_and_pool_surge"],
    "system-pool-version": [
        "tests/test_aks_server_rules.py::test_every_system_pool_carries_its_control_planes_version",
        "tests/test_upgrades.py::test_prod_sends_channels_windows_and_pool_surge",
    ],
    "principal-type": [
        "tests/test_aks_server_rules.py::test_the_program_sends_the_logins_principal_type",
        "tests/test_aks_server_rules.py::test_the_login_kind_gives_the_principal_type",
    ],
}
# Held across stack files (preflight and the program read the files beside them).
ACROSS_STACKS = {"shared-resource-group"}


def issues_of(raw: Raw) -> list[Issue]:
    try:
        _, warnings = parse_fleet(raw)
    except ConfigError as err:
        return err.issues
    return warnings


def test_every_rule_is_held_by_a_check_or_the_program() -> None:
    for rule in RULES.values():
        if "check" in rule.held:
            assert rule.id in CHECKED or rule.id in ACROSS_STACKS, rule.id
        if "program" in rule.held:
            assert rule.id in PROGRAM_TESTS, rule.id
    assert set(CHECKED) | set(PROGRAM_TESTS) | ACROSS_STACKS == set(RULES)


def test_the_program_rules_tests_exist() -> None:
    for tests in PROGRAM_TESTS.values():
        for test in tests:
            path, name = test.split("::")
            assert f"def {name}(" in (ROOT / path).read_text(), test


@pytest.mark.parametrize("rule_id", sorted(CHECKED))
def test_a_mutation_of_a_committed_stack_is_refused_with_its_key_path_and_source(
    rule_id: str,
) -> None:
    make, path, severity = CHECKED[rule_id]
    rule = RULES[rule_id]
    found = [i for i in issues_of(make()) if i.path == path and rule.source in i.message]
    assert found, [str(i) for i in issues_of(make())]
    assert {i.severity for i in found} == {severity}
    if rule.code:
        assert rule.code in found[0].message


def test_the_committed_stacks_pass_every_rule() -> None:
    for stack in COMMITTED_STACKS:
        sources = {r.source for r in RULES.values()}
        cited = [
            str(i) for i in issues_of(committed(stack)) if any(s in i.message for s in sources)
        ]
        assert cited == [], stack


def test_a_placeholder_range_is_a_warning_outside_production() -> None:
    raw = committed("dev")
    raw["access"] = {"authorizedIpRanges": ["203.0.113.0/24"]}
    _, warnings = parse_fleet(raw)
    (found,) = [w for w in warnings if w.path == "access.authorizedIpRanges[0]"]
    assert found.severity == "warning"
    assert "a documentation range (RFC 5737, TEST-NET-3)" in found.message
    assert "curl -s https://api.ipify.org" in found.message  # how to find one's egress


def test_a_region_nobody_is_close_to_is_only_a_warning() -> None:
    raw = committed("dev")
    raw["location"] = "marsnorth"
    _, warnings = parse_fleet(raw)
    assert [w.path for w in warnings if "region list" in w.message] == ["location"]


def test_production_without_ranges_warns_for_the_clusters_that_could_take_them() -> None:
    _, warnings = parse_fleet(committed("prod"))
    (found,) = [w for w in warnings if w.path == "access.authorizedIpRanges"]
    # worker-1 and worker-2 run virtual nodes, which AKS lets take no ranges.
    assert "production API servers of manager, worker-3, worker-4 take any source" in found.message


def _stack_dir(tmp_path: Path) -> Path:
    for name in ("Pulumi.yaml", "Pulumi.dev.yaml", "Pulumi.prod.yaml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    return tmp_path


def test_a_copy_that_keeps_devs_resource_group_is_refused_by_preflight_of_either(
    tmp_path: Path,
) -> None:
    folder = _stack_dir(tmp_path)
    shutil.copy2(ROOT / "Pulumi.dev.yaml", folder / "Pulumi.qa.yaml")
    for stack, other in (("qa", "dev"), ("dev", "qa")):
        with pytest.raises(ConfigError) as info:
            load_from_file(stack, folder, files=True)
        (issue,) = info.value.issues
        assert issue.path == "resourceGroup"
        assert f"'aks-batch-fleet-dev' is also the resource group of stack(s) {other}" in str(issue)
        assert RULES["shared-resource-group"].source in issue.message
    # Its own group, or another subscription named on both: no collision.
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    (folder / "Pulumi.qa.yaml").write_text(
        text.replace("aks-batch-fleet-dev", "aks-batch-fleet-qa")
    )
    load_from_file("qa", folder, files=True)
    for stack, sub in (("qa", "1111"), ("dev", "2222")):
        path = folder / f"Pulumi.{stack}.yaml"
        body = text.replace("config:\n", f"config:\n  azure-native:subscriptionId: '{sub}'\n", 1)
        path.write_text(body)
    load_from_file("qa", folder, files=True)


def test_every_system_pool_carries_its_control_planes_version() -> None:
    for stack in COMMITTED_STACKS:
        for mc in built_stack(stack).graph.of_type("azure-native:containerservice:ManagedCluster"):
            (system,) = mc.inputs["agentPoolProfiles"]
            assert system["orchestratorVersion"] == mc.inputs["kubernetesVersion"]
    # A minor moved in config moves the system pool in the same request.
    from builders.azure import MANAGED_CLUSTER, azure_requests  # noqa: PLC0415

    raw = committed("dev")
    raw["kubernetesVersion"] = "1.35"
    fleet, _ = parse_fleet(raw)
    for request in azure_requests(fleet, "dev"):
        if request.token == MANAGED_CLUSTER:
            (system,) = request.inputs["agent_pool_profiles"]
            assert system["orchestrator_version"] == "1.35"


def _profile(home: Path, user_type: str) -> Path:
    folder = home / ".azure"
    folder.mkdir(parents=True)
    profile = {
        "subscriptions": [
            {"id": "s1", "isDefault": False, "user": {"type": "user"}},
            {"id": "s2", "isDefault": True, "user": {"name": "app", "type": user_type}},
        ]
    }
    # The Azure CLI writes the file with a byte order mark.
    (folder / "azureProfile.json").write_text(json.dumps(profile), encoding="utf-8-sig")
    return home


def test_the_login_kind_gives_the_principal_type(tmp_path: Path) -> None:
    oidc = {"ARM_CLIENT_ID": "x", "ARM_USE_OIDC": "true"}
    assert login.detect(oidc, home=tmp_path).principal_type == "ServicePrincipal"
    secret = {"ARM_CLIENT_ID": "x", "ARM_CLIENT_SECRET": "y"}
    assert login.detect(secret, home=tmp_path).principal_type == "ServicePrincipal"
    assert login.detect({"ARM_USE_MSI": "true"}, home=tmp_path).principal_type == (
        "ServicePrincipal"
    )
    stack_keys = login.provider_keys({"azure-native:clientId": "x", "azure-native:useOidc": True})
    assert login.detect({}, stack_keys, home=tmp_path).principal_type == "ServicePrincipal"
    # A client id alone is no login azure-native uses.
    assert login.detect({"ARM_CLIENT_ID": "x"}, home=tmp_path).principal_type == "User"
    sp_home = _profile(tmp_path / "sp", "servicePrincipal")
    assert login.detect({}, home=sp_home).principal_type == "ServicePrincipal"
    # ARM_SUBSCRIPTION_ID picks the subscription whose login counts.
    assert login.detect({"ARM_SUBSCRIPTION_ID": "s1"}, home=sp_home).principal_type == "User"
    person = _profile(tmp_path / "person", "user")
    assert login.detect({}, home=person).reason.startswith("az login as a person")
    nothing = login.detect({}, home=tmp_path / "none")
    assert (nothing.principal_type, "deployerPrincipalType" in nothing.reason) == ("User", True)
    # The stack's own key wins over the login.
    chosen = login.resolve("User", login.detect(oidc, home=tmp_path))
    assert chosen.principal_type == "User"


def test_the_program_sends_the_logins_principal_type(
    graph: Graph, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Under an OIDC service-principal login (the deploy workflow's), every deployer grant is
    typed ServicePrincipal: ARM refuses the User azure-native would send otherwise."""
    for key in ("ARM_CLIENT_SECRET", "ARM_USE_MSI", "AZURE_CONFIG_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ARM_CLIENT_ID", "00000000-0000-0000-0000-0000000000aa")
    monkeypatch.setenv("ARM_USE_OIDC", "true")
    monkeypatch.setenv("HOME", str(tmp_path))
    set_stack_config(copy.deepcopy(committed("dev")))
    run_program(lambda: runpy.run_path(str(ROOT / "__main__.py")))
    deployer = [
        r
        for r in graph.of_type("azure-native:authorization:RoleAssignment")
        if r.name.endswith("-deployer-rbac")
    ]
    assert len(deployer) == 3  # one a cluster
    assert {r.inputs["principalType"] for r in deployer} == {"ServicePrincipal"}


def test_docs_checks_lists_every_rule_as_the_catalogue_states_it() -> None:
    text = (ROOT / "docs" / "checks.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    expected = [
        f"| `{r.id}` | {r.family} | {r.refuses} | {r.code or '-'} | {r.source} | {r.read} | "
        f"{r.held} |"
        for r in RULES.values()
    ]
    assert [r for r in rows if r.split("|")[1].strip().strip("`") in RULES] == expected


def test_the_plan_shows_what_is_sent_for_spot_pools_and_the_deployers_type(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from preflight.__main__ import main  # noqa: PLC0415

    for key in ("ARM_CLIENT_SECRET", "ARM_USE_MSI", "AZURE_CONFIG_DIR", "ARM_SUBSCRIPTION_ID"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ARM_CLIENT_ID", "00000000-0000-0000-0000-0000000000aa")
    monkeypatch.setenv("ARM_USE_OIDC", "true")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["prod", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    rows = {(c["name"], p["pool"]): p for c in plan["clusters"] for p in c["pools"]}
    assert rows["worker-3", "spot"]["upgrade"] == "drain 60m (no surge: Spot)"
    assert rows["worker-3", "cpu"]["upgrade"] == "surge 33%, drain 60m, undrainable: Cordon"
    assert rows["worker-3", "system"]["kubernetesVersion"] == "1.36"
    assert plan["deployer"]["principalType"] == "ServicePrincipal"
    deployer = [r for r in plan["azureAccess"] if r["key"].endswith("deployIdentityRole")]
    assert {r["principal"] for r in deployer} == {
        "the identity running pulumi up (ServicePrincipal)"
    }
