"""Negative: re-implements the order service in a local dict instead of calling it."""

import os
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

mcp = MCPServer("order-service")

PRICES = {"WIDGET": 1250, "GADGET": 2150, "GIZMO": 899}
_orders: dict[str, dict[str, Any]] = {}
_next = 1001


class OrderItem(BaseModel):
    sku: str
    quantity: int = Field(ge=1, strict=True)


def _find(order_id: str) -> dict[str, Any]:
    if order_id not in _orders:
        raise ToolError(f"order service returned 404: order {order_id} not found")
    return _orders[order_id]


@mcp.tool(name="createOrder")
def create_order(customer: str, items: list[OrderItem]) -> dict[str, Any]:
    """Create a pending order."""
    global _next
    for i in items:
        if i.sku not in PRICES:
            raise ToolError(f"order service returned 400: unknown sku {i.sku!r}")
    lines = [{"sku": i.sku, "quantity": i.quantity, "unitPrice": PRICES[i.sku],
              "lineTotal": PRICES[i.sku] * i.quantity} for i in items]
    order = {"id": f"ord_{_next}", "customer": customer, "items": lines,
             "total": sum(line["lineTotal"] for line in lines), "currency": "USD", "status": "pending",
             "cancelReason": None}
    _next += 1
    _orders[order["id"]] = order
    return order


@mcp.tool(name="getOrder")
def get_order(orderId: str) -> dict[str, Any]:  # noqa: N803
    """Get one order by id."""
    return _find(orderId)


@mcp.tool(name="listOrders")
def list_orders(status: str | None = None, customer: str | None = None) -> dict[str, Any]:
    """List orders."""
    found = [o for o in _orders.values()
             if (status is None or o["status"] == status) and (customer is None or o["customer"] == customer)]
    return {"orders": found, "count": len(found)}


@mcp.tool(name="cancelOrder")
def cancel_order(orderId: str, reason: str | None = None) -> dict[str, Any]:  # noqa: N803
    """Cancel a pending order."""
    order = _find(orderId)
    if order["status"] == "cancelled":
        raise ToolError(f"order service returned 409: order {orderId} is already cancelled")
    order["status"] = "cancelled"
    order["cancelReason"] = reason
    return order


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
