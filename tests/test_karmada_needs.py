"""Karmada flows like Kueue: builders.karmada.render_karmada says what each object needs, the
component applies that list, and the registered graph is the rendered one, edge for edge.

For every Karmada object (on the members and on the Karmada API server) the Kubernetes objects it
was registered to wait for are exactly the rendered objects its manifest `needs`, and each need on
something that is no rendered object (the chart release, the Kruise CRDs, a member's Kruise
release, its ACI grant) is a registered dependency too.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from builders import karmada as kb
from builders.manifest import Manifest, elsewhere
from checks.stack import load_from_file, parse_fleet
from config.loader import kruise_crd_files
from config.models import FleetConfig
from testkit.mocks import Graph, Registered, built_stack, mocked_engine, run_program
from testkit.repo import ROOT
from testkit.shared.karmada_config import BASE

Key = tuple[str, str]  # (target, object key)


def _target(r: Registered) -> str:
    """The API server of a Kubernetes resource, from its provider `fleet-<cluster>-k8s`."""
    return r.provider.split("::")[-2].removeprefix("fleet-").removesuffix("-k8s")


def _key(r: Registered) -> Key | None:
    if not r.type.startswith("kubernetes:") or not r.custom or "metadata" not in r.inputs:
        return None
    meta, kind = r.inputs["metadata"], r.type.rsplit(":", 1)[-1]
    return _target(r), "/".join(p for p in (kind, meta.get("namespace"), meta["name"]) if p)


def _qualified(m: Manifest, need: str) -> Key | str:
    """A need as (target, key) when it names an object of another API server, else as written."""
    head, _, rest = need.partition(":")
    if "/" in head or not rest or "/" not in rest:
        return m.target, need
    return head, rest


def _externals(graph: Graph, fleet: FleetConfig) -> dict[str, str]:
    """The URN of what each need on no Kubernetes object of the list stands for."""
    by_name = {r.name: r.urn for r in graph.resources}
    out = {kb.CONTROL_PLANE: by_name["fleet-karmada-release"]}
    out[kb.KRUISE_CRDS] = by_name["fleet-karmada-kruise-crds"]
    for member in [c.name for c in kb.member_clusters(fleet)]:
        if f"fleet-karmada-{member}-kruise-release" in by_name:
            out[kb.kruise_on(member)] = by_name[f"fleet-karmada-{member}-kruise-release"]
        if f"fleet-{member}-aci-network" in by_name:
            out[kb.virtual_node_grant(member)] = by_name[f"fleet-{member}-aci-network"]
    return out


def assert_registered_as_rendered(graph: Graph, fleet: FleetConfig) -> None:
    rendered = kb.render_karmada(fleet)
    registered = {k: r for r in graph.resources if (k := _key(r)) is not None}
    urn_of = {k: r.urn for k, r in registered.items()}
    externals = _externals(graph, fleet)
    keys = {(m.target, m.key) for m in rendered}
    for m in rendered:
        r = registered[(m.target, m.key)]
        needs = [_qualified(m, n) for n in m.needs]
        wanted = {urn_of[n] for n in needs if isinstance(n, tuple) and n in keys}
        got = {d for d in r.dependencies if d in {urn_of[k] for k in keys}}
        assert got == wanted, f"{m.target} {m.key}: waits for {got ^ wanted} unlike its needs"
        outside = {externals[n] for n in m.needs if n in externals}
        missing = outside - set(r.dependencies)
        assert not missing, f"{m.target} {m.key}: does not wait for {missing}"


def test_dev_karmada_objects_wait_for_exactly_what_they_need() -> None:
    fleet, _ = load_from_file("dev")
    assert_registered_as_rendered(built_stack("dev").graph, fleet)


@pytest.mark.parametrize(
    "change",
    [
        {"memberAccess": "wildcard", "failover": {"enabled": True}, "rotation": {"worker-1": 2}},
        {"kruise": {"install": "manifests-only"}},
    ],
    ids=["wildcard-failover-rotated", "kruise-manifests-only"],
)
def test_karmada_variants_wait_for_exactly_what_they_need(change: dict[str, Any]) -> None:
    from components.fleet import Fleet, FleetArgs  # noqa: PLC0415 - after the mocks are set

    raw = copy.deepcopy(BASE)
    raw["karmada"] |= change
    fleet, _ = parse_fleet(raw)
    with mocked_engine() as graph:
        files = kruise_crd_files(fleet, ROOT)
        run_program(
            lambda: Fleet("fleet", FleetArgs(config=fleet, stack="test", kruise_crd_files=files))
        )
    assert_registered_as_rendered(graph, fleet)


def test_a_member_credential_needs_its_filled_token_secret() -> None:
    """The credential Secrets on Karmada are built from the member's token Secret, which the
    provider waits for until the token controller filled it: the manifest names it."""
    fleet, _ = load_from_file("dev")
    rendered = {(m.target, m.key): m for m in kb.render_karmada(fleet)}
    credential = rendered[("karmada", "Secret/karmada-cluster/worker-1")]
    token_key = "Secret/karmada-cluster/karmada-worker-1"
    assert elsewhere("worker-1", token_key) in credential.needs
    token = rendered[("worker-1", token_key)]
    assert token.obj["metadata"]["annotations"]["pulumi.com/waitFor"] == "jsonpath={.data.token}"
