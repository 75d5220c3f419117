"""Records server: approval check and audit trail live in the SDK's protocol middleware."""

import os
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

APPROVAL_CODE = "APPROVE-DELETE"
PROTECTED_TOOL = "delete_record"

RECORDS: dict[str, str] = {
    "R-1": "Quarterly budget",
    "R-2": "Vendor contract",
    "R-3": "Onboarding checklist",
}
AUDIT: list[tuple[str, str]] = []


def _is_approved(arguments: Any) -> bool:
    if not isinstance(arguments, dict):
        return False
    code = arguments.get("approvalCode")
    return isinstance(code, str) and code == APPROVAL_CODE


async def approval_and_audit(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    if ctx.method != "tools/call" or ctx.request_id is None:
        return await call_next(ctx)

    params = ctx.params or {}
    tool = params.get("name")
    tool = tool if isinstance(tool, str) else str(tool)
    denied = tool == PROTECTED_TOOL and not _is_approved(params.get("arguments"))
    AUDIT.append((tool, "denied" if denied else "allowed"))

    if denied:
        return CallToolResult(
            content=[TextContent(type="text", text=f"approval required to call {PROTECTED_TOOL}")],
            is_error=True,
        )
    return await call_next(ctx)


mcp = MCPServer("records", middleware=[approval_and_audit])


@mcp.tool()
def list_records() -> dict[str, Any]:
    """List the records that still exist, ordered by id."""
    records = [{"id": rid, "title": RECORDS[rid]} for rid in sorted(RECORDS)]
    return {"count": len(records), "records": records}


@mcp.tool()
def read_record(id: str) -> dict[str, Any]:
    """Read one record by id."""
    if id not in RECORDS:
        raise ToolError(f"record {id} not found")
    return {"id": id, "title": RECORDS[id]}


@mcp.tool()
def delete_record(id: str, approvalCode: str) -> dict[str, Any]:
    """Delete a record. Requires the approval code (checked by the server's middleware)."""
    if id not in RECORDS:
        raise ToolError(f"record {id} not found")
    del RECORDS[id]
    return {"id": id, "deleted": True}


@mcp.resource("audit://events", name="audit-events", mime_type="text/plain", description="Audit trail of tool calls")
def audit_events() -> str:
    return "\n".join(f"{n}|{tool}|{decision}" for n, (tool, decision) in enumerate(AUDIT, start=1))


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
