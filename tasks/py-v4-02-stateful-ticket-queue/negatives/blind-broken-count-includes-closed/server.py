"""Stateful support-ticket queue as an MCP server (MCPServer high-level API)."""

import os
import threading
from typing import Any

from pydantic import StrictInt

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

mcp = MCPServer("ticket-queue")

# id -> ticket; ids come from a counter that only ever grows, so a closed
# ticket's id is never handed out again.
TICKETS: dict[int, dict[str, Any]] = {}
_last_id = 0
# sync tools run on worker threads: serialise every read-modify-write.
_lock = threading.Lock()


def _find(ticket_id: int) -> dict[str, Any]:
    ticket = TICKETS.get(ticket_id)
    if ticket is None:
        raise ToolError(f"ticket {ticket_id} not found")
    return ticket


@mcp.tool()
def create_ticket(title: str) -> dict[str, Any]:
    """Create a new open ticket and return it."""
    global _last_id
    with _lock:
        _last_id += 1
        ticket = {"id": _last_id, "title": title, "status": "open"}
        TICKETS[_last_id] = ticket
        return dict(ticket)


@mcp.tool()
def list_tickets() -> dict[str, Any]:
    """List the tickets that are not closed, ordered by id."""
    with _lock:
        active = [dict(TICKETS[i]) for i in sorted(TICKETS) if TICKETS[i]["status"] != "closed"]
    return {"count": len(TICKETS), "tickets": active}


@mcp.tool()
def claim_ticket(id: StrictInt) -> dict[str, Any]:
    """Claim an open ticket."""
    with _lock:
        ticket = _find(id)
        if ticket["status"] != "open":
            raise ToolError(f"ticket {id} cannot be claimed: it is {ticket['status']}")
        ticket["status"] = "claimed"
        return dict(ticket)


@mcp.tool()
def close_ticket(id: StrictInt) -> dict[str, Any]:
    """Close an open or claimed ticket (closing a closed ticket returns it unchanged)."""
    with _lock:
        ticket = _find(id)
        ticket["status"] = "closed"
        return dict(ticket)


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
