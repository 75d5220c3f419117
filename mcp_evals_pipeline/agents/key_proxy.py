"""A credential-holding reverse proxy for the CLI agents' model API.

The Codex and Claude Code CLIs must authenticate to their model API, and anything the CLI can read, the agent's own
commands can read too (same uid, same box): its environment through /proc, its config files. So the key never
enters the sandbox. The CLI gets a placeholder key and a base URL pointing here (on the host's loopback, relayed
into a hardened box by `Sandbox.allow_endpoint`); this proxy drops whatever credential the request carries, adds
the real one and forwards the request to the upstream API, streaming the response back (server-sent events as
they come). A bonus of the same design: the box needs no egress to the model API's host at all.

The placeholder is per proxy (`pass_key`: PLACEHOLDER_KEY plus a random suffix) and a request that does not present
it is refused (401) without reaching the upstream: the proxy listens on the host's loopback, which other code on
the host reaches too (a graded server of a trial running beside this one), and only this run's CLI knows it.

Only the model endpoints the pinned CLIs call pass (`MODEL_ENDPOINTS`, below the upstream's own path): whoever
holds the placeholder (the agent's own commands can read it) gets the real key's power over those alone, never an
admin path (`/v1/organization/admin_api_keys`), a file's deletion or any other method. Everything else is refused
with 403 without reaching the upstream, and recorded in `refusals`.
"""

from __future__ import annotations

import http.client
import json
import re
import secrets
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit

# What the CLI is given instead of the key: obviously not a key, and harmless wherever it ends up.
PLACEHOLDER_KEY = "mcp-evals-key-held-by-the-harness-proxy"

# Request headers that carry a credential: all are dropped, then the configured ones added.
CREDENTIAL_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization"})
# Hop-by-hop headers (RFC 9110 7.6.1) belong to one connection and are never forwarded; the body framing is redone.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                        "upgrade", "host", "content-length"})
# (method, path below the upstream's own path) of every call the pinned CLIs make: codex (Responses API, its
# remote compaction, the model list), Claude Code (Messages API, token counting), any chat-completions client. A
# base URL with or without /v1 (OpenAI's carries it, Anthropic's does not). A model id is one plain segment.
MODEL_ENDPOINTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("POST", re.compile(r"(?:/v1)?/(?:responses(?:/compact)?|chat/completions|messages(?:/count_tokens)?)")),
    ("GET", re.compile(r"(?:/v1)?/models(?:/[A-Za-z0-9][A-Za-z0-9._:@-]*)?")),
)
MAX_RECORDED_REFUSALS = 100
UPSTREAM_TIMEOUT_S = 900.0  # one streamed model turn with reasoning can take minutes between bytes at worst
CHUNK = 64 * 1024


def is_model_endpoint(method: str, path: str, prefix: str) -> bool:
    """Whether `method path` (no query) is one of MODEL_ENDPOINTS below `prefix` (the upstream's own path)."""
    if not path.startswith(prefix + "/"):
        return False
    rest = path[len(prefix):]
    return any(method == allowed and pattern.fullmatch(rest) for allowed, pattern in MODEL_ENDPOINTS)


class KeyProxy:
    """`with KeyProxy("https://api.openai.com/v1", {"Authorization": "Bearer sk-..."}) as proxy:` then hand the CLI
    `proxy.url` (same path as the upstream, loopback origin) and `proxy.pass_key` as its key."""

    def __init__(self, upstream: str, credentials: dict[str, str], *, timeout_s: float = UPSTREAM_TIMEOUT_S) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"key proxy: upstream must be an http(s) URL, got {upstream!r}")
        self.upstream = upstream
        self.pass_key = f"{PLACEHOLDER_KEY}-{secrets.token_urlsafe(18)}"
        self.requests = 0  # how many requests were forwarded
        self.refused = 0  # how many came without this run's placeholder
        self.refusals: list[str] = []  # "METHOD /path" of each request refused as no model endpoint (403)
        count_lock = threading.Lock()
        proxy = self
        prefix = parts.path.rstrip("/")

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _forward(self) -> None:
                path = self.path.split("?", 1)[0]
                if not is_model_endpoint(self.command, path, prefix):
                    with count_lock:
                        if len(proxy.refusals) < MAX_RECORDED_REFUSALS:
                            proxy.refusals.append(f"{self.command} {path[:200]}")
                    self.close_connection = True  # its body is never read
                    self._fail(403, f"key proxy: {self.command} {path[:200]} is not a model endpoint this proxy "
                                    "forwards")
                    return
                body = self._body()
                presented = [v for k, v in self.headers.items() if k.lower() in CREDENTIAL_HEADERS]
                if not any(secrets.compare_digest(proxy.pass_key, v.removeprefix("Bearer ").strip())
                           for v in presented):
                    with count_lock:
                        proxy.refused += 1
                    self._fail(401, "key proxy: the request lacks this run's placeholder credential")
                    return
                with count_lock:
                    proxy.requests += 1
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in CREDENTIAL_HEADERS and k.lower() not in HOP_BY_HOP}
                headers.update(credentials)
                headers["Host"] = parts.netloc
                if body is not None:
                    headers["Content-Length"] = str(len(body))
                connection: http.client.HTTPConnection
                if parts.scheme == "https":
                    connection = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=timeout_s,
                                                             context=ssl.create_default_context())
                else:
                    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout_s)
                try:
                    try:
                        connection.request(self.command, self.path, body=body, headers=headers)
                        response = connection.getresponse()
                    except OSError as exc:  # refused, reset, DNS, TLS, timeout: the endpoint's failure, said so
                        self._fail(502, f"key proxy: upstream {proxy.upstream} unreachable: "
                                        f"{type(exc).__name__}: {exc}")
                        return
                    self._relay(response)
                finally:
                    connection.close()

            def _body(self) -> bytes | None:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    data = bytearray()
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass  # trailers
                            return bytes(data)
                        data += self.rfile.read(size)
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else (b"" if self.command in ("POST", "PUT", "PATCH")
                                                              else None)

            def _relay(self, response: http.client.HTTPResponse) -> None:
                self.send_response_only(response.status, response.reason)
                for key, value in response.getheaders():
                    if key.lower() not in HOP_BY_HOP:
                        self.send_header(key, value)
                if self.command == "HEAD" or response.status in (204, 304):  # no body by definition
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    while chunk := response.read1(CHUNK):  # as it arrives: SSE must not wait for a full buffer
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    self.close_connection = True  # either side went away mid-stream: nothing left to tell

            def _fail(self, status: int, message: str) -> None:
                payload = json.dumps({"error": {"type": "proxy_error", "message": message}}).encode()
                self.send_response_only(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}{parts.path.rstrip('/')}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="key-proxy")
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> KeyProxy:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
