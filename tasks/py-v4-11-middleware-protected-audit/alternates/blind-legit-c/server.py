"""Records server on the SDK's low-level `Server`, with approval + audit as protocol middleware."""

from __future__ import annotations

import json
import os
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

records: dict[str, str] = {"R-1": "Quarterly budget", "R-2": "Vendor contract", "R-3": "Onboarding checklist"}
trail: list[str] = []

AUDIT_URI = "audit://events"


def _schema(*names: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {n: {"type": "string"} for n in names},
        "required": list(names),
        "additionalProperties": False,
    }


TOOLS = [
    Tool(name="list_records", description="List existing records ordered by id.", input_schema=_schema()),
    Tool(name="read_record", description="Read a record by id.", input_schema=_schema("id")),
    Tool(
        name="delete_record",
        description="Delete a record. Needs approvalCode; checked by middleware.",
        input_schema=_schema("id", "approvalCode"),
    ),
]


def ok(payload: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload))], structured_content=payload)


def fail(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


async def on_list_tools(ctx, params) -> ListToolsResult:
    return ListToolsResult(tools=TOOLS)


async def on_call_tool(ctx, params) -> CallToolResult:
    args = params.arguments or {}
    if params.name == "list_records":
        items = [{"id": rid, "title": records[rid]} for rid in sorted(records)]
        return ok({"count": len(items), "records": items})
    if params.name == "read_record":
        rid = args.get("id")
        if rid not in records:
            return fail(f"record {rid} not found")
        return ok({"id": rid, "title": records[rid]})
    if params.name == "delete_record":
        rid = args.get("id")
        if rid not in records:
            return fail(f"record {rid} not found")
        del records[rid]
        return ok({"id": rid, "deleted": True})
    return fail(f"unknown tool {params.name}")


async def on_list_resources(ctx, params) -> ListResourcesResult:
    return ListResourcesResult(
        resources=[Resource(uri=AUDIT_URI, name="audit-events", mime_type="text/plain", description="Tool call audit")]
    )


async def on_read_resource(ctx, params) -> ReadResourceResult:
    if str(params.uri) != AUDIT_URI:
        raise ValueError(f"unknown resource {params.uri}")
    return ReadResourceResult(
        contents=[TextResourceContents(uri=AUDIT_URI, mime_type="text/plain", text="\n".join(trail))]
    )


async def audit_and_approve(ctx, call_next):
    """Protocol middleware: every tools/call is audited; unapproved deletes never reach the handler."""
    if ctx.method != "tools/call":
        return await call_next(ctx)
    params = ctx.params or {}
    name = params.get("name")
    arguments = params.get("arguments")
    approved = isinstance(arguments, dict) and arguments.get("approvalCode") == "APPROVE-DELETE"
    denied = name == "delete_record" and not approved
    trail.append(f"{len(trail) + 1}|{name}|{'denied' if denied else 'allowed'}")
    if denied:
        return fail("approval required to call delete_record")
    return await call_next(ctx)


server = Server(
    "records",
    on_list_tools=on_list_tools,
    on_call_tool=on_call_tool,
    on_list_resources=on_list_resources,
    on_read_resource=on_read_resource,
)
server.middleware.append(audit_and_approve)


if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(streamable_http_path="/mcp"), host="127.0.0.1", port=int(os.environ["PORT"]))
