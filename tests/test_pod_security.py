"""Team namespaces enforce a Pod Security Standard; what the project ships passes it.

Labels and levels: k8s.io/pod-security-admission (api/constants.go: `pod-security.kubernetes.io/
{enforce,warn,audit}[-version]`, levels privileged|baseline|restricted, versions `latest` or
`v1.N`). The API server's own refusal is proven in tests/realtier/test_pod_security.py.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders.fleet import kueue_objects
from checks.stack import load_from_file, parse_fleet
from config.errors import ConfigError
from testkit.realtier.e2e import e2e_raw
from testkit.realtier.shared.faults_deploy import faults_job
from testkit.realtier.shared.kueue_dispatch import dispatch_job
from testkit.realtier.shared.provisioning_gate import Gated
from testkit.realtier.shared.provisioning_gate import job as gated_job
from testkit.realtier.shared.twin_jobs import job_for
from testkit.realtier.twin import Submission
from testkit.repo import COMMITTED_STACKS, ROOT
from upstream.k8s import minor_of
from upstream.podsecurity import LABEL_PREFIX, pod_spec_of, policy_version, violations

ENFORCE = f"{LABEL_PREFIX}enforce"


def namespaces(raw_or_stack: dict[str, Any] | str) -> dict[tuple[str, str], dict[str, str]]:
    fleet = (
        load_from_file(raw_or_stack)[0]
        if isinstance(raw_or_stack, str)
        else parse_fleet(raw_or_stack)[0]
    )
    return {
        (cluster, m.obj["metadata"]["name"]): m.obj["metadata"]["labels"]
        for cluster, objects in kueue_objects(fleet).items()
        for m in objects
        if m.kind == "Namespace"
    }


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_every_team_namespace_enforces_restricted_by_default(stack: str) -> None:
    found = namespaces(stack)
    # dev: the manager's team-a and each worker's (its own and the mirrored one alike).
    assert {cluster for cluster, _ in found} >= {"manager", "worker-1", "worker-2"}
    fleet = load_from_file(stack)[0]
    for (cluster, _), labels in found.items():
        # Pinned to the cluster's minor, as `v1.N`.
        major, minor = minor_of(
            fleet.version_of(next(c for c in fleet.clusters if c.name == cluster))
        )
        version = f"v{major}.{minor}"
        assert labels[ENFORCE] == "restricted"
        assert labels[f"{ENFORCE}-version"] == version
        for mode in ("warn", "audit"):
            assert labels[f"{LABEL_PREFIX}{mode}"] == "restricted"
            assert labels[f"{LABEL_PREFIX}{mode}-version"] == version


def _dev_raw() -> dict[str, Any]:
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    raw = copy.deepcopy(yaml.safe_load(text)["config"]["aks-batch-fleet:fleet"])
    raw["location"] = "westeurope"
    return raw


def test_a_namespace_may_choose_its_level_and_mirrors_carry_it() -> None:
    raw = _dev_raw()
    raw["clusters"][0]["queues"]["namespaces"][0]["podSecurity"] = "baseline"
    raw["clusters"][0]["queues"]["namespaces"][0]["labels"] = {"team": "a"}
    found = namespaces(raw)
    assert found["manager", "team-a"][ENFORCE] == "baseline"
    assert found["manager", "team-a"]["team"] == "a"
    # The workers declare team-a themselves (dev's anchor): their own setting stays restricted.
    assert found["worker-1", "team-a"][ENFORCE] == "restricted"
    assert found["manager", "team-a"][f"{LABEL_PREFIX}warn"] == "restricted"


def test_an_existing_cluster_gets_the_latest_policy_version() -> None:
    found = namespaces(e2e_raw())
    assert found
    assert {labels[f"{ENFORCE}-version"] for labels in found.values()} == {"latest"}
    assert {labels[ENFORCE] for labels in found.values()} == {"restricted"}


def _errors(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_fleet(raw)
    return [str(i) for i in info.value.errors]


def test_a_bad_level_names_its_key_and_the_choices() -> None:
    raw = _dev_raw()
    raw["clusters"][0]["queues"]["namespaces"][0]["podSecurity"] = "strict"
    (error,) = [e for e in _errors(raw) if "podSecurity" in e]
    assert error.startswith("clusters[0].queues.namespaces[0].podSecurity:")
    assert "'privileged', 'baseline' or 'restricted'" in error


def test_pod_security_labels_by_hand_are_refused() -> None:
    raw = _dev_raw()
    raw["clusters"][0]["queues"]["namespaces"][0]["labels"] = {ENFORCE: "privileged"}
    errors = _errors(raw)
    assert any(
        e.startswith("clusters[0].queues.namespaces[0]") and "podSecurity" in e for e in errors
    ), errors


# --- what the checker refuses (the restricted profile, check by check) ------------------------

GOOD: dict[str, Any] = {
    "securityContext": {
        "runAsNonRoot": True,
        "runAsUser": 65534,
        "seccompProfile": {"type": "RuntimeDefault"},
    },
    "containers": [
        {
            "name": "main",
            "image": "x",
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
            },
        }
    ],
}


def _bad(change: str) -> dict[str, Any]:
    spec = copy.deepcopy(GOOD)
    c = spec["containers"][0]
    match change:
        case "privileged":
            c["securityContext"]["privileged"] = True
        case "hostNetwork":
            spec["hostNetwork"] = True
        case "hostPath":
            spec["volumes"] = [{"name": "root", "hostPath": {"path": "/"}}]
        case "hostPort":
            c["ports"] = [{"containerPort": 80, "hostPort": 80}]
        case "sysAdmin":
            c["securityContext"]["capabilities"]["add"] = ["SYS_ADMIN"]
        case "escalation":
            del c["securityContext"]["allowPrivilegeEscalation"]
        case "root":
            del spec["securityContext"]["runAsNonRoot"]
        case "uid0":
            c["securityContext"]["runAsUser"] = 0
        case "seccomp":
            del spec["securityContext"]["seccompProfile"]
        case "capabilities":
            del c["securityContext"]["capabilities"]
        case _:
            raise AssertionError(change)
    return spec


BASELINE_BREAKS = ("privileged", "hostNetwork", "hostPath", "hostPort", "sysAdmin")
RESTRICTED_ONLY = ("escalation", "root", "uid0", "seccomp", "capabilities")


def test_the_checker_admits_the_restricted_shape() -> None:
    assert violations(GOOD, "restricted") == []


@pytest.mark.parametrize("change", BASELINE_BREAKS)
def test_baseline_refuses_what_makes_a_pod_privileged(change: str) -> None:
    assert violations(_bad(change), "baseline")
    assert violations(_bad(change), "restricted")
    assert violations(_bad(change), "privileged") == []


@pytest.mark.parametrize("change", RESTRICTED_ONLY)
def test_restricted_refuses_more_than_baseline(change: str) -> None:
    assert violations(_bad(change), "baseline") == []
    assert violations(_bad(change), "restricted")


# --- what the project ships passes restricted ----------------------------------------------


@pytest.mark.parametrize(
    "path", sorted((ROOT / "examples").glob("*job*.yaml")), ids=lambda p: p.name
)
def test_example_jobs_pass_restricted(path: Path) -> None:
    job = yaml.safe_load(path.read_text())
    spec = pod_spec_of(job)
    assert spec is not None
    assert violations(spec, "restricted") == []


SUB = Submission("manager", "team-a", "team-a", "team-a", dispatched=True, gpus=0)


def _gated() -> Gated:
    fleet = load_from_file("dev")[0]
    pool = fleet.clusters[1].pools[0]
    return Gated("worker-1", "team-a", "team-a", "team-a", pool, node_cpu_millis=3860)


@pytest.mark.parametrize(
    "make",
    [
        lambda: job_for(SUB, "j"),
        dispatch_job,
        lambda: faults_job("j"),
        lambda: gated_job(_gated(), "j", 2),
    ],
    ids=["twin_jobs", "kueue_dispatch", "faults_deploy", "provisioning_gate"],
)
def test_real_tier_jobs_pass_restricted(make: Any) -> None:
    """Every Job the real tier submits into a team namespace would be admitted there."""
    spec = pod_spec_of(make())
    assert spec is not None
    assert violations(spec, "restricted") == []


def test_the_policy_version_is_the_clusters_minor_else_latest() -> None:
    assert policy_version("1.36") == policy_version("1.36.2") == "v1.36"
    assert policy_version(None) == policy_version("") == "latest"
