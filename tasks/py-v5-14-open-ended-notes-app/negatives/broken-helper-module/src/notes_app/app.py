"""The MCP surface: the SDK import lives here, not in the entry file."""

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from notes_app.store import Note, NoteStore

store = NoteStore()
app = MCPServer("file-notes")


@app.tool()
def write_note(text: str) -> Note:
    """Save a new note."""
    notes = store.load()
    note = Note(id=max((n.id for n in notes), default=0) + 1, text=text)
    store.save([*notes, note])
    return note


@app.tool()
def pin_note(id: int) -> Note:
    """Pin a note so it is listed first."""
    notes = store.load()
    for note in notes:
        if note.id == id:
            note.pinned = True
            store.save(notes)
            return note
    raise ToolError(f"note {id} not found")


@app.resource("notes://all", mime_type="application/json")
def all_notes() -> str:
    notes = sorted(store.load(), key=lambda n: (not n.pinned, n.id))
    return "[" + ",".join(n.model_dump_json() for n in notes) + "]"
