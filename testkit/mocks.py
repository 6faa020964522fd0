"""A strict Pulumi mocks engine for running the real program offline, shared by the tests and
`scripts/bench.py`: every registration is recorded (`Graph`), duplicate URNs fail as in the engine,
unmocked invokes fail loudly, and each engine is torn down completely (`mocked_engine`).

Pitfalls this guards against (each measured with pulumi 3.272): module-level set_mocks leaking
across files, duplicate URNs passing silently, asyncio noise printed after pytest's summary,
unmocked invokes answering None. Importing it sets what makes the mocks faithful: `str(Output)`
raises instead of lying, and the k8s SDK's `PULUMI_K8S_*`/`KUBECONFIG` defaults are removed.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest.mock import patch

os.environ.setdefault("PULUMI_ERROR_OUTPUT_STRING", "1")  # str(Output) raises instead of lying
for var in [v for v in os.environ if v.startswith("PULUMI_K8S_") or v == "KUBECONFIG"]:
    del os.environ[var]  # the k8s SDK reads these as defaults for Provider inputs

import pulumi  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from pulumi.runtime import mocks as pulumi_mocks  # noqa: E402
from pulumi.runtime.settings import ROOT as ROOT_RESOURCE  # noqa: E402
from pulumi.runtime.settings import SETTINGS  # noqa: E402

from builders.authorization import Observation  # noqa: E402
from builders.kubeconfig import Connection  # noqa: E402
from components import authorization  # noqa: E402
from constants import PROJECT  # noqa: E402

FAKE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: https://{name}.hcp.westeurope.azmk8s.io:443
    certificate-authority-data: Q0EK
contexts:
- name: {name}
  context: {{cluster: {name}, user: clusterUser}}
current-context: {name}
users:
- name: clusterUser
  user: {{client-certificate-data: Q0VSVAo=, client-key-data: S0VZCg==, token: fake}}
"""


SECRET_SIG = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")


def is_secret(value: Any) -> bool:
    """Whether a recorded input is a Pulumi secret (the engine's wire signature)."""
    return isinstance(value, dict) and value.get(SECRET_SIG[0]) == SECRET_SIG[1]


@dataclass
class Registered:
    """One resource registration as the engine would see it."""

    type: str
    name: str
    urn: str
    inputs: dict[str, Any]
    parent: str
    provider: str
    dependencies: list[str]
    ignore_changes: list[str]
    additional_secret_outputs: list[str]
    custom: bool
    replace_on_changes: list[str] = field(default_factory=list[str])
    delete_before_replace: bool = False
    # The `version` option the SDK sent: for a provider, the plugin version the engine loads.
    version: str = ""
    # The `deleted_with` option: the URN whose deletion takes this resource with it.
    deleted_with: str = ""


# The input that carries a resource's Azure name (the provider auto-names it when absent).
AZURE_NAME_INPUT = {
    "azure-native:resources:ResourceGroup": "resourceGroupName",
    "azure-native:network:VirtualNetwork": "virtualNetworkName",
    "azure-native:network:Subnet": "subnetName",
    "azure-native:network:PublicIPAddress": "publicIpAddressName",
    "azure-native:containerservice:AgentPool": "agentPoolName",
}

# What AKS returns for `listClusterUserCredential?format=exec` on an Entra ID cluster.
FAKE_EXEC_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: https://{name}.hcp.westeurope.azmk8s.io:443
    certificate-authority-data: Q0EK
contexts:
- name: {name}
  context: {{cluster: {name}, user: clusterUser_rg_{name}}}
current-context: {name}
users:
- name: clusterUser_rg_{name}
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: kubelogin
      args: [get-token, --environment, AzurePublicCloud, --server-id,
             6dae42f8-4368-4678-94ff-3960e28e3630, --client-id,
             80faf920-1908-4b52-b5ef-a8e7bedfc67a, --tenant-id, t, --login, devicecode]
      provideClusterInfo: false
"""


class RecordingMocks(pulumi.runtime.Mocks):
    """Returns inputs as outputs, plus what Azure would compute; fails loudly on unknown invokes."""

    def __init__(self) -> None:
        self.calls: list[pulumi.runtime.MockCallArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        out = dict(args.inputs)
        if args.typ.startswith("azure-native:"):
            # Provider-side auto-naming and computed outputs do not exist in mocks.
            name_input = AZURE_NAME_INPUT.get(args.typ, "resourceName")
            out.setdefault("name", args.inputs.get(name_input, args.name))
            out.setdefault("id", f"/subscriptions/sub/resourceGroups/rg/providers/x/{args.name}")
        if args.typ == "azure-native:containerservice:ManagedCluster":
            name = out["name"]
            out["fqdn"] = f"{name}-abc123.hcp.westeurope.azmk8s.io"
            given = args.inputs.get("identity") or {}
            if given.get("type") == "UserAssigned":
                # Sent as a list of ids; AKS answers with a map of id -> identity.
                ids = given.get("userAssignedIdentities") or []
                out["identity"] = {
                    "type": "UserAssigned",
                    "userAssignedIdentities": {i: {"principalId": f"{i}-p"} for i in ids},
                }
            else:
                out["identity"] = {"type": "SystemAssigned", "principalId": f"{name}-principal"}
            out["oidcIssuerProfile"] = {"enabled": True, "issuerURL": f"https://oidc/{name}/"}
            addons = out.get("addonProfiles") or {}
            for addon in addons.values():
                addon["identity"] = {"objectId": f"{name}-aci-identity"}
            out.setdefault("nodeResourceGroup", f"MC_rg_{name}_westeurope")
        if args.typ == "azure-native:managedidentity:UserAssignedIdentity":
            out["principalId"] = f"{args.name}-principal"
            out["clientId"] = f"{args.name}-client"
        if args.typ == "azure-native:network:PublicIPAddress":
            out.setdefault("ipAddress", "20.1.2.3")
        if args.typ == "kubernetes:core/v1:Secret" and not out.get("data"):
            if args.inputs.get("type") == "kubernetes.io/service-account-token":
                # The token controller fills these (pulumi-kubernetes waits for it).
                account = args.inputs["metadata"]["name"]
                data = {"token": f"token-of-{account}", "ca.crt": "CA", "namespace": "ns"}
                out["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
            elif args.resource_id and args.resource_id.endswith("-kubeconfig"):
                # Secret.get of a kubeconfig a chart's hook job wrote (Karmada).
                doc = FAKE_KUBECONFIG.format(name="karmada-apiserver")
                out["data"] = {"kubeconfig": base64.b64encode(doc.encode()).decode()}
        return f"{args.name}_id", out

    def call(
        self, args: pulumi.runtime.MockCallArgs
    ) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        self.calls.append(args)
        answer = INVOKES.get(args.token)
        if answer is None:
            raise NotImplementedError(f"unmocked invoke {args.token}")
        return answer(args.args), []


def _user_credentials(args: dict[str, Any]) -> dict[str, Any]:
    template = FAKE_EXEC_KUBECONFIG if args.get("format") == "exec" else FAKE_KUBECONFIG
    doc = template.format(name=args["resourceName"])
    value = base64.b64encode(doc.encode()).decode()
    return {"kubeconfigs": [{"name": "clusterUser", "value": value}]}


INVOKES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "azure-native:containerservice:listManagedClusterUserCredentials": _user_credentials,
    "azure-native:authorization:getClientConfig": lambda _: {
        "subscriptionId": "00000000-0000-0000-0000-000000000000",
        "tenantId": "t",
        "clientId": "c",
        "objectId": "o",
    },
}


class StrictMonitor(pulumi_mocks.MockMonitor):
    """Records raw registration requests and rejects duplicate URNs, as the engine does."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.registered: dict[str, Registered] = {}
        self.reads: dict[str, Registered] = {}

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type != "pulumi:pulumi:Stack":
            if urn in self.registered:
                raise ValueError(f"Duplicate resource URN '{urn}'; try giving it a unique name")
            inputs = json_format.MessageToDict(request.object) if request.object else {}
            self.registered[urn] = Registered(
                type=request.type,
                name=request.name,
                urn=urn,
                inputs=inputs,
                parent=request.parent,
                provider=request.provider,
                dependencies=list(request.dependencies),
                ignore_changes=list(request.ignoreChanges),
                additional_secret_outputs=list(request.additionalSecretOutputs),
                custom=request.custom,
                replace_on_changes=list(request.replaceOnChanges),
                delete_before_replace=request.deleteBeforeReplace,
                version=request.version,
                deleted_with=request.deletedWith,
            )
        return super().RegisterResource(request)

    def ReadResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        """A `.get` read: recorded apart (`reads`), since it creates nothing."""
        urn = self.make_urn(request.parent, request.type, request.name)
        self.reads[urn] = Registered(
            type=request.type,
            name=request.name,
            urn=urn,
            inputs={"id": request.id},
            parent=request.parent,
            provider=request.provider,
            dependencies=list(request.dependencies),
            ignore_changes=[],
            additional_secret_outputs=list(request.additionalSecretOutputs),
            custom=True,
            version=request.version,
        )
        return super().ReadResource(request)


@dataclass
class Graph:
    """What a test's program registered, with small queries over it."""

    monitor: StrictMonitor
    mocks: RecordingMocks
    stack_urn: str = ""
    _by_urn: dict[str, Registered] = field(default_factory=dict[str, Registered])
    # The API servers `up` asked whether the identity is authorized (components/authorization.py),
    # and what they answer: every probe allowed unless a test says otherwise.
    asked: list[Connection] = field(default_factory=list[Connection])
    answer: Observation = field(default_factory=lambda: Observation(identity="'mock-deployer'"))
    on_ask: Callable[[Connection], None] | None = None  # sees the graph when a server is asked

    def open_api_server(self, conn: Connection) -> Callable[[Any, float], Observation]:
        self.asked.append(conn)
        if self.on_ask is not None:
            self.on_ask(conn)
        return lambda _probes, _budget: self.answer

    @property
    def resources(self) -> list[Registered]:
        return list(self.monitor.registered.values())

    @property
    def reads(self) -> list[Registered]:
        """The `.get` reads of existing objects (not among `resources`)."""
        return list(self.monitor.reads.values())

    def of_type(self, type_: str) -> list[Registered]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str, name: str) -> Registered:
        found = [r for r in self.of_type(type_) if r.name == name]
        assert len(found) == 1, f"expected one {type_} named {name}, found {len(found)}"
        return found[0]

    def by_urn(self, urn: str) -> Registered:
        """A registered resource or a `.get` read: both can be another resource's dependency."""
        found = self.monitor.registered.get(urn) or self.monitor.reads.get(urn)
        assert found is not None, f"no resource and no read has URN {urn}"
        return found

    def provider_urn(self, r: Registered) -> str:
        """The URN part of a resource's provider reference (`urn::id`)."""
        return r.provider.rsplit("::", 1)[0] if r.provider else ""

    def ancestors(self, r: Registered) -> list[Registered]:
        out: list[Registered] = []
        parent = r.parent
        while parent in self.monitor.registered:
            out.append(self.monitor.registered[parent])
            parent = self.monitor.registered[parent].parent
        return out


def _quiet(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    message = str(context.get("message", ""))
    if "was never retrieved" in message or "Task was destroyed" in message:
        return
    loop.default_exception_handler(context)


@contextmanager
def mocked_engine(stack: str = "test", *, preview: bool = False) -> Iterator[Graph]:
    """A fresh mocks engine: set up, yield, and tear everything down (even on failure)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.set_exception_handler(_quiet)
    mocks = RecordingMocks()
    monitor = StrictMonitor(mocks)
    # set_mocks keeps an existing root Stack: drop it so outputs never leak between tests.
    ROOT_RESOURCE.set(None)
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=preview, monitor=monitor)
    g = Graph(monitor=monitor, mocks=mocks)
    # No test reaches an API server: the authorization wait asks the graph instead.
    patched = patch.object(authorization, "open_api_server", g.open_api_server)
    try:
        with patched:
            yield g
    finally:
        pulumi.runtime.config.set_all_config({}, [])
        settings: Any = SETTINGS  # attributes are set dynamically; not in its type
        settings.rpc_manager.clear()
        settings.outputs.clear()
        gc.collect()
        asyncio.set_event_loop(None)
        loop.close()


@dataclass
class BuiltStack:
    """A committed stack's Fleet, built once under mocks: its graph and resolved outputs."""

    graph: Graph
    outputs: dict[str, tuple[Any, bool]]


_BUILT: dict[str, BuiltStack] = {}


def built_stack(stack: str) -> BuiltStack:
    """Build `Pulumi.<stack>.yaml`'s Fleet once per session (evaluation is the slow part).

    Tests only read the recorded registrations, so sharing them cannot leak engine state.
    """
    if stack not in _BUILT:
        from checks.stack import load_from_file  # noqa: PLC0415
        from components.fleet import Fleet, FleetArgs  # noqa: PLC0415 - after sys.path setup

        fleet_config, _ = load_from_file(stack)
        with mocked_engine(stack) as g:
            fleet = run_program(lambda: Fleet("fleet", FleetArgs(config=fleet_config, stack=stack)))
            outputs = {
                "kubeconfigs": resolve(fleet.kubeconfigs),
                **{f"kubeconfig:{n}": resolve(c.kubeconfig) for n, c in fleet.clusters.items()},
                **{
                    f"provider-kubeconfig:{n}": resolve(c.provider_kubeconfig)
                    for n, c in fleet.clusters.items()
                },
            }
        _BUILT[stack] = BuiltStack(graph=g, outputs=outputs)
    return _BUILT[stack]


def run_program(fn: Callable[[], Any]) -> Any:
    """Run `fn` under the mocks and wait for every registration, invoke and apply it started."""
    result: dict[str, Any] = {}

    @pulumi.runtime.test
    def _run() -> Any:
        value = fn()
        result["value"] = value
        return pulumi.Output.from_input(None)

    _run()
    return result.get("value")


def stack_outputs() -> dict[str, tuple[Any, bool]]:
    """What `pulumi.export` exported in this engine, resolved: name -> (value, is_secret)."""
    from pulumi.runtime.settings import get_root_resource  # noqa: PLC0415

    root: Any = get_root_resource()
    return {name: resolve(value) for name, value in root.outputs.items()}


def resolve(output: Any) -> Any:
    """The value of an Output (after run_program), with its secretness: (value, is_secret)."""
    box: dict[str, Any] = {}

    @pulumi.runtime.test
    def _get() -> Any:
        return pulumi.Output.all(output, pulumi.Output.from_input(output).is_secret()).apply(
            lambda v: box.update(value=v[0], secret=v[1])
        )

    _get()
    return box["value"], box["secret"]


def set_stack_config(raw: dict[str, Any], location: str | None = "westeurope") -> None:
    values = {f"{PROJECT}:fleet": json.dumps(raw)}
    if location:
        values["azure-native:location"] = location
    pulumi.runtime.config.set_all_config(values, [])
