"""Read-only documentation lookup MCP server (MCPServer high-level API)."""

import json
import os
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError

# (slug, title, body) in the fixed page order.
PAGES: list[tuple[str, str, str]] = [
    (
        "getting-started",
        "Getting Started",
        "Install the Quillstone command line tool with pip install quillstone, then run quill init inside an empty "
        "folder. The scaffold contains a sample notebook named lighthouse that walks you through your first query.",
    ),
    (
        "authentication",
        "Authentication",
        "Every API request must send a personal access token in the X-Quill-Token header. Tokens are created on the "
        "Settings page and expire after 90 days. Requests with a missing or expired token are rejected with status 401.",
    ),
    (
        "deployment",
        "Deployment",
        "Publish a project with quill deploy. Each deploy is immutable and gets a new revision number, so rolling back "
        "simply moves traffic to an earlier revision. Deploys to the eu-west region finish in about two minutes.",
    ),
    (
        "rate-limits",
        "Rate Limits",
        "Each access token may send 600 requests per minute. When the limit is exceeded the API answers with status "
        "429 and a Retry-After header giving the number of seconds to wait.",
    ),
]
BY_SLUG = {slug: (title, body) for slug, title, body in PAGES}

mcp = MCPServer("quillstone-docs")


@mcp.resource("docs://index", name="index", mime_type="application/json", description="Every page: slug and title.")
def docs_index() -> str:
    return json.dumps({"pages": [{"slug": slug, "title": title} for slug, title, _ in PAGES]})


@mcp.resource("docs://pages/{slug}", name="page", mime_type="text/markdown", description="One page as markdown.")
def docs_page(slug: str) -> str:
    if slug not in BY_SLUG:
        raise ResourceNotFoundError(f"page not found: {slug}")
    title, body = BY_SLUG[slug]
    return f"# {title}\n\n{body}"


@mcp.tool()
def search_docs(query: str) -> dict[str, Any]:
    """Case-insensitive substring search over page titles and bodies."""
    needle = query.casefold()
    results = sorted(
        (
            {"slug": slug, "title": title}
            for slug, title, body in PAGES
            if needle in title.casefold() or needle in body.casefold()
        ),
        key=lambda r: r["title"],
    )
    return {"count": len(results), "results": results}


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
