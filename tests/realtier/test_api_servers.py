"""Real API servers judge what the program renders and the MultiKueue credentials it builds.

Three loopback control planes (conftest.py) stand in for the dev stack's clusters. What they
check that no mock can: every rendered object passes a real server's validation (schemas, CEL
rules, defaulting, RBAC escalation checks) on its target; the worker token is minted by the real
token controller and, wired through the project's own `worker_kubeconfig`, grants exactly the
rules of `worker_rules` and no more (reads cluster-wide, writes only in the dispatched
namespaces); deleting the token Secret revokes it.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import karmada_members as km
from builders.manifest import KARMADA_TARGET, Manifest
from builders.multikueue import (
    k8s_name,
    token_secret_name,
    worker_kubeconfig,
    worker_objects,
    write_role_bindings,
)
from config.models import FleetConfig
from config.resolve import dispatched_namespaces, rotation_of
from preflight.sources import collect
from testkit.realtier.harness import (
    AGGREGATED_KINDS,
    KARMADA_PLANE,
    PLANES,
    ControlPlane,
    Report,
    Tools,
    apply,
    namespace,
    object_ref,
)
from testkit.realtier.kueue import wait_for_token
from upstream.kueue import KUEUE_NAMESPACE, SERVICE_ACCOUNT
from upstream.kueue_rbac import READ_VERBS, worker_rules

pytestmark = pytest.mark.real

WORKER = "worker-1"
TOKEN_TIMEOUT = 30.0
# The API server caches a successful token authentication for 10 s
# (--authentication-token-cache-ttl's built-in default), so a revoked token may work that long.
REVOKE_TIMEOUT = 30.0


def _group(manifest: Manifest) -> str:
    return str(manifest.obj["apiVersion"]).rpartition("/")[0]


def _gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


# --------------------------------------------------------------------------------------------
# The harness itself


def test_one_control_plane_starts_serves_and_stops(
    tools: Tools, tmp_path: Path, report: Report
) -> None:
    """Alone (before the session's three start): start-up time, version, and a clean stop."""
    plane = ControlPlane("solo", tmp_path / "solo", tools)
    t0 = time.monotonic()
    try:
        plane.start()
        elapsed = time.monotonic() - t0
        status, body = plane.get("/version")
        assert status == 200
        version = json.loads(body)["gitVersion"]
        pids = plane.pids
        assert len(pids) == 3
    finally:
        plane.stop()
    assert all(_gone(pid) for pid in pids), "a process group survived stop()"
    report(
        f"1 control plane ({version}) started alone in {elapsed:.1f}s ({plane.timings}); "
        "stopped, no process left"
    )


# --------------------------------------------------------------------------------------------
# Every rendered object, judged by a real API server


@pytest.mark.usefixtures("kueue_crds", "karmada_crds")
def test_every_rendered_object_is_accepted_by_its_api_server(
    planes: dict[str, ControlPlane],
    dev_fleet: FleetConfig,
    report: Report,
) -> None:
    manifests, releases = collect(dev_fleet)
    targets = {m.target for m in manifests}
    assert targets <= {*PLANES, KARMADA_TARGET}, f"a target without a plane: {targets}"

    skipped = [m for m in manifests if (_group(m), m.kind) in AGGREGATED_KINDS]
    judged = [m for m in manifests if m not in skipped]
    failures: list[str] = []
    for target in sorted({m.target for m in judged}):
        plane = planes[KARMADA_PLANE if target == KARMADA_TARGET else target]
        objects = [m.obj for m in judged if m.target == target]
        # Namespaces for real: the server looks a namespaced object's Namespace up even in a dry
        # run. Helm's namespaces (kueue-system) come first, as the chart installs would make them.
        helm = [namespace(r.namespace) for r in releases if r.target == target]
        if target == KARMADA_TARGET:
            # What the Karmada chart's static-resource job leaves on its API server (the program
            # no longer creates it: a create would fail with AlreadyExists after the chart).
            helm.append(namespace(km.CLUSTER_NAMESPACE))
        prerequisites = apply(plane, helm)
        assert not prerequisites.rejected, prerequisites.stderr
        namespaces = [o for o in objects if o["apiVersion"] == "v1" and o["kind"] == "Namespace"]
        rest = [o for o in objects if o not in namespaces]
        created = apply(plane, namespaces)
        dry = apply(plane, rest, dry_run=True)
        for result in (created, dry):
            if result.rejected:
                failures.append(f"{target}: rejected {result.rejected}:\n{result.stderr}")
        kinds = Counter(str(o["kind"]) for o in objects)
        report(
            f"{target} (on {plane.name}'s API server): {len(created.accepted) + len(dry.accepted)}"
            f"/{len(objects)} accepted ({len(created.accepted)} Namespace(s) applied for real, "
            f"{len(dry.accepted)} objects by server-side dry run): "
            + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        )
    if skipped:
        names = ", ".join(f"{m.kind} {m.name}" for m in skipped)
        report(
            f"skipped {len(skipped)} of {len(manifests)} rendered objects: {names} "
            "(cluster.karmada.io is served by karmada-aggregated-apiserver, not a CRD)"
        )
    assert not failures, "\n".join(failures)


@pytest.mark.usefixtures("kueue_crds")
def test_the_judge_can_say_no(planes: dict[str, ControlPlane], dev_fleet: FleetConfig) -> None:
    """A rendered object, broken two ways, is refused: the acceptance above is not vacuous."""
    manifests, _ = collect(dev_fleet)
    queue = next(m.obj for m in manifests if m.target == "manager" and m.kind == "ClusterQueue")
    bad_quota = copy.deepcopy(queue)
    bad_quota["metadata"]["name"] = "bad-quota"
    bad_quota["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "lots"
    unknown_field = copy.deepcopy(queue)
    unknown_field["metadata"]["name"] = "unknown-field"
    unknown_field["spec"]["nominalQuotaz"] = 1  # kubectl asks for strict field validation
    result = apply(planes["manager"], [queue, bad_quota, unknown_field], dry_run=True)
    assert result.accepted == [object_ref(queue)]
    assert "nominalQuota" in result.stderr
    assert "nominalQuotaz: field not declared in schema" in result.stderr


# --------------------------------------------------------------------------------------------
# MultiKueue worker credentials, minted by the real token controller


@dataclass(frozen=True, slots=True)
class Credential:
    """A worker token as the token controller filled its Secret, and the kubeconfig built on it."""

    secret: str
    token: str
    ca_b64: str
    kubeconfig: Path


def issue_credential(
    plane: ControlPlane, fleet: FleetConfig, rotation: int, directory: Path
) -> Credential:
    """Apply the worker objects for real, wait for the token, build the project's kubeconfig."""
    applied = apply(plane, [namespace(KUEUE_NAMESPACE)])  # the Kueue chart's namespace
    assert not applied.rejected, applied.stderr
    objects = worker_objects(fleet.kueue.version, fleet.kueue.frameworks, rotation)
    # The dispatched namespaces (made by the mirrored queues on a real worker) and the write
    # RoleBindings in them.
    teams = dispatched_namespaces(fleet).get(WORKER, [])
    objects += [namespace(ns) for ns in teams]
    objects += [m.obj for m in write_role_bindings(fleet, WORKER)]
    applied = apply(plane, objects)
    assert not applied.rejected, applied.stderr
    secret = token_secret_name(rotation)
    data = wait_for_token(plane, secret, TOKEN_TIMEOUT)
    token = base64.b64decode(data["token"]).decode()
    path = directory / f"{WORKER}-rotation-{rotation}.kubeconfig"
    path.write_text(worker_kubeconfig(k8s_name(WORKER), plane.url, data["ca.crt"], token))
    path.chmod(0o600)
    return Credential(secret=secret, token=token, ca_b64=data["ca.crt"], kubeconfig=path)


@pytest.fixture(scope="module")
def worker_credential(
    planes: dict[str, ControlPlane],
    dev_fleet: FleetConfig,
    tmp_path_factory: pytest.TempPathFactory,
) -> Credential:
    """worker-1's MultiKueue credential at the dev stack's rotation generation."""
    directory = tmp_path_factory.mktemp("credentials")
    return issue_credential(planes[WORKER], dev_fleet, rotation_of(dev_fleet, WORKER), directory)


def _jwt_claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_token_controller_fills_the_worker_secret(
    planes: dict[str, ControlPlane], worker_credential: Credential
) -> None:
    """The real token controller minted a token of multikueue-sa, with the cluster's CA."""
    plane = planes[WORKER]
    claims = _jwt_claims(worker_credential.token)
    assert claims["sub"] == f"system:serviceaccount:{KUEUE_NAMESPACE}:{SERVICE_ACCOUNT}"
    assert claims["kubernetes.io/serviceaccount/secret.name"] == worker_credential.secret
    assert base64.b64decode(worker_credential.ca_b64) == plane.ca_cert.read_bytes()


# Verbs RBAC knows for a resource; the complement of a rule's verbs must all be denied.
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
# Things a MultiKueue manager must never be able to do on a worker, whatever the rules say.
# (verb, resource[.group], subresource, namespace; "" = every namespace)
Check = tuple[str, str, str, str]
NEVER: tuple[Check, ...] = (
    ("delete", "nodes", "", ""),
    ("get", "secrets", "", "kube-system"),
    ("list", "secrets", "", ""),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io", "", ""),
    ("escalate", "clusterroles.rbac.authorization.k8s.io", "", ""),
    ("impersonate", "serviceaccounts", "", ""),
    ("create", "pods", "exec", "team-a"),
    ("create", "serviceaccounts", "token", KUEUE_NAMESPACE),
    ("*", "*", "", ""),
)


def _resource_arg(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


def _matrix(fleet: FleetConfig) -> tuple[list[Check], list[Check]]:
    """Every granted (verb, resource, namespace), and what must be denied: reads cluster-wide,
    writes in each dispatched namespace and nowhere else (not cluster-wide, not kube-system)."""
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in worker_rules(fleet.kueue.version, fleet.kueue.frameworks):
        for group in rule.api_groups:
            for resource in rule.resources:
                granted.setdefault((group, resource), set()).update(rule.verbs)
    teams = dispatched_namespaces(fleet).get(WORKER, [])
    assert teams, f"{WORKER} receives no dispatched namespace: nothing to check writes in"
    allowed: list[Check] = []
    denied: list[Check] = list(NEVER)
    for (group, resource), verbs in sorted(granted.items()):
        base, _, sub = resource.partition("/")
        arg = _resource_arg(group, base)
        reads = sorted(v for v in verbs if v in READ_VERBS)
        writes = sorted(v for v in verbs if v not in READ_VERBS)
        allowed += [(verb, arg, sub, "") for verb in reads]
        allowed += [(verb, arg, sub, ns) for verb in writes for ns in teams]
        # Writes: not cluster-wide, and not in a namespace no queue dispatches to.
        denied += [(verb, arg, sub, where) for verb in writes for where in ("", "kube-system")]
        denied += [(verb, arg, sub, "") for verb in VERBS if verb not in verbs]
    # The credential proof's Role (builders.multikueue.PROOF_ROLE): the account reads itself and
    # no other ServiceAccount, in Kueue's namespace only.
    allowed.append(("get", f"serviceaccounts/{SERVICE_ACCOUNT}", "", KUEUE_NAMESPACE))
    denied += [
        ("get", "serviceaccounts/default", "", KUEUE_NAMESPACE),
        ("list", "serviceaccounts", "", KUEUE_NAMESPACE),
        ("update", f"serviceaccounts/{SERVICE_ACCOUNT}", "", KUEUE_NAMESPACE),
    ]
    return allowed, denied


def _can_i(plane: ControlPlane, kubeconfig: Path, check: Check) -> bool:
    verb, resource, sub, ns = check
    args = ["auth", "can-i", verb, resource]
    args.append(f"--namespace={ns}" if ns else "--all-namespaces")
    if sub:
        args.append(f"--subresource={sub}")
    result = plane.kubectl(*args, kubeconfig=kubeconfig, check=False)
    answer = result.stdout.strip()
    assert answer in {"yes", "no"}, f"can-i {check}: {result.stderr.strip()}"
    return answer == "yes"


def test_worker_credential_grants_exactly_worker_rules(
    planes: dict[str, ControlPlane],
    worker_credential: Credential,
    dev_fleet: FleetConfig,
    report: Report,
) -> None:
    plane = planes[WORKER]
    allowed, denied = _matrix(dev_fleet)
    checks = [(c, True) for c in allowed] + [(c, False) for c in denied]
    t0 = time.monotonic()
    # kubectl is mostly start-up and a round trip: a few at once keep this to seconds.
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(
            pool.map(lambda c: _can_i(plane, worker_credential.kubeconfig, c[0]), checks)
        )
    wrong = [
        f"{'should' if want else 'should not'} be allowed: {' '.join(filter(None, check))}"
        for (check, want), got in zip(checks, answers, strict=True)
        if got != want
    ]
    assert not wrong, "\n".join(wrong)
    report(
        f"kubectl auth can-i with the worker kubeconfig: {len(allowed)} allowed "
        f"(reads cluster-wide, writes in the dispatched namespaces) + {len(denied)} denied "
        f"(writes cluster-wide and in kube-system among them) = {len(checks)} checks "
        f"in {time.monotonic() - t0:.1f}s"
    )


# Kubeconfig fields Kueue's MultiKueueCluster controller refuses (validateKubeconfig, v0.19.2).
FORBIDDEN_KEYS = {
    "exec",
    "auth-provider",
    "tokenFile",
    "insecure-skip-tls-verify",
    "certificate-authority",
    "client-certificate",
    "client-key",
    "username",
    "password",
}


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return {str(k) for k in value} | {key for v in value.values() for key in _keys(v)}
    if isinstance(value, list):
        return {key for v in value for key in _keys(v)}
    return set()


def test_worker_kubeconfig_is_one_kueue_accepts_and_it_works(
    planes: dict[str, ControlPlane], worker_credential: Credential
) -> None:
    plane = planes[WORKER]
    doc: dict[str, Any] = yaml.safe_load(worker_credential.kubeconfig.read_text())
    assert not _keys(doc) & FORBIDDEN_KEYS
    assert [set(u["user"]) for u in doc["users"]] == [{"token"}]
    assert [set(c["cluster"]) for c in doc["clusters"]] == [
        {"server", "certificate-authority-data"}
    ]
    assert doc["clusters"][0]["cluster"]["server"] == plane.url
    out = plane.kubectl("get", "--raw", "/version", kubeconfig=worker_credential.kubeconfig)
    _, admin_version = plane.get("/version")
    assert json.loads(out.stdout)["gitVersion"] == json.loads(admin_version)["gitVersion"]


# --------------------------------------------------------------------------------------------
# Revocation


def _rejected(plane: ControlPlane, kubeconfig: Path) -> str | None:
    """The error when the credential is refused, None when it still works."""
    result = plane.kubectl(
        "get", "jobs.batch", "--all-namespaces", kubeconfig=kubeconfig, check=False
    )
    if result.returncode == 0:
        return None
    assert "Unauthorized" in result.stderr, f"failed, but not as unauthorized: {result.stderr}"
    return result.stderr.strip()


def test_deleting_the_token_secret_revokes_the_credential(
    planes: dict[str, ControlPlane],
    dev_fleet: FleetConfig,
    worker_credential: Credential,
    tmp_path: Path,
    report: Report,
) -> None:
    """The next rotation generation, revoked: its kubeconfig is refused; the current one is not."""
    plane = planes[WORKER]
    rotation = rotation_of(dev_fleet, WORKER) + 1
    revoked = issue_credential(plane, dev_fleet, rotation, tmp_path)
    assert _rejected(plane, revoked.kubeconfig) is None, "fresh credential refused"

    plane.kubectl("delete", "secret", revoked.secret, f"--namespace={KUEUE_NAMESPACE}")
    t0 = time.monotonic()
    deadline = t0 + REVOKE_TIMEOUT
    while (error := _rejected(plane, revoked.kubeconfig)) is None:
        assert time.monotonic() < deadline, f"revoked token still accepted after {REVOKE_TIMEOUT}s"
        time.sleep(0.5)
    report(
        f"revoked worker token refused {time.monotonic() - t0:.1f}s after its Secret was "
        f"deleted: {error.splitlines()[-1]}"
    )
    assert _rejected(plane, worker_credential.kubeconfig) is None, (
        "revoking one token broke another"
    )
