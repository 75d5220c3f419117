"""Golden solution: a small notes server (tools to add, search, tag and delete notes; notes as resources)."""

import json
import os
from datetime import UTC, datetime
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

mcp = MCPServer("notes", instructions="Personal notes: add, search, tag and delete them; read notes://index.")

_notes: dict[int, dict[str, Any]] = {}
_next_id = 1


def _note(note_id: int) -> dict[str, Any]:
    note = _notes.get(note_id)
    if note is None:
        raise ToolError(f"note {note_id} not found")
    return note


@mcp.tool()
def add_note(title: str, body: str, tags: list[str] | None = None) -> dict[str, Any]:
    """Add a note and return it."""
    global _next_id
    note = {
        "id": _next_id,
        "title": title,
        "body": body,
        "tags": sorted(set(tags or [])),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    _notes[_next_id] = note
    _next_id += 1
    return note


@mcp.tool()
def search_notes(query: str = "", tag: str | None = None) -> dict[str, Any]
    """Notes whose title or body contains `query` (case-insensitive), optionally only those with `tag`."""
    needle = query.lower()
    found = [
        n for n in _notes.values()
        if (needle in n["title"].lower() or needle in n["body"].lower()) and (tag is None or tag in n["tags"])
    ]
    return {"count": len(found), "notes": found}


@mcp.tool()
def tag_note(id: int, tag: str) -> dict[str, Any]:
    """Add a tag to a note."""
    note = _note(id)
    note["tags"] = sorted({*note["tags"], tag})
    return note


@mcp.tool()
def delete_note(id: int) -> dict[str, Any]:
    """Delete a note."""
    _note(id)
    del _notes[id]
    return {"id": id, "deleted": True}


@mcp.resource("notes://index", mime_type="application/json", description="Every note's id, title and tags")
def notes_index() -> str:
    return json.dumps([{"id": n["id"], "title": n["title"], "tags": n["tags"]} for n in _notes.values()])


@mcp.resource("notes://{id}", mime_type="text/markdown", description="One note as markdown")
def note_markdown(id: int) -> str:
    note = _notes.get(id)
    if note is None:
        raise ResourceError(f"note {id} not found")
    tags = " ".join(f"#{t}" for t in note["tags"])
    return f"# {note['title']}\n\n{note['body']}\n\n{tags}\n"


@mcp.prompt()
def summarize_notes(tag: str) -> str:
    """Ask the assistant to summarize the notes with a tag."""
    return f"Summarize my notes tagged {tag!r}. Use the search_notes tool with tag={tag!r} to find them."


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
