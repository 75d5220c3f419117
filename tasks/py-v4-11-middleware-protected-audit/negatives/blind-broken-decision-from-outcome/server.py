"""Records MCP server with an approval gate and an audit log as protocol middleware (class style)."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent


class RecordStore:
    def __init__(self, initial: dict[str, str]) -> None:
        self._titles = dict(initial)

    def all(self) -> list[dict[str, str]]:
        return [{"id": rid, "title": self._titles[rid]} for rid in sorted(self._titles)]

    def get(self, rid: str) -> dict[str, str]:
        try:
            return {"id": rid, "title": self._titles[rid]}
        except KeyError:
            raise ToolError(f"record {rid} not found") from None

    def delete(self, rid: str) -> None:
        if self._titles.pop(rid, None) is None:
            raise ToolError(f"record {rid} not found")


class AuditLog:
    def __init__(self) -> None:
        self._entries: list[str] = []
        self._lock = threading.Lock()

    def record(self, tool: str, decision: str) -> None:
        with self._lock:
            self._entries.append(f"{len(self._entries) + 1}|{tool}|{decision}")

    def render(self) -> str:
        with self._lock:
            return "\n".join(self._entries)


class ApprovalGate:
    """Protocol middleware: audits every tools/call and refuses unapproved deletes."""

    def __init__(self, audit: AuditLog, guarded: dict[str, tuple[str, str]]) -> None:
        self.audit = audit
        # tool name -> (argument name, required exact value)
        self.guarded = guarded

    def decide(self, tool: str, arguments: Any) -> str:
        rule = self.guarded.get(tool)
        if rule is None:
            return "allowed"
        arg_name, expected = rule
        value = arguments.get(arg_name) if isinstance(arguments, dict) else None
        return "allowed" if value == expected and type(value) is str else "denied"

    async def __call__(self, ctx, call_next):
        if ctx.method != "tools/call":
            return await call_next(ctx)
        params = ctx.params or {}
        tool = str(params.get("name", ""))
        decision = self.decide(tool, params.get("arguments"))
        if decision == "denied":
            self.audit.record(tool, decision)
            return CallToolResult(
                content=[TextContent(type="text", text=f"approval required to call {tool}")], is_error=True
            )
        result = await call_next(ctx)
        failed = isinstance(result, dict) and result.get("isError") is True
        self.audit.record(tool, "denied" if failed else "allowed")
        return result


store = RecordStore({"R-1": "Quarterly budget", "R-2": "Vendor contract", "R-3": "Onboarding checklist"})
audit = AuditLog()

app = MCPServer("records-audit")
app.middleware.append(ApprovalGate(audit, {"delete_record": ("approvalCode", "APPROVE-DELETE")}))


def _text(payload: dict[str, Any]) -> str:
    return json.dumps(payload)


@app.tool(structured_output=False)
def list_records() -> str:
    """List existing records, ordered by id."""
    records = store.all()
    return _text({"count": len(records), "records": records})


@app.tool(structured_output=False)
def read_record(id: str) -> str:
    """Return one record by its id."""
    return _text(store.get(id))


@app.tool(structured_output=False)
def delete_record(id: str, approvalCode: str) -> str:
    """Delete a record for good. The approval code is verified before this runs."""
    store.delete(id)
    return _text({"id": id, "deleted": True})


@app.resource("audit://events", mime_type="text/plain", title="Tool call audit trail")
def audit_events() -> str:
    return audit.render()


if __name__ == "__main__":
    app.run("streamable-http", host="0.0.0.0", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
