"""Alternate legitimate solution: MCPServer with pydantic models, async handlers, an int-typed template
parameter, and the state in a module of its own (src layout, pyproject dependencies)."""

import os
from typing import Annotated

from board import Board, Issue
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import Field

# strict: an id sent as the string "1" is refused, not converted
IssueId = Annotated[int, Field(strict=True)]

board = Board()
app = MCPServer(name="board", instructions="A small issue board.")


def _existing(issue_id: int) -> Issue:
    issue = board.get(issue_id)
    if issue is None:
        raise ToolError(f"Issue {issue_id} was not found.")
    return issue


@app.tool(description="Create an issue")
async def create_issue(title: str) -> Issue:
    return board.create(title)


@app.tool(description="Assign an issue")
async def assign_issue(id: IssueId, assignee: str) -> Issue:
    issue = _existing(id)
    issue.assignee = assignee
    return issue


@app.tool(description="Resolve an issue")
async def resolve_issue(id: IssueId) -> Issue:
    issue = _existing(id)
    if issue.status == "resolved":
        raise ToolError(f"Issue {id} is already resolved")
    issue.status = "resolved"
    return issue


@app.resource("board://summary", name="summary", mime_type="application/json")
async def summary() -> str:
    return board.summary().model_dump_json()


@app.resource("issue://{id}", name="issue", mime_type="application/json")
async def issue(id: int) -> str:
    found = board.get(id)
    if found is None:
        raise ResourceError(f"Issue {id} not found")
    return found.model_dump_json()


if __name__ == "__main__":
    app.run("streamable-http", host="0.0.0.0", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
