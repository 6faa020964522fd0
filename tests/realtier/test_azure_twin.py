"""The dev stack's Azure half through the real engine: `pulumi up` against the Azure twin.

Issue 39, first slice. The committed `Pulumi.dev.yaml` runs with its clusters as written
(`source: aks`): the real engine loads the stand-in azure-native plugin
(tests/realtier/azure_provider.py) under the pinned name, which forwards to the Azure twin in
this process (tests/realtier/azure_twin.py). Every ManagedCluster the engine creates becomes a
plane with Kueue beside it, and the program's own wiring (cluster outputs ->
listManagedClusterUserCredentials -> kubelogin exec kubeconfig -> authorization wait ->
Kubernetes provider) deploys the Kubernetes half onto it. The Kubernetes half is mapped as every
twin maps it (tests/realtier/azure_twin_run.py: Kueue `manifests-only`, no Karmada). Nothing else
of the stack changes, and no `existing` cluster is involved. test_azure_twin_prod.py runs prod.

The planes authorize the deploying user as AKS with Azure RBAC does: from the role assignments
the engine created, each only once it has propagated (tests/realtier/azure_rbac.py).

- One `up` creates the whole fleet, Azure and Kubernetes halves, with grants that reach the API
  servers only 60 s after their creation: it says it waits, waits, and applies nothing before.
  The `kubeconfigs` output is a secret in the state and, shown with `--show-secrets`, reaches
  each cluster's plane through kubelogin; the next `up` changes nothing.
- A pool's vmSize change previews as a replace of that AgentPool and nothing else.
- `destroy` removes everything, Azure resources and planes.
- A grant that never propagates stops a new `up` within `access.authorizationTimeoutSeconds`
  with the message docs/upgrades.md shows, and nothing is applied to that cluster.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from pulumi import automation as auto

from constants import PROJECT
from tests.realtier.azure_twin import DEPLOYER_OBJECT_ID, ENTRA_USER, AzureTwin
from tests.realtier.azure_twin_run import (
    TwinRun,
    destroy_all,
    set_fleet,
    twin_session,
    up_twice,
)
from tests.realtier.harness import Report, Tools
from tests.realtier.pulumi_cli import op_counts

pytestmark = [pytest.mark.real, pytest.mark.slow]

STACK: Final = "dev"
RESIZED: Final = ("worker-1", "batch", "Standard_D8s_v5")
# Azure: "up to five minutes" (upstream/aks.py); 60 s keeps the wait real and the test short.
PROPAGATION_SECONDS: Final = 60.0
NEVER: Final = "worker-1"  # the cluster whose grant never propagates
NEVER_SECONDS: Final = 15  # its access.authorizationTimeoutSeconds
# What that `up` may take beyond its bound: the Azure half and three planes first (~30 s alone).
ENGINE_SLACK: Final = 150.0
UPGRADES: Final = Path(__file__).resolve().parents[2] / "docs" / "upgrades.md"


@pytest.fixture(scope="module")
def twin_run(tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinRun]:
    with twin_session(STACK, tools, tmp_path_factory.mktemp("azure-twin")) as session:
        yield session


def _grant_times(twin: AzureTwin) -> dict[str, float]:
    """When each cluster's deployer grant (its cluster-scope role assignment for the deploying
    user) was created, by cluster name."""
    clusters = {
        r.id: r.inputs["resourceName"] for r in twin.of_type("containerservice:ManagedCluster")
    }
    return {
        clusters[r.inputs["scope"]]: r.created
        for r in twin.of_type("authorization:RoleAssignment")
        if r.inputs["principalId"] == DEPLOYER_OBJECT_ID and r.inputs["scope"] in clusters
    }


def test_up_waits_for_grants_to_propagate_and_creates_both_halves(
    twin_run: TwinRun, report: Report
) -> None:
    twin, run, _ = twin_run
    twin.propagation_seconds = PROPAGATION_SECONDS
    try:
        up_twice(STACK, twin_run, report)
    finally:
        twin.propagation_seconds = 0.0
    granted = _grant_times(twin)
    assert sorted(granted) == sorted(twin.clusters), granted
    output = "\n".join(run.log)
    for cluster, created in granted.items():
        effective = created + PROPAGATION_SECONDS
        mine = [
            r for r in twin.reviews if r.cluster == cluster and r.request.uid == DEPLOYER_OBJECT_ID
        ]
        # `up` asked while the grant existed but had not propagated, was refused, and asked
        # again until it was allowed: nothing it wrote was refused (the up passed).
        refused = [r for r in mine if not r.allowed]
        assert refused, f"{cluster}: up never asked before its grant propagated"
        assert all(r.at < effective for r in refused), f"{cluster}: refused after propagation"
        assert any(r.allowed for r in mine), f"{cluster}: nothing allowed"
        server = f"https://{twin.clusters[cluster].relay.address}:443"
        said = (
            f"cluster '{cluster}': waiting up to 600s (access.authorizationTimeoutSeconds) for the "
            f"API server {server} to authorize '{ENTRA_USER}'"
        )
        assert said in output, f"{said!r} not in the engine's output:\n{run.tail()}"
    report(
        f"first up through Azure RBAC grants that propagate {PROPAGATION_SECONDS:.0f}s after "
        "their creation: it waited and then created everything"
    )


def test_a_pool_vm_size_change_previews_as_a_replace_of_that_pool_only(
    twin_run: TwinRun,
) -> None:
    twin, run, raw = twin_run
    if run.created is None:
        pytest.skip("the first up did not pass")
    cluster, pool, size = RESIZED
    changed = json.loads(json.dumps(raw))
    for c in changed["clusters"]:
        if c["name"] == cluster:
            for p in c["pools"]:
                if p["name"] == pool:
                    p["vmSize"] = size
    set_fleet(run, changed)
    steps: dict[str, str] = {}

    def seen(event: auto.EngineEvent) -> None:
        pre = event.resource_pre_event
        if pre is not None:
            steps[pre.metadata.urn] = str(getattr(pre.metadata.op, "value", pre.metadata.op))

    try:
        preview = twin.serve(lambda: run.stack.preview(on_event=seen, color="never"))
    finally:
        set_fleet(run, raw)
    # The RetireGuard's dynamic-provider host (components/retire.py) is neither Azure nor a
    # cluster's: its default provider previews as an update here and is not judged.
    moved = {
        urn: op
        for urn, op in steps.items()
        if op not in ("same", "read") and "pulumi:providers:pulumi-python::" not in urn
    }
    replacing = ("replace", "create-replacement", "delete-replaced")
    replaced = sorted({u for u, op in moved.items() if op in replacing})
    assert len(replaced) == 1, moved
    assert replaced[0].endswith(f"containerservice:AgentPool::{PROJECT}-{cluster}-{pool}"), moved
    # Nothing else changes: no other Azure resource and no Kubernetes object of any cluster.
    assert set(moved) == {replaced[0]}, moved
    assert op_counts(preview.change_summary).get("replace") == 1


def test_destroy_removes_every_azure_resource_and_plane(twin_run: TwinRun, report: Report) -> None:
    destroy_all(twin_run, report)


def test_a_grant_that_never_propagates_stops_up_with_the_documented_message(
    twin_run: TwinRun, report: Report
) -> None:
    """After `destroy`: a new `up` whose grant on one cluster never reaches its API server."""
    twin, run, raw = twin_run
    if twin.resources or run.created is None:
        pytest.skip("the destroy did not pass")
    bounded = json.loads(json.dumps(raw))
    bounded.setdefault("access", {})["authorizationTimeoutSeconds"] = NEVER_SECONDS
    set_fleet(run, bounded)
    twin.unpropagated = {NEVER}
    run.log.clear()
    t0 = time.monotonic()
    try:
        with pytest.raises(auto.CommandError):
            twin.serve(lambda: run.stack.up(on_output=run.add, color="never"))
    finally:
        twin.unpropagated = set()
        set_fleet(run, raw)
    seconds = time.monotonic() - t0
    output = " ".join(" ".join(run.log).split())
    (cluster_id,) = [
        r.id
        for r in twin.of_type("containerservice:ManagedCluster")
        if r.inputs["resourceName"] == NEVER
    ]
    server = f"https://{twin.clusters[NEVER].relay.address}:443"
    # The message docs/upgrades.md shows: each of its fixed parts, and its placeholders filled.
    documented = " ".join(UPGRADES.read_text().split())
    for part in [
        "(access.authorizationTimeoutSeconds); it may still not create",
        "Nothing was applied to this cluster: its first objects (",
        ") wait for this. Check: the program granted this identity AKS RBAC Cluster Admin on the "
        "cluster (access.deployIdentityRole), and Azure takes up to 5 minutes to bring a new "
        "grant to the API server. See that the grant is there (`az role assignment list --scope",
        "-o table`) and that `pulumi up` runs as the identity the provider logs in as (",
        "then run `pulumi up` again, or raise access.authorizationTimeoutSeconds.",
    ]:
        assert part in documented, f"docs/upgrades.md no longer shows {part!r}"
        assert part in output, f"{part!r} not in the engine's output:\n{run.errors()}"
    for part in [
        f"cluster '{NEVER}': the API server {server} did not authorize '{ENTRA_USER}' within "
        f"{NEVER_SECONDS}s",
        f"`az role assignment list --scope {cluster_id} --assignee",
        f"the provider logs in as ('{ENTRA_USER}')",
    ]:
        assert part in output, f"{part!r} not in the engine's output:\n{run.errors()}"
    assert seconds < NEVER_SECONDS + ENGINE_SLACK, f"up took {seconds:.0f}s:\n{run.tail()}"
    assert "Traceback" not in output, run.tail()
    # Nothing of the stack on that cluster: its provider never got its kubeconfig.
    plane = twin.clusters[NEVER].plane
    queues = plane.kubectl("get", "clusterqueues", "-o", "name").stdout.split()
    assert queues == [], queues
    report(
        f"up with a grant that never propagates on {NEVER}: failed in {seconds:.1f}s "
        f"(bound {NEVER_SECONDS}s)"
    )
