"""MCP front end for the order service described in openapi.json.

One hand-written MCPServer tool per operation; each call makes that
operation's HTTP request to $ORDERS_API_URL and relays the JSON answer.
"""

import os
from typing import Any
from urllib.parse import quote

import httpx
import jsonschema
from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr

from mcp import types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

# Optional string arguments are annotated as plain `str` with a None default: the schema then says
# just "string", and (unlike `str | None`) the SDK never tries to JSON-decode a string value such as
# customer="null" before validation. An omitted argument stays None and is left out of the request.
OptionalStr = str


class OrderItemInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sku: StrictStr
    quantity: StrictInt


mcp = MCPServer("order-service")

# The SDK pre-parses a JSON *string* given for an array/object argument (e.g. items="[...]") into
# the value before pydantic sees it. The order service must never receive a converted argument,
# so the raw arguments are first checked against each tool's published input schema, with
# JSON-only type semantics (true is not an integer, 2.0 is not an integer).
_TYPE_CHECKER = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, value: type(value) is int
)
_StrictValidator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=_TYPE_CHECKER)
_input_schemas: dict[str, dict[str, Any]] = {}


async def reject_mistyped_arguments(ctx: Any, call_next: Any) -> Any:
    if ctx.method == "tools/call" and isinstance(ctx.params, dict):
        if not _input_schemas:
            _input_schemas.update({tool.name: tool.input_schema for tool in await mcp.list_tools()})
        schema = _input_schemas.get(ctx.params.get("name"))
        arguments = ctx.params.get("arguments") or {}
        if schema is not None:
            error = jsonschema.exceptions.best_match(_StrictValidator(schema).iter_errors(arguments))
            if error is not None:
                where = "/".join(str(part) for part in error.absolute_path) or "arguments"
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=f"invalid argument {where}: {error.message}")],
                    is_error=True,
                )
    return await call_next(ctx)


mcp.middleware.append(reject_mistyped_arguments)


def _base_url() -> str:
    return os.environ["ORDERS_API_URL"].rstrip("/")


async def _request(method: str, path: str, *, json_body: Any = None, params: dict[str, str] | None = None) -> Any:
    async with httpx.AsyncClient(timeout=30.0) as client:
        try:
            response = await client.request(method, _base_url() + path, json=json_body, params=params)
        except httpx.HTTPError as exc:
            raise ToolError(f"order service unreachable: {exc}") from None
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if not response.is_success:
        message = payload.get("error") if isinstance(payload, dict) else None
        raise ToolError(f"order service answered {response.status_code}: {message or response.text}")
    return payload


@mcp.tool(name="createOrder")
async def create_order(customer: StrictStr, items: list[OrderItemInput]) -> dict[str, Any]:
    """Create a pending order (POST /orders). The service prices the items and assigns the id."""
    body = {"customer": customer, "items": [item.model_dump() for item in items]}
    return await _request("POST", "/orders", json_body=body)


@mcp.tool(name="getOrder")
async def get_order(orderId: StrictStr) -> dict[str, Any]:
    """Get one order (GET /orders/{orderId})."""
    return await _request("GET", f"/orders/{quote(orderId, safe='')}")


@mcp.tool(name="listOrders")
async def list_orders(
    status: OptionalStr = None,  # type: ignore[assignment]
    customer: OptionalStr = None,  # type: ignore[assignment]
) -> dict[str, Any]:
    """List orders (GET /orders), optionally filtered by status (pending|cancelled) and/or exact customer."""
    params = {key: value for key, value in (("status", status), ("customer", customer)) if value is not None}
    return await _request("GET", "/orders", params=params)


@mcp.tool(name="cancelOrder")
async def cancel_order(
    orderId: StrictStr,
    reason: OptionalStr = None,  # type: ignore[assignment]
) -> dict[str, Any]:
    """Cancel a pending order (POST /orders/{orderId}/cancel), with an optional reason."""
    body = {"reason": reason} if reason is not None else {}
    return await _request("POST", f"/orders/{quote(orderId, safe='')}/cancel", json_body=body)


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
