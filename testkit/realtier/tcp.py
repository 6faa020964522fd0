"""Bytes both ways between two connected sockets, for the twins' relays and proxies
(testkit/realtier/azure_twin.py's FQDN relay, testkit/realtier/chart_repo.py's CONNECT tunnel)."""

from __future__ import annotations

import select
import socket
import threading


def splice(a: socket.socket, b: socket.socket, stop: threading.Event) -> None:
    """Copy what either side sends to the other until one closes, `stop` is set, or a socket
    fails (OSError is the caller's to handle). Closes neither socket."""
    pair = {a: b, b: a}
    while not stop.is_set():
        ready, _, _ = select.select(list(pair), [], [], 1.0)
        for sock in ready:
            data = sock.recv(65536)
            if not data:
                return
            pair[sock].sendall(data)
