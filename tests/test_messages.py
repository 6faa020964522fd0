"""Messages a person reads once: each bad input a newcomer tried, and how it reads.

The inputs are those of the newcomer review: a staging stack that sends team-a's CPU and GPU work
to every worker, a VM size typo, a GPU quota on a CPU pool, a LocalQueue typo, quantities written
as YAML numbers, and errors read through a pipe (80 columns).
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders.kueue_queues import cluster_queue
from checks.stack import parse_fleet
from config.errors import ConfigError, Issue, named_path
from config.loader import FULL_KEY, read_stack_file
from config.schema import parse_model
from preflight.snapshot import snapshot
from testkit.realtier.twin import unserved
from testkit.sources import copy_preflight_sources

Raw = dict[str, Any]

# What the newcomer saw for a quota on a pipe: rich cut the key path at column 80.
QUOTA_PATH = (
    "clusters[worker-2].queues.clusterQueues[team-a].resourceGroups[0].flavors[cpu]"
    ".resources[cpu].nominalQuota"
)


def prod_raw() -> Raw:
    raw, _ = read_stack_file("prod")
    return copy.deepcopy(raw)


def staging_raw() -> Raw:
    """prod with team-a's CPU and GPU work in one manager queue sent to all four workers: the
    newcomer's staging stack, whose worker-4 has an A100 pool only."""
    raw = prod_raw()
    raw["multiKueue"]["clusterQueueWorkers"] = {
        "team-a": ["worker-1", "worker-2", "worker-3", "worker-4"]
    }
    manager = raw["clusters"][0]["queues"]
    manager["clusterQueues"] = [q for q in manager["clusterQueues"] if q["name"] != "team-a-gpu"]
    manager["localQueues"] = [q for q in manager["localQueues"] if q["name"] != "team-a-gpu"]
    raw["clusters"][4]["queues"]["clusterQueues"][0]["name"] = "team-a"
    # In team-a's dispatch set now, worker-4 gets windows of its own beside workers 1-3's.
    raw["clusters"][4]["upgrades"] = {
        **raw["upgrades"],
        "window": {**raw["upgrades"]["window"], "schedule": {"weekly": {"dayOfWeek": "Friday"}}},
        "nodeOsWindow": {**raw["upgrades"]["nodeOsWindow"], "startTime": "18:00"},
    }
    return raw


def errors_of(raw: Raw) -> list[str]:
    """Every error as the user reads it (paths naming the items)."""
    try:
        parse_fleet(raw, source="Pulumi.staging.yaml")
    except ConfigError as err:
        return [str(err.named(i)) for i in err.errors]
    return []


def run_preflight(tmp_path: Path, raw: Raw, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m preflight staging` on `raw`, its output a pipe (as in CI logs)."""
    if not (tmp_path / "preflight").exists():
        copy_preflight_sources(tmp_path)
    document = {"config": {"azure-native:location": "westeurope", FULL_KEY: raw}}
    (tmp_path / "Pulumi.staging.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "80", "TERM": "dumb"}
    return subprocess.run(
        [sys.executable, "-m", "preflight", "staging", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


# --- what the tests knew, preflight says: CPU jobs sent to a GPU-only worker ----------------------


def test_cpu_work_dispatched_to_a_gpu_only_worker_is_an_error() -> None:
    found = errors_of(staging_raw())
    assert len(found) == 1, found
    path, message = found[0].split(": ", 1)
    assert path == "clusters[worker-4].queues.clusterQueues[team-a]"
    assert "CPU-only jobs" in message
    assert "GPU pools only (gpu)" in message
    # The fix, as prod does it: a GPU queue of its own, sent only to worker-4.
    assert "{team-a: [worker-1, worker-2, worker-3], team-a-gpu: [worker-4]}" in message


def test_gpu_work_in_its_own_queue_passes() -> None:
    assert errors_of(prod_raw()) == []


def test_a_cpu_flavor_on_the_gpu_worker_also_fixes_it() -> None:
    raw = staging_raw()
    worker = raw["clusters"][4]
    worker["pools"].append({"name": "cpu", "vmSize": "Standard_D16ds_v5", "maxCount": 4})
    worker["queues"]["flavors"].append({"name": "cpu", "pool": "cpu"})
    group = worker["queues"]["clusterQueues"][0]["resourceGroups"][0]
    group["flavors"].append(
        {
            "name": "cpu",
            "resources": [
                {"name": "cpu", "nominalQuota": "40"},
                {"name": "memory", "nominalQuota": "200Gi"},
                {"name": "nvidia.com/gpu", "nominalQuota": 0},
            ],
        }
    )
    assert not [e for e in errors_of(raw) if "CPU-only jobs" in e]


def test_the_twin_finds_it_with_the_products_rule() -> None:
    # testkit/realtier/twin.py:unserved() reads this rule from checks/: the twin finds what
    # preflight refuses.
    fleet = parse_model(staging_raw())
    (problem,) = unserved(fleet)
    assert problem.startswith("clusters[4].queues.clusterQueues[0]: manager ClusterQueue 'team-a'")


def test_preflight_exits_1_on_it(tmp_path: Path) -> None:
    result = run_preflight(tmp_path, staging_raw())
    assert result.returncode == 1, result.stdout + result.stderr
    assert "clusters[worker-4].queues.clusterQueues[team-a]: manager ClusterQueue" in result.stderr


# --- no hard wrap, names in paths -----------------------------------------------------------------


def test_a_long_key_path_stays_on_one_line_through_a_pipe(tmp_path: Path) -> None:
    raw = prod_raw()
    quota = raw["clusters"][2]["queues"]["clusterQueues"][0]["resourceGroups"][0]["flavors"][0]
    quota["resources"][0]["nominalQuota"] = "500"
    result = run_preflight(tmp_path, raw)
    assert result.returncode == 1, result.stdout
    line = next(x for x in result.stderr.splitlines() if "nominalQuota 500" in x)
    assert re.match(r"  - Pulumi\.staging\.yaml:\d+: ", line), line
    assert line.split(": ", 1)[1].startswith(
        f"{QUOTA_PATH}: nominalQuota 500 cpu exceeds what pool 'cpu'"
    )
    assert line.rstrip().endswith("lower the quota or raise maxCount")
    # JSON keeps the position path for tools, and names the items beside it.
    as_json = json.loads(run_preflight(tmp_path, raw, "--json").stdout)
    (error,) = as_json["errors"]
    assert error["at"] == QUOTA_PATH
    assert error["path"].startswith("clusters[2].queues.clusterQueues[0]")


def test_warnings_name_their_items_and_stay_whole(tmp_path: Path) -> None:
    raw = prod_raw()
    # A ClusterQueue with no LocalQueue on a standalone-style worker queue: a warning.
    worker = raw["clusters"][3]["queues"]
    extra = copy.deepcopy(worker["clusterQueues"][0])
    extra["name"] = "spare-queue-with-a-long-name"
    worker["clusterQueues"].append(extra)
    result = run_preflight(tmp_path, raw)
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if "no LocalQueue points at" in x)
    assert re.match(r"warning Pulumi\.staging\.yaml:\d+: ", line), line
    assert line.split(": ", 1)[1].startswith(
        "clusters[worker-3].queues.clusterQueues[spare-queue-with-a-long-name]: "
    )
    assert line.rstrip().endswith("nothing can be submitted to it")


def test_named_path_keeps_positions_it_cannot_name() -> None:
    data = {
        "clusters": [
            {"name": "a", "pools": [{"name": "p"}, {"name": "p"}]},
            {"pools": [{"vmSize": "x"}]},
        ],
        "multiKueue": {"clusterQueueWorkers": {"team-a": ["w"]}},
    }
    # Duplicate names and unnamed items keep their index; keys with dots are walked whole.
    assert named_path("clusters[0].pools[1].maxCount", data) == "clusters[a].pools[1].maxCount"
    assert named_path("clusters[1].pools[0].vmSize", data) == "clusters[1].pools[0].vmSize"
    assert named_path("clusters[7].name", data) == "clusters[7].name"
    key = "multiKueue.clusterQueueWorkers.team-a[0]"
    assert named_path(key, data) == key
    # Paths inside a message are named too.
    err = ConfigError([Issue("clusters[0].tags", "see clusters[0].pools[0]")], data=data)
    assert str(err.named(err.issues[0])) == "clusters[a].tags: see clusters[a].pools[0]"


# --- VM sizes -------------------------------------------------------------------------------------


def test_a_vm_size_typo_gets_did_you_mean_and_no_vmsizes_advice() -> None:
    raw = prod_raw()
    raw["clusters"][4]["pools"][0]["vmSize"] = "Standard_NC24ads_A100v4"
    found = errors_of(raw)
    assert len(found) == 1, found
    assert found[0].startswith(
        "clusters[worker-4].pools[gpu].vmSize: unknown VM size 'Standard_NC24ads_A100v4'; "
        "did you mean 'Standard_NC24ads_A100_v4'?"
    )
    assert "vmSizes" not in found[0]


def test_declaring_the_typo_under_vmsizes_does_not_get_it_through() -> None:
    raw = prod_raw()
    raw["clusters"][4]["pools"][0]["vmSize"] = "Standard_NC24ads_A100v4"
    raw["vmSizes"] = {"Standard_NC24ads_A100v4": {"vcpus": 24, "memoryGib": 220, "gpus": 1}}
    (error,) = errors_of(raw)
    assert "did you mean 'Standard_NC24ads_A100_v4'?" in error
    assert "Azure refuses 'Standard_NC24ads_A100v4' at deploy" in error


def test_a_size_the_table_lacks_may_still_be_declared() -> None:
    raw = prod_raw()
    raw["clusters"][4]["pools"][0]["vmSize"] = "Standard_HB120rs_v3"
    (error,) = errors_of(raw)
    assert "did you mean" not in error
    assert "az vm list-sizes --location" in error
    raw["vmSizes"] = {"Standard_HB120rs_v3": {"vcpus": 120, "memoryGib": 456, "gpus": 0}}
    # Declared, it is a CPU pool now: the GPU quota on it is the one error left.
    assert [e for e in errors_of(raw) if "vmSize" in e.split(": ")[0]] == []


# --- advice that fits the case --------------------------------------------------------------------


def test_gpu_quota_on_a_pool_without_gpus_says_choose_a_gpu_size() -> None:
    raw = prod_raw()
    raw["clusters"][4]["pools"][0]["vmSize"] = "Standard_D8s_v5"
    found = errors_of(raw)
    # One error, on the GPU quota; the pool's cpu and memory shortfalls share its cause.
    assert len(found) == 1, found
    path, message = found[0].split(": ", 1)
    assert path.endswith("flavors[a100].resources[nvidia.com/gpu].nominalQuota")
    assert "pool 'gpu' runs Standard_D8s_v5, which has no GPUs" in message
    assert "choose a GPU VM size for pool 'gpu'" in message
    assert "maxCount" not in message


def test_min_above_max_is_one_error_not_three() -> None:
    raw = prod_raw()
    raw["clusters"][2]["pools"][0]["minCount"] = 25
    raw["clusters"][2]["pools"][0]["maxCount"] = 2
    assert errors_of(raw) == ["clusters[worker-2].pools[cpu].minCount: must be <= maxCount (2)"]


def test_a_local_queue_typo_is_one_error() -> None:
    raw = prod_raw()
    raw["clusters"][0]["queues"]["localQueues"][1]["clusterQueue"] = "team-a-gpuu"
    assert errors_of(raw) == [
        "clusters[manager].queues.localQueues[team-a-gpu].clusterQueue: no ClusterQueue "
        "'team-a-gpuu' in cluster 'manager' (declared: team-a, team-a-gpu)"
    ]


# --- quantities as YAML numbers -------------------------------------------------------------------


def test_quantities_written_as_yaml_numbers_read_as_kubernetes_reads_them() -> None:
    raw = prod_raw()
    resources = raw["clusters"][2]["queues"]["clusterQueues"][0]["resourceGroups"][0]["flavors"][0][
        "resources"
    ]
    resources[0]["nominalQuota"] = 0.5
    resources[1]["nominalQuota"] = 5e7
    fleet, _ = parse_fleet(raw)
    worker = fleet.clusters[2]
    quotas = worker.queues.cluster_queues[0].resource_groups[0].flavors[0].resources
    assert [q.nominal_quota for q in quotas] == ["500m", 50000000]
    built = cluster_queue(worker.queues.cluster_queues[0], worker.queues)
    rendered = built["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert [r["nominalQuota"] for r in rendered] == ["500m", "50000000"]


@pytest.mark.parametrize(
    ("value", "expected"), [(0.25, "250m"), (1.5e-3, "1500u"), (2.0, 2), (1e9, 1000000000)]
)
def test_every_quantity_key_takes_numbers(value: float, expected: str | int) -> None:
    raw = prod_raw()
    quota = raw["clusters"][1]["queues"]["clusterQueues"][0]["resourceGroups"][0]["flavors"][0]
    quota["resources"][0]["borrowingLimit"] = value
    fleet, _ = parse_fleet(raw)
    cq = fleet.clusters[1].queues.cluster_queues[0]
    assert cq.resource_groups[0].flavors[0].resources[0].borrowing_limit == expected


@pytest.mark.parametrize("value", [[1], True, "lots", -0.5])
def test_a_bad_quantity_is_one_error_without_union_branches(value: object) -> None:
    raw = prod_raw()
    quota = raw["clusters"][2]["queues"]["clusterQueues"][0]["resourceGroups"][0]["flavors"][0]
    quota["resources"][0]["nominalQuota"] = value
    found = errors_of(raw)
    assert len(found) == 1, found
    assert found[0].startswith(f"{QUOTA_PATH}: ")
    assert ".str" not in found[0]
    assert ".int" not in found[0]


def test_an_unknown_key_without_a_near_match_reads_as_a_sentence() -> None:
    raw = prod_raw()
    raw["clusters"][1]["queues"]["clusterQueues"][0]["budget"] = {"dollars": 2}
    (error,) = errors_of(raw)
    assert error.startswith(
        "clusters[worker-1].queues.clusterQueues[team-a].budget: unknown key; allowed keys: "
    )


def test_diff_errors_name_their_items(tmp_path: Path) -> None:
    raw = prod_raw()
    raw["clusters"][2]["pools"][0]["minCount"] = 25
    copy_preflight_sources(tmp_path)
    document = {"config": {"azure-native:location": "westeurope", FULL_KEY: raw}}
    (tmp_path / "Pulumi.staging.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    snap = snapshot("staging", root=tmp_path, files=False)
    text = (tmp_path / "Pulumi.staging.yaml").read_text().splitlines()
    line = next(i for i, x in enumerate(text, 1) if "minCount: 25" in x)
    assert snap["errors"] == [
        {
            "path": "clusters[worker-2].pools[cpu].minCount",
            "message": "must be <= maxCount (20)",
            "at": f"Pulumi.staging.yaml:{line}",
        }
    ]
