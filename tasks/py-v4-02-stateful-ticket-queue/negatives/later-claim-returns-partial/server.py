"""Negative: claim_ticket returns only the fields it changed ({id, status}), not the ticket."""

import os
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import StrictInt

mcp = MCPServer("ticket-queue")

# Shared by every call for the life of the process.
_tickets: dict[int, dict[str, Any]] = {}
_next_id = 1


def _get(ticket_id: int) -> dict[str, Any]:
    ticket = _tickets.get(ticket_id)
    if ticket is None:
        raise ToolError(f"ticket {ticket_id} not found")
    return ticket


@mcp.tool()
def create_ticket(title: str) -> dict[str, Any]:
    """Create a new open ticket and return it."""
    global _next_id
    ticket = {"id": _next_id, "title": title, "status": "open"}
    _tickets[_next_id] = ticket
    _next_id += 1
    return dict(ticket)


@mcp.tool()
def list_tickets() -> dict[str, Any]:
    """List the tickets that are not closed, ordered by id, with their count."""
    active = [dict(t) for _, t in sorted(_tickets.items()) if t["status"] != "closed"]
    return {"count": len(active), "tickets": active}


@mcp.tool()
def claim_ticket(id: StrictInt) -> dict[str, Any]:
    """Claim an open ticket."""
    ticket = _get(id)
    if ticket["status"] != "open":
        raise ToolError(f"ticket {id} is {ticket['status']}, only open tickets can be claimed")
    ticket["status"] = "claimed"
    return {"id": ticket["id"], "status": ticket["status"]}


@mcp.tool()
def close_ticket(id: StrictInt) -> dict[str, Any]:
    """Close an open or claimed ticket."""
    ticket = _get(id)
    if ticket["status"] == "closed":
        raise ToolError(f"ticket {id} is already closed")
    ticket["status"] = "closed"
    return dict(ticket)


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
