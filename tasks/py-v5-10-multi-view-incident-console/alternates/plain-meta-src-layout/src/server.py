"""Alternate: no Apps helper. Plain tool `_meta` plus resources with the app MIME type (the same on the wire),
JSON strings as results, HTML read from files next to the module, and a src/ layout with pyproject.toml."""

import json
import os
from pathlib import Path

from incidents import INCIDENTS, find
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

APP_MIME = "text/html;profile=mcp-app"
VIEWS = Path(__file__).parent / "views"

mcp = MCPServer("incident-console-plain")


@mcp.tool(meta={"ui": {"resourceUri": "ui://views/incident-list.html"}})
def list_incidents() -> str:
    """All incidents with their count."""
    rows = [{k: i[k] for k in ("id", "title", "severity", "status")} for i in INCIDENTS]
    return json.dumps({"count": len(rows), "incidents": rows})


@mcp.tool(meta={"ui": {"resourceUri": "ui://views/incident-detail.html", "visibility": ["model", "app"]}})
def get_incident(id: str) -> str:
    """One incident with its responders."""
    incident = find(id)
    if incident is None:
        raise ToolError(f"Incident {id} not found")
    return json.dumps(incident)


@mcp.resource("ui://views/incident-list.html", mime_type=APP_MIME)
def incident_list_view() -> str:
    return (VIEWS / "incident-list.html").read_text()


@mcp.resource("ui://views/incident-detail.html", mime_type=APP_MIME)
def incident_detail_view() -> str:
    return (VIEWS / "incident-detail.html").read_text()


if __name__ == "__main__":
    mcp.run("streamable-http", host="0.0.0.0", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
