"""Alternate legitimate solution: async tools returning JSON strings (structured content {"result": "<json>"}),
an asyncio lock around a state object, and idempotent close of a closed ticket."""

import asyncio
import json
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import StrictInt


class Queue:
    def __init__(self) -> None:
        self.tickets: list[dict] = []
        self.lock = asyncio.Lock()

    def find(self, ticket_id: int) -> dict:
        for ticket in self.tickets:
            if ticket["id"] == ticket_id:
                return ticket
        raise ToolError(f"No ticket with id {ticket_id}: not found")


queue = Queue()
app = MCPServer(name="queue")


@app.tool(name="create_ticket")
async def create(title: str) -> str:
    async with queue.lock:
        ticket = {"id": len(queue.tickets) + 1, "title": title, "status": "open"}
        queue.tickets.append(ticket)
    return json.dumps(ticket)


@app.tool(name="list_tickets")
async def list_all() -> str:
    async with queue.lock:
        active = [t for t in queue.tickets if t["status"] in ("open", "claimed")]
    return json.dumps({"tickets": active, "count": len(active)})


@app.tool(name="claim_ticket")
async def claim(id: StrictInt) -> str:
    async with queue.lock:
        ticket = queue.find(id)
        if ticket["status"] != "open":
            raise ToolError(f"ticket {id} cannot be claimed (status: {ticket['status']})")
        ticket["status"] = "claimed"
    return json.dumps(ticket)


@app.tool(name="close_ticket")
async def close(id: StrictInt) -> str:
    async with queue.lock:
        ticket = queue.find(id)
        ticket["status"] = "closed"  # closing a closed ticket leaves it closed
    return json.dumps(ticket)


if __name__ == "__main__":
    app.run("streamable-http", host="127.0.0.1", port=int(os.environ.get("PORT", "8000")), streamable_http_path="/mcp")
