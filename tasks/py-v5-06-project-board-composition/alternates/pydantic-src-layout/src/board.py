"""The board state, kept apart from the MCP wiring."""

from typing import Literal

from pydantic import BaseModel


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


class Board:
    def __init__(self) -> None:
        self._issues: dict[int, Issue] = {}
        self._next_id = 1

    def create(self, title: str) -> Issue:
        issue = Issue(id=self._next_id, title=title)
        self._issues[issue.id] = issue
        self._next_id += 1
        return issue

    def get(self, issue_id: int) -> Issue | None:
        return self._issues.get(issue_id)

    def summary(self) -> Summary:
        issues = list(self._issues.values())
        return Summary(
            total=len(issues),
            open=sum(i.status == "open" for i in issues),
            resolved=sum(i.status == "resolved" for i in issues),
            unassigned=sum(i.status == "open" and i.assignee is None for i in issues),
        )
