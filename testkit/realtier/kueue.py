"""A real Kueue manager (the pinned `cmd/kueue` from the tool cache) beside a loopback plane.

Kueue normally runs in the cluster; here it runs on this machine with the plane's admin kubeconfig.
Everything that needs in-cluster networking is off or on loopback: no internal certificate
management (no webhook configurations are registered, so the API server never calls it and Jobs
must be created suspended, with their queue label, by the test), the webhook server and health
probe on 127.0.0.1, no leader election. The metrics listener is off unless a test asks for it
(`metrics_port`): then Kueue serves HTTPS /metrics on 127.0.0.1 at that port, with the pair in
METRICS_CERT_DIR, and authorizes each scrape against its plane's API server (TokenReview,
SubjectAccessReview) as in a cluster.

Kueue's visibility API (the VisibilityOnDemand gate, on by default in Kueue) is off unless a test
asks for it (`visibility`, on a plane started with `aggregation`): then Kueue's visibility server
listens on 127.0.0.1 at a port of its own (`visibility_port`, Configuration `visibilityServer`)
with the pair in VISIBILITY_CERT_DIR, and its plane's aggregation layer leads to it through the
APIServices v1beta2 and v1beta1.visibility.kueue.x-k8s.io as the chart ships them
(`insecureSkipTLSVerify`, the chart's setting without cert-manager) and a Service of the chart's
name, `visibility_objects`. The one difference: the Service is ExternalName `localhost` (as
testkit/realtier/karmada.py leads to its aggregated API server), not the chart's ClusterIP Service
with a selector, since no pod backs it here and Endpoints may not hold a loopback address. The
aggregator resolves an ExternalName Service to its name and the APIService's port, with or
without `--enable-aggregator-routing`. The server authenticates the front proxy and authorizes
each request with its plane's API server (SubjectAccessReview), as in a cluster.

Processes are started and stopped as the harness does it: own process group, SIGKILL when pytest
dies (PR_SET_PDEATHSIG, so start them from the main thread), stopped by group id.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from testkit.realtier import phases
from testkit.realtier.harness import (
    ControlPlane,
    StartError,
    _Process,
    _terminate,
    answers_ok,
    apply,
    await_each,
    cache_paths,
    check_running,
    free_port,
    namespace,
    spawn_logged,
    stop_each,
)
from upstream.kueue import KUEUE_NAMESPACE

# The twins' Kueue `multiKueue.workerLostTimeout` unless a test sets its own (15m in Kueue;
# docs/testing.md, "Timings the twins shorten").
TWIN_WORKER_LOST_TIMEOUT: Final = "2m"

# Measured: ready ~1 s after start on an idle machine, a few s with three planes beside it.
KUEUE_TIMEOUT: Final = 60.0
CONFIG_API: Final = "config.kueue.x-k8s.io/v1beta2"
# With internalCertManagement off, v0.19.2's main() watches this fixed path for the metrics
# server's certificate and exits when the files are missing, even with metrics disabled.
METRICS_CERT_DIR: Final = Path("/etc/kueue/metrics/certs")
# v0.19.2 pkg/visibility/server.go `certDir = "/visibility"`: with internalCertManagement off the
# visibility server serves `/visibility/tls.crt` and `tls.key`, a fixed absolute path no setting
# moves, and Kueue exits when they are missing. Shared by every twin on the machine, as
# METRICS_CERT_DIR is (`visibility_certs`); one pair serves any number of Kueues at once.
VISIBILITY_CERT_DIR: Final = Path("/visibility")
VISIBILITY_GROUP: Final = "visibility.kueue.x-k8s.io"
# The versions v0.19.2 serves (server.go `install`) and registers (config/components/visibility).
VISIBILITY_VERSIONS: Final = ("v1beta2", "v1beta1")
# The chart's Service name for a release named kueue (`{{ kueue.fullname }}-visibility-server`).
VISIBILITY_SERVICE: Final = "kueue-visibility-server"
APIREGISTRATION: Final = "/apis/apiregistration.k8s.io/v1/apiservices"


def kueue_binary() -> Path | None:
    """The cached Kueue manager, or None when it is not built."""
    path = cache_paths().get("kueue")
    return path if path is not None and path.is_file() else None


def _self_signed(openssl: Path, directory: Path, name: str) -> None:
    """tls.crt/tls.key for 127.0.0.1 (the webhook server needs a pair; nothing calls it)."""
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            str(openssl),
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "3",
            "-subj",
            f"/CN={name}",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(directory / "tls.key"),
            "-out",
            str(directory / "tls.crt"),
        ],
        capture_output=True,
        timeout=60,
        check=True,
    )
    (directory / "tls.key").chmod(0o600)


# Runs of the tier on one machine (several worktrees, or a test beside scripts/check) share
# METRICS_CERT_DIR: each holds a shared lock on METRICS_CERT_LOCK while its Kueue managers may
# (re)start; the last one out removes the pair, and only if a run of the tier made it. The ".make"
# lock serialises creating the pair. VISIBILITY_CERT_DIR is shared the same way.
METRICS_CERT_LOCK: Final = Path("/tmp/aks-batch-fleet-realtier-kueue-metrics.lock")
VISIBILITY_CERT_LOCK: Final = Path("/tmp/aks-batch-fleet-realtier-kueue-visibility.lock")
_METRICS_CERT_MARK: Final = ".made-by-aks-batch-fleet-realtier"


@contextlib.contextmanager
def metrics_certs(openssl: Path) -> Iterator[list[Path]]:
    """Make METRICS_CERT_DIR's pair only if absent; the last run of the tier out removes it.

    Yields the paths this run created (files, then the directories made for them), empty when
    the files were already there. A pair that no run of the tier made is never touched.
    """
    with _shared_pair(openssl, METRICS_CERT_DIR, METRICS_CERT_LOCK, "realtier-kueue-metrics") as c:
        yield c


@contextlib.contextmanager
def visibility_certs(openssl: Path) -> Iterator[list[Path]]:
    """VISIBILITY_CERT_DIR's pair, as `metrics_certs` makes and removes METRICS_CERT_DIR's."""
    with _shared_pair(
        openssl, VISIBILITY_CERT_DIR, VISIBILITY_CERT_LOCK, "realtier-kueue-visibility"
    ) as created:
        yield created


@contextlib.contextmanager
def _shared_pair(openssl: Path, directory: Path, lock: Path, subject: str) -> Iterator[list[Path]]:
    created: list[Path] = []
    files = [directory / "tls.crt", directory / "tls.key"]
    mark = directory / _METRICS_CERT_MARK
    make_lock = lock.with_suffix(".make")
    with lock.open("a") as use, make_lock.open("a") as make:
        # Blocks only while the last run out is removing the pair (it holds `use` exclusively).
        fcntl.flock(use, fcntl.LOCK_SH)
        fcntl.flock(make, fcntl.LOCK_EX)
        try:
            if not all(f.exists() for f in files):
                if any(f.exists() for f in files):
                    raise StartError(f"{directory} holds only one of tls.crt/tls.key")
                missing_dirs = [d for d in (directory, *directory.parents) if not d.exists()]
                _self_signed(openssl, directory, subject)
                created += files
                created += missing_dirs  # deepest first: the order rmdir needs
                mark.write_text("\n".join(map(str, [*files, mark, *missing_dirs])) + "\n")
        finally:
            fcntl.flock(make, fcntl.LOCK_UN)
        try:
            yield created
        finally:
            try:
                fcntl.flock(use, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass  # another run still uses the pair: it removes it when it leaves
            else:
                _remove_made_pair(mark)


def _remove_made_pair(mark: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        listed = [Path(line) for line in mark.read_text().splitlines() if line]
        for path in listed:
            with contextlib.suppress(FileNotFoundError, OSError):
                if path.is_dir():
                    path.rmdir()
                else:
                    path.unlink()


# Keys of the program's Configuration the loopback harness sets itself (in-cluster serving,
# ports, leader election); everything else of `program` runs as the program renders it.
HARNESS_KEYS: Final = frozenset(
    {
        "namespace",
        "internalCertManagement",
        "webhook",
        "metrics",
        "health",
        "leaderElection",
        "visibilityServer",
    }
)


def manager_configuration(  # noqa: PLR0917 - one per Configuration part
    webhook_port: int,
    health_port: int,
    cert_dir: Path,
    frameworks: Sequence[str] = ("batch/job",),
    worker_lost_timeout: str = TWIN_WORKER_LOST_TIMEOUT,
    program: Mapping[str, Any] | None = None,
    metrics_port: int = 0,
    visibility_port: int = 0,
) -> dict[str, object]:
    """The Configuration file (field names as in v0.19.2's apis/config/v1beta2).

    `program`: the Configuration the program renders for the cluster (builders.kueue
    manager_config): its settings (waitForPodsReady, fairSharing, the dispatcher, ...) are
    kept; the harness's loopback keys and short MultiKueue timers win. Of its `metrics` block
    only the bind address is the harness's: `metrics_port` (0: no listener) on 127.0.0.1.
    `visibility_port`: the visibility server's port on 127.0.0.1 (0: Kueue's default, unused
    while the VisibilityOnDemand gate is off).
    """
    base = {k: v for k, v in (program or {}).items() if k not in HARNESS_KEYS}
    multi = {**(base.pop("multiKueue", None) or {})}
    metrics = {
        **((program or {}).get("metrics") or {}),
        # "0" disables controller-runtime's metrics server (three on :8443 would clash).
        "bindAddress": f"127.0.0.1:{metrics_port}" if metrics_port else "0",
    }
    return {
        # Kueue's default, unless the program says otherwise
        "manageJobsWithoutQueueName": False,
        **base,
        "apiVersion": CONFIG_API,
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "metrics": metrics,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "leaderElection": {"leaderElect": False},
        **(
            {"visibilityServer": {"bindAddress": "127.0.0.1", "bindPort": visibility_port}}
            if visibility_port
            else {}
        ),
        "integrations": {"frameworks": list(frameworks)},
        # MultiKueue is on by default in 0.19 (the manager's controllers watch
        # MultiKueueClusters); short GC/loss timeouts keep a broken test from lingering.
        "multiKueue": {
            **multi,
            "gcInterval": "10s",
            "origin": "multikueue",
            "workerLostTimeout": worker_lost_timeout,
        },
    }


@dataclass(eq=False)
class KueueManager:
    """One Kueue manager process for one plane."""

    plane: ControlPlane
    binary: Path
    workdir: Path
    # integrations.frameworks of its Configuration (a twin: the stack's kueue.frameworks)
    frameworks: tuple[str, ...] = ("batch/job",)
    # multiKueue.workerLostTimeout (a fault test shortens it; 2m keeps a broken test short)
    worker_lost_timeout: str = TWIN_WORKER_LOST_TIMEOUT
    # The program's Configuration and feature gates for this cluster (a twin: builders.kueue's
    # manager_config and feature_gates), as the chart would hand them to Kueue.
    program_config: Mapping[str, Any] = field(default_factory=dict[str, Any])
    feature_gates: Mapping[str, bool] = field(default_factory=dict[str, bool])
    # True: serve /metrics on a loopback port of its own (`metrics_port` once launched).
    metrics: bool = False
    metrics_port: int = field(default=0, init=False)
    # True: serve Kueue's visibility API through its plane's aggregation layer (the plane started
    # with `aggregation`; `visibility_certs` held while it runs); ready once both APIServices are
    # Available.
    visibility: bool = False
    visibility_port: int = field(default=0, init=False)
    started_after: float = field(default=0.0, init=False)  # seconds from start to ready
    _process: _Process | None = field(default=None, init=False, repr=False)
    _health_port: int = field(default=0, init=False, repr=False)
    _started_at: float = field(default=0.0, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.plane.name

    @property
    def pid(self) -> int | None:
        return self._process.popen.pid if self._process is not None else None

    def launch(self, openssl: Path) -> None:
        """Write the config and certificates, then spawn (call from the main thread)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        cert_dir = self.workdir / "webhook-certs"
        _self_signed(openssl, cert_dir, f"realtier-kueue-{self.name}")
        self._health_port = free_port()
        if self.metrics and not self.metrics_port:  # a restart keeps its port
            self.metrics_port = free_port()
        gates = dict(self.feature_gates)
        if self.visibility:
            if not self.plane.aggregation:
                raise StartError(f"[{self.name}] visibility needs a plane with `aggregation`")
            if gates.get("VisibilityOnDemand") is False:
                raise StartError(f"[{self.name}] visibility asked, the program turns it off")
            if not self.visibility_port:  # a restart keeps its port
                self.visibility_port = free_port()
            applied = apply(self.plane, visibility_objects(self.visibility_port))
            if applied.rejected:
                raise StartError(f"[{self.name}] {applied.rejected}: {applied.stderr}")
        else:
            # Not served: the visibility server wants its APIService and certificates.
            gates["VisibilityOnDemand"] = False
        config = self.workdir / "kueue-config.yaml"
        config.write_text(
            yaml.safe_dump(
                manager_configuration(
                    free_port(),
                    self._health_port,
                    cert_dir,
                    self.frameworks,
                    self.worker_lost_timeout,
                    self.program_config,
                    self.metrics_port,
                    self.visibility_port,
                )
            )
        )
        self._started_at = time.monotonic()
        self._process = spawn_logged(
            f"kueue-{self.name}",
            [
                str(self.binary),
                f"--config={config}",
                f"--kubeconfig={self.plane.kubeconfig}",
                "--feature-gates=" + ",".join(f"{k}={str(v).lower()}" for k, v in gates.items()),
            ],
            self.workdir / "kueue.log",
            cwd=self.workdir,
            env={"PATH": "/usr/bin:/bin", "HOME": str(self.workdir)},
        )

    def ready(self) -> bool:
        if self._process is None:
            return False
        check_running(self._process, self.name, "kueue")
        ok = answers_ok(f"http://127.0.0.1:{self._health_port}/readyz")
        if ok and self.visibility:
            ok = all(self._available(v) for v in VISIBILITY_VERSIONS)
        if ok and not self.started_after:
            self.started_after = time.monotonic() - self._started_at
        return ok

    def _available(self, version: str) -> bool:
        """The aggregator reached this Kueue's visibility server for `version` (its discovery)."""
        status, body = self.plane.get(f"{APIREGISTRATION}/{version}.{VISIBILITY_GROUP}")
        if status != 200:
            return False
        conditions = (json.loads(body).get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions)

    def loaded_configuration(self) -> dict[str, Any]:
        """The Configuration the running process loaded, defaults applied: Kueue logs it once at
        start (cmd/kueue/main.go `apply`, "Configuration loaded", JSON log with the YAML). The
        log is appended to across restarts: the last such line is the running process's."""
        if self._process is None:
            raise AssertionError(f"[{self.name}] kueue is not running")
        loaded: dict[str, Any] | None = None
        for line in self._process.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict) and entry.get("msg") == "Configuration loaded":
                    loaded = yaml.safe_load(entry["config"])
        if loaded is not None:
            return loaded
        raise AssertionError(
            f"[{self.name}] no 'Configuration loaded' line in {self._process.log_path}; "
            f"last lines:\n{self.tail()}"
        )

    def tail(self, lines: int = 40) -> str:
        return self._process.tail(lines) if self._process is not None else ""

    @phases.timed(phases.TWINS)
    def stop(self) -> None:
        """SIGTERM its group, SIGKILL if it lingers. Idempotent."""
        process, self._process = self._process, None
        if process is not None:
            _terminate(process)


def visibility_objects(port: int) -> list[dict[str, Any]]:
    """kueue-system, the chart's APIServices of Kueue's visibility API (v0.19.2
    charts/kueue/templates/visibility, without cert-manager: `insecureSkipTLSVerify`) with the
    APIService's port, and their Service as ExternalName `localhost` (the module docstring says
    why)."""
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": VISIBILITY_SERVICE, "namespace": KUEUE_NAMESPACE},
        "spec": {
            "type": "ExternalName",
            "externalName": "localhost",
            "ports": [{"name": "https", "port": port, "protocol": "TCP", "targetPort": port}],
        },
    }
    apiservices = [
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": f"{version}.{VISIBILITY_GROUP}"},
            "spec": {
                "insecureSkipTLSVerify": True,
                "group": VISIBILITY_GROUP,
                "groupPriorityMinimum": 100,
                "service": {"name": VISIBILITY_SERVICE, "namespace": KUEUE_NAMESPACE, "port": port},
                "version": version,
                "versionPriority": 100,
            },
        }
        for version in VISIBILITY_VERSIONS
    ]
    return [namespace(KUEUE_NAMESPACE), service, *apiservices]


@phases.timed(phases.TWINS)
def start_kueues(managers: Sequence[KueueManager], openssl: Path) -> None:
    """Launch all, then wait for all (round robin); the caller stops them on failure."""
    for manager in managers:
        manager.launch(openssl)
    await_each(
        managers,
        "kueue",
        KueueManager.ready,
        lambda m: f"--- kueue {m.name}:\n{m.tail()}",
        KUEUE_TIMEOUT,
    )


@phases.timed(phases.TWINS)
def stop_kueues(managers: Sequence[KueueManager]) -> None:
    """Stop every manager, even when stopping one of them fails."""
    stop_each(managers, "kueue")


def wait_for_token(plane: ControlPlane, secret: str, timeout: float = 60.0) -> dict[str, str]:
    """The data of a service-account token Secret in kueue-system, once the token controller
    has filled `token` and `ca.crt`."""
    path = f"/api/v1/namespaces/{KUEUE_NAMESPACE}/secrets/{secret}"
    deadline = time.monotonic() + timeout
    while True:
        status, body = plane.get(path)
        if status == 200:
            data: dict[str, str] = json.loads(body).get("data") or {}
            if data.get("token") and data.get("ca.crt"):
                return data
        if time.monotonic() > deadline:
            raise AssertionError(
                f"[{plane.name}] the token controller did not fill {secret} in {timeout:.0f}s"
            )
        time.sleep(0.25)
