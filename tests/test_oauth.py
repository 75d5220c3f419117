"""OAuth: the local IdP (both backends), the real mcp client's flow against it, the `oauth` stage against real
server processes, the seed-constants rule for OAuth tasks, and the IdP live during a trial's agent phase."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import jwt
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from mcp_evals_pipeline import oauth_idp, procs
from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.oauth_idp import (
    BACKENDS,
    CLERK_SEED_EMAIL,
    CLERK_SEED_NAME,
    CLERK_SEED_USER_ID,
    OKTA_AUDIENCE,
    OKTA_SEED_EMAIL,
    OKTA_SEED_NAME,
    OKTA_SEED_USER_ID,
    USERS,
    Idp,
    agent_phase_env,
    headless_oauth,
    running_idp,
    seed_constants,
)
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.tasks.catalog import discover_tasks
from mcp_evals_pipeline.trials import TrialSpec, run_trial

from .conftest import TASKS

CLERK_TASK = "py-v4-12-oauth-whoami"
OKTA_TASK = "py-v4-13-oauth-whoami-okta"
TASK_OF = {"clerk": CLERK_TASK, "okta": OKTA_TASK}
SEED_OF = {"clerk": (CLERK_SEED_USER_ID, CLERK_SEED_EMAIL, CLERK_SEED_NAME),
           "okta": (OKTA_SEED_USER_ID, OKTA_SEED_EMAIL, OKTA_SEED_NAME)}
REDIRECT = "http://127.0.0.1:9/callback"


def _register(http: httpx2.Client, idp: Idp) -> str:
    response = http.post(idp.base_url + idp.profile.register_path, json={"redirect_uris": [REDIRECT]})
    assert response.status_code == 201, response.text
    return str(response.json()["client_id"])


def _authorize(http: httpx2.Client, idp: Idp, client_id: str, challenge: str) -> str:
    response = http.get(idp.base_url + idp.profile.authorize_path, params={
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "s1",
        "code_challenge": challenge, "code_challenge_method": "S256"})
    assert response.status_code == 302
    params = parse_qs(urlsplit(response.headers["location"]).query)
    assert params["state"] == ["s1"] and params["iss"] == [idp.issuer]
    return params["code"][0]


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


# ---- the IdP ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_idp_metadata_is_served_wherever_a_client_looks(backend: str) -> None:
    with running_idp(backend) as idp, httpx2.Client(timeout=5) as http:
        path = urlsplit(idp.issuer).path
        for url in (f"{idp.issuer}/.well-known/oauth-authorization-server",
                    f"{idp.issuer}/.well-known/openid-configuration",
                    f"{idp.base_url}/.well-known/oauth-authorization-server{path}",
                    f"{idp.base_url}/.well-known/openid-configuration{path}"):
            meta = http.get(url).json()
            assert meta["issuer"] == idp.issuer, url
        assert meta["jwks_uri"] == idp.jwks_uri
        assert meta["code_challenge_methods_supported"] == ["S256"]
        keys = http.get(idp.jwks_uri).json()["keys"]
        assert [(k["kty"], k["alg"], k["kid"]) for k in keys] == [("RSA", "RS256", idp.kid)]
        assert "d" not in keys[0]  # the public half only
        assert http.get(idp.base_url + "/nope").status_code == 404


def test_idp_env_names_and_issuer_layouts() -> None:
    with running_idp("clerk") as clerk, running_idp("okta") as okta:
        assert clerk.env() == {"OAUTH_ISSUER_URL": clerk.base_url, "OAUTH_JWKS_URL": clerk.jwks_uri}
        assert okta.env() == {"OAUTH_ISSUER_URL": okta.base_url + "/oauth2/default",
                              "OAUTH_JWKS_URL": okta.base_url + "/oauth2/default/v1/keys",
                              "OAUTH_AUDIENCE": OKTA_AUDIENCE}
        assert clerk.base_url != okta.base_url


def test_clerk_tokens_have_clerks_claim_shape() -> None:
    with running_idp("clerk") as idp:
        token = idp.obtain_token(scopes=["profile", "email"])
        header = jwt.get_unverified_header(token)
        assert header["alg"] == "RS256" and header["kid"] == idp.kid
        claims = idp.verify(token)
    assert claims["sub"] == CLERK_SEED_USER_ID and claims["sub"].startswith("user_")
    assert claims["sid"].startswith("sess_") and claims["jti"].startswith("oat_")
    assert claims["azp"] == claims["client_id"] and claims["scope"] == "profile email"
    assert claims["email"] == CLERK_SEED_EMAIL and claims["name"] == CLERK_SEED_NAME
    assert claims["nbf"] <= claims["iat"] < claims["exp"]
    assert "aud" not in claims  # Clerk binds no audience


def test_okta_tokens_have_oktas_claim_shape() -> None:
    with running_idp("okta") as idp:
        token = idp.obtain_token()
        claims = idp.verify(token)
    assert claims["sub"] == OKTA_SEED_EMAIL and claims["uid"] == OKTA_SEED_USER_ID
    assert claims["uid"].startswith("00u") and claims["cid"].startswith("0oa")
    assert claims["ver"] == 1 and claims["jti"].startswith("AT.") and claims["aud"] == OKTA_AUDIENCE
    assert claims["scp"] == ["openid", "profile", "email"] and claims["name"] == OKTA_SEED_NAME
    assert claims["iss"].endswith("/oauth2/default")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_token_verifies_against_the_published_jwks(backend: str) -> None:
    """What a server does: the key from OAUTH_JWKS_URL, the issuer (and audience) from the env."""
    with running_idp(backend) as idp:
        env = idp.env()
        token = idp.obtain_token()
        key = jwt.PyJWKClient(env["OAUTH_JWKS_URL"]).get_signing_key_from_jwt(token)
        claims = jwt.decode(token, key.key, algorithms=["RS256"], issuer=env["OAUTH_ISSUER_URL"],
                            audience=env.get("OAUTH_AUDIENCE"))
        assert claims["iss"] == idp.issuer
        forged = idp.mint(foreign_key=True)
        assert jwt.get_unverified_header(forged)["kid"] == idp.kid
        with pytest.raises(jwt.InvalidSignatureError):
            jwt.decode(forged, key.key, algorithms=["RS256"], options={"verify_aud": False})


def test_each_instance_has_its_own_port_and_keys() -> None:
    with running_idp("clerk") as first, running_idp("clerk") as second:
        assert first.base_url != second.base_url and first.kid != second.kid
        token = first.obtain_token()
        with pytest.raises(jwt.PyJWTError):
            second.verify(token)


def test_authorization_code_flow_enforces_pkce_clients_and_single_use_codes() -> None:
    with running_idp("clerk") as idp, httpx2.Client(timeout=5) as http:
        token_url = idp.base_url + idp.profile.token_path
        client_id = _register(http, idp)
        verifier = secrets.token_urlsafe(48)

        code = _authorize(http, idp, client_id, _s256(verifier))
        wrong = http.post(token_url, data={"grant_type": "authorization_code", "code": code, "client_id": client_id,
                                           "redirect_uri": REDIRECT, "code_verifier": "x" * 50})
        assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
        # a failed redemption burns the code
        again = http.post(token_url, data={"grant_type": "authorization_code", "code": code, "client_id": client_id,
                                           "redirect_uri": REDIRECT, "code_verifier": verifier})
        assert again.status_code == 400

        code = _authorize(http, idp, client_id, _s256(verifier))
        ok = http.post(token_url, data={"grant_type": "authorization_code", "code": code, "client_id": client_id,
                                        "redirect_uri": REDIRECT, "code_verifier": verifier})
        assert ok.status_code == 200 and ok.headers["cache-control"] == "no-store"
        body = ok.json()
        assert body["token_type"] == "Bearer" and idp.verify(body["access_token"])["sub"] == CLERK_SEED_USER_ID
        refreshed = http.post(token_url, data={"grant_type": "refresh_token", "refresh_token": body["refresh_token"]})
        assert refreshed.status_code == 200 and idp.verify(refreshed.json()["access_token"])

        unknown = http.get(idp.base_url + idp.profile.authorize_path, params={
            "response_type": "code", "client_id": "nobody", "redirect_uri": REDIRECT,
            "code_challenge": "c" * 43, "code_challenge_method": "S256"})
        assert unknown.status_code == 400
        plain = http.get(idp.base_url + idp.profile.authorize_path, params={
            "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "s",
            "code_challenge": "c" * 43, "code_challenge_method": "plain"})
        assert plain.status_code == 302 and "error=invalid_request" in plain.headers["location"]
        assert len(idp.issued) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_userinfo_answers_for_its_own_tokens_only(backend: str) -> None:
    with running_idp(backend) as idp, httpx2.Client(timeout=5) as http:
        url = idp.base_url + idp.profile.userinfo_path
        info = http.get(url, headers={"Authorization": f"Bearer {idp.obtain_token()}"}).json()
        user_id, email, name = SEED_OF[backend]
        assert (info["sub"], info["email"], info["name"]) == (user_id, email, name)
        assert http.get(url, headers={"Authorization": f"Bearer {idp.mint(foreign_key=True)}"}).status_code == 401


# ---- the seeded users ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_backend_seeds_a_primary_and_a_distinct_secondary_user(backend: str) -> None:
    users = USERS[backend]
    assert set(users) == set(oauth_idp.USER_NAMES) == {"primary", "secondary"}
    assert users["primary"] == dict(zip(("user_id", "email", "name"), SEED_OF[backend], strict=True))
    primary, secondary = users["primary"], users["secondary"]
    assert all(secondary[key] != primary[key] for key in primary)
    assert secondary["user_id"].startswith("user_" if backend == "clerk" else "00u")
    assert len(secondary["user_id"]) == len(primary["user_id"]) and "@" in secondary["email"]
    assert seed_constants(backend) == set(primary.values())
    assert seed_constants(backend, "secondary") == set(secondary.values())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_token_minted_like_the_flows_differs_only_in_the_user(backend: str) -> None:
    with running_idp(backend) as idp, httpx2.Client(timeout=5) as http:
        primary = idp.obtain_token()
        minted = idp.mint_like(primary, "secondary")
        assert jwt.get_unverified_header(minted) == jwt.get_unverified_header(primary)
        before, after = idp.verify(primary), idp.verify(minted)  # same issuer, key and (okta) audience
        user = USERS[backend]["secondary"]
        if backend == "clerk":
            identity = {"sub": user["user_id"], "email": user["email"], "name": user["name"]}
            fresh = {"sid", "jti", "iat", "nbf", "exp"}
        else:
            identity = {"uid": user["user_id"], "sub": user["email"], "name": user["name"]}
            fresh = {"jti", "iat", "exp", "auth_time"}
        assert {k: after[k] for k in identity} == identity
        assert all(before[k] != after[k] for k in identity)
        assert set(after) == set(before)
        same = {k: v for k, v in before.items() if k not in identity.keys() | fresh}
        assert {k: after[k] for k in same} == same  # client, scopes, issuer, audience
        kept = {"iss", "client_id", "azp", "scope"} if backend == "clerk" else {"iss", "aud", "cid", "scp", "ver"}
        assert kept <= set(same)
        assert after["exp"] - after["iat"] == before["exp"] - before["iat"]
        assert oauth_idp.user_of(backend, after) == "secondary" and oauth_idp.user_of(backend, before) == "primary"
        assert len(idp.issued) == 1  # only the flow's token went through the endpoints

        url = idp.base_url + idp.profile.userinfo_path
        info = http.get(url, headers={"Authorization": f"Bearer {minted}"}).json()
        assert (info["sub"], info["email"], info["name"]) == (user["user_id"], user["email"], user["name"])
        with pytest.raises(oauth_idp.IdpError, match="no seeded user"):
            idp.mint(user="tertiary")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_token_minted_with_other_scopes_differs_only_in_its_scope(backend: str) -> None:
    with running_idp(backend) as idp:
        flow = idp.obtain_token()
        before = idp.verify(flow)
        scope_claim = "scope" if backend == "clerk" else "scp"
        fresh = {"sid", "jti", "iat", "nbf", "exp", "auth_time"}
        other = idp.profile.other_scope
        assert other not in oauth_idp.scopes_of(before)
        for scopes in ([other], []):
            after = idp.verify(idp.mint_like(flow, scopes=scopes))
            assert after[scope_claim] == (" ".join(scopes) if backend == "clerk" else scopes)
            assert oauth_idp.scopes_of(after) == scopes
            assert {k: v for k, v in after.items() if k not in fresh | {scope_claim}} == \
                {k: v for k, v in before.items() if k not in fresh | {scope_claim}}  # same user, client, audience
            assert after["exp"] - after["iat"] == before["exp"] - before["iat"]
        secondary = idp.verify(idp.mint_like(flow, "secondary", scopes=[]))
        assert oauth_idp.user_of(backend, secondary) == "secondary" and oauth_idp.scopes_of(secondary) == []


def test_as_user_names_a_user_of_the_idp_when_the_contract_loads() -> None:
    base = {"title": "t", "entryCandidates": ["server.py"], "expectedTools": [{"name": "whoami"}]}
    for backend in BACKENDS:
        for user in USERS[backend]:
            contract = TaskContract.model_validate({**base, "oauth": {"backend": backend},
                                                    "calls": [{"tool": "whoami", "asUser": user}]})
            assert contract.calls[0].as_user == user
    with pytest.raises(ValueError, match=r"calls\[0\]\.asUser 'tertiary' is not a user of the okta IdP"):
        TaskContract.model_validate({**base, "oauth": {"backend": "okta"},
                                     "calls": [{"tool": "whoami", "asUser": "tertiary"}]})
    with pytest.raises(ValueError, match="needs an oauth section"):
        TaskContract.model_validate({**base, "calls": [{"tool": "whoami", "asUser": "secondary"}]})


def test_stop_releases_the_port() -> None:
    with running_idp("okta") as idp:
        port = urlsplit(idp.base_url).port
        assert procs.can_connect("127.0.0.1", port)
    assert not idp.running and not procs.can_connect("127.0.0.1", port)


# ---- the real mcp client against a golden server -------------------------------------------------------------


@contextlib.contextmanager
def served(backend: str, tmp_path: Path, solution: str = "golden") -> Iterator[tuple[Idp, str]]:
    """A task's solution running under this repo's venv with a fresh IdP's env."""
    source = TASKS / TASK_OF[backend] / solution / "server.py"
    with running_idp(backend) as idp:
        port = procs.free_port()
        env = {**os.environ, **idp.env(), "PORT": str(port)}
        proc = procs.spawn([sys.executable, str(source)], cwd=tmp_path, env=env, log_path=tmp_path / "server.log")
        try:
            deadline = time.monotonic() + 30
            while not procs.can_connect("127.0.0.1", port):
                assert proc.poll() is None, (tmp_path / "server.log").read_text()
                assert time.monotonic() < deadline, "server did not listen"
                time.sleep(0.05)
            yield idp, f"http://127.0.0.1:{port}/mcp"
        finally:
            procs.kill_tree(proc)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_mcp_clients_oauth_flow_signs_in_headless(backend: str, tmp_path: Path) -> None:
    """OAuthClientProvider from the server's 401: PRM discovery, AS metadata, DCR, authorization code + PKCE."""

    async def session(url: str) -> tuple[str, object]:
        provider, storage = headless_oauth(url)
        async with httpx2.AsyncClient(auth=provider, timeout=30) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            result = await client.call_tool("whoami", {})
            text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
        return text, storage

    with served(backend, tmp_path) as (idp, url):
        text, storage = anyio.run(session, url)
        assert all(value in text for value in SEED_OF[backend]), text
        assert storage.client_info is not None and idp.verify(storage.tokens.access_token)
        assert len(idp.issued) == 1


# ---- the stage against real server processes ----------------------------------------------------------------


def _grade(task_id: str, solution: str, tmp_path: Path):
    task = next(t for t in discover_tasks()[0] if t.id == task_id)
    workspace = tmp_path / "ws"
    shutil.copytree(task.dir / solution, workspace, ignore=shutil.ignore_patterns("negative.json"))
    return grade_workspace_sync(task.contract, workspace)


def test_stage_passes_the_golden_and_authenticates_every_later_check(tmp_path: Path) -> None:
    grade = _grade(OKTA_TASK, "golden", tmp_path)
    assert grade.contract_pass, grade.first_failure
    ids = [c.id for c in grade.checks]
    assert ids[ids.index("start") + 1: ids.index("handshake")] == [
        "oauth:missing-token", "oauth:resource-metadata", "oauth:bad-signature", "oauth:malformed-token",
        "oauth:unsigned-token", "oauth:expired-token", "oauth:wrong-audience", "oauth:token", "oauth:any-scope"]
    assert {c.stage for c in grade.checks if c.id.startswith("oauth:")} == {"oauth"}
    token_check = next(c for c in grade.checks if c.id == "oauth:token")
    assert f"token for {OKTA_SEED_EMAIL}" in (token_check.detail or "")
    scope_check = next(c for c in grade.checks if c.id == "oauth:any-scope")
    assert scope_check.detail == ("only the scope 'offline_access': a session, 1 tools listed, whoami answered; an "
                                  "empty scope: a session, 1 tools listed, whoami answered")


def test_stage_fails_a_server_without_auth_at_the_missing_token_probe(tmp_path: Path) -> None:
    grade = _grade(CLERK_TASK, "negatives/no-auth", tmp_path)
    assert grade.failure_code == "contract.oauth"
    assert grade.first_failure is not None and grade.first_failure.id == "oauth:missing-token"
    assert "HTTP 200" in (grade.first_failure.detail or "")
    assert all(c.detail == "blocked by oauth" for c in grade.checks[grade.checks.index(grade.first_failure) + 1:])


def test_stage_fails_a_server_that_skips_the_signature_check(tmp_path: Path) -> None:
    grade = _grade(CLERK_TASK, "negatives/unverified-signature", tmp_path)
    assert grade.failure_code == "contract.oauth"
    assert grade.first_failure is not None and grade.first_failure.id == "oauth:bad-signature"
    assert "signed by another key" in (grade.first_failure.detail or "")


def test_every_refusal_path_must_carry_the_challenge_not_only_the_first(tmp_path: Path) -> None:
    """The prompts state one refusal form (401 + Bearer with resource_metadata) for every path they list: a gate
    that answers an expired token with a bare 401 passes the earlier paths and fails at that path's own check."""
    workspace = tmp_path / "ws"
    shutil.copytree(TASKS / CLERK_TASK / "alternates" / "asgi-bearer-gate", workspace)
    server = workspace / "server.py"
    source = server.read_text()
    expired = ("def expired(token):\n    try:\n"
               '        return jwt.decode(token, options={"verify_signature": False})["exp"] < time.time()\n'
               "    except (jwt.PyJWTError, KeyError):\n        return False\n\n\n")
    bare = ('            if claims is None and expired(auth[7:].strip()):\n'
            '                return await send_json(send, 401, {"error": "token_expired"})\n'
            # a malformed token's challenge names the same document by another host: that is still the metadata
            '            if claims is None and auth[:7].lower() == "bearer " and auth.count(".") != 2:\n'
            '                alias = METADATA_URL.replace("127.0.0.1", "localhost")\n'
            '                return await send_json(send, 401, {"error": "invalid_token"}, [(b"www-authenticate", '
            'f\'Bearer resource_metadata="{alias}"\'.encode())])\n')
    anchor = "            if claims is None:\n"
    patched = (source.replace(anchor, bare + anchor, 1).replace("import json\n", "import json\nimport time\n", 1)
               .replace("class BearerGate:", expired + "class BearerGate:", 1))
    assert patched.count("token_expired") == 1 and "import time" in patched and "def expired" in patched
    server.write_text(patched)
    contract = next(t for t in discover_tasks()[0] if t.id == CLERK_TASK).contract
    grade = grade_workspace_sync(contract, workspace)
    assert grade.failure_code == "contract.oauth"
    assert grade.first_failure is not None and grade.first_failure.id == "oauth:expired-token", grade.first_failure
    assert "401 without a WWW-Authenticate header" in (grade.first_failure.detail or "")
    passed = [c.id for c in grade.checks if c.passed]
    assert passed[-5:] == ["oauth:missing-token", "oauth:resource-metadata", "oauth:bad-signature",
                           "oauth:malformed-token", "oauth:unsigned-token"]
    details = {c.id: c.detail or "" for c in grade.checks}
    assert "resource_metadata=http://localhost:" in details["oauth:malformed-token"]
    assert all("resource_metadata=http://127.0.0.1:" in details[c] for c in ("oauth:bad-signature",
                                                                             "oauth:unsigned-token"))


def test_a_server_requiring_the_scope_every_sign_in_gets_fails_at_any_scope(tmp_path: Path) -> None:
    """The negative passes every probe of grader 2.5 (each of its tokens carried email) and fails here: a valid
    token with another scope gets 403 insufficient_scope."""
    grade = _grade(CLERK_TASK, "negatives/requires-granted-scope", tmp_path)
    assert grade.failure_code == "contract.oauth"
    assert grade.first_failure is not None and grade.first_failure.id == "oauth:any-scope", grade.first_failure
    detail = grade.first_failure.detail or ""
    assert "only the scope 'public_metadata' got HTTP 403" in detail and "insufficient_scope" in detail, detail
    assert next(c for c in grade.checks if c.id == "oauth:token").passed


def test_a_tool_that_requires_a_scope_fails_at_any_scope(tmp_path: Path) -> None:
    """A scope required by the tool alone (the session opens, the call is refused) fails too, at the replay of
    the contract's first call; a server whose call fails with any token is left to the calls stage."""
    shutil.copytree(TASKS / CLERK_TASK / "golden", tmp_path / "ws")
    server = tmp_path / "ws" / "server.py"
    source = server.read_text()
    anchor = "    claims = (token.claims if token else None) or {}\n"
    check = ('    if "email" not in (token.scopes if token else []):\n'
             '        raise ValueError("the email scope is required")\n')
    assert source.count(anchor) == 1
    server.write_text(source.replace(anchor, anchor + check))
    contract = next(t for t in discover_tasks()[0] if t.id == CLERK_TASK).contract
    grade = grade_workspace_sync(contract, tmp_path / "ws")
    assert grade.failure_code == "contract.oauth"
    assert grade.first_failure is not None and grade.first_failure.id == "oauth:any-scope", grade.first_failure
    detail = grade.first_failure.detail or ""
    assert detail.startswith("whoami with a token of the signed-in user with only the scope 'public_metadata' -> "
                             "an error result") and "own token got a normal result" in detail, detail


def test_an_idp_that_cannot_start_is_infra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_evals_pipeline.grader.stages import oauth as stage

    def broken(backend: str) -> Idp:
        raise oauth_idp.IdpError("no port for you")

    monkeypatch.setattr(stage, "start_idp", broken)
    grade = _grade(CLERK_TASK, "golden", tmp_path)
    assert grade.failure_code == "infra.oauth" and not grade.valid
    assert "no port for you" in (grade.error or "")


def _as_user_contract(backend: str) -> TaskContract:
    """The Python task's contract plus a whoami call as the secondary user (its whole identity, and not the
    primary's), between two calls as the primary user."""
    contract = next(t for t in discover_tasks()[0] if t.id == TASK_OF[backend]).contract
    primary = contract.calls[0]
    user = USERS[backend]["secondary"]
    expect = [{"type": "contains", "value": user["user_id"], "caseSensitive": True},
              {"type": "contains", "value": user["email"]}, {"type": "contains", "value": user["name"]},
              {"type": "not-contains", "value": SEED_OF[backend][0]}]
    data = contract.model_dump(by_alias=True, exclude_none=True)
    data["calls"] = [primary.model_dump(by_alias=True, exclude_none=True),
                     {"tool": "whoami", "args": {}, "isError": False, "asUser": "secondary", "expect": expect},
                     primary.model_dump(by_alias=True, exclude_none=True)]
    return TaskContract.model_validate(data)


def _hardcoded_primary(backend: str, workspace: Path) -> None:
    """The golden with auth intact, but whoami answers the primary user whatever the token says."""
    shutil.copytree(TASKS / TASK_OF[backend] / "golden", workspace)
    source = (workspace / "server.py").read_text()
    user_id, email, name = SEED_OF[backend]
    fixed = json.dumps({"id": user_id, "email": email, "name": name})
    patched, count = re.subn(r"return json\.dumps\(\{\"id\": claims[^\n]*", f"return {fixed!r}", source)
    assert count == 1
    (workspace / "server.py").write_text(patched)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_server_answering_the_primary_identity_fails_the_secondary_users_call(backend: str,
                                                                                tmp_path: Path) -> None:
    contract = _as_user_contract(backend)
    _hardcoded_primary(backend, tmp_path / "ws")
    grade = grade_workspace_sync(contract, tmp_path / "ws")
    assert grade.failure_code == "contract.calls", grade.first_failure
    ids = [c.id for c in grade.checks]
    assert grade.first_failure is not None and grade.first_failure.id == "call:whoami:2"
    assert next(c for c in grade.checks if c.id == "call:whoami:1").passed  # the primary user's call passes
    detail = grade.first_failure.detail or ""
    assert "as the secondary user" in detail and USERS[backend]["secondary"]["user_id"] in detail, detail
    assert ids.index("call:whoami:2") == len(ids) - 2 and grade.checks[-1].detail == "blocked by calls"


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_golden_answers_each_user_on_its_own_session(backend: str, tmp_path: Path) -> None:
    shutil.copytree(TASKS / TASK_OF[backend] / "golden", tmp_path / "ws")
    grade = grade_workspace_sync(_as_user_contract(backend), tmp_path / "ws")
    assert grade.contract_pass, grade.first_failure
    assert [c.id for c in grade.checks if c.stage == "calls"] == ["call:whoami:1", "call:whoami:2", "call:whoami:3"]


def test_a_server_refusing_the_secondary_users_token_fails_that_call(tmp_path: Path) -> None:
    """A token for another user is still a valid token of the issuer: refusing it is the server's failure,
    named at the call (not an oauth probe)."""
    backend = "clerk"
    shutil.copytree(TASKS / TASK_OF[backend] / "golden", tmp_path / "ws")
    server = tmp_path / "ws" / "server.py"
    source = server.read_text()
    patched = source.replace("        except jwt.PyJWTError:\n            return None\n",
                             "        except jwt.PyJWTError:\n            return None\n"
                             f"        if claims['sub'] != {CLERK_SEED_USER_ID!r}:\n            return None\n")
    assert patched != source
    server.write_text(patched)
    grade = grade_workspace_sync(_as_user_contract(backend), tmp_path / "ws")
    assert grade.failure_code == "contract.calls"
    assert grade.first_failure is not None and grade.first_failure.id == "call:whoami:2"
    assert "initialize as the secondary user" in (grade.first_failure.detail or ""), grade.first_failure.detail


# ---- the rule: whoami expectations are the IdP's seed constants -------------------------------------------------


def test_oauth_tasks_expect_only_the_idps_seed_constants() -> None:
    tasks, errors = discover_tasks()
    assert not errors
    oauth_tasks = [t for t in tasks if t.kind == "build" and t.contract.oauth is not None]
    assert {CLERK_TASK, OKTA_TASK} <= {t.id for t in oauth_tasks}
    for task in oauth_tasks:
        backend = task.contract.oauth.backend
        for call in task.contract.calls:
            user = call.as_user or "primary"
            # a call as one user expects that user's values, and may rule out any seeded user's (not-contains)
            allowed = {"contains": seed_constants(backend, user),
                       "not-contains": set().union(*(seed_constants(backend, u) for u in USERS[backend]))}
            stray = [str(e.value) for e in call.expect
                     if e.type in allowed and str(e.value) not in allowed[e.type]]
            assert not stray, f"{task.id}: {stray} are not seed constants of oauth_idp ({backend}, {user} user)"


def test_the_oauth_tasks_check_the_whole_identity() -> None:
    for backend, task_id in TASK_OF.items():  # the calls as the primary (signed-in) user name all of that user
        task = next(t for t in discover_tasks()[0] if t.id == task_id)
        values = {str(e.value) for call in task.contract.calls if call.as_user in (None, "primary")
                  for e in call.expect if e.type == "contains"}
        assert values == seed_constants(backend)
    # Tasks with requirements check the whole identity of every user they call as, the secondary one included.
    for task in discover_tasks()[0]:
        if task.kind != "build" or task.contract.oauth is None or not task.contract.requirements:
            continue
        backend = task.contract.oauth.backend
        users = {call.as_user or "primary" for call in task.contract.calls}
        assert "secondary" in users, f"{task.id}: no call as the secondary user"
        for user in users:
            values = {str(e.value) for call in task.contract.calls if (call.as_user or "primary") == user
                      for e in call.expect if e.type == "contains"}
            assert values == seed_constants(backend, user), (task.id, user)


# ---- the agent phase ----------------------------------------------------------------------------------------


def test_agent_phase_env_is_empty_without_oauth_and_exposes_the_frontend_api_url_for_clerk() -> None:
    base = {"title": "t", "entryCandidates": ["server.py"]}
    with agent_phase_env(TaskContract.model_validate(base)) as env:
        assert env == {}
    contract = TaskContract.model_validate({**base, "oauth": {
        "backend": "clerk", "frontendApiUrl": "https://example.clerk.accounts.dev"}})
    with agent_phase_env(contract) as env:
        assert env["MCP_USE_OAUTH_CLERK_FRONTEND_API_URL"] == "https://example.clerk.accounts.dev"
        issuer = env["OAUTH_ISSUER_URL"]
        assert httpx2.get(issuer + "/.well-known/oauth-authorization-server").json()["issuer"] == issuer
    assert not procs.can_connect("127.0.0.1", urlsplit(issuer).port)
    with pytest.raises(ValueError, match="clerk backend only"):
        TaskContract.model_validate({**base, "oauth": {"backend": "okta", "frontendApiUrl": "https://x.dev"}})


PROBE = ("python3 -c \"import json, os, urllib.request; iss = os.environ['OAUTH_ISSUER_URL']; "
         "md = json.load(urllib.request.urlopen(iss + '/.well-known/oauth-authorization-server')); "
         "seen = {k: v for k, v in os.environ.items() if k.startswith(('OAUTH_', 'MCP_USE_'))}; "
         "open('agent-env.json', 'w').write(json.dumps({'env': seen, 'issuer': md['issuer']}))\"")


def test_a_trial_runs_the_agent_phase_against_a_live_idp_and_grades_against_a_fresh_one(tmp_path: Path) -> None:
    golden = TASKS / CLERK_TASK / "golden"
    session = tmp_path / "session.jsonl"
    lines = [{"type": "assistant", "text": "Checking the identity provider the shell points at."},
             {"type": "tool", "tool": "shell", "args": {"command": PROBE, "timeout_s": 30}}]
    lines += [{"type": "tool", "tool": "write_file", "args": {"path": name, "content": (golden / name).read_text()}}
              for name in ("server.py", "requirements.txt")]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines))
    spec = TrialSpec(task_id=CLERK_TASK, condition="noskill+blank", trial=1, batch_date="2026-11-30",
                     agent="replay", options={"session": str(session)})
    record = run_trial(spec, store=TrialStore(tmp_path / "evals.duckdb"), results_root=tmp_path / "runs")

    workspace = tmp_path / "runs" / record.run_id / "trials" / record.trial_name / "workspace"
    seen = json.loads((workspace / "agent-env.json").read_text())
    agent_issuer = seen["env"]["OAUTH_ISSUER_URL"]
    assert seen["issuer"] == agent_issuer  # the IdP was live while the agent worked
    # No frontendApiUrl on this task (the telemetry switch is in every sanitized environment).
    assert set(seen["env"]) == {"OAUTH_ISSUER_URL", "OAUTH_JWKS_URL", "MCP_USE_ANONYMIZED_TELEMETRY"}
    assert not procs.can_connect("127.0.0.1", urlsplit(agent_issuer).port)  # and is gone after the trial

    assert record.valid and record.grade.contract_pass, record.grade.first_failure
    metadata_check = next(c for c in record.grade.checks if c.id == "oauth:resource-metadata")
    assert agent_issuer not in (metadata_check.detail or "")  # grading used a fresh IdP on another port


def test_goldens_parse_and_use_only_the_pinned_env(tmp_path: Path) -> None:
    """The prompts pin the variable names; the goldens read exactly those (a cheap guard against drift)."""
    for backend, task_id in TASK_OF.items():
        source = (TASKS / task_id / "golden" / "server.py").read_text()
        names = set(re.findall(r'os\.environ\["([A-Z_]+)"\]', source))
        assert names == {"PORT"} | running_env_names(backend), (task_id, names)
        subprocess.run([sys.executable, "-m", "py_compile", str(TASKS / task_id / "golden" / "server.py")],
                       check=True, cwd=tmp_path, env={**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path)})


def running_env_names(backend: str) -> set[str]:
    with running_idp(backend) as idp:
        return set(idp.env())
