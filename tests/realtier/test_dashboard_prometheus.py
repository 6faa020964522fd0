"""Every panel of the fleet dashboard returns series from a real Prometheus scraping the twin's
real Kueue (issue 26, item 4).

The twin is the dev stack's (manager, worker-1, worker-2; user pools at minCount and the real
cluster-autoscaler answering the workers' ProvisioningRequests), with two settings of the stack
turned on as a user would turn them on for the dashboard: `monitoring.azureMonitor` (scrape
interval 2s instead of 30s, so the test waits seconds, not minutes) and Kueue's beta gate
`UnadmittedWorkloadsObservability` (the "Not admitted, by reason" panel needs it; docs/metrics.md).
Each cluster's Kueue serves /metrics over HTTPS on a loopback port of its own and authorizes every
scrape against its cluster's API server, as in a cluster.

Prometheus (the pinned `cmd/prometheus` of the tool cache) scrapes every cluster with the job the
stack ships: the `prometheus-config` of the rendered `ama-metrics-prometheus-config` ConfigMap,
read from the ConfigMap applied to each cluster, with pod discovery against that cluster's API
server, the shipped relabelling (keep Kueue's controller pods' `metrics` port, `pod`,
`fleet_cluster`), HTTPS with the shipped TLS settings and the bearer token of the add-on's
ServiceAccount bound by the rendered ClusterRoleBinding. What differs from the add-on, and why:

- no Kueue pod exists on a loopback plane, so each cluster gets a stand-in Pod in kueue-system
  with the chart's selector labels and a container port named `metrics`, whose status (podIP
  127.0.0.1) points discovery at the Kueue process: the shipped `keep` rule has to select it;
- `kubernetes_sd_configs` gets `kubeconfig_file` (the plane's; the add-on uses in-cluster config),
  `authorization.credentials_file` a file holding a token minted for `ama-metrics-serviceaccount`
  (the add-on reads its pod's mounted token);
- one Prometheus scrapes three clusters (the Azure Monitor workspace joins three add-ons), and
  job names must be unique in one Prometheus: the job is `kueue-<cluster>`, with one more relabel
  rule setting `job="kueue"` back, so series carry the labels the add-on's would.

Work goes through the fleet: a Job dispatched by the manager and admitted on a worker after its
ProvisioningRequest, a Job deactivated on the manager after its quota reservation (an eviction),
a Job larger than the manager's quota that stays pending, and, once Prometheus holds the first
Job's series, a second dispatched Job (so rates and quantiles have an increase to show). Then
every target of every panel of the generated dashboard JSON is evaluated through Prometheus' HTTP
API (`/api/v1/query`), with `$fleet_cluster` substituted as Grafana substitutes the variable with
"All" selected (the values of its own `label_values` query), until each returns at least one
series and one of them a number (not NaN: Grafana draws NaN as nothing), within a bound. A
failure names each panel, its query and what Prometheus returned.
"""

from __future__ import annotations

import json
import math
import re
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

from builders.dashboard import DATASOURCE_VARIABLE, fleet_dashboard
from builders.monitoring import CLUSTER_LABEL, SCRAPE_JOB, monitoring_objects
from checks.stack import parse_fleet
from config.models import FleetConfig
from testkit.realtier.autoscaler import find_autoscaler, nodes_at_min, start_autoscalers
from testkit.realtier.crds import kueue_crd_paths
from testkit.realtier.harness import (
    ROOT,
    ControlPlane,
    Report,
    StartError,
    Tools,
    _built,
    apply,
    build_command,
    cache_paths,
    free_port,
)
from testkit.realtier.jobs import suspended_job, workload_of_job
from testkit.realtier.kueue import kueue_binary
from testkit.realtier.twin_run import SimulationTools, Twin, find_simulation_tools, running_twin
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

pytestmark = [pytest.mark.real]

STACK: Final = "dev"
TOOL: Final = "prometheus"
SCRAPE_INTERVAL: Final = "2s"
GATE: Final = "UnadmittedWorkloadsObservability"
TEAM: Final = "team-a"
KUEUE_API: Final = "/apis/kueue.x-k8s.io/v1beta2"
STAND_IN_POD: Final = "kueue-controller-manager-loopback"
# Bounded waits, measured in seconds on 2 shared cores; margins for a busier machine.
PROMETHEUS_READY: Final = 60.0
TARGETS_UP: Final = 60.0
WORK_TIMEOUT: Final = 180.0
SERIES_TIMEOUT: Final = 120.0
POLL: Final = 0.5


@dataclass(frozen=True, slots=True)
class Target:
    """One query of one panel, as Grafana's JSON model holds it."""

    panel: str
    ref: str
    expr: str


def prometheus_binary() -> tuple[Path | None, str]:
    """The cached Prometheus, or None and why not (with the command that builds it)."""
    path = cache_paths().get(TOOL)
    if path is None or not _built(TOOL, path):
        return None, f"{TOOL}: not built ({path}); build with: {build_command([TOOL])}"
    return path, ""


def dashboard_targets(board: dict[str, Any]) -> list[Target]:
    """Every target of every panel, rows' nested panels (a collapsed row holds them) included."""
    found: list[Target] = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            found.extend(
                Target(str(panel.get("title")), str(t.get("refId")), str(t["expr"]))
                for t in panel.get("targets") or []
                if t.get("expr")
            )
            walk(panel.get("panels") or [])

    walk(board.get("panels") or [])
    return found


def grafana_all(values: list[str]) -> str:
    """A multi-value variable with "All" selected, as Grafana writes it into a Prometheus
    query that has no custom all value: the values joined into a regex group. Grafana escapes
    regex metacharacters in each value; the values here are asserted to have none."""
    plain = re.compile(r"^[a-z0-9-]+$")
    assert all(plain.match(v) for v in values), f"values needing regex escapes: {values}"
    return "(" + "|".join(values) + ")"


def _finite(series: dict[str, Any]) -> bool:
    return math.isfinite(float(series["value"][1]))


def plotted(result: list[dict[str, Any]] | None) -> bool:
    """At least one series, and one with a number (NaN, as a quantile of zero rates gives, is
    drawn as nothing)."""
    return bool(result) and any(_finite(s) for s in result or [])


def substitute(expr: str, variables: dict[str, str]) -> str:
    out = expr
    for name, value in variables.items():
        out = out.replace(f"${{{name}}}", value).replace(f"${name}", value)
    assert "$" not in out, f"a template variable left in {out!r} (known: {sorted(variables)})"
    return out


# ---- the twin's fleet ---------------------------------------------------------------------------


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


def _scraper_token(plane: ControlPlane, path: Path) -> Path:
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


def _shipped_job(plane: ControlPlane) -> dict[str, Any]:
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


def _point_discovery_at(plane: ControlPlane, port: int) -> None:
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


# ---- Prometheus ---------------------------------------------------------------------------------


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
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                return int(response.status) == 200
        except (urllib.error.URLError, OSError):
            return False

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


# ---- the work -----------------------------------------------------------------------------------


def _job(name: str, cpu: str) -> dict[str, Any]:
    return suspended_job(name, TEAM, TEAM, {"cpu": cpu, "memory": "64Mi"}, dispatched=True)


def _condition(wl: dict[str, Any] | None, kind: str) -> bool:
    conditions: list[dict[str, Any]] = ((wl or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _until(what: str, probe: Callable[[], Any], timeout: float, last: Callable[[], str]) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := probe()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout:.0f}s; last seen: {last()}")
        time.sleep(POLL)
    return result


def _state(plane: ControlPlane, job: str) -> str:
    wl = workload_of_job(plane, TEAM, job)
    if wl is None:
        return f"[{plane.name}] no Workload of {job}"
    conditions = (wl.get("status") or {}).get("conditions") or []
    return f"[{plane.name}] {job}: " + json.dumps(
        [(c.get("type"), c.get("status"), c.get("reason")) for c in conditions]
    )


# ---- the test -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def simulation() -> SimulationTools:
    found, missing = find_simulation_tools()
    if found is None:
        pytest.skip("real tier (twin): " + "; ".join(missing))
    return found


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


def test_every_dashboard_panel_returns_series_from_prometheus_scraping_the_twins_kueue(
    binaries: Binaries,
    twin: Twin,
    tmp_path: Path,
    report: Report,
    capsys: pytest.CaptureFixture[str],
) -> None:
    t0 = time.monotonic()
    fleet = twin.fleet
    start_autoscalers(twin.planes, fleet, binaries.autoscaler)
    manager = fleet.manager
    assert manager is not None, f"{STACK}: no manager"
    # The stack's monitoring objects on every cluster, and what the scraper needs to reach Kueue.
    jobs = []
    for cluster in fleet.clusters:
        plane = twin.planes[cluster.name]
        objects = [m.obj for m in monitoring_objects(fleet, cluster)]
        assert objects, f"{cluster.name}: monitoring.azureMonitor renders nothing"
        applied = apply(plane, objects)
        assert not applied.rejected, f"[{cluster.name}] {applied.stderr}"
        token = _scraper_token(plane, tmp_path / f"{cluster.name}.token")
        _point_discovery_at(plane, twin.kueues[cluster.name].metrics_port)
        jobs.append(loopback_job(_shipped_job(plane), cluster.name, plane.kubeconfig, token))
    config = {"global": {"scrape_interval": SCRAPE_INTERVAL}, "scrape_configs": jobs}
    host = twin.planes[manager.name]
    prom = start_prometheus(binaries.prometheus, host, config, tmp_path / "prom")
    t_prom = time.monotonic() - t0

    # Every cluster's Kueue scraped, through discovery and the shipped relabelling.
    clusters = [c.name for c in fleet.clusters]

    def targets() -> dict[str, str]:
        active = prom.api("/api/v1/targets", state="active")["data"]["activeTargets"]
        return {
            t["labels"].get(CLUSTER_LABEL, "?"): f"{t['health']} {t.get('lastError') or ''}"
            for t in active
        }

    _until(
        "every cluster's Kueue target up",
        lambda: sorted(k for k, v in targets().items() if v.startswith("up")) == sorted(clusters),
        TARGETS_UP,
        lambda: f"{targets()}\n{prom.tail()}",
    )
    up = prom.query(f'up{{job="{SCRAPE_JOB}"}} == 1')
    assert sorted(s["metric"].get(CLUSTER_LABEL) for s in up) == sorted(clusters), up

    # The work: dispatched and admitted on a worker; evicted (deactivated); pending on quota.
    mgr = twin.planes[manager.name]
    applied = apply(mgr, [_job("dash-run", "1"), _job("dash-evict", "1"), _job("dash-big", "40")])
    assert not applied.rejected, applied.stderr
    _until(
        "dash-evict's Workload QuotaReserved on the manager",
        lambda: _condition(workload_of_job(mgr, TEAM, "dash-evict"), "QuotaReserved"),
        WORK_TIMEOUT,
        lambda: _state(mgr, "dash-evict"),
    )
    wl = workload_of_job(mgr, TEAM, "dash-evict")
    assert wl is not None
    mgr.kubectl(
        "patch",
        "workloads.kueue.x-k8s.io",
        wl["metadata"]["name"],
        f"--namespace={TEAM}",
        "--type=merge",
        "-p",
        json.dumps({"spec": {"active": False}}),
    )
    _until(
        "dash-evict's Workload Evicted on the manager",
        lambda: _condition(workload_of_job(mgr, TEAM, "dash-evict"), "Evicted"),
        WORK_TIMEOUT,
        lambda: _state(mgr, "dash-evict"),
    )
    _until(
        "dash-run admitted on the manager (a worker admitted it after its ProvisioningRequest)",
        lambda: _condition(workload_of_job(mgr, TEAM, "dash-run"), "Admitted"),
        WORK_TIMEOUT,
        lambda: _state(mgr, "dash-run"),
    )
    # A second dispatched Job once Prometheus holds the first one's series: the rates and the
    # p90s then have an increase to show (a series Prometheus first sees at 1 has rate 0, and a
    # quantile of zero rates is NaN, which Grafana plots as nothing).
    first = (
        'kueue_admission_wait_time_seconds_count{fleet_cluster="manager"}',
        'kueue_admission_checks_wait_time_seconds_count{fleet_cluster="manager"}',
        "multikueue_workloads_admitted_total",
    )
    _until(
        "the first Job's admission scraped from the manager",
        lambda: all(prom.query(q) for q in first),
        SERIES_TIMEOUT,
        lambda: str({q: prom.query(q) for q in first}),
    )
    applied = apply(mgr, [_job("dash-run-2", "1")])
    assert not applied.rejected, applied.stderr
    _until(
        "dash-run-2 admitted on the manager",
        lambda: _condition(workload_of_job(mgr, TEAM, "dash-run-2"), "Admitted"),
        WORK_TIMEOUT,
        lambda: _state(mgr, "dash-run-2"),
    )
    t_work = time.monotonic() - t0

    # The variable as Grafana resolves it, then every target of every panel.
    board = fleet_dashboard()
    variable = next(v for v in board["templating"]["list"] if v["name"] == CLUSTER_LABEL)
    metric = re.fullmatch(rf"label_values\((\w+), {CLUSTER_LABEL}\)", variable["query"])
    assert metric is not None, f"variable query changed: {variable['query']}"
    values = prom.api(f"/api/v1/label/{CLUSTER_LABEL}/values", **{"match[]": metric.group(1)})
    assert sorted(values["data"]) == sorted(clusters), f"{variable['query']}: {values['data']}"
    variables = {CLUSTER_LABEL: grafana_all(sorted(values["data"]))}
    found = dashboard_targets(board)
    assert len({t.panel for t in found}) == sum(
        1 for p in board["panels"] if p.get("type") != "row"
    ), "a panel without a query"
    assert not any(DATASOURCE_VARIABLE in t.expr for t in found)

    answers: dict[Target, list[dict[str, Any]]] = {}

    def all_return_data() -> bool:
        for target in found:
            if not plotted(answers.get(target)):
                answers[target] = prom.query(substitute(target.expr, variables))
        return all(plotted(a) for a in answers.values())

    try:
        _until("every panel returns data", all_return_data, SERIES_TIMEOUT, lambda: "")
    except AssertionError:
        empty = [
            f"- panel {t.panel!r} ({t.ref}): {substitute(t.expr, variables)}\n  returned: "
            f"{answers.get(t)}"
            for t in found
            if not plotted(answers.get(t))
        ]
        names = prom.api("/api/v1/label/__name__/values")["data"]
        kueue = [n for n in names if n.startswith(("kueue_", "multikueue_"))]
        raise AssertionError(
            f"{len(empty)} of {len(found)} panel queries returned no series with a number "
            f"after {SERIES_TIMEOUT:.0f}s:\n" + "\n".join(empty) + f"\nKueue metric names in "
            f"Prometheus: {kueue}"
        ) from None
    t_all = time.monotonic() - t0
    counts = {
        f"{t.panel} ({t.ref})": f"{len(answers[t])}/{sum(map(_finite, answers[t]))}" for t in found
    }
    line = (
        f"dashboard on Prometheus {binaries.prometheus.parent.parent.name} scraping the {STACK} "
        f"twin's {len(clusters)} Kueues: {len(found)} queries of {len({t.panel for t in found})} "
        f"panels all return series with a number (series/with a number: {counts}); "
        f"Prometheus up {t_prom:.1f}s, work done "
        f"{t_work:.1f}s, every query answered {t_all:.1f}s after the twin ran; twin "
        f"{ {k: round(v, 1) for k, v in twin.timings.items()} }"
    )
    report(line)
    with capsys.disabled():
        print("\n" + line)
