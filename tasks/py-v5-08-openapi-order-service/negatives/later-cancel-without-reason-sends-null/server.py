"""Negative: cancelOrder serializes its body itself, so without a reason it sends the JSON text null."""

import json
import os
from typing import Any

import httpx2
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

mcp = MCPServer("order-service")


class OrderItem(BaseModel):
    sku: str = Field(description="The product: WIDGET, GADGET or GIZMO.")
    # strict: a quantity sent as the string "2" is refused, not converted to 2 (the prompt asks for an integer)
    quantity: int = Field(ge=1, strict=True, description="How many units.")


def _base_url() -> str:
    url = os.environ.get("ORDERS_API_URL")
    if not url:
        raise ToolError("ORDERS_API_URL is not set: the order service's base URL is unknown")
    return url.rstrip("/")


async def _request(method: str, path: str, *, params: dict[str, str] | None = None,
                   body: dict[str, Any] | None = None, raw_json: bool = False) -> dict[str, Any]:
    """One request to the order service; its JSON answer on 2xx, else a ToolError with its error message."""
    try:
        async with httpx2.AsyncClient(base_url=_base_url(), timeout=10) as client:
            if raw_json:  # the bug: json.dumps(None) is the body "null", not no body
                response = await client.request(method, path, params=params, content=json.dumps(body),
                                                headers={"Content-Type": "application/json"})
            else:
                response = await client.request(method, path, params=params, json=body)
    except httpx2.HTTPError as exc:
        raise ToolError(f"could not reach the order service: {exc}") from exc
    try:
        data = response.json()
    except ValueError:
        data = None
    if not response.is_success:
        message = data.get("error") if isinstance(data, dict) else None
        raise ToolError(f"order service returned {response.status_code}: {message or response.text}")
    if not isinstance(data, dict):
        raise ToolError(f"order service returned a non-object body: {response.text[:200]}")
    return data


@mcp.tool(name="createOrder")
async def create_order(customer: str, items: list[OrderItem]) -> dict[str, Any]:
    """Create a pending order; the service assigns its id and computes its total (in cents)."""
    body = {"customer": customer, "items": [item.model_dump() for item in items]}
    return await _request("POST", "/orders", body=body)


@mcp.tool(name="getOrder")
async def get_order(orderId: str) -> dict[str, Any]:  # noqa: N803 - the spec's parameter name
    """Get one order by id."""
    return await _request("GET", f"/orders/{orderId}")


@mcp.tool(name="listOrders")
async def list_orders(status: str | None = None, customer: str | None = None) -> dict[str, Any]:
    """List orders in creation order, optionally only those with a status (pending or cancelled) or customer."""
    params = {k: v for k, v in {"status": status, "customer": customer}.items() if v is not None}
    return await _request("GET", "/orders", params=params)


@mcp.tool(name="cancelOrder")
async def cancel_order(orderId: str, reason: str | None = None) -> dict[str, Any]:  # noqa: N803
    """Cancel a pending order, optionally with a reason."""
    return await _request("POST", f"/orders/{orderId}/cancel", body={"reason": reason} if reason else None,
                          raw_json=True)


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
