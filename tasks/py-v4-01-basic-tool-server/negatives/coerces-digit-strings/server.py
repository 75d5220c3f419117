"""Negative: plain `int` parameters; pydantic's lax validation turns "3" into 3 and true into 1 instead of refusing."""

import os

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("basic-tool-server")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers and return the sum."""
    return a + b


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
