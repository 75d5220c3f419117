"""Alternate legitimate solution: the low-level Server API with hand-written handlers over a Board object,
served by uvicorn. Tool results carry JSON text plus structuredContent; unknown issues in a resource read raise
MCPError with the spec's resource-not-found code."""

import json
import os
import re
from dataclasses import asdict, dataclass, field

import mcp_types as types
import uvicorn
from mcp import MCPError
from mcp.server.lowlevel import Server

RESOURCE_NOT_FOUND = -32002
ISSUE_URI = re.compile(r"^issue://(?P<id>[^/]+)$")


@dataclass
class Issue:
    id: int
    title: str
    status: str = "open"
    assignee: str | None = None


@dataclass
class Board:
    issues: list[Issue] = field(default_factory=list)

    def get(self, issue_id: int) -> Issue | None:
        return next((i for i in self.issues if i.id == issue_id), None)

    def summary(self) -> dict[str, int]:
        still_open = [i for i in self.issues if i.status == "open"]
        return {
            "total": len(self.issues),
            "open": len(still_open),
            "resolved": len(self.issues) - len(still_open),
            "unassigned": len([i for i in still_open if not i.assignee]),
        }


BOARD = Board()

TOOLS = [
    types.Tool(
        name="create_issue",
        description="Create an open, unassigned issue",
        input_schema={"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
    ),
    types.Tool(
        name="assign_issue",
        description="Assign an issue to someone",
        input_schema={
            "type": "object",
            "properties": {"id": {"type": "integer"}, "assignee": {"type": "string"}},
            "required": ["id", "assignee"],
        },
    ),
    types.Tool(
        name="resolve_issue",
        description="Resolve an issue",
        input_schema={"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
    ),
]


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


def _ok(issue: Issue) -> types.CallToolResult:
    payload = asdict(issue)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload))], structured_content=payload
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "create_issue":
        if not isinstance(args.get("title"), str):
            return _error("title must be a string")
        issue = Issue(id=len(BOARD.issues) + 1, title=args["title"])
        BOARD.issues.append(issue)
        return _ok(issue)
    if params.name in ("assign_issue", "resolve_issue"):
        issue_id = args.get("id")
        if isinstance(issue_id, bool) or not isinstance(issue_id, int):
            return _error("id must be an integer")
        issue = BOARD.get(issue_id)
        if issue is None:
            return _error(f"Issue #{issue_id} not found on the board")
        if params.name == "assign_issue":
            if not isinstance(args.get("assignee"), str):
                return _error("assignee must be a string")
            issue.assignee = args["assignee"]
        else:
            issue.status = "resolved"
        return _ok(issue)
    return _error(f"Unknown tool: {params.name}")


async def list_resources(ctx, params) -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=[types.Resource(uri="board://summary", name="board-summary", mime_type="application/json")]
    )


async def list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(
        resource_templates=[
            types.ResourceTemplate(uri_template="issue://{id}", name="issue", mime_type="application/json")
        ]
    )


def _json(uri: str, payload: object) -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(payload))]
    )


async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == "board://summary":
        return _json(uri, BOARD.summary())
    match = ISSUE_URI.match(uri)
    issue = BOARD.get(int(match["id"])) if match and match["id"].isdigit() else None
    if issue is None:
        raise MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
    return _json(uri, asdict(issue))


server = Server(
    "board-lowlevel",
    version="1.0.0",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_list_resource_templates=list_resource_templates,
    on_read_resource=read_resource,
)

if __name__ == "__main__":
    app = server.streamable_http_app(streamable_http_path="/mcp", host="0.0.0.0")
    uvicorn.run(app, host="0.0.0.0", port=int(os.environ["PORT"]), log_level="warning")
