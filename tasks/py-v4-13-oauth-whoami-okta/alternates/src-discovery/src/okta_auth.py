"""Okta access-token verification: the JWKS found through the issuer's discovery document."""

import json
import os
import urllib.request

import jwt
from mcp.server.auth.provider import AccessToken, TokenVerifier


def discover(issuer: str) -> dict:
    with urllib.request.urlopen(f"{issuer}/.well-known/openid-configuration", timeout=10) as response:
        return json.load(response)


class OktaJwtVerifier(TokenVerifier):
    def __init__(self, issuer: str, audience: str):
        self.issuer = issuer
        self.audience = audience
        self._jwks: jwt.PyJWKClient | None = None

    @classmethod
    def from_env(cls) -> "OktaJwtVerifier":
        return cls(os.environ["OAUTH_ISSUER_URL"], os.environ["OAUTH_AUDIENCE"])

    def _keys(self) -> jwt.PyJWKClient:
        if self._jwks is None:  # lazily: the IdP is only needed once a token arrives
            self._jwks = jwt.PyJWKClient(discover(self.issuer)["jwks_uri"])
        return self._jwks

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = self._keys().get_signing_key_from_jwt(token)
            claims = jwt.decode(token, key, algorithms=["RS256"], issuer=self.issuer, audience=self.audience)
        except (jwt.PyJWTError, OSError, KeyError, ValueError):
            return None
        return AccessToken(token=token, client_id=claims["cid"], scopes=claims.get("scp", []),
                           expires_at=claims["exp"], subject=claims["uid"], claims=claims)
