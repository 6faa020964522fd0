"""What tests/realtier/test_dashboard_prometheus.py shares with other test modules (they import it
from here, not from a test module): Binaries, Prometheus, SCRAPE_INTERVAL, STACK, TARGETS_UP, TEAM,
WORK_TIMEOUT, condition, dashboard_job, point_discovery_at, scraper_token, shipped_job,
dashboard_state, dashboard_until, binaries, loopback_job, simulation, start_prometheus, twin and
what they need."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from builders.monitoring import SCRAPE_JOB
from checks.stack import parse_fleet
from config.models import FleetConfig
from testkit.realtier.autoscaler import find_autoscaler, nodes_at_min
from testkit.realtier.crds import kueue_crd_paths
from testkit.realtier.harness import (
    ROOT,
    ControlPlane,
    StartError,
    Tools,
    answers_ok,
    apply,
    find_tool,
    free_port,
)
from testkit.realtier.jobs import suspended_job, workload_of_job
from testkit.realtier.kueue import kueue_binary
from testkit.realtier.twin_run import SimulationTools, Twin, running_twin
from testkit.realtier.wait import until
from upstream.azure_monitor import (
    AMA_NAMESPACE,
    AMA_SCRAPE_CONFIGMAP,
    AMA_SCRAPE_KEY,
    AMA_SERVICE_ACCOUNT,
)
from upstream.kueue import KUEUE_METRICS_PORT, KUEUE_NAMESPACE, KUEUE_SELECTOR_LABELS
from upstream.podsecurity import (
    RESTRICTED_CONTAINER_SECURITY_CONTEXT,
    RESTRICTED_POD_SECURITY_CONTEXT,
)

STACK: Final = "dev"
TOOL: Final = "prometheus"
SCRAPE_INTERVAL: Final = "2s"
GATE: Final = "UnadmittedWorkloadsObservability"
TEAM: Final = "team-a"
STAND_IN_POD: Final = "kueue-controller-manager-loopback"


# Bounded waits, measured in seconds on 2 shared cores; margins for a busier machine.
PROMETHEUS_READY: Final = 60.0
TARGETS_UP: Final = 60.0
WORK_TIMEOUT: Final = 180.0
POLL: Final = 0.5


def prometheus_binary() -> tuple[Path | None, str]:
    """The cached Prometheus, or None and why not (with the command that builds it)."""
    return find_tool(TOOL)


def dashboard_fleet() -> FleetConfig:
    """The dev stack as a user would set it for the dashboard: the scrape job on, every panel's
    Kueue setting on (the gate of "Not admitted, by reason")."""
    document = yaml.safe_load((ROOT / f"Pulumi.{STACK}.yaml").read_text())
    raw = document["config"]["aks-batch-fleet:fleet"]
    raw.setdefault("location", document["config"]["azure-native:location"])
    raw["monitoring"] = {"azureMonitor": {"enabled": True, "scrapeInterval": SCRAPE_INTERVAL}}
    raw["kueue"]["featureGates"] = {**(raw["kueue"].get("featureGates") or {}), GATE: True}
    fleet, _ = parse_fleet(raw, source=f"Pulumi.{STACK}.yaml + monitoring + {GATE}")
    return fleet


def _stand_in_pod(port: int) -> dict[str, Any]:
    """Where discovery finds the loopback Kueue: Kueue's pod labels and port name."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": STAND_IN_POD,
            "namespace": KUEUE_NAMESPACE,
            "labels": dict(KUEUE_SELECTOR_LABELS),
        },
        "spec": {
            # No such node: no kubelet, scheduler or kwok touches the pod; its status is ours.
            "nodeName": "loopback-kueue-host",
            "securityContext": dict(RESTRICTED_POD_SECURITY_CONTEXT),
            "containers": [
                {
                    "name": "manager",
                    "image": "registry.k8s.io/kueue/kueue:v0.19.2",
                    "securityContext": dict(RESTRICTED_CONTAINER_SECURITY_CONTEXT),
                    "ports": [
                        {"name": KUEUE_METRICS_PORT, "containerPort": port, "protocol": "TCP"}
                    ],
                }
            ],
        },
    }


def scraper_token(plane: ControlPlane, path: Path) -> Path:
    """A token of the add-on's ServiceAccount (made here: the add-on would bring it)."""
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": AMA_SERVICE_ACCOUNT, "namespace": AMA_NAMESPACE},
    }
    applied = apply(plane, [account])
    assert not applied.rejected, f"[{plane.name}] {applied.stderr}"
    token = plane.kubectl(
        "create", "token", AMA_SERVICE_ACCOUNT, f"--namespace={AMA_NAMESPACE}", "--duration=2h"
    ).stdout.strip()
    assert token, f"[{plane.name}] no token for {AMA_SERVICE_ACCOUNT}"
    path.write_text(token)
    path.chmod(0o600)
    return path


def shipped_job(plane: ControlPlane) -> dict[str, Any]:
    """The Kueue job of the scrape ConfigMap as applied to the cluster (read back from it)."""
    path = f"/api/v1/namespaces/{AMA_NAMESPACE}/configmaps/{AMA_SCRAPE_CONFIGMAP}"
    status, body = plane.get(path)
    assert status == 200, f"[{plane.name}] ConfigMap {AMA_SCRAPE_CONFIGMAP}: HTTP {status}"
    config = yaml.safe_load(json.loads(body)["data"][AMA_SCRAPE_KEY])
    jobs = config["scrape_configs"]
    assert [j["job_name"] for j in jobs] == [SCRAPE_JOB], jobs
    job: dict[str, Any] = jobs[0]
    return job


def loopback_job(
    job: dict[str, Any], cluster: str, kubeconfig: Path, token: Path
) -> dict[str, Any]:
    """The shipped job, for a Prometheus outside the cluster that scrapes several (module doc)."""
    out = json.loads(json.dumps(job))
    out["job_name"] = f"{SCRAPE_JOB}-{cluster}"
    out["authorization"] = {**out["authorization"], "credentials_file": str(token)}
    (sd,) = out["kubernetes_sd_configs"]
    sd["kubeconfig_file"] = str(kubeconfig)
    out["relabel_configs"] = [
        *out["relabel_configs"],
        {"target_label": "job", "replacement": SCRAPE_JOB},
    ]
    return out


def point_discovery_at(plane: ControlPlane, port: int) -> None:
    applied = apply(plane, [_stand_in_pod(port)])
    assert not applied.rejected, f"[{plane.name}] stand-in pod: {applied.stderr}"
    status = {"phase": "Running", "podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]}
    plane.kubectl(
        "patch",
        "pod",
        STAND_IN_POD,
        f"--namespace={KUEUE_NAMESPACE}",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )


@dataclass
class Prometheus:
    url: str
    log: Path

    def api(self, path: str, **params: str) -> dict[str, Any]:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=10) as response:
            data: dict[str, Any] = json.loads(response.read())
        assert data.get("status") == "success", f"{path} {params}: {data}"
        return data

    def query(self, expr: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api("/api/v1/query", query=expr)["data"]["result"]
        return result

    def ready(self) -> bool:
        return answers_ok(f"{self.url}/-/ready")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


def start_prometheus(
    binary: Path, host: ControlPlane, config: dict[str, Any], workdir: Path
) -> Prometheus:
    """Prometheus on loopback, a process of `host`'s plane (stopped with it)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config_file = workdir / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    port = free_port()
    process = host._spawn(
        TOOL,
        [
            str(binary),
            f"--config.file={config_file}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=info",
        ],
    )
    prom = Prometheus(f"http://127.0.0.1:{port}", process.log_path)
    deadline = time.monotonic() + PROMETHEUS_READY
    while not prom.ready():
        if process.popen.poll() is not None:
            raise StartError(f"prometheus exited with {process.popen.returncode}:\n{prom.tail()}")
        if time.monotonic() > deadline:
            raise StartError(f"prometheus not ready after {PROMETHEUS_READY:.0f}s:\n{prom.tail()}")
        time.sleep(0.25)
    return prom


def dashboard_job(name: str, cpu: str) -> dict[str, Any]:
    return suspended_job(name, TEAM, TEAM, {"cpu": cpu, "memory": "64Mi"}, dispatched=True)


def condition(wl: dict[str, Any] | None, kind: str) -> bool:
    conditions: list[dict[str, Any]] = ((wl or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def dashboard_until(
    what: str, probe: Callable[[], Any], timeout: float, last: Callable[[], str]
) -> Any:
    """`wait.until` in the argument order of these modules' calls, polling every POLL."""
    return until(probe, timeout, what, seen=last, poll=POLL)


def dashboard_state(plane: ControlPlane, job: str) -> str:
    wl = workload_of_job(plane, TEAM, job)
    if wl is None:
        return f"[{plane.name}] no Workload of {job}"
    conditions = (wl.get("status") or {}).get("conditions") or []
    return f"[{plane.name}] {job}: " + json.dumps(
        [(c.get("type"), c.get("status"), c.get("reason")) for c in conditions]
    )


@pytest.fixture
def twin(tools: Tools, simulation: SimulationTools, tmp_path: Path) -> Iterator[Twin]:
    binary = kueue_binary()
    if binary is None:
        pytest.skip("real tier: kueue not built")
    fleet = dashboard_fleet()
    with running_twin(
        STACK,
        tools,
        simulation,
        kueue_binary=binary,
        kueue_crds=kueue_crd_paths(fleet),
        workdir=tmp_path,
        nodes=nodes_at_min,
        fleet_value=fleet,
        kueue_metrics=True,
    ) as started:
        yield started


@dataclass(frozen=True, slots=True)
class Binaries:
    prometheus: Path
    autoscaler: Path


@pytest.fixture
def binaries() -> Binaries:
    """Prometheus and the cluster-autoscaler from the tool cache; skips naming what is missing."""
    prometheus, why = prometheus_binary()
    if prometheus is None:
        pytest.skip("real tier (prometheus): " + why)
    autoscaler, why = find_autoscaler()
    if autoscaler is None:
        pytest.skip("real tier (autoscaler): " + why)
    return Binaries(prometheus, autoscaler)
