"""Every Kubernetes object the program applies is server-side applied with force.

A `pulumi up` killed mid-create leaves its objects co-owned by the dead run's random field
manager; without `pulumi.com/patchForce` the next change of such a field fails with an SSA
conflict against that manager (tests/realtier/test_faults_deploy.py makes that case with the real
engine). So every object the stacks register carries it (components/kube.py `owned`).
"""

from __future__ import annotations

import pytest

from constants import PATCH_FORCE
from testkit.mocks import built_stack
from testkit.repo import COMMITTED_STACKS

# Registered by the provider, not from a builder's metadata: Helm releases and the CRD file
# groups (their objects are the charts' and upstream's).
NOT_OBJECTS = ("kubernetes:helm.sh/", "kubernetes:yaml/")


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_every_object_is_applied_with_force(stack: str) -> None:
    graph = built_stack(stack).graph
    objects = [
        r
        for r in graph.resources
        if r.type.startswith("kubernetes:") and not r.type.startswith(NOT_OBJECTS)
    ]
    assert len(objects) > 50, f"{stack}: only {len(objects)} Kubernetes objects found"
    missing = sorted(
        f"{r.type} {r.name}"
        for r in objects
        if ((r.inputs.get("metadata") or {}).get("annotations") or {}).get(PATCH_FORCE) != "true"
    )
    assert not missing, f"{stack}: applied without {PATCH_FORCE}: {missing}"
