"""A real Karmada control plane (v1.18.2, built from the module proxy) on 127.0.0.1.

What a `helm install karmada` (host mode) of the pinned chart leaves, made from the Go module the
components are built from (in the tool cache's module cache: `charts/karmada`, whose templates
give the flags and whose `_crds` and static-resource templates give the initial objects):

- Karmada's own etcd, kube-apiserver and kube-controller-manager: the harness's ControlPlane,
  plus the chart's API server flags that matter here (the aggregation front proxy, the
  admission plugins it disables) and the controllers the chart runs;
- what the static-resource job applies: namespaces karmada-system and karmada-cluster, the CRDs
  of `charts/karmada/_crds` (with its two conversion-webhook patches), the webhook
  configurations of `_karmada_webhook_configuration.tpl`, and the APIService
  v1alpha1.cluster.karmada.io with its ExternalName Service (`_karmada_apiservice.tpl`);
- karmada-aggregated-apiserver, karmada-webhook, karmada-controller-manager and karmada-scheduler
  with the chart's flags and the program's feature gates (builders.karmada.karmada_values).

What runs differently from the chart, and why (none of it changes what Karmada decides):
- Processes with the plane's admin kubeconfig (system:masters), not Pods: the chart's
  ClusterRoles are not exercised on the Karmada side (the members' are, see test_karmada.py).
- The aggregated API server's Service is ExternalName `localhost` (the chart's is ExternalName
  too, to the host cluster's Service): the aggregator dials localhost:<port>, and the serving
  certificate carries the Service name the aggregator checks. Endpoints cannot hold 127.0.0.1,
  so `--enable-aggregator-routing` is no way to reach a loopback process.
- Webhooks use `url: https://127.0.0.1:<port>/<path>` instead of the chart's
  `https://karmada-webhook.karmada-system.svc:443/<path>` (a Service cannot lead to loopback).
- The front proxy's client certificate is the plane's admin certificate, trusted as request
  header CA by name (the chart has a separate front-proxy CA; the check is the same).
- kube-controller-manager runs the harness's controllers (the serviceaccount controller is its
  readiness signal) plus the chart's clusterrole-aggregation and ttl-after-finished; not the
  chart's CSR signer and bootstrap-token controllers (no node ever joins this plane).
- Ports: free ports on 127.0.0.1 instead of the chart's fixed ones; metrics off.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from builders import karmada_access as ka
from builders import karmada_members as km
from config.karmada import KarmadaSettings
from testkit.realtier import phases
from testkit.realtier.harness import (
    CONTROLLERS,
    ControlPlane,
    StartError,
    Tools,
    _built,
    answers_ok,
    apply,
    await_each,
    build_command,
    cache_paths,
    free_port,
    start_all,
)

MODULE: Final = "github.com/karmada-io/karmada"
SYSTEM_NAMESPACE: Final = "karmada-system"
CLUSTER_NAMESPACE: Final = "karmada-cluster"
AGGREGATED_SERVICE: Final = "karmada-aggregated-apiserver"
BINARIES: Final = (
    "karmada-aggregated-apiserver",
    "karmada-webhook",
    "karmada-controller-manager",
    "karmada-scheduler",
)
# The chart's kubeControllerManager.controllers that mean anything without nodes, plus the
# harness's (their 1.33 names).
KARMADA_CONTROLLERS: Final = (
    *CONTROLLERS,
    "clusterrole-aggregation-controller",
    "ttl-after-finished-controller",
)
# Measured on 2 shared cores: every component serves within ~10 s of launch; the margin is a
# busy machine.
COMPONENT_TIMEOUT: Final = 180.0


@dataclass(frozen=True, slots=True)
class KarmadaTools:
    """The four Karmada binaries (one bin/ in the tool cache) and the module's chart."""

    bin_dir: Path
    chart: Path

    @property
    def version(self) -> str:
        return self.bin_dir.parent.name.removeprefix("karmada-")

    def binary(self, name: str) -> Path:
        return self.bin_dir / name


def find_karmada() -> tuple[KarmadaTools | None, list[str]]:
    """The cached Karmada build and the chart of its module; or what is missing."""
    path = cache_paths().get("karmada")
    if path is None or not _built("karmada", path):
        return None, [f"karmada (build: {build_command(['karmada'])})"]
    missing = [b for b in BINARIES if not (path.parent / b).is_file()]
    if missing:
        return None, [f"karmada binaries {missing} (build: {build_command(['karmada'])})"]
    version = path.parent.parent.name.removeprefix("karmada-")
    chart = (
        path.parent.parent.parent
        / "_go"
        / "mod"
        / "github.com"
        / "karmada-io"
        / f"karmada@v{version}"
        / "charts"
        / "karmada"
    )
    if not chart.is_dir():
        return None, [
            f"the karmada module's chart ({chart}; rebuild: {build_command(['karmada'])})"
        ]
    return KarmadaTools(path.parent, chart), []


# ---- the initial objects: what the chart's static-resource job applies ---------------------------


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def crd_documents(chart: Path, webhook_url: str, ca_bundle: str) -> list[dict[str, Any]]:
    """`kubectl apply -k _crds`: the kustomization's resources with its conversion patches."""
    base = chart / "_crds"
    kustomization = yaml.safe_load((base / "kustomization.yaml").read_text())
    docs = [yaml.safe_load((base / r).read_text()) for r in kustomization["resources"]]
    by_name = {d["metadata"]["name"]: d for d in docs}
    for patch in kustomization.get("patches", []):
        text = (base / patch["path"]).read_text()
        patched = yaml.safe_load(text)
        conversion = patched["spec"]["conversion"]
        # The job replaces the placeholders with the webhook Service's URL and the CA.
        conversion["webhook"]["clientConfig"] = {
            "url": f"{webhook_url}/convert",
            "caBundle": ca_bundle,
        }
        by_name[patched["metadata"]["name"]]["spec"]["conversion"] = conversion
    return docs


_TEMPLATE_LINE: Final = re.compile(r"^\s*\{\{.*\}\}\s*$")


def webhook_configurations(chart: Path, webhook_url: str, ca_bundle: str) -> list[dict[str, Any]]:
    """`_karmada_webhook_configuration.tpl` rendered: clientConfig URLs on `webhook_url`."""
    text = (chart / "templates" / "_karmada_webhook_configuration.tpl").read_text()
    text = text.replace("https://{{ $name }}-webhook.{{ $namespace }}.svc:443", webhook_url)
    lines = []
    for line in text.splitlines():
        if "karmada.webhook.caBundle" in line:
            lines.append(line.split("{{")[0].replace("{{", "") + f"caBundle: {ca_bundle}")
        elif _TEMPLATE_LINE.match(line):
            continue  # define/end, $name/$namespace, commonLabels
        else:
            if "{{" in line:
                raise StartError(f"unrendered template line in the webhook configuration: {line}")
            lines.append(line)
    docs = [d for d in yaml.safe_load_all("\n".join(lines)) if d]
    for doc in docs:
        doc["metadata"]["labels"] = {
            k: v for k, v in (doc["metadata"].get("labels") or {}).items() if v is not None
        }
    return docs


def seed_objects(ca_bundle: str, aggregated_port: int) -> list[dict[str, Any]]:
    """Namespaces, and the APIService of cluster.karmada.io with its Service."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NAMESPACE}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CLUSTER_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": AGGREGATED_SERVICE, "namespace": SYSTEM_NAMESPACE},
            "spec": {
                "type": "ExternalName",
                "externalName": "localhost",
                "ports": [{"port": aggregated_port, "targetPort": aggregated_port}],
            },
        },
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": "v1alpha1.cluster.karmada.io"},
            "spec": {
                "caBundle": ca_bundle,
                "group": "cluster.karmada.io",
                "groupPriorityMinimum": 2000,
                "service": {
                    "name": AGGREGATED_SERVICE,
                    "namespace": SYSTEM_NAMESPACE,
                    "port": aggregated_port,
                },
                "version": "v1alpha1",
                "versionPriority": 10,
            },
        },
    ]


def feature_gates(values: Mapping[str, Any]) -> str:
    """`--feature-gates=` as the chart's karmada.controllerManager.featureGates helper writes it."""
    gates = (values.get("controllerManager") or {}).get("featureGates") or {}
    return ",".join(f"{k}={str(v).lower()}" for k, v in gates.items())


def extra_args(values: Mapping[str, Any]) -> list[str]:
    extra = (values.get("controllerManager") or {}).get("extraCommandArgs") or {}
    return [f"--{k}={v}" for k, v in extra.items()]


# ---- the plane -----------------------------------------------------------------------------------

_AGGREGATED_CERT_CONFIG: Final = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost,DNS:{service}.{namespace}.svc
authorityKeyIdentifier = keyid
"""


@dataclass
class KarmadaPlane:
    """Karmada's API server plane and its four components; `stop` stops them all."""

    workdir: Path
    tools: Tools
    karmada: KarmadaTools
    # The karmada chart values the program renders (builders.karmada.karmada_values): feature
    # gates and extra flags of the controller manager.
    values: Mapping[str, Any]
    plane: ControlPlane = field(init=False)
    webhook_port: int = field(default=0, init=False)
    aggregated_port: int = field(default=0, init=False)
    started_after: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        pki = self.workdir / "plane" / "pki"  # make_pki's layout
        self.plane = ControlPlane(
            "karmada",
            self.workdir / "plane",
            self.tools,
            controllers=KARMADA_CONTROLLERS,
            apiserver_args=(
                # the chart's, for the aggregated API server behind the front proxy
                f"--requestheader-client-ca-file={pki / 'ca.crt'}",
                "--requestheader-allowed-names=realtier-admin",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-username-headers=X-Remote-User",
                f"--proxy-client-cert-file={pki / 'admin.crt'}",
                f"--proxy-client-key-file={pki / 'admin.key'}",
                "--disable-admission-plugins=StorageObjectInUseProtection,ServiceAccount",
                "--allow-privileged=true",
            ),
        )

    @property
    def name(self) -> str:
        return "karmada"

    @property
    def webhook_url(self) -> str:
        return f"https://127.0.0.1:{self.webhook_port}"

    @phases.timed(phases.TWINS)
    def start(self) -> None:
        """Plane, seed, components; returns once the Cluster API is served and webhooks answer.
        On failure everything started is stopped."""
        t0 = time.monotonic()
        try:
            start_all([self.plane])
            self.webhook_port, self.aggregated_port = free_port(), free_port()
            ca = _b64(self.plane.ca_cert)
            serving = self._serving_certs()
            applied = apply(
                self.plane,
                [
                    *crd_documents(self.karmada.chart, self.webhook_url, ca),
                    *seed_objects(ca, self.aggregated_port),
                ],
            )
            if applied.rejected:
                raise StartError(f"[karmada] seed rejected {applied.rejected}: {applied.stderr}")
            crds = [r for r in applied.accepted if r.startswith("customresourcedefinition.")]
            self.plane.wait_established(crds)
            self._launch(serving)
            await_each(
                [self],
                "karmada components",
                KarmadaPlane._ready,
                KarmadaPlane.logs,
                COMPONENT_TIMEOUT,
            )
            # After the webhook serves: every policy write goes through it (failurePolicy Fail).
            hooks = apply(
                self.plane, webhook_configurations(self.karmada.chart, self.webhook_url, ca)
            )
            if hooks.rejected:
                raise StartError(f"[karmada] webhooks rejected {hooks.rejected}: {hooks.stderr}")
        except BaseException:
            self.stop()
            raise
        self.started_after = time.monotonic() - t0

    @phases.timed(phases.TWINS)
    def stop(self) -> None:
        self.plane.stop()

    def logs(self) -> str:
        return self.plane._logs()

    # ---- internals ------------------------------------------------------------------------------

    def _serving_certs(self) -> Path:
        """A serving certificate (CA: the plane's) for the webhook and the aggregated API
        server: 127.0.0.1 and the Service name the aggregator checks."""
        directory = self.workdir / "serving"
        directory.mkdir(parents=True, exist_ok=True)
        pki = self.plane.pki
        (directory / "openssl.cnf").write_text(
            _AGGREGATED_CERT_CONFIG.format(service=AGGREGATED_SERVICE, namespace=SYSTEM_NAMESPACE)
        )
        openssl = str(self.tools.openssl)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

        def run(*args: str) -> None:
            subprocess.run(
                [openssl, *args], cwd=directory, capture_output=True, timeout=60, check=True
            )

        run(
            "req",
            "-config",
            "openssl.cnf",
            "-new",
            *ec,
            "-keyout",
            "tls.key",
            "-out",
            "tls.csr",
            "-subj",
            "/CN=karmada-serving",
        )
        run(
            "x509",
            "-req",
            "-in",
            "tls.csr",
            "-CA",
            str(pki.ca_cert),
            "-CAkey",
            str(pki.ca_key),
            "-set_serial",
            f"0x{time.time_ns():016x}",
            "-days",
            "3",
            "-extfile",
            "openssl.cnf",
            "-extensions",
            "server",
            "-out",
            "tls.crt",
        )
        (directory / "tls.key").chmod(0o600)
        shutil.copy(pki.ca_cert, directory / "ca.crt")
        return directory

    def _launch(self, serving: Path) -> None:
        plane, kubeconfig = self.plane, str(self.plane.kubeconfig)
        b = self.karmada.binary
        self._health: dict[str, int] = {}
        plane._spawn(
            "karmada-aggregated-apiserver",
            [
                str(b("karmada-aggregated-apiserver")),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                f"--etcd-servers={plane.etcd_url}",
                f"--tls-cert-file={serving / 'tls.crt'}",
                f"--tls-private-key-file={serving / 'tls.key'}",
                "--audit-log-path=-",
                "--audit-log-maxage=0",
                "--audit-log-maxbackup=0",
                "--tls-min-version=VersionTLS13",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.aggregated_port}",
                f"--cert-dir={self.workdir / 'aggregated-certs'}",
            ],
        )
        # Its readiness is on the webhook port (`/readyz/`, the chart's probe), not a probe port.
        plane._spawn(
            "karmada-webhook",
            [
                str(b("karmada-webhook")),
                f"--kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                "--metrics-bind-address=0",
                "--health-probe-bind-address=0",
                f"--secure-port={self.webhook_port}",
                f"--cert-dir={serving}",
            ],
        )
        self._launch_controller_manager()
        scheduler_health = free_port()
        self._health["karmada-scheduler"] = scheduler_health
        plane._spawn(
            "karmada-scheduler",
            [
                str(b("karmada-scheduler")),
                f"--kubeconfig={kubeconfig}",
                "--metrics-bind-address=0",
                f"--health-probe-bind-address=127.0.0.1:{scheduler_health}",
                f"--leader-elect-resource-namespace={SYSTEM_NAMESPACE}",
            ],
        )

    def _launch_controller_manager(self) -> None:
        b, kubeconfig = self.karmada.binary, str(self.plane.kubeconfig)
        gates = feature_gates(self.values)
        cm_health = free_port()
        self._health["karmada-controller-manager"] = cm_health
        self.plane._spawn(
            "karmada-controller-manager",
            [
                str(b("karmada-controller-manager")),
                f"--kubeconfig={kubeconfig}",
                "--cluster-status-update-frequency=10s",
                f"--leader-elect-resource-namespace={SYSTEM_NAMESPACE}",
                "--metrics-bind-address=0",
                f"--health-probe-bind-address=127.0.0.1:{cm_health}",
                *([f"--feature-gates={gates}"] if gates else []),
                *extra_args(self.values),
            ],
        )

    def restart_controller_manager(self) -> float:
        """Stop karmada-controller-manager and start it again, as `kubectl rollout restart
        deployment/karmada-controller-manager` does on a cluster (docs/security.md: after a
        member credential rotation). Returns the seconds until every component answers again."""
        t0 = time.monotonic()
        before = self._leader()
        if not self.plane.stop_component("karmada-controller-manager"):
            raise StartError("[karmada] no karmada-controller-manager to restart")
        self._launch_controller_manager()
        await_each(
            [self],
            "restarted karmada-controller-manager",
            KarmadaPlane._ready,
            KarmadaPlane.logs,
            COMPONENT_TIMEOUT,
        )
        # Healthy is not working: its controllers start once it holds the lease, which the
        # stopped process did not release (it expires: 15 s). Until then nothing reconciles.
        await_each(
            [self],
            f"restarted karmada-controller-manager leading (lease held by {before} before)",
            lambda k: (held := k._leader()) is not None and held != before,
            KarmadaPlane.logs,
            COMPONENT_TIMEOUT,
        )
        return time.monotonic() - t0

    def _leader(self) -> str | None:
        status, body = self.plane.get(
            f"/apis/coordination.k8s.io/v1/namespaces/{SYSTEM_NAMESPACE}/leases/"
            "karmada-controller-manager"
        )
        if status != 200:
            return None
        holder = (json.loads(body).get("spec") or {}).get("holderIdentity")
        return str(holder) if holder else None

    def _ready(self) -> bool:
        self.plane._check_alive()
        context = ssl.create_default_context(cafile=str(self.plane.ca_cert))
        try:
            with urllib.request.urlopen(
                f"{self.webhook_url}/readyz/", timeout=2, context=context
            ) as r:
                if r.status != 200:
                    return False
        except (urllib.error.URLError, OSError):
            return False
        if not all(answers_ok(f"http://127.0.0.1:{p}/healthz") for p in self._health.values()):
            return False
        # The aggregated API through the aggregator: the APIService is Available.
        return self.plane.get("/apis/cluster.karmada.io/v1alpha1/clusters")[0] == 200


def start_karmada(
    workdir: Path, tools: Tools, karmada: KarmadaTools, values: Mapping[str, Any]
) -> KarmadaPlane:
    plane = KarmadaPlane(workdir, tools, karmada, copy.deepcopy(dict(values)))
    plane.start()
    return plane


# ---- members: what `karmadactl join` does, from the program's builders ---------------------------

JOIN_TIMEOUT: Final = 120.0
CLUSTER_API_PATH: Final = "/apis/cluster.karmada.io/v1alpha1/clusters"


def _json(plane: ControlPlane, path: str) -> dict[str, Any] | None:
    status, body = plane.get(path)
    return json.loads(body) if status == 200 else None


def _token_data(plane: ControlPlane, name: str) -> dict[str, str] | None:
    secret = _json(plane, f"/api/v1/namespaces/{CLUSTER_NAMESPACE}/secrets/{name}")
    data = (secret or {}).get("data") or {}
    return data if data.get("token") and data.get("ca.crt") else None


def cluster_ready(karmada: ControlPlane, name: str) -> bool:
    cluster = _json(karmada, f"{CLUSTER_API_PATH}/{name}")
    conditions = ((cluster or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def join_members(
    karmada: ControlPlane,
    members: Mapping[str, ControlPlane],
    settings: KarmadaSettings,
    regions: Mapping[str, str | None],
) -> float:
    """Register every member in push mode with the objects the program creates
    (builders.karmada_members: member_objects, credential_secret, impersonator_secret,
    karmada_cluster) for the settings' `memberAccess`; wait until each Cluster is Ready. Returns
    the seconds."""
    t0 = time.monotonic()
    unified_auth = not ka.scoped(settings)
    for name, plane in members.items():
        applied = apply(plane, [m.obj for m in km.member_objects(name, settings)])
        if applied.rejected:
            raise StartError(f"[{name}] join objects rejected {applied.rejected}: {applied.stderr}")
    for name, plane in members.items():
        account = km.member_service_account(name)
        deadline = time.monotonic() + JOIN_TIMEOUT
        imp: dict[str, str] | None = None
        while (data := _token_data(plane, account)) is None or (
            unified_auth and (imp := _token_data(plane, km.IMPERSONATOR)) is None
        ):
            if time.monotonic() > deadline:
                raise StartError(f"[{name}] no token for {account} after {JOIN_TIMEOUT:.0f}s")
            time.sleep(0.25)
        applied = apply(
            karmada,
            [
                km.credential_secret(name, token=data["token"], ca_bundle=data["ca.crt"]),
                *([km.impersonator_secret(name, token=imp["token"])] if imp else []),
                km.karmada_cluster(
                    name,
                    api_endpoint=plane.url,
                    region=regions.get(name),
                    impersonator=unified_auth,
                ),
            ],
        )
        if applied.rejected:
            raise StartError(f"[karmada] {name} rejected {applied.rejected}: {applied.stderr}")
    deadline = time.monotonic() + JOIN_TIMEOUT
    while not all(cluster_ready(karmada, n) for n in members):
        if time.monotonic() > deadline:
            states = {n: _json(karmada, f"{CLUSTER_API_PATH}/{n}") for n in members}
            raise StartError(f"members not Ready after {JOIN_TIMEOUT:.0f}s: {states}")
        time.sleep(0.5)
    return time.monotonic() - t0
