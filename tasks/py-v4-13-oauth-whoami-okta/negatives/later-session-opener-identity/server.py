"""Negative: a hand-written resource-server layer that remembers the user when a session opens (a request
without Mcp-Session-Id) in one server-wide variable, and whoami answers that: right while each session is asked
right after it opens, wrong for an older session once another user has opened one."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

import jwt
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

PORT = int(os.environ["PORT"])
ISSUER = os.environ["OAUTH_ISSUER_URL"]
JWKS_URL = os.environ["OAUTH_JWKS_URL"]
AUDIENCE = os.environ["OAUTH_AUDIENCE"]
RESOURCE = f"http://127.0.0.1:{PORT}/mcp"
PRM_PATH = "/.well-known/oauth-protected-resource/mcp"

jwks_client = jwt.PyJWKClient(JWKS_URL)
session_user: dict[str, Any] = {}  # the user who opened the latest session


def validate(token: str) -> dict[str, Any]:
    signing_key = jwks_client.get_signing_key_from_jwt(token)
    return jwt.decode(
        token,
        signing_key.key,
        algorithms=["RS256"],
        audience=AUDIENCE,
        issuer=ISSUER,
        options={"require": ["exp", "iat", "iss", "aud", "sub", "uid"]},
    )


mcp = MCPServer("whoami-okta")


@mcp.tool(name="whoami")
def whoami() -> str:
    """Return the calling user's Okta id, email and name as JSON text."""
    claims = session_user or None
    if claims is None:
        raise ToolError("not authenticated")
    identity = {"id": claims["uid"], "email": claims["sub"], "name": claims.get("name")}
    return json.dumps(identity)


class RequireOktaToken:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        claims = None
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                text = value.decode("latin-1")
                if text[:7].lower() == "bearer ":
                    try:
                        claims = validate(text[7:].strip())
                    except Exception:
                        claims = None
                break
        if claims is None:
            response = JSONResponse(
                {"error": "invalid_token", "error_description": "missing or invalid access token"},
                status_code=401,
                headers={
                    "WWW-Authenticate": (
                        f'Bearer realm="mcp", error="invalid_token", '
                        f'resource_metadata="http://127.0.0.1:{PORT}{PRM_PATH}"'
                    )
                },
            )
            await response(scope, receive, send)
            return
        if b"mcp-session-id" not in dict(scope["headers"]):  # a new session: remember who opened it
            session_user.clear()
            session_user.update(claims)
        await self.app(scope, receive, send)


async def prm(request: Request) -> JSONResponse:
    return JSONResponse(
        {
            "resource": RESOURCE,
            "authorization_servers": [ISSUER],
            "bearer_methods_supported": ["header"],
            "resource_name": "whoami (Okta)",
        }
    )


mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp")
guarded = RequireOktaToken(mcp_app)

@contextlib.asynccontextmanager
async def lifespan(app: Starlette):
    async with mcp.session_manager.run():
        yield


app = Starlette(
    routes=[
        Route(PRM_PATH, prm, methods=["GET"]),
        Route("/.well-known/oauth-protected-resource", prm, methods=["GET"]),
        Route("/mcp", guarded),
    ],
    lifespan=lifespan,
)

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT)
