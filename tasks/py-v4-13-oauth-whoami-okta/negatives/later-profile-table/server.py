"""Negative: the user id comes from the token, but email and name from a profile table holding only the user the
provider signs in: right for Grace, Alan's token gets his id with no email or name."""

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
PROFILES = {"00u8k2x9zqW4nTbR5d7": {"email": "grace.hopper@example.com", "name": "Grace Hopper"}}


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
    auth=AuthSettings(issuer_url=ISSUER, resource_server_url=RESOURCE, validate_token_resource=False),
)


@mcp.tool()
def whoami() -> str:
    """The signed-in user: Okta user id, email (the login in `sub`) and name from the access token."""
    token = get_access_token()
    claims = (token.claims if token else None) or {}
    profile = PROFILES.get(claims.get("uid"), {})
    return json.dumps({"id": claims.get("uid"), "email": profile.get("email"), "name": profile.get("name")})


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=PORT, streamable_http_path="/mcp")
