"""Alternate: the low-level Server API, views shipped as base64 blobs (the MCP Apps spec allows text or blob
contents), results as structured content only, served with uvicorn."""

import base64
import os

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server

APP_MIME = "text/html;profile=mcp-app"

INCIDENTS = {
    "INC-101": {"id": "INC-101", "title": "Checkout latency above 2 seconds", "severity": "sev2",
                "status": "investigating", "responders": ["Marcus Lee", "Ana Costa"]},
    "INC-102": {"id": "INC-102", "title": "Payment webhooks failing", "severity": "sev1", "status": "mitigated",
                "responders": ["Priya Shah"]},
    "INC-103": {"id": "INC-103", "title": "Search index stale", "severity": "sev3", "status": "resolved",
                "responders": ["Hana Kim", "Oren Katz"]},
}

VIEWS = {
    "ui://views/incident-list.html": (
        "incident-list",
        "<!doctype html><html><body><h1>Incident list</h1><p>Unable to load incidents.</p></body></html>",
    ),
    "ui://views/incident-detail.html": (
        "incident-detail",
        "<!doctype html><html><body><h1>Incident detail</h1><p>Unable to load incident.</p></body></html>",
    ),
}

TOOLS = [
    types.Tool(name="list_incidents", description="All incidents",
               input_schema={"type": "object", "properties": {}},
               meta={"ui": {"resourceUri": "ui://views/incident-list.html"}}),
    types.Tool(name="get_incident", description="One incident by id",
               input_schema={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
               meta={"ui": {"resourceUri": "ui://views/incident-detail.html"}}),
]


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "list_incidents":
        rows = [{k: i[k] for k in ("id", "title", "severity", "status")} for i in INCIDENTS.values()]
        return types.CallToolResult(content=[], structured_content={"count": len(rows), "incidents": rows})
    if params.name == "get_incident":
        incident = INCIDENTS.get(str(args.get("id")))
        if incident is None:
            return _error(f"not found: no incident {args.get('id')}")
        return types.CallToolResult(content=[], structured_content=incident)
    return _error(f"Unknown tool: {params.name}")


async def list_resources(ctx, params) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[
        types.Resource(uri=uri, name=name, mime_type=APP_MIME) for uri, (name, _) in VIEWS.items()
    ])


async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    view = VIEWS.get(str(params.uri))
    if view is None:
        raise ValueError(f"unknown resource {params.uri}")
    blob = base64.b64encode(view[1].encode()).decode()
    return types.ReadResourceResult(contents=[types.BlobResourceContents(uri=params.uri, mime_type=APP_MIME,
                                                                         blob=blob)])


server = Server("incident-console-lowlevel", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool,
                on_list_resources=list_resources, on_read_resource=read_resource)

if __name__ == "__main__":
    app = server.streamable_http_app(streamable_http_path="/mcp", host="0.0.0.0")
    uvicorn.run(app, host="0.0.0.0", port=int(os.environ["PORT"]), log_level="warning")
