"""Alternate legitimate solution: the low-level Server API with hand-written handlers, served by uvicorn.

Unknown slugs raise MCPError with the spec's resource-not-found code; search results carry JSON text plus
structuredContent.
"""

import json
import os
import re

import mcp_types as types
import uvicorn
from mcp import MCPError
from mcp.server.lowlevel import Server

DOCS = (
    ("getting-started", "Getting Started",
     "Install the Quillstone command line tool with pip install quillstone, then run quill init inside an empty "
     "folder. The scaffold contains a sample notebook named lighthouse that walks you through your first query."),
    ("authentication", "Authentication",
     "Every API request must send a personal access token in the X-Quill-Token header. Tokens are created on the "
     "Settings page and expire after 90 days. Requests with a missing or expired token are rejected with status 401."),
    ("deployment", "Deployment",
     "Publish a project with quill deploy. Each deploy is immutable and gets a new revision number, so rolling back "
     "simply moves traffic to an earlier revision. Deploys to the eu-west region finish in about two minutes."),
    ("rate-limits", "Rate Limits",
     "Each access token may send 600 requests per minute. When the limit is exceeded the API answers with status "
     "429 and a Retry-After header giving the number of seconds to wait."),
)
RESOURCE_NOT_FOUND = -32002
PAGE_URI = re.compile(r"^docs://pages/(?P<slug>[^/]+)$")

SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "Text to look for (case-insensitive)"}},
    "required": ["query"],
}


async def list_resources(ctx, params) -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=[types.Resource(uri="docs://index", name="docs-index", mime_type="application/json")]
    )


async def list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(
        resource_templates=[
            types.ResourceTemplate(uri_template="docs://pages/{slug}", name="docs-page", mime_type="text/markdown")
        ]
    )


async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == "docs://index":
        body = json.dumps({"pages": [{"slug": s, "title": t} for s, t, _ in DOCS]})
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=body)]
        )
    match = PAGE_URI.match(uri)
    for slug, title, text in DOCS:
        if match and match["slug"] == slug:
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=f"# {title}\n\n{text}\n")]
            )
    raise MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[types.Tool(name="search_docs", description="Search the docs pages", input_schema=SEARCH_SCHEMA)]
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name != "search_docs":
        return _error(f"Unknown tool: {params.name}")
    query = (params.arguments or {}).get("query")
    if not isinstance(query, str):
        return _error("query must be a string")
    needle = query.lower()
    results = [{"slug": s, "title": t} for s, t, text in DOCS if needle in t.lower() or needle in text.lower()]
    payload = {"count": len(results), "results": results}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload))], structured_content=payload
    )


server = Server(
    "docs-lowlevel",
    version="1.0.0",
    on_list_resources=list_resources,
    on_list_resource_templates=list_resource_templates,
    on_read_resource=read_resource,
    on_list_tools=list_tools,
    on_call_tool=call_tool,
)

if __name__ == "__main__":
    app = server.streamable_http_app(streamable_http_path="/mcp", host="0.0.0.0")
    uvicorn.run(app, host="0.0.0.0", port=int(os.environ["PORT"]), log_level="warning")
