"""Negative: a pure ASGI bearer gate that sends the Bearer challenge (with resource_metadata) only when the token
is missing; a token it cannot verify gets a bare 401 with a JSON error and no WWW-Authenticate header."""

import contextvars
import json
import os

import jwt
import uvicorn
from mcp.server.mcpserver import MCPServer

PORT = int(os.environ["PORT"])
ISSUER = os.environ["OAUTH_ISSUER_URL"]
AUDIENCE = os.environ["OAUTH_AUDIENCE"]
JWKS = jwt.PyJWKClient(os.environ["OAUTH_JWKS_URL"])
RESOURCE = f"http://127.0.0.1:{PORT}/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"
METADATA_URL = f"http://127.0.0.1:{PORT}{METADATA_PATH}"

current_claims: contextvars.ContextVar[dict | None] = contextvars.ContextVar("current_claims", default=None)

mcp = MCPServer("oauth-whoami-gate")


@mcp.tool()
def whoami() -> str:
    """Who the access token of this request belongs to."""
    claims = current_claims.get() or {}
    return f"id={claims.get('uid')} email={claims.get('sub')} name={claims.get('name')}"


def verify(token: str) -> dict | None:
    try:
        signing_key = JWKS.get_signing_key_from_jwt(token)
        return jwt.decode(token, signing_key.key, algorithms=["RS256"], issuer=ISSUER, audience=AUDIENCE,
                          options={"require": ["exp", "aud", "sub"]})
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
            if auth[:7].lower() != "bearer ":
                challenge = f'Bearer resource_metadata="{METADATA_URL}"'
                return await send_json(send, 401, {"error": "unauthorized"},
                                       [(b"www-authenticate", challenge.encode())])
            claims = verify(auth[7:].strip())
            if claims is None:  # the client already knows where to sign in: just say no
                return await send_json(send, 401, {"error": "invalid_token"})
            reset = current_claims.set(claims)
            try:
                return await self.app(scope, receive, send)
            finally:
                current_claims.reset(reset)
        return await self.app(scope, receive, send)


if __name__ == "__main__":
    uvicorn.run(BearerGate(mcp.streamable_http_app()), host="127.0.0.1", port=PORT, log_level="warning")
