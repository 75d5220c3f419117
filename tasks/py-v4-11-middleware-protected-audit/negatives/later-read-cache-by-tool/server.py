"""Negative: the middleware also caches read_record's result, keyed by the tool name only (the arguments are
forgotten), so every read after the first answers the first record read."""

import os
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

APPROVAL_CODE = "APPROVE-DELETE"
PROTECTED_TOOLS = {"delete_record"}

RECORDS: dict[str, str] = {
    "R-1": "Quarterly budget",
    "R-2": "Vendor contract",
    "R-3": "Onboarding checklist",
}
AUDIT: list[str] = []
CACHED_TOOLS = {"read_record"}  # read-only and cheap to cache
CACHE: dict[str, HandlerResult] = {}


async def approval_and_audit(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Every tools/call is recorded; a protected tool without the approval code is refused before it runs."""
    if ctx.method != "tools/call":
        return await call_next(ctx)
    params = ctx.params or {}
    tool = params.get("name")
    arguments = params.get("arguments") or {}
    denied = tool in PROTECTED_TOOLS and arguments.get("approvalCode") != APPROVAL_CODE
    AUDIT.append(f"{len(AUDIT) + 1}|{tool}|{'denied' if denied else 'allowed'}")
    if denied:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"approval required to call {tool}")],
            is_error=True,
        )
    if tool in CACHED_TOOLS:
        if tool not in CACHE:
            CACHE[tool] = await call_next(ctx)
        return CACHE[tool]
    return await call_next(ctx)


mcp = MCPServer("records", middleware=[approval_and_audit])


def _record(record_id: str) -> dict[str, str]:
    if record_id not in RECORDS:
        raise ToolError(f"record {record_id} not found")
    return {"id": record_id, "title": RECORDS[record_id]}


@mcp.tool()
def list_records() -> dict[str, Any]:
    """All records, ordered by id, with their count."""
    records = [{"id": rid, "title": title} for rid, title in sorted(RECORDS.items())]
    return {"count": len(records), "records": records}


@mcp.tool()
def read_record(id: str) -> dict[str, str]:
    """One record."""
    return _record(id)


@mcp.tool()
def delete_record(id: str, approvalCode: str) -> dict[str, Any]:  # noqa: N803 - the wire name is pinned
    """Delete a record. Needs an approval code (checked by the server's middleware)."""
    _record(id)
    del RECORDS[id]
    return {"id": id, "deleted": True}


@mcp.resource("audit://events", mime_type="text/plain", description="One line per tool call: n|tool|decision")
def audit_events() -> str:
    return "\n".join(AUDIT)


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
