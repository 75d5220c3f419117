"""The `orders` fake: the order service of task v2-08-openapi-order-service (its starter/openapi.json).

Everything a tool result is checked on comes from here, so a server must relay rather than invent: ids are
assigned by this service (`ord_1001`, `ord_1002`, ... in creation order, fresh per grading), totals are computed
from its own price list, and status changes happen here. Errors are JSON `{"error": "<message>"}` with the
status the spec gives (400, 404, 409).
"""

from __future__ import annotations

import re
from typing import Any

from mcp_evals_pipeline.upstreams.base import FakeApi, RecordedRequest, Reply

# Unit prices in cents, as the task's openapi.json lists them (tests/test_stage_upstream.py keeps the two equal).
PRICES: dict[str, int] = {"WIDGET": 1250, "GADGET": 2150, "GIZMO": 899}
FIRST_ID = 1001
STATUSES = ("pending", "cancelled")

# The operations, as (method, path pattern, operationId); the task's openapi.json must describe exactly these.
ROUTES: tuple[tuple[str, str, str], ...] = (
    ("POST", "/orders", "createOrder"),
    ("GET", "/orders", "listOrders"),
    ("GET", "/orders/{orderId}", "getOrder"),
    ("POST", "/orders/{orderId}/cancel", "cancelOrder"),
)

_ORDER_PATH = re.compile(r"/orders/([^/]+)")
_CANCEL_PATH = re.compile(r"/orders/([^/]+)/cancel")


def _error(status: int, message: str) -> Reply:
    return status, {"error": message}


def _query_value(request: RecordedRequest, name: str) -> str | None:
    """The last value of a query parameter; an empty value counts as absent (clients differ in how they send an
    unset optional parameter: left out, `status=`, or not at all)."""
    values = [v for v in request.query.get(name, []) if v != ""]
    return values[-1] if values else None


class OrdersApi(FakeApi):
    name = "orders"

    def __init__(self) -> None:
        self.orders: dict[str, dict[str, Any]] = {}
        self.next_number = FIRST_ID

    def handle(self, request: RecordedRequest) -> Reply:
        method, path = request.method.upper(), request.path
        if path == "/orders":
            if method == "POST":
                return self.create_order(request)
            if method == "GET":
                return self.list_orders(request)
            return _error(405, f"method {method} not allowed on /orders")
        if match := _CANCEL_PATH.fullmatch(path):
            if method == "POST":
                return self.cancel_order(match.group(1), request)
            return _error(405, f"method {method} not allowed on {path}")
        if match := _ORDER_PATH.fullmatch(path):
            if method == "GET":
                return self.get_order(match.group(1))
            return _error(405, f"method {method} not allowed on {path}")
        return _error(404, f"no such endpoint: {method} {path}")

    def create_order(self, request: RecordedRequest) -> Reply:
        body = request.body
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object with customer and items")
        customer = body.get("customer")
        if not isinstance(customer, str) or not customer.strip():
            return _error(400, "customer must be a non-empty string")
        items = body.get("items")
        if not isinstance(items, list) or not items:
            return _error(400, "items must be a non-empty array")
        lines = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                return _error(400, f"items[{i}] must be an object with sku and quantity")
            sku, quantity = item.get("sku"), item.get("quantity")
            if sku not in PRICES:
                return _error(400, f"items[{i}]: unknown sku {sku!r} (known: {', '.join(PRICES)})")
            if isinstance(quantity, bool) or not isinstance(quantity, int) or quantity < 1:
                return _error(400, f"items[{i}]: quantity must be an integer of at least 1")
            price = PRICES[sku]
            lines.append({"sku": sku, "quantity": quantity, "unitPrice": price, "lineTotal": price * quantity})
        order_id = f"ord_{self.next_number}"
        self.next_number += 1
        order = {
            "id": order_id,
            "customer": customer,
            "items": lines,
            "total": sum(line["lineTotal"] for line in lines),
            "currency": "USD",
            "status": "pending",
            "cancelReason": None,
        }
        self.orders[order_id] = order
        return 201, order

    def list_orders(self, request: RecordedRequest) -> Reply:
        status = _query_value(request, "status")
        if status is not None and status not in STATUSES:
            return _error(400, f"status must be one of {', '.join(STATUSES)}")
        customer = _query_value(request, "customer")
        found = [o for o in self.orders.values()
                 if (status is None or o["status"] == status) and (customer is None or o["customer"] == customer)]
        return 200, {"orders": found, "count": len(found)}

    def get_order(self, order_id: str) -> Reply:
        order = self.orders.get(order_id)
        if order is None:
            return _error(404, f"order {order_id} not found")
        return 200, order

    def cancel_order(self, order_id: str, request: RecordedRequest) -> Reply:
        order = self.orders.get(order_id)
        if order is None:
            return _error(404, f"order {order_id} not found")
        if order["status"] == "cancelled":
            return _error(409, f"order {order_id} is already cancelled")
        reason = None
        if request.raw_body.strip():
            if not isinstance(request.body, dict):
                return _error(400, "request body must be a JSON object")
            reason = request.body.get("reason")
            if reason is not None and not isinstance(reason, str):
                return _error(400, "reason must be a string")
        order["status"] = "cancelled"
        order["cancelReason"] = reason
        return 200, order
