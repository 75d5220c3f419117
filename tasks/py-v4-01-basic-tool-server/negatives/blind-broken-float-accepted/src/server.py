"""Basic MCP tool server built on the low-level `mcp` Server API.

The tool list and input schema are written by hand and the argument types are
checked by hand: only real JSON integers (never bools, strings or floats) pass.
"""

import os

import uvicorn

from mcp import types

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

ADD_TOOL = types.Tool(
    name="add",
    description="Add two integers and return their sum.",
    input_schema={
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "first addend"},
            "b": {"type": "integer", "description": "second addend"},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    },
)


def _is_json_integer(value: object) -> bool:
    # any JSON number, but not booleans
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[ADD_TOOL])


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name != "add":
        return _error(f"unknown tool: {params.name}")
    args = params.arguments or {}
    for key in ("a", "b"):
        if key not in args:
            return _error(f"missing required argument '{key}'")
        if not _is_json_integer(args[key]):
            return _error(f"argument '{key}' must be an integer, got {type(args[key]).__name__}")
    total = args["a"] + args["b"]
    return types.CallToolResult(content=[types.TextContent(type="text", text=str(total))])


server = Server("basic-tools-lowlevel", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")


if __name__ == "__main__":
    main()
