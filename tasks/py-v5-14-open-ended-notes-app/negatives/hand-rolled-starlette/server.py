"""A notes 'MCP server' written by hand: JSON-RPC over a Starlette route, no SDK."""

import os

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

NOTES: list[dict] = []
TOOLS = [
    {
        "name": "add_note",
        "description": "Add a note",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {"name": "list_notes", "description": "List notes", "inputSchema": {"type": "object", "properties": {}}},
]


def _text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}]}


async def mcp_endpoint(request: Request) -> JSONResponse:
    message = await request.json()
    method, params, rid = message.get("method"), message.get("params") or {}, message.get("id")
    if method == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "notes", "version": "0.1"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") == "add_note":
        NOTES.append({"id": len(NOTES) + 1, "text": params.get("arguments", {}).get("text", "")})
        result = _text(f"added note {len(NOTES)}")
    elif method == "tools/call" and params.get("name") == "list_notes":
        result = _text("\n".join(f"{n['id']}: {n['text']}" for n in NOTES))
    elif rid is None:
        return JSONResponse(None, status_code=202)
    else:
        return JSONResponse({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
    return JSONResponse({"jsonrpc": "2.0", "id": rid, "result": result})


app = Starlette(routes=[Route("/mcp", mcp_endpoint, methods=["POST"])])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]))
