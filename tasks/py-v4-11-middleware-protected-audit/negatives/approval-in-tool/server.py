"""Approval and audit done inside the tools (no protocol middleware)."""

import functools
import os
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

APPROVAL_CODE = "APPROVE-DELETE"
RECORDS: dict[str, str] = {
    "R-1": "Quarterly budget",
    "R-2": "Vendor contract",
    "R-3": "Onboarding checklist",
}
AUDIT: list[str] = []

mcp = MCPServer("records")


def audited(fn):
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if fn.__name__ == "delete_record" and kwargs.get("approvalCode") != APPROVAL_CODE:
            AUDIT.append(f"{len(AUDIT) + 1}|{fn.__name__}|denied")
            raise ToolError("approval required to call delete_record")
        AUDIT.append(f"{len(AUDIT) + 1}|{fn.__name__}|allowed")
        return fn(*args, **kwargs)

    return wrapper


def _record(record_id: str) -> dict[str, str]:
    if record_id not in RECORDS:
        raise ToolError(f"record {record_id} not found")
    return {"id": record_id, "title": RECORDS[record_id]}


@mcp.tool()
@audited
def list_records() -> dict[str, Any]:
    """All records, ordered by id, with their count."""
    records = [{"id": rid, "title": title} for rid, title in sorted(RECORDS.items())]
    return {"count": len(records), "records": records}


@mcp.tool()
@audited
def read_record(id: str) -> dict[str, str]:
    """One record."""
    return _record(id)


@mcp.tool()
@audited
def delete_record(id: str, approvalCode: str) -> dict[str, Any]:
    """Delete a record with an approval code."""
    _record(id)
    del RECORDS[id]
    return {"id": id, "deleted": True}


@mcp.resource("audit://events", mime_type="text/plain")
def audit_events() -> str:
    return "\n".join(AUDIT)


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
