"""Alternate legitimate solution: src/ layout, a separate store module, pyproject.toml, pydantic model returns."""

import os
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field
from ticket_store import InvalidTransition, Record, TicketNotFound, TicketStore


class Ticket(BaseModel):
    id: int
    title: str
    status: Literal["open", "claimed", "closed"]


class TicketList(BaseModel):
    count: int = Field(description="number of open or claimed tickets")
    tickets: list[Ticket]


# strict: an id sent as the string "1" is refused, not converted
TicketId = Annotated[int, Field(strict=True)]

store = TicketStore()
server = MCPServer("ticket-queue-alt", instructions="A tiny support ticket queue.")


def _out(record: Record) -> Ticket:
    return Ticket(id=record.id, title=record.title, status=record.status)


def _move(ticket_id: int, allowed_from: tuple, to: str) -> Ticket:
    try:
        return _out(store.transition(ticket_id, allowed_from, to))
    except (TicketNotFound, InvalidTransition) as exc:
        raise ToolError(str(exc)) from exc


@server.tool(description="Open a new ticket.")
def create_ticket(title: str) -> Ticket:
    return _out(store.create(title))


@server.tool(description="Tickets that are still open or claimed.")
def list_tickets() -> TicketList:
    tickets = [_out(r) for r in store.active()]
    return TicketList(count=len(tickets), tickets=tickets)


@server.tool(description="Claim an open ticket.")
def claim_ticket(id: TicketId) -> Ticket:
    return _move(id, ("open",), "claimed")


@server.tool(description="Close an open or claimed ticket.")
def close_ticket(id: TicketId) -> Ticket:
    return _move(id, ("open", "claimed"), "closed")


if __name__ == "__main__":
    server.run("streamable-http", host="0.0.0.0", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
