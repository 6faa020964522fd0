"""A stand-in `azure-native` resource provider plugin: the provider gRPC protocol, forwarded.

The real engine starts it as `pulumi-resource-azure-native` (testkit/realtier/azure_twin.py writes
that two-line plugin into the test's plugin directory, which is on the engine's PATH) and reads
the port it prints. Every call that touches state goes as JSON over HTTP to the Azure twin in the
test process (`AZURE_TWIN_URL`), so the state lives there, survives engine runs, and the test can
look at it. What stays here is the protocol and azure-native's replace-on-change table (`Diff`).

Run: `python -m testkit.realtier.azure_provider` (the engine's address argument is ignored).
"""

# The servicer's method names and signatures are the protocol's (provider_pb2_grpc).
# ruff: noqa: N802, ARG002

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from concurrent import futures
from typing import Any, Final, NoReturn

import grpc
from google.protobuf import empty_pb2, struct_pb2
from google.protobuf.json_format import MessageToDict
from pulumi.runtime.proto import plugin_pb2, provider_pb2, provider_pb2_grpc

# The version the program pins (pyproject.toml: pulumi-azure-native==3.29.0).
VERSION: Final = "3.29.0"
URL_ENV: Final = "AZURE_TWIN_URL"
UNKNOWN: Final = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the engine's unknown-value sentinel
# A create of a ManagedCluster starts a plane and Kueue on 2 busy cores.
CALL_TIMEOUT: Final = 600.0

# Properties whose change azure-native replaces (its schema's `forceNew`/replaceOnChanges and
# ARM's immutable path parameters) for the types the program makes. Path parameters (the
# resource's names and its group) and `location` are replaced for every type.
_ALWAYS: Final = ("resourceGroupName", "location")
REPLACE_ON: Final[dict[str, tuple[str, ...]]] = {
    "azure-native:resources:ResourceGroup": ("resourceGroupName", "location"),
    "azure-native:network:VirtualNetwork": (*_ALWAYS, "virtualNetworkName"),
    "azure-native:network:Subnet": ("resourceGroupName", "virtualNetworkName", "subnetName"),
    "azure-native:network:PublicIPAddress": (*_ALWAYS, "publicIpAddressName", "sku", "zones"),
    "azure-native:managedidentity:UserAssignedIdentity": (*_ALWAYS, "resourceName"),
    # A role assignment cannot be changed in place (ARM: RoleAssignmentUpdateNotPermitted).
    "azure-native:authorization:RoleAssignment": (
        "scope",
        "roleAssignmentName",
        "principalId",
        "principalType",
        "roleDefinitionId",
    ),
    "azure-native:containerservice:ManagedCluster": (*_ALWAYS, "resourceName", "dnsPrefix"),
    "azure-native:containerservice:AgentPool": (
        "resourceGroupName",
        "resourceName",
        "agentPoolName",
        "vmSize",
        "osDiskSizeGB",
        "osDiskType",
        "osType",
        "osSKU",
        "vnetSubnetID",
        "availabilityZones",
        "maxPods",
        "enableEncryptionAtHost",
        "scaleSetPriority",
    ),
    "azure-native:containerservice:MaintenanceConfiguration": (
        "resourceGroupName",
        "resourceName",
        "configName",
    ),
    "azure-native:monitor:AzureMonitorWorkspace": (*_ALWAYS, "azureMonitorWorkspaceName"),
    "azure-native:monitor:DataCollectionEndpoint": (*_ALWAYS, "dataCollectionEndpointName"),
    "azure-native:monitor:DataCollectionRule": (*_ALWAYS, "dataCollectionRuleName"),
    # An extension resource: its scope (the cluster) and name are its id.
    "azure-native:monitor:DataCollectionRuleAssociation": ("resourceUri", "associationName"),
    "azure-native:alertsmanagement:PrometheusRuleGroup": (*_ALWAYS, "ruleGroupName"),
}


def _dict(message: struct_pb2.Struct) -> dict[str, Any]:
    return MessageToDict(message, preserving_proto_field_name=True)


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(value)
    return out


def _call(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST `body` to the twin; its error message becomes the gRPC error the engine shows."""
    request = urllib.request.Request(
        os.environ[URL_ENV] + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=CALL_TIMEOUT) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise TwinRefusedError(exc.read().decode(errors="replace")) from None


class TwinRefusedError(Exception):
    """The twin answered with an ARM error (its text is the message)."""


def _abort(context: grpc.ServicerContext, exc: TwinRefusedError) -> NoReturn:
    context.abort(grpc.StatusCode.UNKNOWN, str(exc))
    raise exc  # abort raises; this line is for the type checker


def _type_of(urn: str) -> str:
    # urn:pulumi:<stack>::<project>::<parent$>...<type>::<name>
    return urn.split("::")[2].rsplit("$", maxsplit=1)[-1]


def diff(
    rtype: str, olds: dict[str, Any], news: dict[str, Any], ignore: list[str]
) -> tuple[list[str], list[str]]:
    """(changed top-level input keys, those azure-native replaces) between two input sets."""
    keys = sorted(set(olds) | set(news))
    changed = [
        k for k in keys if k not in ignore and not k.startswith("__") and olds.get(k) != news.get(k)
    ]
    replaces = [k for k in changed if k in REPLACE_ON.get(rtype, _ALWAYS)]
    return changed, replaces


class Provider(provider_pb2_grpc.ResourceProviderServicer):
    """Protocol in, JSON to the twin out."""

    def GetPluginInfo(self, request: empty_pb2.Empty, context: Any) -> plugin_pb2.PluginInfo:
        return plugin_pb2.PluginInfo(version=VERSION)

    def GetSchema(self, request: Any, context: Any) -> provider_pb2.GetSchemaResponse:
        # Minimal: the Python SDK carries the types; the engine needs no schema for `up`.
        return provider_pb2.GetSchemaResponse(
            schema=json.dumps({"name": "azure-native", "version": VERSION})
        )

    def CheckConfig(self, request: Any, context: Any) -> provider_pb2.CheckResponse:
        return provider_pb2.CheckResponse(inputs=request.news)

    def DiffConfig(self, request: Any, context: Any) -> provider_pb2.DiffResponse:
        return provider_pb2.DiffResponse(changes=provider_pb2.DiffResponse.DIFF_NONE)

    def Configure(self, request: Any, context: Any) -> provider_pb2.ConfigureResponse:
        return provider_pb2.ConfigureResponse(
            acceptSecrets=False, supportsPreview=True, acceptResources=False
        )

    def Check(self, request: Any, context: Any) -> provider_pb2.CheckResponse:
        try:
            answer = _call(
                "/check",
                {
                    "type": _type_of(request.urn),
                    "urn": request.urn,
                    "olds": _dict(request.olds),
                    "news": _dict(request.news),
                },
            )
        except TwinRefusedError as exc:
            _abort(context, exc)
        failures = [
            provider_pb2.CheckFailure(property=f["property"], reason=f["reason"])
            for f in answer.get("failures", [])
        ]
        return provider_pb2.CheckResponse(inputs=_struct(answer["inputs"]), failures=failures)

    def Diff(self, request: Any, context: Any) -> provider_pb2.DiffResponse:
        rtype = _type_of(request.urn)
        news = _dict(request.news)
        olds = _dict(request.old_inputs)
        if not olds:  # an old state without inputs: its outputs, on the keys given now
            olds = {k: v for k, v in _dict(request.olds).items() if k in news}
        changed, replaces = diff(rtype, olds, news, list(request.ignoreChanges))
        detailed = {
            k: provider_pb2.PropertyDiff(
                kind=provider_pb2.PropertyDiff.UPDATE_REPLACE
                if k in replaces
                else provider_pb2.PropertyDiff.UPDATE,
                inputDiff=True,
            )
            for k in changed
        }
        return provider_pb2.DiffResponse(
            changes=provider_pb2.DiffResponse.DIFF_SOME
            if changed
            else provider_pb2.DiffResponse.DIFF_NONE,
            replaces=replaces,
            diffs=changed,
            detailedDiff=detailed,
            hasDetailedDiff=True,
            deleteBeforeReplace=False,
        )

    def Create(self, request: Any, context: Any) -> provider_pb2.CreateResponse:
        body = {
            "type": _type_of(request.urn),
            "urn": request.urn,
            "inputs": _dict(request.properties),
            "preview": request.preview,
        }
        try:
            answer = _call("/create", body)
        except TwinRefusedError as exc:
            _abort(context, exc)
        return provider_pb2.CreateResponse(id=answer["id"], properties=_struct(answer["outputs"]))

    def Read(self, request: Any, context: Any) -> provider_pb2.ReadResponse:
        try:
            answer = _call("/read", {"id": request.id, "type": _type_of(request.urn)})
        except TwinRefusedError as exc:
            _abort(context, exc)
        if not answer.get("found"):
            return provider_pb2.ReadResponse()  # gone: the engine drops it
        return provider_pb2.ReadResponse(
            id=request.id,
            properties=_struct(answer["outputs"]),
            inputs=_struct(answer["inputs"]),
        )

    def Update(self, request: Any, context: Any) -> provider_pb2.UpdateResponse:
        body = {
            "type": _type_of(request.urn),
            "urn": request.urn,
            "id": request.id,
            "inputs": _dict(request.news),
            "preview": request.preview,
        }
        try:
            answer = _call("/update", body)
        except TwinRefusedError as exc:
            _abort(context, exc)
        return provider_pb2.UpdateResponse(properties=_struct(answer["outputs"]))

    def Delete(self, request: Any, context: Any) -> empty_pb2.Empty:
        try:
            _call("/delete", {"id": request.id, "type": _type_of(request.urn)})
        except TwinRefusedError as exc:
            _abort(context, exc)
        return empty_pb2.Empty()

    def Invoke(self, request: Any, context: Any) -> provider_pb2.InvokeResponse:
        try:
            answer = _call("/invoke", {"token": request.tok, "args": _dict(request.args)})
        except TwinRefusedError as exc:
            _abort(context, exc)
        # `return` is a keyword in Python: the field is passed by name.
        fields: dict[str, Any] = {"return": _struct(answer["return"])}
        return provider_pb2.InvokeResponse(**fields)

    def Cancel(self, request: Any, context: Any) -> empty_pb2.Empty:
        return empty_pb2.Empty()


def main() -> None:
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        options=[("grpc.max_receive_message_length", 64 << 20)],
    )
    provider_pb2_grpc.add_ResourceProviderServicer_to_server(Provider(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    sys.stdout.write(f"{port}\n")
    sys.stdout.flush()
    server.wait_for_termination()


if __name__ == "__main__":
    main()
