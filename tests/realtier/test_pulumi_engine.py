"""`pulumi up` / `destroy` of the dev stack's twin by the real engine against three loopback planes.

The stack is the committed `Pulumi.dev.yaml` as its twin deploys it (testkit/realtier/twin.py
`twin_raw`: each cluster `source: existing`, manifests-only Kueue, no Karmada), with two knobs
set by these tests: `multiKueue.connectTimeoutSeconds: 30` (a refused credential fails `up` in
30 s, not 5 minutes) and `multiKueue.rotation`, which the rotation tests turn. The engine is
testkit/realtier/engine.py's. A real Kueue runs beside each plane, so the
`pulumi.com/waitFor: condition=Active` annotations on MultiKueueClusters, AdmissionChecks and
ClusterQueues resolve only when Kueue really activates them (the workers' provisioning gate
included: the ProvisioningRequest CRD is served before Kueue starts). No nodes: these tests judge
the deploy, not jobs (tests/realtier/test_twin_jobs.py runs those).

Own planes (not the session's): the session's planes hold objects applied by the other tests,
which the engine would have to adopt, and `destroy` must be judged on clusters only it touched.
The Kueue CRDs are applied before the engine runs because a Kueue manager exits when its CRDs
are not served at start; the engine's server-side apply then adopts them as its own.
"""

from __future__ import annotations

import base64
import json
import re
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import pytest
from pulumi import automation as auto

from constants import MULTIKUEUE_ADMISSION_CHECK, PROJECT
from testkit.realtier.crds import install_crds, kueue_crd_paths
from testkit.realtier.engine import EngineRun, configure, find_engine, workspace
from testkit.realtier.faults import condition, get_json, items, wait_for
from testkit.realtier.harness import (
    PLANES,
    ControlPlane,
    Report,
    Tools,
    apply,
    make_signing_key,
    start_all,
    stop_all,
)
from testkit.realtier.kueue import (
    KueueManager,
    kueue_binary,
    metrics_certs,
    start_kueues,
    stop_kueues,
    wait_for_token,
)
from testkit.realtier.pulumi_cli import op_counts
from testkit.realtier.shared.twin_jobs import job_for
from testkit.realtier.twin import Submission, load_stack
from testkit.realtier.twin_engine import stack_raw
from testkit.realtier.twin_run import provisioning_crd
from upstream.kueue import KUEUE_NAMESPACE, SERVICE_ACCOUNT

# Fresh planes + up + no-op up + two rotations + destroy: ~3.5 min on 2 cores. They run with the
# rest of the tier whenever the tool cache exists; `-m "real and not slow"` leaves them out.
pytestmark = [pytest.mark.real, pytest.mark.slow]

STACK: Final = "dev"
TEAM: Final = "team-a"  # dev's team, dispatched from the manager to both workers
CONNECT_TIMEOUT: Final = 30
KUEUE_GROUP: Final = "kueue.x-k8s.io"
IN_USE_FINALIZER: Final = "kueue.x-k8s.io/resource-in-use"
# Measured: destroy with jobs ~70-110 s on 2 cores; the namespaces (their Jobs and Workloads)
# go first.
DESTROY_TIMEOUT: Final = 300.0
DELETING_POLL: Final = 0.5
# How long an object may sit in Kueue's in-use deadlock before the test breaks it.
STUCK_GRACE: Final = 20.0
JOBS: Final = 3  # team-a Jobs holding quota when destroy starts
KUEUE_API: Final = "/apis/kueue.x-k8s.io/v1beta2"
# How long the API server may take to refuse a token whose Secret `up` deleted (informer cache).
REVOKE_TIMEOUT: Final = 15.0
# The worker whose credential rotation is broken on purpose.
BROKEN: Final = "worker-1"


@pytest.fixture(scope="module")
def engine_planes(
    tools: Tools, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, ControlPlane]]:
    """Three fresh planes with the stack's Kueue CRDs, the ProvisioningRequest CRD and a Kueue
    each; always stopped."""
    binary, crd = kueue_binary(), provisioning_crd()
    if binary is None or crd is None:
        pytest.skip("real tier: kueue not built")
    stack = load_stack(STACK)
    assert tuple(c.name for c in stack.clusters) == PLANES, "the planes are the stack's clusters"
    root = tmp_path_factory.mktemp("engine")
    planes = {name: ControlPlane(name, root / name, tools) for name in PLANES}
    managers: list[KueueManager] = []
    with metrics_certs(tools.openssl):
        try:
            start_all(planes.values())
            files = [*kueue_crd_paths(stack), crd]
            for plane in planes.values():
                install_crds(plane, files)
            managers = [
                KueueManager(
                    p, binary, root / f"kueue-{p.name}", frameworks=tuple(stack.kueue.frameworks)
                )
                for p in planes.values()
            ]
            start_kueues(managers, tools.openssl)
            yield planes
        finally:
            try:
                stop_kueues(managers)
            finally:
                stop_all(planes.values())


def engine_stack(planes: Mapping[str, ControlPlane], work: Path) -> EngineRun:
    """The dev twin's stack on `planes`, configured, nothing deployed yet."""
    engine, why = find_engine()
    if engine is None:
        pytest.skip(f"real tier: {why}")
    run = workspace(STACK, work, engine)
    set_fleet(run, planes)
    return run


def set_fleet(
    run: EngineRun, planes: Mapping[str, ControlPlane], rotation: Mapping[str, int] | None = None
) -> None:
    """The dev twin's fleet as the stack's config, with credential generations per worker."""
    raw = stack_raw(STACK)
    raw["multiKueue"] = {**raw.get("multiKueue", {}), "connectTimeoutSeconds": CONNECT_TIMEOUT}
    if rotation:
        raw["multiKueue"]["rotation"] = dict(rotation)
    configure(run, {n: p.kubeconfig for n, p in planes.items()}, raw)


def kueue_leftovers(plane: ControlPlane) -> list[str]:
    """Kueue CRDs or worker credentials still on the plane after destroy."""
    out = plane.kubectl(
        "get",
        "crd,serviceaccounts,clusterroles,clusterrolebindings,secrets,namespaces",
        "--all-namespaces",
        "-o",
        "name",
    ).stdout.split()
    return [
        name
        for name in out
        if KUEUE_GROUP in name
        or "multikueue" in name
        or name in {f"namespace/{TEAM}", "namespace/kueue-system"}
    ]


@pytest.fixture(scope="module")
def run(
    engine_planes: dict[str, ControlPlane], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EngineRun]:
    shared = engine_stack(engine_planes, tmp_path_factory.mktemp("pulumi"))
    yield shared
    shared.save()


def test_pulumi_up_creates_the_stack_and_a_second_up_is_a_noop(
    run: EngineRun, report: Report
) -> None:
    t0 = time.monotonic()
    up = run.stack.up(on_output=run.add, color="never")
    up_seconds = time.monotonic() - t0
    changes = op_counts(up.summary.resource_changes)
    assert up.summary.result == "succeeded", run.tail()
    assert set(changes) == {"create"}, changes
    # The credential proofs are reads (not counted as changes), one per worker, in the output.
    output = "\n".join(run.log)
    proofs = [
        w
        for w in ("worker-1", "worker-2")
        if f"read {PROOF_TYPE} {PROJECT}-multikueue-manager-{w}-proof" in output
    ]
    assert proofs == ["worker-1", "worker-2"], run.tail()
    created = changes["create"]

    t1 = time.monotonic()
    again = run.stack.up(on_output=run.add, color="never")
    again_seconds = time.monotonic() - t1
    second = op_counts(again.summary.resource_changes)
    # The proofs read again on every `up`, and a read already in the state counts as "read".
    assert second.pop("read", 0) == len(proofs), second
    assert second == {"same": created}, f"second up is not a no-op: {second}\n{run.tail()}"
    run.created = created
    report(
        f"pulumi up (real engine, {STACK} twin on 3 fresh planes, Kueue running): {created} "
        f"resources created in {up_seconds:.1f}s; second up {again_seconds:.1f}s, all "
        f"{created} same"
    )


def _active(manager: ControlPlane, worker: str) -> dict[str, Any]:
    """The manager's MultiKueueCluster `worker`: its generation and its Active condition."""
    status, body = manager.get(f"/apis/{KUEUE_GROUP}/v1beta2/multikueueclusters/{worker}")
    assert status == 200, (status, body[:300])
    obj = json.loads(body)
    conditions = (obj.get("status") or {}).get("conditions") or []
    active = next((c for c in conditions if c.get("type") == "Active"), {})
    return {"generation": obj["metadata"].get("generation"), **active}


# A failed update's per-resource diagnostics: "  <type> (<name>):", any "    warning: ..." lines,
# then "    error: ..." lines.
_DIAGNOSTIC = re.compile(
    r"^ +(?P<resource>\S+ \([^)]+\)):\n(?: +warning: .*\n)* +error: (?P<text>.*(?:\n +\t.*)*)",
    re.MULTILINE,
)
MKC_TYPE: Final = f"kubernetes:{KUEUE_GROUP}/v1beta2:MultiKueueCluster"


def _errored(message: str) -> dict[str, str]:
    """Resource ("<type> (<name>)") -> its error text, from the engine's failure message."""
    return {m["resource"]: m["text"] for m in _DIAGNOSTIC.finditer(message)}


PROOF_TYPE: Final = "kubernetes:core/v1:ServiceAccount"


def _location(manager: ControlPlane, worker: str) -> str:
    """The Secret the manager's MultiKueueCluster `worker` points Kueue at."""
    status, body = manager.get(f"/apis/{KUEUE_GROUP}/v1beta2/multikueueclusters/{worker}")
    assert status == 200, (status, body[:300])
    return json.loads(body)["spec"]["clusterSource"]["kubeConfig"]["location"]


def _secrets(plane: ControlPlane, containing: str) -> list[str]:
    out = plane.kubectl("get", "secrets", "-n", "kueue-system", "-o", "name").stdout.split()
    return sorted(name.removeprefix("secret/") for name in out if containing in name)


def _worker_token_secrets(plane: ControlPlane) -> list[str]:
    return _secrets(plane, "multikueue-sa-token")


def _manager_kubeconfig_secrets(plane: ControlPlane) -> list[str]:
    return _secrets(plane, "-kubeconfig-")


# ---- retiring a worker ---------------------------------------------------------------------------

RETIRED: Final = "worker-2"
PROBE: Final = "retire-probe"
GUARD_TYPE: Final = "pulumi-python:dynamic:Resource"


def _probe_workload(manager: ControlPlane, worker: str) -> str:
    """A manager Workload with `status.clusterName: worker`, as Kueue records one admitted there.

    These planes have no nodes, so no job is admitted on a worker: the field is set by hand on a
    Workload whose LocalQueue does not exist (Kueue leaves it pending and the field alone).
    test_worker_drain.py reads the same field on Workloads real Kueue admitted on a worker."""
    workload = {
        "apiVersion": f"{KUEUE_GROUP}/v1beta2",
        "kind": "Workload",
        "metadata": {"name": PROBE, "namespace": "default"},
        "spec": {
            "queueName": "no-such-queue",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox"}],
                        }
                    },
                }
            ],
        },
    }
    applied = apply(manager, [workload])
    assert not applied.rejected, applied.stderr
    manager.kubectl(
        "patch",
        "workloads.kueue.x-k8s.io",
        PROBE,
        "-n",
        "default",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"clusterName": worker}}),
    )
    return f"default/{PROBE}"


def _config_clusters(manager: ControlPlane) -> list[str]:
    status, body = manager.get(f"/apis/{KUEUE_GROUP}/v1beta2/multikueueconfigs/multikueue")
    assert status == 200, (status, body[:300])
    return list(json.loads(body)["spec"]["clusters"])


def _linked(manager: ControlPlane, worker: str) -> dict[str, bool]:
    """What links the manager to `worker`: its MultiKueueCluster, its kubeconfig Secret, its
    place in the MultiKueueConfig."""
    status, _ = manager.get(f"/apis/{KUEUE_GROUP}/v1beta2/multikueueclusters/{worker}")
    return {
        "MultiKueueCluster": status == 200,
        "kubeconfig Secret": any(worker in s for s in _manager_kubeconfig_secrets(manager)),
        "in MultiKueueConfig": worker in _config_clusters(manager),
    }


def test_removing_a_worker_with_admitted_work_is_refused_until_it_is_empty(
    run: EngineRun, engine_planes: dict[str, ControlPlane], report: Report
) -> None:
    """Take worker-2 out of `multiKueue.workers` (its credentials, MultiKueueCluster and place
    in the MultiKueueConfig go) while the manager has a Workload admitted there: `up` fails at
    the RetireGuard, naming the Workload and the drain step, before anything changes; preview
    passes (it reads nothing). Once the Workload is gone, `up` removes the link and leaves
    nothing of it; putting worker-2 back links it again (the later tests start from there)."""
    if run.created is None:
        pytest.skip("pulumi up did not pass")
    manager, retired = engine_planes["manager"], engine_planes[RETIRED]
    all_linked = {"MultiKueueCluster": True, "kubeconfig Secret": True, "in MultiKueueConfig": True}
    assert _linked(manager, RETIRED) == all_linked
    probe = _probe_workload(manager, RETIRED)
    workload = f"/apis/{KUEUE_GROUP}/v1beta2/namespaces/default/workloads/{PROBE}"
    assert (get_json(manager, workload) or {}).get("status", {}).get("clusterName") == RETIRED

    raw = stack_raw(STACK)
    raw["multiKueue"] = {**raw.get("multiKueue", {}), "connectTimeoutSeconds": CONNECT_TIMEOUT}
    others = [
        c.name for c in load_stack(STACK).clusters if c.role == "worker" and c.name != RETIRED
    ]
    raw["multiKueue"]["workers"] = others
    configure(run, {n: p.kubeconfig for n, p in engine_planes.items()}, raw)
    t0 = time.monotonic()
    preview = run.stack.preview(color="never")
    t_preview = time.monotonic() - t0
    planned = op_counts(preview.change_summary)
    assert planned.get("delete", 0) > 0, planned
    assert planned.get("update", 0) > 0, planned

    t1 = time.monotonic()
    with pytest.raises(auto.CommandError) as failed:
        run.stack.up(on_output=run.add, color="never")
    t_refused = time.monotonic() - t1
    message = " ".join(str(failed.value).split())
    for words in (probe, RETIRED, "multiKueue.drain", "multiKueue.forceRetire", "Nothing was"):
        assert words in message, f"the refusal does not say {words!r}: {message[-1500:]}"
    errored = [r for r in _errored(str(failed.value)) if not r.startswith("pulumi:pulumi:Stack")]
    assert errored == [f"{GUARD_TYPE} ({PROJECT}-multikueue-manager-retire-guard)"], errored
    assert _linked(manager, RETIRED) == all_linked, "the refused up changed the link"
    assert _worker_token_secrets(retired) == ["multikueue-sa-token-0"], "refused up deleted"
    assert _active(manager, RETIRED).get("status") == "True"

    # Empty now: the same up removes the link and nothing of it stays.
    manager.kubectl("delete", "workloads.kueue.x-k8s.io", PROBE, "-n", "default")
    t2 = time.monotonic()
    up = run.stack.up(on_output=run.add, color="never")
    t_removed = time.monotonic() - t2
    assert up.summary.result == "succeeded", run.tail()
    removed = op_counts(up.summary.resource_changes)
    assert _linked(manager, RETIRED) == dict.fromkeys(all_linked, False), run.tail()
    assert _worker_token_secrets(retired) == [], "worker-2's MultiKueue token left behind"
    assert items(manager, f"/apis/{KUEUE_GROUP}/v1beta2/workloads") == []

    # Back as it was, for the tests after this one.
    set_fleet(run, engine_planes)
    t3 = time.monotonic()
    back = run.stack.up(on_output=run.add, color="never")
    t_back = time.monotonic() - t3
    assert back.summary.result == "succeeded", run.tail()
    assert _linked(manager, RETIRED) == all_linked
    report(
        f"retire {RETIRED} (out of multiKueue.workers) with a Workload admitted there: preview "
        f"{t_preview:.1f}s plans {planned} and reads nothing; up refused at the guard in "
        f"{t_refused:.1f}s, nothing changed; once empty, up {t_removed:.1f}s ({removed}), no "
        f"MultiKueueCluster, kubeconfig Secret or token left; linked back in {t_back:.1f}s"
    )


def test_rotation_to_a_revoked_token_fails_up_naming_the_worker(
    run: EngineRun,
    engine_planes: dict[str, ControlPlane],
    tools: Tools,
    tmp_path: Path,
    report: Report,
) -> None:
    """Rotate worker-1's credential while its token controller signs with a key its API server
    does not trust: the new token is refused as a revoked one is. The credential proof (a read
    with the new kubeconfig) fails `pulumi up`, naming worker-1, before the manager stores the
    kubeconfig: Kueue keeps the old Secret and stays connected."""
    if run.created is None:
        pytest.skip("pulumi up did not pass: nothing to rotate")
    worker, manager = engine_planes[BROKEN], engine_planes["manager"]
    foreign = make_signing_key(tools.openssl, tmp_path / "untrusted-sa.key")
    restart = worker.restart_controller_manager(signing_key=foreign)
    set_fleet(run, engine_planes, rotation={BROKEN: 1})
    t0 = time.monotonic()
    with pytest.raises(auto.CommandError) as failed:
        run.stack.up(on_output=run.add, color="never")
    seconds = time.monotonic() - t0
    errored = {
        resource: text
        for resource, text in _errored(str(failed.value)).items()
        if not resource.startswith("pulumi:pulumi:Stack")  # "update failed", the sum of it
    }
    # Only worker-1's proof failed: the resource's name names the worker.
    assert list(errored) == [f"{PROOF_TYPE} ({PROJECT}-multikueue-manager-{BROKEN}-proof)"], errored
    (error,) = errored.values()
    assert "unreachable cluster" in error, error
    # The provider's reason, in the engine's output: client-go's words for a 401 from worker-1.
    assert "asked for the client to provide credentials" in str(failed.value), str(failed.value)
    # The manager never got the refused credential; Kueue still uses generation 0's Secret.
    assert _manager_kubeconfig_secrets(manager) == [
        f"multikueue-{BROKEN}-kubeconfig-0",
        "multikueue-worker-2-kubeconfig-0",
    ]
    kept = _active(manager, BROKEN)
    assert (kept.get("status"), kept.get("reason")) == ("True", "Active"), kept
    assert _location(manager, BROKEN) == f"multikueue-{BROKEN}-kubeconfig-0"
    assert _active(manager, "worker-2").get("status") == "True"
    report(
        f"rotation of {BROKEN} to a token its API server refuses (signing key not trusted; "
        f"controller manager restarted in {restart:.1f}s): pulumi up failed after {seconds:.1f}s "
        f"at the credential proof: {' '.join(error.split())[:120]}; Kueue kept the old Secret: "
        f"{kept.get('reason')}"
    )


def test_rotation_to_a_good_token_recovers(
    run: EngineRun, engine_planes: dict[str, ControlPlane], report: Report
) -> None:
    """The signer fixed, the next generation connects; every older token Secret is deleted."""
    if run.created is None:
        pytest.skip("pulumi up did not pass: nothing to rotate")
    worker, manager = engine_planes[BROKEN], engine_planes["manager"]
    worker.restart_controller_manager()
    set_fleet(run, engine_planes, rotation={BROKEN: 2})
    t0 = time.monotonic()
    up = run.stack.up(on_output=run.add, color="never")
    seconds = time.monotonic() - t0
    assert up.summary.result == "succeeded", run.tail()
    changes = op_counts(up.summary.resource_changes)
    fixed = _active(manager, BROKEN)
    assert (fixed.get("status"), fixed.get("reason")) == ("True", "Active"), fixed
    assert _location(manager, BROKEN) == f"multikueue-{BROKEN}-kubeconfig-2"
    assert _worker_token_secrets(worker) == ["multikueue-sa-token-2"]
    assert _manager_kubeconfig_secrets(manager) == [
        f"multikueue-{BROKEN}-kubeconfig-2",
        "multikueue-worker-2-kubeconfig-0",
    ]
    report(f"rotation of {BROKEN} to a good token: pulumi up {seconds:.1f}s, {changes}")


# The worker rotated from one good token to another (generation 0 -> 1).
ROTATED: Final = "worker-2"


def _whoami(plane: ControlPlane, token: str) -> tuple[int, str]:
    """POST a SelfSubjectReview with a bearer token: (HTTP status, the username it names)."""
    body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    request = urllib.request.Request(
        plane.url + "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        data=body.encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    context = ssl.create_default_context(cafile=str(plane.ca_cert))  # no client certificate
    try:
        with urllib.request.urlopen(request, context=context, timeout=5.0) as response:
            user = json.loads(response.read())["status"]["userInfo"]["username"]
            return int(response.status), user
    except urllib.error.HTTPError as exc:
        return int(exc.code), ""


def _token(plane: ControlPlane, secret: str) -> str:
    return base64.b64decode(wait_for_token(plane, secret)["token"]).decode()


def test_rotation_from_a_good_token_to_a_good_token_passes_up(
    run: EngineRun, engine_planes: dict[str, ControlPlane], report: Report
) -> None:
    """worker-2 rotated 0 -> 1 with both tokens good: Kueue v0.19.2 does not rewrite an unchanged
    Active condition (observedGeneration stays old), so the wait must not depend on it. `up`
    succeeds, Kueue is Active on the new Secret and the old token is refused afterwards."""
    if run.created is None:
        pytest.skip("pulumi up did not pass: nothing to rotate")
    worker, manager = engine_planes[ROTATED], engine_planes["manager"]
    old = _token(worker, "multikueue-sa-token-0")
    account = f"system:serviceaccount:{KUEUE_NAMESPACE}:{SERVICE_ACCOUNT}"
    assert _whoami(worker, old) == (201, account)
    set_fleet(run, engine_planes, rotation={BROKEN: 2, ROTATED: 1})
    t0 = time.monotonic()
    try:
        up = run.stack.up(on_output=run.add, color="never")
    except auto.CommandError as failed:
        seconds = time.monotonic() - t0
        raise AssertionError(
            f"good -> good rotation of {ROTATED} failed up after {seconds:.1f}s: "
            f"{_errored(str(failed))}; Kueue: {_active(manager, ROTATED)}"
        ) from None
    seconds = time.monotonic() - t0
    assert up.summary.result == "succeeded", run.tail()
    changes = op_counts(up.summary.resource_changes)
    assert _location(manager, ROTATED) == f"multikueue-{ROTATED}-kubeconfig-1"
    assert _worker_token_secrets(worker) == ["multikueue-sa-token-1"]
    assert f"multikueue-{ROTATED}-kubeconfig-0" not in _manager_kubeconfig_secrets(manager)
    # The old token is refused now that its Secret is gone; the new one is the same account.
    # The API server checks a legacy token's Secret in its informer cache: the delete reaches it
    # a moment after `up` (seen: still 201 right after up on a loaded machine). Bounded wait.
    deadline = time.monotonic() + REVOKE_TIMEOUT
    while (status := _whoami(worker, old)[0]) != 401 and time.monotonic() < deadline:
        time.sleep(0.25)
    assert status == 401, f"the old token still works {REVOKE_TIMEOUT:.0f}s after up"
    assert _whoami(worker, _token(worker, "multikueue-sa-token-1")) == (201, account)
    # Kueue has reconnected with the new Secret (the old token could no longer list or watch)
    # and stays Active: judged over a few seconds, not at one instant.
    deadline = time.monotonic() + 5.0
    active = _active(manager, ROTATED)
    while time.monotonic() < deadline:
        active = _active(manager, ROTATED)
        assert (active.get("status"), active.get("reason"), active.get("message")) == (
            "True",
            "Active",
            "Connected",
        ), active
        time.sleep(0.5)
    report(
        f"rotation of {ROTATED} from a good token to a good token (generation 0 -> 1): pulumi up "
        f"{seconds:.1f}s, {changes}; the old token is refused (401), Kueue Active/Connected "
        f"(observedGeneration {active.get('observedGeneration')}, generation "
        f"{active['generation']})"
    )


def _in_use_deadlock(manager: ControlPlane) -> str | None:
    """The manager's AdmissionCheck is being deleted but Kueue holds it: a ClusterQueue that
    lists it still exists (Kueue's resource-in-use finalizer), so its deletion never ends."""
    check = get_json(manager, f"{KUEUE_API}/admissionchecks/{MULTIKUEUE_ADMISSION_CHECK}")
    queue = get_json(manager, f"{KUEUE_API}/clusterqueues/{TEAM}")
    if check is None or queue is None:
        return None
    meta, queue_meta = check["metadata"], queue["metadata"]
    if (
        "deletionTimestamp" in meta
        and IN_USE_FINALIZER in (meta.get("finalizers") or [])
        and "deletionTimestamp" not in queue_meta
    ):
        return (
            f"manager: AdmissionCheck {MULTIKUEUE_ADMISSION_CHECK} deleting, "
            f"ClusterQueue {TEAM} not"
        )
    return None


def _held_queue(planes: Mapping[str, ControlPlane]) -> str | None:
    """A ClusterQueue being deleted while its team namespace is not: Kueue's resource-in-use
    finalizer waits for Workloads only the namespace's deletion removes."""
    for name, plane in planes.items():
        cq = get_json(plane, f"{KUEUE_API}/clusterqueues/{TEAM}")
        ns = get_json(plane, f"/api/v1/namespaces/{TEAM}")
        if (
            cq is not None
            and "deletionTimestamp" in cq["metadata"]
            and ns is not None
            and "deletionTimestamp" not in ns["metadata"]
        ):
            return f"{name}: ClusterQueue {TEAM} deleting, namespace {TEAM} not"
    return None


def _deleting(planes: Mapping[str, ControlPlane]) -> list[str]:
    """`cluster:Kind/name` of every team namespace and Kueue object being deleted
    (deletionTimestamp set): what destroy waits for right now."""
    paths = {
        "Namespace": "/api/v1/namespaces",
        "ClusterQueue": f"{KUEUE_API}/clusterqueues",
        "LocalQueue": f"{KUEUE_API}/localqueues",
        "AdmissionCheck": f"{KUEUE_API}/admissionchecks",
        "ResourceFlavor": f"{KUEUE_API}/resourceflavors",
        "Workload": f"{KUEUE_API}/workloads",
    }
    found: list[str] = []
    for name, plane in planes.items():
        for kind, path in paths.items():
            for obj in items(plane, path):
                meta = obj["metadata"]
                if "deletionTimestamp" in meta:
                    at = "/".join(p for p in (meta.get("namespace"), meta["name"]) if p)
                    found.append(f"{name}:{kind}/{at}")
    return found


def _quota_held(plane: ControlPlane) -> int:
    return sum(
        1
        for w in items(plane, f"{KUEUE_API}/namespaces/{TEAM}/workloads")
        if condition(w, "QuotaReserved") == "True"
    )


def test_pulumi_destroy_with_jobs_in_the_queues_removes_everything(
    run: EngineRun,
    engine_planes: dict[str, ControlPlane],
    report: Report,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`destroy` of the (rotated) stack while team-a's Jobs hold quota on every plane: the
    manager's Workloads reserved and copied to both workers, where they wait at the provisioning
    gate (no nodes here). Asserted: it succeeds, deletes all `up` created and discards the
    credential proofs' reads, leaves no Kueue object, CRD, credential, team namespace or Job, and
    never sits in Kueue's resource-in-use finalizer: neither the MultiKueue AdmissionCheck while
    a ClusterQueue lists it, nor a ClusterQueue while its namespace (whose deletion removes the
    Jobs and so the Workloads) lives. What it waited for is reported."""
    if run.created is None:
        pytest.skip("pulumi up did not pass: nothing to judge destroy on")
    manager = engine_planes["manager"]
    sub = Submission("manager", TEAM, TEAM, TEAM, dispatched=True, gpus=0)
    applied = apply(manager, [job_for(sub, f"destroy-{i}") for i in range(JOBS)])
    assert not applied.rejected, applied.stderr
    wait_for(
        "every Workload holding quota on every plane",
        lambda: all(_quota_held(p) == JOBS for p in engine_planes.values()),
        90.0,
    )
    in_use = {name: _quota_held(p) for name, p in engine_planes.items()}
    reads = run.external_reads()
    outcome: dict[str, Any] = {}

    def destroy() -> None:
        try:
            outcome["result"] = run.stack.destroy(on_output=run.add, color="never")
        except Exception as exc:  # re-raised in the test's thread
            outcome["error"] = exc

    # A thread, so the test can watch the clusters while the engine works (the engine itself
    # would wait out the provider's 10-minute delete timeout on a stuck object).
    worker = threading.Thread(target=destroy, name="pulumi-destroy", daemon=True)
    t0 = time.monotonic()
    worker.start()
    waited: dict[str, float] = {}  # what was being deleted -> seconds seen so
    held: str | None = None
    stuck_since: float | None = None
    while worker.is_alive():
        worker.join(DELETING_POLL)
        elapsed = time.monotonic() - t0
        assert elapsed < DESTROY_TIMEOUT, (
            f"destroy still running after {elapsed:.0f}s; deleting: "
            f"{_deleting(engine_planes)}\n{run.tail()}"
        )
        for key in _deleting(engine_planes):
            waited[key] = waited.get(key, 0.0) + DELETING_POLL
        stuck = _in_use_deadlock(manager) or _held_queue(engine_planes)
        held = held or stuck
        stuck_since = (stuck_since or time.monotonic()) if stuck else None
        if stuck_since is not None and time.monotonic() - stuck_since > STUCK_GRACE:
            # Break it as an operator would, so destroy ends and the rest is judged; the test
            # fails on `held` below.
            manager.kubectl("delete", f"clusterqueues.{KUEUE_GROUP}", TEAM, "--wait=false")
            for plane in engine_planes.values():
                plane.kubectl("delete", "namespace", TEAM, "--wait=false", check=False)
            stuck_since = None
    seconds = time.monotonic() - t0
    if "error" in outcome:
        raise AssertionError(f"destroy failed: {outcome['error']}\n{run.tail()}")
    result = outcome["result"]
    assert result.summary.result == "succeeded", run.tail()
    gone = op_counts(result.summary.resource_changes)
    assert gone == {"delete": run.created} | ({"discard": reads} if reads else {}), gone
    assert held is None, f"finalizer deadlock order: {held}"
    leftovers = {name: kueue_leftovers(plane) for name, plane in engine_planes.items()}
    assert not any(leftovers.values()), f"left behind after destroy: {leftovers}"
    jobs = {n: items(p, f"/apis/batch/v1/namespaces/{TEAM}/jobs") for n, p in engine_planes.items()}
    assert not any(jobs.values()), jobs
    longest = sorted(waited.items(), key=lambda kv: -kv[1])[:6]
    line = (
        f"pulumi destroy ({STACK} twin, after the rotations) with {JOBS} Jobs holding quota "
        f"(per plane: {in_use}): {run.created} deleted and {reads} reads discarded in "
        f"{seconds:.1f}s, nothing left, no finalizer deadlock; waited for (seconds seen "
        "deleting): " + ", ".join(f"{k} {v:.1f}s" for k, v in longest)
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)
