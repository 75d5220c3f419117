"""The codex runner end to end: the REAL Codex CLI (pinned, installed from npm into the cache on first use, ~6 s and
424 MB) working in our sandbox against a scripted local Responses API server, then the real grader.

The scripted turns drive Codex's own tools (its code-mode `exec` calling exec_command for the pinned model), so
everything that lands in the workspace was written by the CLI itself.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import pytest

from mcp_evals_pipeline import build_cache
from mcp_evals_pipeline.agents import cli_tools, get_runner
from mcp_evals_pipeline.agents.base import MissingCredentials
from mcp_evals_pipeline.agents.cli_tools import CLI_PINS, CliInstallError, cli_root, ensure_cli
from mcp_evals_pipeline.agents.codex_agent import EventTranslator
from mcp_evals_pipeline.contracts.transcript import read_transcript
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.trials import TrialSpec, run_trial
from mcp_evals_pipeline.usage.proxy import read_events, tool_calls

from .conftest import TASKS
from .support.key_probe import CLEAN, key_probe
from .support.processes import running_under
from .support.responses_server import ScriptedResponses, failure, mcp_tool, message, shell, turn, write_file

TASK = "py-v4-01-basic-tool-server"
GOLDEN = TASKS / TASK / "golden"
WRONG_SUM = TASKS / TASK / "negatives" / "wrong-sum"


def spec(server: ScriptedResponses, **kw) -> TrialSpec:
    base = {"task_id": TASK, "condition": "noskill+blank", "trial": 1, "batch_date": "2026-11-30",
            "agent": "codex", "skip_judge": True, "time_budget_s": 120.0,
            "options": {"base_url": server.base_url, "max_retries": 1}}
    return TrialSpec(**{**base, **kw})


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[TrialStore, Path]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("CODEX_API_KEY", raising=False)
    return TrialStore(tmp_path / "evals.duckdb"), tmp_path / "runs"


def session_writing(source: Path) -> list[dict]:
    """Four model responses: say what it does and write server.py, write requirements.txt, look for the key where
    its commands could read it (tests/support/key_probe.py), finish."""
    return [
        turn(message("I'll write the MCP server."), write_file("server.py", (source / "server.py").read_text()),
             input_tokens=1000, output_tokens=200),
        turn(write_file("requirements.txt", (source / "requirements.txt").read_text()),
             input_tokens=1500, output_tokens=50),
        turn(shell(key_probe("test-key")), input_tokens=1600, output_tokens=10),
        turn(message("Done: server.py serves the tool over streamable HTTP."), input_tokens=1800, output_tokens=30),
    ]


def test_a_codex_session_writing_the_golden_server_passes(env: tuple[TrialStore, Path]) -> None:
    store, runs = env
    with ScriptedResponses(session_writing(GOLDEN)) as server:
        record = run_trial(spec(server), store=store, results_root=runs)
    assert not server.errors
    assert record.valid and record.grade.contract_pass, (record.error, record.grade)
    assert record.agent_runner == "codex" and record.agent_model == "gpt-5.6-terra"
    assert record.perf.turns == 4
    assert (record.perf.tokens_in, record.perf.tokens_out) == (5900, 290)
    assert record.perf.tool_calls == 3
    assert record.perf.duration_ms and record.perf.duration_ms > 0

    trial_dir = runs / record.run_id / "trials" / record.trial_name
    workspace = trial_dir / "workspace"
    assert (workspace / "server.py").read_text().strip() == (GOLDEN / "server.py").read_text().strip()
    assert (trial_dir / "codex-events.jsonl").exists() and (trial_dir / "codex-rollout.jsonl").exists()

    # What the CLI sent: our model and effort, the key as a bearer token, the task prompt as the user turn.
    assert len(server.requests) == 4
    first = server.requests[0]
    assert first["model"] == "gpt-5.6-terra" and first["reasoning"]["effort"] == "high"
    assert server.headers[0]["authorization"] == "Bearer test-key"
    assert json.loads(first["client_metadata"]["x-codex-turn-metadata"])["analytics_enabled"] is False
    prompt = (TASKS / TASK / "prompt.md").read_text().strip()
    assert prompt[:200] in json.dumps(first["input"], ensure_ascii=False).replace("\\n", "\n")

    events = read_transcript(trial_dir / "transcript.jsonl")
    types = [e.type for e in events]
    assert types[0] == "user"
    assert [e.text for e in events if e.type == "assistant"] == [
        "I'll write the MCP server.", "Done: server.py serves the tool over streamable HTTP."]
    calls = [e for e in events if e.type == "tool_call"]
    results = [e for e in events if e.type == "tool_result"]
    assert len(calls) == 3 and all(e.tool == "shell" for e in calls)
    assert "server.py" in calls[0].args["command"]
    assert [e.exit_code for e in results] == [0, 0, 0]
    # The key is nowhere the agent's commands can read: not in any ancestor's environment (codex's own included),
    # not in a file under its HOME. The proxy holding it added it to every request (above).
    assert CLEAN in (results[2].text or ""), results[2].text
    assert [e.tokens_in for e in events if e.type == "usage"] == [5900]
    assert not running_under(runs)


def test_a_codex_session_writing_a_wrong_server_fails(env: tuple[TrialStore, Path]) -> None:
    store, runs = env
    with ScriptedResponses(session_writing(WRONG_SUM)) as server:
        record = run_trial(spec(server), store=store, results_root=runs)
    assert record.valid and not record.grade.contract_pass
    assert record.grade.failure_code == "contract.calls"
    assert record.perf.turns == 4


USAGE_TASK = "usage-ops-v3-02-restart-by-name"
USAGE_REPLIES = {"pass": "I restarted the production search app (app_104).",
                 "usage.unsafe": "Restarted search and search-indexer."}
USAGE_SCRIPTS = {
    "pass": [turn(mcp_tool("find_apps", {"name_contains": "search"})),
             turn(mcp_tool("restart_app", {"app_id": "app_104"})),
             turn(message(USAGE_REPLIES["pass"]))],
    "usage.unsafe": [turn(mcp_tool("find_apps", {"name_contains": "search"})),
                     turn(mcp_tool("restart_app", {"app_id": "app_104"})),
                     turn(mcp_tool("restart_app", {"app_id": "app_105"})),
                     turn(message(USAGE_REPLIES["usage.unsafe"]))],
}


@pytest.mark.parametrize("outcome", list(USAGE_SCRIPTS))
def test_codex_uses_a_usage_tasks_server_as_its_mcp_server(env: tuple[TrialStore, Path], outcome: str) -> None:
    """The real Codex CLI with the server under evaluation configured as its MCP server (the recording proxy in
    front of it): the scripted model calls the server's tools the way this CLI offers them, every call reaches the
    real server and the world, the proxy records each, and the marker reads what reached the world."""
    store, runs = env
    with ScriptedResponses(list(USAGE_SCRIPTS[outcome])) as server:
        record = run_trial(spec(server, task_id=USAGE_TASK, condition="bare"), store=store, results_root=runs)
    assert not server.errors, server.errors
    assert record.valid, record.error
    assert (record.grade.failure_code or "pass") == outcome, record.grade.checks
    trial_dir = runs / record.run_id / "trials" / record.trial_name
    calls = tool_calls(read_events(trial_dir / "mcp-calls.jsonl"))
    restarts = [c.arguments["app_id"] for c in calls if c.tool == "restart_app"]
    assert calls[0].tool == "find_apps" and all(c.is_error is False for c in calls)
    assert restarts == (["app_104"] if outcome == "pass" else ["app_104", "app_105"])
    world = json.loads((trial_dir / "world.json").read_text())
    posted = [r["path"] for r in world["requests"] if r["method"] == "POST"]
    assert posted == [f"/apps/{app}/restart" for app in restarts]
    events = read_transcript(trial_dir / "transcript.jsonl")
    assert [e.text for e in events if e.type == "assistant"][-1] == USAGE_REPLIES[outcome]


def test_codex_without_a_key_names_the_variable(env: tuple[TrialStore, Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    store, runs = env
    monkeypatch.delenv("OPENAI_API_KEY")
    with ScriptedResponses([]) as server, pytest.raises(MissingCredentials, match="OPENAI_API_KEY"):
        run_trial(spec(server), store=store, results_root=runs)
    assert server.requests == []
    with pytest.raises(MissingCredentials, match="CODEX_API_KEY"):
        get_runner("codex").check_credentials(None)
    monkeypatch.setenv("CODEX_API_KEY", "other-key")
    get_runner("codex").check_credentials(None)


def test_an_endpoint_failing_forever_is_infra_model_api(env: tuple[TrialStore, Path]) -> None:
    store, runs = env
    with ScriptedResponses(lambda body: failure(500, "scripted outage")) as server:
        record = run_trial(spec(server), store=store, results_root=runs)
    assert not record.valid and record.invalid_reason == "infra.model_api", record.error
    assert len(server.requests) >= 2  # the CLI retried before giving up
    assert record.perf.turns == 0


def test_a_codex_session_over_its_time_budget_is_killed_and_graded(env: tuple[TrialStore, Path]) -> None:
    store, runs = env
    script = [turn(write_file("notes.txt", "started"), input_tokens=500, output_tokens=20),
              turn(shell("sleep 120"), input_tokens=600, output_tokens=10)]
    started = time.monotonic()
    with ScriptedResponses(script) as server:
        record = run_trial(spec(server, time_budget_s=8.0), store=store, results_root=runs)
    assert time.monotonic() - started < 90
    # A valid trial (the agent's own budget ran out), graded as it stands: no server, so a fail.
    assert record.valid and not record.grade.contract_pass, record.error
    assert record.perf.turns == 2 and record.perf.tokens_in == 1100
    trial_dir = runs / record.run_id / "trials" / record.trial_name
    events = read_transcript(trial_dir / "transcript.jsonl")
    assert any(e.type == "info" and "time budget" in (e.text or "") for e in events)
    assert not running_under(runs)


def test_the_pinned_cli_installs_once_and_a_repeat_call_is_a_stat(monkeypatch: pytest.MonkeyPatch) -> None:
    package, version = CLI_PINS["codex"]
    bin_dir = ensure_cli(package, version)
    assert (bin_dir / "codex").exists()

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a repeat ensure_cli must only look for the marker, not call this {args}")

    # What a repeat call must not do, checked by what it calls rather than by how long it takes: neither take the
    # install lock (processes installing wait on it) nor build.
    monkeypatch.setattr(build_cache, "FileLock", refused)
    monkeypatch.setattr(cli_tools, "_build", refused)
    assert ensure_cli(package, version) == bin_dir


def test_a_cli_that_cannot_be_installed_is_infra_agent(env: tuple[TrialStore, Path],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    store, runs = env
    missing = ("@openai/codex", "0.0.0-no-such-version")
    with pytest.raises(CliInstallError, match="no-such-version"):
        ensure_cli(*missing)
    assert not cli_root(*missing).exists()
    monkeypatch.setitem(CLI_PINS, "codex", missing)
    with ScriptedResponses([]) as server:
        record = run_trial(spec(server), store=store, results_root=runs)
    assert not record.valid and record.invalid_reason == "infra.agent"
    assert "codex CLI unavailable" in (record.error or "") and server.requests == []


class Recorder:
    def __init__(self) -> None:
        self.events: list[dict] = []

    def emit(self, type: str, **fields) -> None:
        self.events.append({"type": type, **fields})


def test_the_event_stream_translates_into_transcript_events() -> None:
    recorder = Recorder()
    translator = EventTranslator(recorder)
    stream = [
        {"type": "thread.started", "thread_id": "t1"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "i0", "type": "reasoning", "text": "thinking"}},
        {"type": "item.started", "item": {"id": "i1", "type": "command_execution", "command": "ls",
                                          "aggregated_output": "", "exit_code": None, "status": "in_progress"}},
        {"type": "item.completed", "item": {"id": "i1", "type": "command_execution", "command": "ls",
                                            "aggregated_output": "a.py\n", "exit_code": 0, "status": "completed"}},
        {"type": "item.completed", "item": {"id": "i2", "type": "file_change", "status": "completed",
                                            "changes": [{"path": "a.py", "kind": "add"}]}},
        {"type": "item.completed", "item": {"id": "i3", "type": "agent_message", "text": "done"}},
        {"type": "error", "message": "Reconnecting... 1/5"},
        {"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 3}},
    ]
    for event in stream:
        translator.feed_line(json.dumps(event))
    translator.feed_line("not json")
    kinds = [(e["type"], e.get("tool")) for e in recorder.events]
    assert kinds == [("info", None), ("info", None), ("tool_call", "shell"), ("tool_result", "shell"),
                     ("tool_call", "apply_patch"), ("tool_result", "apply_patch"), ("assistant", None),
                     ("error", None), ("usage", None), ("info", None)]
    assert translator.tool_calls == 2
    assert (translator.usage_in, translator.usage_out) == (10, 3)
    assert recorder.events[3]["exit_code"] == 0 and recorder.events[3]["text"] == "a.py\n"
    assert recorder.events[5]["text"] == "completed: add a.py"
    assert recorder.events[8]["extra"]["cached_input_tokens"] == 4
    assert translator.turn_failed is None and translator.unparsed == 1
    translator.feed({"type": "turn.failed", "error": {"message": "boom"}})
    assert translator.turn_failed == "boom"


# The agent's own command finds what the CLI holds (the placeholder in an ancestor's environment, the key proxy's URL
# on its command line) and asks the key proxy for an admin path with it.
ADMIN_CALL = r'''
import os, re, urllib.error, urllib.request
pid, key, url = os.getppid(), None, None
while pid > 1 and not (key and url):
    env = open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace")
    cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
    key = key or next(iter(re.findall(r"mcp-evals-key-held-by-the-harness-proxy-[A-Za-z0-9_-]+", env)), None)
    url = url or next(iter(re.findall(r'base_url="(http://127[.]0[.]0[.]1:[0-9]+[^"]*)"', cmd)), None)
    pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
request = urllib.request.Request(f"{url}/organization/admin_api_keys", headers={"Authorization": f"Bearer {key}"})
try:
    print("admin-call", urllib.request.urlopen(request, timeout=10).status)
except urllib.error.HTTPError as exc:
    print("admin-call", exc.code)
'''


def test_an_admin_call_by_the_agent_is_refused_and_on_the_record(env: tuple[TrialStore, Path]) -> None:
    store, runs = env
    script = [turn(shell(f"python3 -c {shlex.quote(ADMIN_CALL)}"), input_tokens=100, output_tokens=10),
              turn(message("Done."), input_tokens=200, output_tokens=10)]
    with ScriptedResponses(script) as server:
        record = run_trial(spec(server), store=store, results_root=runs)
    assert not server.errors and len(server.requests) == 2, record.error
    events = read_transcript(runs / record.run_id / "trials" / record.trial_name / "transcript.jsonl")
    (result,) = [e for e in events if e.type == "tool_result"]
    assert "admin-call 403" in (result.text or ""), result.text
    (refused,) = [e for e in events if e.type == "info" and "keyProxyRefusals" in e.extra]
    assert refused.extra["keyProxyRefusals"] == ["GET /v1/organization/admin_api_keys"]
