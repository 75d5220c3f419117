"""`mcp-evals serve`: our own MCP server on the official `mcp` SDK (MCPServer), over stdio or Streamable HTTP.

Over HTTP it listens on loopback only and refuses every request without `Authorization: Bearer <token>` (401): the
token is MCP_EVALS_SERVE_TOKEN, or one generated at start and printed to stderr once. stdout is the protocol's over
stdio: nothing else is ever printed there.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import sys

from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_evals_pipeline.serve import TOKEN_ENV, authoring_tools, readonly_tools

HOST = "127.0.0.1"  # loopback only: the server writes tasks and runs the grader for whoever reaches it
INSTRUCTIONS = """\
mcp-evals: author evaluation tasks through the grader's gate, and read the results.
Authoring: describe_task_schema, then create_draft -> revise_draft -> run_check -> submit_draft (the prompt
author_task walks through it). A draft lives under the drafts area until submit_draft's gate lands it in tasks/;
a submitted task is frozen (a change is a new id)."""


def build_server() -> MCPServer:
    server = MCPServer("mcp-evals", instructions=INSTRUCTIONS)
    authoring_tools.register(server)
    readonly_tools.register(server)
    return server


class BearerGate:
    """ASGI middleware: an HTTP request without exactly `Authorization: Bearer <token>` gets 401 and never reaches
    the MCP app (compared in constant time)."""

    def __init__(self, app: ASGIApp, token: str):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
            if not hmac.compare_digest(given, self.expected):
                body = json.dumps({"error": "unauthorized",
                                   "error_description": f"send Authorization: Bearer <token> ({TOKEN_ENV})"}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b'Bearer realm="mcp-evals"'),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve_token() -> str:
    """MCP_EVALS_SERVE_TOKEN, or a fresh one printed to stderr once (never to stdout)."""
    token = os.environ.get(TOKEN_ENV, "").strip()
    if token:
        return token
    token = secrets.token_urlsafe(32)
    print(f"mcp-evals serve: no {TOKEN_ENV} set; this run's bearer token is {token}", file=sys.stderr, flush=True)
    return token


def run_stdio() -> None:
    build_server().run("stdio")


def run_http(port: int) -> None:
    import uvicorn

    token = serve_token()
    server = build_server()
    app = BearerGate(server.streamable_http_app(host=HOST), token)
    print(f"mcp-evals serve: Streamable HTTP at http://{HOST}:{port}/mcp", file=sys.stderr, flush=True)
    uvicorn.run(app, host=HOST, port=port, log_level="warning")
