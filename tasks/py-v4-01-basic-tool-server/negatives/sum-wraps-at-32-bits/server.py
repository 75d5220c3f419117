"""Negative: the sum is kept in a 32-bit signed integer, as a C implementation would, so it wraps past 2**31 - 1.

StrictInt: pydantic's default (lax) validation would turn "2" into 2 and true into 1, and the prompt says a
non-integer argument is an error, never converted.
"""

import ctypes
import os

from mcp.server.mcpserver import MCPServer
from pydantic import StrictInt

mcp = MCPServer("basic-tool-server")


@mcp.tool()
def add(a: StrictInt, b: StrictInt) -> int:
    """Add two integers and return the sum."""
    return ctypes.c_int32(a + b).value


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
