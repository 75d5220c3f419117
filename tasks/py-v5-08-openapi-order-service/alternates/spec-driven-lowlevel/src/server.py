"""Alternate legitimate solution: the tools are generated at start-up from openapi.json (low-level Server API,
uvicorn, a src/ layout), and each call is relayed with stdlib urllib in a worker thread."""

import json
import os
from pathlib import Path

import anyio.to_thread
import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from openapi_tools import Operation, UpstreamError, operations

SPEC = json.loads((Path(__file__).resolve().parent.parent / "openapi.json").read_text())
OPERATIONS: dict[str, Operation] = operations(SPEC)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[
        types.Tool(name=op.name, description=op.description, input_schema=op.input_schema)
        for op in OPERATIONS.values()
    ])


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    op = OPERATIONS.get(params.name)
    if op is None:
        return _error(f"Unknown tool: {params.name}")
    args = dict(params.arguments or {})
    missing = [name for name in op.input_schema["required"] if name not in args]
    if missing:
        return _error(f"{op.name}: missing required argument(s) {', '.join(missing)}")
    base_url = os.environ.get("ORDERS_API_URL")
    if not base_url:
        return _error("ORDERS_API_URL is not set")
    try:
        data = await anyio.to_thread.run_sync(op.request, base_url, args)
    except UpstreamError as exc:
        return _error(str(exc))
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(data))],
                                structured_content=data if isinstance(data, dict) else None)


server = Server("orders-from-openapi", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)

if __name__ == "__main__":
    app = server.streamable_http_app(streamable_http_path="/mcp", host="0.0.0.0")
    uvicorn.run(app, host="0.0.0.0", port=int(os.environ["PORT"]), log_level="warning")
