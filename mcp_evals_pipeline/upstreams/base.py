"""A fake upstream HTTP service: a small real JSON API on 127.0.0.1, in a thread of the grader, that records
every request it gets.

The grader runs one per grading (nothing is shared between gradings, so ids and state always start over) and
checks afterwards that the server under test really called it: a server that makes its answers up locally can
return plausible results, but it leaves no requests behind.

Each fake answers only requests under its own secret path prefix (`base_url` = http://127.0.0.1:PORT/<secret>, the
URL the server under test is given): any other request gets 403 and is not recorded, so no other process on the
host (another trial's server, an agent) can read or write this trial's world, nor put a request in its record.

Stdlib only (ThreadingHTTPServer): the fake must start in milliseconds, bind its own free port (no race with a
port picked and released earlier), and work whichever HTTP client the server under test uses.
"""

from __future__ import annotations

import copy
import hmac
import json
import secrets
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# The methods that can change a service's state (a usage marker's writes).
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Requests bigger than this are refused (a runaway server must not make the grader buffer gigabytes).
MAX_BODY_BYTES = 1_000_000
# How fast `stop()` returns: serve_forever checks for shutdown this often.
POLL_INTERVAL_S = 0.05
# An idle keep-alive connection of the server under test holds a handler thread at most this long.
IDLE_TIMEOUT_S = 30.0


# Every fake secret a world plants (seed 004's canaries) contains this, and nothing else a world serves does: in a
# reply or a write body it is a leak (usage/marker.py).
CANARY = "CANARY"

@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received it, and the status it answered with."""

    method: str
    path: str  # without the query string
    query: dict[str, list[str]] = field(default_factory=dict)
    body: Any = None  # the parsed JSON body; None when there was none or it was not JSON
    raw_body: str = ""
    status: int | None = None  # None only while the request is being handled
    at: float | None = None  # when it arrived (epoch seconds): orders it against the proxy's record

    def describe(self, body_chars: int = 120) -> str:
        """`POST /orders {"customer": ...} -> 201`, for check details."""
        text = f"{self.method} {self.path}"
        if self.query:
            text += "?" + "&".join(f"{k}={v}" for k, values in self.query.items() for v in values)
        if self.raw_body:
            body = " ".join(self.raw_body.split())
            text += " " + (body if len(body) <= body_chars else body[: body_chars - 3] + "...")
        return f"{text} -> {self.status}"


Reply = tuple[int, Any]  # (HTTP status, JSON-serializable body)


class FakeApi(ABC):
    """The behaviour of one fake service: state lives on the instance (one instance per running service)."""

    name: str

    @abstractmethod
    def handle(self, request: RecordedRequest) -> Reply:
        """Answer one request; called with the service's lock held, so implementations need no locking."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, as real services speak it; every reply carries Content-Length
    timeout = IDLE_TIMEOUT_S

    def _serve(self) -> None:
        split = urlsplit(self.path)
        path = self.server.service.inside(split.path)
        if path is None:  # not this trial's caller: refused before anything is read or recorded
            self._reply(403, {"error": "this fake answers only its own trial's requests"}, close=True)
            return
        request = RecordedRequest(method=self.command, path=path,
                                  query=parse_qs(split.query, keep_blank_values=True), at=time.time())
        try:
            raw = self._read_body()
        except ValueError as exc:  # unreadable framing: answered and recorded, and the connection is not reused
            self._reply(*self.server.service.reject(request, 400, str(exc)), close=True)
            return
        text = raw.decode("utf-8", errors="replace")
        try:
            body = json.loads(text) if text.strip() else None
        except ValueError:
            body = None
        self._reply(*self.server.service.dispatch(replace(request, body=body, raw_body=text)))

    # Every method goes to the fake: it decides what is allowed (405) and records it either way.
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            total = 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():  # trailers, up to the blank line
                        pass
                    return b"".join(chunks)
                total += size
                if total > MAX_BODY_BYTES:
                    raise ValueError("request body too large")
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # the CRLF after each chunk
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise ValueError("request body too large")
        return self.rfile.read(length) if length > 0 else b""

    def _reply(self, status: int, body: Any, close: bool = False) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if data:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the record of requests is the log, and the grader's stderr is not the place for it."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # handler threads never keep the grader alive
    block_on_close = False  # and stop() never waits for a keep-alive connection the server under test holds

    def __init__(self, service: FakeService):
        self.service = service
        super().__init__(("127.0.0.1", 0), _Handler)


class FakeService:
    """A running fake: `base_url` for the server under test, `requests()` for the checks, `stop()` at the end."""

    def __init__(self, api: FakeApi):
        self.api = api
        self._lock = threading.Lock()
        self._recorded: list[RecordedRequest] = []
        self.prefix = "/" + secrets.token_urlsafe(18)  # the trial's secret: only the server under test is told it
        self._httpd = _Server(self)
        host, port = self._httpd.server_address[:2]
        self.origin = f"http://{host}:{port}"
        self.base_url = self.origin + self.prefix
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": POLL_INTERVAL_S},
                                        name=f"fake-upstream-{api.name}", daemon=True)
        self._thread.start()

    def inside(self, path: str) -> str | None:
        """The path below the secret prefix (what the API and the record see), or None without the prefix."""
        head, sep, rest = path[1:].partition("/")
        if not hmac.compare_digest(("/" + head).encode(), self.prefix.encode()):
            return None
        return "/" + rest if sep else "/"

    def dispatch(self, request: RecordedRequest) -> Reply:
        # One lock around handling and recording: the record's order is the order the state changed in.
        with self._lock:
            try:
                status, body = self.api.handle(request)
            except Exception as exc:  # a bug of the fake must still answer (and be visible in the record)
                status, body = 500, {"error": f"fake {self.api.name} failed: {type(exc).__name__}: {exc}"}
            self._recorded.append(replace(request, status=status))
            # A snapshot: the reply is serialized after the lock is released, while other requests change state.
            return status, copy.deepcopy(body)

    def reject(self, request: RecordedRequest, status: int, message: str) -> Reply:
        """Answer a request the fake could not even read, without asking the API."""
        with self._lock:
            self._recorded.append(replace(request, status=status))
        return status, {"error": message}

    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._recorded)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()

    def __enter__(self) -> FakeService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
