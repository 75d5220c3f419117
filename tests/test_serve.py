"""`mcp-evals serve` driven by the real `mcp` client: over stdio (the CLI as a subprocess) and over Streamable HTTP.

The authoring round lands a tiny task (py-v4-01's golden and one of its negatives, under a two-requirement contract)
that `verify-tasks --task` then proves; one refused submit shows every gate rule's reason at once; the HTTP server
refuses requests without its token; a draft whose build step reads a host canary leaks nothing into any answer.
Gradings are the slow part (~10 s each here): each test makes as few as its claim needs.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from mcp_evals_pipeline.procs import can_connect, free_port
from mcp_evals_pipeline.sandbox import server_box

from .conftest import REPO, TASKS

pytestmark = pytest.mark.skipif(not server_box.available(), reason="grading needs the bubblewrap boxes")

SOURCE = TASKS / "py-v4-01-basic-tool-server"
GOLDEN = {p.name: p.read_text() for p in (SOURCE / "golden").iterdir()}
WRONG_SUM = {p.name: p.read_text() for p in (SOURCE / "negatives" / "wrong-sum").iterdir()
             if p.name != "negative.json"}
PROMPT = ("# A tiny adding server\n\nBuild an MCP server in Python with the official `mcp` SDK: one tool `add` "
          "taking integers `a` and `b` and returning their sum. Serve Streamable HTTP at `/mcp` on the port in "
          "`PORT`; the entry file is `server.py`; declare dependencies in `requirements.txt`.\n")
CONTRACT: dict[str, Any] = {
    "title": "Tiny adding server",
    "runtime": "python",
    "requirements": [{"id": "add-returns-sum", "text": "add returns a + b"}],
    "entryCandidates": ["server.py"],
    "expectedTools": [{"name": "add", "requiredProps": ["a", "b"]}],
    "calls": [{"tool": "add", "args": {"a": 2, "b": 40}, "expect": {"type": "number-equals", "value": 41},
               "requirements": ["add-returns-sum"]}],
}


def _negative(code: str, violates: str, files: dict[str, str]) -> dict[str, Any]:
    return {"declaration": {"failureCode": code, "why": "known bad", "violates": violates}, "files": files}


@pytest.fixture
def serve_env(tmp_path: Path) -> dict[str, str]:
    """A tasks dir and a results dir (the drafts area) of the test's own; the caches stay shared (warm envs)."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "prompt-hashes.lock.json").write_text('{"py-v4-01-basic-tool-server": "0123456789ab"}\n')
    (tasks / "suites.json").write_text(json.dumps({"tiny-suite": {
        "title": "t", "sdkPackage": "mcp", "registry": "pypi", "tasks": ["py-v4-01-basic-tool-server"]}}))
    env = {**os.environ, "MCP_EVALS_TASKS_DIR": str(tasks), "MCP_EVALS_RESULTS_DIR": str(tmp_path / "results")}
    env.pop("MCP_EVALS_DRAFTS_DIR", None)
    env.pop("MCP_EVALS_SERVE_TOKEN", None)
    return env


@contextlib.asynccontextmanager
async def stdio_session(env: dict[str, str], errlog: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_evals_pipeline.cli", "serve"], env=env,
                                   cwd=str(REPO))
    with errlog.open("a") as err:
        async with Client(stdio_client(params, errlog=err), mode="legacy", read_timeout_seconds=300) as client:
            yield client


async def call(client: Client, tool: str, **args: Any) -> tuple[bool, Any, str]:
    """(isError, structured content, text) of one tool call."""
    result = await client.call_tool(tool, args)
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    return bool(result.is_error), result.structured_content, text


def test_an_authoring_round_lands_a_task_that_verify_tasks_proves(serve_env: dict[str, str], tmp_path: Path) -> None:
    """create (a path escape refused first) -> revise (a bad field refused, naming its path; a path escape refused)
    -> run_check -> submit: tasks/<id>/ written and locked, the draft gone, the id frozen; verify-tasks proves it."""
    tasks = Path(serve_env["MCP_EVALS_TASKS_DIR"])
    drafts = Path(serve_env["MCP_EVALS_RESULTS_DIR"]) / "drafts"
    draft = {"prompt": PROMPT + "\nThe grader will call add(2, 40).\n", "contract": CONTRACT, "golden": GOLDEN}

    async def session() -> None:
        async with stdio_session(serve_env, tmp_path / "serve.log") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"create_draft", "revise_draft", "run_check", "submit_draft"} <= names

            escape = {**draft, "golden": {**GOLDEN, "../../escaped.py": "x = 1\n"}}
            is_error, _, text = await call(client, "create_draft", draft_id="tiny-add", draft=escape)
            assert is_error and "may not contain '..'" in text, text
            assert not drafts.exists() or not any(drafts.iterdir())
            is_error, _, text = await call(client, "create_draft", draft_id="../tiny", draft=draft)
            assert is_error and "not a plain name" in text, text

            is_error, view, text = await call(client, "create_draft", draft_id="tiny-add", draft=draft)
            assert not is_error, text
            assert view["files"]["golden/server.py"] == GOLDEN["server.py"]
            assert any("announces what is tested" in p for p in view["problems"]), view["problems"]
            assert any("add-returns-sum: no negative violates it" in p for p in view["problems"])

            for bad, said in (({"op": "set", "path": "files.golden/../../x.py", "value": "x"}, "'..'"),
                              ({"op": "set", "path": "files./etc/x.py", "value": "x"}, "must be relative"),
                              ({"op": "set", "path": "contract.calls.0.tool", "value": 5}, "contract.calls.0.tool")):
                is_error, _, text = await call(client, "revise_draft", draft_id="tiny-add", patch=[bad])
                assert is_error and said in text, (bad, text)
            assert not (tmp_path / "x.py").exists() and not (drafts / "x.py").exists()

            is_error, view, text = await call(client, "revise_draft", draft_id="tiny-add", patch=[
                {"op": "set", "path": "prompt", "value": PROMPT},
                {"op": "set", "path": "contract.calls.0.expect.0.value", "value": 42},
                {"op": "set", "path": "negatives.wrong-sum", "value": {
                    "failureCode": "contract.calls", "why": "subtracts", "violates": "add-returns-sum"}},
                *({"op": "set", "path": f"files.negatives/wrong-sum/{name}", "value": text}
                  for name, text in WRONG_SUM.items()),
            ])
            assert not is_error, text
            assert view["problems"] == [], view["problems"]
            assert view["changed"][1]["before"] == 41 and view["changed"][1]["after"] == 42

            is_error, grade, text = await call(client, "run_check", draft_id="tiny-add", path="tiny-add/golden")
            assert not is_error and grade["contractPass"] is True, text

            is_error, outcome, text = await call(client, "submit_draft", draft_id="tiny-add", suite="tiny-suite")
            assert not is_error and outcome["submitted"] is True, text
            suites = json.loads((tasks / "suites.json").read_text())
            assert suites["tiny-suite"]["tasks"] == ["py-v4-01-basic-tool-server", "tiny-add"]
            assert sorted(g["solution"] for g in outcome["graded"]) == ["golden:golden", "negative:wrong-sum"]
            lock = json.loads((tasks / "prompt-hashes.lock.json").read_text())
            assert lock["tiny-add"] == outcome["promptHash"] and "py-v4-01-basic-tool-server" in lock
            assert not (drafts / "tiny-add").exists()

            is_error, _, text = await call(client, "create_draft", draft_id="tiny-add", draft=draft)
            assert is_error and "frozen" in text, text

    anyio.run(session)
    landed = tasks / "tiny-add"
    assert (landed / "prompt.md").read_text() == PROMPT
    assert json.loads((landed / "task.json").read_text())["calls"][0]["expect"][0]["value"] == 42
    done = subprocess.run([sys.executable, "-m", "mcp_evals_pipeline.cli", "verify-tasks", "--task", "tiny-add",
                           "--json"], env=serve_env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [r["ok"] for r in json.loads(done.stdout)["results"]] == [True, True]


@contextlib.contextmanager
def http_server(env: dict[str, str], log: Path) -> Iterator[str]:
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mcp_evals_pipeline.cli", "serve", "--http", "--port",
                                 str(port)], env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not can_connect("127.0.0.1", port):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_http_needs_the_token_and_a_refused_submit_gives_every_reason(serve_env: dict[str, str],
                                                                       tmp_path: Path) -> None:
    """Over HTTP: no token or a wrong one is 401; with it, one submit breaking every gate rule is refused with each
    reason (golden fails, a negative passes, a negative fails at another code, a requirement without a negative, a
    prompt announcing its test), and nothing is written under tasks/."""
    token = uuid.uuid4().hex
    env = {**serve_env, "MCP_EVALS_SERVE_TOKEN": token}
    tasks = Path(env["MCP_EVALS_TASKS_DIR"])
    before = sorted(p.name for p in tasks.iterdir()), (tasks / "prompt-hashes.lock.json").read_text()
    contract = {**CONTRACT, "calls": [{**CONTRACT["calls"][0], "expect": {"type": "number-equals", "value": 42}}],
                "requirements": [*CONTRACT["requirements"], {"id": "tool-named-add", "text": "a tool named add"}],
                "expectedTools": [{**CONTRACT["expectedTools"][0], "requirements": ["tool-named-add"]}]}
    syntax_error = {"server.py": "def add(a, b)\n    return a + b\n", "requirements.txt": "mcp>=2.3,<3\n"}
    draft = {"prompt": PROMPT + "\nThe grader will call add with two numbers.\n", "contract": contract,
             "golden": WRONG_SUM, "negatives": {
                 "passes": _negative("contract.calls", "add-returns-sum", GOLDEN),
                 "other-code": _negative("contract.calls", "add-returns-sum", syntax_error)}}

    async def session(url: str) -> None:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http:
            initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
            headers = {"Accept": "application/json, text/event-stream"}
            for auth in ({}, {"Authorization": f"Bearer {token}x"}, {"Authorization": token}):
                response = await http.post(url, json=initialize, headers={**headers, **auth})
                assert response.status_code == 401, (auth, response.status_code)
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                      timeout=httpx2.Timeout(30, read=300)) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            is_error, view, text = await call(client, "create_draft", draft_id="tiny-bad", draft=draft)
            assert not is_error, text
            is_error, outcome, text = await call(client, "submit_draft", draft_id="tiny-bad", suite="tiny-suit")
            assert not is_error and outcome["submitted"] is False, text
            reasons = "\n".join(outcome["reasons"])
            for said in ("golden:golden: expected pass, got contract.calls",
                         "negative:passes: expected contract.calls, got pass",
                         "negative:other-code: expected contract.calls, got contract.typecheck",
                         "tool-named-add: no negative violates it",
                         "prompt.md announces what is tested: 'The grader will call'",
                         "suite: no such suite 'tiny-suit'"):
                assert said in reasons, (said, reasons)
            is_error, view, _ = await call(client, "get_draft", draft_id="tiny-bad")
            assert not is_error and view["draftId"] == "tiny-bad"  # a refusal leaves the draft as it was

    with http_server(env, tmp_path / "serve.log") as url:
        anyio.run(session, url)
    assert (sorted(p.name for p in tasks.iterdir()), (tasks / "prompt-hashes.lock.json").read_text()) == before


def test_a_draft_whose_build_reads_a_host_canary_leaks_nothing(serve_env: dict[str, str], tmp_path: Path) -> None:
    """The golden's build step (the contract's buildCommand, agent-written) reads a canary file in the checkout: it
    runs only in the grader's box, so neither run_check nor submit_draft nor get_draft answers with its content."""
    token = uuid.uuid4().hex
    canary = REPO / f".hostprobe-serve-{token}"
    secret = f"HOSTPROBE-serve-{token}"
    canary.write_text(secret)
    # It prints what it read and fails: a build box that let it read the canary would put it in the build's detail.
    contract = {**CONTRACT, "buildCommand": ["sh", "-c", f"cat {canary}; exit 1"]}
    draft = {"prompt": PROMPT, "contract": contract, "golden": GOLDEN}
    answers: list[str] = []

    async def session() -> None:
        async with stdio_session(serve_env, tmp_path / "serve.log") as client:
            for tool, args in (("create_draft", {"draft_id": "canary", "draft": draft}),
                               ("run_check", {"draft_id": "canary", "path": "canary/golden"}),
                               ("submit_draft", {"draft_id": "canary", "suite": "tiny-suite"}),
                               ("get_draft", {"draft_id": "canary"}), ("list_drafts", {})):
                is_error, structured, text = await call(client, tool, **args)
                answers.append(json.dumps(structured) + text)
                assert not is_error, (tool, text)

    try:
        anyio.run(session)
    finally:
        canary.unlink(missing_ok=True)
    assert all(secret not in answer for answer in answers)
    assert '"failureCode": "contract.build"' in answers[1]  # the build ran, in its box, and could not read it
    assert '"submitted": false' in answers[2]


def test_drafts_stay_inside_their_directory_and_patches_name_their_path(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """In process (no grading): patches set / append / unset and name the path they fail at; a negative's files
    need its declaration; a symlink planted in a draft (the server never makes one) is never written through, read
    through, graded or submitted; discard, list, the draft:// resource and the author_task prompt."""
    from mcp_evals_pipeline.serve.server import build_server

    monkeypatch.setenv("MCP_EVALS_TASKS_DIR", str(tmp_path / "tasks"))
    monkeypatch.setenv("MCP_EVALS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.delenv("MCP_EVALS_DRAFTS_DIR", raising=False)
    (tmp_path / "tasks").mkdir()
    drafts = tmp_path / "results" / "drafts"
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("HOSTPROBE-outside")
    draft = {"prompt": PROMPT, "contract": CONTRACT, "golden": GOLDEN}

    async def session() -> None:
        async with Client(build_server(), mode="legacy") as client:
            assert not (await call(client, "create_draft", draft_id="d1", draft=draft))[0]
            is_error, view, text = await call(client, "revise_draft", draft_id="d1", patch=[
                {"op": "append", "path": "contract.calls", "value": {"tool": "add", "args": {"a": 1, "b": 1}}},
                {"op": "unset", "path": "contract.calls.0.requirements"},
                {"op": "set", "path": "contract.calls.1.args.b", "value": 2}])
            assert not is_error, text
            assert view["contract"]["calls"][1]["args"] == {"a": 1, "b": 2} and "requirements" not in \
                view["contract"]["calls"][0]
            assert any("add-returns-sum: no check names it" in p for p in view["problems"]), view["problems"]
            for patch, said in (
                    ({"op": "set", "path": "contract.calls.5.tool", "value": "x"}, "patch[0]: path 'contract.calls.5."
                                                                                    "tool': contract.calls.5 is out"),
                    ({"op": "set", "path": "title", "value": "x"}, "starts with prompt, contract"),
                    ({"op": "unset", "path": "contract.entryCandidates"}, "contract.entryCandidates: Field required"),
                    ({"op": "set", "path": "files.negatives/n1/server.py", "value": "x"}, "need its declaration"),
                    ({"op": "set", "path": "files.negatives/n1/negative.json", "value": "{}"}, "declaration"),
                    ({"op": "set", "path": "negatives.n1", "value": {"failureCode": "infra.x", "why": "w"}},
                     "negatives.n1.failureCode: must be a contract.<stage> code")):
                is_error, _, text = await call(client, "revise_draft", draft_id="d1", patch=[patch])
                assert is_error and said in text, (patch, text)

            (drafts / "d1" / "alternates").symlink_to(outside, target_is_directory=True)
            (drafts / "d1" / "golden" / "leak.txt").symlink_to(secret)
            is_error, _, text = await call(client, "revise_draft", draft_id="d1", patch=[
                {"op": "set", "path": "files.alternates/x/server.py", "value": "x = 1\n"}])
            assert is_error and "symlink" in text, text
            assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
            for args in ({"path": "d1/alternates"}, {"path": "d1/golden"}, {"path": "../outside"},
                         {"files": {"/abs.py": "x"}}, {"files": {"a/../../b.py": "x"}}):
                is_error, _, text = await call(client, "run_check", draft_id="d1", **args)
                assert is_error and ("symlink" in text or "relative" in text or "'..'" in text), (args, text)
            for args, said in (({"task_id": "no-such-task", "files": {"a.py": "x"}}, "no such task"),
                               ({"draft_id": "d1", "task_id": "d1", "files": {}}, "exactly one of draft_id"),
                               ({"draft_id": "d1"}, "exactly one of files")):
                is_error, _, text = await call(client, "run_check", **args)
                assert is_error and said in text, (args, text)
            is_error, view, text = await call(client, "get_draft", draft_id="d1")
            assert not is_error and "HOSTPROBE" not in json.dumps(view), text
            is_error, _, text = await call(client, "submit_draft", draft_id="d1", suite="tiny-suite")
            assert is_error and "symlinks" in text and "HOSTPROBE" not in text, text
            assert not any((tmp_path / "tasks").iterdir())

            assert not (await call(client, "create_draft", draft_id="d2", draft=draft))[0]
            listed = (await call(client, "list_drafts"))[1]["drafts"]
            assert [(x["draftId"], x["title"]) for x in listed] == [("d1", "Tiny adding server"),
                                                                    ("d2", "Tiny adding server")]
            read = await client.read_resource("draft://d2")
            assert json.loads(read.contents[0].text)["contract"]["title"] == "Tiny adding server"
            prompt = await client.get_prompt("author_task", {"task_id": "my-task"})
            assert "submit_draft" in prompt.messages[0].content.text and "my-task" in prompt.messages[0].content.text
            assert (await call(client, "discard_draft", draft_id="d2"))[1] == {"draftId": "d2", "discarded": True}
            is_error, _, text = await call(client, "get_draft", draft_id="d2")
            assert is_error and "no draft 'd2'" in text, text
            assert secret.read_text() == "HOSTPROBE-outside"

    anyio.run(session)
