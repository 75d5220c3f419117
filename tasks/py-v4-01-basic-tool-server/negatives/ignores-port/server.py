"""Golden solution: one typed tool with the high-level MCPServer API.

StrictInt: pydantic's default (lax) validation would turn "2" into 2 and true into 1, and the prompt says a
non-integer argument is an error, never converted.
"""

import os

from mcp.server.mcpserver import MCPServer
from pydantic import StrictInt

mcp = MCPServer("basic-tool-server")


@mcp.tool()
def add(a: StrictInt, b: StrictInt) -> int:
    """Add two integers and return the sum."""
    return a + b


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=8765, streamable_http_path="/mcp")
