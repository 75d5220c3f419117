"""Negative: no authentication at all; whoami reports whatever the environment says."""

import json
import os

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("oauth-whoami")


@mcp.tool()
def whoami() -> str:
    """The signed-in user."""
    return json.dumps({"id": os.environ.get("USER_ID", "anonymous"), "email": None, "name": None})


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
