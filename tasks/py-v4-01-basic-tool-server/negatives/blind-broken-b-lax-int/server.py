"""Basic MCP tool server: one strictly typed `add` tool over Streamable HTTP."""

import os

from pydantic import StrictInt

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("basic-tools")


@mcp.tool()
def add(a: StrictInt, b: int) -> int:
    """Add two integers and return their sum.

    Both arguments must be JSON integers; strings, booleans and fractional
    numbers are rejected (StrictInt never coerces).
    """
    return a + b


if __name__ == "__main__":
    mcp.run(
        "streamable-http",
        host="127.0.0.1",
        port=int(os.environ["PORT"]),
        streamable_http_path="/mcp",
    )
