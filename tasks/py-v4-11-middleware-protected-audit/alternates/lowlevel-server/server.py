"""Alternate legitimate solution: the low-level Server with hand-written handlers; the approval gate and the
audit trail are middleware on server.middleware, served by uvicorn."""

import json
import os

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server

RECORDS = {"R-1": "Quarterly budget", "R-2": "Vendor contract", "R-3": "Onboarding checklist"}
EVENTS: list[str] = []

TOOLS = [
    types.Tool(name="list_records", description="List records", input_schema={"type": "object", "properties": {}}),
    types.Tool(
        name="read_record",
        description="Read a record",
        input_schema={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    ),
    types.Tool(
        name="delete_record",
        description="Delete a record (needs approval)",
        input_schema={
            "type": "object",
            "properties": {"id": {"type": "string"}, "approvalCode": {"type": "string"}},
            "required": ["id", "approvalCode"],
        },
    ),
]


def text_result(payload: object, error: bool = False) -> types.CallToolResult:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


async def gate(ctx, call_next):
    if ctx.method == "tools/call":
        params = ctx.params or {}
        name = params.get("name")
        approved = name != "delete_record" or (params.get("arguments") or {}).get("approvalCode") == "APPROVE-DELETE"
        EVENTS.append(f"{len(EVENTS) + 1}|{name}|{'allowed' if approved else 'denied'}")
        if not approved:
            return text_result("approval required (approvalCode rejected)", error=True)
    return await call_next(ctx)


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "list_records":
        return text_result({"count": len(RECORDS), "records": [{"id": k, "title": RECORDS[k]} for k in sorted(RECORDS)]})
    if params.name in ("read_record", "delete_record"):
        record_id = args.get("id")
        if record_id not in RECORDS:
            return text_result(f"record {record_id} not found", error=True)
        if params.name == "read_record":
            return text_result({"id": record_id, "title": RECORDS[record_id]})
        del RECORDS[record_id]
        return text_result({"id": record_id, "deleted": True})
    return text_result(f"Unknown tool: {params.name}", error=True)


async def list_resources(ctx, params) -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=[types.Resource(uri="audit://events", name="audit-events", mime_type="text/plain")]
    )


async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=str(params.uri), mime_type="text/plain", text="\n".join(EVENTS))]
    )


server = Server(
    "records-lowlevel",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_read_resource=read_resource,
)
server.middleware.append(gate)

if __name__ == "__main__":
    app = server.streamable_http_app(streamable_http_path="/mcp", host="0.0.0.0")
    uvicorn.run(app, host="0.0.0.0", port=int(os.environ["PORT"]), log_level="warning")
