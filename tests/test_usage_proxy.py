"""The recording MCP proxy (usage/proxy.py): a real server process behind it, the real mcp client in front."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.trial_dir import PROXY_LOG
from mcp_evals_pipeline.usage.proxy import read_events, recording_proxy, tool_calls
from mcp_evals_pipeline.usage.world import mcp_client, result_text

# A server that asks for confirmation before it acts, as a careful server team's would.
CONFIRMING_SERVER = '''
import os
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

mcp = MCPServer("confirming", instructions="Ask before acting.")
done = []


class Confirm(BaseModel):
    confirm: bool


@mcp.tool()
async def restart_project(project: str, ctx: Context) -> str:
    """Restart every app of a project (asks the user first)."""
    answer = await ctx.elicit(f"Restart every app of {project}?", Confirm)
    if answer.action == "accept" and answer.data.confirm:
        done.append(project)
        return f"restarted {project}"
    return f"not restarted: the user answered {answer.action}"


@mcp.tool()
def restarted() -> str:
    """What was restarted."""
    return ",".join(done) or "nothing"


@mcp.tool()
def broken() -> str:
    """Always fails."""
    raise ValueError("the tool broke")


@mcp.resource("note://readme")
def readme() -> str:
    return "hello from the readme"


@mcp.prompt()
def triage(app: str) -> str:
    """How to triage an app."""
    return f"Look at the logs of {app} first."


mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("confirming")
    (root / "server.py").write_text(CONFIRMING_SERVER)
    port = procs.free_port()
    proc = subprocess.Popen([sys.executable, str(root / "server.py")], env={**procs.sanitized_env(home=root,
                            tmp=root), "PORT": str(port)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while port not in procs.listening_ports(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline, "the test server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


def test_every_exchange_is_recorded_and_confirmations_are_declined(server: str, tmp_path: Path) -> None:
    record = tmp_path / "mcp-calls.jsonl"

    async def session() -> dict[str, object]:
        async with recording_proxy(server, record) as proxy, mcp_client(proxy.url) as client:
            seen: dict[str, object] = {"instructions": (client.instructions, proxy.server_instructions),
                                       "tools": [t.name for t in (await client.list_tools()).tools]}
            seen["restart"] = result_text(await client.call_tool("restart_project", {"project": "shop"}))
            seen["after"] = result_text(await client.call_tool("restarted", {}))
            broken = await client.call_tool("broken", {})
            seen["broken"] = (broken.is_error, result_text(broken))
            seen["readme"] = (await client.read_resource("note://readme")).contents[0].text
            seen["resources"] = [str(r.uri) for r in (await client.list_resources()).resources]
            seen["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
            seen["prompt"] = (await client.get_prompt("triage", {"app": "shop"})).messages[0].content.text
            return seen

    seen = anyio.run(session)
    # The server's own instructions are read, never relayed: a usage condition decides whether the model gets them.
    assert seen["instructions"] == (None, "Ask before acting.")
    assert seen["tools"] == ["restart_project", "restarted", "broken"]
    assert seen["restart"] == "not restarted: the user answered decline"  # the proxy said no
    assert seen["after"] == "nothing"
    assert seen["broken"] == (True, "Error executing tool broken")  # the server's own error text
    assert seen["readme"] == "hello from the readme"
    assert (seen["resources"], seen["prompts"]) == (["note://readme"], ["triage"])
    assert seen["prompt"] == "Look at the logs of shop first."

    events = read_events(record)
    (asked,) = [e for e in events if e.event == "elicitation"]
    assert asked.answer == "decline" and asked.text == "Restart every app of shop?"
    assert asked.requested_schema and "confirm" in asked.requested_schema["properties"]
    calls = tool_calls(events)
    assert [(c.tool, c.arguments, c.is_error) for c in calls] == [
        ("restart_project", {"project": "shop"}, False), ("restarted", {}, False), ("broken", {}, True)]
    assert asked.during == [calls[0].id]  # asked while restart_project was in flight
    assert [e.method for e in events if e.event == "request"] == [
        "tools/list", "tools/call", "tools/call", "tools/call", "resources/read", "resources/list", "prompts/list",
        "prompts/get"]
    # Recorded as it happened: every request before its own answer.
    order = {(e.event, e.id): e.seq for e in events if e.id is not None}
    assert all(order[("request", c.id)] < order[("result", c.id)] for c in calls)


def test_the_proxy_answers_only_at_its_secret_path(server: str, tmp_path: Path,
                                                   capfd: pytest.CaptureFixture[str]) -> None:
    async def probe() -> tuple[int, int, str]:
        async with recording_proxy(server, tmp_path / "calls.jsonl") as proxy:
            origin = proxy.url.rsplit("/", 2)[0]
            async with httpx2.AsyncClient() as http:
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
                guessed = await http.post(f"{origin}/mcp", json=body)
                other = await http.post(f"{origin}/x/mcp", json=body)
            host, port = origin.removeprefix("http://").split(":")
            with socket.create_connection((host, int(port))) as raw:  # not HTTP: uvicorn logs a warning
                raw.sendall(b"\x00garbage\r\n\r\n")
                raw.recv(1024)
            return guessed.status_code, other.status_code, origin

    guessed, other, origin = anyio.run(probe)
    assert guessed == 404 and other == 404
    # What the proxy's HTTP server logs goes to the trial's files (proxy.log beside the record), not the console.
    assert "Invalid HTTP request received." in (tmp_path / PROXY_LOG).read_text()
    assert "Invalid HTTP request" not in capfd.readouterr().err
    host, port = origin.removeprefix("http://").split(":")
    assert host == "127.0.0.1"
    with socket.socket() as sock:  # closed with the block: nothing listens there any more
        assert sock.connect_ex(("127.0.0.1", int(port))) != 0


def test_a_server_that_dies_mid_run_is_an_error_on_record(tmp_path: Path) -> None:
    root = tmp_path / "srv"
    root.mkdir()
    (root / "server.py").write_text(CONFIRMING_SERVER)
    port = procs.free_port()
    proc = subprocess.Popen([sys.executable, str(root / "server.py")],
                            env={**procs.sanitized_env(home=root, tmp=root), "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while port not in procs.listening_ports(proc.pid):
            assert proc.poll() is None
            time.sleep(0.05)

        async def session() -> bool:
            async with recording_proxy(f"http://127.0.0.1:{port}/mcp", tmp_path / "calls.jsonl") as proxy, \
                    mcp_client(proxy.url) as client:
                await client.list_tools()
                proc.kill()
                proc.wait()
                try:
                    result = await client.call_tool("restarted", {})
                except Exception:
                    return True  # the runner got an error
                return bool(result.is_error)

        assert anyio.run(session)
    finally:
        proc.kill()
    (call,) = tool_calls(read_events(tmp_path / "calls.jsonl"))
    assert call.tool == "restarted" and call.is_error is True and call.text
