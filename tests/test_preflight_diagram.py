"""The Mermaid picture (`python -m preflight <stack> --diagram`), checked by its structure."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight.diagram import render_markdown, render_mermaid
from preflight.snapshot import Snapshot, snapshot
from testkit.repo import ROOT

ID = r"[A-Za-z0-9_]+"
LABEL = r'"[^"]*"'
# The only line forms the renderer may emit; anything else is a syntax slip.
SUBGRAPH = re.compile(rf"^  subgraph ({ID})\[({LABEL})\]$")
NODE = re.compile(rf"^    ({ID})(\[{LABEL}\]|\[\[{LABEL}\]\]|\(\[{LABEL}\]\)|\[/{LABEL}/\])$")
EDGE = re.compile(rf"^ +({ID}) (?:-- (?:{LABEL}|[A-Za-z]+) )?--> ({ID})$")


@dataclass
class Chart:
    subgraphs: dict[str, str] = field(default_factory=dict[str, str])
    nodes: dict[str, str] = field(default_factory=dict[str, str])
    members: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    edges: list[tuple[str, str, str]] = field(default_factory=list[tuple[str, str, str]])


def parse(text: str) -> Chart:
    """Parse the flowchart, failing on any line form or reference Mermaid would reject."""
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    chart = Chart()
    current: str | None = None
    for line in lines[1:]:
        if m := SUBGRAPH.match(line):
            assert current is None, "nested subgraph"
            name: str = m.group(1)
            chart.subgraphs[name] = m.group(2).strip('"')
            chart.members[name] = []
            current = name
        elif line == "  end":
            assert current is not None, "end without subgraph"
            current = None
        elif line == "    direction TB":
            assert current is not None
        elif m := NODE.match(line):
            assert current is not None, f"node outside a subgraph: {line}"
            assert m.group(1) not in chart.nodes, f"duplicate id {m.group(1)}"
            chart.nodes[m.group(1)] = re.sub(r'^[\[(/]+"|"[\])/]+$', "", m.group(2))
            chart.members[current].append(m.group(1))
        elif m := EDGE.match(line):
            label = line.split("--")[1].strip().strip('"') if line.count("--") == 2 else ""
            chart.edges.append((m.group(1), m.group(2), label))
        else:
            pytest.fail(f"not a line this renderer emits: {line!r}")
    assert current is None, "subgraph never closed"
    assert not set(chart.nodes) & set(chart.subgraphs), "a node and a subgraph share an id"
    known = set(chart.nodes) | set(chart.subgraphs)
    for source, target, _ in chart.edges:
        assert source in known, source
        assert target in known, target
    return chart


@pytest.mark.parametrize(
    "text",
    [
        'flowchart LR\n  subgraph a["x"]\n    n["say "hi""]\n  end\n',  # raw quote in a label
        'flowchart LR\n  subgraph a["x"]\n    n["n"]\n  end\n  n --> missing\n',
        'flowchart LR\n  subgraph a["x"]\n    n["n"]\n',  # never closed
        'flowchart LR\n  subgraph a["x"]\n    n-1["n"]\n  end\n',  # id Mermaid splits
        "graph TD\n",
    ],
)
def test_the_structure_check_rejects_broken_charts(text: str) -> None:
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        parse(text)


@pytest.fixture(scope="module")
def dev_chart() -> Chart:
    return parse(render_mermaid(snapshot("dev")))


def test_dev_has_a_subgraph_per_cluster_and_karmada(dev_chart: Chart) -> None:
    assert sorted(dev_chart.subgraphs.values()) == [
        "Karmada on manager",
        "manager (manager)",
        "worker-1 (worker)",
        "worker-2 (worker)",
    ]


def test_pools_show_vm_sizes_and_node_ranges(dev_chart: Chart) -> None:
    worker = dev_chart.members["cluster_worker_1"]
    labels = sorted(dev_chart.nodes[n] for n in worker)
    assert "pool batch<br/>D4s_v5 x 0..5 nodes" in labels
    assert "pool system<br/>D2s_v5 x 1 node" in labels
    assert "virtual nodes (ACI)" in labels
    manager = [dev_chart.nodes[n] for n in dev_chart.members["cluster_manager"]]
    assert "virtual nodes (ACI)" not in manager


def test_queues_point_at_their_pools_and_dispatch_to_workers(dev_chart: Chart) -> None:
    label = {**dev_chart.nodes, **dev_chart.subgraphs}
    edges = {(label[s], label[t], text) for s, t, text in dev_chart.edges}
    assert ("ClusterQueue team-a", "pool batch<br/>D4s_v5 x 0..5 nodes", "") in edges
    dispatch = sorted(label[t] for s, t, text in dev_chart.edges if text == "MultiKueue")
    assert dispatch == ["worker-1 (worker)", "worker-2 (worker)"]
    sources = {s for s, _, text in dev_chart.edges if text == "MultiKueue"}
    assert sources == {"queue_manager_team_a"}
    assert "queue_manager_team_a" in dev_chart.members["cluster_manager"]


def test_karmada_edges_carry_weight_and_replicas(dev_chart: Chart) -> None:
    (app,) = dev_chart.members["karmada"]
    assert dev_chart.nodes[app] == "sample/sample-ud<br/>6 replicas"
    karmada = sorted((t, text) for s, t, text in dev_chart.edges if s == app)
    # Weights 1:2 over 6 replicas; half of each member's replicas on virtual nodes.
    assert karmada == [
        ("cluster_worker_1", "weight 1: 2 (1 virtual)"),
        ("cluster_worker_2", "weight 2: 4 (2 virtual)"),
    ]


def big_fleet(tmp_path: Path, workers: int) -> Snapshot:
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    fleet: dict[str, Any] = json.loads(json.dumps(document["config"]["aks-batch-fleet:fleet"]))
    template = fleet["clusters"][2]
    for n in range(3, workers + 1):
        fleet["clusters"].append({**json.loads(json.dumps(template)), "name": f"worker-{n}"})
    document["config"]["aks-batch-fleet:fleet"] = fleet
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(document))
    snap = snapshot("dev", root=tmp_path)
    assert snap["valid"], snap["errors"]
    return snap


def test_large_fleet_draws_same_shaped_workers_once(tmp_path: Path) -> None:
    snap = big_fleet(tmp_path, workers=9)
    chart = parse(render_mermaid(snap))
    assert sorted(chart.subgraphs.values()) == [
        "Karmada on manager",
        "manager (manager)",
        "worker-1, worker-2, worker-3, ... (worker, 9 clusters of this shape)",
    ]
    dispatch = [(s, t) for s, t, text in chart.edges if text == "MultiKueue"]
    assert dispatch == [("queue_manager_team_a", "cluster_worker_1")]
    # One edge to the group, with the replicas of every member in it.
    (app,) = chart.members["karmada"]
    ((target, text),) = [(t, x) for s, t, x in chart.edges if s == app]
    assert target == "cluster_worker_1"
    total = sum(snap["placement"]["sample/sample-ud"]["members"].values())
    assert text.split(": ")[1].split(" ")[0] == str(total) == "6"
    # At or below the threshold every cluster keeps its own subgraph.
    assert len(parse(render_mermaid(snap, group_above=10)).subgraphs) == 11


def test_cli_prints_the_picture_raw_fenced_and_as_json() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "preflight", "dev", "--diagram", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )

    expected = render_mermaid(snapshot("dev"))
    raw = run()
    assert raw.returncode == 0, raw.stderr
    assert raw.stdout == expected
    fenced = run("--markdown")
    assert fenced.stdout == render_markdown(snapshot("dev"))
    assert fenced.stdout.startswith("```mermaid\nflowchart LR\n")
    assert fenced.stdout.endswith("```\n")
    assert json.loads(run("--json").stdout)["mermaid"] == expected
