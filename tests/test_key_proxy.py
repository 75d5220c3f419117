"""The key-holding proxy between the CLI agents and their model API, over real HTTP on 127.0.0.1: it swaps the
credential, keeps path, query, body and status, streams server-sent events as they come, and forwards the model
endpoints alone: any other path or method is refused before the upstream (a real server recording all it gets)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2 as httpx
import pytest

from mcp_evals_pipeline.agents.key_proxy import PLACEHOLDER_KEY, KeyProxy


class Upstream:
    """Records every request (any method); `X-Test: stream` sends one event, waits until the test says go, then a
    second one; `X-Test: broken` answers 500."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.go = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.seen.append({"method": self.command, "path": self.path,
                                   "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                if self.headers.get("X-Test") == "stream":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(b"data: first\n\n")
                    self.wfile.flush()
                    outer.go.wait(10)
                    self.wfile.write(b"data: second\n\n")
                    self.wfile.flush()
                    self.close_connection = True
                    return
                status = 500 if self.headers.get("X-Test") == "broken" else 200
                payload = json.dumps({"echo": body.decode(), "path": self.path}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("X-Upstream", "yes")
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    yield server
    server.go.set()
    server.server.shutdown()
    server.server.server_close()


def _key(proxy: KeyProxy) -> dict[str, str]:
    return {"Authorization": f"Bearer {proxy.pass_key}"}


def test_a_request_without_this_runs_placeholder_never_reaches_the_upstream(upstream: Upstream) -> None:
    """The proxy is on the host's loopback, where other code (a graded server beside this trial) can reach it."""
    with KeyProxy(upstream.base_url, {"x-api-key": "the-real-key"}) as proxy, \
            KeyProxy(upstream.base_url, {"x-api-key": "the-real-key"}) as other:
        assert proxy.pass_key != other.pass_key and proxy.pass_key.startswith(PLACEHOLDER_KEY)
        refused = [httpx.post(f"{proxy.url}/messages", content=b"{}", headers=headers).status_code for headers in (
            {}, {"x-api-key": PLACEHOLDER_KEY}, {"Authorization": f"Bearer {other.pass_key}"},
            {"x-api-key": proxy.pass_key[:-1]})]
        accepted = httpx.post(f"{proxy.url}/messages", content=b"{}", headers={"x-api-key": proxy.pass_key})
    assert refused == [401, 401, 401, 401] and accepted.status_code == 200
    assert proxy.refused == 4 and proxy.requests == 1 and len(upstream.seen) == 1


def test_the_credential_is_swapped_and_the_request_kept(upstream: Upstream) -> None:
    with KeyProxy(upstream.base_url, {"x-api-key": "the-real-key"}) as proxy:
        assert proxy.url == f"http://127.0.0.1:{proxy.port}/v1"
        response = httpx.post(f"{proxy.url}/messages?beta=true", content=b'{"model": "m"}',
                              headers={"x-api-key": proxy.pass_key, "Authorization": f"Bearer {proxy.pass_key}",
                                       "anthropic-version": "2023-06-01"})
    assert response.status_code == 200 and response.headers["x-upstream"] == "yes"
    assert response.json() == {"echo": '{"model": "m"}', "path": "/v1/messages?beta=true"}
    (seen,) = upstream.seen
    assert seen["headers"]["x-api-key"] == "the-real-key"
    assert "authorization" not in seen["headers"]  # every credential the client sent is dropped
    assert seen["headers"]["anthropic-version"] == "2023-06-01"  # everything else passes
    assert seen["headers"]["host"] == upstream.base_url.split("/")[2]
    assert proxy.requests == 1


def test_errors_keep_their_status(upstream: Upstream) -> None:
    with KeyProxy(upstream.base_url, {"Authorization": "Bearer k"}) as proxy:
        response = httpx.post(f"{proxy.url}/chat/completions", content=b"{}",
                              headers={**_key(proxy), "X-Test": "broken"})
    assert response.status_code == 500 and response.json()["path"] == "/v1/chat/completions"


def test_an_unreachable_upstream_is_a_502_naming_it() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        with KeyProxy(f"http://127.0.0.1:{port}/v1", {"Authorization": "Bearer k"}) as proxy:
            response = httpx.get(f"{proxy.url}/models", headers=_key(proxy))
    assert response.status_code == 502
    assert f"127.0.0.1:{port}" in response.json()["error"]["message"]


def test_events_stream_through_as_they_come(upstream: Upstream) -> None:
    """The second event is only sent after the test has read the first through the proxy: a buffering proxy would
    hang here (and fail at the read timeout)."""
    with KeyProxy(upstream.base_url, {"Authorization": "Bearer k"}) as proxy, \
            httpx.stream("POST", f"{proxy.url}/responses", content=b"{}", timeout=5,
                         headers={**_key(proxy), "X-Test": "stream"}) as response:
        lines = response.iter_lines()
        assert next(lines) == "data: first"
        upstream.go.set()
        rest = [line for line in lines if line]
    assert rest == ["data: second"]


def test_a_chunked_request_body_is_forwarded_whole(upstream: Upstream) -> None:
    with KeyProxy(upstream.base_url, {"Authorization": "Bearer k"}) as proxy:
        connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=5)
        connection.request("POST", "/v1/responses", body=iter([b'{"a":', b' 1}']),
                           headers={"Transfer-Encoding": "chunked", **_key(proxy)}, encode_chunked=True)
        response = connection.getresponse()
        payload = json.loads(response.read())
        connection.close()
    assert response.status == 200 and payload["echo"] == '{"a": 1}'


def test_only_http_upstreams() -> None:
    with pytest.raises(ValueError, match="http"):
        KeyProxy("file:///etc/passwd", {})


def _raw(proxy: KeyProxy, method: str, path: str) -> int:
    """One request exactly as written (no client normalizes its path), with this run's placeholder."""
    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=5)
    try:
        connection.request(method, path, body=b"{}" if method in ("POST", "PUT", "PATCH") else None,
                            headers=_key(proxy))
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


REFUSED = [("GET", "/v1/organization/admin_api_keys"), ("POST", "/v1/organization/admin_api_keys"),
           ("DELETE", "/v1/files/x"), ("GET", "/v1/files"), ("DELETE", "/v1/responses"), ("GET", "/v1/responses"),
           ("PUT", "/v1/messages"), ("DELETE", "/v1/models/gpt-5"), ("HEAD", "/v1/models"),
           ("POST", "/v1/responses/../organization/admin_api_keys"), ("GET", "/v1/models/../files"),
           ("GET", "/v1/models/%2e%2e%2ffiles"), ("POST", "/v2/responses"),
           ("POST", "/v1/responses/resp_1/cancel"), ("POST", "/v1/messages/batches")]
ALLOWED = [("POST", "/v1/responses"), ("POST", "/v1/responses/compact"), ("POST", "/v1/chat/completions"),
           ("POST", "/v1/messages?beta=true"), ("POST", "/v1/messages/count_tokens"),
           ("GET", "/v1/models?client_version=0.171.0"), ("GET", "/v1/models/claude-sonnet-4-5")]


def test_only_the_model_endpoints_reach_the_upstream(upstream: Upstream) -> None:
    """Whoever holds the placeholder (the agent's commands can read it) gets the model endpoints and nothing else:
    no admin path, no deletion, no path trick; each refusal is a 403, recorded, and never reaches the upstream."""
    with KeyProxy(upstream.base_url, {"Authorization": "Bearer the-real-key"}) as proxy:
        refused = [_raw(proxy, method, path) for method, path in REFUSED]
        assert upstream.seen == []
        allowed = [_raw(proxy, method, path) for method, path in ALLOWED]
    assert refused == [403] * len(REFUSED)
    assert proxy.refusals == [f"{method} {path}" for method, path in REFUSED]
    assert allowed == [200] * len(ALLOWED)
    assert [(r["method"], r["path"]) for r in upstream.seen] == ALLOWED
    assert proxy.requests == len(ALLOWED)


def test_a_base_url_without_v1_passes_the_messages_api_alone(upstream: Upstream) -> None:
    """Claude Code's base URL has no /v1 (the CLI appends /v1/messages): the same endpoints, the same refusals."""
    origin = upstream.base_url.removesuffix("/v1")
    with KeyProxy(origin, {"x-api-key": "the-real-key"}) as proxy:
        assert proxy.url == f"http://127.0.0.1:{proxy.port}"
        statuses = [_raw(proxy, "POST", "/v1/messages?beta=true"), _raw(proxy, "POST", "/v1/messages/count_tokens"),
                    _raw(proxy, "GET", "/v1/organization/admin_api_keys"), _raw(proxy, "DELETE", "/v1/files/x"),
                    _raw(proxy, "GET", "/api/oauth/profile")]
    assert statuses == [200, 200, 403, 403, 403]
    assert [r["path"] for r in upstream.seen] == ["/v1/messages?beta=true", "/v1/messages/count_tokens"]
    assert proxy.refusals == ["GET /v1/organization/admin_api_keys", "DELETE /v1/files/x", "GET /api/oauth/profile"]
