"""docs/configuration.md "Adding a team" works as written: its YAML blocks, added to a copy of the
dev stack where they say, give a stack preflight accepts, and its command lines run in that copy and
render the team's Namespace, ClusterQueue and LocalQueue on the manager and on every worker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Final

import yaml

from config.loader import FULL_KEY
from preflight.diff import compare
from preflight.snapshot import snapshot
from testkit.repo import ROOT
from testkit.sources import copy_preflight_sources

PAGE: Final = ROOT / "docs" / "configuration.md"
SECTION: Final = PAGE.read_text().split("\n## Adding a team\n", 1)[-1].split("\n## ", 1)[0]
# `<!-- add-a-team: clusters[manager].queues -->` and the YAML block under it.
_FRAGMENT: Final = re.compile(
    r"<!-- add-a-team: clusters\[(?P<cluster>[\w-]+)\]\.queues -->\n\s*```yaml\n(?P<body>.*?)```",
    re.DOTALL,
)
_OFFLINE: Final = re.compile(r"<!-- offline[^\n]*\n\s*```bash\n(?P<body>.*?)```", re.DOTALL)
TEAM: Final = "team-b"


def fragments() -> list[tuple[str, dict[str, list[Any]]]]:
    return [
        (m["cluster"], yaml.safe_load(textwrap.dedent(m["body"])))
        for m in _FRAGMENT.finditer(SECTION)
    ]


def command_lines() -> list[str]:
    return [
        line.strip()
        for block in _OFFLINE.finditer(SECTION)
        for line in textwrap.dedent(block["body"]).splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def dev_with(added: list[tuple[str, dict[str, list[Any]]]]) -> dict[str, Any]:
    """Pulumi.dev.yaml with each fragment's list items appended to that cluster's queues."""
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    clusters = {c["name"]: c for c in document["config"][FULL_KEY]["clusters"]}
    for cluster, lists in added:
        queues = clusters[cluster]["queues"]
        for key, items in lists.items():
            queues.setdefault(key, []).extend(items)
    return document


def project_with(tmp_path: Path, document: dict[str, Any]) -> Path:
    """A copy of what preflight needs, with the project's environment, and `document` as dev."""
    copy_preflight_sources(tmp_path, "pyproject.toml", "uv.lock")
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return tmp_path


def run(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # A reader's shell: the environment not activated (its `python` is not the project's).
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    venv_bin = str(Path(sys.prefix) / "bin")
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    return subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def objects(path: Path) -> set[tuple[str, str]]:
    return {(o["kind"], o["metadata"]["name"]) for o in yaml.safe_load_all(path.read_text()) if o}


def test_the_recipe_has_a_block_for_the_manager_and_one_for_the_workers() -> None:
    added = fragments()
    assert [cluster for cluster, _ in added] == ["manager", "worker-1"]
    assert sorted(added[0][1]) == ["clusterQueues", "localQueues", "namespaces"]
    assert sorted(added[1][1]) == ["clusterQueues"]
    assert command_lines()[0] == "uv run python -m preflight dev"


def test_the_recipe_adds_a_team_that_preflight_accepts_and_renders_everywhere(
    tmp_path: Path,
) -> None:
    document = dev_with(fragments())
    clusters = document["config"][FULL_KEY]["clusters"]
    # As the recipe says: dev's workers share one queues text, so worker-2 has team-b too.
    assert clusters[2]["queues"] is clusters[1]["queues"]
    project = project_with(tmp_path, document)
    for line in command_lines():
        done = run(line, project)
        assert done.returncode == 0, f"`{line}`:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert not [w for w in done.stdout.splitlines() if "warning" in w and TEAM in w]
    plan = run("uv run python -m preflight dev", project).stdout
    assert re.search(rf"│ worker-2 +│ {TEAM} +│ batch +│ batch +│ cpu +│ 3 ", plan), plan
    # The manager's quota is the workers' sum, as the recipe's comment says.
    assert re.search(rf"│ {TEAM} +│ cpu +│ 6 +│ 6 +│ worker-1=3, worker-2=3 +│ ok", plan), plan
    for cluster in ("manager", "worker-1", "worker-2"):
        rendered = objects(project / "render" / f"{cluster}.yaml")
        for kind in ("Namespace", "ClusterQueue", "LocalQueue"):
            assert (kind, TEAM) in rendered, (cluster, kind)


def test_a_team_without_its_worker_queue_gets_the_error_the_recipe_quotes(
    tmp_path: Path,
) -> None:
    quoted = re.search(r"without step 2, `([^`]+)`", " ".join(SECTION.split()))
    assert quoted
    project = project_with(tmp_path, dev_with(fragments()[:1]))
    done = run("uv run python -m preflight dev", project)
    assert done.returncode == 1
    assert quoted[1] in " ".join(done.stderr.split()), done.stderr


def test_the_plan_diff_flags_the_teams_new_access_on_each_worker(tmp_path: Path) -> None:
    """What the recipe says a reviewer sees: the new RoleBinding on each worker, flagged."""
    (tmp_path / "Pulumi.dev.yaml").write_text(
        yaml.safe_dump(dev_with(fragments()), sort_keys=False)
    )
    diff = compare(snapshot("dev", files=False), snapshot("dev", root=tmp_path, files=False))
    changes = [c for section in diff["sections"] for c in section["changes"]]
    flagged = sorted(c["text"].split(":")[0] for c in changes if c["flag"])
    assert flagged == ["worker-1", "worker-2"]
    assert all(
        "RoleBinding team-b/multikueue-sa-write" in c["text"] and c["flag"] == "widens access"
        for c in changes
        if c["flag"]
    )
    assert any("ClusterQueue manager/team-b" in c["text"] for c in changes)
