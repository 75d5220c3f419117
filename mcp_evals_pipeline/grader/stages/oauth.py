"""Stage `oauth`: the server is an OAuth 2.1 protected resource of a local identity provider.

Before the server starts, a fresh IdP (mcp_evals_pipeline/oauth_idp.py) comes up on its own port with its own
signing key, and the server gets its variables (`OAUTH_ISSUER_URL`, `OAUTH_JWKS_URL`, for okta `OAUTH_AUDIENCE`):
a server that kept the agent phase's issuer, port or keys fails here. Right after `start`, before the handshake:

    oauth:missing-token      raw POST initialize without a token -> 401 + WWW-Authenticate: Bearer resource_metadata=
    oauth:resource-metadata  that document (RFC 9728) names this IdP first and this server as the resource
    oauth:bad-signature      a token signed by another key (same kid, valid claims)            -> the same refusal
    oauth:malformed-token    a bearer value that is not a JWT                                   -> the same refusal
    oauth:unsigned-token     the usual claims under `alg: none`                                 -> the same refusal
    oauth:expired-token      a correctly signed token that expired an hour ago                  -> the same refusal
    oauth:wrong-audience     (backends with an audience) a correctly signed token for another audience -> the same
    oauth:token              the mcp SDK's own OAuth client signs in through the server's 401 and metadata
                             (discovery, dynamic registration, authorization code + PKCE) and its retried
                             initialize is accepted; the handshake and every later client send that token
    oauth:any-scope          (contracts requiring no scope) the flow's token re-minted with another scope and with
                             an empty one: each opens a session and lists the tools, and the contract's first call
                             as the signed-in user, replayed on it, succeeds wherever it does with the flow's token

"The same refusal" is the form the prompts state for every refusal path they list: 401 and a Bearer
`WWW-Authenticate` whose `resource_metadata` names the server's protected resource metadata (the document of
oauth:resource-metadata, or another that passes the same checks). One check per path, so a server that sends the
header only when the token is missing fails at the first path it leaves bare. Every probe token differs from a good
token in one defect only. A server that requires the scope the usual tokens carry fails oauth:any-scope.

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
            *(Step(f"oauth:{path}", "oauth", lambda p=path: self._refused(p)) for path in self._refusal_paths()),
            Step("oauth:token", "oauth", self._token),
        ]
        if spec is not None and not spec.scopes:  # "accept any valid token, whatever its scope"
            steps.append(Step("oauth:any-scope", "oauth", self._any_scope))
        for step in steps:
            step.requirements = list(spec.requirements) if spec is not None else []
        return steps

    def _refusal_paths(self) -> list[str]:
        """The invalid-token paths every OAuth prompt lists (plus another audience where tokens carry one)."""
        spec = self.grading.contract.oauth
        paths = ["bad-signature", "malformed-token", "unsigned-token", "expired-token"]
        if spec is not None and PROFILES[spec.backend].audience is not None:
            paths.append("wrong-audience")
        return paths

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

    # ---- the checks ---------------------------------------------------------------------------------------

    async def _missing_token(self) -> str:
        response = await self._post_initialize(None)
        self.resource_metadata_url = self._challenge_metadata_url("POST initialize without a token", response)
        return f"401, resource_metadata={self.resource_metadata_url}"

    def _challenge_metadata_url(self, label: str, response: httpx2.Response) -> str:
        """The refusal form the prompts state: 401 with a Bearer challenge naming resource_metadata (its URL)."""
        if response.status_code != 401:
            raise StepFailed(f"{label} got HTTP {response.status_code}; a protected server refuses it with 401")
        challenge = response.headers.get("www-authenticate")
        if not challenge:
            raise StepFailed(f"{label}: 401 without a WWW-Authenticate header (expected Bearer with "
                             "resource_metadata, as on every refusal)")
        if not challenge.strip().lower().startswith("bearer"):
            raise StepFailed(f"{label}: WWW-Authenticate is {clip(challenge, 200)!r}, not a Bearer challenge")
        found = _RESOURCE_METADATA.search(challenge)
        if not found or not (found.group(1) or found.group(2)):
            raise StepFailed(f"{label}: WWW-Authenticate {clip(challenge, 200)!r} has no resource_metadata "
                             "parameter")
        return urljoin(self._url, found.group(1) or found.group(2))

    async def _resource_metadata(self) -> str:
        assert self.resource_metadata_url is not None
        return await self._check_metadata(self.resource_metadata_url)

    async def _check_metadata(self, url: str) -> str:
        from mcp.client.auth.utils import issuers_match
        from mcp.shared.auth import ProtectedResourceMetadata
        from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url

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

    def _probe_token(self, path: str) -> tuple[str, str]:
        """What a refusal path sends: its description and the bearer value (one defect from a good token)."""
        idp, scopes = self._idp, self._scopes
        if path == "bad-signature":
            return "a token signed by another key (same kid, valid claims)", idp.mint(scopes=scopes, foreign_key=True)
        if path == "malformed-token":
            return "a malformed token (not a JWT)", "not-a-jwt." + secrets.token_urlsafe(16)
        if path == "unsigned-token":
            return "an unsigned token (alg none)", idp.mint_unsigned(scopes=scopes)
        if path == "expired-token":
            token = idp.mint(scopes=scopes, issued_at=int(time.time()) - 7200, lifetime=3600)
            return "a correctly signed token that expired an hour ago", token
        if path == "wrong-audience":
            token = idp.mint(scopes=scopes, overrides={"aud": "api://some-other-api"})
            return "a correctly signed token for audience api://some-other-api", token
        raise ValueError(f"no refusal path {path!r}")

    async def _refused(self, path: str) -> str:
        label, token = self._probe_token(path)
        response = await self._post_initialize(token)
        url = self._challenge_metadata_url(f"POST initialize with {label}", response)
        if url != self.resource_metadata_url:  # another document may do, if it is one a client can use
            try:
                await self._check_metadata(url)
            except StepFailed as failed:
                raise StepFailed(f"the refusal of {label} names resource_metadata {url}: {failed.detail}") from None
        return f"401, resource_metadata={url}"

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

    async def _any_scope(self) -> str:
        """The flow's token re-minted with another scope, then with an empty one (same user, client, lifetime):
        each must be accepted as the flow's was: a session opens and lists the tools, and the contract's first
        call as the signed-in user, replayed on it, succeeds wherever it succeeds with the flow's token (so a
        scope required by the tool alone fails too; a call that fails either way is left to the calls stage)."""
        assert self.token is not None, "oauth:token did not run"
        replay = next((c for c in self.grading.contract.calls if c.as_user is None and c.is_error is not True), None)
        baseline = None
        if replay is not None:
            client = await self._session(self.token, "initialize with the signed-in user's token")
            baseline = await self._replay(client, replay, "the signed-in user's token")
        other = self._idp.profile.other_scope
        done = []
        for label, scopes in ((f"only the scope {other!r}", [other]), ("an empty scope", [])):
            token = self._idp.mint_like(self.token, scopes=scopes)
            what = f"a token of the signed-in user with {label}"
            response = await self._post_initialize(token)
            if response.status_code != 200:
                challenge = response.headers.get("www-authenticate", "")
                raise StepFailed(f"POST initialize with {what} got HTTP {response.status_code} "
                                 f"{clip(challenge, 200)}".rstrip() + "; any valid token of the issuer is to be "
                                 "accepted, whatever its scope")
            client = await self._session(token, f"initialize with {what}")
            tools = await self.grading.list_all(f"tools/list with {what}", client.list_tools, "tools")
            note = f"{label}: a session, {len(tools)} tools listed"
            if replay is not None and baseline is None:  # the flow's token got a normal result
                failed = await self._replay(client, replay, what)
                if failed is not None:
                    raise StepFailed(f"{failed}, though the signed-in user's own token got a normal result; any "
                                     "valid token of the issuer is to be accepted, whatever its scope")
                note += f", {replay.tool} answered"
            done.append(note)
        return "; ".join(done)

    async def _replay(self, client: Any, call: Any, what: str) -> str | None:
        """A call of the contract on `client`: None if it got a normal result, else what went wrong."""
        timeout = call.timeout_seconds or self.grading.contract.call_timeout_seconds
        sig = f"{call.tool} with {what}"
        try:
            result = await self.grading.talk(
                sig, lambda: client.call_tool(call.tool, call.args, read_timeout_seconds=timeout), timeout + 5)
        except StepFailed as failed:
            return failed.detail
        if result.is_error:
            text = " ".join(getattr(c, "text", "") for c in result.content)
            return f"{sig} -> an error result: {clip(text, 200)!r}"
        return None

    # ---- sessions as another seeded user (calls[].asUser) -------------------------------------------------------

    async def session_as(self, user: str) -> Any:
        """A new MCP session (handshake included, closed with the grading) whose every request carries a token
        the IdP minted for seeded user `user`, differing from the headless flow's token only in the user. A server
        that refuses it or fails the handshake fails the call that needed it."""
        assert self.token is not None, "oauth:token did not run"
        token = self._idp.mint_like(self.token, user)
        claims = self._idp.verify(token)
        return await self._session(token, f"initialize as the {user} user (a token for {claims['sub']})")

    async def _session(self, token: str, what: str) -> Any:
        """A new MCP session (closed with the grading) whose every request carries `token`."""
        grading = self.grading
        saved = grading.http_headers
        grading.http_headers = {**saved, "Authorization": f"Bearer {token}"}
        try:  # connect copies the headers into its HTTP client
            return await grading.connect(what)
        finally:
            grading.http_headers = saved
