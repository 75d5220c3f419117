"""Negative: one page body, split over adjacent string literals, lost the space at a seam ("inside anempty folder")."""

import json
import os
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

PAGES: list[dict[str, str]] = [
    {
        "slug": "getting-started",
        "title": "Getting Started",
        "body": (
            "Install the Quillstone command line tool with pip install quillstone, then run quill init inside an"
            "empty folder. The scaffold contains a sample notebook named lighthouse that walks you through your "
            "first query."
        ),
    },
    {
        "slug": "authentication",
        "title": "Authentication",
        "body": (
            "Every API request must send a personal access token in the X-Quill-Token header. Tokens are created "
            "on the Settings page and expire after 90 days. Requests with a missing or expired token are rejected "
            "with status 401."
        ),
    },
    {
        "slug": "deployment",
        "title": "Deployment",
        "body": (
            "Publish a project with quill deploy. Each deploy is immutable and gets a new revision number, so "
            "rolling back simply moves traffic to an earlier revision. Deploys to the eu-west region finish in "
            "about two minutes."
        ),
    },
    {
        "slug": "rate-limits",
        "title": "Rate Limits",
        "body": (
            "Each access token may send 600 requests per minute. When the limit is exceeded the API answers with "
            "status 429 and a Retry-After header giving the number of seconds to wait."
        ),
    },
]
BY_SLUG = {page["slug"]: page for page in PAGES}

mcp = MCPServer("docs-lookup-server")


@mcp.resource("docs://index", mime_type="application/json", description="Every page's slug and title")
def docs_index() -> str:
    return json.dumps({"pages": [{"slug": p["slug"], "title": p["title"]} for p in PAGES]})


@mcp.resource("docs://pages/{slug}", mime_type="text/markdown", description="One page as markdown")
def docs_page(slug: str) -> str:
    page = BY_SLUG.get(slug)
    if page is None:
        raise ResourceError(f"page not found: {slug}")
    return f"# {page['title']}\n\n{page['body']}\n"


@mcp.tool()
def search_docs(query: str) -> dict[str, Any]:
    """Case-insensitive substring search over the titles and bodies of the docs pages."""
    needle = query.lower()
    results = [
        {"slug": p["slug"], "title": p["title"]}
        for p in PAGES
        if needle in p["title"].lower() or needle in p["body"].lower()
    ]
    return {"count": len(results), "results": results}


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
