"""Stage `oauth`: the server is an OAuth 2.1 protected resource of a local identity provider.

Before the server starts, a fresh IdP (mcp_evals_pipeline/oauth_idp.py) comes up on its own port with its own
signing key, and the server gets its variables (`OAUTH_ISSUER_URL`, `OAUTH_JWKS_URL`, for okta `OAUTH_AUDIENCE`):
a server that kept the agent phase's issuer, port or keys fails here. Right after `start`, before the handshake:

    oauth:missing-token      raw POST initialize without a token -> 401 + WWW-Authenticate: Bearer resource_metadata=
    oauth:resource-metadata  that document (RFC 9728) names this IdP first and this server as the resource
    oauth:wrong-token        a forged signature (same kid), a malformed token and an `alg: none` token -> 401 each
    oauth:expired-token      a correctly signed token that expired -> 401
    oauth:wrong-audience     (backends with an audience) a correctly signed token for another audience -> 401
    oauth:token              the mcp SDK's own OAuth client signs in through the server's 401 and metadata
                             (discovery, dynamic registration, authorization code + PKCE) and its retried
                             initialize is accepted; the handshake and every later client send that token

A call of the contract with `asUser` (e.g. "secondary") runs later, at stage calls, on a session of its own whose
token the IdP mints for that seeded user (`session_as`): it is the headless flow's token with only the user
changed (same client, scopes, audience, lifetime), so an identity answer is checked against more than one user.

The probes are raw httpx2 requests (the SDK client hides 401s inside an ExceptionGroup). The IdP failing to start
is the harness's fault: before_start raises, and the ladder makes the trial infra.oauth.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import anyio.to_thread
import httpx2
import jwt
from pydantic import ValidationError

from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.grader.expectations import clip
from mcp_evals_pipeline.grader.features import Feature, Step, StepFailed, register
from mcp_evals_pipeline.oauth_idp import PROFILES, HeadlessBrowserError, Idp, start_idp
from mcp_evals_pipeline.versions import GRADER_VERSION

PROBE_TIMEOUT_S = 15.0
FLOW_TIMEOUT_S = 45.0
_RESOURCE_METADATA = re.compile(r'resource_metadata\s*=\s*(?:"([^"]*)"|([^\s,]+))', re.IGNORECASE)


def _initialize_body() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "mcp-evals-oauth-probe", "version": GRADER_VERSION}}}


_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _describe(exc: BaseException) -> str:
    parts = []
    for leaf in _leaves(exc):
        parts.append("timed out" if isinstance(leaf, TimeoutError) else f"{type(leaf).__name__}: {leaf}".strip())
    return clip("; ".join(dict.fromkeys(parts)), 500)


@register
class OAuthFeature(Feature):
    name = "oauth"
    infra = Infra.OAUTH

    def __init__(self, grading: Any):
        super().__init__(grading)
        self.idp: Idp | None = None
        self.resource_metadata_url: str | None = None
        self.token: str | None = None  # the primary user's, from the headless flow (oauth:token)

    # ---- services ---------------------------------------------------------------------------------------

    async def before_start(self) -> dict[str, str]:
        spec = self.grading.contract.oauth
        assert spec is not None
        self.idp = await anyio.to_thread.run_sync(start_idp, spec.backend)
        return self.idp.env()

    async def close(self) -> None:
        if self.idp is not None:
            idp, self.idp = self.idp, None
            await anyio.to_thread.run_sync(idp.stop)

    # ---- the plan ---------------------------------------------------------------------------------------

    def steps(self) -> list[Step]:
        spec = self.grading.contract.oauth
        steps = [
            Step("oauth:missing-token", "oauth", self._missing_token),
            Step("oauth:resource-metadata", "oauth", self._resource_metadata),
            Step("oauth:wrong-token", "oauth", self._wrong_token),
            Step("oauth:expired-token", "oauth", self._expired_token),
        ]
        if spec is not None and PROFILES[spec.backend].audience is not None:
            steps.append(Step("oauth:wrong-audience", "oauth", self._wrong_audience))
        steps.append(Step("oauth:token", "oauth", self._token))
        for step in steps:
            step.requirements = list(spec.requirements) if spec is not None else []
        return steps

    # ---- helpers ----------------------------------------------------------------------------------------

    @property
    def _idp(self) -> Idp:
        assert self.idp is not None, "before_start did not run"
        return self.idp

    @property
    def _scopes(self) -> list[str] | None:
        spec = self.grading.contract.oauth
        return list(spec.scopes) if spec is not None and spec.scopes else None

    @property
    def _url(self) -> str:
        assert self.grading.url is not None
        return str(self.grading.url)

    async def _guard(self, what: str, op: Callable[[], Awaitable[Any]], timeout: float = PROBE_TIMEOUT_S) -> Any:
        """An exchange with the server: anything the network or the server does wrong is the server's failure."""
        try:
            with anyio.fail_after(timeout):
                return await op()
        except StepFailed:
            raise
        except (httpx2.HTTPError, OSError, TimeoutError, ValueError) as exc:
            raise StepFailed(f"{what} failed: {_describe(exc)}{self.grading.server_status()}") from exc

    async def _post_initialize(self, token: str | None) -> httpx2.Response:
        """POST initialize with an optional bearer token; the status and headers only (the body, possibly an SSE
        stream, is never read)."""
        headers = dict(_HEADERS)
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"

        async def op() -> httpx2.Response:
            async with httpx2.AsyncClient(timeout=PROBE_TIMEOUT_S) as http, \
                    http.stream("POST", self._url, json=_initialize_body(), headers=headers) as response:
                return response

        what = "POST initialize " + ("with a bearer token" if token is not None else "without a token")
        return await self._guard(what, op)

    async def _expect_401(self, probes: list[tuple[str, str]]) -> str:
        accepted = []
        for label, token in probes:
            response = await self._post_initialize(token)
            if response.status_code != 401:
                accepted.append(f"{label} got HTTP {response.status_code}")
        if accepted:
            raise StepFailed("; ".join(accepted) + " (a protected server refuses it with 401)")
        return f"{len(probes)} refused with 401"

    # ---- the checks ---------------------------------------------------------------------------------------

    async def _missing_token(self) -> str:
        response = await self._post_initialize(None)
        if response.status_code != 401:
            raise StepFailed(f"POST initialize without a token got HTTP {response.status_code}; a protected "
                             "server answers 401")
        challenge = response.headers.get("www-authenticate")
        if not challenge:
            raise StepFailed("401 without a WWW-Authenticate header (expected Bearer with resource_metadata)")
        if not challenge.strip().lower().startswith("bearer"):
            raise StepFailed(f"WWW-Authenticate is {clip(challenge, 200)!r}, not a Bearer challenge")
        found = _RESOURCE_METADATA.search(challenge)
        if not found or not (found.group(1) or found.group(2)):
            raise StepFailed(f"WWW-Authenticate {clip(challenge, 200)!r} has no resource_metadata parameter")
        self.resource_metadata_url = urljoin(self._url, found.group(1) or found.group(2))
        return f"401, resource_metadata={self.resource_metadata_url}"

    async def _resource_metadata(self) -> str:
        from mcp.client.auth.utils import issuers_match
        from mcp.shared.auth import ProtectedResourceMetadata
        from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url

        url = self.resource_metadata_url
        assert url is not None
        if urlsplit(url).scheme not in ("http", "https"):
            raise StepFailed(f"resource_metadata {url!r} is not an http(s) URL")

        async def op() -> httpx2.Response:
            async with httpx2.AsyncClient(timeout=PROBE_TIMEOUT_S, follow_redirects=False) as http:
                return await http.get(url)

        response = await self._guard(f"GET {url}", op)
        if response.status_code != 200:
            raise StepFailed(f"GET {url} got HTTP {response.status_code} (the protected resource metadata)")
        try:
            prm = ProtectedResourceMetadata.model_validate_json(response.content)
        except ValidationError as exc:
            raise StepFailed(f"GET {url}: not protected resource metadata (RFC 9728): "
                             f"{clip(str(exc), 300)}; body {clip(response.text, 200)!r}") from exc
        issuer = self._idp.issuer
        first = str(prm.authorization_servers[0])
        if not issuers_match(first, issuer):
            listed = ", ".join(str(s) for s in prm.authorization_servers)
            raise StepFailed(f"authorization_servers is [{listed}]; its first entry must be the issuer from "
                             f"OAUTH_ISSUER_URL ({issuer}): MCP clients sign in at the first one")
        expected = resource_url_from_server_url(self._url)
        if not check_resource_allowed(requested_resource=expected, configured_resource=str(prm.resource)):
            raise StepFailed(f"resource is {prm.resource}, which does not cover this server ({expected}): MCP "
                             "clients refuse the metadata")
        return f"resource {prm.resource}, authorization server {first}"

    async def _wrong_token(self) -> str:
        idp = self._idp
        return await self._expect_401([
            ("a token signed by another key (same kid, valid claims)",
             idp.mint(scopes=self._scopes, foreign_key=True)),
            ("a malformed token", "not-a-jwt." + secrets.token_urlsafe(16)),
            ("an unsigned token (alg none)", idp.mint_unsigned(scopes=self._scopes)),
        ])

    async def _expired_token(self) -> str:
        now = int(time.time())
        token = self._idp.mint(scopes=self._scopes, issued_at=now - 7200, lifetime=3600)
        return await self._expect_401([("a correctly signed token that expired an hour ago", token)])

    async def _wrong_audience(self) -> str:
        token = self._idp.mint(scopes=self._scopes, overrides={"aud": "api://some-other-api"})
        return await self._expect_401([("a correctly signed token for audience api://some-other-api", token)])

    async def _token(self) -> str:
        from mcp.client.auth import OAuthFlowError

        from mcp_evals_pipeline.oauth_idp import headless_oauth

        idp = self._idp
        provider, storage = headless_oauth(self._url)

        async def op() -> httpx2.Response:
            async with httpx2.AsyncClient(auth=provider, timeout=PROBE_TIMEOUT_S) as http, \
                    http.stream("POST", self._url, json=_initialize_body(), headers=_HEADERS) as response:
                return response

        try:
            with anyio.fail_after(FLOW_TIMEOUT_S):
                response = await op()
        except (OAuthFlowError, HeadlessBrowserError, httpx2.HTTPError, OSError, TimeoutError, ValidationError,
                ValueError, KeyError) as exc:
            raise StepFailed(f"signing in through the server's metadata failed: {_describe(exc)}"
                             f"{self.grading.server_status()}") from exc
        tokens = storage.tokens
        if tokens is None:
            raise StepFailed(f"the MCP client got no token (initialize answered HTTP {response.status_code} "
                             "without a Bearer challenge it could follow)")
        if response.status_code in (401, 403):
            challenge = response.headers.get("www-authenticate", "")
            raise StepFailed(f"the server refused the token the IdP issued: HTTP {response.status_code} "
                             f"{clip(challenge, 200)}".rstrip())
        if response.status_code != 200:
            raise StepFailed(f"initialize with the IdP's token got HTTP {response.status_code}")
        try:
            claims = idp.verify(tokens.access_token)
        except jwt.PyJWTError as exc:  # the flow ended at some other token endpoint
            raise StepFailed(f"the token the client obtained was not issued by the IdP at {idp.issuer}: "
                             f"{exc}") from exc
        self.token = tokens.access_token
        self.grading.http_headers["Authorization"] = f"Bearer {tokens.access_token}"
        client_id = storage.client_info.client_id if storage.client_info else "?"
        return f"token for {claims['sub']} from {idp.issuer} (client {client_id}, authorization code + PKCE)"

    # ---- sessions as another seeded user (calls[].asUser) -------------------------------------------------------

    async def session_as(self, user: str) -> Any:
        """A new MCP session (handshake included, closed with the grading) whose every request carries a token
        the IdP minted for seeded user `user`, differing from the headless flow's token only in the user. A server
        that refuses it or fails the handshake fails the call that needed it."""
        assert self.token is not None, "oauth:token did not run"
        token = self._idp.mint_like(self.token, user)
        claims = self._idp.verify(token)
        grading = self.grading
        saved = grading.http_headers
        grading.http_headers = {**saved, "Authorization": f"Bearer {token}"}
        try:  # connect copies the headers into its HTTP client
            return await grading.connect(f"initialize as the {user} user (a token for {claims['sub']})")
        finally:
            grading.http_headers = saved
