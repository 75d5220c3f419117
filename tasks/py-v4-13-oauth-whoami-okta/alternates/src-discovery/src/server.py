"""Alternate legitimate solution: src/ layout, JWKS discovered from the issuer metadata, structured whoami result."""

import os
import sys

from pydantic import BaseModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mcp.server.auth.middleware.auth_context import get_access_token  # noqa: E402
from mcp.server.auth.settings import AuthSettings  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402
from okta_auth import OktaJwtVerifier  # noqa: E402

PORT = int(os.environ["PORT"])
verifier = OktaJwtVerifier.from_env()


class Caller(BaseModel):
    id: str
    email: str
    name: str


mcp = MCPServer(
    "okta-whoami",
    token_verifier=verifier,
    auth=AuthSettings(issuer_url=verifier.issuer, resource_server_url=f"http://127.0.0.1:{PORT}/mcp",
                      validate_token_resource=False),
)


@mcp.tool()
def whoami() -> Caller:
    """Who is calling, according to the Okta access token."""
    claims = get_access_token().claims or {}
    return Caller(id=claims["uid"], email=claims["sub"], name=claims["name"])


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=PORT, streamable_http_path="/mcp")
