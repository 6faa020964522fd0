"""Entra ID with Kubernetes RBAC through the real engine: `adminGroupObjectIds` on the Azure twin.

The access mode docs/configuration.md names for teams that keep Kubernetes RBAC (no Azure RBAC,
no local accounts): AKS binds `cluster-admin` to the Entra groups of
`aadProfile.adminGroupObjectIDs`, and the deploying identity is cluster-admin only as a member of
one; the stack grants it nothing (`deployIdentityRole: none`, which checks/aks.py asks for in this
mode). The twin models it (testkit/realtier/azure_twin.py): the planes' API servers take the
deploying user's token with its group object ids, and bind each cluster's admin groups as AKS
does; its Azure RBAC webhook has no opinion on a cluster without `enableAzureRBAC`.

dev (as every Azure-twin test maps it) with the fleet's access in this mode and the deployer in
group ADMINS:
- `up` with ADMINS as every cluster's admin group deploys the whole stack (every cluster's
  ClusterQueues): the deployer is cluster-admin through its group; no role assignment names it
  and Azure RBAC's webhook allowed nothing;
- worker-1's own `access` then names another group: AKS re-binds on the update, and the next
  `up` stops within worker-1's `authorizationTimeoutSeconds` with the message for this mode
  (builders/authorization.py; docs/upgrades.md says it points to adminGroupObjectIds), naming
  worker-1's key. (One first `up` with the wrong group would stop the engine mid-way on the
  other clusters too, at a point that depends on timing; the update keeps the test exact.)
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from typing import Any, Final

import pytest

from testkit.realtier.azure_rbac import ADMIN_GROUPS_BINDING
from testkit.realtier.azure_twin import DEPLOYER_OBJECT_ID, ENTRA_USER, AzureTwin
from testkit.realtier.azure_twin_run import TwinRun, failing_up, set_fleet, twin_session
from testkit.realtier.harness import ROOT, Report, Tools

pytestmark = [pytest.mark.real, pytest.mark.slow]

STACK: Final = "dev"
ADMINS: Final = "00000000-0000-4000-8000-0000000ad111"  # the deployer's group
OTHERS: Final = "00000000-0000-4000-8000-0000000ad222"  # a group the deployer is not in
OUTSIDE: Final = "worker-1"  # the cluster whose admin group does not hold the deployer
BOUND: Final = 15  # its access.authorizationTimeoutSeconds
ENGINE_SLACK: Final = 150.0  # the Azure half and three planes before the bound starts
UPGRADES_SAYS: Final = "With Entra ID and Kubernetes RBAC, it points to `adminGroupObjectIds`."


@pytest.fixture(scope="module")
def twin_run(tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinRun]:
    with twin_session(STACK, tools, tmp_path_factory.mktemp("azure-twin-groups")) as session:
        yield session


def _kubernetes_rbac(raw: dict[str, Any], outside_group: str) -> dict[str, Any]:
    """The fleet with Entra ID and Kubernetes RBAC: ADMINS everywhere, OUTSIDE's own section
    naming `outside_group`."""
    changed = copy.deepcopy(raw)
    access = {
        "entraId": True,
        "azureRbac": False,
        "localAccounts": False,
        "deployIdentityRole": "none",
        "adminGroupObjectIds": [ADMINS],
        "authorizationTimeoutSeconds": BOUND,
    }
    changed["access"] = access
    [outside] = [c for c in changed["clusters"] if c["name"] == OUTSIDE]
    outside["access"] = {**access, "adminGroupObjectIds": [outside_group]}
    return changed


def _bound_groups(twin: AzureTwin) -> dict[str, list[str]]:
    """Each plane's AKS admin-group binding: the groups it names, by cluster."""
    return {
        name: c.plane.kubectl(
            "get", "clusterrolebinding", ADMIN_GROUPS_BINDING, "-o", "jsonpath={.subjects[*].name}"
        ).stdout.split()
        for name, c in twin.clusters.items()
    }


def test_entra_admin_groups_let_their_members_deploy_and_stop_up_where_the_deployer_is_in_none(
    twin_run: TwinRun, report: Report
) -> None:
    twin, run, raw = twin_run
    twin.deployer_groups = (ADMINS,)

    # Every cluster's admin group holds the deployer: the whole stack, with no grant at all.
    set_fleet(run, _kubernetes_rbac(raw, ADMINS))
    t0 = time.monotonic()
    up = twin.serve(lambda: run.stack.up(on_output=run.add, color="never"))
    first = time.monotonic() - t0
    assert up.summary.result == "succeeded", run.tail()
    assert set(twin.clusters) == {"manager", "worker-1", "worker-2"}, set(twin.clusters)
    assert _bound_groups(twin) == {name: [ADMINS] for name in twin.clusters}
    for name, cluster in twin.clusters.items():
        queues = cluster.plane.kubectl("get", "clusterqueues", "-o", "name").stdout.split()
        assert queues, f"{name}: no ClusterQueue\n{run.tail()}"
    grants = [
        r.id
        for r in twin.of_type("authorization:RoleAssignment")
        if r.inputs.get("principalId") == DEPLOYER_OBJECT_ID
    ]
    assert grants == [], f"deployIdentityRole: none, yet the deployer was granted {grants}"
    # Azure RBAC's webhook, after Kubernetes RBAC, was asked nothing or allowed nothing.
    assert not any(r.allowed for r in twin.reviews), [str(r.request) for r in twin.reviews]

    # worker-1's admin group becomes one the deployer is not in: AKS re-binds, and the next
    # `up` stops there with the message for this mode.
    second, output = failing_up(
        twin_run, _kubernetes_rbac(raw, OTHERS), _kubernetes_rbac(raw, ADMINS)
    )
    bound = _bound_groups(twin)
    assert bound[OUTSIDE] == [OTHERS], bound
    server = f"https://{twin.clusters[OUTSIDE].relay.address}:443"
    for part in [
        f"cluster '{OUTSIDE}': the API server {server} did not authorize '{ENTRA_USER}' within "
        f"{BOUND}s (clusters[1].access.authorizationTimeoutSeconds)",
        f"Entra ID with Kubernetes RBAC: '{ENTRA_USER}' is cluster-admin only as a member of a "
        "group in clusters[1].access.adminGroupObjectIds. See that it is one, then run "
        "`pulumi up` again",
    ]:
        assert part in output, f"{part!r} not in the engine's output:\n{run.errors()}"
    assert "Traceback" not in output, run.tail()
    assert UPGRADES_SAYS in " ".join((ROOT / "docs" / "upgrades.md").read_text().split())
    assert second < BOUND + ENGINE_SLACK, f"up took {second:.0f}s:\n{run.tail()}"
    report(
        f"Entra ID + Kubernetes RBAC on the Azure twin: the fleet deployed through the "
        f"deployer's admin group in {first:.1f}s with no role assignment; {OUTSIDE}'s group "
        f"changed to one without it: the next up stopped in {second:.1f}s (bound {BOUND}s) with "
        "the adminGroupObjectIds message"
    )
