"""A usage task's server that sends no instructions (the `instructions` condition has nothing to give it): one
read-only tool. Streamable HTTP at /mcp on PORT, like the servers under evaluation."""

import os

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("plain")


@mcp.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
