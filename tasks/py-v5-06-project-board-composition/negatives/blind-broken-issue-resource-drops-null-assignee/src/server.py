"""Project board MCP server: a Board domain object wired into MCPServer.

Tools return pydantic `Issue` models (structured content + JSON text);
resources render the board's current state each time they are read.
"""

from __future__ import annotations

import asyncio
import os
from typing import Literal

from pydantic import BaseModel, StrictInt

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError


class Issue(BaseModel):
    id: int
    title: str
    status: Literal["open", "resolved"] = "open"
    assignee: str | None = None


class Summary(BaseModel):
    total: int
    open: int
    resolved: int
    unassigned: int


class IssueNotFound(LookupError):
    def __init__(self, issue_id: object) -> None:
        super().__init__(f"issue {issue_id} not found")


class Board:
    def __init__(self) -> None:
        self._issues: list[Issue] = []  # position i holds issue i+1; nothing is ever removed

    def create(self, title: str) -> Issue:
        issue = Issue(id=len(self._issues) + 1, title=title)
        self._issues.append(issue)
        return issue

    def get(self, issue_id: int) -> Issue:
        if 1 <= issue_id <= len(self._issues):
            return self._issues[issue_id - 1]
        raise IssueNotFound(issue_id)

    def assign(self, issue_id: int, assignee: str) -> Issue:
        issue = self.get(issue_id)
        issue.assignee = assignee
        return issue

    def resolve(self, issue_id: int) -> Issue:
        issue = self.get(issue_id)
        if issue.status == "resolved":
            raise ValueError(f"issue {issue_id} is already resolved")
        issue.status = "resolved"
        return issue

    def summary(self) -> Summary:
        open_issues = [i for i in self._issues if i.status == "open"]
        return Summary(
            total=len(self._issues),
            open=len(open_issues),
            resolved=sum(1 for i in self._issues if i.status == "resolved"),
            unassigned=sum(1 for i in open_issues if i.assignee is None),
        )


def build_server(board: Board) -> MCPServer:
    mcp = MCPServer("project-board")
    lock = asyncio.Lock()

    async def guarded(action, *args) -> Issue:
        async with lock:
            try:
                return action(*args).model_copy()
            except (LookupError, ValueError) as exc:
                raise ToolError(str(exc)) from None

    @mcp.tool(name="create_issue")
    async def create_issue(title: str) -> Issue:
        """Create a new open, unassigned issue."""
        return await guarded(board.create, title)

    @mcp.tool(name="assign_issue")
    async def assign_issue(id: StrictInt, assignee: str) -> Issue:
        """Set the assignee of an issue; its status does not change."""
        return await guarded(board.assign, id, assignee)

    @mcp.tool(name="resolve_issue")
    async def resolve_issue(id: StrictInt) -> Issue:
        """Resolve an issue (resolving a resolved issue is a tool error)."""
        return await guarded(board.resolve, id)

    @mcp.resource("board://summary", name="summary", title="Board summary", mime_type="application/json")
    async def summary() -> str:
        async with lock:
            return board.summary().model_dump_json()

    @mcp.resource("issue://{id}", name="issue", title="One issue", mime_type="application/json")
    async def issue(id: str) -> str:
        async with lock:
            try:
                if not (id.isascii() and id.isdigit()):
                    raise IssueNotFound(id)
                return board.get(int(id)).model_dump_json(exclude_none=True)
            except IssueNotFound as exc:
                raise ResourceNotFoundError(str(exc)) from None

    return mcp


if __name__ == "__main__":
    build_server(Board()).run(
        "streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp"
    )
