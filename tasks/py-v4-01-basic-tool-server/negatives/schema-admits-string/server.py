"""Negative: `a` is declared integer-or-string in the input schema (the handler still refuses a string)."""

import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import StrictInt, StrictStr

mcp = MCPServer("basic-tool-server")


@mcp.tool()
def add(a: StrictInt | StrictStr, b: StrictInt) -> int:
    """Add two integers and return the sum."""
    if not isinstance(a, int):
        raise ToolError("a must be an integer")
    return a + b


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
