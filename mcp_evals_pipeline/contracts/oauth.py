"""`oauth`: the server is an OAuth-protected resource; the harness runs a local identity provider.

The IdP (mcp_evals_pipeline/oauth_idp.py) runs live during the agent phase and a fresh one, on another port with
new keys, during grading; the server gets `OAUTH_ISSUER_URL`, `OAUTH_JWKS_URL` (and for okta `OAUTH_AUDIENCE`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from mcp_evals_pipeline.contracts.task_base import Covers


class OAuthSpec(Covers):
    # `requirements`: what the oauth stage's probes (missing / wrong / expired token, metadata, a good token) test.
    # Which IdP's claim shape, issuer layout and seeded user (oauth_idp.SEED_CONSTANTS).
    backend: Literal["clerk", "okta"]
    # clerk only: a real Clerk Frontend API URL, exposed to the agent phase as MCP_USE_OAUTH_CLERK_FRONTEND_API_URL
    # and never to grading (which always uses the deterministic local issuer).
    frontend_api_url: str | None = None
    # Scopes the server under test requires. The IdP grants whatever the MCP client asks for (the client asks
    # for what the server advertises); the grader's invalid probe tokens carry these, so each one differs from a
    # good token in exactly one defect. Empty (the prompt says any valid token is accepted, whatever its scope):
    # oauth:any-scope also presents tokens with another scope and with none, which must work.
    scopes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _frontend_api_url_is_clerks(self) -> OAuthSpec:
        if self.frontend_api_url is not None:
            if self.backend != "clerk":
                raise ValueError("frontendApiUrl applies to the clerk backend only")
            if not self.frontend_api_url.startswith(("https://", "http://")):
                raise ValueError("frontendApiUrl must be an http(s) URL")
        return self
