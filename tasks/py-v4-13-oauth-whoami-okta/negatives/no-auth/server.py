"""Negative: no authentication at all; whoami reports a caller nobody authenticated."""

import json
import os

from mcp.server.mcpserver import MCPServer

PORT = int(os.environ["PORT"])

mcp = MCPServer("oauth-whoami-okta")


@mcp.tool()
def whoami() -> str:
    """The signed-in user (nobody signs in: there is no auth)."""
    return json.dumps({"id": None, "email": None, "name": None})


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=PORT, streamable_http_path="/mcp")
