"""Alternate legitimate solution: the low-level Server API, a src/ layout, a pyproject.toml and uvicorn."""

import json
import os

import mcp_types as types
import uvicorn
from arith import add_ints
from mcp.server.lowlevel import Server

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool(name="add", description="Add two integers", input_schema=ADD_SCHEMA)])


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name != "add":
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"Unknown tool: {params.name}")],
                                    is_error=True)
    args = params.arguments or {}
    try:
        total = add_ints(args.get("a"), args.get("b"))
    except TypeError as exc:
        return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc))], is_error=True)
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(total))])


server = Server("adder-lowlevel", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)

if __name__ == "__main__":
    app = server.streamable_http_app(streamable_http_path="/mcp", host="0.0.0.0")
    uvicorn.run(app, host="0.0.0.0", port=int(os.environ["PORT"]), log_level="warning")
