"""Negative: the user id comes from the token, but email and name from a profile table holding only the user the
provider signs in: right for Ada, Katherine's token gets her id with no email or name."""

import json
import os

import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

PORT = int(os.environ["PORT"])
ISSUER = os.environ["OAUTH_ISSUER_URL"]
JWKS = jwt.PyJWKClient(os.environ["OAUTH_JWKS_URL"])
RESOURCE = f"http://127.0.0.1:{PORT}/mcp"
PROFILES = {"user_2vKq8NfXr3LmT9aZp4HcWy7EbJs": {"email": "ada.lovelace@example.com", "name": "Ada Lovelace"}}


class ClerkTokenVerifier(TokenVerifier):
    """Accepts RS256 JWTs signed by a key of the issuer's JWKS, issued by OAUTH_ISSUER_URL and not expired."""

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = JWKS.get_signing_key_from_jwt(token)
            claims = jwt.decode(token, key.key, algorithms=["RS256"], issuer=ISSUER,
                                options={"require": ["exp", "iat", "iss", "sub"]})
        except jwt.PyJWTError:
            return None
        return AccessToken(token=token, client_id=claims.get("client_id") or claims.get("azp") or "",
                           scopes=str(claims.get("scope", "")).split(), expires_at=claims["exp"],
                           subject=claims["sub"], claims=claims)


mcp = MCPServer(
    "oauth-whoami",
    token_verifier=ClerkTokenVerifier(),
    auth=AuthSettings(issuer_url=ISSUER, resource_server_url=RESOURCE, validate_token_resource=False),
)


@mcp.tool()
def whoami() -> str:
    """The signed-in user: id, email and name from the access token."""
    token = get_access_token()
    claims = (token.claims if token else None) or {}
    profile = PROFILES.get(claims.get("sub"), {})
    return json.dumps({"id": claims.get("sub"), "email": profile.get("email"), "name": profile.get("name")})


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=PORT, streamable_http_path="/mcp")
