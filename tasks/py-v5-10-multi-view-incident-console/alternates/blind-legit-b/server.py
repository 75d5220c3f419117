"""Incident console: tools bound to ui:// views by hand-written `_meta` and plain resources."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

APP_MIME = "text/html;profile=mcp-app"


@dataclass(frozen=True)
class Incident:
    id: str
    title: str
    severity: str
    status: str
    responders: tuple[str, ...]

    def summary(self) -> dict:
        return {"id": self.id, "title": self.title, "severity": self.severity, "status": self.status}

    def detail(self) -> dict:
        data = asdict(self)
        data["responders"] = list(self.responders)
        return data


INCIDENTS: tuple[Incident, ...] = (
    Incident("INC-101", "Checkout latency above 2 seconds", "sev2", "investigating", ("Marcus Lee", "Ana Costa")),
    Incident("INC-102", "Payment webhooks failing", "sev1", "mitigated", ("Priya Shah",)),
    Incident("INC-103", "Search index stale", "sev3", "resolved", ("Hana Kim", "Oren Katz")),
)
BY_ID = {incident.id: incident for incident in INCIDENTS}

VIEWS = {
    "list": ("ui://views/incident-list.html", "Incident list", "Unable to load incidents."),
    "detail": ("ui://views/incident-detail.html", "Incident detail", "Unable to load incident."),
}


def page(heading: str, placeholder: str) -> str:
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<title>{heading}</title>"
        "<style>body{font-family:system-ui;margin:1rem}pre{white-space:pre-wrap}</style></head>\n"
        f"<body><h2>{heading}</h2>\n<pre id=\"out\">{placeholder}</pre>\n"
        "<script>\n"
        "addEventListener('message', function (e) {\n"
        "  var m = e.data || {};\n"
        "  if (m.method === 'ui/notifications/tool-result' && m.params) {\n"
        "    var r = m.params, d = r.structuredContent;\n"
        "    if (!d && r.content && r.content[0]) { try { d = JSON.parse(r.content[0].text); } catch (x) {} }\n"
        "    if (d) document.getElementById('out').textContent = JSON.stringify(d, null, 2);\n"
        "  }\n"
        "});\n"
        "</script></body></html>\n"
    )


mcp = MCPServer(name="incident-console", instructions="Read-only view of current production incidents.")


def ui_meta(view: str) -> dict:
    return {"ui": {"resourceUri": VIEWS[view][0], "visibility": ["model", "app"]}}


@mcp.tool(name="list_incidents", meta=ui_meta("list"), structured_output=False)
def list_incidents() -> str:
    """List all incidents (id, title, severity, status)."""
    return json.dumps({"count": len(INCIDENTS), "incidents": [i.summary() for i in INCIDENTS]})


@mcp.tool(name="get_incident", meta=ui_meta("detail"), structured_output=False)
def get_incident(id: str) -> str:
    """Get one incident, including its responders, by id (e.g. INC-102)."""
    incident = BY_ID.get(id)
    if incident is None:
        raise ToolError(f"incident {id} not found")
    return json.dumps(incident.detail())


def _register_view(uri: str, heading: str, placeholder: str) -> None:
    html = page(heading, placeholder)

    def render() -> str:
        return html

    mcp.resource(uri, name=uri.rsplit("/", 1)[-1], title=heading, mime_type=APP_MIME)(render)


for _uri, _heading, _placeholder in VIEWS.values():
    _register_view(_uri, _heading, _placeholder)


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
