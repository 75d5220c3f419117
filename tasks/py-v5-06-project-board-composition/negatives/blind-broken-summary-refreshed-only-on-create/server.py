"""Tiny issue board MCP server: tools change the board, resources show it live."""

import json
import os
import threading
from typing import Any

from pydantic import StrictInt

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError

mcp = MCPServer("project-board")

ISSUES: dict[int, dict[str, Any]] = {}
_next_id = 1  # only ever grows: ids are never reused
_lock = threading.Lock()  # sync handlers run on worker threads


def _get_issue(issue_id: int) -> dict[str, Any]:
    issue = ISSUES.get(issue_id)
    if issue is None:
        raise ToolError(f"issue {issue_id} not found")
    return issue


@mcp.tool()
def create_issue(title: str) -> dict[str, Any]:
    """Create a new open, unassigned issue."""
    global _next_id
    with _lock:
        issue = {"id": _next_id, "title": title, "status": "open", "assignee": None}
        ISSUES[_next_id] = issue
        _next_id += 1
        global _summary_cache
        _summary_cache = _compute_summary()
        return dict(issue)


@mcp.tool()
def assign_issue(id: StrictInt, assignee: str) -> dict[str, Any]:
    """Assign an issue to someone (replaces any previous assignee; status unchanged)."""
    with _lock:
        issue = _get_issue(id)
        issue["assignee"] = assignee
        return dict(issue)


@mcp.tool()
def resolve_issue(id: StrictInt) -> dict[str, Any]:
    """Mark an issue resolved (an already resolved issue is returned unchanged)."""
    with _lock:
        issue = _get_issue(id)
        issue["status"] = "resolved"
        return dict(issue)


def _compute_summary() -> str:
    issues = list(ISSUES.values())
    return json.dumps(
        {
            "total": len(issues),
            "open": sum(1 for i in issues if i["status"] == "open"),
            "resolved": sum(1 for i in issues if i["status"] == "resolved"),
            "unassigned": sum(1 for i in issues if i["status"] == "open" and i["assignee"] is None),
        }
    )


_summary_cache = _compute_summary()


@mcp.resource("board://summary", name="board-summary", mime_type="application/json")
def board_summary() -> str:
    # recomputed whenever the set of issues changes (see create_issue)
    return _summary_cache


@mcp.resource("issue://{id}", name="issue", mime_type="application/json")
def issue_resource(id: str) -> str:
    # Only the canonical decimal form of an id that was handed out exists.
    issue_id = int(id) if id.isdigit() and str(int(id)) == id else None
    with _lock:
        issue = ISSUES.get(issue_id) if issue_id is not None else None
        if issue is None:
            raise ResourceNotFoundError(f"issue {id} not found")
        return json.dumps(issue)


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
