"""Read-only documentation lookup server on the low-level `mcp` Server API.

Pages are stored as their full markdown; the title is the text of the
level-one heading. The tool result carries both structured content and the
same object as JSON text.
"""

from __future__ import annotations

import json
import os

import uvicorn

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

RESOURCE_NOT_FOUND = -32002  # MCP's conventional code for an unknown resource

PAGE_MARKDOWN: dict[str, str] = {  # insertion order is the page order
    "getting-started": (
        "# Getting Started\n"
        "\n"
        "Install the Quillstone command line tool with pip install quillstone, then run quill init inside an empty "
        "folder. The scaffold contains a sample notebook named lighthouse that walks you through your first query."
    ),
    "authentication": (
        "# Authentication\n"
        "\n"
        "Every API request must send a personal access token in the X-Quill-Token header. Tokens are created on the "
        "Settings page and expire after 90 days. Requests with a missing or expired token are rejected with status 401."
    ),
    "deployment": (
        "# Deployment\n"
        "\n"
        "Publish a project with quill deploy. Each deploy is immutable and gets a new revision number, so rolling back "
        "simply moves traffic to an earlier revision. Deploys to the eu-west region finish in about two minutes."
    ),
    "rate-limits": (
        "# Rate Limits\n"
        "\n"
        "Each access token may send 600 requests per minute. When the limit is exceeded the API answers with status "
        "429 and a Retry-After header giving the number of seconds to wait."
    ),
}


def _split(markdown: str) -> tuple[str, str]:
    heading, _, body = markdown.partition("\n\n")
    return heading.removeprefix("# "), body


INDEX_URI = "docs://index"
PAGE_PREFIX = "docs://pages/"
SEARCH_TOOL = types.Tool(
    name="search_docs",
    description="Find pages whose title or body contains the query (case-insensitive substring).",
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "substring to look for"}},
        "required": ["query"],
    },
)


async def list_resources(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=[types.Resource(uri=INDEX_URI, name="docs-index", title="Documentation index", mime_type="application/json")]
    )


async def list_templates(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(
        resource_templates=[
            types.ResourceTemplate(uri_template=PAGE_PREFIX + "{slug}", name="docs-page", mime_type="text/markdown")
        ]
    )


async def read_resource(ctx: ServerRequestContext, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == INDEX_URI:
        index = {"pages": [{"slug": slug, "title": _split(md)[0]} for slug, md in PAGE_MARKDOWN.items()]}
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(index))]
        )
    if uri.startswith(PAGE_PREFIX):
        slug = uri[len(PAGE_PREFIX):]
        markdown = PAGE_MARKDOWN.get(slug)
        if markdown is not None:
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=markdown)]
            )
        raise MCPError(code=RESOURCE_NOT_FOUND, message=f"page not found: {slug}", data={"uri": uri})
    raise MCPError(code=RESOURCE_NOT_FOUND, message=f"resource not found: {uri}", data={"uri": uri})


async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[SEARCH_TOOL])


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    def fail(msg: str) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=msg)], is_error=True)

    if params.name != "search_docs":
        return fail(f"unknown tool: {params.name}")
    query = (params.arguments or {}).get("query")
    if not isinstance(query, str):
        return fail("argument 'query' must be a string")
    needle = query.lower()
    results = []
    for slug, markdown in PAGE_MARKDOWN.items():
        title, body = _split(markdown)
        if needle in title.lower() or needle in body.lower():
            results.append({"slug": slug, "title": title})
    payload = {"count": len(results), "results": results}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload))], structured_content=payload
    )


server = Server(
    "quillstone-docs",
    on_list_resources=list_resources,
    on_list_resource_templates=list_templates,
    on_read_resource=read_resource,
    on_list_tools=list_tools,
    on_call_tool=call_tool,
)

if __name__ == "__main__":
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
