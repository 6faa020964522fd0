"""What tests/test_multikueue_component.py shares with other test modules (they import it from here,
not from a test module): CHECK, MKC, MKCONFIG, build, engine, urn_of and what they need."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from builders import multikueue as mk
from components.multikueue import (
    MultiKueueManager,
    MultiKueueManagerArgs,
    MultiKueueWorkerAccess,
    MultiKueueWorkerAccessArgs,
    WorkerLink,
)
from testkit.mocks import Graph, resolve

SECRET = "kubernetes:core/v1:Secret"
MKC = "kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster"
MKCONFIG = "kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueConfig"
CHECK = "kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck"
CA_B64 = base64.b64encode(
    b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
).decode()


FRAMEWORKS = ["batch/job", "ray.io/rayjob"]


def fake_token(secret_name: str) -> str:
    return f"eyJhbGciOiJSUzI1NiJ9.{secret_name}.c2ln"


@pytest.fixture
def engine(graph: Graph) -> Graph:
    """The shared mocks, plus what the token controller does: fill token and ca.crt."""
    base = graph.mocks.new_resource

    def new_resource(args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        rid, out = base(args)
        if args.typ == SECRET and args.inputs.get("type") == "kubernetes.io/service-account-token":
            name = args.inputs["metadata"]["name"]
            token = base64.b64encode(fake_token(name).encode()).decode()
            out["data"] = {"token": token, "ca.crt": CA_B64, "namespace": "a3VldWUtc3lzdGVt"}
        return rid, out

    graph.mocks.new_resource = new_resource  # type: ignore[method-assign]
    return graph


@dataclass
class Built:
    providers: dict[str, k8s.Provider]
    releases: dict[str, k8s.helm.v3.Release]
    access: dict[str, MultiKueueWorkerAccess]
    manager: MultiKueueManager


def build(
    version: str = "v0.19.2",
    frameworks: list[str] | None = None,
    rotations: dict[str, int] | None = None,
    workers: tuple[str, ...] = ("worker-1", "worker-2"),
    *,
    manager_kubeconfig: str | None = None,
    force_retire: tuple[str, ...] = (),
) -> Built:
    """Manager + workers wired as the Fleet does: worker outputs feed the manager's links."""
    rotations = rotations or {}
    providers: dict[str, k8s.Provider] = {}
    releases: dict[str, k8s.helm.v3.Release] = {}
    for cluster in ("manager", *workers):
        providers[cluster] = k8s.Provider(
            f"{cluster}-k8s", kubeconfig="fake", enable_server_side_apply=True
        )
        releases[cluster] = k8s.helm.v3.Release(
            f"{cluster}-kueue",
            chart="oci://registry.k8s.io/kueue/charts/kueue",
            version=version.removeprefix("v"),
            namespace="kueue-system",
            create_namespace=True,
            opts=pulumi.ResourceOptions(provider=providers[cluster]),
        )
    access = {
        w: MultiKueueWorkerAccess(
            f"mk-{w}",
            MultiKueueWorkerAccessArgs(
                provider=providers[w],
                kueue_version=version,
                frameworks=frameworks if frameworks is not None else FRAMEWORKS,
                rotation=rotations.get(w, 0),
                depends_on=[releases[w]],
                write_namespaces={"team-a": []},
            ),
        )
        for w in workers
    }
    manager = MultiKueueManager(
        "mk-manager",
        MultiKueueManagerArgs(
            provider=providers["manager"],
            workers=[
                WorkerLink(
                    name=w,
                    server=mk.api_server_url(f"{w}-abc123.hcp.westeurope.azmk8s.io"),
                    ca_data=access[w].ca_data,
                    token=access[w].token,
                    rotation=rotations.get(w, 0),
                    proof_after=[access[w].proof_binding],
                )
                for w in workers
            ],
            depends_on=[releases["manager"]],
            kubeconfig=manager_kubeconfig,
            force_retire=force_retire,
        ),
    )
    return Built(providers, releases, access, manager)


def urn_of(resource: pulumi.Resource) -> str:
    value, _ = resolve(resource.urn)
    return value
