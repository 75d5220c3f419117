"""Negative: the golden, but the SDK is told to require the "email" scope, which every sign-in of this provider
is granted, so only a token with another or an empty scope shows it."""

import json
import os

import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

PORT = int(os.environ["PORT"])
ISSUER = os.environ["OAUTH_ISSUER_URL"]
AUDIENCE = os.environ["OAUTH_AUDIENCE"]
JWKS = jwt.PyJWKClient(os.environ["OAUTH_JWKS_URL"])
RESOURCE = f"http://127.0.0.1:{PORT}/mcp"


class OktaTokenVerifier(TokenVerifier):
    """Accepts RS256 JWTs signed by a key of the issuer's JWKS, for OAUTH_AUDIENCE, issued by OAUTH_ISSUER_URL and
    not expired."""

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = JWKS.get_signing_key_from_jwt(token)
            claims = jwt.decode(token, key.key, algorithms=["RS256"], issuer=ISSUER, audience=AUDIENCE,
                                options={"require": ["exp", "iat", "iss", "aud", "sub"]})
        except jwt.PyJWTError:
            return None
        return AccessToken(token=token, client_id=claims.get("cid", ""), scopes=list(claims.get("scp", [])),
                           expires_at=claims["exp"], subject=claims.get("uid"), claims=claims)


mcp = MCPServer(
    "oauth-whoami-okta",
    token_verifier=OktaTokenVerifier(),
    auth=AuthSettings(issuer_url=ISSUER, resource_server_url=RESOURCE, validate_token_resource=False,
                      required_scopes=["email"]),
)


@mcp.tool()
def whoami() -> str:
    """The signed-in user: Okta user id, email (the login in `sub`) and name from the access token."""
    token = get_access_token()
    claims = (token.claims if token else None) or {}
    return json.dumps({"id": claims.get("uid"), "email": claims.get("sub"), "name": claims.get("name")})


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=PORT, streamable_http_path="/mcp")
