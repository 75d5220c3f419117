"""Notes MCP server written directly against the SDK's low-level `Server`.

Explicit JSON schemas and a single dispatch table keep the wire surface obvious.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from typing import Any

import uvicorn
from mcp.server.lowlevel import Server
from mcp_types import (
    CallToolResult,
    ListResourcesResult,
    ListToolsResult,
    ReadResourceResult,
    Resource,
    TextContent,
    TextResourceContents,
    Tool,
)

NOTES: dict[int, dict[str, Any]] = {}
_next_id = 1


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _ok(data: Any) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(data))], structured_content=data)


def _err(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def add_note(args: dict[str, Any]) -> CallToolResult:
    global _next_id
    title = str(args.get("title", "")).strip()
    if not title:
        return _err("title is required")
    note = {
        "id": _next_id,
        "title": title,
        "body": str(args.get("body", "")),
        "tags": sorted({str(t).lower() for t in args.get("tags") or []}),
        "created": _now(),
    }
    NOTES[_next_id] = note
    _next_id += 1
    return _ok(note)


def list_notes(args: dict[str, Any]) -> CallToolResult:
    tag = args.get("tag")
    notes = [n for n in NOTES.values() if not tag or str(tag).lower() in n["tags"]]
    return _ok({"count": len(notes), "notes": notes})


def search_notes(args: dict[str, Any]) -> CallToolResult:
    q = str(args.get("query", "")).lower()
    hits = [n for n in NOTES.values() if q in n["title"].lower() or q in n["body"].lower()]
    return _ok({"count": len(hits), "notes": hits})


def delete_note(args: dict[str, Any]) -> CallToolResult:
    note_id = args.get("id")
    if note_id not in NOTES:
        return _err(f"note {note_id} not found")
    del NOTES[note_id]
    return _ok({"id": note_id, "deleted": True})


TOOLS: dict[str, tuple[Tool, Any]] = {
    "add_note": (
        Tool(
            name="add_note",
            description="Create a note.",
            input_schema={
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "body": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["title"],
            },
        ),
        add_note,
    ),
    "list_notes": (
        Tool(
            name="list_notes",
            description="List notes, optionally by tag.",
            input_schema={"type": "object", "properties": {"tag": {"type": "string"}}},
        ),
        list_notes,
    ),
    "search_notes": (
        Tool(
            name="search_notes",
            description="Case-insensitive text search.",
            input_schema={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        ),
        search_notes,
    ),
    "delete_note": (
        Tool(
            name="delete_note",
            description="Delete a note by numeric id.",
            input_schema={"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        ),
        delete_note,
    ),
}


async def on_list_tools(ctx, params) -> ListToolsResult:
    return ListToolsResult(tools=[tool for tool, _ in TOOLS.values()])


async def on_call_tool(ctx, params) -> CallToolResult:
    entry = TOOLS.get(params.name)
    if entry is None:
        return _err(f"unknown tool {params.name}")
    return entry[1](params.arguments or {})


async def on_list_resources(ctx, params) -> ListResourcesResult:
    return ListResourcesResult(
        resources=[Resource(uri="notes://index", name="notes-index", mime_type="text/plain")]
    )


async def on_read_resource(ctx, params) -> ReadResourceResult:
    lines = [f"{n['id']}. {n['title']}" for n in NOTES.values()] or ["(no notes)"]
    return ReadResourceResult(
        contents=[TextResourceContents(uri=str(params.uri), mime_type="text/plain", text="\n".join(lines))]
    )


server = Server(
    "notes",
    on_list_tools=on_list_tools,
    on_call_tool=on_call_tool,
    on_list_resources=on_list_resources,
    on_read_resource=on_read_resource,
)

if __name__ == "__main__":
    app = server.streamable_http_app(streamable_http_path="/mcp")
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]))
