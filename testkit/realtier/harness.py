"""Real Kubernetes control planes on loopback: etcd, kube-apiserver, kube-controller-manager.

A `ControlPlane` owns a work directory: its own CA and certificates (made with the `openssl` CLI),
an etcd with its own data directory, a kube-apiserver serving TLS on 127.0.0.1 only, and a
kube-controller-manager running just the controllers the tier needs (the token controller fills
`kubernetes.io/service-account-token` Secrets). Every process runs in its own process group and is
stopped by that group's id, never by name; a module-level registry and an atexit hook stop what a
session ending without its fixture finalizers left behind, and each child has the kernel kill it
when pytest dies first (SIGKILL; etcd data it leaves on tmpfs is removed by the next start).

The binaries come from the tool cache of `scripts/build-real-tier-tools` (its `--print-paths`, which
honours AKS_BATCH_FLEET_TOOLS_CACHE). `python -m testkit.realtier.harness --check` reports what is
missing and how to build it (scripts/real-tier uses it).
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import ctypes
import fcntl
import functools
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Final, Protocol, TypeVar

import yaml

from testkit.realtier import phases

ROOT: Final = Path(__file__).resolve().parents[2]
BUILD_SCRIPT: Final = ROOT / "scripts" / "build-real-tier-tools"
# The cache tools a control plane runs (names as `build-real-tier-tools --list` prints them).
CACHE_TOOLS: Final = ("etcd", "kube-apiserver", "kube-controller-manager")
# The next Kubernetes minor's control plane, which `ControlPlane.swap_control_plane` moves a
# plane to (the upgrade test); same order as the `Tools` fields they replace.
NEXT_TOOLS: Final = ("kube-apiserver-next", "kube-controller-manager-next")

# Bounded waits: a hung server must fail the session, not stall it. Measured on 2 shared cores with
# Go builds beside: one plane is ready in ~5 s, three started together in 8-10 s; the margins are
# for a much busier machine.
ETCD_TIMEOUT: Final = 30.0
APISERVER_TIMEOUT: Final = 120.0
CONTROLLER_MANAGER_TIMEOUT: Final = 60.0
STOP_TIMEOUT: Final = 10.0
POLL: Final = 0.25
KUBECTL_TIMEOUT: Final = 90.0

# Not routed anywhere: the apiserver needs a range for the `kubernetes` Service; nothing uses it.
SERVICE_CIDR: Final = "10.96.0.0/24"
# Only what the tier needs (1.33 names): the token controller fills token Secrets; the
# serviceaccount controller makes `default` accounts (the readiness signal); namespace deletion
# and garbage collection make deletes finish as on a real cluster.
CONTROLLERS: Final = (
    "serviceaccount-token-controller",
    "serviceaccount-controller",
    "namespace-controller",
    "garbage-collector-controller",
)

_PR_SET_PDEATHSIG: Final = 1


# The dev stack's clusters, one plane each.
PLANES: Final = ("manager", "worker-1", "worker-2")
# Karmada runs on the manager in the dev stack, so the manager's plane stands in for the Karmada
# API server (its Namespaces do not overlap the manager's own: karmada-cluster, sample).
KARMADA_PLANE: Final = "manager"
# Kinds Karmada serves from its aggregated API server (karmada-aggregated-apiserver), not from a
# CRD: no plain API server can judge them.
AGGREGATED_KINDS: Final = frozenset({("cluster.karmada.io", "Cluster")})

# Adds a line to the summary printed at the end of the run (conftest's `report` fixture).
Report = Callable[[str], None]

# --------------------------------------------------------------------------------------------
# Finding the binaries


@dataclass(frozen=True, slots=True)
class Tools:
    """Paths of every binary a control plane (and the tests) run."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kubectl: Path
    openssl: Path


def build_command(tools: Iterable[str]) -> str:
    """The command that builds the given cache tools (one `--only` run each)."""
    script = BUILD_SCRIPT.relative_to(ROOT)
    return " && ".join(f"{script} --only {name}" for name in tools)


def cache_paths() -> dict[str, Path]:
    """NAME -> PATH of every cache tool, from the build script (which builds nothing then)."""
    out = subprocess.run(
        [str(BUILD_SCRIPT), "--print-paths"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    paths: dict[str, Path] = {}
    for line in out.splitlines():
        name, _, path = line.partition("\t")
        if path:
            paths[name] = Path(path)
    return paths


def find_tool(name: str) -> tuple[Path | None, str]:
    """The built tool `name` (one of `scripts/build-real-tier-tools --list`), or None and why
    not, with the command that builds it."""
    path = cache_paths().get(name)
    if path is None:
        return None, f"{name}: not in {BUILD_SCRIPT} --print-paths"
    if not _built(name, path):
        return None, f"{name}: not built ({path}); {build_command([name])}"
    return path, ""


def _built(name: str, path: Path) -> bool:
    """The binary exists and its build finished.

    The build script deletes `bin/.stamp` before it builds and writes `<name> <version>` into it
    after success, so a binary without a matching stamp may be half-written.
    """
    if not os.access(path, os.X_OK):
        return False
    stamp = path.parent / ".stamp"
    version = path.parent.parent.name.removeprefix(f"{name}-")
    try:
        first = stamp.read_text().splitlines()[0]
    except (OSError, IndexError):
        return False
    return first == f"{name} {version}"


def _system_etcd(cached: Path) -> Path | None:
    """Debian's etcd on PATH when it is the pinned version (the build script copies that file)."""
    found = shutil.which("etcd")
    if found is None:
        return None
    version = cached.parent.parent.name.removeprefix("etcd-")
    try:
        out = subprocess.run(
            [found, "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(found) if f"etcd Version: {version}\n" in out else None


def find_tools() -> tuple[Tools | None, list[str]]:
    """The binaries, or None and one line per missing one (with how to get it)."""
    missing: list[str] = []
    try:
        paths = cache_paths()
    except (OSError, subprocess.SubprocessError) as exc:
        return None, [f"{BUILD_SCRIPT} --print-paths failed: {exc}"]
    found: dict[str, Path] = {}
    absent: list[str] = []
    for name in CACHE_TOOLS:
        path = paths.get(name)
        if path is not None and _built(name, path):
            found[name] = path
        elif name == "etcd" and path is not None and (system := _system_etcd(path)) is not None:
            found[name] = system
        else:
            absent.append(name)
            missing.append(f"{name}: not built ({path})")
    if absent:
        missing.append(f"build with: {build_command(absent)}")
    for name in ("kubectl", "openssl"):
        system = shutil.which(name)
        if system is None:
            missing.append(f"{name}: not on PATH")
        else:
            found[name] = Path(system)
    if missing:
        return None, missing
    return (
        Tools(
            etcd=found["etcd"],
            kube_apiserver=found["kube-apiserver"],
            kube_controller_manager=found["kube-controller-manager"],
            kubectl=found["kubectl"],
            openssl=found["openssl"],
        ),
        [],
    )


def find_next_control_plane() -> tuple[tuple[Path, Path] | None, str]:
    """The next minor's kube-apiserver and kube-controller-manager, or None and why not."""
    paths = cache_paths()
    absent = [n for n in NEXT_TOOLS if n not in paths or not _built(n, paths[n])]
    if absent:
        return None, f"{', '.join(absent)} not built (build with: {build_command(absent)})"
    return (paths[NEXT_TOOLS[0]], paths[NEXT_TOOLS[1]]), ""


# --------------------------------------------------------------------------------------------
# Processes


_LIVE: set[ControlPlane] = set()  # planes not yet stopped, for the atexit guard


def _stop_leftovers() -> None:
    for plane in list(_LIVE):
        plane.stop()


atexit.register(_stop_leftovers)


def _die_with_parent() -> Callable[[], None]:
    """A preexec_fn: the kernel SIGKILLs the child when pytest dies (atexit does not run on kill).

    libc is loaded here, in the parent, so the child only makes one system call before exec.
    Linux ties this to the *thread* that forked: start planes from the main thread, never from a
    pool worker, or they die when that worker exits. Used only where setpriv is missing (below).
    """
    libc = ctypes.CDLL(None, use_errno=True)

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return preexec


_SETPRIV = shutil.which("setpriv")


def spawn_args(argv: Sequence[str]) -> tuple[list[str], Callable[[], None] | None]:
    """(argv, preexec_fn) for a child that dies with pytest.

    With util-linux's setpriv the death signal is set by the child's first exec, and no Python
    runs between fork and exec. That matters: once the Pulumi SDK's gRPC is loaded in this
    process, its fork handlers abort a forked child that runs Python (a preexec_fn) with
    "epoll_wait error: Bad file descriptor" (seen as a kube-apiserver "exit -6").
    """
    if _SETPRIV is not None:
        return [_SETPRIV, "--pdeathsig", "KILL", "--", *argv], None
    return list(argv), _die_with_parent()


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    log: IO[bytes]

    def tail(self, lines: int = 25) -> str:
        self.log.flush()
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


# Ports are handed out from a block of their own per pytest process, below the kernel's
# ephemeral range (net.ipv4.ip_local_port_range starts at 32768): a port bound to 0 comes from that
# range, where every outgoing connection also takes its source port, so another process could
# connect from it between our check and the server's listen. A process claims its block with an
# exclusive lock on a file (held until it exits, released by the kernel if it is killed): xdist
# worker gw<N> tries block N first, a run without xdist block 0, and a block another process holds
# is passed over, so two pytest runs side by side (two engineers' solo runs, a solo run beside
# `scripts/check`) never hand out the same port. Only the holder hands out ports of its block.
PORT_BLOCK_START: Final = 12000
PORT_BLOCK_SIZE: Final = 2500
PORT_BLOCKS: Final = 8  # up to 31999, under the ephemeral range
PORT_LOCKS: Final = Path(tempfile.gettempdir()) / "aks-batch-fleet-ports"

_PORT_CLAIM: list[tuple[range, IO[bytes]]] = []


def _port_block() -> range:
    """This process's block, claimed on first use."""
    if _PORT_CLAIM:
        return _PORT_CLAIM[0][0]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    first = int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else 0
    PORT_LOCKS.mkdir(parents=True, exist_ok=True)
    for step in range(PORT_BLOCKS):
        index = (first + step) % PORT_BLOCKS
        lock = (PORT_LOCKS / f"block-{index}.lock").open("ab")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue  # another pytest process holds it
        start = PORT_BLOCK_START + index * PORT_BLOCK_SIZE
        _PORT_CLAIM.append((range(start, start + PORT_BLOCK_SIZE), lock))
        return _PORT_CLAIM[0][0]
    raise RuntimeError(
        f"real tier: all {PORT_BLOCKS} loopback port blocks are held by other pytest processes "
        f"(locks in {PORT_LOCKS})"
    )


_PORT_CURSOR: list[int] = []


def free_port() -> int:
    """A loopback port nobody listens on now, from this process's block, never handed out twice
    (until the block's 2500 ports wrap around, more than a whole run uses)."""
    block = _port_block()
    if not _PORT_CURSOR:
        _PORT_CURSOR.append(block.start)
    for _ in range(len(block)):
        port = _PORT_CURSOR[0]
        _PORT_CURSOR[0] = port + 1 if port + 1 < block.stop else block.start
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # something listens there (or lingers): the next one
        return port
    raise RuntimeError(f"no free loopback port in {block.start}-{block.stop - 1}")


_ETCD_DIR_PREFIX: Final = "realtier-etcd-"


def _reap_stale_etcd_dirs(base: Path) -> None:
    """Remove etcd data left by a test process that was killed (its name carries its pid)."""
    for path in base.glob(f"{_ETCD_DIR_PREFIX}*"):
        pid = path.name.removeprefix(_ETCD_DIR_PREFIX).split("-", 1)[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:
            pass  # alive, someone else's


class StartError(RuntimeError):
    """A control plane process exited or did not become ready in time."""


def spawn_logged(
    name: str, argv: Sequence[str], log_path: Path, *, cwd: Path, env: Mapping[str, str]
) -> _Process:
    """Start `argv` as `name`, its output appended to `log_path`, in a process group of its own
    (stopping signals the group, so helpers a binary forks die too) and dying with pytest
    (`spawn_args`). Call it from the main thread."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("ab")
    args, preexec = spawn_args(argv)
    popen = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        preexec_fn=preexec,  # noqa: PLW1509 - only without setpriv; one prctl call
    )
    return _Process(name, popen, log_path, log)


def check_running(process: _Process, where: str, what: str | None = None) -> None:
    """Raise StartError, with the last lines of its log, if `process` has exited."""
    code = process.popen.poll()
    if code is not None:
        raise StartError(
            f"[{where}] {what or process.name} exited with {code}; last log lines "
            f"({process.log_path}):\n{process.tail()}"
        )


def answers_ok(url: str) -> bool:
    """A plain-HTTP GET of `url` (a health or readiness endpoint) answers 200 within 2 s."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:  # urllib.error.URLError is one
        return False


# --------------------------------------------------------------------------------------------
# Certificates

_OPENSSL_CONFIG: Final = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
"""


@dataclass(frozen=True, slots=True)
class Pki:
    """A plane's CA, API server certificate, admin client certificate and token signing key."""

    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    admin_cert: Path
    admin_key: Path
    sa_key: Path
    sa_pub: Path


def _openssl(openssl: Path, directory: Path, command: str) -> None:
    """One openssl command in `directory`. Relative file names only (cwd is the directory), so
    splitting on spaces is safe."""
    subprocess.run(
        [str(openssl), *command.split()],
        cwd=directory,
        capture_output=True,
        timeout=60,
        check=True,
    )


def make_pki(openssl: Path, directory: Path, name: str, server_ips: Sequence[str] = ()) -> Pki:
    """Generate everything with the openssl CLI; an own config file keeps the distro's out.

    `server_ips`: more addresses the API server certificate names (a relay's, e.g. the address
    the Azure twin gives a ManagedCluster's FQDN)."""
    directory.mkdir(parents=True, exist_ok=True)
    sans = "".join(f",IP:{ip}" for ip in server_ips)
    config = _OPENSSL_CONFIG.replace(
        "IP:127.0.0.1,DNS:localhost", f"IP:127.0.0.1{sans},DNS:localhost"
    )
    (directory / "openssl.cnf").write_text(config)

    run = functools.partial(_openssl, openssl, directory)

    # P-256 keys: fast to generate on a loaded machine; Go's TLS stack takes them everywhere.
    ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
    run(
        f"req -config openssl.cnf -x509 {ec} -keyout ca.key -out ca.crt -days 3"
        f" -subj /CN=realtier-{name}-ca -extensions ca"
    )

    def leaf(stem: str, subject: str, extensions: str) -> None:
        run(f"req -config openssl.cnf -new {ec} -keyout {stem}.key -out {stem}.csr -subj {subject}")
        serial = f"0x{secrets.token_hex(8)}"
        run(
            f"x509 -req -in {stem}.csr -CA ca.crt -CAkey ca.key -set_serial {serial} -days 3"
            f" -extfile openssl.cnf -extensions {extensions} -out {stem}.crt"
        )

    leaf("apiserver", f"/CN=realtier-{name}-apiserver", "server")
    # Group system:masters: cluster-admin without any RBAC object (the bootstrap policy's rule).
    leaf("admin", "/O=system:masters/CN=realtier-admin", "client")
    # Service-account tokens: the apiserver signs bound tokens with it, the controller manager
    # signs the legacy Secret-based ones, and the apiserver verifies both with the public half.
    make_signing_key(openssl, directory / "sa.key")
    run("pkey -in sa.key -pubout -out sa.pub")
    for key in directory.glob("*.key"):
        key.chmod(0o600)
    return Pki(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        server_cert=directory / "apiserver.crt",
        server_key=directory / "apiserver.key",
        admin_cert=directory / "admin.crt",
        admin_key=directory / "admin.key",
        sa_key=directory / "sa.key",
        sa_pub=directory / "sa.pub",
    )


@dataclass(frozen=True, slots=True)
class FrontProxy:
    """The aggregation layer's client side: a CA of its own and the client certificate
    kube-apiserver presents when it proxies to an aggregated API server (kubeadm's
    front-proxy-ca and front-proxy-client)."""

    ca_cert: Path
    client_cert: Path
    client_key: Path


FRONT_PROXY_CLIENT: Final = "front-proxy-client"


def make_front_proxy(openssl: Path, directory: Path) -> FrontProxy:
    """A front-proxy CA and its client certificate, beside a plane's PKI (make_pki's
    openssl.cnf). Its own CA, as kubeadm's: a client certificate of the plane's CA (the admin's)
    is never taken for the proxy, and the proxy's certificate alone names no user with rights, so
    a request the aggregated server did not take as proxied would be refused, not run as admin."""
    ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"

    run = functools.partial(_openssl, openssl, directory)

    run(
        f"req -config openssl.cnf -x509 {ec} -keyout front-proxy-ca.key -out front-proxy-ca.crt"
        " -days 3 -subj /CN=realtier-front-proxy-ca -extensions ca"
    )
    run(
        f"req -config openssl.cnf -new {ec} -keyout {FRONT_PROXY_CLIENT}.key"
        f" -out {FRONT_PROXY_CLIENT}.csr -subj /CN={FRONT_PROXY_CLIENT}"
    )
    run(
        f"x509 -req -in {FRONT_PROXY_CLIENT}.csr -CA front-proxy-ca.crt -CAkey front-proxy-ca.key"
        f" -set_serial 0x{secrets.token_hex(8)} -days 3 -extfile openssl.cnf -extensions client"
        f" -out {FRONT_PROXY_CLIENT}.crt"
    )
    for key in ("front-proxy-ca.key", f"{FRONT_PROXY_CLIENT}.key"):
        (directory / key).chmod(0o600)
    return FrontProxy(
        ca_cert=directory / "front-proxy-ca.crt",
        client_cert=directory / f"{FRONT_PROXY_CLIENT}.crt",
        client_key=directory / f"{FRONT_PROXY_CLIENT}.key",
    )


def aggregation_args(proxy: FrontProxy) -> tuple[str, ...]:
    """kube-apiserver's aggregation layer flags (kubeadm's set): the request-header CA and the
    one name it accepts, the headers it sets, and the client pair it proxies with. Without
    `--enable-aggregator-routing`: it changes how a ClusterIP Service is reached (its endpoints
    instead of its cluster IP); the twin's aggregated servers are reached through an ExternalName
    Service, which both ways resolve to its name."""
    return (
        f"--requestheader-client-ca-file={proxy.ca_cert}",
        f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-username-headers=X-Remote-User",
        f"--proxy-client-cert-file={proxy.client_cert}",
        f"--proxy-client-key-file={proxy.client_key}",
    )


# --------------------------------------------------------------------------------------------
# The control plane


@dataclass
class Timings:
    """Seconds from the plane's start until each step was done (cumulative, for the report)."""

    pki: float = 0.0
    etcd: float = 0.0
    apiserver: float = 0.0
    controller_manager: float = 0.0

    def __str__(self) -> str:
        return (
            f"certificates at {self.pki:.1f}s, etcd at {self.etcd:.1f}s, kube-apiserver ready "
            f"at {self.apiserver:.1f}s, controller-manager at {self.controller_manager:.1f}s"
        )


@dataclass(eq=False)
class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager of one cluster, on 127.0.0.1."""

    name: str
    workdir: Path
    tools: Tools | None = None
    # kube-controller-manager's --controllers (a twin adds the Job controller: its Jobs run)
    controllers: tuple[str, ...] = CONTROLLERS
    # more kube-apiserver flags (Karmada's API server adds its aggregation front proxy's)
    apiserver_args: tuple[str, ...] = ()
    # more addresses its serving certificate names (make_pki)
    server_ips: tuple[str, ...] = ()
    # True: the aggregation layer, with a front-proxy CA and client of its own (make_front_proxy,
    # aggregation_args), so an APIService can lead to a process beside the plane (Kueue's
    # visibility API). Off by default: no other plane pays the two certificates.
    aggregation: bool = False
    timings: Timings = field(default_factory=Timings, init=False)
    _processes: list[_Process] = field(default_factory=list[_Process], init=False, repr=False)
    _pki: Pki | None = field(default=None, init=False, repr=False)
    _front_proxy: FrontProxy | None = field(default=None, init=False, repr=False)
    _etcd_data: Path | None = field(default=None, init=False, repr=False)
    _etcd_port: int = field(default=0, init=False, repr=False)
    _apiserver_port: int = field(default=0, init=False, repr=False)
    _started_at: float = field(default=0.0, init=False, repr=False)
    _tls_context: ssl.SSLContext | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.tools is None:
            tools, missing = find_tools()
            if tools is None:
                raise RuntimeError("real-tier tools missing:\n  " + "\n  ".join(missing))
            self.tools = tools

    # ---- what tests use ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The API server URL (https://127.0.0.1:<port>)."""
        return f"https://127.0.0.1:{self._apiserver_port}"

    @property
    def etcd_url(self) -> str:
        """The plane's etcd client URL (Karmada's aggregated API server stores there too)."""
        return f"http://127.0.0.1:{self._etcd_port}"

    @property
    def kubeconfig(self) -> Path:
        """An admin kubeconfig (client certificate in group system:masters)."""
        return self.workdir / "admin.kubeconfig"

    @property
    def ca_cert(self) -> Path:
        return self.pki.ca_cert

    @property
    def pki(self) -> Pki:
        if self._pki is None:
            raise RuntimeError(f"control plane {self.name} has no certificates yet")
        return self._pki

    @property
    def pids(self) -> list[int]:
        return [p.popen.pid for p in self._processes]

    def kubectl(
        self,
        *args: str,
        kubeconfig: Path | None = None,
        stdin: str | None = None,
        timeout: float = KUBECTL_TIMEOUT,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Run the machine's kubectl against this plane (admin unless another kubeconfig)."""
        tools = self._tools
        # A cache per plane: ports are reused between runs, so a shared discovery cache could
        # answer for another server.
        cmd = [
            str(tools.kubectl),
            f"--kubeconfig={kubeconfig or self.kubeconfig}",
            f"--cache-dir={self.workdir / 'kubectl-cache'}",
            f"--request-timeout={int(timeout)}s",
            *args,
        ]
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        result = subprocess.run(
            cmd,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout + 10,
            env=env,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"[{self.name}] kubectl {' '.join(args)} exited {result.returncode}:\n"
                f"{result.stderr.strip()}\n{result.stdout.strip()}"
            )
        return result

    def wait_established(self, crds: list[str], timeout: float = 60.0) -> None:
        """Wait until every CRD is Established.

        `kubectl wait --for=condition=...` (1.32, the machine's) exits 1 with ".status.conditions
        accessor error: <nil>" when it reads a CRD before the API server has written any condition,
        a window the 1.36 API server leaves open for a moment; that is "not yet", so wait again.
        """
        deadline = time.monotonic() + timeout
        while True:
            left = max(1, int(deadline - time.monotonic()))
            args = ("wait", "--for=condition=Established", f"--timeout={left}s", *crds)
            result = self.kubectl(*args, check=False)
            if result.returncode == 0:
                return
            if "accessor error" not in result.stderr or time.monotonic() >= deadline:
                raise AssertionError(
                    f"[{self.name}] CRDs not Established within {timeout:.0f}s: "
                    f"{result.stderr.strip()}\n{result.stdout.strip()}"
                )
            time.sleep(POLL)

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
        """GET an API path as admin: (status, body); status 0 when the server is not reachable."""
        request = urllib.request.Request(self.url + path)
        try:
            with urllib.request.urlopen(request, context=self._tls, timeout=timeout) as response:
                return int(response.status), response.read()
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read()
        except (urllib.error.URLError, OSError):
            return 0, b""

    @phases.timed(phases.TWINS)
    def start(self) -> None:
        """Start this plane alone (see `start_all` for several at once)."""
        start_all([self])

    @phases.timed(phases.TWINS)
    def stop(self) -> None:
        """Stop every process this plane started (by process group id), newest first. Idempotent.

        One process that will not die does not keep the others running: all are signalled, then
        the first failure is raised.
        """
        errors: list[Exception] = []
        for process in reversed(self._processes):
            try:
                _terminate(process)
            except (OSError, subprocess.SubprocessError) as exc:
                errors.append(exc)
        self._processes.clear()
        if self._etcd_data is not None:
            shutil.rmtree(self._etcd_data, ignore_errors=True)
            self._etcd_data = None
        _LIVE.discard(self)
        if errors:
            raise RuntimeError(f"[{self.name}] stopping failed: {errors}") from errors[0]

    def restart_controller_manager(self, signing_key: Path | None = None) -> float:
        """Stop the controller manager and start it again, signing new token Secrets with
        `signing_key` (default: the key the API server trusts). Returns the seconds it took.

        With a key the API server does not trust, every token the token controller issues from
        now on is refused (401), as a revoked one is: what a broken credential rotation looks
        like to a consumer. Ready when a probe token Secret gets a token from the new process.
        """
        t0 = time.monotonic()
        self.stop_component("kube-controller-manager")
        self._launch_controller_manager(signing_key)
        self._await_token_controller("restarted token controller (a token for the probe Secret)")
        return time.monotonic() - t0

    def swap_control_plane(self, kube_apiserver: Path, kube_controller_manager: Path) -> float:
        """Upgrade this plane's control plane in place: stop its controller manager and API
        server, start them again from these binaries, API server first (Kubernetes' skew
        policy: a controller manager never newer than its API server). Same etcd and data, same
        certificates, port and flags: every kubeconfig and token stays valid. The plane's other
        processes (scheduler, kwok, autoscaler, its Kueue) go on and reconnect by themselves.
        Returns the seconds until the new API server is ready and the new controller manager
        has issued a token."""
        t0 = time.monotonic()
        self.stop_component("kube-controller-manager")
        self.stop_component("kube-apiserver")
        self.tools = replace(
            self._tools,
            kube_apiserver=kube_apiserver,
            kube_controller_manager=kube_controller_manager,
        )
        self._launch_apiserver()

        def serving(plane: ControlPlane) -> bool:
            plane._check_alive()
            return plane._apiserver_ready()

        await_each([self], "swapped kube-apiserver", serving, ControlPlane._logs, APISERVER_TIMEOUT)
        self._launch_controller_manager()
        self._await_token_controller("swapped controller manager (a token for the probe Secret)")
        return time.monotonic() - t0

    def _await_token_controller(self, what: str) -> None:
        """Wait until the running token controller fills a new probe token Secret."""
        probe = f"realtier-token-probe-{secrets.token_hex(4)}"
        self.kubectl("apply", "-f", "-", stdin=json.dumps(_probe_token_secret(probe)))

        def issued(plane: ControlPlane) -> bool:
            plane._check_alive()
            return plane._has_token(probe)

        try:
            await_each([self], what, issued, ControlPlane._logs, CONTROLLER_MANAGER_TIMEOUT)
        finally:
            self.kubectl("delete", "secret", probe, "--namespace=default", "--wait=false")

    def stop_component(self, name: str) -> int:
        """Stop (SIGTERM, then SIGKILL) every process of this plane named `name`, as a rollout
        stops a Deployment's pod; the plane's other processes go on. Returns how many stopped."""
        stopping = [p for p in self._processes if p.name == name]
        for process in stopping:
            _terminate(process)
            self._processes.remove(process)
        return len(stopping)

    def _has_token(self, secret: str) -> bool:
        status, body = self.get(f"/api/v1/namespaces/default/secrets/{secret}")
        return status == 200 and bool((json.loads(body).get("data") or {}).get("token"))

    # ---- start-up phases (start_all runs each phase on every plane before the next) ---------

    @property
    def _tools(self) -> Tools:
        if self.tools is None:
            raise RuntimeError("no tools")
        return self.tools

    @property
    def _tls(self) -> ssl.SSLContext:
        if self._tls_context is None:
            context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
            context.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
            self._tls_context = context
        return self._tls_context

    def _spawn(self, name: str, argv: Sequence[str]) -> _Process:
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        log_path = self.workdir / "logs" / f"{name}.log"
        process = spawn_logged(name, argv, log_path, cwd=self.workdir, env=env)
        self._processes.append(process)
        _LIVE.add(self)
        return process

    def _prepare(self) -> None:
        self._started_at = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._pki = make_pki(self._tools.openssl, self.workdir / "pki", self.name, self.server_ips)
        if self.aggregation:
            self._front_proxy = make_front_proxy(self._tools.openssl, self.workdir / "pki")
        self._etcd_port = free_port()
        self._apiserver_port = free_port()
        self._write_admin_kubeconfig()
        self.timings.pki = time.monotonic() - self._started_at

    def _write_admin_kubeconfig(self) -> None:
        # Inline data, not file paths: the document stands alone, e.g. as a secret config value
        # of an `existing` cluster.
        pki = self.pki
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": self.name,
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": _b64(pki.ca_cert),
                    },
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate-data": _b64(pki.admin_cert),
                        "client-key-data": _b64(pki.admin_key),
                    },
                }
            ],
            "contexts": [{"name": self.name, "context": {"cluster": self.name, "user": "admin"}}],
            "current-context": self.name,
        }
        self.kubeconfig.write_text(yaml.safe_dump(doc, sort_keys=False))
        self.kubeconfig.chmod(0o600)

    def _launch_etcd(self) -> None:
        # tmpfs when there is one: etcd fsyncs every write, which costs seconds of API server
        # start-up on a busy disk, and this data is thrown away anyway.
        shm = Path("/dev/shm")
        base = shm if shm.is_dir() and os.access(shm, os.W_OK) else self.workdir
        _reap_stale_etcd_dirs(base)
        self._etcd_data = Path(
            tempfile.mkdtemp(prefix=f"{_ETCD_DIR_PREFIX}{os.getpid()}-{self.name}-", dir=base)
        )
        peer = f"http://127.0.0.1:{free_port()}"
        client = f"http://127.0.0.1:{self._etcd_port}"
        self._spawn(
            "etcd",
            [
                str(self._tools.etcd),
                f"--name={self.name}",
                f"--data-dir={self._etcd_data}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster={self.name}={peer}",
                "--initial-cluster-state=new",
                "--log-level=warn",
            ],
        )

    def _etcd_ready(self) -> bool:
        url = f"http://127.0.0.1:{self._etcd_port}/health"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(json.loads(response.read()).get("health") == "true")
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def _launch_apiserver(self) -> None:
        pki = self.pki
        self._spawn(
            "kube-apiserver",
            [
                str(self._tools.kube_apiserver),
                f"--etcd-servers=http://127.0.0.1:{self._etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self._apiserver_port}",
                f"--tls-cert-file={pki.server_cert}",
                f"--tls-private-key-file={pki.server_key}",
                f"--client-ca-file={pki.ca_cert}",
                # Unused (certificates are given) but keeps it from touching /var/run/kubernetes.
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                "--authorization-mode=Node,RBAC",
                f"--service-account-issuer={self.url}",
                f"--service-account-key-file={pki.sa_pub}",
                f"--service-account-signing-key-file={pki.sa_key}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                # Endpoints may not hold loopback addresses, and no pod will ever dial the
                # `kubernetes` Service here: don't reconcile it (avoids an error every 10 s).
                "--endpoint-reconciler-type=none",
                "--profiling=false",
                # As on AKS, whose API servers allow privileged containers: what refuses one
                # in a team namespace is Pod Security admission and its labels, not this flag.
                "--allow-privileged=true",
                *(aggregation_args(self._front_proxy) if self._front_proxy else ()),
                *self.apiserver_args,
            ],
        )

    def _launch_controller_manager(self, signing_key: Path | None = None) -> None:
        pki = self.pki
        self._spawn(
            "kube-controller-manager",
            [
                str(self._tools.kube_controller_manager),
                f"--kubeconfig={self.kubeconfig}",
                f"--controllers={','.join(self.controllers)}",
                f"--root-ca-file={pki.ca_cert}",
                f"--service-account-private-key-file={signing_key or pki.sa_key}",
                "--use-service-account-credentials=false",
                "--leader-elect=false",
                # No HTTPS endpoint: nothing scrapes it, and 10257 would clash between planes.
                "--secure-port=0",
            ],
        )

    def _controller_manager_ready(self) -> bool:
        # The serviceaccount controller creates `default` in every namespace: proof that the
        # controllers run, with informers synced, against this API server.
        status, _ = self.get("/api/v1/namespaces/default/serviceaccounts/default")
        return status == 200

    def _check_alive(self) -> None:
        for process in self._processes:
            check_running(process, self.name)

    def _apiserver_ready(self) -> bool:
        return self.get("/readyz", timeout=2.0)[0] == 200

    def _logs(self) -> str:
        return "\n".join(f"--- {p.name} ({p.log_path}):\n{p.tail()}" for p in self._processes)


def _probe_token_secret(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"kubernetes.io/service-account.name": "default"},
        },
    }


def make_signing_key(openssl: Path, path: Path) -> Path:
    """A fresh RSA key for service-account tokens (a plane's own, or one no plane trusts)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            str(openssl),
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            str(path),
        ],
        capture_output=True,
        timeout=60,
        check=True,
    )
    path.chmod(0o600)
    return path


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def _terminate(process: _Process) -> None:
    """SIGTERM the process group, then SIGKILL it if it lingers; always close the log."""
    pgid = process.popen.pid  # start_new_session: the child leads its own group
    try:
        if process.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGTERM)
            try:
                process.popen.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pgid, signal.SIGKILL)
                process.popen.wait(timeout=STOP_TIMEOUT)
        # The leader is gone; anything it forked into its group goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    finally:
        process.log.close()


class Awaitable(Protocol):
    @property
    def name(self) -> str: ...


_T = TypeVar("_T", bound=Awaitable)


def await_each(
    things: Iterable[_T],
    what: str,
    ready: Callable[[_T], bool],
    logs: Callable[[_T], str],
    timeout: float,
) -> None:
    """Poll every one of `things` in turn until `ready` holds for all (`ready` may raise, e.g. on
    a dead process); after `timeout`, fail naming the rest, with their `logs`."""
    pending = list(things)
    deadline = time.monotonic() + timeout
    while True:
        pending = [thing for thing in pending if not ready(thing)]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise StartError(
                f"{what} not ready after {timeout:.0f}s on "
                + ", ".join(thing.name for thing in pending)
                + "\n"
                + "\n".join(logs(thing) for thing in pending)
            )
        time.sleep(POLL)


def _await(
    planes: list[ControlPlane], what: str, ready: Callable[[ControlPlane], bool], timeout: float
) -> None:
    """Poll every plane in turn until `ready`; fail when a process died or `timeout` passed.

    Round robin rather than one plane after the other, so each plane's time is when it was
    ready, not when its turn came. Records that time in `timings.<what>`.
    """

    def timed(plane: ControlPlane) -> bool:
        plane._check_alive()
        if not ready(plane):
            return False
        setattr(plane.timings, what, time.monotonic() - plane._started_at)
        return True

    await_each(planes, what, timed, ControlPlane._logs, timeout)


@phases.timed(phases.TWINS)
def start_all(planes: Iterable[ControlPlane]) -> None:
    """Start several planes concurrently: each step is launched on all, then awaited on all.

    On failure the caller stops the planes (every process started so far is registered).
    """
    todo = list(planes)
    for plane in todo:
        plane._prepare()
        plane._launch_etcd()
    _await(todo, "etcd", ControlPlane._etcd_ready, ETCD_TIMEOUT)
    for plane in todo:
        plane._launch_apiserver()
    _await(todo, "apiserver", ControlPlane._apiserver_ready, APISERVER_TIMEOUT)
    # Only now: the controller manager exits when the API server is not healthy soon after start.
    for plane in todo:
        plane._launch_controller_manager()
    _await(
        todo,
        "controller_manager",
        ControlPlane._controller_manager_ready,
        CONTROLLER_MANAGER_TIMEOUT,
    )


class Stoppable(Protocol):
    def stop(self) -> None: ...


def stop_each(things: Iterable[Stoppable], what: str) -> None:
    """Stop every one of `things`, even when stopping one of them fails; report after."""
    errors: list[BaseException] = []
    for thing in things:
        try:
            thing.stop()
        except Exception as exc:  # keep stopping the others
            errors.append(exc)
    if errors:
        raise RuntimeError(f"stopping {what} failed: {errors}")


@phases.timed(phases.TWINS)
def stop_all(planes: Iterable[ControlPlane]) -> None:
    """Stop every plane, even when stopping one of them fails."""
    stop_each(planes, "control planes")


# --------------------------------------------------------------------------------------------
# Applying objects

FIELD_MANAGER: Final = "aks-batch-fleet-realtier"


def object_ref(obj: Mapping[str, Any]) -> str:
    """How `kubectl ... -o name` names an object: `kind.group/name`, `kind/name` for core."""
    group = str(obj["apiVersion"]).rpartition("/")[0]
    kind = str(obj["kind"]).lower()
    return (
        f"{kind}.{group}/{obj['metadata']['name']}"
        if group
        else f"{kind}/{obj['metadata']['name']}"
    )


def namespace(name: str) -> dict[str, Any]:
    """A bare Namespace, standing in for one a Helm release creates (e.g. kueue-system)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


@dataclass(frozen=True, slots=True)
class Applied:
    """What the API server accepted from one `kubectl apply` (refs as `object_ref` spells them)."""

    accepted: list[str]
    rejected: list[str]
    stderr: str


def apply(
    plane: ControlPlane, objects: Sequence[Mapping[str, Any]], *, dry_run: bool = False
) -> Applied:
    """Server-side apply of `objects` in one kubectl run (one process per target, not per object).

    kubectl goes on after an object fails and prints the name of every accepted one, so the
    difference is what the server refused; stderr says why.
    """
    args = ["apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "-o", "name", "-f", "-"]
    if dry_run:
        args.insert(2, "--dry-run=server")
    stream = yaml.safe_dump_all([dict(o) for o in objects], sort_keys=False)
    result = plane.kubectl(*args, stdin=stream, check=False)
    printed = set(result.stdout.split())
    refs = [object_ref(o) for o in objects]
    return Applied(
        accepted=[r for r in refs if r in printed],
        rejected=[r for r in refs if r not in printed],
        stderr=result.stderr.strip(),
    )


def _main(argv: Sequence[str]) -> int:
    """`--check`: exit 0 when every binary is there, else print what is missing and exit 3."""
    if list(argv) != ["--check"]:
        print("usage: python -m testkit.realtier.harness --check", file=sys.stderr)
        return 2
    tools, missing = find_tools()
    if tools is None:
        print("real tier: missing tools\n  " + "\n  ".join(missing), file=sys.stderr)
        return 3
    for name, path in (
        ("etcd", tools.etcd),
        ("kube-apiserver", tools.kube_apiserver),
        ("kube-controller-manager", tools.kube_controller_manager),
        ("kubectl", tools.kubectl),
        ("openssl", tools.openssl),
    ):
        print(f"{name}\t{path}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
