"""Versions Azure serves and upgrades: the AKS calendar on a given day, LTS, Kueue's minors,
channels and windows, pool skew, the resources they become, one minor at a time in the plan diff,
and providers that never forget an unreachable cluster's objects."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from checks.stack import load_from_file, parse_fleet
from checks.upgrades import TODAY_ENV, calendar_issues, check_calendar, today
from config.errors import ConfigError, Issue
from config.loader import read_stack_file
from config.models import FleetConfig
from preflight.diff import compare
from preflight.snapshot import snapshot
from testkit.mocks import Graph, built_stack, mocked_engine, run_program
from testkit.realtier.upgrade_worker import MANAGER, documented, quoted_refusal
from testkit.repo import COMMITTED_STACKS, ROOT
from testkit.sources import copy_preflight_sources
from upstream.aks_versions import CALENDAR, READ_ON

MC = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"
WINDOW = "azure-native:containerservice:MaintenanceConfiguration"
PROVIDER = "pulumi:providers:kubernetes"

BASE: dict[str, Any] = {
    "location": "westeurope",
    "kubernetesVersion": "1.36",
    "clusters": [
        {
            "name": "solo",
            "role": "standalone",
            "pools": [{"name": "batch", "vmSize": "Standard_D4s_v5", "maxCount": 3}],
        }
    ],
}


def raw_with(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(BASE)
    raw.update({k: v for k, v in changes.items() if k != "cluster"})
    raw["clusters"][0].update(changes.get("cluster", {}))
    return raw


def errors(raw: dict[str, Any]) -> list[Issue]:
    with pytest.raises(ConfigError) as failed:
        parse_fleet(raw)
    return failed.value.errors


def fleet(raw: dict[str, Any]) -> FleetConfig:
    return parse_fleet(raw)[0]


# --- the calendar ------------------------------------------------------------------------------


def test_the_suite_judges_versions_on_the_day_the_calendar_was_read() -> None:
    assert today() == READ_ON == date(2026, 12, 3)


def test_133_on_the_free_tier_is_refused_with_its_row_and_the_lts_way() -> None:
    (issue,) = errors(raw_with(kubernetesVersion="1.33"))
    assert issue.path == "kubernetesVersion"
    assert "'solo' (Free tier) left AKS support on 2026-07-31" in issue.message
    assert "AKS 1.33: GA Jun 2025, end of life Jul 31, 2026" in issue.message
    assert "LTS until Jul 31, 2027" in issue.message
    assert "AKS serves 1.35, 1.36 on 2026-12-03 that Kueue 0.19.2 runs on" in issue.message
    assert "skuTier: Premium and supportPlan: AKSLongTermSupport" in issue.message
    assert "read 2026-12-03" in issue.message


def test_133_on_lts_is_served_and_lts_needs_premium() -> None:
    lts = {"skuTier": "Premium", "supportPlan": "AKSLongTermSupport"}
    fleet(raw_with(kubernetesVersion="1.33", cluster=lts))
    (issue,) = errors(
        raw_with(cluster={"skuTier": "Standard", "supportPlan": "AKSLongTermSupport"})
    )
    assert issue.path == "clusters[0].supportPlan"
    assert "set skuTier: Premium" in issue.message


def test_a_cluster_version_is_judged_at_its_own_key_and_clusters_share_one_issue() -> None:
    raw = raw_with(kubernetesVersion="1.34")
    raw["clusters"].append({**raw["clusters"][0], "name": "other"})
    (issue,) = errors(raw)
    assert issue.message.startswith("1.34 for 'solo' (Free tier), 'other' (Free tier) left AKS")
    raw["clusters"][1]["kubernetesVersion"] = "1.36"
    (issue,) = errors(raw)
    assert issue.path == "kubernetesVersion"
    assert "'other'" not in issue.message


def test_warned_within_60_days_and_refused_the_day_after_the_end() -> None:
    f = fleet(BASE)
    assert list(calendar_issues(f, date(2027, 4, 30))) == []  # 61 days before
    assert len(list(calendar_issues(f, date(2027, 5, 1)))) == 1  # 60
    (warning,) = calendar_issues(f, date(2027, 5, 15))
    assert warning.severity == "warning"
    assert warning.message.startswith("1.36 for 'solo' (Free tier) leaves AKS support in 46 days")
    assert "plan the upgrade to 1.37, one minor at a time" in warning.message
    (last,) = calendar_issues(f, date(2027, 6, 30))
    assert last.severity == "warning"
    (error,) = calendar_issues(f, date(2027, 7, 1))
    assert error.severity == "error"
    assert "left AKS support on 2027-06-30" in error.message


def test_minors_outside_the_calendar_and_before_ga() -> None:
    newer = [i.message for i in errors(raw_with(kubernetesVersion="1.38"))]
    assert any("newer than every minor in the AKS release calendar" in m for m in newer), newer
    (early,) = calendar_issues(fleet(BASE), date(2026, 5, 20))
    assert "not GA on AKS before Jun 2026" in early.message


def test_today_comes_from_the_environment_else_the_utc_date(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed = fleet(BASE)
    monkeypatch.setenv(TODAY_ENV, "2027-07-01")
    assert today() == date(2027, 7, 1)
    assert [i.severity for i in check_calendar(parsed)] == ["error"]
    monkeypatch.setenv(TODAY_ENV, "next tuesday")
    (issue,) = check_calendar(parsed)
    assert issue.path == TODAY_ENV
    monkeypatch.delenv(TODAY_ENV)
    assert today() == datetime.now(UTC).date()


def test_existing_clusters_are_not_judged_by_aks_calendar() -> None:
    raw = raw_with(kubernetesVersion="1.30")
    raw["clusters"][0] |= {"source": "existing", "existing": {"kubeconfigPath": "k.yaml"}}
    assert list(calendar_issues(fleet(raw), READ_ON)) == []


def test_committed_stacks_are_served_today_by_the_wall_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one test that reads the real date, on purpose: it fails when AKS stops serving the
    committed stacks' minor, which is when they must move (docs/upgrades.md)."""
    monkeypatch.delenv(TODAY_ENV)
    for stack in COMMITTED_STACKS:
        load_from_file(stack, files=False)


def test_calendar_rows_are_ordered_and_lts_outlives_standard_support() -> None:
    rows = list(CALENDAR.values())
    assert [r.minor for r in rows] == sorted(CALENDAR)
    for row in rows:
        assert row.ga < row.end_of_life < row.lts_end, row.name


# --- Kueue's minors, channels, windows, pools --------------------------------------------------


def test_no_cluster_runs_a_minor_the_pinned_kueue_is_not_tested_on() -> None:
    issues = errors(raw_with(kubernetesVersion="1.37"))
    assert [i.path for i in issues] == ["kubernetesVersion"]
    assert "Kueue 0.19.2 runs on Kubernetes 1.29 to 1.36" in issues[0].message
    raw = raw_with(kubernetesVersion="1.36", kueue={"version": "0.17.8"})
    assert "Kueue 0.17.8 runs on Kubernetes 1.29 to 1.35" in errors(raw)[0].message


def test_an_untested_minor_is_accepted_only_as_the_one_after_the_tested_ones_with_a_warning() -> (
    None
):
    """`kueue.untestedKubernetesMinor`: 1.37 with 0.19.2 (tested to 1.36) turns the refusal into
    a warning at the cluster's version key; nothing else is accepted by it."""
    _, issues = parse_fleet(
        raw_with(kubernetesVersion="1.37", kueue={"untestedKubernetesMinor": "1.37"})
    )
    warned = [i for i in issues if i.path == "kubernetesVersion"]
    assert [i.severity for i in warned] == ["warning"], issues
    assert "e2e-tested up to Kubernetes 1.36" in warned[0].message
    assert "kueue.untestedKubernetesMinor accepts 1.37 untested" in warned[0].message
    # Two minors up is still refused, and the key names the one minor it can take.
    (issue, *_) = errors(
        raw_with(kubernetesVersion="1.38", kueue={"untestedKubernetesMinor": "1.37"})
    )
    assert issue.path == "kubernetesVersion", issue
    for written in ("1.38", "1.36", "1.37.1"):
        raw = raw_with(kueue={"untestedKubernetesMinor": written})
        assert [(i.path, i.message) for i in errors(raw)] == [
            (
                "kueue.untestedKubernetesMinor",
                f"{written!r}: allowed only '1.37', the minor after Kueue 0.19.2's newest "
                "e2e-tested one (1.36), or nothing",
            )
        ]
    # 0.17.8 is tested to 1.35: its one untested minor is 1.36.
    _, issues = parse_fleet(
        raw_with(kueue={"version": "0.17.8", "untestedKubernetesMinor": "1.36"})
    )
    assert [i.severity for i in issues if i.path == "kubernetesVersion"] == ["warning"]


def test_an_untested_minor_no_cluster_uses_is_warned_so_it_accepts_no_later_bump() -> None:
    _, issues = parse_fleet(raw_with(kueue={"untestedKubernetesMinor": "1.37"}))
    assert [(i.path, i.severity) for i in issues if "untested" in i.path] == [
        ("kueue.untestedKubernetesMinor", "warning")
    ], issues
    assert "no AKS cluster is on 1.37" in str(issues)


def test_a_worker_moved_to_1_37_is_refused_as_the_upgrade_page_quotes() -> None:
    """docs/upgrades.md, "Upgrading a worker's Kubernetes minor": AKS serves 1.37, the one-minor
    step is allowed, and the pinned Kueue's range refuses it, with the words the page quotes."""
    raw, _ = read_stack_file("dev", ROOT)
    raw = copy.deepcopy(raw)
    (worker,) = [c for c in raw["clusters"] if c["name"] == "worker-2"]
    worker["kubernetesVersion"] = "1.37"
    assert CALENDAR[(1, 37)].ga <= READ_ON
    with pytest.raises(ConfigError) as failed:
        parse_fleet(raw, source="Pulumi.dev.yaml")
    assert len(failed.value.errors) == 1
    assert f"  - {quoted_refusal()}" in str(failed.value).splitlines()  # as preflight prints it


def test_the_upgrade_page_runs_its_lines_on_the_clusters_it_names() -> None:
    lines = documented()
    assert [target for target, _ in lines] == [MANAGER, MANAGER, "worker-2"]
    assert 'clusterName=="worker-2"' in lines[0][1]
    assert "multikueuecluster worker-2" in lines[1][1]
    assert lines[2][1] == "kubectl get --raw /version"


@pytest.mark.parametrize(
    ("upgrades", "path", "words"),
    [
        ({"channel": "stable"}, "upgrades.channel", "moves the cluster to other minors"),
        ({"channel": "rapid"}, "upgrades.channel", "Use patch"),
        ({"channel": "node-image"}, "upgrades.channel", "legacy"),
    ],
)
def test_channels_that_fight_the_declared_version_are_refused(
    upgrades: dict[str, Any], path: str, words: str
) -> None:
    (issue,) = errors(raw_with(upgrades=upgrades))
    assert (issue.path, words in issue.message) == (path, True), issue


def test_the_patch_channel_with_a_pinned_patch_is_refused_at_the_version_key() -> None:
    (issue,) = errors(raw_with(kubernetesVersion="1.36.2", upgrades={"channel": "patch"}))
    assert issue.path == "kubernetesVersion"
    assert "write 1.36" in issue.message
    fleet(raw_with(kubernetesVersion="1.36.2"))  # without a channel the pin is the user's call


def test_windows_one_schedule_and_useless_windows_warn() -> None:
    window: dict[str, Any] = {
        "schedule": {"weekly": {"dayOfWeek": "Saturday"}, "daily": {}},
        "startTime": "00:00",
        "durationHours": 4,
    }
    (issue,) = errors(raw_with(cluster={"upgrades": {"channel": "patch", "window": window}}))
    assert issue.path == "clusters[0].upgrades.window.schedule"
    window["schedule"] = {"weekly": {"dayOfWeek": "Saturday"}}
    _, warnings = parse_fleet(raw_with(upgrades={"window": window}))
    assert ("upgrades.window", "does nothing with channel: none") in [
        (w.path, w.message) for w in warnings
    ]
    short = {**window, "durationHours": 3}
    (issue,) = errors(raw_with(upgrades={"channel": "patch", "window": short}))
    assert issue.path == "upgrades.window.durationHours"
    late = {**window, "notAllowedDates": [{"start": "2026-12-24", "end": "2026-12-20"}]}
    (issue,) = errors(raw_with(upgrades={"channel": "patch", "window": late}))
    assert issue.path == "upgrades.window.notAllowedDates[0].end"


def test_security_patch_is_refused_on_azure_linux_gpu_pools() -> None:
    gpu = {"name": "gpu", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 2}
    raw = raw_with(upgrades={"nodeOsChannel": "SecurityPatch"})
    raw["clusters"][0]["pools"].append(gpu)
    (issue,) = errors(raw)
    assert issue.path == "upgrades.nodeOsChannel"
    assert "Azure Linux GPU pools (gpu)" in issue.message
    raw["clusters"][0]["pools"][1]["osSku"] = "Ubuntu"
    fleet(raw)


@pytest.mark.parametrize(
    ("control", "pool", "words"),
    [
        ("1.36", "1.37", "newer than its control plane"),
        ("1.36.2", "1.36.4", "newer than its control plane"),
        ("1.36", "1.32", "4 minors behind"),
    ],
)
def test_pool_versions_stay_within_aks_skew(control: str, pool: str, words: str) -> None:
    raw = raw_with(kubernetesVersion=control)
    raw["clusters"][0]["pools"][0]["kubernetesVersion"] = pool
    issues = [i for i in errors(raw) if i.path == "clusters[0].pools[0].kubernetesVersion"]
    assert len(issues) == 1, issues
    assert words in issues[0].message


def test_a_lagging_pool_is_fine_until_auto_upgrade_would_move_it() -> None:
    raw = raw_with()
    raw["clusters"][0]["pools"][0]["kubernetesVersion"] = "1.33"
    assert fleet(raw).clusters[0].pools[0].kubernetes_version == "1.33"
    raw["upgrades"] = {"channel": "patch"}
    (issue,) = errors(raw)
    assert issue.path == "clusters[0].pools[0].kubernetesVersion"
    assert "cluster auto-upgrade always upgrades the control plane and the node pools" in (
        issue.message
    )


def test_pool_upgrade_settings_ranges() -> None:
    for bad in ({"maxSurge": "0"}, {"maxSurge": "101%"}, {"drainTimeoutMinutes": 4}):
        raw = raw_with()
        raw["clusters"][0]["pools"][0]["upgradeSettings"] = bad
        assert errors(raw)[0].path.startswith("clusters[0].pools[0].upgradeSettings."), bad


# --- what `pulumi up` would create ------------------------------------------------------------


@pytest.fixture(scope="module")
def prod() -> Graph:
    return built_stack("prod").graph


@pytest.fixture(scope="module")
def dev() -> Graph:
    return built_stack("dev").graph


def test_prod_sends_channels_windows_and_pool_surge(prod: Graph) -> None:
    clusters = prod.of_type(MC)
    assert len(clusters) == 5
    for mc in clusters:
        assert mc.inputs["kubernetesVersion"] == "1.36"
        assert mc.inputs["supportPlan"] == "KubernetesOfficial"
        assert mc.inputs["autoUpgradeProfile"] == {
            "upgradeChannel": "patch",
            "nodeOSUpgradeChannel": "NodeImage",
        }
        (system,) = mc.inputs["agentPoolProfiles"]
        # batchPods: protect (the default): a node AKS cannot drain is quarantined, not retried.
        assert system["upgradeSettings"] == {
            "maxSurge": "33%",
            "drainTimeoutInMinutes": 60,
            "undrainableNodeBehavior": "Cordon",
        }
        # The system pool moves with its control plane (upstream.aks_rules system-pool-version).
        assert system["orchestratorVersion"] == "1.36"
    spot = 0
    for pool in prod.of_type(POOL):
        if pool.inputs.get("scaleSetPriority") == "Spot":
            # AKS refuses any max surge on a Spot pool: the inherited 33% is left out, and
            # with no surge node to put in a blocked node's place, no Cordon either.
            spot += 1
            assert pool.inputs["upgradeSettings"] == {"drainTimeoutInMinutes": 60}
        else:
            assert pool.inputs["upgradeSettings"] == {
                "maxSurge": "33%",
                "drainTimeoutInMinutes": 60,
                "undrainableNodeBehavior": "Cordon",
            }
        assert pool.inputs["orchestratorVersion"] == "1.36"
    assert spot == 1  # worker-3's
    windows = {(w.inputs["resourceName"], w.inputs["configName"]): w for w in prod.of_type(WINDOW)}
    assert len(windows) == 10  # two a cluster
    auto = windows[("worker-4", "aksManagedAutoUpgradeSchedule")]
    assert auto.inputs["maintenanceWindow"] == {
        "schedule": {"weekly": {"dayOfWeek": "Saturday", "intervalWeeks": 1}},
        "durationHours": 8,
        "startTime": "00:00",
        "utcOffset": "+00:00",
    }
    node_os = windows[("worker-4", "aksManagedNodeOSUpgradeSchedule")]
    assert node_os.inputs["maintenanceWindow"]["schedule"]["weekly"]["dayOfWeek"] == "Sunday"
    # Each window belongs to its cluster's component.
    for w in windows.values():
        assert prod.by_urn(w.parent).type == "fleet:index:AksCluster"


def test_dev_sends_channels_and_no_windows(dev: Graph) -> None:
    for mc in dev.of_type(MC):
        assert mc.inputs["autoUpgradeProfile"]["upgradeChannel"] == "patch"
        # AKS's pool defaults, but a node it cannot drain is quarantined (batchPods: protect).
        assert mc.inputs["agentPoolProfiles"][0]["upgradeSettings"] == {
            "undrainableNodeBehavior": "Cordon"
        }
    assert dev.of_type(WINDOW) == []


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_no_provider_forgets_an_unreachable_clusters_objects(stack: str) -> None:
    """A refresh without a working login must fail, not drop the cluster's objects from state
    (pulumi-kubernetes 4.25.0: deleteUnreachable turns an unreachable Read into a delete)."""
    providers = built_stack(stack).graph.of_type(PROVIDER)
    assert len(providers) >= 3
    for provider in providers:
        assert provider.inputs.get("deleteUnreachable") == "false", provider.name


# --- the plan and one minor at a time ---------------------------------------------------------


def test_plan_rows_say_when_support_ends_and_how_upgrades_run() -> None:
    snap = snapshot("prod")
    manager = snap["clusters"]["manager"]
    assert manager["supportEnds"] == "2027-06-30 (end of life)"
    assert manager["upgradeWindow"] == "Saturday every week, 00:00 UTC+00:00 for 8h"
    assert manager["nodeOsChannel"] == "NodeImage"
    assert snap["pools"]["worker-1/cpu"]["upgrade"] == "surge 33%, drain 60m, undrainable: Cordon"
    assert manager["batchPods"] == "protect"


def _with_version(tmp_path: Path, version: str) -> dict[str, Any]:
    text = (
        (ROOT / "Pulumi.dev.yaml")
        .read_text()
        .replace('kubernetesVersion: "1.36"', (f'kubernetesVersion: "{version}"'))
    )
    directory = tmp_path / version
    directory.mkdir()
    (directory / "Pulumi.dev.yaml").write_text(text)
    return snapshot("dev", root=directory, files=False)


def test_diff_refuses_two_minors_at_once_and_a_downgrade(tmp_path: Path) -> None:
    head = snapshot("dev")
    one = compare(_with_version(tmp_path, "1.35"), head, ref="main")
    assert one["refused"] == []
    assert "~ manager: k8s 1.35 -> 1.36" in "\n".join(
        f"~ {c['text']}" for s in one["sections"] for c in s["changes"]
    )
    assert _with_version(tmp_path, "1.34")["valid"] is False  # past its end on the tests' day
    base = _with_version(tmp_path, "1.36")
    base["clusters"]["manager"]["kubernetesVersion"] = "1.34"
    jump = compare(base, head, ref="main")
    (refused,) = jump["refused"]
    assert refused["path"] == "kubernetesVersion"
    assert "1.34 -> 1.36 skips 1.35" in refused["problem"]
    assert "one minor at a time" in refused["problem"]
    assert jump["flagged"] >= 1
    down = compare(head, base, ref="main")
    assert "1.36 -> 1.34 goes back a minor" in down["refused"][0]["problem"]


def test_lts_clusters_may_skip_minors() -> None:
    head = snapshot("dev")
    base = copy.deepcopy(head)
    for c in (base["clusters"]["manager"], head["clusters"]["manager"]):
        c["supportPlan"] = "AKSLongTermSupport"
    base["clusters"]["manager"]["kubernetesVersion"] = "1.33"
    assert compare(base, head)["refused"] == []


def test_preflight_against_a_ref_two_minors_back_exits_1(tmp_path: Path) -> None:
    """End to end, as CI runs it, on a day both minors are served (so only the step is wrong):
    main at 1.34, the branch at 1.36."""
    copy_preflight_sources(tmp_path, "Pulumi.dev.yaml")
    stack = tmp_path / "Pulumi.dev.yaml"
    current = stack.read_text()
    stack.write_text(current.replace('kubernetesVersion: "1.36"', 'kubernetesVersion: "1.34"'))

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@e", *args],
            check=True,
            capture_output=True,
        )

    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-qm", "base at 1.34")
    stack.write_text(current)

    def run(day: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "preflight", "dev", "--against", "main"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, TODAY_ENV: day},
        )

    result = run("2026-10-15")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "Version changes AKS refuses" in result.stdout
    assert "kubernetesVersion: 1.34 -> 1.36 skips 1.35" in result.stdout
    assert "[!] refused" in result.stdout


def test_a_pools_version_is_its_own_else_its_clusters_else_the_fleets() -> None:
    """One rule, read by what is registered, what the Azure check sends and what the plan says."""
    from builders.azure import azure_requests  # noqa: PLC0415
    from components.fleet import Fleet, FleetArgs  # noqa: PLC0415 - Pulumi only here
    from preflight.plan import build_plan  # noqa: PLC0415

    pools = [
        {"name": "lags", "vmSize": "Standard_D4s_v5", "maxCount": 3, "kubernetesVersion": "1.35"},
        {"name": "follows", "vmSize": "Standard_D4s_v5", "maxCount": 3},
    ]
    config = fleet(raw_with(cluster={"pools": pools}))
    solo = config.clusters[0]
    expected = {"system": "1.36", "lags": "1.35", "follows": "1.36"}
    assert {p.name: config.pool_version_of(solo, p) for p in (solo.system_pool, *solo.pools)} == (
        expected
    )
    # The cluster's version over the fleet's.
    moved = fleet(
        raw_with(kubernetesVersion="1.35", cluster={"pools": pools, "kubernetesVersion": "1.36"})
    )
    assert [moved.pool_version_of(moved.clusters[0], p) for p in moved.clusters[0].pools] == [
        "1.35",
        "1.36",
    ]

    with mocked_engine("test") as g:
        run_program(lambda: Fleet("fleet", FleetArgs(config=config, stack="test")))
    registered = {
        r.inputs["agentPoolName"]: r.inputs["orchestratorVersion"] for r in g.of_type(POOL)
    }
    sent = {
        r.inputs["agent_pool_name"]: r.inputs["orchestrator_version"]
        for r in azure_requests(config, "test")
        if r.token == POOL
    }
    (plan,) = build_plan("test", config, [])["clusters"]
    shown = {p["pool"]: p["kubernetesVersion"] for p in plan["pools"]}
    assert registered == sent == {"lags": "1.35", "follows": "1.36"}
    assert shown == expected
