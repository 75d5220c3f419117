"""A local OAuth 2.1 authorization server for OAuth tasks: live during the agent phase, a fresh one per grading.

A real authorization server on 127.0.0.1 and a port of its own, in a thread of the harness (stdlib HTTP server:
it starts in milliseconds and binds its own free port, so there is no race with a port picked earlier):

- metadata: RFC 8414 (`/.well-known/oauth-authorization-server`) and OIDC discovery (`openid-configuration`), at
  every URL a client may derive from the issuer (issuer-relative and path-inserted);
- a JWKS with an RS256 key generated per instance (so a token of one instance never verifies against another);
- dynamic client registration (RFC 7591; the MCP client registers itself), public clients only;
- `/authorize` that approves at once as the primary seeded user (no UI): it redirects with a code, `state` and `iss`;
- `/token` with authorization_code + PKCE (S256 only) and refresh_token, issuing signed JWT access tokens;
- `/userinfo` (OIDC) for a token it issued, answering for the token's user.

Two backends with their real claim shapes, issuer layouts and endpoint paths:

- `clerk`: the issuer is the instance root (a Clerk Frontend API URL); tokens carry `sub` = `user_...`, `sid`,
  `azp`, `client_id`, `scope` (space-delimited), `jti`, `iss`, `iat`, `nbf`, `exp` and the session-token custom
  claims `email` and `name`. No `aud`: Clerk binds no audience to its tokens.
- `okta`: the issuer is a custom authorization server (`<base>/oauth2/default`); tokens carry `ver`, `jti`, `iss`,
  `aud` (the authorization server's audience, `api://default`), `iat`, `exp`, `cid`, `uid` (the user id,
  `00u...`), `scp` (a list), `auth_time`, `sub` = the user's login (an email) and the custom claim `name`.

The seeded users of each backend are module constants: the primary user (`CLERK_SEED_*`, `OKTA_SEED_*`), whom
`/authorize` approves, and a secondary one (`CLERK_SECONDARY_*`, `OKTA_SECONDARY_*`), whose tokens are only minted
(`USERS[backend][name]`; a contract's `calls[].asUser` names one). Task contracts that check an identity must use
exactly these (tests/test_oauth.py enforces it). A server under test gets the IdP through the
variables of `Idp.env()` (`OAUTH_ISSUER_URL`, `OAUTH_JWKS_URL`, and for okta `OAUTH_AUDIENCE`).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

Backend = Literal["clerk", "okta"]
BACKENDS: tuple[Backend, ...] = ("clerk", "okta")

# ---- the seeded users (task contracts check identities against exactly these) ---------------------------------

CLERK_SEED_USER_ID = "user_2vKq8NfXr3LmT9aZp4HcWy7EbJs"
CLERK_SEED_EMAIL = "ada.lovelace@example.com"
CLERK_SEED_NAME = "Ada Lovelace"

OKTA_SEED_USER_ID = "00u8k2x9zqW4nTbR5d7"
OKTA_SEED_EMAIL = "grace.hopper@example.com"  # the user's Okta login, which is the access token's `sub`
OKTA_SEED_NAME = "Grace Hopper"
OKTA_AUDIENCE = "api://default"  # the audience of Okta's default custom authorization server

SEED_CONSTANTS: dict[Backend, dict[str, str]] = {
    "clerk": {"user_id": CLERK_SEED_USER_ID, "email": CLERK_SEED_EMAIL, "name": CLERK_SEED_NAME},
    "okta": {"user_id": OKTA_SEED_USER_ID, "email": OKTA_SEED_EMAIL, "name": OKTA_SEED_NAME},
}

# A second user of each backend. `/authorize` never signs in as them (it approves as the primary user); the grader
# mints their tokens directly for the calls of a contract marked `asUser: "secondary"`, so a server that answers
# the primary user's identity whatever the token says is caught.
CLERK_SECONDARY_USER_ID = "user_2wPm5RtYc8KdQ3vNx6BgLh1ZsFa"
CLERK_SECONDARY_EMAIL = "katherine.johnson@example.com"
CLERK_SECONDARY_NAME = "Katherine Johnson"

OKTA_SECONDARY_USER_ID = "00u3r7m1pkV6yHcJ9w2"
OKTA_SECONDARY_EMAIL = "alan.turing@example.com"
OKTA_SECONDARY_NAME = "Alan Turing"

PRIMARY_USER = "primary"
USER_NAMES: tuple[str, ...] = (PRIMARY_USER, "secondary")  # what a contract's `calls[].asUser` may name

# backend -> user name -> {"user_id", "email", "name"}; "primary" is SEED_CONSTANTS (the user /authorize approves).
USERS: dict[Backend, dict[str, dict[str, str]]] = {
    "clerk": {
        PRIMARY_USER: SEED_CONSTANTS["clerk"],
        "secondary": {"user_id": CLERK_SECONDARY_USER_ID, "email": CLERK_SECONDARY_EMAIL,
                      "name": CLERK_SECONDARY_NAME},
    },
    "okta": {
        PRIMARY_USER: SEED_CONSTANTS["okta"],
        "secondary": {"user_id": OKTA_SECONDARY_USER_ID, "email": OKTA_SECONDARY_EMAIL,
                      "name": OKTA_SECONDARY_NAME},
    },
}

# ---- what a server under test is told ---------------------------------------------------------------------------

ENV_ISSUER_URL = "OAUTH_ISSUER_URL"
ENV_JWKS_URL = "OAUTH_JWKS_URL"
ENV_AUDIENCE = "OAUTH_AUDIENCE"  # okta only: the `aud` every token carries
# Clerk tasks may name a real Clerk Frontend API URL: the agent phase sees it under this name, grading never does.
ENV_CLERK_FRONTEND_API_URL = "MCP_USE_OAUTH_CLERK_FRONTEND_API_URL"

ACCESS_TOKEN_LIFETIME_S = 3600
CODE_LIFETIME_S = 300
MAX_BODY_BYTES = 100_000
POLL_INTERVAL_S = 0.05
IDLE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Profile:
    """Where a backend puts things, relative to the instance's base URL."""

    backend: Backend
    issuer_path: str
    authorize_path: str
    token_path: str
    jwks_path: str
    userinfo_path: str
    register_path: str
    scopes_supported: tuple[str, ...]
    default_scopes: tuple[str, ...]
    audience: str | None
    # A real scope of the backend that no token of the usual flow carries: the grader's "another scope" token.
    other_scope: str


PROFILES: dict[Backend, Profile] = {
    "clerk": Profile("clerk", issuer_path="", authorize_path="/oauth/authorize", token_path="/oauth/token",
                     jwks_path="/.well-known/jwks.json", userinfo_path="/oauth/userinfo",
                     register_path="/oauth/register", scopes_supported=("openid", "profile", "email"),
                     default_scopes=("profile", "email"), audience=None,
                     other_scope="public_metadata"),
    "okta": Profile("okta", issuer_path="/oauth2/default", authorize_path="/oauth2/default/v1/authorize",
                    token_path="/oauth2/default/v1/token", jwks_path="/oauth2/default/v1/keys",
                    userinfo_path="/oauth2/default/v1/userinfo", register_path="/oauth2/v1/clients",
                    scopes_supported=("openid", "profile", "email"), default_scopes=("openid", "profile", "email"),
                    audience=OKTA_AUDIENCE, other_scope="offline_access"),
}


def seed_constants(backend: str, user: str = PRIMARY_USER) -> set[str]:
    """The identity values a call of this backend may expect: the id, email and name of the user it is made as
    (the primary user unless the call names another with `asUser`)."""
    return set(USERS[backend][user].values())  # type: ignore[index]


def user_of(backend: str, claims: dict[str, Any]) -> str | None:
    """The name of the seeded user a token's claims belong to (None: nobody this backend seeded)."""
    key = "uid" if backend == "okta" else "sub"
    for name, user in USERS[backend].items():  # type: ignore[index]
        if claims.get(key) == user["user_id"]:
            return name
    return None


def scopes_of(claims: dict[str, Any]) -> list[str]:
    """The scopes a token's claims grant (clerk: the space-delimited `scope`; okta: the `scp` list)."""
    if "scope" in claims:
        return str(claims["scope"]).split()
    return [str(s) for s in claims.get("scp") or []]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _pkce_s256(verifier: str) -> str:
    return _b64url(hashlib.sha256(verifier.encode()).digest())


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _random_id(alphabet_len: int) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(secrets.choice(alphabet) for _ in range(alphabet_len))


class IdpError(Exception):
    """The IdP could not do what the harness asked (start, or a headless flow against itself)."""


@dataclass
class _Client:
    client_id: str
    redirect_uris: list[str]
    info: dict[str, Any]


@dataclass
class _Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    scopes: list[str]
    resource: str | None
    expires_at: float


@dataclass
class Idp:
    """One running identity provider. Use `running_idp(backend)` (or `start_idp` + `stop`)."""

    backend: Backend
    profile: Profile
    base_url: str
    _key: rsa.RSAPrivateKey
    kid: str
    _httpd: _Server | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _clients: dict[str, _Client] = field(default_factory=dict)
    _codes: dict[str, _Grant] = field(default_factory=dict)
    _refresh: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    _foreign_key: rsa.RSAPrivateKey | None = None
    issued: list[dict[str, Any]] = field(default_factory=list)  # claims of every access token the IdP issued

    # ---- what servers and clients see -----------------------------------------------------------------------

    @property
    def issuer(self) -> str:
        return self.base_url + self.profile.issuer_path

    @property
    def jwks_uri(self) -> str:
        return self.base_url + self.profile.jwks_path

    @property
    def audience(self) -> str | None:
        return self.profile.audience

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def env(self) -> dict[str, str]:
        """The variables a server under test needs to verify this IdP's tokens."""
        env = {ENV_ISSUER_URL: self.issuer, ENV_JWKS_URL: self.jwks_uri}
        if self.audience is not None:
            env[ENV_AUDIENCE] = self.audience
        return env

    def metadata(self) -> dict[str, Any]:
        p = self.profile
        data: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": self.base_url + p.authorize_path,
            "token_endpoint": self.base_url + p.token_path,
            "registration_endpoint": self.base_url + p.register_path,
            "jwks_uri": self.jwks_uri,
            "userinfo_endpoint": self.base_url + p.userinfo_path,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": list(p.scopes_supported),
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "authorization_response_iss_parameter_supported": True,
        }
        if p.audience is not None:
            data["claims_supported"] = ["ver", "jti", "iss", "aud", "iat", "exp", "cid", "uid", "scp", "sub", "name"]
        else:
            data["claims_supported"] = ["iss", "sub", "sid", "azp", "client_id", "scope", "jti", "iat", "nbf", "exp",
                                        "email", "name"]
        return data

    def jwks(self) -> dict[str, Any]:
        jwk = RSAAlgorithm.to_jwk(self._key.public_key(), as_dict=True)
        return {"keys": [{**jwk, "kid": self.kid, "use": "sig", "alg": "RS256"}]}

    # ---- tokens --------------------------------------------------------------------------------------------

    def claims_for(self, client_id: str, scopes: list[str] | None = None, *, issued_at: int | None = None,
                   lifetime: int = ACCESS_TOKEN_LIFETIME_S, user: str = PRIMARY_USER) -> dict[str, Any]:
        """The access-token claims this backend issues for a seeded user (the primary one unless named)."""
        if user not in USERS[self.backend]:
            raise IdpError(f"no seeded user {user!r} (have: {', '.join(USERS[self.backend])})")
        seed = USERS[self.backend][user]
        now = int(time.time()) if issued_at is None else issued_at
        granted = list(scopes) if scopes else list(self.profile.default_scopes)
        if self.backend == "clerk":
            return {
                "iss": self.issuer, "sub": seed["user_id"], "sid": "sess_" + _random_id(27), "azp": client_id,
                "client_id": client_id, "scope": " ".join(granted), "jti": "oat_" + _random_id(32),
                "iat": now, "nbf": now - 10, "exp": now + lifetime, "v": 2,
                "email": seed["email"], "name": seed["name"],
            }
        return {
            "ver": 1, "jti": "AT." + _random_id(43), "iss": self.issuer, "aud": OKTA_AUDIENCE, "iat": now,
            "exp": now + lifetime, "cid": client_id, "uid": seed["user_id"], "scp": granted, "auth_time": now,
            "sub": seed["email"], "name": seed["name"],
        }

    def mint_like(self, token: str, user: str | None = None, *, scopes: list[str] | None = None) -> str:
        """A token that differs from `token` (one this instance issued, e.g. the primary user's from a headless
        flow) only in the user (`user`, else the same one) and, when given, the granted scopes (`[]`: an empty
        scope): same client, audience and lifetime, fresh `jti` (and `sid`). Raises jwt.PyJWTError for a token
        this instance did not issue."""
        original = self.verify(token)
        granted = scopes_of(original)
        client_id = original.get("client_id") or original.get("cid") or "mcp-evals-grader"
        lifetime = max(60, int(original["exp"]) - int(original["iat"]))
        claims = self.claims_for(str(client_id), granted, lifetime=lifetime,
                                 user=user or user_of(self.backend, original) or PRIMARY_USER)
        if scopes is not None:  # claims_for grants the backend's defaults for no scopes; here none means none
            if self.backend == "clerk":
                claims["scope"] = " ".join(scopes)
            else:
                claims["scp"] = list(scopes)
        return self.sign(claims)

    def sign(self, claims: dict[str, Any], *, foreign_key: bool = False) -> str:
        """RS256 with this instance's key, or with another key under the same `kid` (a forgery)."""
        key = self._key
        if foreign_key:
            with self._lock:
                if self._foreign_key is None:
                    self._foreign_key = _new_key()
                key = self._foreign_key
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": self.kid, "typ": "JWT"})

    def mint(self, *, client_id: str = "mcp-evals-grader", scopes: list[str] | None = None,
             issued_at: int | None = None, lifetime: int = ACCESS_TOKEN_LIFETIME_S,
             overrides: dict[str, Any] | None = None, foreign_key: bool = False, user: str = PRIMARY_USER) -> str:
        """A token without any flow (for probes): the backend's claims for a seeded user, optionally changed,
        optionally forged."""
        claims = {**self.claims_for(client_id, scopes, issued_at=issued_at, lifetime=lifetime, user=user),
                  **(overrides or {})}
        return self.sign(claims, foreign_key=foreign_key)

    def mint_unsigned(self, **kwargs: Any) -> str:
        """The same claims under `alg: none` and no signature."""
        claims = self.claims_for(kwargs.pop("client_id", "mcp-evals-grader"), **kwargs)
        header = {"alg": "none", "typ": "JWT", "kid": self.kid}
        return (f"{_b64url(json.dumps(header).encode())}."
                f"{_b64url(json.dumps(claims).encode())}.")

    def verify(self, token: str) -> dict[str, Any]:
        """The claims of a token this instance issued (raises jwt.PyJWTError otherwise)."""
        options = {"require": ["exp", "iat", "iss", "sub"]}
        return jwt.decode(token, self._key.public_key(), algorithms=["RS256"], issuer=self.issuer,
                          audience=self.audience, options=options)  # type: ignore[arg-type]

    def _issue(self, client_id: str, scopes: list[str]) -> dict[str, Any]:
        claims = self.claims_for(client_id, scopes)
        refresh = "rt_" + secrets.token_urlsafe(24)
        with self._lock:
            self.issued.append(claims)
            self._refresh[refresh] = (client_id, scopes)
        granted = claims["scope"] if "scope" in claims else " ".join(claims["scp"])
        return {"access_token": self.sign(claims), "token_type": "Bearer", "expires_in": ACCESS_TOKEN_LIFETIME_S,
                "scope": granted, "refresh_token": refresh}

    # ---- the endpoints (called from the HTTP handler threads) ---------------------------------------------

    def _metadata_paths(self) -> set[str]:
        issuer_path = self.profile.issuer_path
        paths = set()
        for doc in ("oauth-authorization-server", "openid-configuration"):
            paths.add(f"{issuer_path}/.well-known/{doc}")  # issuer-relative (OIDC discovery, Okta's layout)
            paths.add(f"/.well-known/{doc}{issuer_path}")  # RFC 8414 path insertion
        return paths

    def handle(self, method: str, path: str, query: dict[str, str], headers: dict[str, str],
               body: bytes) -> Reply:
        p = self.profile
        if method == "GET" and path in self._metadata_paths():
            return _json(200, self.metadata())
        if method == "GET" and path == p.jwks_path:
            return _json(200, self.jwks())
        if method == "POST" and path == p.register_path:
            return self._register(body)
        if method == "GET" and path == p.authorize_path:
            return self._authorize(query)
        if method == "POST" and path == p.token_path:
            return self._token(headers, body)
        if method in ("GET", "POST") and path == p.userinfo_path:
            return self._userinfo(headers)
        return _json(404, {"error": "not_found", "error_description": f"{method} {path}"})

    def _register(self, body: bytes) -> Reply:
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            return _json(400, {"error": "invalid_client_metadata", "error_description": "body is not JSON"})
        uris = data.get("redirect_uris") if isinstance(data, dict) else None
        if not isinstance(uris, list) or not uris or not all(isinstance(u, str) and u for u in uris):
            return _json(400, {"error": "invalid_redirect_uri", "error_description": "redirect_uris is required"})
        client_id = ("0oa" + _random_id(17)) if self.backend == "okta" else _random_id(16)
        info = {k: v for k, v in data.items() if k not in ("client_secret", "client_secret_expires_at")}
        info.update({"client_id": client_id, "client_id_issued_at": int(time.time()),
                     "token_endpoint_auth_method": "none",
                     "grant_types": data.get("grant_types") or ["authorization_code", "refresh_token"],
                     "response_types": ["code"], "redirect_uris": uris})
        with self._lock:
            self._clients[client_id] = _Client(client_id, list(uris), info)
        return _json(201, info)

    def _authorize(self, query: dict[str, str]) -> Reply:
        client_id = query.get("client_id", "")
        with self._lock:
            client = self._clients.get(client_id)
        if client is None:
            return _json(400, {"error": "invalid_client", "error_description": f"unknown client_id {client_id!r}"})
        redirect_uri = query.get("redirect_uri") or (client.redirect_uris[0] if len(client.redirect_uris) == 1
                                                     else "")
        if redirect_uri not in client.redirect_uris:
            return _json(400, {"error": "invalid_request", "error_description": "redirect_uri is not registered"})

        def back(params: dict[str, str]) -> Reply:
            if "state" in query:
                params["state"] = query["state"]
            params["iss"] = self.issuer
            split = urlsplit(redirect_uri)
            joined = "&".join(filter(None, [split.query, urlencode(params)]))
            return 302, {"Location": urlunsplit(split._replace(query=joined))}, b""

        if query.get("response_type") != "code":
            return back({"error": "unsupported_response_type"})
        if not query.get("code_challenge") or query.get("code_challenge_method") != "S256":
            return back({"error": "invalid_request", "error_description": "PKCE with S256 is required"})
        code = secrets.token_urlsafe(24)
        scopes = query.get("scope", "").split()
        with self._lock:
            self._codes[code] = _Grant(client_id, redirect_uri, query["code_challenge"], scopes,
                                       query.get("resource"), time.time() + CODE_LIFETIME_S)
        return back({"code": code})

    def _token(self, headers: dict[str, str], body: bytes) -> Reply:
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", errors="replace")).items()}
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            with self._lock:
                grant = self._codes.pop(form.get("code", ""), None)
            if grant is None or grant.expires_at < time.time():
                return _token_error("invalid_grant", "unknown or expired authorization code")
            client_id = form.get("client_id") or _basic_client_id(headers)
            if client_id != grant.client_id:
                return _token_error("invalid_grant", "the code was issued to another client")
            if form.get("redirect_uri", grant.redirect_uri) != grant.redirect_uri:
                return _token_error("invalid_grant", "redirect_uri does not match the authorization request")
            verifier = form.get("code_verifier", "")
            if not verifier or not secrets.compare_digest(_pkce_s256(verifier), grant.challenge):
                return _token_error("invalid_grant", "PKCE verification failed")
            return _json(200, self._issue(grant.client_id, grant.scopes), no_store=True)
        if grant_type == "refresh_token":
            with self._lock:
                found = self._refresh.pop(form.get("refresh_token", ""), None)
            if found is None:
                return _token_error("invalid_grant", "unknown refresh token")
            return _json(200, self._issue(*found), no_store=True)
        return _token_error("unsupported_grant_type", f"grant_type {grant_type!r} is not supported")

    def _userinfo(self, headers: dict[str, str]) -> Reply:
        auth = headers.get("authorization", "")
        try:
            if not auth.lower().startswith("bearer "):
                raise jwt.InvalidTokenError("no bearer token")
            claims = self.verify(auth[7:].strip())
        except jwt.PyJWTError:
            return 401, {"WWW-Authenticate": 'Bearer error="invalid_token"', "Content-Type": "application/json"}, (
                b'{"error": "invalid_token"}')
        seed = USERS[self.backend][user_of(self.backend, claims) or PRIMARY_USER]  # the token's user
        if self.backend == "okta":
            info = {"sub": seed["user_id"], "email": seed["email"], "preferred_username": seed["email"],
                    "name": seed["name"], "email_verified": True}
        else:
            info = {"sub": seed["user_id"], "email": seed["email"], "name": seed["name"],
                    "email_verified": True}
        return _json(200, info)

    # ---- a headless flow against itself (no MCP server involved) --------------------------------------------

    def obtain_token(self, *, scopes: list[str] | None = None, resource: str | None = None,
                     redirect_uri: str = "http://127.0.0.1:9/callback") -> str:
        """Register, authorize (auto-approved) and redeem the code with PKCE over HTTP, as a client would."""
        with httpx2.Client(timeout=10, follow_redirects=False) as http:
            reg = http.post(self.base_url + self.profile.register_path,
                            json={"client_name": "mcp-evals", "redirect_uris": [redirect_uri],
                                  "token_endpoint_auth_method": "none"})
            if reg.status_code != 201:
                raise IdpError(f"registration failed: {reg.status_code} {reg.text}")
            client_id = reg.json()["client_id"]
            verifier = secrets.token_urlsafe(48)
            params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
                      "state": secrets.token_urlsafe(8), "code_challenge": _pkce_s256(verifier),
                      "code_challenge_method": "S256"}
            if scopes:
                params["scope"] = " ".join(scopes)
            if resource:
                params["resource"] = resource
            auth = http.get(self.base_url + self.profile.authorize_path, params=params)
            code = parse_qs(urlsplit(auth.headers.get("location", "")).query).get("code")
            if auth.status_code != 302 or not code:
                raise IdpError(f"authorization failed: {auth.status_code} {auth.headers.get('location')}")
            form = {"grant_type": "authorization_code", "code": code[0], "redirect_uri": redirect_uri,
                    "client_id": client_id, "code_verifier": verifier}
            if resource:
                form["resource"] = resource
            tok = http.post(self.base_url + self.profile.token_path, data=form)
            if tok.status_code != 200:
                raise IdpError(f"token request failed: {tok.status_code} {tok.text}")
            return str(tok.json()["access_token"])

    # ---- lifecycle ------------------------------------------------------------------------------------------

    def stop(self) -> None:
        if self._httpd is None:
            return
        if self._thread is not None and self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()


Reply = tuple[int, dict[str, str], bytes]


def _json(status: int, body: Any, *, no_store: bool = False) -> Reply:
    headers = {"Content-Type": "application/json"}
    if no_store:
        headers.update({"Cache-Control": "no-store", "Pragma": "no-cache"})
    return status, headers, json.dumps(body).encode()


def _token_error(error: str, description: str) -> Reply:
    return _json(400, {"error": error, "error_description": description}, no_store=True)


def _basic_client_id(headers: dict[str, str]) -> str | None:
    auth = headers.get("authorization", "")
    if not auth.lower().startswith("basic "):
        return None
    try:
        return base64.b64decode(auth[6:]).decode().split(":", 1)[0]
    except (ValueError, UnicodeDecodeError):
        return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT_S

    def _serve(self) -> None:
        split = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._send((413, {"Connection": "close"}, b""))
            self.close_connection = True
            return
        body = self.rfile.read(length) if length > 0 else b""
        query = {k: v[0] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            reply = self.server.idp.handle(self.command, split.path.rstrip("/") or "/", query, headers, body)
        except Exception as exc:  # a bug of ours must still answer, visibly
            reply = _json(500, {"error": "server_error", "error_description": f"{type(exc).__name__}: {exc}"})
        self._send(reply)

    do_GET = do_POST = do_PUT = do_DELETE = _serve

    def _send(self, reply: Reply) -> None:
        status, headers, data = reply
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, idp: Idp):
        self.idp = idp
        super().__init__(("127.0.0.1", 0), _Handler)


def start_idp(backend: str) -> Idp:
    """A fresh IdP on its own free port, serving until `stop()`. Raises IdpError if it cannot start."""
    if backend not in PROFILES:
        raise IdpError(f"unknown OAuth backend {backend!r} (have: {', '.join(BACKENDS)})")
    profile = PROFILES[backend]  # type: ignore[index]
    idp = Idp(backend=profile.backend, profile=profile, base_url="", _key=_new_key(), kid=_random_id(20))
    try:
        httpd = _Server(idp)
    except OSError as exc:
        raise IdpError(f"could not bind 127.0.0.1: {exc}") from exc
    host, port = httpd.server_address[:2]
    idp.base_url = f"http://{host}:{port}"
    idp._httpd = httpd
    idp._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": POLL_INTERVAL_S},
                                   name=f"oauth-idp-{backend}-{port}", daemon=True)
    idp._thread.start()
    return idp


@contextlib.contextmanager
def running_idp(backend: str) -> Iterator[Idp]:
    idp = start_idp(backend)
    try:
        yield idp
    finally:
        idp.stop()


@contextlib.contextmanager
def agent_phase_env(contract: Any) -> Iterator[dict[str, str]]:
    """For the agent phase of a trial: a live IdP while the agent works, and the variables its sandbox gets.
    Nothing (and no IdP) for a task without `oauth`. Clerk tasks naming a real Frontend API URL also expose it,
    here only: grading always uses the deterministic local issuer."""
    spec = getattr(contract, "oauth", None)
    if spec is None:
        yield {}
        return
    with running_idp(spec.backend) as idp:
        env = idp.env()
        if spec.backend == "clerk" and spec.frontend_api_url:
            env[ENV_CLERK_FRONTEND_API_URL] = spec.frontend_api_url
        yield env


# ---- the real MCP client's OAuth flow, headless ---------------------------------------------------------------


class MemoryTokenStorage:
    """TokenStorage for OAuthClientProvider, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


class HeadlessBrowserError(Exception):
    """The authorization endpoint did not redirect back with a code."""


def headless_oauth(server_url: str, *, client_name: str = "mcp-evals-grader",
                   redirect_uri: str = "http://127.0.0.1:9/callback") -> tuple[Any, MemoryTokenStorage]:
    """The mcp SDK's OAuthClientProvider (discovery from the server's 401, DCR, authorization code + PKCE) with a
    headless "browser": it GETs the authorization URL without following the redirect and reads the code from
    `Location`. Use the provider as an httpx2 `auth`; the token lands in the storage."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    captured: dict[str, str] = {}

    async def redirect_handler(authorization_url: str) -> None:
        captured.clear()
        async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as http:
            response = await http.get(authorization_url)
        location = response.headers.get("location", "")
        params = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
        if response.status_code not in (301, 302, 303, 307) or "code" not in params:
            detail = params.get("error_description") or params.get("error") or response.text[:200]
            raise HeadlessBrowserError(f"GET {authorization_url.split('?')[0]} answered {response.status_code} "
                                       f"without a code ({detail})")
        captured.update(params)

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=captured["code"], state=captured.get("state"), iss=captured.get("iss"))

    storage = MemoryTokenStorage()
    provider = OAuthClientProvider(
        server_url=server_url,
        client_metadata=OAuthClientMetadata(client_name=client_name, redirect_uris=[redirect_uri],  # type: ignore[list-item]
                                            grant_types=["authorization_code", "refresh_token"],
                                            response_types=["code"], token_endpoint_auth_method="none"),
        storage=storage, redirect_handler=redirect_handler, callback_handler=callback_handler,
    )
    return provider, storage
