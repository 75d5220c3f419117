"""OAuth-protected MCP server (Clerk issuer) with a `whoami` tool.

The SDK's resource-server support does the HTTP side (401 + WWW-Authenticate, RFC 9728
metadata); a TokenVerifier checks each bearer token against the issuer's JWKS.
"""

import json
import os

import anyio
import jwt
from jwt import PyJWKClient

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

PORT = int(os.environ["PORT"])
ISSUER = os.environ["OAUTH_ISSUER_URL"]
JWKS_URL = os.environ["OAUTH_JWKS_URL"]
RESOURCE_URL = f"http://127.0.0.1:{PORT}/mcp"


class ClerkTokenVerifier(TokenVerifier):
    def __init__(self, issuer: str, jwks_url: str) -> None:
        self.issuer = issuer
        self.jwks = PyJWKClient(jwks_url, cache_keys=True, lifespan=300)

    def _decode(self, token: str) -> dict:
        signing_key = self.jwks.get_signing_key_from_jwt(token)
        return jwt.decode(
            token,
            signing_key.key,
            algorithms=["RS256"],
            issuer=self.issuer,
            # Clerk access tokens carry no `aud` claim.
            options={"require": ["exp", "iss", "sub"], "verify_aud": False},
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            claims = await anyio.to_thread.run_sync(self._decode, token)
        except Exception:
            return None
        scope = claims.get("scope")
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id") or claims.get("azp") or ""),
            scopes=scope.split() if isinstance(scope, str) else [],
            expires_at=int(claims["exp"]),
            subject=claims.get("sub"),
            claims=claims,
        )


mcp = MCPServer(
    "whoami",
    token_verifier=ClerkTokenVerifier(ISSUER, JWKS_URL),
    auth=AuthSettings(
        issuer_url=ISSUER,
        resource_server_url=RESOURCE_URL,
        required_scopes=["openid"],
        validate_token_resource=False,
    ),
)


@mcp.tool()
def whoami() -> str:
    """Report the id, email and name of the user whose access token made this request."""
    token = get_access_token()
    if token is None or not token.claims:
        raise ToolError("no authenticated user")
    claims = token.claims
    return json.dumps({"id": claims.get("sub"), "email": claims.get("email"), "name": claims.get("name")})


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=PORT, streamable_http_path="/mcp")
