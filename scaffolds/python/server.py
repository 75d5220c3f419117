"""Starter template: an MCP server on Streamable HTTP at /mcp, on the port in $PORT."""

import os

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("my-server")


@mcp.tool()
def ping() -> str:
    """Replace this example tool with the ones your task asks for."""
    return "pong"


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
