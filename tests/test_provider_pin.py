"""The kubernetes provider `pulumi up` loads is the one the real tier tests.

The pin and why: docs/architecture.md, "Pins".

The locked SDK (pulumi-kubernetes 4.34.2) would ask the engine for plugin 4.34.2; every Provider
the program registers asks for KUBERNETES_PROVIDER_VERSION instead, and every Kubernetes resource
goes through one of those providers (a default provider would bring back the SDK's version).
"""

from __future__ import annotations

import importlib.metadata
import re

import pytest

from constants import KUBERNETES_PROVIDER_VERSION
from testkit.mocks import Graph, built_stack
from testkit.repo import COMMITTED_STACKS, ROOT

PROVIDER = "pulumi:providers:kubernetes"


@pytest.fixture(scope="module", params=COMMITTED_STACKS)
def graph(request: pytest.FixtureRequest) -> Graph:
    return built_stack(request.param).graph


def test_the_pin_is_the_real_tiers_provider() -> None:
    script = (ROOT / "scripts" / "build-real-tier-tools").read_text()
    built = re.search(r"^PULUMI_KUBERNETES_PROVIDER_VERSION=(\S+)$", script, re.MULTILINE)
    assert built is not None
    assert built.group(1) == KUBERNETES_PROVIDER_VERSION


def test_the_pin_differs_from_the_sdks_default() -> None:
    # Were they equal, the option would be redundant and this file would test nothing.
    assert importlib.metadata.version("pulumi-kubernetes") != KUBERNETES_PROVIDER_VERSION


def test_every_kubernetes_provider_asks_for_the_pinned_plugin(graph: Graph) -> None:
    providers = graph.of_type(PROVIDER)
    assert providers
    assert {p.name: p.version for p in providers} == {
        p.name: KUBERNETES_PROVIDER_VERSION for p in providers
    }


def test_every_kubernetes_resource_uses_a_pinned_provider(graph: Graph) -> None:
    pinned = {p.urn for p in graph.of_type(PROVIDER)}
    custom = [r for r in graph.resources if r.type.startswith("kubernetes:") and r.custom]
    assert custom
    unpinned = [r.name for r in custom if graph.provider_urn(r) not in pinned]
    assert unpinned == []
