"""Every config error names the line of its key in `Pulumi.<stack>.yaml`, a mistake in text that a
YAML anchor shares is reported once, an unquoted number where a string belongs gets "quote it",
and a misspelled key gets "did you mean". The mistakes are the newcomer review's, each made in a
copy of a committed stack."""

from __future__ import annotations

import copy
import json
import re
import runpy
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import pulumi
import pytest
import yaml

from checks.stack import load_from_file
from config import yamlsafe
from config.errors import ConfigError
from config.loader import FULL_KEY, read_stack_file
from testkit.mocks import Graph, run_program, set_stack_config
from testkit.repo import COMMITTED_STACKS, ROOT
from testkit.sources import copy_preflight_sources

DEV = (ROOT / "Pulumi.dev.yaml").read_text()
PROD = (ROOT / "Pulumi.prod.yaml").read_text()
# `  - Pulumi.mine.yaml:42: clusters[worker-1].pools[batch].vmSize: unknown VM size ...`
ERROR_LINE = re.compile(r"^  - Pulumi\.mine\.yaml:(?P<line>\d+): (?P<path>\S+): (?P<message>.*)$")


def edited(text: str, old: str, new: str, count: int = 1) -> str:
    assert text.count(old) >= count, old
    return text.replace(old, new, count)


def errors_in(tmp_path: Path, text: str) -> tuple[ConfigError, list[str]]:
    """The ConfigError of `text` saved as Pulumi.mine.yaml, and its rendered lines."""
    (tmp_path / "Pulumi.mine.yaml").write_text(text)
    with pytest.raises(ConfigError) as failed:
        load_from_file("mine", root=tmp_path, files=False)
    return failed.value, failed.value.render().splitlines()[1:]


def preflight(tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m preflight mine ARGS` in a copy of the preflight sources, `text` as the stack."""
    copy_preflight_sources(tmp_path)
    (tmp_path / "Pulumi.mine.yaml").write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "preflight", "mine", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )


# The newcomer's mistakes (docs/checks.md "How a message reads"), each one edit of dev.
MISTAKES = {
    "vm size typo": (DEV, "vmSize: Standard_D4s_v5", "vmSize: Standard_D4sv5"),
    "quota beyond the pool, in anchored text": (DEV, 'nominalQuota: "16"', 'nominalQuota: "64"'),
    "a version AKS no longer serves": (
        DEV,
        'kubernetesVersion: "1.36"',
        'kubernetesVersion: "1.31"',
    ),
    "duplicate cluster name": (DEV, "- name: worker-2", "- name: worker-1"),
    "karmada weight 0": (DEV, "worker-1: 1\n", "worker-1: 0\n"),
    "team renamed Team-A": (DEV, "team-a", "Team-A"),
    "unquoted version": (DEV, 'kubernetesVersion: "1.36"', "kubernetesVersion: 1.36"),
    "LocalQueue typo": (DEV, "clusterQueue: team-a", "clusterQueue: teama"),
    "misspelled key": (DEV, "rotateEveryDays", "rotateEverydays"),
    "minCount over maxCount": (DEV, "minCount: 0", "minCount: 6"),
    "role capitalised": (DEV, "role: manager", "role: Manager"),
    "flavor on no pool": (DEV, "pool: batch", "pool: gpu"),
    "pool name too long": (DEV, "- name: batch\n", "- name: batch-large\n"),
    "fleet key misspelled": (DEV, "aks-batch-fleet:fleet:", "aks-batch-fleet:fleets:"),
    "top-level key misspelled": (DEV, "    clusters:", "    clusterz:"),
    "region written as a name": (DEV, "location: westeurope", "location: West Europe"),
    "weekday misspelled": (PROD, "dayOfWeek: Saturday", "dayOfWeek: Saturdy"),
    "a MultiKueue worker that does not exist": (
        DEV,
        "multiKueue: {}",
        "multiKueue: {workers: [worker-1, worker-3]}",
    ),
    "an extraSpec field that does not exist": (
        DEV,
        "            - name: team-a\n              namespaceSelector:",
        "            - name: team-a\n              extraSpec: {stopPolicyy: Hold}\n"
        "              namespaceSelector:",
    ),
    "system pool typo, in anchored text": (
        PROD,
        "count: 3\n          zones",
        "count: 0\n          zones",
    ),
}


@pytest.mark.parametrize("mistake", MISTAKES)
def test_every_config_error_names_its_line(tmp_path: Path, mistake: str) -> None:
    base, old, new = MISTAKES[mistake]
    text = edited(base, old, new, count=-1 if mistake == "team renamed Team-A" else 1)
    written = text.splitlines()
    _, rendered = errors_in(tmp_path, text)
    assert rendered
    for line in rendered:
        match = ERROR_LINE.match(line)
        assert match, line
        at = written[int(match["line"]) - 1]
        # The line holds the key the path ends in, where the file has it (a key left out, such
        # as a required one or a derived `dnsPrefix`: the item or mapping that lacks it).
        last = re.split(r"[.\[\]]", match["path"].rstrip("]"))[-1]
        if match["message"] != "required" and f"{last}:" in text:
            assert last in at, (line, at)


def test_every_config_error_names_its_line_in_json(tmp_path: Path) -> None:
    text = edited(DEV, "vmSize: Standard_D4s_v5", "vmSize: Standard_D4sv5")
    result = preflight(tmp_path, text, "--json")
    assert result.returncode == 1, result.stderr
    (error,) = json.loads(result.stdout)["errors"]
    assert error["at"] == "clusters[worker-1].pools[batch].vmSize"
    assert "vmSize: Standard_D4sv5" in text.splitlines()[error["line"] - 1]


def test_a_mistake_in_anchored_text_is_reported_once_at_the_anchor(tmp_path: Path) -> None:
    # dev's worker-2 takes its queues from worker-1's text: `queues: *workerQueues`.
    err, rendered = errors_in(tmp_path, edited(DEV, 'nominalQuota: "16"', 'nominalQuota: "64"'))
    assert len(err.errors) == 2  # one per worker, as the checks see the config
    (line,) = rendered
    assert err.render().startswith("1 config error in Pulumi.mine.yaml:")
    anchor = DEV.splitlines().index("        queues: &workerQueues") + 1
    alias = DEV.splitlines().index("        queues: *workerQueues") + 1
    quota = next(i for i, x in enumerate(DEV.splitlines(), 1) if 'nominalQuota: "16"' in x)
    assert line.startswith(f"  - Pulumi.mine.yaml:{quota}: clusters[worker-1].queues.")
    assert line.endswith(
        f"(written once, under &workerQueues at line {anchor}; "
        f"clusters[worker-2].queues (line {alias}) repeats it with *workerQueues)"
    )


def test_a_warning_in_anchored_text_is_printed_once_with_its_line(tmp_path: Path) -> None:
    text = edited(DEV, "managedResources: [cpu]", "managedResources: [cpux]")
    result = preflight(tmp_path, text)
    assert result.returncode == 0, result.stderr
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("warning ")]
    gate = next(i for i, x in enumerate(text.splitlines(), 1) if "provisioningGate:" in x)
    assert line.startswith(
        f"warning Pulumi.mine.yaml:{gate}: clusters[worker-1].queues.clusterQueues[team-a]"
    )
    assert "clusters[worker-2].queues (line " in line


def test_a_mistake_in_prods_anchored_system_pool_names_every_alias(tmp_path: Path) -> None:
    _, rendered = errors_in(
        tmp_path,
        edited(
            PROD,
            "&prodSystem\n          vmSize: Standard_D4ds_v5",
            "&prodSystem\n          vmSize: Standard_D4dsv5",
        ),
    )
    (line,) = rendered
    assert ": clusters[worker-1].systemPool.vmSize: unknown VM size 'Standard_D4dsv5'" in line
    aliases = [i for i, x in enumerate(PROD.splitlines(), 1) if "systemPool: *prodSystem" in x]
    assert len(aliases) == 3
    listed = re.findall(r"clusters\[(worker-\d)\]\.systemPool \(line (\d+)\)", line)
    assert listed == [
        ("worker-2", str(aliases[0])),
        ("worker-3", str(aliases[1])),
        ("worker-4", str(aliases[2])),
    ]


def test_a_mistake_in_text_a_merge_key_shares_is_reported_once(tmp_path: Path) -> None:
    """worker-2's pool takes worker-1's (`<<: *batchPool`) and changes only its maxCount."""
    pool = "          - name: batch\n            vmSize: Standard_D4s_v5\n"
    assert DEV.count(pool) == 2
    text = DEV.replace(
        pool,
        "          - &batchPool\n            name: batch\n            vmSize: Standard_D4sv5\n",
        1,
    )
    text = edited(text, pool + "            minCount: 0\n", "          - <<: *batchPool\n")
    lines = text.splitlines()
    _, (line,) = errors_in(tmp_path, text)
    size = lines.index("            vmSize: Standard_D4sv5") + 1
    anchor = lines.index("          - &batchPool") + 1
    merge = lines.index("          - <<: *batchPool") + 1
    assert line.startswith(
        f"  - Pulumi.mine.yaml:{size}: clusters[worker-1].pools[batch].vmSize: unknown VM size"
    )
    assert line.endswith(
        f"(written once, under &batchPool at line {anchor}; "
        f"clusters[worker-2].pools[batch] (line {merge}) repeats it with *batchPool)"
    )


def test_an_error_only_an_alias_has_names_the_alias(tmp_path: Path) -> None:
    # worker-2's pool is renamed, so the shared flavor `pool: batch` is wrong for worker-2 only.
    lines = DEV.splitlines()
    pools = [i for i, x in enumerate(lines) if x == "          - name: batch"]
    lines[pools[-1]] = "          - name: bulk"
    _, rendered = errors_in(tmp_path, "\n".join(lines) + "\n")
    (line,) = (x for x in rendered if "flavors[batch].pool" in x)
    assert "clusters[worker-2].queues.flavors[batch].pool" in line
    alias = lines.index("        queues: *workerQueues") + 1
    assert f"clusters[worker-2].queues (line {alias}) repeats it with *workerQueues)" in line


@pytest.mark.parametrize(("written", "read"), [("1.36", "a number"), ("1.30", "the number 1.3")])
def test_an_unquoted_version_gets_a_quote_hint(tmp_path: Path, written: str, read: str) -> None:
    text = edited(DEV, 'kubernetesVersion: "1.36"', f"kubernetesVersion: {written}")
    _, (line,) = errors_in(tmp_path, text)
    assert line.endswith(
        f'kubernetesVersion: a string is needed here; write it quoted: "{written}" '
        f"(YAML reads {written} as {read})"
    )


def test_a_boolean_where_a_string_belongs_gets_the_same_hint(tmp_path: Path) -> None:
    _, (line,) = errors_in(tmp_path, edited(DEV, "owner: platform", "owner: true"))
    assert line.endswith(
        'tags.owner: a string is needed here; write it quoted: "true" '
        "(YAML reads true as a boolean)"
    )


@pytest.mark.parametrize("written", ["aks-batch-fleet:fleets", "fleet", "other-project:fleet"])
def test_a_misspelled_fleet_key_gets_did_you_mean(tmp_path: Path, written: str) -> None:
    text = edited(DEV, "aks-batch-fleet:fleet:", f"{written}:")
    _, (line,) = errors_in(tmp_path, text)
    number = text.splitlines().index(f"  {written}:") + 1
    assert line.startswith(
        f"  - Pulumi.mine.yaml:{number}: {written}: unknown key; "
        "did you mean 'aks-batch-fleet:fleet'?"
    )


def test_a_misspelled_key_is_one_error_with_did_you_mean(tmp_path: Path) -> None:
    _, rendered = errors_in(tmp_path, edited(DEV, "    clusters:", "    clusterz:"))
    (line,) = rendered  # not also "clusters: required"
    assert "clusterz: unknown key; did you mean 'clusters'? Allowed keys: location," in line


def test_a_region_from_azure_native_location_names_that_line(tmp_path: Path) -> None:
    _, (line,) = errors_in(tmp_path, edited(DEV, "location: westeurope", "location: West Europe"))
    assert line.startswith("  - Pulumi.mine.yaml:5: location: 'West Europe' is not allowed")


def test_positions_follow_aliases_and_merge_keys() -> None:
    text = "base: &b\n  size: 1\n  name: x\nuse:\n  <<: *b\n  name: y\nagain: *b\n"
    top = yamlsafe.positions(text)
    assert top is not None
    # A merged key is the anchored text's (line 2), reached through `<<: *b` on line 5.
    assert yamlsafe.find(top, ("use", "size")) == yamlsafe.Found(2, (("b", 1, 1, 5),), "1")
    assert yamlsafe.find(top, ("use", "name")) == yamlsafe.Found(6, (), "y")  # written here
    found = yamlsafe.find(top, ("again", "size"))
    assert found.line == 2
    assert found.through == (("b", 1, 1, 7),)
    assert yamlsafe.find(top, ("base", "size")).through == (("b", 1, 1, None),)
    assert yamlsafe.find(top, ("nosuch", "deeper")).line == 1
    assert yamlsafe.positions("a: [") is None


def test_finding_lines_costs_milliseconds() -> None:
    """The best of ten runs in this process's CPU time, so another process on the machine (the
    real tier beside it, a second worktree's suite) does not count as ours."""
    text = PROD  # the largest committed stack
    runs = []
    for _ in range(10):
        start = time.process_time()
        yamlsafe.positions(text)
        runs.append(time.process_time() - start)
    assert min(runs) < 0.05, runs


def test_the_programs_errors_name_their_lines_when_the_stack_file_holds_the_config(
    graph: Graph, tmp_path: Path
) -> None:
    """`pulumi up` on a stack whose file holds the config the CLI passed: the same lines."""
    text = edited(DEV, "vmSize: Standard_D4s_v5", "vmSize: Standard_D4sv5")
    (tmp_path / "Pulumi.test.yaml").write_text(text)  # the mocks' stack is `test`
    shutil.copy(ROOT / "__main__.py", tmp_path / "__main__.py")
    raw, _ = read_stack_file("test", tmp_path)
    set_stack_config(raw)
    with pytest.raises(pulumi.RunError) as info:
        run_program(lambda: runpy.run_path(str(tmp_path / "__main__.py")))
    number = next(i for i, x in enumerate(text.splitlines(), 1) if "Standard_D4sv5" in x)
    assert f"  - Pulumi.test.yaml:{number}: clusters[worker-1].pools[batch].vmSize: " in str(
        info.value
    )
    # Config from elsewhere (the file says otherwise): key paths alone, never a wrong line.
    raw["clusters"][0]["systemPool"]["count"] = 2
    set_stack_config(raw)
    with pytest.raises(pulumi.RunError) as info:
        run_program(lambda: runpy.run_path(str(tmp_path / "__main__.py")))
    assert "  - clusters[worker-1].pools[batch].vmSize: " in str(info.value)
    assert "Pulumi.test.yaml:" not in str(info.value)
    assert graph.resources == []


def test_docs_checks_shows_what_preflight_prints(tmp_path: Path) -> None:
    """docs/checks.md "How a message reads" opens with two mistakes as preflight says them."""
    page = (ROOT / "docs" / "checks.md").read_text()
    shown = page.split("## How a message reads", 1)[1].split("```\n", 2)[1].rstrip("\n")
    text = edited(DEV, 'kubernetesVersion: "1.36"', "kubernetesVersion: 1.30")
    text = edited(text, "role: manager", "role: Manager")
    (tmp_path / "Pulumi.dev.yaml").write_text(text)
    with pytest.raises(ConfigError) as failed:
        load_from_file("dev", root=tmp_path, files=False)
    assert failed.value.render() == shown


def _leaves(value: Any, here: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    if isinstance(value, dict):
        items = cast("dict[str, Any]", value).items()
        return [p for k, v in items for p in _leaves(v, (*here, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(cast("list[Any]", value)) for p in _leaves(v, (*here, i))]
    return [here]


def _wrong(value: object) -> object:
    """A value of the right type that is wrong, or one of the wrong type."""
    if isinstance(value, str):
        return "zzz-no-such"
    if isinstance(value, int) and not isinstance(value, bool):
        return 10**6
    return {"unexpected": [1]}


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
@pytest.mark.parametrize("change", ["wrong value", "wrong type"])
def test_every_error_of_every_one_value_change_to_a_committed_stack_names_its_line(
    tmp_path: Path, change: str, stack: str
) -> None:
    document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    fleet = document["config"][FULL_KEY]
    unnamed: list[str] = []
    for path in _leaves(fleet):
        changed = copy.deepcopy(document)
        node = changed["config"][FULL_KEY]
        for part in path[:-1]:
            node = node[part]
        old = node[path[-1]]
        node[path[-1]] = _wrong(old) if change == "wrong value" else {"unexpected": [1]}
        text = yaml.safe_dump(changed, sort_keys=False)
        (tmp_path / "Pulumi.mine.yaml").write_text(text)
        try:
            load_from_file("mine", root=tmp_path)
        except ConfigError as err:
            rendered = err.render().splitlines()[1:]
            unnamed += [f"{path}: {x}" for x in rendered if not ERROR_LINE.match(x)]
    assert unnamed == []


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (
            "    clusters:",
            "    resourceGroup: again\n    clusters:",
            "duplicate key 'resourceGroup'",
        ),
        ("    clusters:", "\tclusters:", "found a tab character that violates indentation"),
    ],
)
def test_a_file_that_is_not_yaml_names_the_line_where_it_stops(
    tmp_path: Path, old: str, new: str, problem: str
) -> None:
    text = edited(DEV, old, new)
    number = text.splitlines().index(new.split("\n", 1)[0]) + 1
    err, (line,) = errors_in(tmp_path, text)
    assert err.render().startswith("1 config error in Pulumi.mine.yaml:\n")
    assert re.fullmatch(
        rf"  - Pulumi\.mine\.yaml:{number}: not valid YAML: {problem} \(column \d\)", line
    )


def test_a_file_that_is_not_yaml_names_its_line_in_json(tmp_path: Path) -> None:
    text = edited(DEV, "    clusters:", "    resourceGroup: again\n    clusters:")
    result = preflight(tmp_path, text, "--json")
    assert result.returncode == 1, result.stderr
    (error,) = json.loads(result.stdout)["errors"]
    assert text.splitlines()[error["line"] - 1] == "    resourceGroup: again"
    assert error["message"] == "not valid YAML: duplicate key 'resourceGroup' (column 5)"


def test_a_number_as_a_key_where_a_string_belongs_gets_the_quote_hint(tmp_path: Path) -> None:
    _, (line,) = errors_in(tmp_path, edited(DEV, "owner: platform", "1: platform"))
    number = next(i for i, x in enumerate(DEV.splitlines(), 1) if "owner: platform" in x)
    assert line == (
        f"  - Pulumi.mine.yaml:{number}: tags[1]: the key: a string is needed here; "
        'write it quoted: "1" (YAML reads 1 as a number)'
    )


def test_a_number_for_azure_natives_location_gets_the_quote_hint_not_required(
    tmp_path: Path,
) -> None:
    _, (line,) = errors_in(tmp_path, edited(DEV, "location: westeurope", "location: 1.5"))
    assert line == (
        '  - Pulumi.mine.yaml:5: location: a string is needed here; write it quoted: "1.5" '
        "(YAML reads 1.5 as a number)"
    )


@pytest.mark.parametrize("empty", ["", " ~", " null"])
def test_a_key_left_without_a_value_says_it_has_none(tmp_path: Path, empty: str) -> None:
    text = edited(DEV, "role: manager", f"role:{empty}")
    _, (line,) = errors_in(tmp_path, text)
    number = text.splitlines().index(f"        role:{empty}") + 1
    assert line == (
        f"  - Pulumi.mine.yaml:{number}: clusters[manager].role: Input should be 'manager', "
        "'worker' or 'standalone'; the key has no value (nothing, `~` or `null` after the colon)"
    )


@pytest.mark.parametrize("written", ["confg", "configs", "Config"])
def test_a_misspelled_config_key_gets_did_you_mean_not_fleet_required(
    tmp_path: Path, written: str
) -> None:
    text = edited(DEV, "\nconfig:\n", f"\nencryptionsalt: v1:abc\n{written}:\n")
    _, (line,) = errors_in(tmp_path, text)
    number = text.splitlines().index(f"{written}:") + 1
    assert line == (
        f"  - Pulumi.mine.yaml:{number}: {written}: unknown key; did you mean 'config'? "
        "That key, missing here, holds the fleet"
    )


@pytest.mark.parametrize(
    ("asked", "meant"), [("prd", "'prod'"), ("Pulumi.dev.yaml", "'dev'"), ("dev.yaml", "'dev'")]
)
def test_a_stack_name_with_no_file_gets_did_you_mean_and_the_stacks_there(
    tmp_path: Path, asked: str, meant: str
) -> None:
    for stack in COMMITTED_STACKS:
        shutil.copy(ROOT / f"Pulumi.{stack}.yaml", tmp_path)
    with pytest.raises(ConfigError) as failed:
        load_from_file(asked, root=tmp_path)
    assert failed.value.render().splitlines()[1] == (
        f"  - no stack file Pulumi.{asked}.yaml in {tmp_path}; did you mean {meant}? "
        f"Stacks here: {', '.join(sorted(COMMITTED_STACKS))}"
    )


def test_a_stack_name_far_from_every_file_gets_the_stacks_there(tmp_path: Path) -> None:
    shutil.copy(ROOT / "Pulumi.dev.yaml", tmp_path)
    with pytest.raises(ConfigError) as failed:
        load_from_file("staging", root=tmp_path)
    assert failed.value.render().splitlines()[1] == (
        f"  - no stack file Pulumi.staging.yaml in {tmp_path}; stacks here: dev"
    )


def test_numbers_where_the_allowed_values_are_number_like_strings_get_the_quote_hint(
    tmp_path: Path,
) -> None:
    """Availability zones are the strings "1", "2", "3": `zones: [1, 2]` is what was meant."""
    text = edited(PROD, 'zones: ["1", "2", "3"]', "zones: [1, 2, 4]")
    _, rendered = errors_in(tmp_path, text)
    number = text.splitlines().index("          zones: [1, 2, 4]") + 1
    assert rendered == [
        f"  - Pulumi.mine.yaml:{number}: clusters[manager].systemPool.zones[0]: a string is needed "
        'here; write it quoted: "1" (YAML reads 1 as a number)',
        f"  - Pulumi.mine.yaml:{number}: clusters[manager].systemPool.zones[1]: a string is needed "
        'here; write it quoted: "2" (YAML reads 2 as a number)',
        # Not one of them, quoted or not: what is allowed.
        f"  - Pulumi.mine.yaml:{number}: clusters[manager].systemPool.zones[2]: Input should be "
        "'1', '2' or '3' (got 4)",
    ]
