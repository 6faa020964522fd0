"""A real API server's authorizer gives the Azure Monitor add-on's ServiceAccount `get /metrics`
(what Kueue's metrics endpoint asks in its SubjectAccessReview) through the objects the program
renders with `monitoring.azureMonitor.enabled`, and nothing else; the ConfigMap is accepted in
kube-system. Applied for real on one plane, checked by impersonation, then deleted."""

from __future__ import annotations

import time

import pytest

from builders.monitoring import monitoring_objects
from checks.stack import load_from_file
from testkit.realtier.harness import ControlPlane, Report, apply
from upstream.azure_monitor import AMA_NAMESPACE, AMA_SERVICE_ACCOUNT

pytestmark = pytest.mark.real

WORKER = "worker-1"
SCRAPER = f"system:serviceaccount:{AMA_NAMESPACE}:{AMA_SERVICE_ACCOUNT}"
# (verb, what, as whom, expected): the grant, and what it must not reach.
CHECKS: tuple[tuple[str, str, str, bool], ...] = (
    ("get", "/metrics", SCRAPER, True),
    ("post", "/metrics", SCRAPER, False),
    ("get", "/debug/pprof/", SCRAPER, False),
    ("list", "pods", SCRAPER, False),
    ("get", "configmaps", SCRAPER, False),
    ("list", "secrets", SCRAPER, False),
    # Another ServiceAccount of kube-system gets nothing from the binding.
    ("get", "/metrics", f"system:serviceaccount:{AMA_NAMESPACE}:default", False),
)


def _can_i(plane: ControlPlane, verb: str, what: str, who: str) -> str:
    args = ["auth", "can-i", verb, what, f"--as={who}"]
    if not what.startswith("/"):
        args.append("--all-namespaces")
    result = plane.kubectl(*args, check=False)
    return result.stdout.strip() or result.stderr.strip()


def test_the_scrapers_binding_grants_get_metrics_and_nothing_else(
    planes: dict[str, ControlPlane], report: Report
) -> None:
    fleet, _ = load_from_file("prod")
    assert fleet.monitoring.azure_monitor.enabled, "prod opts in (Pulumi.prod.yaml monitoring)"
    objects = [m.obj for m in monitoring_objects(fleet, fleet.clusters[0])]
    plane = planes[WORKER]
    t0 = time.monotonic()
    applied = apply(plane, objects)
    try:
        assert not applied.rejected, f"refused {applied.rejected}: {applied.stderr}"
        wrong = []
        for verb, what, who, want in CHECKS:
            got = _can_i(plane, verb, what, who)
            if got != ("yes" if want else "no"):
                wrong.append(
                    f"can-i {verb} {what} as {who}: wanted {want}, the server said {got!r}"
                )
        assert not wrong, "\n".join(wrong)
    finally:
        for obj in reversed(objects):
            meta = obj["metadata"]
            ns = [f"--namespace={meta['namespace']}"] if "namespace" in meta else []
            plane.kubectl("delete", obj["kind"], meta["name"], *ns, "--wait=false", check=False)
    report(
        f"scraper RBAC on {WORKER}'s API server: {len(objects)} objects applied, "
        f"{len(CHECKS)} can-i answers as expected in {time.monotonic() - t0:.1f}s"
    )
