"""README is the front door: short, its links resolve, and its offline commands run as written.

Every line of every shell block in README is judged by one rule. A line that runs a program that
talks to Azure or to a cluster (directly, or through a project script that runs one) needs them
and is not run here; a few set-up lines are not run, each for a stated reason; every other line
must sit in a block marked offline, and runs, from the repository root, exactly as written.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
import yaml

import environment
import preflight.__main__ as preflight_main
from testkit.repo import ROOT
from testkit.shared.readme import FENCE, OFFLINE_MARK, commands, shell_lines, verdict
from upstream.kueue import DEFAULT_KUEUE_VERSION

README: Final = ROOT / "README.md"
DOCS: Final = ROOT / "docs"
MAX_LINES: Final = 300
RUN_TIMEOUT: Final = 300.0


_LINK: Final = re.compile(r"\]\((?P<target>[^)\s]+)\)")


LINES: Final = shell_lines(README.read_text())
OFFLINE: Final = [line.text for line in LINES if verdict(line.text) == "offline"]


# ---- the rule itself ---------------------------------------------------------------------------


def test_the_rule_knows_cloud_set_up_and_offline_lines() -> None:
    assert verdict("kubectl --kubeconfig m.yaml get nodes") == "cloud"
    assert verdict("pulumi stack output --json | jq -r '.manager' > m.yaml") == "cloud"
    # scripts/deploy runs `pulumi up` where it can: a cloud line, though it starts offline.
    assert verdict("scripts/deploy dev") == "cloud"
    assert verdict("scripts/bootstrap").startswith("not run: ")
    assert verdict("git clone <repository URL> x && cd x").startswith("not run: ")
    assert verdict("uv run python -m preflight dev") == "offline"
    # Half set-up, half something else: the something else is judged, so the line runs.
    assert verdict("cd x && uv run python -m preflight dev") == "offline"


# ---- README --------------------------------------------------------------------------------------


def test_readme_stays_short() -> None:
    count = len(README.read_text().splitlines())
    assert count < MAX_LINES, f"README has {count} lines; a topic that grows goes to docs/"


def _links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())  # links inside code are not links
    return [
        m["target"]
        for m in _LINK.finditer(text)
        if not re.match(r"^[a-z][a-z0-9+.-]*:", m["target"])  # http:, https:, mailto:
    ]


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lowercase, punctuation dropped, spaces as hyphens."""
    text = FENCE.sub("", page.read_text())
    found: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize(
    "page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_relative_link_resolves(page: Path) -> None:
    broken: list[str] = []
    for target in _links(page):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        relative = resolved.relative_to(ROOT).as_posix()
        if not resolved.exists():
            broken.append(f"{target}: no {relative}")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target}: {relative} has no heading #{anchor}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_readme_links_every_docs_page() -> None:
    linked = {
        (README.parent / target.partition("#")[0]).resolve().relative_to(ROOT).as_posix()
        for target in _links(README)
    }
    pages = {p.relative_to(ROOT).as_posix() for p in DOCS.glob("*.md")}
    assert pages <= linked, f"docs pages README does not link: {sorted(pages - linked)}"


def test_every_offline_line_is_in_a_block_marked_offline() -> None:
    unmarked = [line.text for line in LINES if not line.offline_block and line.text in OFFLINE]
    assert not unmarked, (
        f"README lines that need no Azure, no cluster and are no set-up step, in blocks not "
        f"marked {OFFLINE_MARK!r} (mark the block, so that this test runs them): {unmarked}"
    )


def test_the_quickstart_checks_both_committed_stacks_offline() -> None:
    argvs = [argv for line in OFFLINE for argv in commands(line)]
    for stack in ("dev", "prod"):
        assert any(argv[-2:] == ["preflight", stack] for argv in argvs), (
            f"README runs no offline preflight of {stack}: {OFFLINE}"
        )


def test_ci_runs_exactly_the_test_command_readme_shows() -> None:
    shown = [line.text.split("#", 1)[0].strip() for line in LINES if "every test" in line.text]
    assert shown == ["scripts/check"], shown
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    run = [
        text.strip()
        for text in script
        if text.strip() and not text.startswith("#") and not text.startswith(("set ", "cd "))
    ]
    assert run == shown, f".ci/run runs {run}, README shows {shown}"


def reader_env() -> dict[str, str]:
    """The environment of a reader's shell after `scripts/bootstrap`: the project's virtual
    environment not activated (pytest runs inside it, a reader's `python` is not it)."""
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    if sys.prefix != sys.base_prefix:
        venv_bin = str(Path(sys.prefix) / "bin")
        env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    return env


def kept_numbers() -> dict[str, str]:
    """The numbers README may state, each as this test reads it from where it is decided."""
    (major, oldest), (_, too_new) = environment.python_range() or ((0, 0), (0, 1))
    pins = dict(re.findall(r'"([\w-]+)==([^"]+)"', (ROOT / "pyproject.toml").read_text()))
    job = yaml.safe_load((ROOT / "examples" / "sleep-job.yaml").read_text())
    statuses = re.findall(r"(\d) \w+", (preflight_main.__doc__ or "").split("Exit status:")[-1])
    return {
        f"{major}.{oldest}-{major}.{too_new - 1}": "pyproject.toml requires-python",
        pins["pulumi"]: "pyproject.toml's pulumi pin (the CLI matches the SDK)",
        f"0/{job['spec']['completions']}": "examples/sleep-job.yaml completions",
        f"{job['spec']['completions']}/{job['spec']['completions']}": "the same",
        DEFAULT_KUEUE_VERSION: "upstream/kueue.py DEFAULT_KUEUE_VERSION",
        **{f"exit {s}": "preflight's exit statuses" for s in statuses},
        **{f"exits {s}": "preflight's exit statuses" for s in statuses},
    }


def test_readme_states_no_number_a_test_does_not_keep() -> None:
    """Prose numbers (not commands, code or link targets) are each read from their source here;
    a measurement (a time, a test count) belongs in docs/testing.md, which dates it."""
    text = FENCE.sub("", README.read_text())
    text = re.sub(r"<!--.*?-->|`[^`]*`|\]\([^)]*\)", "", text, flags=re.DOTALL)
    text = re.sub(r"^\s*\d+\. ", "", text, flags=re.MULTILINE)  # numbered steps
    kept = kept_numbers()
    stated = re.finditer(r"(?:exits? )?(?<![\w.])\d+(?:[.,/-]\d+)*", text)
    unkept = [m.group(0) for m in stated if m.group(0) not in kept]
    assert unkept == [], f"README states {unkept}; numbers it may state: {kept}"


@pytest.mark.parametrize("line", OFFLINE)
def test_readme_offline_command_runs_as_written(line: str) -> None:
    done = subprocess.run(
        ["bash", "-c", line],
        cwd=ROOT,
        env=reader_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, (
        f"README's `{line}` exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    )
