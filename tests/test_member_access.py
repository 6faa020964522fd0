"""`memberAccess: scoped` does what Karmada's controllers need and nothing that escalates.

A can-i table computed from the RBAC objects the program builds for a member (checks.access
evaluates them as the API server's RBAC authorizer does). The live proof that the role is enough
(propagation, status, scaling) is tests/realtier/test_karmada.py, which joins members with these
very objects.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from builders import karmada as kb
from builders import karmada_members as km
from checks.access import (
    ESCALATIONS,
    Request,
    grants_of,
    member_access_table,
    member_subject,
    needed,
    rule_allows,
)
from checks.stack import load_from_file, parse_fleet
from config.errors import ConfigError
from config.models import FleetConfig
from testkit.shared.karmada_config import BASE


def fleet_of(**changes: Any) -> FleetConfig:
    raw = copy.deepcopy(BASE)
    raw["karmada"].update(copy.deepcopy(changes))
    return parse_fleet(raw)[0]


def table(fleet: FleetConfig) -> dict[str, bool]:
    return {str(r): ok for r, ok in member_access_table(fleet, "worker-1")}


def test_scoped_allows_everything_the_controllers_need() -> None:
    fleet = load_from_file("dev")[0]
    rows = dict(member_access_table(fleet, "worker-1"))
    assert [str(r) for r in needed(["sample"]) if not rows[r]] == []


def test_scoped_denies_every_escalation() -> None:
    fleet = load_from_file("dev")[0]
    rows = dict(member_access_table(fleet, "worker-1"))
    assert [str(r) for r in ESCALATIONS if rows[r]] == []


def test_writes_are_only_in_the_applications_namespaces() -> None:
    rows = table(load_from_file("dev")[0])
    assert rows["create uniteddeployments.apps.kruise.io -n sample"] is True
    assert rows["get secrets/x -n sample"] is True
    fleet = load_from_file("dev")[0]
    grants = grants_of(
        km.member_objects("worker-1", kb.settings_of(fleet)), "worker-1", member_subject("worker-1")
    )
    for ns in ("team-a", "default", "kube-system", "kruise-system"):
        for request in (
            Request("create", "apps.kruise.io", "uniteddeployments", ns),
            Request("get", "", "secrets", ns, "x"),
            Request("create", "", "configmaps", ns),
        ):
            assert not grants.allows(request), request
    # The informers Karmada starts are cluster-wide; Secrets are the one kind never watched.
    assert grants.allows(Request("watch", "", "configmaps"))
    assert not grants.allows(Request("watch", "", "secrets"))


def test_an_application_in_default_is_refused_under_scoped_access_with_its_key_path() -> None:
    """Scoped access labels each application namespace it creates with Pod Security baseline;
    `default` is not the stack's to create, label or delete, so it is refused, explicit or
    implied by an omitted namespace. Wildcard access (no namespaces made at all) takes it."""
    app = copy.deepcopy(BASE["karmada"]["applications"][0])
    for given in ("default", None):
        if given is None:
            app.pop("namespace", None)
        else:
            app["namespace"] = given
        raw = copy.deepcopy(BASE)
        raw["karmada"]["applications"] = [app]
        with pytest.raises(ConfigError) as refused:
            parse_fleet(raw)
        [issue] = refused.value.issues
        assert issue.path == "karmada.applications[0].namespace", issue
        assert "Pod Security" in issue.message
        assert "'default'" in issue.message
    wildcard = fleet_of(applications=[app], memberAccess="wildcard")
    assert wildcard.karmada is not None
    assert wildcard.karmada.applications[0].namespace == "default"


def test_the_wildcard_allows_every_escalation_and_preflight_says_so() -> None:
    fleet, warnings = parse_fleet(
        {
            **copy.deepcopy(BASE),
            "karmada": {**copy.deepcopy(BASE["karmada"]), "memberAccess": "wildcard"},
        }
    )
    rows = dict(member_access_table(fleet, "worker-1"))
    assert all(rows[r] for r in ESCALATIONS if r.url is None)
    (warning,) = [w for w in warnings if w.path == "karmada.memberAccess"]
    assert "cluster admin on every member" in warning.message


def test_the_scoped_member_namespace_enforces_baseline() -> None:
    fleet = load_from_file("dev")[0]
    objects = km.member_objects("worker-1", kb.settings_of(fleet), "1.33")
    (ns,) = [m.obj for m in objects if m.kind == "Namespace" and m.name == "sample"]
    labels = ns["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
    assert labels["pod-security.kubernetes.io/enforce-version"] == "v1.33"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"


def test_the_karmada_side_namespace_is_not_auto_propagated_when_scoped() -> None:
    fleet = load_from_file("dev")[0]
    (ns,) = [
        m.obj for m in kb.render_karmada(fleet) if m.target == "karmada" and m.kind == "Namespace"
    ]
    assert ns["metadata"]["labels"] == {"namespace.karmada.io/skip-auto-propagation": "true"}


@pytest.mark.parametrize(
    ("rule", "request_", "allowed"),
    [
        (
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["a"]},
            Request("get", "", "secrets", "x", "a"),
            True,
        ),
        # resourceNames never allow a list (a list names nothing).
        (
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "verbs": ["list"],
                "resourceNames": ["a"],
            },
            Request("list", "", "secrets", "x"),
            False,
        ),
        (
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            Request("escalate", "rbac.authorization.k8s.io", "clusterroles"),
            True,
        ),
        (
            {"nonResourceURLs": ["/apis/*"], "verbs": ["get"]},
            Request("get", "", "", url="/apis/apps"),
            True,
        ),
        (
            {"nonResourceURLs": ["/apis/*"], "verbs": ["get"]},
            Request("get", "", "", url="/metrics"),
            False,
        ),
        # A subresource is its own resource.
        (
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]},
            Request("create", "", "pods/exec", "x"),
            False,
        ),
    ],
)
def test_rule_semantics(rule: dict[str, list[str]], request_: Request, allowed: bool) -> None:
    assert rule_allows(rule, request_) is allowed


# --- exposure -------------------------------------------------------------------------------


def test_an_open_range_is_a_warning_wherever_it_is() -> None:
    raw = copy.deepcopy(BASE)
    raw["karmada"]["apiServer"] = {"exposure": "public", "allowedSourceRanges": ["0.0.0.0/0"]}
    raw["access"] = {"authorizedIpRanges": ["198.51.100.0/24", "0.0.0.0/0"]}
    # The manager's own ranges: the workers run virtual nodes, which take none (checks/aks.py).
    raw["clusters"][0]["access"] = {"authorizedIpRanges": ["0.0.0.0/0"]}
    _, warnings = parse_fleet(raw)
    paths = sorted(w.path for w in warnings if "every address on the Internet" in w.message)
    assert paths == [
        "access.authorizedIpRanges[1]",
        "clusters[0].access.authorizedIpRanges[0]",
        "karmada.apiServer.allowedSourceRanges[0]",
    ]


def test_dev_has_no_open_range() -> None:
    _, warnings = load_from_file("dev")
    assert [w for w in warnings if "every address on the Internet" in w.message] == []
    dev = load_from_file("dev")[0]
    assert dev.karmada is not None
    assert [str(r) for r in dev.karmada.api_server.allowed_source_ranges or []] == [
        "203.0.113.0/24"
    ]
