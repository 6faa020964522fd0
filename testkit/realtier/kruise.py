"""The real kruise-manager (OpenKruise, built from the module proxy) beside a loopback member plane.

What a `helm install kruise` of the pinned chart leaves in a member, made here from two sources:
the Go module the manager is built from (in the tool cache's module cache: its CRDs,
`config/crd/bases`, and its webhook manifests, `config/webhook/manifests.yaml`) and the chart
values the program renders for that member (`builders.kruise.kruise_values`, taken from the
stack's rendered HelmReleases). The chart itself is not on this machine (no helm, no chart
repository), so what its templates add is restated below, rule by rule, from openkruise/charts
`versions/kruise/next/templates/{manager,webhookconfiguration}.yaml` (whose values.yaml equals
1.9.0's but for the image tag; the 1.9.0 templates are not in the index read). Every webhook
name, path, rule and side effect comes from the module; a comparison of the chart template
(aksIntegration off) with v1.9.1's manifests found exactly the differences `_chart_webhook`
applies and none else.

What runs differently from the chart, and why (all for loopback, none of it changes what Kruise
decides):
- No Pod: kruise-manager is a process with the plane's admin kubeconfig (system:masters), so the
  chart's ClusterRole is not exercised. kruise-daemon is not run at all (it needs a container
  runtime socket; the chart's DaemonSet has no controller on these planes either): nothing the
  project uses needs it (image pulls, container restarts).
- Webhooks: the chart points every webhook at Service `kruise-webhook-service` (port 443 ->
  9876). A Service cannot lead to a loopback process (Endpoints refuse 127.0.0.1), so
  `WEBHOOK_HOST=127.0.0.1` is set: Kruise's own "run outside the cluster" mode
  (pkg/webhook/util/configuration.convertClientConfig), in which its webhook controller rewrites
  each webhook's clientConfig to `url: https://127.0.0.1:<WEBHOOK_PORT><path>` and issues the
  serving certificate for that IP. Everything else of the webhook machinery is the chart's: the
  configurations below (with their `template` annotation) are created first, Kruise fills in
  the caBundle, keeps only the paths it serves, and keeps its CA and certificate in Secret
  `kruise-webhook-certs` (`WEBHOOK_CERT_WRITER=secret`, the writer it uses in-cluster; with
  WEBHOOK_HOST alone it would switch to a file writer).
- The webhook server binds 0.0.0.0 (hard-coded in main.go) on a free port, not 9876.
- Ports: health probe on 127.0.0.1:<free> (the chart: :8000); metrics off (`--metrics-addr=0`,
  the chart: :8080); pprof off (main.go's default :8090 would clash between members; the chart
  does not pass a pprof flag). Certificates in the member's work directory, not /tmp.
- Leader election, log level, feature gates and sync period are the chart's flags, with the
  program's values (`featureGates`, `webhookConfiguration`, `installation`).
"""

from __future__ import annotations

import contextlib
import copy
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from config.models import ClusterConfig, FleetConfig
from testkit.realtier import phases
from testkit.realtier.harness import (
    ControlPlane,
    StartError,
    Tools,
    _built,
    _Process,
    _terminate,
    answers_ok,
    apply,
    await_each,
    build_command,
    cache_paths,
    check_running,
    free_port,
    spawn_logged,
    start_all,
    stop_all,
    stop_each,
)
from testkit.realtier.twin import PoolNodes, cluster_nodes
from testkit.realtier.twin_run import (
    TWIN_CONTROLLERS,
    SimulationTools,
    await_nodes_ready,
    launch_simulation,
    register_nodes,
)

MODULE: Final = "github.com/openkruise/kruise"
# A member's kube-controller-manager: the twin's controllers plus the ones that turn Kruise's
# subset workloads into pods (a UnitedDeployment's statefulSetTemplate makes apps/v1
# StatefulSets, a deploymentTemplate Deployments; cloneSet/advancedStatefulSet are Kruise's own).
MEMBER_CONTROLLERS: Final = (
    *TWIN_CONTROLLERS,
    "statefulset-controller",
    "deployment-controller",
    "replicaset-controller",
)
# On 2 shared cores, idle to busy: ready 1-9 s after launch (certificates, webhook
# configurations, its own readiness check through the webhook port); the margin: a busy machine.
KRUISE_TIMEOUT: Final = 180.0
MUTATING: Final = "kruise-mutating-webhook-configuration"
VALIDATING: Final = "kruise-validating-webhook-configuration"
WEBHOOK_SERVICE: Final = "kruise-webhook-service"
# Chart template facts (see the module docstring).
_POD_WEBHOOKS: Final = frozenset({"mpod.kb.io", "vpod.kb.io", "vpodeviction.kb.io"})
_DELETION_PROTECTION: Final = frozenset(
    {
        "vbuiltindeployment.kb.io",
        "vbuiltinreplicaset.kb.io",
        "vbuiltinstatefulset.kb.io",
        "vcustomresourcedefinition.kb.io",
        "vnamespace.kb.io",
        "vingress.kb.io",
        "vservice.kb.io",
    }
)
_NO_TIMEOUT: Final = frozenset({"vephemeraljobs.kb.io"})  # the template omits timeoutSeconds
_DELETE_PROTECTION_LABEL: Final = "policy.kruise.io/delete-protection"
_AKS_EXPRESSIONS: Final = (
    {"key": "control-plane", "operator": "NotIn", "values": ["true"]},
    {"key": "kubernetes.azure.com/managedby", "operator": "NotIn", "values": ["aks"]},
)
_NOT_KUBE_SYSTEM: Final = {
    "key": "kubernetes.io/metadata.name",
    "operator": "NotIn",
    "values": ["kube-system"],
}


# ---- the binary and its module ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KruiseTools:
    binary: Path
    module: Path  # the module's source tree in the tool builds' module cache

    @property
    def version(self) -> str:
        return self.module.name.rpartition("@v")[2]

    @property
    def crd_dir(self) -> Path:
        return self.module / "config" / "crd" / "bases"

    @property
    def webhook_manifests(self) -> Path:
        return self.module / "config" / "webhook" / "manifests.yaml"

    def crds(self) -> list[Path]:
        """Every CRD of the release: what the chart installs (`crds.managed: true`)."""
        return sorted(self.crd_dir.glob("*.yaml"))


def module_dir(binary: Path) -> Path:
    """Where the build left the module source: <cache>/_go/mod/<module>@v<version>."""
    version = binary.parent.parent.name.removeprefix("kruise-")
    return binary.parents[2] / "_go" / "mod" / f"{MODULE}@v{version}"


def find_module() -> Path | None:
    """The pinned module's source in the tool builds' module cache (there once `go get` ran)."""
    path = cache_paths().get("kruise")
    if path is None:
        return None
    module = module_dir(path)
    return module if (module / "config" / "crd" / "bases").is_dir() else None


def find_kruise() -> tuple[KruiseTools | None, list[str]]:
    """The built kruise-manager and its module source, or what is missing."""
    path = cache_paths().get("kruise")
    if path is None or not _built("kruise", path):
        return None, [f"kruise: not built ({path}); build with: {build_command(['kruise'])}"]
    module = module_dir(path)
    tools = KruiseTools(path, module)
    if not tools.webhook_manifests.is_file() or not tools.crds():
        return None, [f"kruise: module source not in {module} ({build_command(['kruise'])})"]
    return tools, []


# ---- what the chart creates --------------------------------------------------------------------


def _namespace_selector(name: str, values: Mapping[str, Any]) -> dict[str, Any] | None:
    aks = bool(values.get("webhookConfiguration", {}).get("aksIntegration"))
    if name in _POD_WEBHOOKS:
        # Kruise's own namespace (label control-plane=openkruise) and kube-system are never
        # gated by its pod webhooks; with aksIntegration neither are AKS's.
        expressions: list[dict[str, Any]] = [
            {
                "key": "control-plane",
                "operator": "NotIn",
                "values": ["openkruise", "true"] if aks else ["openkruise"],
            }
        ]
        if aks:
            expressions.append(copy.deepcopy(_AKS_EXPRESSIONS[1]))
        expressions.append(copy.deepcopy(_NOT_KUBE_SYSTEM))
        return {"matchExpressions": expressions}
    if name in _DELETION_PROTECTION:
        expressions = [copy.deepcopy(_NOT_KUBE_SYSTEM)]
        if aks:
            expressions += copy.deepcopy(list(_AKS_EXPRESSIONS))
        return {"matchExpressions": expressions}
    return {"matchExpressions": copy.deepcopy(list(_AKS_EXPRESSIONS))} if aks else None


def _chart_webhook(webhook: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """One webhook as the chart's template writes it: the module's, plus the chart's selectors."""
    out = copy.deepcopy(dict(webhook))
    name = str(out["name"])
    namespace = values["installation"]["namespace"]
    out["clientConfig"] = {
        "service": {
            "name": WEBHOOK_SERVICE,
            "namespace": namespace,
            "path": webhook["clientConfig"]["service"]["path"],
        }
    }
    if name not in _NO_TIMEOUT:
        out["timeoutSeconds"] = int(
            values.get("webhookConfiguration", {}).get("timeoutSeconds", 30)
        )
    out.pop("namespaceSelector", None)
    selector = _namespace_selector(name, values)
    if selector is not None:
        out["namespaceSelector"] = selector
    if name in _DELETION_PROTECTION:
        out["failurePolicy"] = "Ignore"
        out["objectSelector"] = {
            "matchExpressions": [{"key": _DELETE_PROTECTION_LABEL, "operator": "Exists"}]
        }
    return out


def chart_webhook_configurations(
    manifests: Path, values: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The chart's Mutating- and ValidatingWebhookConfiguration for these values."""
    gates = str(values.get("featureGates", ""))
    out: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(manifests.read_text()):
        if not doc:
            continue
        kind = doc["kind"]
        webhooks = [
            _chart_webhook(w, values)
            for w in doc["webhooks"]
            # the template leaves the pod webhooks out when the PodWebhook gate is off
            if not (w["name"] in _POD_WEBHOOKS and "PodWebhook=false" in gates)
        ]
        out.append(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {
                    "name": MUTATING if kind == "MutatingWebhookConfiguration" else VALIDATING,
                    # Kruise keeps the chart's webhooks here on first sync and rebuilds from it
                    "annotations": {"template": ""},
                },
                "webhooks": webhooks,
            }
        )
    return out


def chart_namespaces(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """kruise-system (labelled as the chart labels it: its pod webhooks skip it) and
    kruise-daemon-config, which the chart always creates."""
    installation = values["installation"]
    out: list[dict[str, Any]] = []
    if installation.get("createNamespace", True):
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": installation["namespace"],
                    "labels": {"control-plane": "openkruise"},
                },
            }
        )
    out.append(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kruise-daemon-config"}}
    )
    return out


def manager_argv(
    binary: Path, kubeconfig: Path, values: Mapping[str, Any], health_port: int
) -> list[str]:
    """The chart's container args (templates/manager.yaml), ports moved to loopback."""
    manager = values.get("manager", {})
    namespace = values["installation"]["namespace"]
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        "--enable-leader-election",
        "--metrics-addr=0",  # chart: :8080; nothing scrapes it, and members would clash
        f"--health-probe-addr=127.0.0.1:{health_port}",  # chart: :8000
        "--logtostderr=true",
        f"--leader-election-namespace={namespace}",
        f"--v={manager.get('log', {}).get('level', '4')}",
        f"--feature-gates={values.get('featureGates', '')}",
        f"--sync-period={manager.get('resyncPeriod', '0')}",
        "--enable-pprof=false",  # main.go's default :8090 would clash between members
    ]


def manager_env(values: Mapping[str, Any], webhook_port: int, cert_dir: Path) -> dict[str, str]:
    """The chart's env (POD_NAMESPACE, WEBHOOK_PORT) plus the loopback webhook mode."""
    return {
        "PATH": "/usr/bin:/bin",
        "POD_NAMESPACE": str(values["installation"]["namespace"]),
        "WEBHOOK_PORT": str(webhook_port),
        "WEBHOOK_HOST": "127.0.0.1",
        "WEBHOOK_CERT_WRITER": "secret",
        "WEBHOOK_CERT_DIR": str(cert_dir),
    }


# ---- the process -------------------------------------------------------------------------------


@dataclass(eq=False)
class KruiseManager:
    """One kruise-manager for one member plane."""

    plane: ControlPlane
    tools: KruiseTools
    workdir: Path
    values: Mapping[str, Any]
    started_after: float = field(default=0.0, init=False)  # seconds from launch to ready
    webhook_port: int = field(default=0, init=False)
    _process: _Process | None = field(default=None, init=False, repr=False)
    _health_port: int = field(default=0, init=False, repr=False)
    _started_at: float = field(default=0.0, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.plane.name

    @property
    def pid(self) -> int | None:
        return self._process.popen.pid if self._process is not None else None

    def launch(self) -> None:
        """Spawn the manager (from the main thread: it dies with pytest)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._health_port = free_port()
        self.webhook_port = free_port()
        argv = manager_argv(
            self.tools.binary, self.plane.kubeconfig, self.values, self._health_port
        )
        env = manager_env(self.values, self.webhook_port, self.workdir / "webhook-certs")
        self._started_at = time.monotonic()
        self._process = spawn_logged(
            f"kruise-{self.name}",
            argv,
            self.workdir / "kruise-manager.log",
            cwd=self.workdir,
            env={**env, "HOME": str(self.workdir)},
        )

    def ready(self) -> bool:
        """/readyz answers 200 (its check dials the webhook server with the issued CA) and the
        webhook configurations point at this process with a CA."""
        if self._process is None:
            return False
        check_running(self._process, self.name, "kruise-manager")
        ok = answers_ok(f"http://127.0.0.1:{self._health_port}/readyz")
        ok = ok and self.webhooks_point_here()
        if ok and not self.started_after:
            self.started_after = time.monotonic() - self._started_at
        return ok

    def webhook_urls(self) -> dict[str, str]:
        """Webhook name -> the URL its configuration calls ('' for a Service reference)."""
        out: dict[str, str] = {}
        for kind, name in (
            ("mutatingwebhookconfigurations", MUTATING),
            ("validatingwebhookconfigurations", VALIDATING),
        ):
            status, body = self.plane.get(f"/apis/admissionregistration.k8s.io/v1/{kind}/{name}")
            if status != 200:
                continue
            for webhook in json.loads(body).get("webhooks") or []:
                config = webhook.get("clientConfig") or {}
                url = str(config.get("url") or "") if config.get("caBundle") else ""
                out[str(webhook["name"])] = url
        return out

    def webhooks_point_here(self) -> bool:
        urls = self.webhook_urls()
        prefix = f"https://127.0.0.1:{self.webhook_port}/"
        return bool(urls) and all(url.startswith(prefix) for url in urls.values())

    def tail(self, lines: int = 40) -> str:
        return self._process.tail(lines) if self._process is not None else ""

    @phases.timed(phases.TWINS)
    def stop(self) -> None:
        """SIGTERM its group, SIGKILL if it lingers. Idempotent."""
        process, self._process = self._process, None
        if process is not None:
            _terminate(process)


def install_chart_objects(
    plane: ControlPlane,
    tools: KruiseTools,
    values: Mapping[str, Any],
    *,
    crds: Sequence[Path] | None = None,
) -> list[str]:
    """What the chart creates before the manager starts: CRDs (default: all of the release's;
    pass `[]` when the program installed them), namespaces and webhook configurations."""
    from testkit.realtier.crds import install_crds  # noqa: PLC0415 - the tier's one CRD path

    files = list(tools.crds() if crds is None else crds)
    names = install_crds(plane, files) if files else []
    objects = [
        *chart_namespaces(values),
        *chart_webhook_configurations(tools.webhook_manifests, values),
    ]
    applied = apply(plane, objects)
    if applied.rejected:
        raise StartError(f"[{plane.name}] rejected {applied.rejected}: {applied.stderr}")
    return names


@phases.timed(phases.TWINS)
def start_kruise(
    plane: ControlPlane,
    tools: KruiseTools,
    workdir: Path,
    values: Mapping[str, Any],
    *,
    crds: Sequence[Path] | None = None,
) -> KruiseManager:
    """Install what the chart would on `plane`, start kruise-manager, wait until it serves.

    `values`: the chart values the program renders for this member (its HelmRelease's values).
    The caller stops the manager (also on failure: it is returned only when ready, so on an
    exception the process is stopped here).
    """
    return start_kruises({plane.name: (plane, workdir)}, tools, {plane.name: values}, crds=crds)[
        plane.name
    ]


@phases.timed(phases.TWINS)
def start_kruises(
    planes: Mapping[str, tuple[ControlPlane, Path]],
    tools: KruiseTools,
    values: Mapping[str, Mapping[str, Any]],
    *,
    crds: Sequence[Path] | None = None,
) -> dict[str, KruiseManager]:
    """`start_kruise` for several members: launched together, awaited round robin."""
    managers = {
        name: KruiseManager(plane, tools, workdir, values[name])
        for name, (plane, workdir) in planes.items()
    }
    try:
        for manager in managers.values():
            install_chart_objects(manager.plane, tools, manager.values, crds=crds)
            manager.launch()
        await_each(
            list(managers.values()),
            "kruise-manager",
            KruiseManager.ready,
            lambda m: f"--- kruise-manager {m.name}:\n{m.tail()}",
            KRUISE_TIMEOUT,
        )
    except BaseException:
        stop_each(list(managers.values()), "kruise-manager")
        raise
    return managers


# ---- members: plane + nodes + scheduler + kwok + Kruise -----------------------------------------


@dataclass
class Member:
    """One Karmada member's loopback twin with Kruise running."""

    plane: ControlPlane
    nodes: list[PoolNodes]
    kruise: KruiseManager | None = None

    def node_pool(self, node: str) -> str | None:
        return next(
            (g.pool for g in self.nodes for n in g.nodes if n["metadata"]["name"] == node), None
        )


def _cluster(fleet: FleetConfig, name: str) -> ClusterConfig:
    cluster = fleet.cluster(name)
    if cluster is None:
        raise StartError(f"no cluster {name!r} in the stack")
    return cluster


@contextlib.contextmanager
def running_members(
    fleet: FleetConfig,
    names: Sequence[str],
    *,
    tools: Tools,
    sim: SimulationTools,
    kruise: KruiseTools,
    values: Mapping[str, Mapping[str, Any]],
    workdir: Path,
) -> Iterator[dict[str, Member]]:
    """Start a plane per member (MEMBER_CONTROLLERS), its AKS pools as kwok nodes (virtual node
    included), the real kube-scheduler and kruise-manager with the member's chart values."""
    planes = {
        name: ControlPlane(name, workdir / name, tools, controllers=MEMBER_CONTROLLERS)
        for name in names
    }
    managers: dict[str, KruiseManager] = {}
    try:
        start_all(planes.values())
        members = {
            name: Member(planes[name], cluster_nodes(fleet, _cluster(fleet, name)))
            for name in names
        }
        for member in members.values():
            launch_simulation(member.plane, sim)
            register_nodes(member.plane, member.nodes)
        await_nodes_ready(
            list(planes.values()),
            {
                name: {n["metadata"]["name"] for g in m.nodes for n in g.nodes}
                for name, m in members.items()
            },
        )
        managers = start_kruises(
            {name: (plane, workdir / "kruise" / name) for name, plane in planes.items()},
            kruise,
            values,
        )
        for name, manager in managers.items():
            members[name].kruise = manager
        yield members
    finally:
        try:
            stop_each(list(managers.values()), "kruise-manager")
        finally:
            stop_all(planes.values())
