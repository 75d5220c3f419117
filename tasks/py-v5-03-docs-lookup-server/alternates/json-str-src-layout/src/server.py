"""Alternate legitimate solution: src/ layout, pyproject.toml, pages as markdown strings, tools returning JSON text.

`search_docs` is annotated `-> str` and returns json.dumps(...), so the SDK sends the JSON as text and wraps it as
structuredContent {"result": "<json string>"}: a grader must then read `count` from the JSON text.
"""

import json
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from pages import MARKDOWN, title_of

server = MCPServer(name="quill-docs", instructions="Read-only Quillstone documentation.")


@server.resource("docs://index", name="index", title="Documentation index", mime_type="application/json")
def index() -> str:
    return json.dumps([{"slug": slug, "title": title_of(md)} for slug, md in MARKDOWN.items()], indent=2)


@server.resource("docs://pages/{slug}", name="page", title="Documentation page", mime_type="text/markdown")
def page(slug: str) -> str:
    try:
        return MARKDOWN[slug]
    except KeyError:
        raise ResourceError(f"Page not found: {slug!r} (known: {', '.join(MARKDOWN)})") from None


@server.tool(description="Search the docs: case-insensitive substring match over page titles and bodies.")
def search_docs(query: str) -> str:
    q = query.casefold()
    hits = []
    for slug, md in MARKDOWN.items():
        title = title_of(md)
        body = md.split("\n\n", 1)[1]
        if q in title.casefold() or q in body.casefold():
            hits.append({"slug": slug, "title": title})
    return json.dumps({"count": len(hits), "results": hits})


if __name__ == "__main__":
    server.run("streamable-http", host="0.0.0.0", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
