"""Negative: a pure ASGI gate that remembers the user when a session opens (a request without Mcp-Session-Id) in one
server-wide variable, and whoami answers that: right while each session is asked right after it opens, wrong for an
older session once another user has opened one."""

import json
import os

import jwt
import uvicorn
from mcp.server.mcpserver import MCPServer

PORT = int(os.environ["PORT"])
ISSUER = os.environ["OAUTH_ISSUER_URL"]
JWKS = jwt.PyJWKClient(os.environ["OAUTH_JWKS_URL"])
RESOURCE = f"http://127.0.0.1:{PORT}/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"
METADATA_URL = f"http://127.0.0.1:{PORT}{METADATA_PATH}"

session_user: dict = {}  # the user who opened the latest session

mcp = MCPServer("oauth-whoami-gate")


@mcp.tool()
def whoami() -> str:
    """Who the access token of this request belongs to."""
    claims = session_user
    return f"id={claims.get('sub')} email={claims.get('email')} name={claims.get('name')}"


def verify(token: str) -> dict | None:
    try:
        signing_key = JWKS.get_signing_key_from_jwt(token)
        return jwt.decode(token, signing_key.key, algorithms=["RS256"], issuer=ISSUER,
                          options={"require": ["exp", "sub"]})
    except jwt.PyJWTError:
        return None


async def send_json(send, status: int, body: dict, extra_headers: list[tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
               *extra_headers]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


class BearerGate:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        if path == METADATA_PATH:
            return await send_json(send, 200, {"resource": RESOURCE, "authorization_servers": [ISSUER],
                                               "bearer_methods_supported": ["header"]})
        if path == "/mcp" or path.startswith("/mcp/"):
            auth = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
            claims = verify(auth[7:].strip()) if auth[:7].lower() == "bearer " else None
            if claims is None:
                challenge = f'Bearer error="invalid_token", resource_metadata="{METADATA_URL}"'
                return await send_json(send, 401, {"error": "invalid_token"},
                                       [(b"www-authenticate", challenge.encode())])
            if b"mcp-session-id" not in dict(scope["headers"]):  # a new session: remember who opened it
                session_user.clear()
                session_user.update(claims)
            return await self.app(scope, receive, send)
        return await self.app(scope, receive, send)


if __name__ == "__main__":
    uvicorn.run(BearerGate(mcp.streamable_http_app()), host="127.0.0.1", port=PORT, log_level="warning")
