"""Ticket queue MCP server on the low-level `mcp` Server API.

State lives in one TicketQueue instance; every tool call goes through it.
Results are JSON text content only; failures are `isError: true` results.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import asdict, dataclass
from typing import Any

import uvicorn

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server


class TicketError(Exception):
    """A failure reported to the client as a tool error."""


@dataclass
class Ticket:
    id: int
    title: str
    status: str = "open"


class TicketQueue:
    def __init__(self) -> None:
        self._tickets: dict[int, Ticket] = {}
        self._issued = 0  # highest id ever handed out; never goes down

    def create(self, title: str) -> Ticket:
        self._issued += 1
        ticket = Ticket(id=self._issued, title=title)
        self._tickets[ticket.id] = ticket
        return ticket

    def active(self) -> list[Ticket]:
        # waiting work first, then what is already being handled
        ordered = sorted(self._tickets.values(), key=lambda t: (t.status != "open", t.id))
        return [t for t in ordered if t.status != "closed"]

    def get(self, ticket_id: int) -> Ticket:
        try:
            return self._tickets[ticket_id]
        except KeyError:
            raise TicketError(f"ticket {ticket_id} not found") from None

    def claim(self, ticket_id: int) -> Ticket:
        ticket = self.get(ticket_id)
        if ticket.status != "open":
            raise TicketError(f"ticket {ticket_id} is {ticket.status}, only open tickets can be claimed")
        ticket.status = "claimed"
        return ticket

    def close(self, ticket_id: int) -> Ticket:
        ticket = self.get(ticket_id)
        if ticket.status == "closed":
            raise TicketError(f"ticket {ticket_id} is already closed")
        ticket.status = "closed"
        return ticket


QUEUE = TicketQueue()
LOCK = asyncio.Lock()

ID_SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "integer", "description": "ticket id"}},
    "required": ["id"],
    "additionalProperties": False,
}

TOOLS = [
    types.Tool(
        name="create_ticket",
        description="Create a new open ticket.",
        input_schema={
            "type": "object",
            "properties": {"title": {"type": "string", "description": "ticket title"}},
            "required": ["title"],
            "additionalProperties": False,
        },
    ),
    types.Tool(
        name="list_tickets",
        description="List tickets that are not closed, ordered by id.",
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
    ),
    types.Tool(name="claim_ticket", description="Claim an open ticket.", input_schema=ID_SCHEMA),
    types.Tool(name="close_ticket", description="Close an open or claimed ticket.", input_schema=ID_SCHEMA),
]


def _require(args: dict[str, Any], key: str, kind: type) -> Any:
    if key not in args:
        raise TicketError(f"missing required argument '{key}'")
    value = args[key]
    # `type(...) is` so that JSON true/false never pass as integers
    if type(value) is not kind:
        raise TicketError(f"argument '{key}' must be {'a string' if kind is str else 'an integer'}")
    return value


def _run(name: str, args: dict[str, Any]) -> Any:
    if name == "create_ticket":
        return asdict(QUEUE.create(_require(args, "title", str)))
    if name == "list_tickets":
        tickets = [asdict(t) for t in QUEUE.active()]
        return {"count": len(tickets), "tickets": tickets}
    if name == "claim_ticket":
        return asdict(QUEUE.claim(_require(args, "id", int)))
    if name == "close_ticket":
        return asdict(QUEUE.close(_require(args, "id", int)))
    raise TicketError(f"unknown tool: {name}")


def _text(payload: Any, is_error: bool = False) -> types.CallToolResult:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    async with LOCK:
        try:
            return _text(_run(params.name, params.arguments or {}))
        except TicketError as exc:
            return _text(str(exc), is_error=True)


server = Server("ticket-queue", on_list_tools=list_tools, on_call_tool=call_tool)

if __name__ == "__main__":
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
