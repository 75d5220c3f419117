"""Personal notes MCP server (in-memory).

Tools: add_note, list_notes, get_note, update_note, search_notes, tag_note, untag_note,
delete_note, list_tags. Resources: notes://index (markdown index), notes://{note_id}.
Prompt: summarize_notes.
"""

from __future__ import annotations

import itertools
import os
from datetime import datetime, timezone
from typing import Annotated

from pydantic import BaseModel, Field

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations


class Note(BaseModel):
    id: str
    title: str
    body: str
    tags: list[str] = Field(default_factory=list)
    created_at: str
    updated_at: str


class NoteSummary(BaseModel):
    id: str
    title: str
    tags: list[str]
    updated_at: str


class NoteList(BaseModel):
    count: int
    notes: list[NoteSummary]


class Deleted(BaseModel):
    id: str
    deleted: bool


_notes: dict[str, Note] = {}
_ids = itertools.count(1)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _norm_tags(tags: list[str] | None) -> list[str]:
    out: list[str] = []
    for tag in tags or []:
        t = tag.strip().lower().lstrip("#")
        if t and t not in out:
            out.append(t)
    return out


def _get(note_id: str) -> Note:
    note = _notes.get(note_id)
    if note is None:
        raise ToolError(f"note {note_id} not found")
    return note


def _summary(note: Note) -> NoteSummary:
    return NoteSummary(id=note.id, title=note.title, tags=note.tags, updated_at=note.updated_at)


mcp = MCPServer(
    "notes",
    instructions=(
        "A personal notes store. Use add_note to save something, search_notes to find notes by "
        "text or tag, get_note for the full body. Note ids look like N-1, N-2, ..."
    ),
)

READ_ONLY = ToolAnnotations(readOnlyHint=True)


@mcp.tool(title="Add note")
def add_note(
    title: Annotated[str, Field(min_length=1, max_length=200)],
    body: str = "",
    tags: list[str] | None = None,
) -> Note:
    """Create a note with a title, optional body text and optional tags."""
    now = _now()
    note = Note(id=f"N-{next(_ids)}", title=title.strip(), body=body, tags=_norm_tags(tags), created_at=now, updated_at=now)
    _notes[note.id] = note
    return note


@mcp.tool(title="List notes", annotations=READ_ONLY)
def list_notes(tag: str | None = None, limit: Annotated[int, Field(ge=1, le=500)] = 50) -> NoteList:
    """List notes, most recently updated first, optionally only those carrying `tag`."""
    notes = list(_notes.values())
    if tag:
        wanted = _norm_tags([tag])[0] if _norm_tags([tag]) else ""
        notes = [n for n in notes if wanted in n.tags]
    notes.sort(key=lambda n: (n.updated_at, int(n.id[2:])), reverse=True)
    return NoteList(count=len(notes), notes=[_summary(n) for n in notes[:limit]])


@mcp.tool(title="Get note", annotations=READ_ONLY)
def get_note(note_id: str) -> Note:
    """Return one note in full."""
    return _get(note_id)


@mcp.tool(title="Update note")
def update_note(note_id: str, title: str | None = None, body: str | None = None, append: bool = False) -> Note:
    """Change a note's title and/or body. With append=true the body text is appended on a new line."""
    note = _get(note_id)
    if title is not None:
        if not title.strip():
            raise ToolError("title must not be empty")
        note.title = title.strip()
    if body is not None:
        note.body = f"{note.body}\n{body}" if append and note.body else body
    note.updated_at = _now()
    return note


@mcp.tool(title="Search notes", annotations=READ_ONLY)
def search_notes(query: str) -> NoteList:
    """Case-insensitive search over titles, bodies and tags. Use '#tag' to match a tag exactly."""
    q = query.strip().lower()
    if not q:
        raise ToolError("query must not be empty")
    if q.startswith("#"):
        hits = [n for n in _notes.values() if q[1:] in n.tags]
    else:
        hits = [n for n in _notes.values() if q in n.title.lower() or q in n.body.lower() or q in n.tags]
    hits.sort(key=lambda n: int(n.id[2:]))
    return NoteList(count=len(hits), notes=[_summary(n) for n in hits])


@mcp.tool(title="Tag note")
def tag_note(note_id: str, tags: list[str]) -> Note:
    """Add tags to a note (tags are lower-cased; duplicates are ignored)."""
    note = _get(note_id)
    note.tags = _norm_tags(note.tags + tags)
    note.updated_at = _now()
    return note


@mcp.tool(title="Remove tags")
def untag_note(note_id: str, tags: list[str]) -> Note:
    """Remove tags from a note."""
    note = _get(note_id)
    drop = set(_norm_tags(tags))
    note.tags = [t for t in note.tags if t not in drop]
    note.updated_at = _now()
    return note


@mcp.tool(title="List tags", annotations=READ_ONLY)
def list_tags() -> dict[str, int]:
    """Every tag in use with the number of notes carrying it."""
    counts: dict[str, int] = {}
    for note in _notes.values():
        for tag in note.tags:
            counts[tag] = counts.get(tag, 0) + 1
    return dict(sorted(counts.items()))


@mcp.tool(title="Delete note", annotations=ToolAnnotations(destructiveHint=True))
def delete_note(note_id: str) -> Deleted:
    """Delete a note permanently."""
    _get(note_id)
    del _notes[note_id]
    return Deleted(id=note_id, deleted=True)


@mcp.resource("notes://index", name="notes-index", mime_type="text/markdown", description="Index of all notes")
def notes_index() -> str:
    if not _notes:
        return "# Notes\n\n_No notes yet._\n"
    lines = ["# Notes", ""]
    for note in sorted(_notes.values(), key=lambda n: int(n.id[2:])):
        tags = " ".join(f"#{t}" for t in note.tags)
        lines.append(f"- **{note.id}** {note.title}" + (f" ({tags})" if tags else ""))
    return "\n".join(lines) + "\n"


@mcp.resource("notes://{note_id}", name="note", mime_type="text/markdown", description="One note as markdown")
def note_resource(note_id: str) -> str:
    note = _notes.get(note_id)
    if note is None:
        raise ValueError(f"note {note_id} not found")
    tags = ", ".join(note.tags) or "none"
    return f"# {note.title}\n\nTags: {tags}\nUpdated: {note.updated_at}\n\n{note.body}\n"


@mcp.prompt(title="Summarize notes")
def summarize_notes(tag: str = "") -> str:
    """Ask the assistant to summarize the notes (optionally only one tag)."""
    notes = [n for n in _notes.values() if not tag or tag.lower() in n.tags]
    if not notes:
        return "There are no matching notes. Tell the user their notebook is empty for this filter."
    parts = [f"## {n.title} ({n.id})\n{n.body}" for n in notes]
    return "Summarize these notes into key points and open action items:\n\n" + "\n\n".join(parts)


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ.get("PORT", "8000")), streamable_http_path="/mcp")
