"""whoami MCP server protected by Clerk-issued OAuth access tokens.

Hand-rolled resource-server layer: an ASGI guard in front of the MCP app verifies the
bearer JWT (RS256, issuer, expiry) against the JWKS and answers 401 with a
WWW-Authenticate challenge pointing at the RFC 9728 metadata served below.
The verified claims ride in the ASGI scope, so the tool answers for the token of its own
HTTP request.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.request
from typing import Any

import jwt
import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

PORT = int(os.environ["PORT"])
ISSUER = os.environ["OAUTH_ISSUER_URL"]
JWKS_URL = os.environ["OAUTH_JWKS_URL"]
RESOURCE = f"http://127.0.0.1:{PORT}/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"
METADATA_URL = f"http://127.0.0.1:{PORT}{METADATA_PATH}"


class KeySet:
    """JWKS cache that refetches when a token names a key id it has not seen."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.keys: dict[str, Any] = {}
        self.lock = threading.Lock()

    def _refresh(self) -> None:
        with urllib.request.urlopen(self.url, timeout=10) as response:
            data = json.load(response)
        jwk_set = jwt.PyJWKSet.from_dict(data)
        self.keys = {k.key_id: k for k in jwk_set.keys}

    def key_for(self, kid: str | None) -> Any:
        with self.lock:
            if kid not in self.keys:
                self._refresh()
            if kid is None and len(self.keys) == 1:
                return next(iter(self.keys.values())).key
            if kid not in self.keys:
                raise jwt.InvalidTokenError("unknown signing key")
            return self.keys[kid].key


KEYS = KeySet(JWKS_URL)


def verify(token: str) -> dict[str, Any]:
    header = jwt.get_unverified_header(token)
    if header.get("alg") != "RS256":
        raise jwt.InvalidAlgorithmError("RS256 required")
    key = KEYS.key_for(header.get("kid"))
    return jwt.decode(
        token,
        key,
        algorithms=["RS256"],
        issuer=ISSUER,
        options={"require": ["exp", "iat", "iss", "sub"], "verify_aud": False},
    )


mcp = MCPServer("whoami-clerk")


@mcp.tool()
def whoami(ctx: Context) -> str:
    """Who am I? Returns the id, email and name from this request's access token."""
    request = ctx.request_context.request
    claims = request.scope.get("oauth_claims") if request is not None else None
    if not claims:
        raise ToolError("request carries no verified access token")
    return json.dumps({"id": claims["sub"], "email": claims.get("email"), "name": claims.get("name")})


@mcp.custom_route(METADATA_PATH, methods=["GET"])
async def protected_resource_metadata(request: Request) -> JSONResponse:
    return JSONResponse(
        {"resource": RESOURCE, "authorization_servers": [ISSUER.rstrip("/") + "/"], "bearer_methods_supported": ["header"]},
        headers={"Access-Control-Allow-Origin": "*"},
    )


class BearerGuard:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].rstrip("/") == "/mcp":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        auth = headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        claims = None
        if scheme.lower() == "bearer" and token.strip():
            try:
                claims = verify(token.strip())
            except Exception:
                claims = None
        if claims is None:
            await self._challenge(send)
            return
        scope["oauth_claims"] = claims
        await self.app(scope, receive, send)

    async def _challenge(self, send: Any) -> None:
        body = b'{"error":"invalid_token","error_description":"A valid bearer token is required"}'
        challenge = f'Bearer error="invalid_token", resource_metadata="{METADATA_URL}"'
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", challenge.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


app = BearerGuard(mcp.streamable_http_app(streamable_http_path="/mcp"))

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="info")
