"""What preflight renders is what the program registers, for every committed stack.

Both take their objects from one composition (builders/fleet.py); this test holds the two paths
equal: the same Kubernetes objects (target API server, kind, namespace/name) and the same Helm
releases. Not compared: the pinned CRD files (a ConfigGroup of files or URLs, not rendered) and
Azure resources (no Kubernetes object).
"""

from __future__ import annotations

import pytest

from builders.fleet import render_fleet
from checks.stack import load_from_file
from testkit.mocks import built_stack
from testkit.repo import COMMITTED_STACKS

STACKS = COMMITTED_STACKS
NOT_RENDERED = ("kubernetes:yaml/v2:ConfigGroup", "kubernetes:helm.sh/v3:Release")

Key = tuple[str, str, str]


def _target(provider_ref: str) -> str:
    """The API server a resource goes to, from its provider `fleet-<cluster>-k8s` (or Karmada's)."""
    provider_name = provider_ref.split("::")[-2]
    return provider_name.removeprefix("fleet-").removesuffix("-k8s")


def registered(stack: str) -> tuple[set[Key], set[tuple[str, str]]]:
    graph = built_stack(stack).graph
    objects: set[Key] = set()
    releases: set[tuple[str, str]] = set()
    for r in graph.resources:
        if not r.type.startswith("kubernetes:") or not r.custom:
            continue
        target = _target(r.provider)
        if r.type == "kubernetes:helm.sh/v3:Release":
            releases.add((target, r.inputs["name"]))
            continue
        if r.type in NOT_RENDERED:
            continue
        meta = r.inputs["metadata"]
        name = "/".join(p for p in (meta.get("namespace"), meta["name"]) if p)
        objects.add((target, r.type.rsplit(":", 1)[-1], name))
    return objects, releases


def rendered(stack: str) -> tuple[set[Key], set[tuple[str, str]]]:
    fleet, _ = load_from_file(stack)
    manifests, releases = render_fleet(fleet)
    objects = {
        (m.target, m.kind, "/".join(p for p in (m.obj["metadata"].get("namespace"), m.name) if p))
        for m in manifests
    }
    return objects, {(r.target, r.release) for r in releases}


@pytest.mark.parametrize("stack", STACKS)
def test_preflight_renders_what_the_program_registers(stack: str) -> None:
    want_objects, want_releases = rendered(stack)
    got_objects, got_releases = registered(stack)
    assert got_objects, "the program registered no Kubernetes object"
    assert sorted(want_objects - got_objects) == [], "rendered but not registered"
    assert sorted(got_objects - want_objects) == [], "registered but not rendered"
    assert want_releases == got_releases


def test_every_committed_stack_is_compared() -> None:
    assert {"dev", "prod"} <= set(STACKS)
