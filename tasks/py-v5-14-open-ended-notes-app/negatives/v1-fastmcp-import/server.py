"""Notes server in the mcp 1.x style (FastMCP)."""

import os

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("notes", host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))
NOTES: list[str] = []


@mcp.tool()
def add_note(text: str) -> str:
    """Add a note."""
    NOTES.append(text)
    return f"added note {len(NOTES)}"


@mcp.tool()
def list_notes() -> list[str]:
    """All notes."""
    return NOTES


if __name__ == "__main__":
    mcp.run(transport="streamable-http")
