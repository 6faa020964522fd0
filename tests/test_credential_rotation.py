"""Worker and member tokens rotate on a schedule the config states.

The generation of a token is the manual bump plus the whole periods of `credentials
.rotateEveryDays` since `scheduleStart`, computed from the config and the day (tests pin
2026-12-03, tests/conftest.py): no person, no live read.
"""

from __future__ import annotations

import copy
import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import karmada as kb
from builders import karmada_members as km
from builders import multikueue as mk
from builders.fleet import render_fleet
from checks.stack import load_from_file, parse_fleet
from config.clock import TODAY_ENV
from config.errors import ConfigError, Issue
from config.models import FleetConfig
from config.resolve import credential_schedule, rotation_of
from preflight.diff import compare
from preflight.snapshot import snapshot
from preflight.sources import credential_section
from testkit.repo import ROOT
from testkit.shared.karmada_component import SECRET, build
from testkit.shared.karmada_config import BASE

CLUSTER = "kubernetes:cluster.karmada.io/v1alpha1:Cluster"


def dev_raw() -> dict[str, Any]:
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    # A JSON round trip gives every YAML anchor's user its own copy to edit.
    return json.loads(json.dumps(document["config"]["aks-batch-fleet:fleet"]))


def dev_fleet(raw: dict[str, Any]) -> tuple[FleetConfig, list[Issue]]:
    """Parsed as the loader does, with the stack's `azure-native:location`."""
    return parse_fleet(raw | {"location": "westeurope"})


def with_credentials(raw: dict[str, Any], credentials: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    out["credentials"] = credentials
    return out


def errors_for(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        dev_fleet(raw)
    return [str(i) for i in info.value.errors if i.severity == "error"]


# --- the generation ------------------------------------------------------------------------------


def test_the_generation_counts_whole_periods_since_the_start_plus_the_manual_bump() -> None:
    raw = with_credentials(dev_raw(), {"rotateEveryDays": 90, "scheduleStart": "2026-06-01"})
    raw["multiKueue"] = {"rotation": {"worker-2": 1}}
    fleet, _ = dev_fleet(raw)
    # 2026-06-01 + 185 days = 2026-12-03: two whole periods (rotations on 08-30 and 11-28).
    one = credential_schedule(fleet, "worker-1", "multikueue", date(2026, 12, 3))
    assert (one.periods, one.generation) == (2, 2)
    assert (one.due_since, one.next_rotation) == (date(2026, 11, 28), date(2027, 2, 26))
    two = credential_schedule(fleet, "worker-2", "multikueue", date(2026, 12, 3))
    assert (two.manual, two.generation) == (1, 3)
    # The day before a rotation day, and the day itself.
    assert rotation_of(fleet, "worker-1", date(2027, 2, 25)) == 2
    assert rotation_of(fleet, "worker-1", date(2027, 2, 26)) == 3
    # Karmada member tokens follow the same schedule, with their own manual bump.
    assert credential_schedule(fleet, "worker-2", "karmada", date(2026, 12, 3)).generation == 2
    # Without a day: config.clock's, pinned to 2026-12-03 by the test suite.
    assert rotation_of(fleet, "worker-2") == 3


def test_turning_the_schedule_on_with_todays_start_rotates_nothing() -> None:
    before, _ = dev_fleet(dev_raw() | {"credentials": {}})
    after, _ = load_from_file("dev")  # the committed stack: every 90 days from 2026-12-03
    for worker in ("worker-1", "worker-2"):
        for kind in ("multikueue", "karmada"):
            assert credential_schedule(after, worker, kind).generation == 0
            assert credential_schedule(before, worker, kind).generation == 0
    s = credential_schedule(after, "worker-1", "multikueue")
    assert (s.due_since, s.next_rotation) == (None, date(2027, 3, 3))
    assert rotation_of(after, "worker-1", date(2027, 3, 3)) == 1


def test_a_cluster_override_and_a_future_start() -> None:
    raw = with_credentials(
        dev_raw(),
        {
            "rotateEveryDays": 90,
            "scheduleStart": "2026-06-01",
            "clusters": {"worker-2": {"rotateEveryDays": 30, "scheduleStart": "2027-01-01"}},
        },
    )
    fleet, _ = dev_fleet(raw)
    two = credential_schedule(fleet, "worker-2", "karmada", date(2026, 12, 3))
    assert (two.every_days, two.periods, two.next_rotation) == (30, 0, date(2027, 1, 31))
    assert credential_schedule(fleet, "worker-2", "karmada", date(2027, 3, 2)).generation == 2
    assert credential_schedule(fleet, "worker-1", "karmada", date(2026, 12, 3)).generation == 2


# --- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("credentials", "expected"),
    [
        (
            {"rotateEveryDays": 0, "scheduleStart": "2026-12-03"},
            "credentials.rotateEveryDays: must",
        ),
        ({"rotateEveryDays": -30, "scheduleStart": "2026-12-03"}, "credentials.rotateEveryDays"),
        ({"rotateEveryDays": 90}, "credentials.scheduleStart: required with rotateEveryDays"),
        (
            {"rotateEveryDays": 90, "scheduleStart": "2026-02-30"},
            "credentials.scheduleStart: '2026-02-30' is not a calendar date",
        ),
        (
            {"rotateEveryDays": 90, "scheduleStart": "2026-12-03", "clusters": {"manager": {}}},
            "credentials.clusters.manager: 'manager' holds no credential",
        ),
        (
            {"clusters": {"worker-1": {"rotateEveryDays": 0}}},
            "credentials.clusters.worker-1.rotateEveryDays: must",
        ),
        (
            {"clusters": {"worker-1": {"rotateEveryDays": 30}}},
            "credentials.clusters.worker-1.scheduleStart: required",
        ),
    ],
)
def test_bad_schedules_are_refused_with_their_key_path(
    credentials: dict[str, Any], expected: str
) -> None:
    errors = errors_for(with_credentials(dev_raw(), credentials))
    assert any(expected in e for e in errors), errors


def test_a_schedule_over_400_days_warns() -> None:
    raw = with_credentials(dev_raw(), {"rotateEveryDays": 500, "scheduleStart": "2026-12-03"})
    _, warnings = dev_fleet(raw)
    assert [w.path for w in warnings if "rotateEveryDays" in w.path] == [
        "credentials.rotateEveryDays"
    ]


def test_a_karmada_rotation_names_a_member() -> None:
    raw = dev_raw()
    raw["karmada"]["rotation"] = {"manager": 1, "worker-1": -1}
    errors = errors_for(raw)
    assert any("karmada.rotation.manager: 'manager' is not a Karmada member" in e for e in errors)
    assert any("karmada.rotation.worker-1: must be 0.." in e for e in errors), errors


# --- what a new generation changes ---------------------------------------------------------------


def names(raw: dict[str, Any]) -> set[tuple[str, str, str]]:
    fleet, _ = dev_fleet(raw)
    manifests, _ = render_fleet(fleet)
    return {(m.target, m.kind, m.name) for m in manifests if m.kind in ("Secret", "Cluster")}


def test_a_scheduled_rotation_renames_every_token_secret_and_moves_the_references(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = dev_raw()
    now = names(raw)
    monkeypatch.setenv(TODAY_ENV, "2027-03-03")  # the committed stacks' first rotation day
    later = names(raw)
    gone, new = now - later, later - now
    assert {(t, n) for t, _k, n in gone} == {
        ("worker-1", mk.token_secret_name(0)),
        ("worker-2", mk.token_secret_name(0)),
        ("manager", mk.kubeconfig_secret_name("worker-1", 0)),
        ("manager", mk.kubeconfig_secret_name("worker-2", 0)),
        ("worker-1", "karmada-worker-1"),
        ("worker-2", "karmada-worker-2"),
        ("karmada", "worker-1"),
        ("karmada", "worker-2"),
    }
    assert {(t, n) for t, _k, n in new} == {
        ("worker-1", "multikueue-sa-token-1"),
        ("worker-2", "multikueue-sa-token-1"),
        ("manager", "multikueue-worker-1-kubeconfig-1"),
        ("manager", "multikueue-worker-2-kubeconfig-1"),
        ("worker-1", "karmada-worker-1-token-1"),
        ("worker-2", "karmada-worker-2-token-1"),
        ("karmada", "worker-1-token-1"),
        ("karmada", "worker-2-token-1"),
    }
    fleet, _ = dev_fleet(raw)
    (cluster,) = [
        m.obj for m in render_fleet(fleet)[0] if m.kind == "Cluster" and m.name == "worker-1"
    ]
    assert cluster["spec"]["secretRef"] == {
        "namespace": "karmada-cluster",
        "name": "worker-1-token-1",
    }


def test_the_member_token_still_belongs_to_the_same_account() -> None:
    (secret,) = [
        m.obj
        for m in km.member_objects("worker-1", kb.settings_of(load_from_file("dev")[0]), None, 4)
        if m.kind == "Secret"
    ]
    assert secret["metadata"]["name"] == "karmada-worker-1-token-4"
    assert secret["metadata"]["annotations"] == {
        "kubernetes.io/service-account.name": "karmada-worker-1",
        "pulumi.com/waitFor": "jsonpath={.data.token}",
    }
    assert secret["type"] == "kubernetes.io/service-account-token"


def test_wildcard_members_rotate_the_impersonator_token_too() -> None:
    raw = copy.deepcopy(BASE)
    raw["karmada"] |= {"memberAccess": "wildcard", "rotation": {"worker-1": 2}}
    fleet, _ = dev_fleet(raw)
    manifests = kb.render_karmada(fleet)
    secrets = {(m.target, m.name) for m in manifests if m.kind == "Secret"}
    assert {
        ("worker-1", "karmada-impersonator-token-2"),
        ("worker-1", "karmada-worker-1-token-2"),
        ("karmada", "worker-1-token-2"),
        ("karmada", "worker-1-impersonator-2"),
        ("worker-2", "karmada-impersonator"),
        ("karmada", "worker-2-impersonator"),
    } <= secrets
    (cluster,) = [m.obj for m in manifests if m.kind == "Cluster" and m.name == "worker-1"]
    assert cluster["spec"]["impersonatorSecretRef"]["name"] == "worker-1-impersonator-2"


def test_the_component_reads_the_new_token_and_points_the_cluster_at_it() -> None:
    raw = copy.deepcopy(BASE)
    raw["karmada"]["rotation"] = {"worker-2": 3}
    graph, _ = build(raw)
    creds = graph.one(SECRET, "fleet-karmada-worker-2-credentials")
    assert creds.inputs["metadata"]["name"] == "worker-2-token-3"
    token = [r for r in graph.of_type(SECRET) if r.name.endswith("secret-karmada-worker-2-token-3")]
    assert len(token) == 1
    assert token[0].urn in creds.dependencies
    assert creds.inputs["data"]["value"]["token"]  # read from the generation-3 token Secret
    cluster = graph.one(CLUSTER, "fleet-karmada-worker-2-cluster")
    assert cluster.inputs["spec"]["secretRef"]["name"] == "worker-2-token-3"
    # The other member keeps generation 0 and the names `karmadactl join` gives.
    assert graph.one(SECRET, "fleet-karmada-worker-1-credentials").inputs["metadata"]["name"] == (
        "worker-1"
    )


DEPLOYMENT_PATCH = "kubernetes:apps/v1:DeploymentPatch"
RESTART = "fleet-karmada-controller-manager-restart"


def test_a_member_rotation_rolls_the_chart_controller_manager_after_the_clusters() -> None:
    """Karmada's per-member informers keep the token they started with: once a member token
    rotates, a pod template annotation naming every generation rolls karmada-controller-manager,
    on the host, after the Clusters point at the new Secrets; the next rotation changes it."""
    raw = copy.deepcopy(BASE)
    raw["karmada"]["rotation"] = {"worker-2": 3}
    graph, _ = build(raw)
    patch = graph.one(DEPLOYMENT_PATCH, RESTART)
    assert patch.inputs["metadata"] == {
        "name": "karmada-controller-manager",
        "namespace": "karmada-system",
    }
    annotations = patch.inputs["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {kb.MEMBER_GENERATIONS_ANNOTATION: "worker-1=0,worker-2=3"}
    clusters = {
        graph.one(CLUSTER, f"fleet-karmada-{m}-cluster").urn for m in ("worker-1", "worker-2")
    }
    assert clusters <= set(patch.dependencies)
    # On the host (the manager), where the chart's Deployment is, not on Karmada's API server.
    assert patch.provider is not None
    assert "fleet-manager" in patch.provider, patch.provider

    raw["karmada"]["rotation"] = {"worker-2": 4}
    again, _ = build(raw)
    moved = again.one(DEPLOYMENT_PATCH, RESTART).inputs["spec"]["template"]["metadata"]
    assert moved["annotations"] == {kb.MEMBER_GENERATIONS_ANNOTATION: "worker-1=0,worker-2=4"}


def test_nothing_is_restarted_before_a_rotation_nor_on_an_existing_karmada() -> None:
    graph, _ = build(copy.deepcopy(BASE))
    assert not graph.of_type(DEPLOYMENT_PATCH)  # a first up restarts nothing
    raw = copy.deepcopy(BASE)
    raw["karmada"] |= {
        "source": "existing",
        "existing": {"kubeconfigSecret": "karmadaKubeconfig"},
        "rotation": {"worker-1": 1},
    }
    raw["karmada"].pop("apiServer")
    fleet, _ = parse_fleet(raw)
    assert kb.controller_manager_restart(fleet) is None  # its owner restarts it (docs/security.md)


# --- preflight -----------------------------------------------------------------------------------


def test_the_plan_shows_each_credential_its_access_policy_age_and_next_rotation() -> None:
    fleet, _ = load_from_file("dev")
    section = credential_section(fleet)
    assert section is not None
    rows = [dict(zip(section["columns"], r, strict=True)) for r in section["rows"]]
    assert [(r["credential"], r["cluster"]) for r in rows] == [
        ("MultiKueue worker token", "worker-1"),
        ("MultiKueue worker token", "worker-2"),
        ("Karmada member token", "worker-1"),
        ("Karmada member token", "worker-2"),
    ]
    first = rows[0]
    assert first["rotation policy"] == "every 90 days from 2026-12-03"
    assert first["next rotation"] == "2027-03-03"
    assert first["age bound"] == "none until the first rotation, 2027-03-03"
    assert "only in team-a" in first["may do"]
    assert "all 26 escalations denied" in first["may do"]
    assert rows[2]["may do"].startswith("scoped: writes 6 kinds")
    assert "only in sample" in rows[2]["may do"]


def test_the_plan_age_bound_after_a_rotation_day(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TODAY_ENV, "2027-03-10")
    fleet, _ = load_from_file("dev")
    section = credential_section(fleet)
    assert section is not None
    row = dict(zip(section["columns"], section["rows"][0], strict=True))
    assert row["generation"] == 1
    assert row["age bound"] == "7 days if `up` ran on or after 2027-03-03, else older"
    assert row["next rotation"] == "2027-06-01"


def test_without_a_schedule_the_plan_says_the_token_never_expires() -> None:
    fleet, _ = dev_fleet(dev_raw() | {"credentials": {}})
    section = credential_section(fleet)
    assert section is not None
    row = dict(zip(section["columns"], section["rows"][0], strict=True))
    assert (row["rotation policy"], row["age bound"], row["next rotation"]) == (
        "by hand (multiKueue.rotation)",
        "none (never expires)",
        "-",
    )


def edited(tmp_path: Path, raw: dict[str, Any]) -> dict[str, Any]:
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["config"]["aks-batch-fleet:fleet"] = raw
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(document))
    return snapshot("dev", root=tmp_path)


def test_the_diff_flags_each_token_the_next_up_rotates(tmp_path: Path) -> None:
    base = snapshot("dev")
    raw = dev_raw()
    raw["multiKueue"] = {"rotation": {"worker-2": 1}}
    diff = compare(base, edited(tmp_path, raw))
    flagged = [(c["key"], c["flag"], c["text"]) for s in diff["sections"] for c in s["changes"]]
    assert flagged == [
        (
            "worker-2: MultiKueue worker token",
            "rotates at next up",
            "worker-2: MultiKueue worker token: generation 0 -> 1 (rotation every 90 days from "
            "2026-12-03 -> every 90 days from 2026-12-03 + 1 by hand)",
        )
    ]


def test_the_diff_of_a_member_rotation_says_the_controller_manager_restarts(
    tmp_path: Path,
) -> None:
    base = snapshot("dev")
    raw = dev_raw()
    raw["karmada"]["rotation"] = {"worker-1": 1}
    diff = compare(base, edited(tmp_path, raw))
    (change,) = [c for s in diff["sections"] for c in s["changes"]]
    assert change["key"] == "worker-1: Karmada member token"
    assert change["flag"] == "rotates at next up"
    assert "karmada-controller-manager restarts after the Clusters move" in change["text"]


def test_a_policy_change_that_renumbers_generations_is_flagged(tmp_path: Path) -> None:
    base = snapshot("dev")
    raw = with_credentials(dev_raw(), {"rotateEveryDays": 30, "scheduleStart": "2026-10-01"})
    diff = compare(base, edited(tmp_path, raw))
    (credentials,) = [s for s in diff["sections"] if s["title"] == "Credentials"]
    assert len(credentials["changes"]) == 4
    assert all(c["flag"] == "rotates at next up" for c in credentials["changes"])
    assert "generation 0 -> 2" in credentials["changes"][0]["text"]


def test_a_later_start_in_the_same_period_changes_the_policy_but_rotates_nothing(
    tmp_path: Path,
) -> None:
    base = snapshot("dev")
    raw = with_credentials(dev_raw(), {"rotateEveryDays": 90, "scheduleStart": "2026-11-01"})
    diff = compare(base, edited(tmp_path, raw))
    (credentials,) = [s for s in diff["sections"] if s["title"] == "Credentials"]
    assert all(c["flag"] is None for c in credentials["changes"])
