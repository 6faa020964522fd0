"""The first `up` succeeds once: before any Kubernetes object on an Entra ID cluster, `up` waits,
bounded, until the API server authorizes the deploying identity.

What is asked and said (builders/authorization.py), the wait's loop on a fake clock, the client
against a local HTTP server (the exact requests and answers), and the gate in the Pulumi model
under the mocks: `up` asks once the grant exists, `preview` never asks, a bound that passes stops
`up` before the provider gets its kubeconfig.
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pulumi
import pytest

from builders.authorization import (
    PROVISIONING_REQUEST_API,
    SERVED_API_SECONDS,
    AuthorizationWait,
    Observation,
    Probe,
    authorization_wait,
    kueue_manifests_probes,
    kueue_release_probes,
)
from builders.kubeconfig import Connection, ExecPlugin, KubeconfigError, connection_of
from checks.stack import parse_fleet
from components import authorization
from components.fleet import Fleet, FleetArgs
from testkit.mocks import (
    FAKE_EXEC_KUBECONFIG,
    FAKE_KUBECONFIG,
    Graph,
    mocked_engine,
    resolve,
    run_program,
)

AKS: dict[str, Any] = {
    "location": "westeurope",
    "clusters": [
        {"name": "manager", "role": "standalone"},
        {"name": "worker-1", "role": "standalone"},
    ],
}
EXISTING: dict[str, Any] = {
    "clusters": [
        {
            "name": "alpha",
            "role": "standalone",
            "source": "existing",
            "existing": {"kubeconfigSecret": "alpha", "authorizationTimeoutSeconds": 30},
        }
    ],
    "kueue": {"install": "manifests-only"},
}
DENIED = Observation(
    identity="'deployer@example.com'",
    denied=((Probe("create", "customresourcedefinitions", "apiextensions.k8s.io"), "no rule"),),
)


def _fleet(raw: dict[str, Any]) -> Any:
    fleet, _ = parse_fleet(copy.deepcopy(raw))
    return fleet


# ---- what is asked ------------------------------------------------------------------------------


def test_entra_clusters_wait_ten_minutes_by_default_with_the_key_that_sets_it() -> None:
    fleet = _fleet(AKS)
    wait = authorization_wait(fleet, fleet.clusters[1])
    assert wait is not None
    assert (wait.cluster, wait.timeout_seconds, wait.key) == (
        "worker-1",
        600,
        "access.authorizationTimeoutSeconds",
    )
    assert wait.probes == kueue_release_probes()
    assert "Cluster Admin" in wait.check
    assert "access.deployIdentityRole" in wait.check


def test_a_cluster_access_section_names_its_own_key() -> None:
    raw = copy.deepcopy(AKS)
    raw["clusters"][1]["access"] = {"authorizationTimeoutSeconds": 120}
    fleet = _fleet(raw)
    wait = authorization_wait(fleet, fleet.clusters[1])
    assert wait is not None
    assert (wait.timeout_seconds, wait.key) == (
        120,
        "clusters[1].access.authorizationTimeoutSeconds",
    )


@pytest.mark.parametrize(
    "access",
    [
        {"authorizationTimeoutSeconds": 0},
        {"entraId": False, "azureRbac": False, "localAccounts": True},
    ],
)
def test_no_wait_when_off_or_with_a_local_account(access: dict[str, Any]) -> None:
    raw = copy.deepcopy(AKS)
    raw["access"] = access
    fleet = _fleet(raw)
    assert [authorization_wait(fleet, c) for c in fleet.clusters] == [None, None]


def test_deploy_identity_role_none_says_the_stack_grants_nothing() -> None:
    raw = copy.deepcopy(AKS)
    raw["access"] = {"deployIdentityRole": "none"}
    fleet = _fleet(raw)
    wait = authorization_wait(fleet, fleet.clusters[0])
    assert wait is not None
    assert "grants this identity nothing" in wait.check


def test_existing_clusters_wait_only_when_asked() -> None:
    fleet = _fleet(EXISTING)
    wait = authorization_wait(fleet, fleet.clusters[0])
    assert wait is not None
    assert (wait.timeout_seconds, wait.key) == (
        30,
        "clusters[0].existing.authorizationTimeoutSeconds",
    )
    # manifests-only: the CRDs and kueue-system, by server-side apply
    assert wait.probes == kueue_manifests_probes()
    assert {str(p) for p in wait.probes} >= {
        "patch customresourcedefinitions.apiextensions.k8s.io",
        "create namespaces",
    }
    raw = copy.deepcopy(EXISTING)
    del raw["clusters"][0]["existing"]["authorizationTimeoutSeconds"]
    fleet = _fleet(raw)
    assert authorization_wait(fleet, fleet.clusters[0]) is None


def test_the_bound_is_limited_to_an_hour() -> None:
    raw = copy.deepcopy(AKS)
    raw["access"] = {"authorizationTimeoutSeconds": 3601}
    with pytest.raises(Exception, match=r"access\.authorizationTimeoutSeconds"):
        parse_fleet(raw)


def test_a_probe_is_a_self_subject_access_review() -> None:
    probe = Probe("create", "deployments", "apps", "kueue-system")
    assert str(probe) == "create deployments.apps in kueue-system"
    assert probe.review() == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "verb": "create",
                "group": "apps",
                "resource": "deployments",
                "namespace": "kueue-system",
            }
        },
    }


# ---- reading the kubeconfig ---------------------------------------------------------------------


def test_connection_of_an_aks_exec_kubeconfig() -> None:
    conn = connection_of(FAKE_EXEC_KUBECONFIG.format(name="worker-1"))
    assert conn.server == "https://worker-1.hcp.westeurope.azmk8s.io:443"
    assert conn.ca_data == b"CA\n"
    assert conn.exec_plugin is not None
    assert conn.exec_plugin.command == "kubelogin"
    assert conn.exec_plugin.args[:1] == ("get-token",)
    assert conn.token is None
    assert conn.unsupported == ()


def test_connection_of_a_certificate_and_token_kubeconfig() -> None:
    conn = connection_of(FAKE_KUBECONFIG.format(name="m"))
    assert (conn.cert_data, conn.key_data, conn.token) == (b"CERT\n", b"KEY\n", "fake")


def test_connection_of_names_what_it_does_not_follow() -> None:
    doc = FAKE_KUBECONFIG.format(name="m").replace(
        "certificate-authority-data: Q0EK", "certificate-authority-data: Q0EK\n    proxy-url: x"
    )
    assert connection_of(doc).unsupported == ("cluster.proxy-url",)
    with pytest.raises(KubeconfigError, match="no user named"):
        connection_of(FAKE_KUBECONFIG.format(name="m").replace("- name: clusterUser", "- name: u"))


# ---- the wait's loop ----------------------------------------------------------------------------


class FakeTime:
    """A clock that moves only when the wait pauses (or a round takes time)."""

    def __init__(self, round_seconds: float = 0.0) -> None:
        self.now = 0.0
        self.round_seconds = round_seconds
        self.pauses: list[float] = []

    def clock(self) -> float:
        return self.now

    async def pause(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


WAIT = AuthorizationWait(
    cluster="worker-1",
    timeout_seconds=20,
    key="access.authorizationTimeoutSeconds",
    probes=kueue_manifests_probes(),
    first="Kueue's CRDs",
    check="see {cluster_id} for {identity}",
)
DOC = FAKE_KUBECONFIG.format(name="worker-1")


def _run_wait(answers: Iterator[Observation], time: FakeTime, said: list[str]) -> str:
    def open_server(conn: Connection) -> Any:
        assert conn.server == "https://worker-1.hcp.westeurope.azmk8s.io:443"

        def observe(probes: Any, budget: float) -> Observation:
            assert probes == WAIT.probes
            assert 0 < budget <= WAIT.timeout_seconds
            time.now += time.round_seconds
            return next(answers)

        return observe

    return asyncio.run(
        authorization.wait_until_authorized(
            DOC,
            WAIT,
            facts={"cluster_id": "/subscriptions/s/x/worker-1"},
            say=said.append,
            open_server=open_server,
            clock=time.clock,
            pause=time.pause,
        )
    )


def test_the_wait_ends_when_the_api_server_says_yes() -> None:
    time, said = FakeTime(), []
    answers = iter([DENIED, DENIED, Observation(identity=DENIED.identity)])
    assert _run_wait(answers, time, said) == DOC
    assert time.pauses == [authorization.POLL_SECONDS] * 2
    # said once, with the cluster, the bound, its key, the identity and what is refused
    assert len(said) == 1, said
    for part in [
        "cluster 'worker-1'",
        "up to 20s (access.authorizationTimeoutSeconds)",
        "'deployer@example.com'",
        "may not create customresourcedefinitions.apiextensions.k8s.io (no rule)",
    ]:
        assert part in said[0], said[0]


def test_the_wait_gives_up_within_its_bound_with_what_to_check() -> None:
    time, said = FakeTime(round_seconds=0.5), []

    def forever() -> Iterator[Observation]:
        while True:
            yield DENIED

    with pytest.raises(pulumi.RunError) as info:
        _run_wait(forever(), time, said)
    assert time.now <= WAIT.timeout_seconds, time.now
    assert time.now > WAIT.timeout_seconds - authorization.POLL_SECONDS - 1, time.now
    message = str(info.value)
    for part in [
        "cluster 'worker-1'",
        "did not authorize 'deployer@example.com' within 20s",
        "(access.authorizationTimeoutSeconds)",
        "still not create customresourcedefinitions.apiextensions.k8s.io",
        "Nothing was applied to this cluster",
        "Check: see /subscriptions/s/x/worker-1 for 'deployer@example.com'",
    ]:
        assert part in message, message


def test_an_unreachable_server_is_waited_for_and_named() -> None:
    time, said = FakeTime(), []
    down = Observation(problem="cannot reach the API server: connection refused")
    with pytest.raises(pulumi.RunError, match="the last answer: cannot reach the API server"):
        _run_wait(iter([down] * 20), time, said)
    assert "connection refused" in said[0]


def test_a_credential_that_cannot_be_had_stops_at_once() -> None:
    def open_server(_conn: Connection) -> Any:
        def observe(_probes: Any, _budget: float) -> Observation:
            raise authorization.CredentialError("the credential plugin `kubelogin` is not on PATH")

        return observe

    with pytest.raises(pulumi.RunError, match="cluster 'worker-1': cannot get the credential"):
        asyncio.run(
            authorization.wait_until_authorized(DOC, WAIT, say=print, open_server=open_server)
        )


# ---- the client, against a local server ----------------------------------------------------


class _ApiServer(BaseHTTPRequestHandler):
    allowed: set[str] = set()
    served: dict[str, list[str]] = {}
    seen: list[tuple[str, str, dict[str, Any]]] = []
    token = "sa-token"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((self.path, self.headers.get("Authorization", ""), body))
        if self.headers.get("Authorization") != f"Bearer {self.token}":
            return self._answer(401, {"kind": "Status", "code": 401})
        if self.path.endswith("/selfsubjectreviews"):
            user = {"username": "system:serviceaccount:kube-system:deployer"}
            return self._answer(201, {**body, "status": {"userInfo": user}})
        verb = body["spec"]["resourceAttributes"]["verb"]
        resource = body["spec"]["resourceAttributes"]["resource"]
        allowed = f"{verb} {resource}" in self.allowed
        status = {"allowed": allowed} | ({} if allowed else {"reason": "RBAC: no rule"})
        return self._answer(201, {**body, "status": status})

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization", ""), {}))
        if self.path not in self.served:
            return self._answer(404, {"kind": "Status", "code": 404})
        resources = [{"name": name} for name in self.served[self.path]]
        return self._answer(200, {"kind": "APIResourceList", "resources": resources})

    def _answer(self, code: int, body: dict[str, Any]) -> None:
        raw = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


@pytest.fixture
def api_server() -> Iterator[str]:
    _ApiServer.seen = []
    _ApiServer.allowed = set()
    _ApiServer.served = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ApiServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


PROBES = kueue_manifests_probes()


def test_the_client_asks_who_then_each_probe_with_the_token(api_server: str) -> None:
    observe = authorization.open_api_server(
        Connection(server=api_server, user="u", token="sa-token")
    )
    seen = observe(PROBES, 5.0)
    assert seen.identity == "'system:serviceaccount:kube-system:deployer'"
    assert [str(p) for p, _ in seen.denied] == [str(p) for p in PROBES]
    assert {reason for _, reason in seen.denied} == {"RBAC: no rule"}
    paths = [path for path, _, _ in _ApiServer.seen]
    assert paths == [
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        *["/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"] * len(PROBES),
    ]
    assert [body for _, _, body in _ApiServer.seen[1:]] == [p.review() for p in PROBES]

    _ApiServer.allowed = {f"{p.verb} {p.resource}" for p in PROBES}
    again = observe(PROBES, 5.0)
    assert again.authorized, again
    # the identity is asked once per wait
    assert sum(p.endswith("selfsubjectreviews") for p, _, _ in _ApiServer.seen) == 1


def test_the_client_runs_the_exec_plugin_non_interactively(api_server: str) -> None:
    script = (
        "import json, os; info = json.loads(os.environ['KUBERNETES_EXEC_INFO']);"
        "assert info['spec']['interactive'] is False, info;"
        "assert os.environ['FROM_KUBECONFIG'] == 'yes';"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',"
        " 'status': {'token': 'sa-token'}}))"
    )
    plugin = ExecPlugin(
        command=sys.executable,
        args=("-c", script),
        env=(("FROM_KUBECONFIG", "yes"),),
        api_version="client.authentication.k8s.io/v1beta1",
    )
    _ApiServer.allowed = {f"{p.verb} {p.resource}" for p in PROBES}
    observe = authorization.open_api_server(
        Connection(server=api_server, user="u", exec_plugin=plugin)
    )
    assert observe(PROBES, 5.0).authorized
    assert {auth for _, auth, _ in _ApiServer.seen} == {"Bearer sa-token"}


def test_a_refused_credential_and_a_failing_plugin(api_server: str) -> None:
    observe = authorization.open_api_server(Connection(server=api_server, user="u", token="bad"))
    assert "401 Unauthorized" in (observe(PROBES, 5.0).problem or "")
    failing = ExecPlugin(sys.executable, ("-c", "raise SystemExit('no az login')"), (), "v1")
    observe = authorization.open_api_server(
        Connection(server=api_server, user="u", exec_plugin=failing)
    )
    with pytest.raises(authorization.CredentialError, match="failed \\(exit 1\\): no az login"):
        observe(PROBES, 5.0)


def test_a_server_that_is_not_there() -> None:
    observe = authorization.open_api_server(
        Connection(server="http://127.0.0.1:9", user="u", token="t")
    )
    assert "cannot reach the API server" in (observe(PROBES, 2.0).problem or "")


# ---- the gate, in the Pulumi model --------------------------------------------------------------


def _provider_kubeconfigs(g: Graph) -> dict[str, Any]:
    return {
        r.name: r.inputs.get("kubeconfig")
        for r in g.of_type("pulumi:providers:kubernetes")
        if r.name.endswith("-k8s")
    }


def test_up_asks_each_entra_cluster_once_its_grant_exists(graph: Graph) -> None:
    fleet_config = _fleet(AKS)
    granted_when_asked: list[bool] = []

    def on_ask(conn: Connection) -> None:
        grants = [r.name for r in graph.of_type("azure-native:authorization:RoleAssignment")]
        name = conn.server.split("//")[1].split(".")[0]
        granted_when_asked.append(f"fleet-{name}-deployer-rbac" in grants)

    graph.on_ask = on_ask
    fleet = run_program(lambda: Fleet("fleet", FleetArgs(config=fleet_config, stack="t")))
    assert sorted(c.server for c in graph.asked) == [
        "https://manager.hcp.westeurope.azmk8s.io:443",
        "https://worker-1.hcp.westeurope.azmk8s.io:443",
    ]
    assert granted_when_asked == [True, True]
    # the provider gets the document unchanged, still a secret
    for name, cluster in fleet.clusters.items():
        value, secret = resolve(cluster.provider_kubeconfig)
        assert secret, name
        assert "kubelogin" in value, name
        assert "--login" in value, name
    assert all(_provider_kubeconfigs(graph).values())


def test_preview_never_asks() -> None:
    fleet_config = _fleet(AKS)
    with mocked_engine(preview=True) as g:
        run_program(lambda: Fleet("fleet", FleetArgs(config=fleet_config, stack="t")))
        assert g.asked == []
        assert len(_provider_kubeconfigs(g)) == 2


def test_a_bound_that_passes_stops_up_before_the_provider(graph: Graph) -> None:
    raw = copy.deepcopy(AKS)
    raw["access"] = {"authorizationTimeoutSeconds": 1}
    fleet_config = _fleet(raw)
    graph.answer = DENIED
    with pytest.raises(pulumi.RunError) as info:
        run_program(lambda: Fleet("fleet", FleetArgs(config=fleet_config, stack="t")))
    message = str(info.value)
    cluster = message.split("'")[1]  # either cluster may be the first to give up
    assert cluster in ("manager", "worker-1"), message
    assert "did not authorize 'deployer@example.com' within 1s" in message, message
    assert "Check: the program granted this identity AKS RBAC Cluster Admin" in message
    # the cluster's Azure id, once it exists (the mocks' id)
    assert f"--scope fleet-{cluster}-aks_id " in message, message


def test_existing_clusters_ask_with_their_context(graph: Graph) -> None:
    fleet_config = _fleet(EXISTING)
    doc = FAKE_KUBECONFIG.format(name="alpha")
    run_program(
        lambda: Fleet(
            "fleet",
            FleetArgs(
                config=fleet_config,
                stack="t",
                existing_kubeconfigs={"alpha": pulumi.Output.secret(doc)},
            ),
        )
    )
    assert [c.server for c in graph.asked] == ["https://alpha.hcp.westeurope.azmk8s.io:443"]
    assert _provider_kubeconfigs(graph)["fleet-alpha-k8s"]


# ---- the ProvisioningRequest API on gated AKS clusters ---------------------------------------

GATED: dict[str, Any] = {
    "location": "westeurope",
    "clusters": [
        {
            "name": "worker-1",
            "role": "standalone",
            "pools": [{"name": "batch", "vmSize": "Standard_D4s_v5", "maxCount": 3}],
            "queues": {"provisioningGates": [{"name": "scaleup"}]},
        }
    ],
}


def test_a_gated_aks_cluster_waits_for_the_provisioning_request_api_too() -> None:
    fleet = _fleet(GATED)
    wait = authorization_wait(fleet, fleet.clusters[0])
    assert wait is not None
    assert wait.apis == (PROVISIONING_REQUEST_API,)
    assert wait.probes == kueue_release_probes()  # authorized first, then served
    assert str(PROVISIONING_REQUEST_API) == "ProvisioningRequest (autoscaling.x-k8s.io/v1)"
    # Without Entra ID there is nothing to authorize, but Kueue still looks for the API once.
    local = copy.deepcopy(GATED)
    local["access"] = {"entraId": False, "azureRbac": False, "localAccounts": True}
    fleet = _fleet(local)
    wait = authorization_wait(fleet, fleet.clusters[0])
    assert wait is not None
    assert (wait.probes, wait.apis, wait.timeout_seconds) == (
        (),
        (PROVISIONING_REQUEST_API,),
        SERVED_API_SECONDS,
    )
    # Ungated clusters ask for no API.
    fleet = _fleet(AKS)
    wait = authorization_wait(fleet, fleet.clusters[0])
    assert wait is not None
    assert wait.apis == ()


def test_the_client_asks_for_the_api_only_once_authorized(api_server: str) -> None:
    observe = authorization.open_api_server(
        Connection(server=api_server, user="u", token="sa-token")
    )
    asked = (*PROBES, PROVISIONING_REQUEST_API)
    denied = observe(asked, 5.0)
    assert denied.denied
    assert not denied.missing
    assert not any(p.startswith("/apis/autoscaling") for p, _, _ in _ApiServer.seen)
    _ApiServer.allowed = {f"{p.verb} {p.resource}" for p in PROBES}
    missing = observe(asked, 5.0)
    assert (missing.authorized, missing.ready, missing.missing) == (
        True,
        False,
        (PROVISIONING_REQUEST_API,),
    )
    # The group served without the resource is not enough.
    _ApiServer.served = {"/apis/autoscaling.x-k8s.io/v1": ["other"]}
    assert not observe(asked, 5.0).ready
    _ApiServer.served = {"/apis/autoscaling.x-k8s.io/v1": ["provisioningrequests"]}
    assert observe(asked, 5.0).ready
    gets = [(p, auth) for p, auth, _ in _ApiServer.seen if p.startswith("/apis/autoscaling")]
    assert gets[-1] == ("/apis/autoscaling.x-k8s.io/v1", "Bearer sa-token")


GATED_WAIT = AuthorizationWait(
    cluster="worker-1",
    timeout_seconds=20,
    key="access.authorizationTimeoutSeconds",
    probes=(),
    first="Kueue's Helm release",
    check="unused",
    apis=(PROVISIONING_REQUEST_API,),
)


def test_up_waits_for_the_api_and_says_why_then_gives_up_with_what_to_check() -> None:
    time, said = FakeTime(round_seconds=0.5), []
    not_yet = Observation(identity="'deployer'", missing=(PROVISIONING_REQUEST_API,))

    def open_server(conn: Connection) -> Any:
        del conn
        return lambda _asked, _budget: not_yet

    with pytest.raises(pulumi.RunError) as info:
        asyncio.run(
            authorization.wait_until_authorized(
                DOC,
                GATED_WAIT,
                say=said.append,
                open_server=open_server,
                clock=time.clock,
                pause=time.pause,
            )
        )
    assert len(said) == 1
    assert "to serve ProvisioningRequest (autoscaling.x-k8s.io/v1) before Kueue's" in said[0]
    message = str(info.value)
    for part in [
        "did not serve ProvisioningRequest (autoscaling.x-k8s.io/v1) within 20s",
        "Nothing was applied to this cluster",
        "kubectl get crd provisioningrequests.autoscaling.x-k8s.io",
    ]:
        assert part in message, message
    # Served at the third round: the wait ends there.
    answers = iter([not_yet, not_yet, Observation(identity="'deployer'")])
    time = FakeTime()
    done = asyncio.run(
        authorization.wait_until_authorized(
            DOC,
            GATED_WAIT,
            say=said.append,
            open_server=lambda _conn: lambda _asked, _budget: next(answers),
            clock=time.clock,
            pause=time.pause,
        )
    )
    assert done == DOC
    assert time.pauses == [authorization.POLL_SECONDS] * 2
