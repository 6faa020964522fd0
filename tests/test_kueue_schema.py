"""Every object render_kueue emits, validated against the pinned Kueue CRDs (testkit/crdschema.py).

Stacks: dev, prod and the AKS "Kueue + cluster autoscaler" how-to's config, each against the CRDs
of its configured Kueue version, plus dev against every supported version (the objects must not
depend on the pin). CEL rules the harness cannot run on a create are listed, never dropped: the
only ones allowed are transition rules (`oldSelf`, checked by the API server on update), named
below.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from builders.manifest import Manifest
from checks.stack import load_from_file
from config.models import FleetConfig
from testkit import crdschema
from testkit.fleetvalues import render_kueue
from testkit.repo import COMMITTED_STACKS
from testkit.shared.seed_provisioning import seed_fleet
from upstream.kueue import KUEUE_GROUP, KUEUE_VERSIONS

# Update-only rules on the kinds we emit: immutability (`self == oldSelf`) and ResourceFlavor's
# topology rules. Anything else skipped is a rule nobody checked.
ALLOWED_SKIPS = {
    ("AdmissionCheck", "spec.controllerName"),
    ("LocalQueue", "spec.clusterQueue"),
    ("ResourceFlavor", "spec"),
}
_DNS_LABEL = re.compile(r"^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$")


def fleets() -> list[tuple[str, FleetConfig]]:
    dev = load_from_file("dev")[0]
    out = [(stack, load_from_file(stack)[0]) for stack in COMMITTED_STACKS]
    out.append(("seed", seed_fleet()))
    for version in KUEUE_VERSIONS:
        if version != dev.kueue.version:
            other = dev.model_copy(
                update={"kueue": dev.kueue.model_copy(update={"version": version})}
            )
            out.append((f"dev@{version}", other))
    return out


FLEETS = fleets()


def _namespace_problems(obj: dict[str, Any]) -> list[str]:
    # A core v1 object has no CRD here: check the little we emit (name, labels) by hand.
    problems: list[str] = []
    if set(obj) != {"apiVersion", "kind", "metadata"} or obj["apiVersion"] != "v1":
        problems.append(f"unexpected shape {sorted(obj)}")
    if not _DNS_LABEL.match(obj["metadata"]["name"]):
        problems.append(f"name {obj['metadata']['name']!r} is not a DNS label")
    if set(obj["metadata"]) - {"name", "labels"}:
        problems.append(f"unexpected metadata {sorted(obj['metadata'])}")
    return problems


@pytest.mark.parametrize(("label", "fleet"), FLEETS, ids=[f[0] for f in FLEETS])
def test_every_rendered_object_matches_the_pinned_crds(label: str, fleet: FleetConfig) -> None:
    manifests: list[Manifest] = render_kueue(fleet)
    assert manifests, label
    version = f"v{fleet.kueue.version}"
    failures: list[str] = []
    skipped: set[tuple[str, str, str]] = set()
    for m in manifests:
        where = f"{m.target} {m.kind}/{m.name}"
        if m.kind == "Namespace":
            failures += [f"{where}: {p}" for p in _namespace_problems(m.obj)]
            continue
        assert m.obj["apiVersion"].startswith(f"{KUEUE_GROUP}/"), where
        report = crdschema.validate(m.obj, "kueue", version)
        assert report.crd is not None, where
        failures += [f"{where}: {e}" for e in report.errors]
        failures += [f"{where}: {w}" for w in report.warnings]  # e.g. a deprecated apiVersion
        for rule in report.skipped:
            skipped.add((m.kind, rule.path, rule.category))
            if (m.kind, rule.path) not in ALLOWED_SKIPS or rule.category != "transition":
                failures.append(f"{where}: CEL rule not evaluated: {rule.rule} ({rule.reason})")
    assert not failures, "\n".join(failures)
    # Printed with -rA / -s; the session summary of conftest_crd lists them per CRD as well.
    print(f"{label}: skipped (update-only) CEL rules: {sorted(skipped)}")


def test_the_stacks_exercise_every_kind_we_emit() -> None:
    # The test above resolves each object's CRD (report.crd); this one makes sure the stacks
    # leave no builder unvalidated.
    kinds = {m.kind for _, fleet in FLEETS for m in render_kueue(fleet)}
    assert kinds == {
        "Namespace",
        "ResourceFlavor",
        "ProvisioningRequestConfig",
        "AdmissionCheck",
        "ClusterQueue",
        "LocalQueue",
    }


def test_the_v1beta1_admission_checks_list_is_rejected() -> None:
    # The v1beta1 shape, a plain list of check names: a real server's schema drops it silently.
    fleet = load_from_file("dev")[0]
    cq = next(m.obj for m in render_kueue(fleet) if m.kind == "ClusterQueue")
    broken = {**cq, "spec": {**cq["spec"], "admissionChecks": ["batch-scaleup"]}}
    report = crdschema.validate(broken, "kueue", f"v{fleet.kueue.version}")
    assert any("admissionChecks" in e for e in report.errors), report
