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

- One `up` creates the whole fleet, Azure and Kubernetes halves; the `kubeconfigs` output is a
  secret in the state and, shown with `--show-secrets`, reaches each cluster's plane through
  kubelogin; the next `up` changes nothing.
- A pool's vmSize change previews as a replace of that AgentPool and nothing else.
- `destroy` removes everything, Azure resources and planes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Final

import pytest
from pulumi import automation as auto

from constants import PROJECT
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


@pytest.fixture(scope="module")
def twin_run(tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinRun]:
    with twin_session(STACK, tools, tmp_path_factory.mktemp("azure-twin")) as session:
        yield session


def test_up_creates_both_halves_and_kubeconfigs_reach_the_planes(
    twin_run: TwinRun, report: Report
) -> None:
    up_twice(STACK, twin_run, report)


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
