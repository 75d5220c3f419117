"""Stage `upstream` and the bundled fake services: the fake's API and recording, the contract section, and the
stage against real server processes talking to a real fake over HTTP."""

from __future__ import annotations

import http.client
import json
import re
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.contracts.upstream import UpstreamSpec
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.grader.features import FEATURES
from mcp_evals_pipeline.grader.functional import unsupported_features
from mcp_evals_pipeline.grader.stages import upstream as upstream_stage
from mcp_evals_pipeline.upstreams import FakeService, RecordedRequest, start_service
from mcp_evals_pipeline.upstreams.orders import PRICES, ROUTES, OrdersApi

from .conftest import TASKS, write_tree

TASK = TASKS / "py-v5-08-openapi-order-service"
# The sanitized server environment has no proxy variables; the test's own requests must not pick up the host's.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _http(service: FakeService, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(service.base_url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with _OPENER.open(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


ADA = {"customer": "Ada Lovelace", "items": [{"sku": "WIDGET", "quantity": 2}, {"sku": "GADGET", "quantity": 1}]}


# ---- the fake service -----------------------------------------------------------------------------------------


def test_fake_orders_records_every_request_and_assigns_ids() -> None:
    with start_service("orders") as service:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/[\w-]{24}", service.base_url)
        status, order = _http(service, "POST", "/orders", ADA)
        assert status == 201
        assert (order["id"], order["total"], order["status"]) == ("ord_1001", 4650, "pending")
        assert [line["lineTotal"] for line in order["items"]] == [2500, 2150]
        assert _http(service, "POST", "/orders", {"customer": "Grace Hopper",
                                                  "items": [{"sku": "GIZMO", "quantity": 3}]})[1]["total"] == 2697
        assert _http(service, "GET", "/orders?status=pending&customer=Ada+Lovelace")[1]["count"] == 1
        assert _http(service, "GET", "/orders/ord_9999") == (404, {"error": "order ord_9999 not found"})
        status, cancelled = _http(service, "POST", "/orders/ord_1001/cancel", {"reason": "customer request"})
        assert (status, cancelled["status"], cancelled["cancelReason"]) == (200, "cancelled", "customer request")
        assert _http(service, "POST", "/orders/ord_1001/cancel") == (
            409, {"error": "order ord_1001 is already cancelled"})
        recorded = service.requests()

    assert [(r.method, r.path, r.status) for r in recorded] == [
        ("POST", "/orders", 201), ("POST", "/orders", 201), ("GET", "/orders", 200), ("GET", "/orders/ord_9999", 404),
        ("POST", "/orders/ord_1001/cancel", 200), ("POST", "/orders/ord_1001/cancel", 409),
    ]
    assert recorded[0].body == ADA and json.loads(recorded[0].raw_body) == ADA
    assert recorded[2].query == {"status": ["pending"], "customer": ["Ada Lovelace"]}
    assert recorded[2].body is None and recorded[2].raw_body == ""
    assert recorded[4].body == {"reason": "customer request"}
    assert recorded[2].describe() == "GET /orders?status=pending&customer=Ada Lovelace -> 200"
    assert recorded[4].describe() == 'POST /orders/ord_1001/cancel {"reason": "customer request"} -> 200'
    assert not service.running
    assert not procs.can_connect("127.0.0.1", int(service.origin.rsplit(":", 1)[1]))


def test_each_fake_starts_fresh() -> None:
    with start_service("orders") as first, start_service("orders") as second:
        assert first.base_url != second.base_url
        assert _http(first, "POST", "/orders", ADA)[1]["id"] == "ord_1001"
        assert _http(first, "POST", "/orders", ADA)[1]["id"] == "ord_1002"
        assert _http(second, "POST", "/orders", ADA)[1]["id"] == "ord_1001"
        assert _http(second, "GET", "/orders")[1]["count"] == 1
        assert len(first.requests()) == 2 and len(second.requests()) == 2


def test_fake_speaks_keep_alive_and_chunked_bodies() -> None:
    """Real clients differ: httpx keeps connections open, some stream bodies chunked."""
    with start_service("orders") as service:
        host, port = service.origin.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        try:
            chunks = iter([b'{"customer": "Ada Lovelace", ', b'"items": [{"sku": "GIZMO", "quantity": 1}]}'])
            conn.request("POST", service.prefix + "/orders", body=chunks,
                         headers={"Content-Type": "application/json"},
                         encode_chunked=True)
            created = conn.getresponse()
            assert (created.status, json.loads(created.read())["total"]) == (201, 899)
            conn.request("GET", service.prefix + "/orders/ord_1001")  # the same connection
            again = conn.getresponse()
            assert (again.status, json.loads(again.read())["id"]) == (200, "ord_1001")
        finally:
            conn.close()
        assert [r.status for r in service.requests()] == [201, 200]


def test_an_unreadable_request_is_answered_and_recorded() -> None:
    with start_service("orders") as service:
        host, port = service.origin.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(f"POST {service.prefix}/orders HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n"
                         .encode())
            # The answer may arrive in pieces under load: read until the server closes or the body is in.
            reply = b""
            while b"request body too large" not in reply and (chunk := sock.recv(4096)):
                reply += chunk
        assert reply.decode().startswith("HTTP/1.1 400") and b"request body too large" in reply
        # The service records after answering (in its own thread): give it a moment rather than racing it.
        deadline = time.monotonic() + 5
        while not service.requests() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [(r.method, r.path, r.status) for r in service.requests()] == [("POST", "/orders", 400)]


def _handle(api: OrdersApi, method: str, path: str, body: Any = None, query: dict[str, list[str]] | None = None,
            raw: str | None = None) -> tuple[int, Any]:
    raw_body = raw if raw is not None else (json.dumps(body) if body is not None else "")
    return api.handle(RecordedRequest(method=method, path=path, query=query or {}, body=body, raw_body=raw_body))


def test_orders_api_rejects_what_the_spec_rejects() -> None:
    api = OrdersApi()
    assert _handle(api, "POST", "/orders", {"customer": "A", "items": []})[0] == 400
    assert _handle(api, "POST", "/orders", {"customer": "", "items": [{"sku": "GIZMO", "quantity": 1}]})[0] == 400
    status, body = _handle(api, "POST", "/orders", {"customer": "A", "items": [{"sku": "NOPE", "quantity": 1}]})
    assert status == 400 and "unknown sku" in body["error"]
    assert _handle(api, "POST", "/orders", {"customer": "A", "items": [{"sku": "GIZMO", "quantity": 0}]})[0] == 400
    assert _handle(api, "POST", "/orders", raw="customer=A")[0] == 400  # not JSON
    assert _handle(api, "GET", "/orders", query={"status": ["shipped"]})[0] == 400
    assert _handle(api, "DELETE", "/orders/ord_1001")[0] == 405
    assert _handle(api, "GET", "/customers") == (404, {"error": "no such endpoint: GET /customers"})
    assert not api.orders, "nothing invalid was stored"
    # An optional parameter sent empty (`status=`, as some clients send an unset one) counts as absent.
    _handle(api, "POST", "/orders", {"customer": "A", "items": [{"sku": "GIZMO", "quantity": 1}]})
    assert _handle(api, "GET", "/orders", query={"status": [""], "customer": [""]})[1]["count"] == 1
    # Cancel without a body, with an empty object, or with a reason.
    assert _handle(api, "POST", "/orders/ord_1001/cancel")[1]["cancelReason"] is None


def test_a_crash_of_the_fake_is_answered_and_recorded() -> None:
    class Broken(OrdersApi):
        def handle(self, request: RecordedRequest) -> tuple[int, Any]:
            raise RuntimeError("boom")

    with FakeService(Broken()) as service:
        status, body = _http(service, "GET", "/orders")
        assert status == 500 and "RuntimeError: boom" in body["error"]
        assert [r.status for r in service.requests()] == [500]


# ---- the contract section -------------------------------------------------------------------------------------


def test_upstream_spec_validation() -> None:
    spec = UpstreamSpec.model_validate({"service": "orders", "env": "ORDERS_API_URL",
                                        "expectRequests": [{"method": "post", "path": "/orders"}]})
    assert spec.expect_requests[0].method == "POST" and spec.expect_requests[0].min_count == 1
    bad = [
        {"service": "payments"},  # no such bundled fake: the task's typo, caught when it loads
        {"service": "orders", "env": "PORT"},  # would override the grader's own variable
        {"service": "orders", "env": "orders-url"},
        {"service": "orders", "expectRequests": [{"method": "GET", "path": "/orders/("}]},
        {"service": "orders", "expectRequests": [{"method": "GET", "path": "/orders", "minCount": 0}]},
        {"service": "orders", "expectRequests": [{"method": "GET /x", "path": "/orders"}]},
        {"service": "orders", "expectedRequests": []},  # unknown field
        {"service": "orders", "expectRequests": [{"method": "POST", "path": "/x", "exactBody": True}]},  # no body
    ]
    for data in bad:
        with pytest.raises(ValidationError):
            UpstreamSpec.model_validate(data)


def test_an_exact_body_allows_no_other_key_and_counts_no_body_as_empty() -> None:
    """"an empty JSON object, or no body" (a cancel without a reason): `{"reason": null}` holds every key of `{}`,
    so only exactBody tells it apart."""
    spec = UpstreamSpec.model_validate({"service": "orders", "expectRequests": [
        {"method": "POST", "path": "/orders/ord_1/cancel", "body": {}, "exactBody": True},
        {"method": "POST", "path": "/orders/ord_1/cancel", "body": {}}]})
    exact, subset = spec.expect_requests

    def sent(body: Any, raw: str) -> RecordedRequest:
        return RecordedRequest(method="POST", path="/orders/ord_1/cancel", query={}, body=body, raw_body=raw)

    assert [upstream_stage._matches(exact, sent(b, r)) for b, r in [
        (None, ""), ({}, "{}"), ({"reason": None}, '{"reason":null}'), ({"reason": "x"}, '{"reason":"x"}'),
        (None, "not json")]] == [True, True, False, False, False]
    assert upstream_stage._matches(subset, sent({"reason": None}, '{"reason":null}'))  # the gap it closes
    assert upstream_stage._describe_expected(exact) == "POST /orders/ord_1/cancel {} (exactly)"


def test_the_stage_is_registered() -> None:
    assert FEATURES["upstream"] is upstream_stage.UpstreamFeature
    assert unsupported_features(_contract()) == []


# ---- the task and the fake agree ---------------------------------------------------------------------------------


def test_task_openapi_describes_the_fake() -> None:
    spec = json.loads((TASK / "starter" / "openapi.json").read_text())
    operations = {(method.upper(), path, op["operationId"])
                  for path, item in spec["paths"].items() for method, op in item.items()}
    assert operations == set(ROUTES)
    create = spec["paths"]["/orders"]["post"]["description"]
    for sku, cents in PRICES.items():
        assert f"{sku} {cents}" in create, f"openapi.json does not give the price of {sku}"
    assert spec["components"]["schemas"]["OrderItemInput"]["properties"]["sku"]["enum"] == list(PRICES)
    # Solutions are complete workspaces: each carries the starter's openapi.json unchanged.
    for copy in TASK.glob("*/**/openapi.json"):
        assert copy.read_bytes() == (TASK / "starter" / "openapi.json").read_bytes(), copy


# ---- the stage against real servers ----------------------------------------------------------------------------

REQS = {"requirements.txt": "mcp>=2.3,<3\n"}

# A relay: each tool calls the fake at the URL in the variable ENV_NAME.
RELAY = '''
import json
import os
import urllib.error
import urllib.request

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

mcp = MCPServer("relay")


def call(method, path, body=None):
    base = os.environ.get("ENV_NAME", "http://127.0.0.1:9")
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise ToolError(json.loads(exc.read())["error"]) from exc
    except OSError as exc:
        raise ToolError(f"order service unreachable: {exc}") from exc


@mcp.tool(name="createOrder")
def create_order(customer: str, sku: str, quantity: int) -> dict:
    return call("POST", "/orders", {"customer": customer, "items": [{"sku": sku, "quantity": quantity}]})


@mcp.tool(name="getOrder")
def get_order(orderId: str) -> dict:
    GET_ORDER


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
'''
RELAYED_GET = 'return call("GET", f"/orders/{orderId}")'


def _server(env: str = "ORDERS_API_URL", get_order: str = RELAYED_GET) -> dict[str, str]:
    return {**REQS, "server.py": RELAY.replace("ENV_NAME", env).replace("GET_ORDER", get_order)}


# Answers getOrder from a table it keeps itself; createOrder still relays.
LOCAL_GET = '''return {"id": orderId, "customer": "Ada Lovelace", "total": 2500, "status": "pending"}'''
# Answers everything locally; reads the right variable and never uses it.
FAKER = '''
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

mcp = MCPServer("faker")
URL = os.environ["ORDERS_API_URL"]
ORDERS = {}


@mcp.tool(name="createOrder")
def create_order(customer: str, sku: str, quantity: int) -> dict:
    order = {"id": f"ord_{1001 + len(ORDERS)}", "customer": customer, "total": 1250 * quantity, "status": "pending"}
    ORDERS[order["id"]] = order
    return order


@mcp.tool(name="getOrder")
def get_order(orderId: str) -> dict:
    if orderId not in ORDERS:
        raise ToolError(f"order {orderId} not found")
    return ORDERS[orderId]


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
'''


def _contract(checked_calls: bool = True, expect_requests: list[dict] | None = None) -> TaskContract:
    """createOrder + getOrder against the orders fake; without checked_calls the calls assert nothing, so only the
    upstream stage can tell a relay from a faker."""
    calls: list[dict[str, Any]] = [
        {"tool": "createOrder", "args": {"customer": "Ada Lovelace", "sku": "WIDGET", "quantity": 2}},
        {"tool": "getOrder", "args": {"orderId": "ord_1001"}},
        {"tool": "getOrder", "args": {"orderId": "ord_4040"}},
    ]
    if checked_calls:
        calls[0] |= {"isError": False, "expect": [{"type": "contains", "value": "ord_1001"},
                                                  {"type": "number-equals", "path": "total", "value": 2500}]}
        calls[1] |= {"isError": False, "expect": {"type": "contains", "value": "Ada Lovelace"}}
        calls[2] |= {"isError": True, "expect": {"type": "contains", "value": "not found"}}
    return TaskContract.model_validate({
        "title": "relay", "runtime": "python", "entryCandidates": ["server.py"],
        "exactToolNames": ["createOrder", "getOrder"],
        "expectedTools": [{"name": "createOrder", "requiredProps": ["customer", "sku", "quantity"]},
                          {"name": "getOrder", "requiredProps": ["orderId"]}],
        "calls": calls,
        "upstream": {"service": "orders", "env": "ORDERS_API_URL",
                     "expectRequests": [{"method": "POST", "path": "/orders"},
                                        {"method": "GET", "path": r"/orders/ord_\d+", "minCount": 2}]
                     if expect_requests is None else expect_requests},
    })


def _check(grade: Any, check_id: str) -> Any:
    return next(c for c in grade.checks if c.id == check_id)


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[FakeService]:
    """Every fake the stage starts, so a test can look at it after the grading stopped it."""
    services: list[FakeService] = []

    def recording_start(name: str) -> FakeService:
        services.append(start_service(name))
        return services[-1]

    monkeypatch.setattr(upstream_stage, "start_service", recording_start)
    return services


def test_a_relay_passes_with_a_fresh_fake_per_grading(tmp_path: Path, started: list[FakeService]) -> None:
    workspace = write_tree(tmp_path, _server())
    for _ in range(2):  # the second grading sees ord_1001 again: nothing is shared between gradings
        grade = grade_workspace_sync(_contract(), workspace)
        assert grade.contract_pass, grade.first_failure
        assert [c.id for c in grade.checks][-4:] == ["call:createOrder:1", "call:getOrder:1", "call:getOrder:2",
                                                     "upstream"]
        check = _check(grade, "upstream")
        assert check.stage == "upstream"
        assert check.detail == ("3 upstream requests: POST /orders x1, GET /orders/ord_1001 x1, "
                                "GET /orders/ord_4040 x1")
    assert len(started) == 2 and started[0] is not started[1]
    for service in started:  # stopped with its grading
        assert not service.running
        assert not procs.can_connect("127.0.0.1", int(service.origin.rsplit(":", 1)[1]))
    assert [(r.method, r.path) for r in started[1].requests()] == [
        ("POST", "/orders"), ("GET", "/orders/ord_1001"), ("GET", "/orders/ord_4040")]
    assert started[1].requests()[0].body == {"customer": "Ada Lovelace", "items": [{"sku": "WIDGET", "quantity": 2}]}


def test_a_faker_that_never_calls_the_upstream_fails_at_upstream(tmp_path: Path) -> None:
    """Its call results are all right: only the recorded requests give it away."""
    grade = grade_workspace_sync(_contract(), write_tree(tmp_path, {**REQS, "server.py": FAKER}))
    assert grade.failure_code == "contract.upstream", grade.first_failure
    assert all(c.passed for c in grade.checks if c.stage == "calls")
    detail = _check(grade, "upstream").detail
    assert "POST /orders at least 1x (recorded 0x)" in detail
    assert r"GET /orders/ord_\d+ at least 2x (recorded 0x)" in detail
    assert "the orders service at the URL in ORDERS_API_URL received no request at all" in detail


def test_a_partial_relay_fails_at_upstream_listing_what_was_recorded(tmp_path: Path) -> None:
    workspace = write_tree(tmp_path, _server(get_order=LOCAL_GET))
    grade = grade_workspace_sync(_contract(checked_calls=False), workspace)
    assert grade.failure_code == "contract.upstream", grade.first_failure
    detail = _check(grade, "upstream").detail
    assert r"GET /orders/ord_\d+ at least 2x (recorded 0x)" in detail
    assert "POST /orders at least" not in detail  # met: only what is missing is listed
    assert ('recorded 1 requests: POST /orders {"customer": "Ada Lovelace", "items": [{"sku": "WIDGET", '
            '"quantity": 2}]} -> 201') in detail


def test_a_server_reading_another_variable_fails(tmp_path: Path) -> None:
    workspace = write_tree(tmp_path, _server(env="ORDERS_URL"))
    # The calls expect upstream data, so it fails there, with the tool's own error text in the detail.
    grade = grade_workspace_sync(_contract(), workspace)
    assert grade.failure_code == "contract.calls", grade.first_failure
    assert "order service unreachable" in _check(grade, "call:createOrder:1").detail
    assert _check(grade, "upstream").detail == "blocked by calls"
    # When the calls assert nothing, the upstream stage still catches it.
    grade = grade_workspace_sync(_contract(checked_calls=False), workspace)
    assert grade.failure_code == "contract.upstream", grade.first_failure
    assert "received no request at all" in _check(grade, "upstream").detail


def test_no_expected_requests_still_requires_one(tmp_path: Path) -> None:
    grade = grade_workspace_sync(_contract(checked_calls=False, expect_requests=[]),
                                 write_tree(tmp_path, {**REQS, "server.py": FAKER}))
    assert grade.failure_code == "contract.upstream"
    assert "any request at least 1x (recorded 0x)" in _check(grade, "upstream").detail


def test_a_fake_that_cannot_start_is_infra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_port(name: str) -> FakeService:
        raise OSError("no free port")

    monkeypatch.setattr(upstream_stage, "start_service", no_port)
    grade = grade_workspace_sync(_contract(), write_tree(tmp_path, _server()))
    assert grade.failure_code == "infra.upstream" and not grade.valid
    assert "no free port" in (grade.error or "")
