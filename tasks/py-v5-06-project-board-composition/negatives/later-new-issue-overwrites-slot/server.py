"""Negative: create_issue numbers issues from a counter but stores each under (open issues + 1), so a slot is reused once one is resolved."""

import json
import os
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import StrictInt

mcp = MCPServer("project-board")

# The one board, shared by every tool call and resource read for the life of the process.
_issues: dict[int, dict[str, Any]] = {}
_next_id = 1


def _find(issue_id: int) -> dict[str, Any] | None:
    return _issues.get(issue_id)


def _require(issue_id: int) -> dict[str, Any]:
    issue = _find(issue_id)
    if issue is None:
        raise ToolError(f"issue {issue_id} not found")
    return issue


@mcp.tool()
def create_issue(title: str) -> dict[str, Any]:
    """Create a new open, unassigned issue and return it."""
    global _next_id
    issue_id = _next_id
    _next_id += 1
    issue = {"id": issue_id, "title": title, "status": "open", "assignee": None}
    slot = sum(1 for i in _issues.values() if i["status"] == "open") + 1
    _issues[slot] = issue
    return dict(issue)


@mcp.tool()
def assign_issue(id: StrictInt, assignee: str) -> dict[str, Any]:
    """Assign an issue to someone (replacing any previous assignee)."""
    issue = _require(id)
    issue["assignee"] = assignee
    return dict(issue)


@mcp.tool()
def resolve_issue(id: StrictInt) -> dict[str, Any]:
    """Mark an issue resolved."""
    issue = _require(id)
    issue["status"] = "resolved"
    return dict(issue)


@mcp.resource("board://summary", mime_type="application/json", description="Issue counts, computed on each read")
def board_summary() -> str:
    issues = list(_issues.values())
    open_issues = [i for i in issues if i["status"] == "open"]
    return json.dumps(
        {
            "total": len(issues),
            "open": len(open_issues),
            "resolved": sum(1 for i in issues if i["status"] == "resolved"),
            "unassigned": sum(1 for i in open_issues if i["assignee"] is None),
        }
    )


@mcp.resource("issue://{id}", mime_type="application/json", description="One issue as JSON")
def issue_resource(id: str) -> str:
    issue = _find(int(id)) if id.isdigit() else None
    if issue is None:
        raise ResourceError(f"issue {id} not found")
    return json.dumps(issue)


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
