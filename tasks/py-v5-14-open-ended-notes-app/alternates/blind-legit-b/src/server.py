"""Notebook: a file-backed personal notes server for AI assistants.

Run with `python src/server.py`; set NOTES_FILE to choose where notes are kept
(default: notes.json next to the workspace root).
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from storage import NoteNotFound, NoteStore

ROOT = Path(__file__).resolve().parent.parent
store = NoteStore(Path(os.environ.get("NOTES_FILE", ROOT / "notes.json")))

notebook = MCPServer(
    name="notebook",
    title="Notebook",
    instructions="Personal notebook. Notes have short hex ids; pinned notes are listed first.",
)


def _clean_tags(tags: list[str] | None) -> list[str]:
    return sorted({t.strip().lower() for t in tags or [] if t.strip()})


def _find(note_id: str):
    try:
        return store.get(note_id.strip())
    except NoteNotFound:
        raise ToolError(f"No note with id {note_id!r}. Use list_notes to see ids.") from None


@notebook.tool()
async def create_note(title: str, content: str, tags: list[str] | None = None, ctx: Context | None = None) -> str:
    """Save a new note. Returns the new note, including its id."""
    if not title.strip():
        raise ToolError("A note needs a non-empty title.")
    note = store.create(title.strip(), content, _clean_tags(tags))
    if ctx is not None:
        await ctx.notify_resources_changed()
    return note.render()


@notebook.tool()
def list_notes() -> str:
    """One line per note (pinned first): id, title and tags."""
    notes = store.all()
    if not notes:
        return "The notebook is empty."
    return f"{len(notes)} note(s):\n" + "\n".join(n.one_line() for n in notes)


@notebook.tool()
def read_note(note_id: str) -> str:
    """Full text of one note."""
    return _find(note_id).render()


@notebook.tool()
def find_notes(text: str = "", tag: str | None = None) -> str:
    """Find notes containing every word of `text` (case-insensitive), optionally restricted to a tag."""
    hits = store.search(text, tag.strip().lower() if tag else None)
    if not hits:
        return "No matching notes."
    return "\n".join(n.one_line() for n in hits)


@notebook.tool()
def append_to_note(note_id: str, text: str) -> str:
    """Append a paragraph to an existing note."""
    note = _find(note_id)
    content = f"{note.content.rstrip()}\n\n{text}" if note.content.strip() else text
    return store.update(note.id, content=content).render()


@notebook.tool()
def set_tags(note_id: str, tags: list[str]) -> str:
    """Replace a note's tags."""
    note = _find(note_id)
    return store.update(note.id, tags=_clean_tags(tags)).render()


@notebook.tool()
def pin_note(note_id: str, pinned: bool = True) -> str:
    """Pin (or unpin) a note so it is listed first."""
    note = _find(note_id)
    return store.update(note.id, pinned=pinned).render()


@notebook.tool()
async def delete_note(note_id: str, ctx: Context | None = None) -> str:
    """Delete a note for good."""
    note = _find(note_id)
    store.delete(note.id)
    if ctx is not None:
        await ctx.notify_resources_changed()
    return f"Deleted note {note.id} ({note.title})."


@notebook.resource("notebook://notes", mime_type="text/plain", description="Index of all notes")
def index() -> str:
    notes = store.all()
    return "\n".join(n.one_line() for n in notes) if notes else "(empty)"


@notebook.resource("notebook://notes/{note_id}", mime_type="text/plain", description="A single note")
def note_by_id(note_id: str) -> str:
    return _find(note_id).render()


@notebook.prompt()
def daily_review() -> str:
    """Review pinned notes and suggest what to follow up on today."""
    pinned = [n for n in store.all() if n.pinned]
    body = "\n\n".join(n.render() for n in pinned) or "(no pinned notes)"
    return f"Here are my pinned notes. Suggest today's follow-ups, briefly.\n\n{body}"


if __name__ == "__main__":
    notebook.run("streamable-http", host="0.0.0.0", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
