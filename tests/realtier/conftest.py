"""Real tier fixtures: three loopback control planes per session, CRDs, the dev stack's config.

Nothing starts unless every binary is in the tool cache: without them each test skips at once
with the command that builds them, so the default `pytest` run stays fast and green.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final, TypeVar

import pytest

from builders.manifest import KARMADA_TARGET
from checks.stack import load_from_file
from config.models import FleetConfig
from testkit.realtier import phases
from testkit.realtier.autoscaler import find_autoscaler
from testkit.realtier.crds import install_crds, karmada_crd_paths, kueue_crd_paths
from testkit.realtier.e2e import KUEUE_VERSION
from testkit.realtier.harness import (
    AGGREGATED_KINDS,
    KARMADA_PLANE,
    PLANES,
    ControlPlane,
    Report,
    Tools,
    apply,
    build_command,
    find_tools,
    namespace,
    start_all,
    stop_all,
)
from testkit.realtier.karmada import KarmadaTools, find_karmada
from testkit.realtier.kruise import KruiseTools, find_kruise
from testkit.realtier.kueue import (
    KUEUE_NAMESPACE,
    KueueManager,
    kueue_binary,
    metrics_certs,
    start_kueues,
    stop_kueues,
)
from testkit.realtier.twin_run import SimulationTools, find_simulation_tools
from testkit.report import REPORT_KEY

# The measured lines' stash (testkit/report.py) and their summary (tests/conftest_report.py,
# xdist-aware).
_REPORT = REPORT_KEY


# The Automation API's stack operations, counted as the engine's time (testkit/realtier/phases.py).
ENGINE_CALLS = ("up", "preview", "refresh", "destroy")


# The Go runtime of every binary the real tier starts (API servers, etcd, controllers, Kueue, the
# Pulumi CLI and its providers, kwok): the collector runs at 300 % heap growth instead of 100 %,
# each process held to a soft 1 GiB (docs/testing.md, "The Go runtime"). Set before the first
# child starts; every spawn inherits this process's environment.
GO_RUNTIME: Final = {"GOGC": "300", "GOMEMLIMIT": "1GiB"}

T = TypeVar("T")


@pytest.fixture(scope="session", autouse=True)
def _go_runtime() -> Iterator[None]:
    """The real tier's children collect garbage less often (GO_RUNTIME); an operator's own
    setting of either variable is kept."""
    before = {name: os.environ.get(name) for name in GO_RUNTIME}
    for name, value in GO_RUNTIME.items():
        os.environ.setdefault(name, value)
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session", autouse=True)
def _engine_timed() -> Iterator[None]:
    """Count `Stack.up/preview/refresh/destroy` as `engine` time (imported here, not at
    collection: an offline run never loads the Automation API for this)."""
    from pulumi import automation as auto  # noqa: PLC0415 - only when a real test runs

    originals = {name: getattr(auto.Stack, name) for name in ENGINE_CALLS}
    for name, call in originals.items():
        setattr(auto.Stack, name, phases.timed(phases.ENGINE)(call))
    yield
    for name, call in originals.items():
        setattr(auto.Stack, name, call)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup() -> Iterator[None]:
    phases.take()  # what ran before this test (collection, another test's leftovers) is not its
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Before the teardown's report (the one JUnit XML takes properties from): the split of
    this test's setup, call and teardown into engine, twins and the rest."""
    if call.when == "teardown":
        split = {name: round(seconds, 1) for name, seconds in phases.take().items()}
        item.user_properties.append(("phases", json.dumps(split, sort_keys=True)))
    yield


def _built_or_skip(found: T | None, missing: list[str], tier: str) -> T:
    """What a `find_*` lookup found, or a skip naming the tier and what is missing (with the
    command that builds it)."""
    if found is None:
        pytest.skip(f"{tier}: " + "; ".join(missing))
    return found


@pytest.fixture
def report(pytestconfig: pytest.Config) -> Report:
    """Add a line to the summary printed at the end of the run (numbers a reader wants)."""
    return pytestconfig.stash[_REPORT].append


@pytest.fixture(scope="session")
def tools() -> Tools:
    return _built_or_skip(*find_tools(), "real tier")


@pytest.fixture(scope="session")
def simulation() -> SimulationTools:
    """kube-scheduler, kwok and the ProvisioningRequest CRD a twin needs; the tests that ask
    for them skip, naming what is missing and how to build it, without them."""
    return _built_or_skip(*find_simulation_tools(), "real tier (twin)")


@pytest.fixture(scope="session")
def karmada_tools() -> KarmadaTools:
    """Karmada's binaries (testkit/realtier/karmada.py); skips, naming how to build them,
    without them."""
    return _built_or_skip(*find_karmada(), "real tier (karmada)")


@pytest.fixture(scope="session")
def kruise_tools() -> KruiseTools:
    """kruise-manager (testkit/realtier/kruise.py); skips, naming how to build it, without it."""
    return _built_or_skip(*find_kruise(), "real tier (kruise)")


@pytest.fixture(scope="session")
def autoscaler() -> Path:
    """The cluster-autoscaler built with its kwok cloud provider (testkit/realtier/autoscaler.py);
    the tests that ask for it skip, naming how to build it, without it."""
    found, why = find_autoscaler()
    if found is None:
        pytest.skip("real tier (autoscaler): " + why)
    return found


@pytest.fixture(scope="session")
def planes(
    tools: Tools, tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[dict[str, ControlPlane]]:
    """manager, worker-1, worker-2: started together, always stopped (by process group)."""
    root = tmp_path_factory.mktemp("realtier")
    started = {name: ControlPlane(name, root / name, tools) for name in PLANES}
    try:
        t0 = time.monotonic()
        start_all(started.values())
        elapsed = time.monotonic() - t0
        lines = pytestconfig.stash[_REPORT]
        lines.append(f"{len(started)} control planes started together in {elapsed:.1f}s")
        lines += [f"  {plane.name}: {plane.timings}" for plane in started.values()]
        yield started
    finally:
        stop_all(started.values())


@pytest.fixture(scope="session")
def dev_fleet() -> FleetConfig:
    fleet, _ = load_from_file("dev")
    return fleet


@pytest.fixture(scope="session")
def kueue_crds(planes: dict[str, ControlPlane], dev_fleet: FleetConfig) -> dict[str, list[str]]:
    """The pinned Kueue CRDs on every plane (in parallel: each kubectl waits on its server)."""
    files = kueue_crd_paths(dev_fleet)
    with ThreadPoolExecutor(max_workers=len(planes)) as pool:
        jobs = {name: pool.submit(install_crds, plane, files) for name, plane in planes.items()}
        return {name: job.result() for name, job in jobs.items()}


@pytest.fixture(scope="session")
def karmada_crds(planes: dict[str, ControlPlane], dev_fleet: FleetConfig) -> list[str]:
    """The Karmada/Kruise CRDs the rendered Karmada objects need, on the Karmada stand-in."""
    from preflight.sources import collect  # noqa: PLC0415

    manifests, _ = collect(dev_fleet)
    kinds = {
        (str(m.obj["apiVersion"]).rpartition("/")[0], m.kind)
        for m in manifests
        if m.target == KARMADA_TARGET
    }
    # Built-in kinds (Namespace, Secret) need nothing; Karmada's and Kruise's come from pins.
    needed = {
        (group, kind)
        for group, kind in kinds
        if group.endswith(("karmada.io", "kruise.io")) and (group, kind) not in AGGREGATED_KINDS
    }
    return install_crds(planes[KARMADA_PLANE], karmada_crd_paths(dev_fleet, needed))


@pytest.fixture(scope="session")
def kueues(
    planes: dict[str, ControlPlane],
    kueue_crds: dict[str, list[str]],
    tools: Tools,
    tmp_path_factory: pytest.TempPathFactory,
    pytestconfig: pytest.Config,
) -> Iterator[dict[str, KueueManager]]:
    """A real Kueue manager per plane (after its CRDs); always stopped, by process group.

    The metrics certificate pair Kueue insists on is created under /etc/kueue only when absent;
    the last run of the tier out removes it (`metrics_certs`).
    """
    del kueue_crds  # only ordering: Kueue's informers need the CRDs served
    binary = kueue_binary()
    if binary is None:
        pytest.skip(f"real tier: kueue not built ({build_command(['kueue'])})")
    root = tmp_path_factory.mktemp("kueue")
    managers = {name: KueueManager(plane, binary, root / name) for name, plane in planes.items()}
    lines = pytestconfig.stash[_REPORT]
    with metrics_certs(tools.openssl) as created:
        try:
            # kueue-system must exist before Kueue looks in it (the chart would create it).
            for plane in planes.values():
                applied = apply(plane, [namespace(KUEUE_NAMESPACE)])
                assert not applied.rejected, applied.stderr
            t0 = time.monotonic()
            start_kueues(list(managers.values()), tools.openssl)
            lines.append(
                f"{len(managers)} Kueue {KUEUE_VERSION} managers ready in "
                f"{time.monotonic() - t0:.1f}s ("
                + ", ".join(f"{m.name} {m.started_after:.1f}s" for m in managers.values())
                + ")"
                + (f"; created {', '.join(map(str, created))}" if created else "")
            )
            yield managers
        finally:
            stop_kueues(list(managers.values()))
