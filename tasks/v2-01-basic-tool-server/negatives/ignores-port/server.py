"""Golden solution: one typed tool with the high-level MCPServer API."""

import os

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("basic-tool-server")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers and return the sum."""
    return a + b


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=8765, streamable_http_path="/mcp")
