"""Agent runners: the replay sessions grade as their names say, and the openai loop against a real local HTTP
endpoint (ScriptedOpenAI + the real openai client): tool use, accounting, retries, validity and budgets."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcp_evals_pipeline.agents import RUNNERS, get_runner
from mcp_evals_pipeline.agents.base import AgentRequest, AgentResult, AgentRunner, MissingCredentials, TranscriptWriter
from mcp_evals_pipeline.agents.openai_agent import OpenAIAgent
from mcp_evals_pipeline.agents.replay import ReplayAgent, choose_session, task_sessions
from mcp_evals_pipeline.agents.tools import TOOL_NAMES, ToolExecutor
from mcp_evals_pipeline.contracts.transcript import TranscriptEvent, read_transcript
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.models import PRICES_PER_MTOK, cost_usd
from mcp_evals_pipeline.sandbox.local import LocalSandbox
from mcp_evals_pipeline.tasks.catalog import Task, get_task

from .conftest import REPO, TASKS
from .support.openai_server import ScriptedOpenAI, call, failure, reply, stall

TASK_IDS = ["py-v4-01-basic-tool-server", "py-v4-02-stateful-ticket-queue", "py-v5-03-docs-lookup-server"]
SESSIONS = [path for task_id in TASK_IDS for path in task_sessions(task_id, TASKS)]
CHEAP_MODEL = "gpt-4o-mini"
FAST_RETRY = {"retry_backoff_s": 0.01, "retry_backoff_max_s": 0.05}


@dataclass
class Trial:
    result: AgentResult
    workspace: Path
    events: list[TranscriptEvent]

    def of_type(self, kind: str) -> list[TranscriptEvent]:
        return [e for e in self.events if e.type == kind]


def run_trial(runner: AgentRunner, task: Task, tmp_path: Path, **request: Any) -> Trial:
    """One trial's agent phase as the pipeline runs it: fresh workspace (+ starter), local sandbox, transcript."""
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True)
    if task.starter_dir is not None:
        shutil.copytree(task.starter_dir, workspace, dirs_exist_ok=True)
    transcript_path = tmp_path / "transcript.jsonl"
    transcript = TranscriptWriter(transcript_path)
    sandbox = LocalSandbox(workspace)
    try:
        result = runner.run(AgentRequest(task_id=task.id, prompt=task.prompt, sandbox=sandbox, transcript=transcript,
                                         model=request.pop("model", None), **request))
    finally:
        sandbox.close()
        transcript.close()
    return Trial(result, workspace, read_transcript(transcript_path))


def session_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- replay: every recorded session grades as its name says -------------------------------------------------

def test_every_task_has_passing_and_failing_sessions() -> None:
    for task_id in TASK_IDS:
        names = [p.name for p in task_sessions(task_id, TASKS)]
        assert sum(n.startswith("pass-") for n in names) >= 2, (task_id, names)
        assert sum(n.startswith("fail-") for n in names) >= 1, (task_id, names)


def test_the_checked_in_sessions_are_what_the_script_generates() -> None:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "make_replay_sessions.py"), "--check"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("session", SESSIONS, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_a_replayed_session_grades_as_its_name_says(session: Path, tmp_path: Path) -> None:
    task = get_task(session.parent.parent.name, TASKS)
    trial = run_trial(ReplayAgent(), task, tmp_path, options={"session": str(session)})
    assert trial.result.infra_reason is None, trial.result.error
    assert not trial.result.budget_exhausted

    lines = session_lines(session)
    perf = trial.result.perf
    assert perf.turns == sum(line["type"] == "assistant" for line in lines)
    assert perf.tool_calls == sum(line["type"] == "tool" for line in lines)
    assert perf.tokens_in is None and perf.tokens_out is None and perf.cost_usd is None  # no model, no usage lines
    assert perf.duration_ms is not None
    assert len(trial.of_type("tool_call")) == len(trial.of_type("tool_result")) == perf.tool_calls
    assert trial.of_type("user")[0].text == task.prompt

    grade = grade_workspace_sync(task.contract, trial.workspace)
    if session.stem.startswith("pass-"):
        assert grade.contract_pass, (grade.failure_code, grade.first_failure)
    else:
        negative = session.stem.removeprefix("fail-")
        declared = json.loads((task.dir / "negatives" / negative / "negative.json").read_text())["failureCode"]
        assert not grade.contract_pass
        assert grade.failure_code == declared


def test_replay_picks_sessions_by_trial_index(tmp_path: Path) -> None:
    sessions = task_sessions("py-v4-01-basic-tool-server", TASKS)
    picked = [choose_session("py-v4-01-basic-tool-server", trial, root=TASKS) for trial in (1, 2, 3, 4)]
    assert picked == [sessions[(trial - 1) % len(sessions)] for trial in (1, 2, 3, 4)]
    assert picked[3] == picked[0]
    # A keyless batch of three trials mixes outcomes, deterministically.
    assert {p.name.split("-")[0] for p in picked[:3]} == {"pass", "fail"}
    # A bare file name selects one of the task's own sessions.
    assert choose_session("py-v4-01-basic-tool-server", 1, "pass-2.jsonl", root=TASKS).name == "pass-2.jsonl"


def test_replay_without_a_session_option_plays_the_trials_session(tmp_path: Path) -> None:
    task = get_task("py-v4-01-basic-tool-server", TASKS)
    trial = run_trial(ReplayAgent(), task, tmp_path, trial=2)
    info = trial.of_type("info")[0]
    assert info.extra["session"] == str(task_sessions(task.id, TASKS)[1])
    assert trial.result.infra_reason is None


def test_replay_counts_recorded_usage_and_honours_the_turn_budget(tmp_path: Path) -> None:
    session = tmp_path / "recorded.jsonl"
    session.write_text("\n".join(json.dumps(line) for line in [
        {"type": "assistant", "text": "one"},
        {"type": "usage", "tokens_in": 100, "tokens_out": 10},
        {"type": "tool", "tool": "write_file", "args": {"path": "a.txt", "content": "a"}},
        {"type": "assistant", "text": "two"},
        {"type": "usage", "tokens_in": 200, "tokens_out": 20},
        {"type": "assistant", "text": "three"},
        {"type": "tool", "tool": "write_file", "args": {"path": "b.txt", "content": "b"}},
    ]) + "\n")
    task = get_task("py-v4-01-basic-tool-server", TASKS)
    full = run_trial(ReplayAgent(), task, tmp_path / "full", options={"session": str(session)})
    assert (full.result.perf.tokens_in, full.result.perf.tokens_out, full.result.perf.turns) == (300, 30, 3)
    assert full.result.perf.cost_usd is None

    short = run_trial(ReplayAgent(), task, tmp_path / "short", options={"session": str(session)}, max_turns=2)
    assert short.result.budget_exhausted and short.result.infra_reason is None
    assert short.result.perf.turns == 2
    assert (short.workspace / "a.txt").exists() and not (short.workspace / "b.txt").exists()


@pytest.mark.parametrize(("bad_line", "message"), [
    ("{not json", "line 2"),
    (json.dumps({"type": "tool", "tool": "browse", "args": {}}), "line 2: unknown tool 'browse'"),
    (json.dumps({"type": "assistant"}), "line 2: an assistant action needs"),
])
def test_a_session_that_does_not_parse_is_infra_agent_with_the_line(tmp_path: Path, bad_line: str,
                                                                     message: str) -> None:
    session = tmp_path / "broken.jsonl"
    first = json.dumps({"type": "tool", "tool": "write_file", "args": {"path": "x.txt", "content": "x"}})
    session.write_text(f"{first}\n{bad_line}\n")
    trial = run_trial(ReplayAgent(), get_task("py-v4-01-basic-tool-server", TASKS), tmp_path,
                      options={"session": str(session)})
    assert trial.result.infra_reason == "infra.agent"
    assert message in (trial.result.error or "")
    assert not (trial.workspace / "x.txt").exists(), "nothing runs from a session that does not parse"


def test_replay_of_a_task_without_sessions_is_infra_agent(tmp_path: Path) -> None:
    root = tmp_path / "tasks"
    shutil.copytree(TASKS / "py-v4-01-basic-tool-server", root / "py-v4-01-basic-tool-server",
                    ignore=shutil.ignore_patterns("sessions"))
    with pytest.raises(Exception, match="no recorded sessions"):
        choose_session("py-v4-01-basic-tool-server", 1, root=root)


# --- the tool executor ----------------------------------------------------------------------------------------

def test_tool_errors_come_back_as_text(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    transcript = TranscriptWriter(tmp_path / "t.jsonl")
    with LocalSandbox(workspace) as sandbox:
        tools = ToolExecutor(sandbox, transcript)
        assert tools.execute("read_file", {"path": "missing.py"}) == "error: no such file: missing.py"
        assert "outside the workspace" in tools.execute("read_file", {"path": "../outside"})
        assert "outside the workspace" in tools.execute("write_file", {"path": "link/x.txt", "content": "x"})
        assert not (outside / "x.txt").exists()
        assert tools.execute("shell", {"command": "echo oops; exit 3"}) == "exit code: 3\noops\n"
        assert tools.execute("shell", '{"command": "sleep 5", "timeout_s": 0.3}').startswith("timed out after 0.3s")
        assert "not valid JSON" in tools.execute("shell", "{bad")
        assert "missing required argument 'content'" in tools.execute("write_file", {"path": "a.txt"})
        assert "unknown tool 'browse'" in tools.execute("browse", {})
        assert tools.execute("list_files", {}) == "(no files under .)"
        assert "no such directory" in tools.execute("list_files", {"path": "nope"})
        assert tools.execute("write_file", {"path": "pkg/a.py", "content": "x = 1\n"}) == "wrote 6 bytes to pkg/a.py"
        assert tools.execute("list_files", {"path": "."}) == "pkg/a.py"
        assert tools.execute("read_file", {"path": "pkg/a.py"}) == "x = 1\n"
        assert tools.calls == 13
    transcript.close()
    events = read_transcript(tmp_path / "t.jsonl")
    results = [e for e in events if e.type == "tool_result"]
    assert len(results) == 13 and len([e for e in events if e.type == "tool_call"]) == 13
    assert results[3].exit_code == 3 and results[3].extra["error"] is True
    assert results[-1].extra["error"] is False


def test_tool_schemas_name_the_executor_tools() -> None:
    assert TOOL_NAMES == ("shell", "read_file", "write_file", "list_files")


# --- registry -------------------------------------------------------------------------------------------------

def test_registry() -> None:
    assert set(RUNNERS) == {"replay", "openai", "codex", "claude"}
    assert isinstance(get_runner("replay"), ReplayAgent)
    assert isinstance(get_runner("openai"), OpenAIAgent)
    expected = "unknown agent runner 'nope' (available: claude, codex, openai, replay)"
    with pytest.raises(ValueError, match=re.escape(expected)):
        get_runner("nope")


# --- the openai agent against a real local endpoint -----------------------------------------------------------

@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return "test-key"


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def test_openai_agent_builds_the_golden_server_through_tool_calls(tmp_path: Path, api_key: str) -> None:
    task = get_task("py-v4-01-basic-tool-server", TASKS)
    golden = task.dir / "golden"
    first = call("list_files", {"path": "."})
    writes = [call("write_file", {"path": "server.py", "content": (golden / "server.py").read_text()}),
              call("write_file", {"path": "requirements.txt", "content": (golden / "requirements.txt").read_text()})]
    check = call("shell", {"command": "python3 -c \"compile(open('server.py').read(), 'server.py', 'exec')\" && "
                                      "echo compiled-ok"})
    script = [
        reply("Looking at the workspace first.", [first], prompt_tokens=1000, completion_tokens=50),
        reply(None, writes, prompt_tokens=1200, completion_tokens=400),
        reply("Checking that it compiles.", [check], prompt_tokens=1700, completion_tokens=60),
        reply("Done: server.py serves `add` at /mcp.", prompt_tokens=1800, completion_tokens=30),
    ]
    with ScriptedOpenAI(script) as server:
        trial = run_trial(OpenAIAgent(), task, tmp_path, model=CHEAP_MODEL, options={"base_url": server.base_url})

    result = trial.result
    assert result.infra_reason is None and not result.budget_exhausted, result.error
    assert result.model == CHEAP_MODEL
    assert result.perf.turns == 4 and result.perf.tool_calls == 4
    assert (result.perf.tokens_in, result.perf.tokens_out) == (5700, 540)
    assert CHEAP_MODEL in PRICES_PER_MTOK
    assert result.perf.cost_usd == cost_usd(CHEAP_MODEL, 5700, 540) and result.perf.cost_usd > 0

    grade = grade_workspace_sync(task.contract, trial.workspace)
    assert grade.contract_pass, grade.first_failure

    # What the agent really sent.
    requests = server.requests
    assert len(requests) == 4
    assert all(r["model"] == CHEAP_MODEL for r in requests)
    assert [t["function"]["name"] for t in requests[0]["tools"]] == list(TOOL_NAMES)
    assert requests[0]["messages"][0]["role"] == "system"
    assert requests[0]["messages"][1] == {"role": "user", "content": task.prompt}
    assert server.headers[0]["authorization"] == "Bearer test-key"
    # Each tool result is fed back under its call id, after the assistant message that asked for it.
    assistant = requests[1]["messages"][2]
    assert assistant["role"] == "assistant" and assistant["tool_calls"][0]["id"] == first["id"]
    assert tool_messages(requests[1]) == [{"role": "tool", "tool_call_id": first["id"],
                                           "content": "(no files under .)"}]
    assert [m["tool_call_id"] for m in tool_messages(requests[2])[1:]] == [w["id"] for w in writes]
    assert tool_messages(requests[2])[1]["content"].startswith("wrote ")
    assert tool_messages(requests[3])[-1]["content"] == "exit code: 0\ncompiled-ok\n"

    # Everything seen and said is in the transcript.
    assert trial.of_type("user")[0].text == task.prompt
    assert trial.of_type("system")[0].text == requests[0]["messages"][0]["content"]
    assert [e.text for e in trial.of_type("assistant")][-1] == "Done: server.py serves `add` at /mcp."
    assert [e.call_id for e in trial.of_type("tool_call")] == [first["id"], *(w["id"] for w in writes), check["id"]]
    assert sum(e.tokens_in or 0 for e in trial.of_type("usage")) == 5700


def test_openai_agent_reads_the_endpoint_from_the_environment(tmp_path: Path, api_key: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedOpenAI([reply("Nothing to do.")]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        trial = run_trial(OpenAIAgent(), get_task("py-v4-01-basic-tool-server", TASKS), tmp_path, model=CHEAP_MODEL)
    assert len(server.requests) == 1
    assert trial.result.infra_reason is None and trial.result.perf.turns == 1


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_failures_are_retried_and_the_trial_stays_valid(tmp_path: Path, api_key: str, status: int) -> None:
    with ScriptedOpenAI([failure(status), failure(status), reply("Done.")]) as server:
        trial = run_trial(OpenAIAgent(), get_task("py-v4-01-basic-tool-server", TASKS), tmp_path, model=CHEAP_MODEL,
                          options={"base_url": server.base_url, "max_retries": 3, **FAST_RETRY})
    assert len(server.requests) == 3
    assert trial.result.infra_reason is None, trial.result.error
    assert trial.result.perf.turns == 1  # retries are not turns
    assert len([e for e in trial.of_type("error") if "retry" in (e.text or "")]) == 2


def test_a_request_timeout_is_retried(tmp_path: Path, api_key: str) -> None:
    # The first request hangs (no answer for a minute): its timeout must fire, whatever the timeout. The retry is
    # answered at once and gets the same timeout, so that one is generous: it must succeed on a loaded machine.
    with ScriptedOpenAI([stall(60), reply("Done.")]) as server:
        started = time.monotonic()
        trial = run_trial(OpenAIAgent(), get_task("py-v4-01-basic-tool-server", TASKS), tmp_path, model=CHEAP_MODEL,
                          options={"base_url": server.base_url, "request_timeout_s": 5.0, **FAST_RETRY})
        seconds = time.monotonic() - started
    assert trial.result.infra_reason is None and not trial.result.budget_exhausted, trial.result.error
    assert len(server.requests) == 2 and trial.result.perf.turns == 1
    assert "APITimeoutError" in (trial.of_type("error")[0].text or "")
    assert seconds < 30  # the stalled request was given up at its timeout, not waited out


def test_a_failing_endpoint_is_infra_model_api_after_bounded_retries(tmp_path: Path, api_key: str) -> None:
    with ScriptedOpenAI(lambda body: failure(500, "overloaded")) as server:
        trial = run_trial(OpenAIAgent(), get_task("py-v4-01-basic-tool-server", TASKS), tmp_path, model=CHEAP_MODEL,
                          options={"base_url": server.base_url, "max_retries": 2, **FAST_RETRY})
    assert len(server.requests) == 3  # the first attempt + 2 retries, then it stops
    assert trial.result.infra_reason == "infra.model_api"
    assert "after 3 attempts" in (trial.result.error or "") and "500" in (trial.result.error or "")
    assert not trial.result.budget_exhausted


def test_a_rejected_key_is_not_retried(tmp_path: Path, api_key: str) -> None:
    with ScriptedOpenAI(lambda body: failure(401, "bad key")) as server:
        trial = run_trial(OpenAIAgent(), get_task("py-v4-01-basic-tool-server", TASKS), tmp_path, model=CHEAP_MODEL,
                          options={"base_url": server.base_url, **FAST_RETRY})
    assert len(server.requests) == 1
    assert trial.result.infra_reason == "infra.model_api" and "401" in (trial.result.error or "")


def test_zero_token_replies_are_infra_agent(tmp_path: Path, api_key: str) -> None:
    with ScriptedOpenAI([reply("All done.", prompt_tokens=0, completion_tokens=0)]) as server:
        trial = run_trial(OpenAIAgent(), get_task("py-v4-01-basic-tool-server", TASKS), tmp_path, model=CHEAP_MODEL,
                          options={"base_url": server.base_url})
    assert trial.result.infra_reason == "infra.agent"
    assert "zero model tokens" in (trial.result.error or "")
    assert (trial.result.perf.tokens_in, trial.result.perf.tokens_out) == (0, 0)


def test_running_out_of_turns_is_a_valid_budget_exhaustion(tmp_path: Path, api_key: str) -> None:
    def forever(body: dict[str, Any]) -> dict[str, Any]:
        return reply("Still working.", [call("list_files", {})])

    with ScriptedOpenAI(forever) as server:
        trial = run_trial(OpenAIAgent(), get_task("py-v4-01-basic-tool-server", TASKS), tmp_path, model=CHEAP_MODEL,
                          max_turns=3, options={"base_url": server.base_url})
    assert trial.result.budget_exhausted and trial.result.infra_reason is None
    assert len(server.requests) == 3 and trial.result.perf.turns == 3 and trial.result.perf.tool_calls == 3
    assert "turn budget of 3 exhausted" in [e.text for e in trial.of_type("info")]


def test_running_out_of_time_is_a_valid_budget_exhaustion(tmp_path: Path, api_key: str) -> None:
    def forever(body: dict[str, Any]) -> dict[str, Any]:
        return reply(None, [call("shell", {"command": "sleep 30"})])

    with ScriptedOpenAI(forever) as server:
        trial = run_trial(OpenAIAgent(), get_task("py-v4-01-basic-tool-server", TASKS), tmp_path, model=CHEAP_MODEL,
                          time_budget_s=1.5, options={"base_url": server.base_url})
    assert trial.result.budget_exhausted and trial.result.infra_reason is None, trial.result.error
    assert len(server.requests) == 1, "the command was cut at the budget, and no further turn was started"
    assert trial.result.perf.duration_ms is not None and trial.result.perf.duration_ms < 10_000
    assert "the rest of the time budget" in (trial.of_type("tool_result")[0].text or "")


def test_missing_key_raises_missing_credentials_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingCredentials, match="OPENAI_API_KEY"):
        get_runner("openai").check_credentials(CHEAP_MODEL)
    get_runner("replay").check_credentials(None)  # replay needs no key


def test_a_write_outside_the_workspace_is_refused_and_reported(tmp_path: Path, api_key: str) -> None:
    escape_relative = call("write_file", {"path": "../escaped.txt", "content": "pwned"})
    escape_absolute = call("write_file", {"path": str(tmp_path / "absolute.txt"), "content": "pwned"})
    script = [reply("Writing files.", [escape_relative, escape_absolute]), reply("Done.")]
    with ScriptedOpenAI(script) as server:
        trial = run_trial(OpenAIAgent(), get_task("py-v4-01-basic-tool-server", TASKS), tmp_path, model=CHEAP_MODEL,
                          options={"base_url": server.base_url})
    assert trial.result.infra_reason is None, trial.result.error
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "absolute.txt").exists()
    fed_back = tool_messages(server.requests[1])
    assert [m["tool_call_id"] for m in fed_back] == [escape_relative["id"], escape_absolute["id"]]
    assert all("outside the workspace" in m["content"] for m in fed_back)
    assert all(e.extra["error"] for e in trial.of_type("tool_result"))
