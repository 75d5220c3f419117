"""Alternate legitimate solution: a middleware object appended to mcp.middleware after construction, the
refusal returned as a plain dict, records as pydantic models, src layout with pyproject dependencies."""

import os

from audit import ApprovalGate, AuditTrail
from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError


class Record(BaseModel):
    id: str
    title: str


class RecordList(BaseModel):
    count: int
    records: list[Record]


class Deleted(BaseModel):
    id: str
    deleted: bool


store = {r.id: r for r in (Record(id="R-1", title="Quarterly budget"), Record(id="R-2", title="Vendor contract"),
                           Record(id="R-3", title="Onboarding checklist"))}
trail = AuditTrail()

app = MCPServer("records-audit")
app.middleware.append(ApprovalGate(trail, protected={"delete_record": "APPROVE-DELETE"}))


def lookup(record_id: str) -> Record:
    try:
        return store[record_id]
    except KeyError:
        raise ToolError(f"No record {record_id} (not found)") from None


@app.tool()
async def list_records() -> RecordList:
    records = [store[k] for k in sorted(store)]
    return RecordList(count=len(records), records=records)


@app.tool()
async def read_record(id: str) -> Record:
    return lookup(id)


@app.tool()
async def delete_record(id: str, approvalCode: str) -> Deleted:
    store.pop(lookup(id).id)
    return Deleted(id=id, deleted=True)


@app.resource("audit://events", name="audit-events", mime_type="text/plain")
async def audit_events() -> str:
    return trail.render()


if __name__ == "__main__":
    app.run("streamable-http", host="0.0.0.0", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
