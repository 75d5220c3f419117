"""The hardened sandbox's allow-listing egress proxy (net=proxy).

The box has no network but its own loopback. On the host, `EgressProxy` serves an HTTP proxy on a unix socket
(bound into the box); inside the box, `FORWARDER` (run as the sandbox uid) listens on 127.0.0.1:PROXY_PORT and
relays each connection to that socket. The agent's environment gets HTTP(S)_PROXY pointing there, so pip, uv,
npm, curl and the agent CLIs reach exactly the hosts allowed (CONNECT for https, absolute-form for http), and
nothing else: there is no route, and DNS is only ever resolved on the host, for allowed names.

Allowed by default: the package registries only. The CLI agents reach their model API through the key-holding
proxy on the host (agents/key_proxy.py, relayed into the box by `allow_endpoint`), so the box needs no route to a
model API, and a command in it has nowhere to send a key it does not have anyway. MCP_EVALS_SANDBOX_EGRESS_ALLOW
replaces the list (comma separated; a leading dot allows a suffix: `.pythonhosted.org`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
from pathlib import Path

PROXY_PORT = 3128
# A unix socket's path must fit sockaddr_un's 108 bytes: directories that will hold our sockets (a prefix of ~30
# characters, then names like relay-65535.sock) go under TMPDIR only when its path leaves that much room, else under
# /tmp. A deep TMPDIR (a CI's or a test's) made every box with a socket fail to start: "AF_UNIX path too long".
SOCKET_ROOM = 64


def socket_parent() -> str:
    tmp = tempfile.gettempdir()
    return tmp if len(tmp) <= 107 - SOCKET_ROOM else "/tmp"


DEFAULT_ALLOW = ("pypi.org", "files.pythonhosted.org", "registry.npmjs.org", "registry.yarnpkg.com")
ALLOWED_PORTS = {80, 443}

# Runs inside the box (standard library only), relaying each listed pair: `PORT PATH` listens on the box's loopback
# (127.0.0.1, and ::1 where the box has it) and relays each connection to the unix socket PATH (a host endpoint);
# `PATH PORT` listens on the unix socket PATH and relays to the box's own loopback PORT (a server in the box,
# reached from the host). Prints "forwarding" once every listener is bound.
FORWARDER = r"""
import socket, sys, threading
def pipe(a, b):
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try: s.shutdown(socket.SHUT_RDWR)
            except OSError: pass
def dial(target):
    if isinstance(target, str):
        s = socket.socket(socket.AF_UNIX); s.connect(target); return s
    try:
        return socket.create_connection(("127.0.0.1", target))
    except OSError:
        return socket.create_connection(("::1", target))
def serve(client, target):
    try:
        upstream = dial(target)
    except OSError:
        client.close(); return
    threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
    pipe(upstream, client)
def accept(srv, target):
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, target), daemon=True).start()
args = sys.argv[1:]
for listen, target in zip(args[::2], args[1::2]):
    if listen.isdigit():
        servers = []
        for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            try:
                srv = socket.socket(family); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                srv.bind((host, int(listen))); srv.listen(64); servers.append(srv)
            except OSError:
                if family == socket.AF_INET: raise
    else:
        srv = socket.socket(socket.AF_UNIX); srv.bind(listen); srv.listen(64); servers = [srv]
        target = int(target)
    for srv in servers:
        threading.Thread(target=accept, args=(srv, target), daemon=True).start()
print("forwarding", flush=True)
threading.Event().wait()
"""


def proxy_env() -> dict[str, str]:
    """The environment that sends a box's clients (pip, uv, npm, curl, the CLIs) through the forwarder to the proxy;
    loopback stays direct (relayed endpoints)."""
    url = f"http://127.0.0.1:{PROXY_PORT}"
    env = {name: url for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy",
                                  "npm_config_https_proxy")}
    return {**env, "NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1"}


def allow_list() -> tuple[str, ...]:
    raw = os.environ.get("MCP_EVALS_SANDBOX_EGRESS_ALLOW")
    if raw is None:
        return DEFAULT_ALLOW
    return tuple(h.strip().lower() for h in raw.split(",") if h.strip())


def is_allowed(host: str, port: int, allowed: tuple[str, ...]) -> bool:
    """An entry `host` (or `.suffix`) allows ports 80 and 443; an entry `host:port` allows exactly that port."""
    host = host.lower().rstrip(".")
    for entry in allowed:
        name, sep, entry_port = entry.rpartition(":")
        if sep and entry_port.isdigit():
            if int(entry_port) == port and host == name.lower():
                return True
            continue
        if port in ALLOWED_PORTS and (host == entry or (entry.startswith(".") and host.endswith(entry))):
            return True
    return False


def names_exactly(host: str, port: int, allowed: tuple[str, ...]) -> bool:
    """Whether an entry names this host itself (`host` or `host:port`), not only a suffix it falls under: an agent
    can pick a name under `.suffix` that never resolves, so only a failure to reach a named host is evidence."""
    host = host.lower().rstrip(".")
    return any(entry.lower() in (host, f"{host}:{port}") for entry in allowed)


def _pipe(a: socket.socket, b: socket.socket) -> None:
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def _split_host(authority: str, default_port: int) -> tuple[str, int]:
    if authority.startswith("["):  # [v6]:port
        host, _, rest = authority[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else default_port
    host, sep, port = authority.rpartition(":")
    if sep and port.isdigit():
        return host, int(port)
    return authority, default_port


class _UnixSocketServer:
    """A unix socket (bound into the box) served one thread per connection; `log` records what happened;
    close() stops accepting, cuts every open connection and removes the socket."""

    thread_name = "sandbox-socket"

    def __init__(self, socket_path: Path):
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(socket_path))
        os.chmod(socket_path, 0o666)  # the sandbox uid connects to it
        self._listen(server, socket_path)

    def _listen(self, server: socket.socket, socket_path: Path | None) -> None:
        self.socket_path = socket_path
        self.log: list[str] = []
        self._server = server
        self._server.listen(64)
        self._closed = False
        self._conns: set[socket.socket] = set()
        threading.Thread(target=self._accept, daemon=True, name=self.thread_name).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self._conns.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _splice(client: socket.socket, upstream: socket.socket) -> None:
        """Bytes both ways until either side closes."""
        threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
        _pipe(upstream, client)

    def _release(self, client: socket.socket, upstream: socket.socket | None) -> None:
        """Forget the connection and close both of its sockets (either may already be gone)."""
        self._conns.discard(client)
        for s in (client, upstream):
            if s is not None:
                with contextlib.suppress(OSError):
                    s.close()

    def _serve(self, client: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._server.close()
        for conn in list(self._conns):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self.socket_path is not None:
            with contextlib.suppress(OSError):
                self.socket_path.unlink()


class EgressProxy(_UnixSocketServer):
    """A tiny allow-listing HTTP proxy on a unix socket; one thread per connection; `log` records decisions.

    `unreachable` is the harness's own record of allowed upstream connections that failed (DNS, refused, timed
    out), to hosts the allow-list names exactly: the one network evidence of an install step no code in the box
    can forge (grader/install_failure.py)."""

    thread_name = "sandbox-egress"

    def __init__(self, socket_path: Path, allowed: tuple[str, ...] | None = None):
        self.allowed = allowed if allowed is not None else allow_list()  # set before the first connection
        self.unreachable: list[str] = []
        super().__init__(socket_path)

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = client.recv(4096)
                if not chunk:
                    return
                head += chunk
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = line.split()
            if len(parts) != 3:
                client.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                return
            method, target, _ = parts
            if method.upper() == "CONNECT":
                host, port = _split_host(target, 443)
            elif target.startswith("http://"):
                host, port = _split_host(target[7:].split("/", 1)[0], 80)
            else:
                client.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                return
            if not is_allowed(host, port, self.allowed):
                self.log.append(f"DENY {method} {host}:{port}")
                body = f"egress to {host}:{port} is not allowed from this sandbox\n".encode()
                client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: "
                               + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
                return
            self.log.append(f"ALLOW {method} {host}:{port}")
            try:
                upstream = socket.create_connection((host, port), timeout=15)
                upstream.settimeout(None)
            except OSError as exc:
                self.log.append(f"FAIL {method} {host}:{port}: {exc}")
                if names_exactly(host, port, self.allowed):
                    self.unreachable.append(f"{host}:{port}: {type(exc).__name__}: {exc}")
                client.sendall(f"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nX-Error: {exc}\r\n\r\n".encode())
                return
            if method.upper() == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                rest = head.split(b"\r\n\r\n", 1)[1]
            else:
                rest = head
            if rest:
                upstream.sendall(rest)
            self._splice(client, upstream)
        except OSError:
            pass
        finally:
            self._release(client, upstream)

    def allow(self, entry: str) -> None:
        """Add an allow-list entry (`host`, `.suffix` or `host:port`) while the proxy runs."""
        entry = entry.strip().lower()
        if entry and entry not in self.allowed:
            self.allowed = (*self.allowed, entry)


class PortRelay(_UnixSocketServer):
    """A unix socket (bound into the box) relaying every connection to one fixed TCP address on the host: with
    FORWARDER listening on the same port inside the box, a host-loopback endpoint (a local model server or proxy)
    is reachable at the same URL from inside the box, and nothing else is."""

    thread_name = "sandbox-relay"

    def __init__(self, socket_path: Path, target: tuple[str, int]):
        self.target = target
        super().__init__(socket_path)

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            upstream = socket.create_connection(self.target, timeout=15)
            upstream.settimeout(None)
            self.log.append(f"RELAY {self.target[0]}:{self.target[1]}")
            self._splice(client, upstream)
        except OSError:
            pass
        finally:
            self._release(client, upstream)


class LoopbackRelay(_UnixSocketServer):
    """The other way round: a TCP listener on the host's 127.0.0.1 relaying every connection to a unix socket a
    box serves (FORWARDER's `PATH PORT`), so the host reaches one port of a box that has no route to the host.
    Binds `port` when it is free, else any free port (`port` says which)."""

    thread_name = "sandbox-inbound"

    def __init__(self, target: Path, port: int = 0):
        self.target_path = target
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            server.bind(("127.0.0.1", port))
        except OSError:
            server.bind(("127.0.0.1", 0))
        self.port: int = server.getsockname()[1]
        self._listen(server, None)

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(str(self.target_path))
            self._splice(client, upstream)
        except OSError:
            pass
        finally:
            self._release(client, upstream)
