"""A stand-in Helm chart repository for a chart the program fetches from the internet by URL.

The program installs the NVIDIA device plugin on a cluster with GPU pools as a Helm release of
`nvidia-device-plugin` from `https://nvidia.github.io/k8s-device-plugin` (builders/gpu.py), and
config refuses a GPU quota without it. Here there is no network, and no fetched upstream chart
is committed. So the repository is a stand-in: the engine's processes get `HTTPS_PROXY` pointing
at a CONNECT proxy here, which tunnels only the repository's host to a local HTTPS server whose
certificate for that host is signed by a CA made for this run (`SSL_CERT_FILE` names a bundle of
that CA and the system's). The server's `index.yaml` lists one chart at the pinned version,
generated here: a DaemonSet in the release's namespace with the values' affinity and tolerations
(what the program sets), and nothing else of the real chart.

Go skips proxies for loopback addresses, so the planes (127/8) are reached directly.
"""

from __future__ import annotations

import hashlib
import io
import socket
import ssl
import subprocess
import tarfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import yaml

from testkit.realtier.tcp import splice

SYSTEM_BUNDLE: Final = Path("/etc/ssl/certs/ca-certificates.crt")

DAEMONSET: Final = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
  labels: {app.kubernetes.io/name: {{ .Chart.Name }}, stand-in: azure-twin}
spec:
  selector:
    matchLabels: {app.kubernetes.io/name: {{ .Chart.Name }}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: {{ .Chart.Name }}}
    spec:
      affinity: {{ toJson .Values.affinity }}
      tolerations: {{ toJson .Values.tolerations }}
      containers:
        - name: nvidia-device-plugin-ctr
          image: nvcr.io/nvidia/k8s-device-plugin:v{{ .Chart.AppVersion }}
"""


def chart_archive(name: str, version: str) -> bytes:
    """The stand-in chart `name`-`version` as Helm packages it (a gzipped tar, `name/` inside)."""
    files = {
        "Chart.yaml": yaml.safe_dump(
            {
                "apiVersion": "v2",
                "name": name,
                "version": version,
                "appVersion": version,
                "description": "Azure twin stand-in (testkit/realtier/chart_repo.py)",
            }
        ),
        "values.yaml": yaml.safe_dump({"affinity": {}, "tolerations": []}),
        "templates/daemonset.yaml": DAEMONSET,
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{name}/{path}")
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _certs(openssl: Path, work: Path, host: str) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) for `host`."""
    ca_key, ca, key, csr, cert = (
        work / "ca.key",
        work / "ca.crt",
        work / "tls.key",
        work / "tls.csr",
        work / "tls.crt",
    )
    run: list[list[str]] = [
        [
            *("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"),
            *("-keyout", str(ca_key), "-out", str(ca), "-subj", "/CN=azure-twin chart repo CA"),
            *("-addext", "basicConstraints=critical,CA:TRUE"),
            *("-addext", "keyUsage=critical,keyCertSign,cRLSign"),
        ],
        [
            *("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr)),
            *("-subj", f"/CN={host}"),
        ],
    ]
    for args in run:
        subprocess.run([str(openssl), *args], check=True, capture_output=True, timeout=60)
    ext = work / "san.ext"
    ext.write_text(f"subjectAltName=DNS:{host}\nextendedKeyUsage=serverAuth\n")
    subprocess.run(
        [
            str(openssl),
            *("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key)),
            *("-CAcreateserial", "-out", str(cert), "-days", "2", "-extfile", str(ext)),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return ca, cert, key


@dataclass
class ChartRepo:
    """The stand-in repository at `url` (its host tunnelled here), serving `charts`."""

    url: str  # the repository URL the program names
    charts: dict[str, str]  # chart name -> version
    work: Path
    openssl: Path
    fetched: list[str] = field(default_factory=list[str])  # paths served, in order
    _servers: list[Any] = field(default_factory=list[Any])
    _closed: threading.Event = field(default_factory=threading.Event)

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    def start(self) -> dict[str, str]:
        """Start the server and the proxy; returns the environment the engine runs with."""
        self.work.mkdir(parents=True, exist_ok=True)
        ca, cert, key = _certs(self.openssl, self.work, self.host)
        base = urlsplit(self.url).path.rstrip("/")
        files: dict[str, bytes] = {}
        entries: dict[str, list[dict[str, Any]]] = {}
        for name, version in self.charts.items():
            archive = chart_archive(name, version)
            path = f"{base}/stand-in/{name}-{version}.tgz"
            files[path] = archive
            entries[name] = [
                {
                    "apiVersion": "v2",
                    "name": name,
                    "version": version,
                    "appVersion": version,
                    "urls": [f"https://{self.host}{path}"],
                    "digest": hashlib.sha256(archive).hexdigest(),
                    "created": "2026-12-06T00:00:00Z",
                }
            ]
        index = {"apiVersion": "v1", "entries": entries, "generated": "2026-12-06T00:00:00Z"}
        files[f"{base}/index.yaml"] = yaml.safe_dump(index).encode()
        repo = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                repo.fetched.append(path)
                data = files.get(path)
                self.send_response(200 if data is not None else 404)
                self.send_header("Content-Length", str(len(data or b"")))
                self.end_headers()
                self.wfile.write(data or b"")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        https = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        https.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        https.socket = context.wrap_socket(https.socket, server_side=True)
        threading.Thread(target=https.serve_forever, daemon=True).start()
        self._servers.append(https)

        proxy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        proxy.bind(("127.0.0.1", 0))
        proxy.listen(16)
        self._servers.append(proxy)
        target = ("127.0.0.1", https.server_address[1])
        threading.Thread(target=self._accept, args=(proxy, target), daemon=True).start()

        bundle = self.work / "ca-bundle.crt"
        system = SYSTEM_BUNDLE.read_text() if SYSTEM_BUNDLE.exists() else ""
        bundle.write_text(system + "\n" + ca.read_text())
        address = f"http://127.0.0.1:{proxy.getsockname()[1]}"
        return {
            "HTTPS_PROXY": address,
            "https_proxy": address,
            "NO_PROXY": "127.0.0.0/8,localhost",
            "no_proxy": "127.0.0.0/8,localhost",
            "SSL_CERT_FILE": str(bundle),
        }

    def _accept(self, proxy: socket.socket, target: tuple[str, int]) -> None:
        while not self._closed.is_set():
            try:
                client, _ = proxy.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client, target), daemon=True).start()

    def _tunnel(self, client: socket.socket, target: tuple[str, int]) -> None:
        """CONNECT <host>:443 to the repository's host only; anything else is refused."""
        upstream: socket.socket | None = None
        try:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = client.recv(4096)
                if not chunk:
                    return
                head += chunk
            method, where, *_ = head.split(b"\r\n", 1)[0].decode().split()
            if method != "CONNECT" or where != f"{self.host}:443":
                client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                return
            upstream = socket.create_connection(target, timeout=10)
            client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            splice(client, upstream, self._closed)
        except (OSError, ValueError):
            return
        finally:
            client.close()
            if upstream is not None:
                upstream.close()

    def stop(self) -> None:
        self._closed.set()
        for server in self._servers:
            if isinstance(server, ThreadingHTTPServer):
                server.shutdown()
                server.server_close()
            else:
                server.close()
