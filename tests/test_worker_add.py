"""Adding a MultiKueue worker, offline: the MultiKueueConfig waits for a new worker to be connected
and ready; docs/operations.md's "Adding a worker" edits the dev stack as it says, and quotes what
preflight prints for that stack."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from checks.capacity import check_manager_quota
from preflight.diff import compare
from preflight.diff_render import render_text
from preflight.snapshot import snapshot
from testkit.mocks import Graph, built_stack
from testkit.realtier.add_worker import (
    NEW_WORKER,
    added_stack,
    command,
    documented_commands,
    documented_yaml,
    edited_text,
    page,
)
from testkit.realtier.twin import load_stack
from testkit.repo import COMMITTED_STACKS
from testkit.shared.multikueue_component import MKC, MKCONFIG

KUEUE = "fleet:index:Kueue"
WORKER_QUEUE_KINDS = ("ClusterQueue", "LocalQueue")


def _worker_ready(graph: Graph, worker: str) -> set[str]:
    """URNs of what a worker must have before the manager sends it work: its ClusterQueues and
    LocalQueues, and the MultiKueue account's write RoleBindings."""
    (kueue,) = [r for r in graph.of_type(KUEUE) if r.name == f"fleet-{worker}-kueue"]
    queues = {
        r.urn
        for r in graph.resources
        if r.parent == kueue.urn and r.type.rsplit(":", 1)[-1] in WORKER_QUEUE_KINDS
    }
    writes = {
        r.urn
        for r in graph.of_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
        if r.name.startswith(f"fleet-multikueue-{worker}-write-")
    }
    assert queues, f"{worker}: no queue objects"
    assert writes, f"{worker}: no write RoleBinding"
    return queues | writes


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_a_multikueue_config_waits_for_each_worker_to_be_connected_and_ready(stack: str) -> None:
    """Kueue v0.19.2 copies a Workload only to the connected clusters of its config and requeues
    nothing when a cluster connects later: a new worker may join a config only once its
    MultiKueueCluster is Active (its `up` wait) and its queues and write access exist."""
    graph = built_stack(stack).graph
    for config in graph.of_type(MKCONFIG):  # none in a stack without MultiKueue
        members = config.inputs["spec"]["clusters"]
        for worker in members:
            (cluster,) = [r for r in graph.of_type(MKC) if r.name.endswith(f"-{worker}")]
            assert cluster.urn in config.dependencies, (config.name, worker)
            missing = _worker_ready(graph, worker) - set(config.dependencies)
            assert not missing, (config.name, worker, sorted(missing))


def test_the_page_adds_a_copy_of_worker_2_and_the_managers_quota(tmp_path: Path) -> None:
    before = load_stack("dev")
    after = added_stack("dev", tmp_path / "a")
    assert [c.name for c in after.clusters] == [*(c.name for c in before.clusters), NEW_WORKER]
    template = before.cluster("worker-2")
    added = after.cluster(NEW_WORKER)
    assert template is not None
    assert added is not None
    assert added.model_dump() == {**template.model_dump(), "name": NEW_WORKER}
    # Everything else is the committed stack, but the manager's quota: the workers' sum now.
    rest = after.model_copy(update={"clusters": after.clusters[:-1]})
    assert rest.model_dump(exclude={"clusters": {0: {"queues"}}}) == before.model_dump(
        exclude={"clusters": {0: {"queues"}}}
    )
    assert list(check_manager_quota(after)) == []
    # Without step 2, preflight says what the page quotes.
    alone = added_stack("dev", tmp_path / "b", quota=False)
    warnings = [str(i) for i in check_manager_quota(alone)]
    assert warnings
    assert f"(`{warnings[0]}`)" in " ".join(page().split())


def test_the_page_quotes_what_preflight_against_prints(tmp_path: Path) -> None:
    added_stack("dev", tmp_path / "edited")
    diff = compare(snapshot("dev"), snapshot("dev", root=tmp_path / "edited"), ref="main")
    printed = render_text(diff).splitlines()
    body = page().split("--against` shows the change", 1)[1]
    excerpt = body.split("```\n", 2)[1].splitlines()
    shown = [ln for ln in excerpt if ln.strip()]
    assert shown, "no excerpt"
    at = [printed.index(ln) for ln in shown if ln in printed]
    assert len(at) == len(shown), [ln for ln in shown if ln not in printed]
    assert at == sorted(at), "the excerpt's lines are not in preflight's order"


def test_the_entry_goes_at_the_end_of_clusters_and_the_quota_over_the_managers() -> None:
    stack = (
        "config:\n  k:\n    clusters:\n      - name: manager\n        q:\n"
        '          - {name: cpu, nominalQuota: "1"}\n'
        "      - name: worker-1\n        q:\n"
        '          - {name: cpu, nominalQuota: "1"}\n'
        "    # next\n    karmada: {}\n"
    )
    out = edited_text(
        stack, "      - name: worker-2\n", '          - {name: cpu, nominalQuota: "2"}\n'
    )
    assert out.splitlines() == [
        "config:",
        "  k:",
        "    clusters:",
        "      - name: manager",
        "        q:",
        '          - {name: cpu, nominalQuota: "2"}',
        "      - name: worker-1",
        "        q:",
        '          - {name: cpu, nominalQuota: "1"}',
        "      - name: worker-2",
        "    # next",
        "    karmada: {}",
    ]
    with pytest.raises(ValueError, match="one quota line for gpu"):
        edited_text(stack, "", "          - {name: gpu, nominalQuota: 1}\n")


def test_the_pages_commands_are_there_and_parse() -> None:
    entry, quota = documented_yaml()
    assert entry.startswith(f"      - name: {NEW_WORKER}\n")
    assert "nominalQuota" in quota
    lines = documented_commands()
    assert len(lines) == 4, lines
    for containing in (
        'Admitted")].status}|',
        "multikueuecluster worker-3",
        "multikueueconfig",
        'clusterName=="worker-3"',
    ):
        done = subprocess.run(
            ["bash", "-n", "-c", command(containing)], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
