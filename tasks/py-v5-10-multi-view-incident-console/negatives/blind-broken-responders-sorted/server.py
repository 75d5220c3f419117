"""Read-only incident console with two MCP Apps views (io.modelcontextprotocol/ui)."""

import copy
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

LIST_URI = "ui://views/incident-list.html"
DETAIL_URI = "ui://views/incident-detail.html"

_BRIDGE = """
<script>
  // Minimal MCP Apps bridge: wait for the host to deliver the tool result.
  window.addEventListener("message", (event) => {
    const msg = event.data || {};
    if (msg.method !== "ui/notifications/tool-result") return;
    const result = msg.params || {};
    let data = result.structuredContent;
    if (!data && Array.isArray(result.content)) {
      const text = result.content.find((c) => c.type === "text");
      if (text) { try { data = JSON.parse(text.text); } catch (e) { data = null; } }
    }
    if (data) render(data);
  });
  if (window.parent !== window) {
    window.parent.postMessage({ jsonrpc: "2.0", id: 1, method: "ui/initialize",
      params: { appInfo: { name: document.title, version: "1.0.0" }, appCapabilities: {} } }, "*");
  }
  function esc(s) { const d = document.createElement("div"); d.textContent = String(s); return d.innerHTML; }
</script>
"""

LIST_HTML = f"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Incident list</title></head>
<body>
  <h1>Incident list</h1>
  <div id="root"><p class="placeholder">Unable to load incidents.</p></div>
  {_BRIDGE}
  <script>
    function render(data) {{
      const rows = (data.incidents || []).map((i) =>
        `<tr><td>${{esc(i.id)}}</td><td>${{esc(i.title)}}</td><td>${{esc(i.severity)}}</td><td>${{esc(i.status)}}</td></tr>`).join("");
      document.getElementById("root").innerHTML =
        `<p>${{esc(data.count)}} incidents</p><table><tr><th>Id</th><th>Title</th><th>Severity</th><th>Status</th></tr>${{rows}}</table>`;
    }}
  </script>
</body>
</html>
"""

DETAIL_HTML = f"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Incident detail</title></head>
<body>
  <h1>Incident detail</h1>
  <div id="root"><p class="placeholder">Unable to load incident.</p></div>
  {_BRIDGE}
  <script>
    function render(i) {{
      const people = (i.responders || []).map((r) => `<li>${{esc(r)}}</li>`).join("");
      document.getElementById("root").innerHTML =
        `<h2>${{esc(i.id)}}: ${{esc(i.title)}}</h2><p>${{esc(i.severity)}} / ${{esc(i.status)}}</p><ul>${{people}}</ul>`;
    }}
  </script>
</body>
</html>
"""

apps = Apps()


@apps.tool(resource_uri=LIST_URI, description="List every production incident.")
def list_incidents() -> dict[str, Any]:
    summaries = [
        {"id": i["id"], "title": i["title"], "severity": i["severity"], "status": i["status"]} for i in INCIDENTS
    ]
    return {"count": len(summaries), "incidents": summaries}


@apps.tool(resource_uri=DETAIL_URI, description="Show one incident with its responders.")
def get_incident(id: str) -> dict[str, Any]:
    for incident in INCIDENTS:
        if incident["id"] == id:
            found = copy.deepcopy(incident)
            found["responders"] = sorted(found["responders"])
            return found
    raise ToolError(f"incident {id} not found")


apps.add_html_resource(LIST_URI, LIST_HTML, name="incident-list", title="Incident list")
apps.add_html_resource(DETAIL_URI, DETAIL_HTML, name="incident-detail", title="Incident detail")

mcp = MCPServer("incident-console", extensions=[apps])

if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
