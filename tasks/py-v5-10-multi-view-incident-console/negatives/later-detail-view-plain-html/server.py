"""Negative: the list view goes through the SDK's Apps support; the detail view is declared by hand as plain text/html."""

import os
from typing import Any

from mcp.server.apps import Apps
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

INCIDENTS: list[dict[str, Any]] = [
    {
        "id": "INC-101",
        "title": "Checkout latency above 2 seconds",
        "severity": "sev2",
        "status": "investigating",
        "responders": ["Marcus Lee", "Ana Costa"],
    },
    {
        "id": "INC-102",
        "title": "Payment webhooks failing",
        "severity": "sev1",
        "status": "mitigated",
        "responders": ["Priya Shah"],
    },
    {
        "id": "INC-103",
        "title": "Search index stale",
        "severity": "sev3",
        "status": "resolved",
        "responders": ["Hana Kim", "Oren Katz"],
    },
]
BY_ID = {incident["id"]: incident for incident in INCIDENTS}

LIST_URI = "ui://views/incident-list.html"
DETAIL_URI = "ui://views/incident-detail.html"

# The views show their placeholder until the host delivers the tool result (ui/notifications/tool-result).
LIST_HTML = """<!doctype html>
<html>
<head><meta charset="utf-8"><title>Incident list</title></head>
<body>
  <h1>Incident list</h1>
  <p id="placeholder">Unable to load incidents.</p>
  <table id="incidents" hidden><thead><tr><th>Id</th><th>Title</th><th>Severity</th><th>Status</th></tr></thead>
    <tbody></tbody></table>
  <script>
    window.addEventListener("message", (event) => {
      const msg = event.data;
      if (!msg || msg.method !== "ui/notifications/tool-result") return;
      const data = (msg.params && msg.params.structuredContent) || {};
      const body = document.querySelector("#incidents tbody");
      body.innerHTML = "";
      for (const inc of data.incidents || []) {
        const row = body.insertRow();
        for (const key of ["id", "title", "severity", "status"]) row.insertCell().textContent = inc[key];
      }
      document.getElementById("placeholder").hidden = true;
      document.getElementById("incidents").hidden = false;
    });
  </script>
</body>
</html>
"""

DETAIL_HTML = """<!doctype html>
<html>
<head><meta charset="utf-8"><title>Incident detail</title></head>
<body>
  <h1>Incident detail</h1>
  <p id="placeholder">Unable to load incident.</p>
  <dl id="incident" hidden></dl>
  <script>
    window.addEventListener("message", (event) => {
      const msg = event.data;
      if (!msg || msg.method !== "ui/notifications/tool-result") return;
      const inc = (msg.params && msg.params.structuredContent) || {};
      const list = document.getElementById("incident");
      list.innerHTML = "";
      for (const key of ["id", "title", "severity", "status", "responders"]) {
        list.appendChild(document.createElement("dt")).textContent = key;
        const value = Array.isArray(inc[key]) ? inc[key].join(", ") : inc[key];
        list.appendChild(document.createElement("dd")).textContent = value;
      }
      document.getElementById("placeholder").hidden = true;
      list.hidden = false;
    });
  </script>
</body>
</html>
"""

apps = Apps()


@apps.tool(resource_uri=LIST_URI, visibility=["model", "app"])
def list_incidents() -> dict[str, Any]:
    """List every incident (id, title, severity, status) with their count."""
    summaries = [{k: inc[k] for k in ("id", "title", "severity", "status")} for inc in INCIDENTS]
    return {"count": len(summaries), "incidents": summaries}


apps.add_html_resource(LIST_URI, LIST_HTML, name="incident-list", title="Incident list")

mcp = MCPServer("incident-console", extensions=[apps])


@mcp.tool(meta={"ui": {"resourceUri": DETAIL_URI, "visibility": ["model", "app"]}})
def get_incident(id: str) -> dict[str, Any]:
    """Get one incident, with its responders, by id (e.g. INC-102)."""
    incident = BY_ID.get(id)
    if incident is None:
        raise ToolError(f"incident {id} not found")
    return dict(incident)


@mcp.resource(DETAIL_URI, name="incident-detail", title="Incident detail", mime_type="text/html")
def incident_detail_view() -> str:
    return DETAIL_HTML


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
