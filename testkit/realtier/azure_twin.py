"""The Azure twin: a stand-in for Azure Resource Manager behind the stand-in azure-native plugin.

What `pulumi up` of a stack with `source: aks` clusters asks of Azure, answered in the test
process (testkit/realtier/azure_provider.py forwards each provider call here as JSON over HTTP):

- ResourceGroups, VirtualNetworks, Subnets, PublicIPAddresses, UserAssignedIdentities,
  RoleAssignments, AgentPools, MaintenanceConfigurations and Azure Monitor's workspaces, data
  collection endpoints, rules and rule associations and Prometheus rule groups are recorded (ARM
  ids, the outputs the program reads) with ARM's rules that are cheap to keep: a resource's parent
  must exist (group, VNet, cluster, the role assignment's scope, the association's resource), a
  resource its inputs name must exist (`references`), a role assignment's principalType must be
  the directory's type for that principal, names are immutable (azure-native replaces).
- A ManagedCluster becomes a loopback control plane (testkit/realtier/harness.py) with the
  pinned Kueue CRDs and a real Kueue manager beside it (what the Kueue chart's pods would be),
  reached at its FQDN, which here is a loopback address whose port 443 relays to the plane.
  Its API server accepts one token, the one the stand-in `kubelogin` prints, as the deploying
  Entra ID user (its object id as the uid, its groups `deployer_groups` as an Entra token
  carries group object ids; none by default), and authorizes it as AKS with Azure RBAC does: a
  webhook the twin serves answers from the role assignments it holds on that cluster, each only
  once `propagation_seconds` have passed since its creation, never on a cluster in
  `unpropagated` (testkit/realtier/azure_rbac.py). With Entra ID, the groups of
  `aadProfile.adminGroupObjectIDs` are cluster-admin through Kubernetes RBAC, as AKS binds
  them (a ClusterRoleBinding of `cluster-admin` to each group, kept equal to the list on every
  PUT).
- `listManagedClusterUserCredentials` returns AKS's exec kubeconfig for an Entra ID cluster
  (kubelogin, `--server-id`, devicecode), `getClientConfig` the twin's tenant, subscription and
  deploying user.
- Each plane also runs kube-scheduler, kwok and, once a pool is autoscaled, the real
  cluster-autoscaler; its nodes are the System pool and the AgentPools as requested
  (testkit/realtier/azure_nodes.py), and the pinned Kueue's Job webhooks are registered on it
  (testkit/realtier/kueue_webhooks.py).
- Kubernetes versions: a cluster is created at the real tier's minor or the next one (the
  binaries its plane can start with). An update whose `kubernetesVersion` moves to the next
  minor upgrades it as AKS does: the control plane first (its kube-apiserver and
  kube-controller-manager swapped to the next minor's binaries, `swap_control_plane`; the one
  upgrade available), then each inline pool whose orchestratorVersion moves with it (one
  without a version stays where it is: upstream/aks_rules.py `system-pool-version`), node by
  node, surge then drain (testkit/realtier/azure_nodes.py `upgrade`); an AgentPool whose
  orchestratorVersion moves is upgraded the same way on its own PUT. Refused with AKS's words:
  a skipped minor, a downgrade, any version the twin has no binaries for, and a pool above its
  control plane.

Processes are started on the main thread only (the harness ties each child to the thread that
started it): an HTTP handler that needs a plane hands the work to `serve`, which runs the
engine in a thread and does that work on the main thread meanwhile.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import queue
import random
import socket
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final, TypeVar

import yaml

from checks import azure_api
from testkit.realtier import kueue_webhooks
from testkit.realtier.azure_nodes import PLANE_CONTROLLERS, AzureNodes, UpgradeBlockedError
from testkit.realtier.azure_rbac import (
    ADMIN_GROUPS_BINDING,
    Request,
    admin_groups,
    admin_groups_binding,
    azure_rbac_enabled,
    decide,
    grant_of,
    request_of,
    review_answer,
    webhook_kubeconfig,
)
from testkit.realtier.crds import install_crds
from testkit.realtier.harness import (  # the private steps of `start_all`, one plane at a time
    APISERVER_TIMEOUT,
    CONTROLLER_MANAGER_TIMEOUT,
    ETCD_TIMEOUT,
    ROOT,
    ControlPlane,
    Tools,
    _await,  # pyright: ignore[reportPrivateUsage]
    apply,
    await_each,
    stop_all,
)
from testkit.realtier.kueue import KUEUE_TIMEOUT, KueueManager, stop_kueues
from testkit.realtier.tcp import splice

T = TypeVar("T")

UNKNOWN: Final = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
SUBSCRIPTION: Final = "00000000-0000-4000-8000-00000000a2b1"
TENANT: Final = "00000000-0000-4000-8000-0000000a2b1e"
DEPLOYER_OBJECT_ID: Final = "00000000-0000-4000-8000-00000000d3b1"  # the signed-in user
# AKS's Entra ID server application and the Azure CLI's public client (what AKS puts in an exec
# kubeconfig).
AKS_SERVER_ID: Final = "6dae42f8-4368-4678-94ff-3960e28e3630"
AZURE_CLI_CLIENT_ID: Final = "04b07795-8ddb-461a-bbee-02f9e1bf7b46"
TOKEN: Final = "azure-twin-entra-token"  # what the stand-in kubelogin prints
ENTRA_USER: Final = "deployer@twin.example"
ACI_ADDON: Final = "aciConnectorLinux"

# The input that names each type's resource (ARM's last path segment).
NAME_KEY: Final[dict[str, str]] = {
    "azure-native:resources:ResourceGroup": "resourceGroupName",
    "azure-native:network:VirtualNetwork": "virtualNetworkName",
    "azure-native:network:Subnet": "subnetName",
    "azure-native:network:PublicIPAddress": "publicIpAddressName",
    "azure-native:managedidentity:UserAssignedIdentity": "resourceName",
    "azure-native:authorization:RoleAssignment": "roleAssignmentName",
    "azure-native:containerservice:ManagedCluster": "resourceName",
    "azure-native:containerservice:AgentPool": "agentPoolName",
    "azure-native:containerservice:MaintenanceConfiguration": "configName",
    "azure-native:monitor:AzureMonitorWorkspace": "azureMonitorWorkspaceName",
    "azure-native:monitor:DataCollectionEndpoint": "dataCollectionEndpointName",
    "azure-native:monitor:DataCollectionRule": "dataCollectionRuleName",
    "azure-native:monitor:DataCollectionRuleAssociation": "associationName",
    "azure-native:alertsmanagement:PrometheusRuleGroup": "ruleGroupName",
}
DCRA: Final = "azure-native:monitor:DataCollectionRuleAssociation"
AGENT_POOL: Final = "azure-native:containerservice:AgentPool"
_PROVIDER_PATH: Final[dict[str, str]] = {
    "azure-native:network:VirtualNetwork": "Microsoft.Network/virtualNetworks",
    "azure-native:network:PublicIPAddress": "Microsoft.Network/publicIPAddresses",
    "azure-native:managedidentity:UserAssignedIdentity": (
        "Microsoft.ManagedIdentity/userAssignedIdentities"
    ),
    "azure-native:containerservice:ManagedCluster": "Microsoft.ContainerService/managedClusters",
    "azure-native:monitor:AzureMonitorWorkspace": "Microsoft.Monitor/accounts",
    "azure-native:monitor:DataCollectionEndpoint": "Microsoft.Insights/dataCollectionEndpoints",
    "azure-native:monitor:DataCollectionRule": "Microsoft.Insights/dataCollectionRules",
    "azure-native:alertsmanagement:PrometheusRuleGroup": (
        "Microsoft.AlertsManagement/prometheusRuleGroups"
    ),
}
PRINCIPAL_TYPES: Final = ("User", "Group", "ServicePrincipal", "ForeignGroup", "Device")


class ArmError(Exception):
    """An ARM error response: `code` and message, as the provider would show them."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.status = status


@dataclass
class Resource:
    rtype: str
    id: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    created: float = field(default_factory=time.monotonic)  # when ARM answered its PUT


@dataclass(frozen=True, slots=True)
class Review:
    """One question a plane's API server asked the twin's authorization webhook."""

    at: float  # time.monotonic()
    cluster: str
    request: Request
    allowed: bool


def active_namespaces(plane: ControlPlane) -> list[str]:
    """The plane's namespaces that are not terminating (none when it does not answer)."""
    status, body = plane.get("/api/v1/namespaces")
    if status != 200:  # HTTP OK
        return []
    items = json.loads(body)["items"]
    return sorted(
        i["metadata"]["name"] for i in items if (i.get("status") or {}).get("phase") == "Active"
    )


@dataclass
class Cluster:
    """A ManagedCluster's plane, its Kueue and its FQDN relay."""

    plane: ControlPlane
    kueue: KueueManager | None
    relay: Relay
    version: str = ""  # its control plane's ("v1.36.3")


@dataclass(frozen=True, slots=True)
class UpgradeStep:
    """One step of a version upgrade the twin ran: when it started and ended (time.monotonic())."""

    started: float
    at: float
    cluster: str
    what: str  # "control plane", or "pool <name>"
    version: str


# AKS's refusals (the quotes are of real responses: rancher/dashboard#11884, rancher/rancher#24071
# and #33426); the links are AKS's own.
SUPPORTED_VERSIONS: Final = "Please see https://aka.ms/aks-supported-k8s-ver for version details."
SKEW_POLICY: Final = "For more information, please check https://aka.ms/version-skew-policy"


def binary_version(binary: Path) -> str:
    """The version of a real-tier binary from its directory (<tool>-<x.y.z>/bin/<tool>)."""
    return "v" + binary.parent.parent.name.rsplit("-", 1)[1]


def minor_of(version: str) -> tuple[int, int]:
    major, minor = version.removeprefix("v").split(".")[:2]
    return int(major), int(minor)


def resolve_version(requested: str, available: list[str]) -> str | None:
    """The version AKS runs for a requested one: `<major.minor>` is its newest patch (here the
    one the twin has), a full version only itself; None when the twin has none."""
    wanted = requested.removeprefix("v")
    for version in available:
        full = version.removeprefix("v")
        if wanted == full or (wanted.count(".") == 1 and minor_of(full) == minor_of(wanted)):
            return version
    return None


class Relay:
    """TCP relay from <loopback address>:443 (the cluster's FQDN) to the plane's port."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for _ in range(50):  # a free address in 127/8 (another run may hold one)
            address = (
                f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"
            )
            try:
                self.sock.bind((address, 443))
                break
            except OSError:
                continue
        else:
            raise RuntimeError("no free loopback address for a cluster FQDN")
        self.address = address
        self.sock.listen(64)
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._pump, args=(client,), daemon=True).start()

    def _pump(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=10)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        try:
            splice(client, upstream, self.closed)
        except OSError:
            return
        finally:
            client.close()
            upstream.close()

    def close(self) -> None:
        self.closed.set()
        self.sock.close()


@dataclass
class AzureTwin:
    """ARM's state and the planes of its ManagedClusters; an HTTP endpoint for the plugin."""

    workdir: Path
    tools: Tools
    # The Kueue manager of a new cluster's plane (the stack's Kueue configuration), or None.
    kueue_for: Callable[[ControlPlane], KueueManager | None]
    kueue_crds: list[Path]
    # Nodes, kube-scheduler, kwok and the cluster-autoscaler of each plane, from the ARM
    # requests (testkit/realtier/azure_nodes.py); None: planes without nodes.
    nodes: AzureNodes | None = None
    # The pinned Kueue's webhook manifests: its Job webhooks are registered on each plane as
    # the chart registers them (testkit/realtier/kueue_webhooks.py); None: no webhooks.
    kueue_webhooks: Path | None = None
    # The next minor's kube-apiserver and kube-controller-manager (harness
    # find_next_control_plane): the one upgrade a cluster can take. None: no upgrade.
    next_control_plane: tuple[Path, Path] | None = None
    # Every control plane and pool upgrade step, in order.
    upgrade_steps: list[UpgradeStep] = field(default_factory=list[UpgradeStep])
    # objectId -> principal type: the directory ARM checks role assignments against.
    directory: dict[str, str] = field(default_factory=lambda: {DEPLOYER_OBJECT_ID: "User"})
    resources: dict[str, Resource] = field(default_factory=dict[str, Resource])
    clusters: dict[str, Cluster] = field(default_factory=dict[str, Cluster])
    # Azure RBAC: seconds from a role assignment's creation until the planes' authorization
    # webhook counts it, and clusters whose grants never reach their API server.
    propagation_seconds: float = 0.0
    unpropagated: set[str] = field(default_factory=set[str])
    # The Entra groups (object ids) in the deploying user's token: read by each plane's API
    # server when it starts (a token file), so set them before the `up` that creates it.
    deployer_groups: tuple[str, ...] = ()
    reviews: list[Review] = field(default_factory=list[Review])
    # A deleted ManagedCluster's Active namespaces the moment its delete arrived (what the
    # stack applied in it is deleted with it, not before: components/kube.py).
    namespaces_at_delete: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    # (monotonic time, path, type, id or urn) of every call the plugin made
    calls: list[tuple[float, str, str, str]] = field(
        default_factory=list[tuple[float, str, str, str]]
    )
    _work: queue.Queue[tuple[Callable[[], Any], Future[Any]]] = field(
        default_factory=queue.Queue[tuple[Callable[[], Any], Future[Any]]]
    )
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ---- the plugin, kubelogin, the endpoint -----------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        twin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                try:
                    path = urllib.parse.urlsplit(self.path).path  # the webhook adds ?timeout=
                    if path.startswith("/authorize/"):  # a plane's webhook authorizer
                        status, said = 200, twin.authorize(path.removeprefix("/authorize/"), body)
                    else:
                        status, said = 200, twin.handle(self.path, body)
                except ArmError as exc:
                    status, said = exc.status, {"error": str(exc)}
                except Exception as exc:
                    status, said = 500, {"error": f"twin: {type(exc).__name__}: {exc}"}
                data = json.dumps(said).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def write_plugins(self, plugins: Path, bin_dir: Path) -> None:
        """`pulumi-resource-azure-native` into the engine's plugin directory (on its PATH) and
        the stand-in `kubelogin` into `bin_dir` (the test puts it on PATH)."""
        plugin = plugins / "pulumi-resource-azure-native"
        plugin.write_text(
            f'#!/bin/sh\nAZURE_TWIN_URL="{self.url}" PYTHONPATH="{ROOT}" exec "{sys.executable}"'
            ' -u -m testkit.realtier.azure_provider "$@"\n'
        )
        plugin.chmod(0o755)
        bin_dir.mkdir(parents=True, exist_ok=True)
        credential = {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "kind": "ExecCredential",
            "status": {"token": TOKEN},
        }
        kubelogin = bin_dir / "kubelogin"
        # Any `get-token` (any --login) of the twin's tenant answers with the twin's token;
        # `convert-kubeconfig` rewrites a kubeconfig as kubelogin does (kubelogin_standin.py).
        kubelogin.write_text(
            "#!/bin/sh\n"
            'if [ "$1" = convert-kubeconfig ]; then\n'
            f'  PYTHONPATH="{ROOT}" exec "{sys.executable}" -m testkit.realtier.kubelogin_standin'
            ' "$@"\nfi\n'
            '[ "$1" = get-token ] || { echo "stand-in kubelogin: $1 not modelled" >&2; exit 1; }\n'
            f"echo '{json.dumps(credential)}'\n"
        )
        kubelogin.chmod(0o755)

    def authorize(self, cluster: str, review: dict[str, Any]) -> dict[str, Any]:
        """A plane's SubjectAccessReview, answered from the role assignments on its cluster
        that have propagated (AKS's guard, testkit/realtier/azure_rbac.py)."""
        request, now = request_of(review), time.monotonic()
        with self._lock:
            resources = list(self.resources.values())
        managed = next(
            (
                r
                for r in resources
                if r.rtype == "azure-native:containerservice:ManagedCluster"
                and r.inputs.get("resourceName") == cluster
            ),
            None,
        )
        if managed is None or not azure_rbac_enabled(managed.inputs):
            allowed, reason = False, "Azure RBAC is not enabled on this cluster"
        else:
            grants = [
                grant
                for r in resources
                if r.rtype == "azure-native:authorization:RoleAssignment"
                and cluster not in self.unpropagated
                and now >= r.created + self.propagation_seconds
                and (grant := grant_of(managed.id, r.inputs)) is not None
            ]
            allowed = decide(grants, request)
            reason = "allowed by an Azure role assignment" if allowed else "no role assignment"
        self.reviews.append(Review(now, cluster, request, allowed))
        return review_answer(allowed, reason)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
        for cluster in list(self.clusters.values()):
            self._stop_cluster(cluster)
        self.clusters.clear()

    def serve(self, operation: Callable[[], T]) -> T:
        """Run `operation` (an engine run) in a thread; meanwhile do the twin's process work
        on this (the main) thread. Returns its result or raises its exception."""
        done: Future[T] = Future()

        def run() -> None:
            try:
                done.set_result(operation())
            except BaseException as exc:
                done.set_exception(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        while not done.done():
            try:
                work, answer = self._work.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                answer.set_result(work())
            except BaseException as exc:
                answer.set_exception(exc)
        thread.join()
        return done.result()

    def _on_main(self, work: Callable[[], T]) -> T:
        if threading.current_thread() is threading.main_thread():
            return work()
        answer: Future[T] = Future()
        self._work.put((work, answer))
        return answer.result()

    # ---- ARM ---------------------------------------------------------------------------------

    def handle(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        rtype = str(body.get("type", ""))
        self.calls.append(
            (time.monotonic(), path, rtype, str(body.get("id") or body.get("urn") or ""))
        )
        if path == "/check":
            return self.check(rtype, body["urn"], body["olds"], body["news"])
        if path == "/create":
            return self.put(rtype, body["inputs"], preview=body["preview"], create=True)
        if path == "/update":
            return self.put(rtype, body["inputs"], preview=body["preview"], create=False)
        if path == "/read":
            found = self.resources.get(body["id"])
            if found is None:
                return {"found": False}
            return {"found": True, "inputs": found.inputs, "outputs": found.outputs}
        if path == "/delete":
            self.delete(body["id"])
            return {}
        if path == "/invoke":
            return {"return": self.invoke(body["token"], body["args"])}
        raise ArmError(404, "NotFound", path)

    def check(
        self, rtype: str, urn: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> dict[str, Any]:
        """Inputs with azure-native's auto-name filled in (kept from the last run's), and
        what the Azure SDK model refuses."""
        if rtype not in NAME_KEY:
            raise ArmError(400, "UnsupportedType", f"the Azure twin does not model {rtype}")
        inputs = dict(news)
        key = NAME_KEY[rtype]
        if key not in inputs:
            if key in olds:
                inputs[key] = olds[key]
            elif rtype == "azure-native:authorization:RoleAssignment":
                inputs[key] = str(uuid.uuid4())
            else:
                inputs[key] = f"{urn.rsplit('::', 1)[1]}{uuid.uuid4().hex[:8]}"
        return {"inputs": inputs, "failures": validate(rtype, inputs, urn.rsplit("::", 1)[1])}

    def _id(self, rtype: str, inputs: dict[str, Any]) -> str:
        name = inputs[NAME_KEY[rtype]]
        if rtype == "azure-native:authorization:RoleAssignment":
            return f"{inputs['scope']}/providers/Microsoft.Authorization/roleAssignments/{name}"
        if rtype == DCRA:  # an extension resource of the resource it associates (the cluster)
            return (
                f"{inputs['resourceUri']}/providers/Microsoft.Insights"
                f"/dataCollectionRuleAssociations/{name}"
            )
        group = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{inputs['resourceGroupName']}"
        if rtype == "azure-native:resources:ResourceGroup":
            return group
        if rtype == "azure-native:network:Subnet":
            vnet = inputs["virtualNetworkName"]
            return f"{group}/providers/Microsoft.Network/virtualNetworks/{vnet}/subnets/{name}"
        if rtype in _PROVIDER_PATH:
            return f"{group}/providers/{_PROVIDER_PATH[rtype]}/{name}"
        cluster = (
            f"{group}/providers/Microsoft.ContainerService/managedClusters/{inputs['resourceName']}"
        )
        child = "agentPools" if rtype.endswith("AgentPool") else "maintenanceConfigurations"
        return f"{cluster}/{child}/{name}"

    def _parent(self, rtype: str, rid: str, inputs: dict[str, Any]) -> str | None:
        if rtype == "azure-native:resources:ResourceGroup":
            return None
        if rtype == "azure-native:authorization:RoleAssignment":
            return str(inputs["scope"])
        if rtype == DCRA:
            return str(inputs["resourceUri"])
        return (
            rid.rsplit("/", 2)[0]
            if "/subnets/" in rid or "/agentPools/" in rid or ("/maintenanceConfigurations/" in rid)
            else rid.split("/providers/", maxsplit=1)[0]
        )

    def put(
        self, rtype: str, inputs: dict[str, Any], *, preview: bool, create: bool
    ) -> dict[str, Any]:
        if any(v == UNKNOWN for v in _leaves(inputs)) or preview:
            outputs = {**inputs, "id": UNKNOWN, "name": inputs.get(NAME_KEY[rtype], UNKNOWN)}
            for key in _COMPUTED.get(rtype, ()):
                outputs[key] = UNKNOWN
            return {"id": "", "outputs": outputs}
        rid = self._id(rtype, inputs)
        parent = self._parent(rtype, rid, inputs)
        if parent is not None and _scope_resource(parent) not in self.resources:
            raise ArmError(404, "ParentResourceNotFound", f"{parent} does not exist ({rid})")
        if rtype == "azure-native:authorization:RoleAssignment":
            self._check_principal(inputs)
        for ref in references(rtype, inputs):
            if ref not in self.resources:
                raise ArmError(
                    400, "LinkedResourceNotFound", f"{ref} does not exist (referenced by {rid})"
                )
        old = self.resources.get(rid)
        if create and old is not None:
            raise ArmError(409, "Conflict", f"{rid} exists (azure-native: import it)")
        outputs = {**inputs, "id": rid, "name": inputs[NAME_KEY[rtype]]}
        outputs |= self._computed(rtype, rid, inputs, old)
        with self._lock:
            self.resources[rid] = Resource(rtype, rid, inputs, outputs)
        return {"id": rid, "outputs": outputs}

    def _check_principal(self, inputs: dict[str, Any]) -> None:
        principal, given = str(inputs["principalId"]), inputs.get("principalType")
        known = self.directory.get(principal)
        if known is None:
            raise ArmError(400, "PrincipalNotFound", f"Principal {principal} does not exist")
        if given is not None and given != known:
            raise ArmError(
                400,
                "UnmatchedPrincipalType",
                f"The PrincipalType {given} does not match principal {principal} ({known})",
            )

    def _computed(
        self, rtype: str, rid: str, inputs: dict[str, Any], old: Resource | None
    ) -> dict[str, Any]:
        kept = old.outputs if old is not None else {}
        if rtype == "azure-native:managedidentity:UserAssignedIdentity":
            principal = kept.get("principalId") or str(uuid.uuid4())
            self.directory[principal] = "ServicePrincipal"
            return {
                "principalId": principal,
                "clientId": kept.get("clientId") or str(uuid.uuid4()),
                "tenantId": TENANT,
            }
        if rtype == "azure-native:network:PublicIPAddress":
            return {"ipAddress": kept.get("ipAddress") or f"198.51.100.{random.randint(1, 254)}"}
        if rtype == "azure-native:containerservice:ManagedCluster":
            return self._managed_cluster(rid, inputs, kept)
        if rtype == AGENT_POOL:
            return self._agent_pool(inputs)
        return {"provisioningState": "Succeeded"}

    # ---- versions ----------------------------------------------------------------------------

    @property
    def base_version(self) -> str:
        """The version a new plane runs (the real tier's kube-apiserver)."""
        return binary_version(self.tools.kube_apiserver)

    @property
    def next_version(self) -> str | None:
        if self.next_control_plane is None:
            return None
        return binary_version(self.next_control_plane[0])

    def _available(self) -> list[str]:
        return [self.base_version, *([self.next_version] if self.next_version else [])]

    def _pool_version(
        self, pool: str, requested: str, control_plane: str, current: str | None = None
    ) -> str:
        """The version a pool runs for its request: when unset, the one it runs (a new pool:
        its cluster's; upstream/aks_rules.py `system-pool-version`: a pool is not upgraded with
        its control plane unless its orchestratorVersion is sent too); never above its control
        plane (AKS: NodePoolMcVersionIncompatible)."""
        if not requested:
            return current or control_plane
        version = resolve_version(requested, self._available())
        if version is None:
            raise ArmError(
                400,
                "AgentPoolK8sVersionNotSupported",
                f"Version {requested} is not supported in this region (agent pool {pool}).",
            )
        if minor_of(version) > minor_of(control_plane):
            raise ArmError(
                400,
                "NodePoolMcVersionIncompatible",
                f"Node pool version {version.removeprefix('v')} and control plane version "
                f"{control_plane.removeprefix('v')} are incompatible. Minor version of node pool "
                f"version {minor_of(version)[1]} is bigger than control plane version "
                f"{minor_of(control_plane)[1]}. {SKEW_POLICY}",
            )
        return version

    def _cluster_version(self, name: str, requested: str) -> str:
        """The control plane version a ManagedCluster PUT asks for, as AKS allows it: a new
        cluster at the twin's minor; an existing one at its own minor or the next."""
        cluster = self.clusters.get(name)
        if not requested:  # AKS's default version: here the one the twin has
            return cluster.version if cluster is not None else self.base_version
        if cluster is None:
            version = resolve_version(requested, self._available())
            if version is None:
                raise ArmError(
                    400,
                    "K8sVersionNotSupported",
                    f"Version {requested} is not supported in this region. Please use "
                    "[az aks get-versions] command to get the supported version list in this "
                    f"region (the Azure twin has {self._available()}).",
                )
            return version
        current = cluster.version
        if minor_of(requested) == minor_of(current):
            return current  # the patch channel's business, not this PUT's
        upgrades = [v for v in [self.next_version] if v and minor_of(v) > minor_of(current)]
        offered = ",".join(v.removeprefix("v") for v in upgrades)
        if minor_of(requested) < minor_of(current):
            raise ArmError(
                400,
                "OperationNotAllowed",
                f"Downgrading Kubernetes version {current.removeprefix('v')} to {requested} is "
                f"not allowed. Available upgrades: {offered}. {SUPPORTED_VERSIONS}",
            )
        version = resolve_version(requested, upgrades)
        if version is None or minor_of(version)[1] != minor_of(current)[1] + 1:
            raise ArmError(
                400,
                "OperationNotAllowed",
                f"Upgrading Kubernetes version {current.removeprefix('v')} to {requested} is "
                f"not allowed. Available upgrades: [{offered}]. {SUPPORTED_VERSIONS}",
            )
        return version

    def _step(self, started: float, cluster: str, what: str, version: str) -> None:
        self.upgrade_steps.append(UpgradeStep(started, time.monotonic(), cluster, what, version))

    def _upgrade_pool(self, cluster: str, pool: str, version: str) -> None:
        """A pool's nodes to `version`, surge then drain (AKS's UpgradeFailed when a drain stays
        blocked at its timeout)."""
        if self.nodes is None:
            return
        started = time.monotonic()
        try:
            record = self.nodes.upgrade(cluster, pool, version, self._on_main)
        except UpgradeBlockedError as exc:
            blocked = {pod: why for d in exc.record.drains for pod, why in d.blocked.items()}
            raise ArmError(
                409,
                "UpgradeFailed",
                f"Drain of nodes of agent pool {pool} did not complete within its drain timeout: "
                f"{blocked} (the twin: {exc.record.summary()})",
            ) from exc
        if record is not None:
            self._step(started, cluster, f"pool {pool}", version)

    def _agent_pool(self, inputs: dict[str, Any]) -> dict[str, Any]:
        cluster_name, pool = str(inputs["resourceName"]), str(inputs["agentPoolName"])
        cluster = self.clusters.get(cluster_name)
        if cluster is None:
            return {"provisioningState": "Succeeded"}
        requested = str(inputs.get("orchestratorVersion") or "")
        rid = self._id("azure-native:containerservice:AgentPool", inputs)
        old = self.resources.get(rid)
        current = str(old.outputs.get("currentOrchestratorVersion") or "") if old else ""
        version = self._pool_version(pool, requested, cluster.version, _v(current))
        if self.nodes is not None:
            self.nodes.pool_put(cluster_name, inputs, self._on_main, version)
            self._upgrade_pool(cluster_name, pool, version)
        return {
            "currentOrchestratorVersion": version.removeprefix("v"),
            "provisioningState": "Succeeded",
        }

    def _managed_cluster(
        self, rid: str, inputs: dict[str, Any], kept: dict[str, Any]
    ) -> dict[str, Any]:
        name = str(inputs["resourceName"])
        version = self._cluster_version(name, str(inputs.get("kubernetesVersion") or ""))
        profiles = [dict(p) for p in inputs.get("agentPoolProfiles") or []]
        running = {
            str(p.get("name")): _v(str(p.get("currentOrchestratorVersion") or ""))
            for p in kept.get("agentPoolProfiles") or []
        }
        pools = {
            str(p["name"]): self._pool_version(
                str(p["name"]),
                str(p.get("orchestratorVersion") or ""),
                version,
                running.get(str(p["name"])),
            )
            for p in profiles
        }
        if name not in self.clusters:
            self.clusters[name] = self._start_cluster(name, version)
        cluster = self.clusters[name]
        if version != cluster.version:  # the control plane first, as AKS upgrades
            assert self.next_control_plane is not None
            binaries, started = self.next_control_plane, time.monotonic()
            self._on_main(lambda: cluster.plane.swap_control_plane(*binaries))
            cluster.version = version
            self._step(started, name, "control plane", version)
        bind_admin_groups(cluster.plane, inputs)
        if self.nodes is not None:
            self.nodes.cluster_put(name, inputs, self._on_main, pools)
            for pool, moved in pools.items():
                self._upgrade_pool(name, pool, moved)
        for profile in profiles:
            profile["currentOrchestratorVersion"] = pools[str(profile["name"])].removeprefix("v")
        addons = dict(inputs.get("addonProfiles") or {})
        if ACI_ADDON in addons and (addons[ACI_ADDON] or {}).get("enabled"):
            old = ((kept.get("addonProfiles") or {}).get(ACI_ADDON) or {}).get("identity") or {}
            identity = old or {
                "clientId": str(uuid.uuid4()),
                "objectId": str(uuid.uuid4()),
                "resourceId": f"{rid}/aci-identity",
            }
            self.directory[identity["objectId"]] = "ServicePrincipal"
            addons[ACI_ADDON] = {**addons[ACI_ADDON], "identity": identity}
        identity: dict[str, Any] = dict(inputs.get("identity") or {"type": "SystemAssigned"})
        # azure-native takes user-assigned identity ids as a list; ARM answers with a map.
        assigned = identity.get("userAssignedIdentities")
        if isinstance(assigned, list):
            identity["userAssignedIdentities"] = {
                str(i): {"principalId": "", "clientId": ""} for i in assigned
            }
        identity |= {"tenantId": TENANT}
        return {
            "identity": identity,
            "fqdn": cluster.relay.address,
            "addonProfiles": addons,
            "oidcIssuerProfile": {
                "enabled": True,
                "issuerURL": f"https://twin.oic.example/{TENANT}/{name}/",
            },
            "currentKubernetesVersion": version.removeprefix("v"),
            "agentPoolProfiles": profiles,
            "provisioningState": "Succeeded",
            "powerState": {"code": "Running"},
            "nodeResourceGroup": f"MC_{inputs['resourceGroupName']}_{name}",
        }

    def _start_cluster(self, name: str, version: str) -> Cluster:
        """A new cluster's plane and Kueue. Only the spawns run on the main thread; the waits
        run on the caller's (an HTTP handler's), so the engine's parallel ManagedCluster creates
        start their planes in parallel, as `start_all` starts several."""
        relay = Relay(("127.0.0.1", 0))  # bound now: its address goes into the certificate
        webhook = self.workdir / f"authorization-{name}.kubeconfig"
        webhook.write_text(webhook_kubeconfig(f"{self.url}/authorize/{name}"))
        # The Entra ID user kubelogin signs in as: its object id is what role assignments name,
        # its groups what adminGroupObjectIDs name (kube-apiserver's token file: token, user,
        # uid, "groups").
        tokens = self.workdir / f"tokens-{name}.csv"
        groups = f',"{",".join(self.deployer_groups)}"' if self.deployer_groups else ""
        tokens.write_text(f"{TOKEN},{ENTRA_USER},{DEPLOYER_OBJECT_ID}{groups}\n")
        tools = self.tools
        if version != self.base_version and self.next_control_plane is not None:
            tools = dataclasses.replace(
                tools,
                kube_apiserver=self.next_control_plane[0],
                kube_controller_manager=self.next_control_plane[1],
            )
        plane = ControlPlane(
            name,
            self.workdir / "clusters" / name,
            tools,
            apiserver_args=(
                f"--token-auth-file={tokens}",
                # Appended to the plane's Node,RBAC (a repeated list flag adds to it): AKS's
                # guard after Kubernetes RBAC. Its answers are cached as kube-apiserver caches
                # any webhook's, a "no" for 5 s (default 30 s) so that `up`'s wait sees a grant
                # within seconds of its propagation.
                "--authorization-mode=Webhook",
                f"--authorization-webhook-config-file={webhook}",
                "--authorization-webhook-version=v1",
                "--authorization-webhook-cache-unauthorized-ttl=5s",
            ),
            controllers=PLANE_CONTROLLERS,  # testkit/realtier/azure_nodes.py
            server_ips=(relay.address,),
        )
        kueue: KueueManager | None = None
        try:
            self._on_main(lambda: (plane._prepare(), plane._launch_etcd()))
            _await([plane], "etcd", ControlPlane._etcd_ready, ETCD_TIMEOUT)
            self._on_main(plane._launch_apiserver)
            _await([plane], "apiserver", ControlPlane._apiserver_ready, APISERVER_TIMEOUT)
            self._on_main(plane._launch_controller_manager)
            _await(
                [plane],
                "controller_manager",
                ControlPlane._controller_manager_ready,
                CONTROLLER_MANAGER_TIMEOUT,
            )
            relay.target = ("127.0.0.1", int(plane.url.rsplit(":", 1)[1]))
            install_crds(plane, self.kueue_crds)
            if self.nodes is not None:
                self.nodes.start(plane, self._on_main)
            kueue = self.kueue_for(plane)
            if kueue is not None:
                started = kueue
                self._on_main(lambda: started.launch(self.tools.openssl))
                await_each(
                    [started], "kueue", KueueManager.ready, lambda m: m.tail(), KUEUE_TIMEOUT
                )
                if self.kueue_webhooks is not None:
                    kueue_webhooks.register(plane, started, self.kueue_webhooks)
        except BaseException:
            relay.close()
            with contextlib.suppress(Exception):
                if kueue is not None:
                    self._on_main(lambda: stop_kueues([kueue]))
            self._on_main(lambda: stop_all([plane]))
            raise
        return Cluster(plane, kueue, relay, version)

    def _stop_cluster(self, cluster: Cluster) -> None:
        if self.nodes is not None:
            self.nodes.forget(cluster.plane.name)
        cluster.relay.close()
        try:
            if cluster.kueue is not None:
                stop_kueues([cluster.kueue])
        finally:
            stop_all([cluster.plane])

    def delete(self, rid: str) -> None:
        found = self.resources.get(rid)
        if found is None:
            return  # ARM: deleting what is gone is a 204
        children = [r for r in self.resources if r != rid and r.startswith(rid + "/")]
        if found.rtype == "azure-native:resources:ResourceGroup":
            for child in children:  # ARM deletes a group with everything in it
                self.delete(child)
        if found.rtype == "azure-native:containerservice:ManagedCluster":
            name = str(found.inputs["resourceName"])
            cluster = self.clusters.pop(name, None)
            if cluster is not None:
                self.namespaces_at_delete[name] = active_namespaces(cluster.plane)
                self._on_main(lambda: self._stop_cluster(cluster))
            for child in children:
                self.resources.pop(child, None)
        if found.rtype == AGENT_POOL and self.nodes is not None:
            cluster_name, pool = found.inputs["resourceName"], found.inputs["agentPoolName"]
            self.nodes.pool_deleted(str(cluster_name), str(pool), self._on_main)
        with self._lock:
            self.resources.pop(rid, None)

    def invoke(self, token: str, args: dict[str, Any]) -> dict[str, Any]:
        if token == "azure-native:authorization:getClientConfig":
            return {
                "clientId": AZURE_CLI_CLIENT_ID,
                "objectId": DEPLOYER_OBJECT_ID,
                "subscriptionId": SUBSCRIPTION,
                "tenantId": TENANT,
            }
        if token == "azure-native:containerservice:listManagedClusterUserCredentials":
            group, name = args["resourceGroupName"], args["resourceName"]
            rid = (
                f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{group}"
                f"/providers/Microsoft.ContainerService/managedClusters/{name}"
            )
            if rid not in self.resources or name not in self.clusters:
                raise ArmError(404, "ResourceNotFound", f"{rid} not found")
            document = self.user_kubeconfig(group, name)
            value = base64.b64encode(document.encode()).decode()
            return {"kubeconfigs": [{"name": "clusterUser", "value": value}]}
        raise ArmError(400, "UnsupportedFunction", f"the Azure twin does not model {token}")

    def user_kubeconfig(self, group: str, name: str) -> str:
        """AKS's `format=exec` user kubeconfig of an Entra ID cluster."""
        cluster = self.clusters[name]
        ca = base64.b64encode(cluster.plane.ca_cert.read_bytes()).decode()
        user = f"clusterUser_{group}_{name}"
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": name,
                    "cluster": {
                        "certificate-authority-data": ca,
                        "server": f"https://{cluster.relay.address}:443",
                    },
                }
            ],
            "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
            "current-context": name,
            "preferences": {},
            "users": [
                {
                    "name": user,
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "kubelogin",
                            "args": [
                                "get-token",
                                "--environment",
                                "AzurePublicCloud",
                                "--server-id",
                                AKS_SERVER_ID,
                                "--client-id",
                                AZURE_CLI_CLIENT_ID,
                                "--tenant-id",
                                TENANT,
                                "--login",
                                "devicecode",
                            ],
                            "env": None,
                            "installHint": "kubelogin is not installed",
                            "interactiveMode": "IfAvailable",
                            "provideClusterInfo": False,
                        }
                    },
                }
            ],
        }
        return yaml.safe_dump(doc, sort_keys=False)

    def of_type(self, rtype: str) -> list[Resource]:
        return [r for r in self.resources.values() if r.rtype == f"azure-native:{rtype}"]


# Outputs ARM computes (unknown in a preview).
_COMPUTED: Final[dict[str, tuple[str, ...]]] = {
    "azure-native:managedidentity:UserAssignedIdentity": ("principalId", "clientId", "tenantId"),
    "azure-native:network:PublicIPAddress": ("ipAddress",),
    "azure-native:containerservice:ManagedCluster": (
        "fqdn",
        "addonProfiles",
        "oidcIssuerProfile",
        "currentKubernetesVersion",
    ),
}


def bind_admin_groups(plane: ControlPlane, inputs: dict[str, Any]) -> None:
    """AKS's binding of `aadProfile.adminGroupObjectIDs` on the cluster, kept equal to the list
    the ManagedCluster was last sent (none: no binding)."""
    groups = admin_groups(inputs)
    if groups:
        applied = apply(plane, [admin_groups_binding(groups)])
        assert not applied.rejected, applied.stderr
    else:
        plane.kubectl("delete", "clusterrolebinding", ADMIN_GROUPS_BINDING, "--ignore-not-found")


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for v in value.values():  # pyright: ignore[reportUnknownVariableType]
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:  # pyright: ignore[reportUnknownVariableType]
            yield from _leaves(v)
    else:
        yield value


def references(rtype: str, inputs: dict[str, Any]) -> list[str]:
    """The ids of other resources a resource's inputs name, which must exist when it is put: a
    data collection rule's endpoint and destination workspaces, an association's rule, a
    Prometheus rule group's scopes (the workspace)."""
    if rtype == "azure-native:monitor:DataCollectionRule":
        accounts = (inputs.get("destinations") or {}).get("monitoringAccounts") or []
        found = [inputs.get("dataCollectionEndpointId")]
        found += [a.get("accountResourceId") for a in accounts]
    elif rtype == DCRA:
        found = [inputs.get("dataCollectionRuleId"), inputs.get("dataCollectionEndpointId")]
    elif rtype == "azure-native:alertsmanagement:PrometheusRuleGroup":
        found = list(inputs.get("scopes") or [])
    else:
        found = []
    return [str(f) for f in found if f]


def _scope_resource(scope: str) -> str:
    """The resource a role assignment scope names (an AKS namespace scope is its cluster)."""
    return scope.split("/namespaces/", maxsplit=1)[0]


def validate(rtype: str, inputs: dict[str, Any], name: str = "") -> list[dict[str, str]]:
    """Check failures the twin finds in a resource's inputs: what Azure's SDK model of the API
    version azure-native sends refuses (checks/azure_api.py's reading, here on the inputs
    the engine sends), and ARM's own rules kept small."""
    failures: list[dict[str, str]] = []
    if rtype in azure_api.TYPES and not any(v == UNKNOWN for v in _leaves(inputs)):
        failures += [
            {"property": f.property, "reason": f"{f} (the Azure twin: Azure's model)"}
            for f in azure_api.check_request(rtype, name, inputs)
        ]
    if rtype == "azure-native:authorization:RoleAssignment":
        given = inputs.get("principalType")
        if given is not None and given not in PRINCIPAL_TYPES:
            failures.append(
                {"property": "principalType", "reason": f"not one of {PRINCIPAL_TYPES}"}
            )
    if rtype == "azure-native:containerservice:AgentPool":
        name = str(inputs.get("agentPoolName", ""))
        if name != UNKNOWN and not (name.isalnum() and name.islower() and len(name) <= 12):
            failures.append(
                {"property": "agentPoolName", "reason": "1-12 lowercase letters and digits (AKS)"}
            )
    return failures


def _v(version: str) -> str | None:
    """A version as the twin keeps it ("v1.36.3"), from ARM's form ("1.36.3"); None if empty."""
    return f"v{version.removeprefix('v')}" if version else None
