"""The claude runner: the REAL Claude Code CLI (pinned, installed from npm on first use, ~5 s) runs in our sandbox
against a scripted local Messages API (tests/support/messages_server.py, real HTTP on 127.0.0.1), so the CLI's
own tools write the files and run the commands. Graded trials, perf accounting, the transcript, and every
validity path: no key, API errors (given up by the CLI, or still being retried when the budget ends), budgets."""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcp_evals_pipeline.agents import PLANNED_RUNNERS, RUNNERS, get_runner
from mcp_evals_pipeline.agents import claude_agent as claude_module
from mcp_evals_pipeline.agents.base import AgentRequest, AgentResult, MissingCredentials, TranscriptWriter
from mcp_evals_pipeline.agents.claude_agent import ClaudeAgent
from mcp_evals_pipeline.contracts.transcript import TranscriptEvent, read_transcript
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.models import AGENT_PINS
from mcp_evals_pipeline.sandbox.local import LocalSandbox
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.tasks.catalog import Task, get_task
from mcp_evals_pipeline.trials import TrialSpec, run_id_for, run_trial, trial_key
from mcp_evals_pipeline.usage.proxy import read_events, tool_calls

from .conftest import TASKS
from .support.key_probe import CLEAN, key_probe
from .support.messages_server import ScriptedMessages, failure, tool_use, turn
from .support.processes import naming, running_under

TASK_ID = "py-v4-01-basic-tool-server"
MODEL = AGENT_PINS["claude"].model or "claude-sonnet-5"
KEY = "test-anthropic-key"


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    return KEY


@dataclass
class Trial:
    result: AgentResult
    workspace: Path
    events: list[TranscriptEvent]
    seconds: float

    def of_type(self, kind: str) -> list[TranscriptEvent]:
        return [e for e in self.events if e.type == kind]


def run_agent(task: Task, tmp_path: Path, **request: Any) -> Trial:
    """The agent phase alone, as the pipeline runs it: fresh workspace, local sandbox, transcript."""
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True)
    transcript_path = tmp_path / "transcript.jsonl"
    transcript = TranscriptWriter(transcript_path)
    sandbox = LocalSandbox(workspace)
    started = time.monotonic()
    try:
        result = ClaudeAgent().run(AgentRequest(task_id=task.id, prompt=task.prompt, sandbox=sandbox,
                                                transcript=transcript, model=request.pop("model", MODEL),
                                                **request))
    finally:
        sandbox.close()
        transcript.close()
    return Trial(result, workspace, read_transcript(transcript_path), time.monotonic() - started)


def writes_of(server_dir: Path, workspace: Path) -> list[dict[str, Any]]:
    """Write tool_use blocks that put a server directory's files into the workspace (absolute paths, as the
    CLI's Write tool wants them)."""
    return [tool_use("Write", {"file_path": str(workspace / name), "content": (server_dir / name).read_text()})
            for name in ("server.py", "requirements.txt")]


def session(server_dir: Path, workspace: Path) -> list[dict[str, Any]]:
    """Four model turns, four tool calls, the last turn ends the session; tokens as a real session reports them
    (input, output, cache creation, cache read)."""
    return [
        turn("Looking for my key first.", [tool_use("Bash", {"command": key_probe(KEY), "description": "probe"})],
             input_tokens=1000, output_tokens=50, cache_creation_input_tokens=4000),
        turn(None, writes_of(server_dir, workspace), input_tokens=200, output_tokens=400,
             cache_read_input_tokens=4000),
        turn("Checking that it compiles.", [tool_use("Bash", {
            "command": "python3 -c \"compile(open('server.py').read(), 'server.py', 'exec')\" && echo compiled-ok",
            "description": "compile check"})], input_tokens=300, output_tokens=60, cache_read_input_tokens=4400),
        turn("Done: server.py serves `add` at /mcp.", input_tokens=100, output_tokens=30,
             cache_read_input_tokens=4800),
    ]


SESSION_IN = (1000 + 4000) + (200 + 4000) + (300 + 4400) + (100 + 4800)
SESSION_OUT = 50 + 400 + 60 + 30


# --- full trials through the pipeline's run_trial: the real CLI builds the golden server (and a wrong one) ------

@pytest.mark.parametrize(("server", "passes"), [("golden", True), ("negatives/wrong-sum", False)])
def test_claude_builds_a_server_that_grades_as_scripted(tmp_path: Path, api_key: str, server: str,
                                                        passes: bool) -> None:
    task = get_task(TASK_ID, TASKS)
    spec = TrialSpec(task_id=TASK_ID, condition="noskill+blank", trial=1, batch_date="2026-11-30", agent="claude",
                     skip_judge=True, time_budget_s=120)
    runs = tmp_path / "runs"
    trial_dir = runs / run_id_for("2026-11-30", "claude", MODEL) / "trials" / trial_key(TASK_ID, "noskill+blank", 1)
    workspace = (trial_dir / "workspace").resolve()
    script = session(task.dir / server, workspace)
    tool_ids = [block["id"] for answer in script for block in answer["content"] if block["type"] == "tool_use"]
    with ScriptedMessages(script) as api:
        record = run_trial(TrialSpec(**{**spec.__dict__, "options": {"base_url": api.base_url}}),
                           store=TrialStore(tmp_path / "evals.duckdb"), results_root=runs)

    assert record.valid, record.error
    assert record.grade.contract_pass is passes, record.grade.failure_code
    if not passes:
        assert record.grade.failure_code and not record.grade.failure_code.startswith("infra")
    assert record.agent_runner == "claude" and record.agent_model == MODEL
    perf = record.perf
    assert (perf.turns, perf.tool_calls) == (4, 4)
    assert (perf.tokens_in, perf.tokens_out) == (SESSION_IN, SESSION_OUT)
    assert perf.duration_ms is not None and perf.duration_ms > 0
    events = read_transcript(trial_dir / "transcript.jsonl")
    result_info = [e for e in events if e.type == "info" and e.extra.get("subtype")]
    assert len(result_info) == 1 and result_info[0].extra["subtype"] == "success"
    # The CLI's own total_cost_usd is recorded as reported.
    assert perf.cost_usd == result_info[0].extra["total_cost_usd"] and perf.cost_usd > 0

    # What the CLI really sent: our model and key, four agent turns, each tool result fed back under its id.
    agent = api.agent_requests
    assert len(agent) == 4
    assert all(r.body["model"] == MODEL and r.body.get("stream") for r in agent)
    assert all(r.headers.get("x-api-key") == KEY for r in agent)
    first_message = agent[0].body["messages"][0]["content"]
    assert any(task.prompt.strip() in block.get("text", "") for block in first_message)
    fed_back = [block["tool_use_id"] for r in agent for m in r.body["messages"] if m["role"] == "user"
                and isinstance(m["content"], list) for block in m["content"] if block.get("type") == "tool_result"]
    assert fed_back[-len(tool_ids):] == tool_ids

    # The transcript: prompt, assistant text, every call and its result, the session usage.
    assert events[0].type == "user" and task.prompt.strip() in (events[0].text or "")
    assert [e.call_id for e in events if e.type == "tool_call"] == tool_ids
    assert [e.tool for e in events if e.type == "tool_call"] == ["Bash", "Write", "Write", "Bash"]
    results = [e for e in events if e.type == "tool_result"]
    assert [e.call_id for e in results] == tool_ids
    assert "compiled-ok" in (results[-1].text or "") and results[-1].tool == "Bash"
    # The key is nowhere the agent's commands can read (the CLI holds a placeholder; the proxy adds the key).
    assert CLEAN in (results[0].text or ""), results[0].text
    assert [e.text for e in events if e.type == "assistant" and e.text][-1] == "Done: server.py serves `add` at /mcp."
    usage = [e for e in events if e.type == "usage"]
    assert [(e.tokens_in, e.tokens_out) for e in usage] == [(SESSION_IN, SESSION_OUT)]
    # The graded workspace holds what the agent wrote, and nothing of the CLI's own (config, sessions).
    assert (workspace / "server.py").read_text() == (task.dir / server / "server.py").read_text()
    assert not (workspace / ".claude").exists()


USAGE_TASK = "usage-ops-v3-02-restart-by-name"
USAGE_SCRIPTS = {
    "pass": [turn(None, [tool_use("mcp__server__find_apps", {"name_contains": "search"})]),
             turn(None, [tool_use("mcp__server__restart_app", {"app_id": "app_104"})]),
             turn("I restarted the production search app (app_104).")],
    "usage.miss": [turn(None, [tool_use("mcp__server__find_apps", {"name_contains": "search"})]),
                   turn("search is app_104 and degraded; restart it from the console if you like.")],
}


@pytest.mark.parametrize("outcome", list(USAGE_SCRIPTS))
def test_claude_uses_a_usage_tasks_server_as_its_only_mcp_server(tmp_path: Path, api_key: str, outcome: str) -> None:
    """The real Claude Code CLI with the server under evaluation (through the recording proxy) as its only MCP
    server: its tools are offered to the model as mcp__server__<tool>, each call reaches the real server and the
    world, the proxy records it, and the marker reads what reached the world."""
    runs = tmp_path / "runs"
    with ScriptedMessages(list(USAGE_SCRIPTS[outcome])) as api:
        record = run_trial(TrialSpec(task_id=USAGE_TASK, condition="bare", trial=1, batch_date="2026-11-30",
                                     agent="claude", skip_judge=True, time_budget_s=120,
                                     options={"base_url": api.base_url}),
                           store=TrialStore(tmp_path / "evals.duckdb"), results_root=runs)
    assert record.valid, record.error
    assert (record.grade.failure_code or "pass") == outcome, record.grade.checks
    # This CLI defers MCP tools (listed by name, their schemas loaded through ToolSearch): offered either way.
    first = json.dumps(next(r.body for r in api.requests if r.scripted))
    assert "mcp__server__find_apps" in first and "mcp__server__restart_app" in first
    assert set(re.findall(r"mcp__([A-Za-z0-9_-]+?)__", first)) == {"server"}  # strict: no other MCP server
    trial_dir = runs / record.run_id / "trials" / record.trial_name
    calls = tool_calls(read_events(trial_dir / "mcp-calls.jsonl"))
    scripted = [(b["name"].removeprefix("mcp__server__"), b["input"]) for a in USAGE_SCRIPTS[outcome]
                for b in a["content"] if b["type"] == "tool_use"]
    assert [(c.tool, c.arguments) for c in calls] == scripted and all(c.is_error is False for c in calls)
    fed_back = [block for r in api.requests if r.scripted for m in r.body["messages"] if m["role"] == "user"
                and isinstance(m["content"], list) for block in m["content"] if block.get("type") == "tool_result"]
    assert fed_back and "app_104" in json.dumps(fed_back[0])  # the server's real answer, from the world


def test_a_skill_condition_s_skill_is_offered_to_claude_as_a_project_skill(tmp_path: Path, api_key: str) -> None:
    """skill+* conditions copy the skill to .claude/skills/ (ClaudeAgent.skill_folder): the CLI finds it there."""
    with ScriptedMessages([turn("Nothing written.")]) as api:
        record = run_trial(TrialSpec(task_id=TASK_ID, condition="skill+blank", trial=1, batch_date="2026-11-30",
                                     agent="claude", time_budget_s=60, options={"base_url": api.base_url}),
                           store=TrialStore(tmp_path / "evals.duckdb"), results_root=tmp_path / "runs")
    assert record.valid and not record.grade.contract_pass
    assert "- mcp-python-server: " in json.dumps(api.agent_requests[0].body["messages"])


# --- the agent phase alone ---------------------------------------------------------------------------------------

def test_the_runner_and_the_grader_alone_pass_the_golden_server(tmp_path: Path, api_key: str) -> None:
    task = get_task(TASK_ID, TASKS)
    workspace = (tmp_path / "workspace").resolve()
    with ScriptedMessages(session(task.dir / "golden", workspace)) as api:
        trial = run_agent(task, tmp_path, time_budget_s=120, options={"base_url": api.base_url})
    result = trial.result
    assert result.infra_reason is None and not result.budget_exhausted, result.error
    assert (result.perf.turns, result.perf.tool_calls) == (4, 4)
    assert (result.perf.tokens_in, result.perf.tokens_out) == (SESSION_IN, SESSION_OUT)
    assert result.model == MODEL
    grade = grade_workspace_sync(task.contract, trial.workspace)
    assert grade.contract_pass, grade.first_failure
    info = next(e for e in trial.of_type("info") if e.extra.get("argv"))
    assert "<prompt>" in info.extra["argv"] and task.prompt not in info.extra["argv"]


def test_api_errors_the_cli_gives_up_on_are_infra_model_api(tmp_path: Path, api_key: str) -> None:
    task = get_task(TASK_ID, TASKS)
    with ScriptedMessages([failure(500, "scripted overload", repeat=True)]) as api:
        trial = run_agent(task, tmp_path, time_budget_s=60,
                          options={"base_url": api.base_url, "max_retries": 1})
    result = trial.result
    assert result.infra_reason == "infra.model_api", result.error
    assert "500" in (result.error or "")
    assert not result.budget_exhausted and result.perf.turns == 0
    assert len(api.agent_requests) == 2  # the first attempt and one retry
    assert trial.seconds < 30
    assert any("retry 1/1" in (e.text or "") for e in trial.of_type("error"))
    assert not list(trial.workspace.iterdir())


# Budgets the tests below expect to run out. Before it does, the CLI must start and make its first requests (about
# 1-2 s here, many more on a loaded 2-core machine): a budget that a slow start could eat would fail them for the
# wrong reason. Not killed at the budget, each would run on for a minute or more (ten retries with backoff; a 60 s
# command), far beyond budget + slack.
KILL_BUDGET_S = 15.0
KILL_SLACK_S = 15.0


def test_api_errors_still_retried_when_the_budget_ends_are_infra_model_api(tmp_path: Path, api_key: str) -> None:
    """The CLI's own retry policy (10 retries, long backoff) outlasts the budget: killed at the budget, and the
    endpoint is to blame, not the agent."""
    task = get_task(TASK_ID, TASKS)
    with ScriptedMessages([failure(500, "scripted outage", repeat=True)]) as api:
        trial = run_agent(task, tmp_path, time_budget_s=KILL_BUDGET_S, options={"base_url": api.base_url})
    result = trial.result
    assert result.infra_reason == "infra.model_api", result.error
    assert "time budget" in (result.error or "") and "HTTP 500" in (result.error or "")
    assert not result.budget_exhausted
    assert len(api.agent_requests) >= 2
    assert trial.seconds < KILL_BUDGET_S + KILL_SLACK_S  # the budget, plus the kill and the reaping
    assert not running_under(tmp_path)


def test_running_out_of_time_is_a_valid_budget_exhaustion(tmp_path: Path, api_key: str) -> None:
    task = get_task(TASK_ID, TASKS)
    marker = f"claude-budget-probe-{uuid.uuid4().hex[:8]}"
    slow = tool_use("Bash", {"command": f"python3 -c 'import time; time.sleep(60)' {marker}", "description": "wait",
                             "timeout": 120000})
    script = [turn("Waiting for something slow.", [slow], input_tokens=500, output_tokens=20)]
    with ScriptedMessages(script) as api:
        trial = run_agent(task, tmp_path, time_budget_s=KILL_BUDGET_S, options={"base_url": api.base_url})
    result = trial.result
    assert result.infra_reason is None, result.error
    assert result.budget_exhausted
    assert result.perf.turns == 1 and result.perf.tool_calls == 1 and result.perf.tokens_in == 500
    assert trial.seconds < KILL_BUDGET_S + KILL_SLACK_S
    assert any("time budget" in (e.text or "") for e in trial.of_type("info"))
    # The whole tree is gone: the CLI and the command it was running.
    assert not naming(marker)
    assert not running_under(tmp_path)


def test_processes_the_agent_leaves_running_are_killed_and_do_not_hold_the_session(tmp_path: Path,
                                                                                   api_key: str) -> None:
    """After its result the CLI waits for the agent's background commands: it is stopped after a short grace,
    and nothing the agent started outlives the run, not even a process that left the process group."""
    task = get_task(TASK_ID, TASKS)
    marker = f"claude-leftover-probe-{uuid.uuid4().hex[:8]}"
    sleeper = f"python3 -c 'import time; time.sleep(120)' {marker}"
    script = [
        turn("Starting it in the background.", [tool_use("Bash", {"command": sleeper, "description": "background",
                                                                  "run_in_background": True})]),
        turn(None, [tool_use("Bash", {"command": f"({sleeper}-detached &); echo started", "description": "detach"})]),
        turn("Done."),
    ]
    with ScriptedMessages(script) as api:
        trial = run_agent(task, tmp_path, time_budget_s=60, options={"base_url": api.base_url})
    result = trial.result
    assert result.infra_reason is None and not result.budget_exhausted, result.error
    assert result.perf.turns == 3
    assert trial.seconds < 20
    assert not naming(marker)
    assert not running_under(tmp_path)


def test_running_out_of_turns_is_a_valid_budget_exhaustion(tmp_path: Path, api_key: str) -> None:
    task = get_task(TASK_ID, TASKS)
    script = [turn(f"Step {n}.", [tool_use("Bash", {"command": f"echo step-{n}", "description": "step"})])
              for n in range(5)]
    with ScriptedMessages(script) as api:
        trial = run_agent(task, tmp_path, time_budget_s=60, max_turns=2, options={"base_url": api.base_url})
    result = trial.result
    assert result.infra_reason is None, result.error
    assert result.budget_exhausted
    assert len(api.agent_requests) == 2 and result.perf.turns == 2


def test_a_session_without_model_tokens_is_infra_agent(tmp_path: Path, api_key: str) -> None:
    task = get_task(TASK_ID, TASKS)
    with ScriptedMessages([turn("Nothing.", input_tokens=0, output_tokens=0)]) as api:
        trial = run_agent(task, tmp_path, time_budget_s=60, options={"base_url": api.base_url})
    assert trial.result.infra_reason == "infra.agent"
    assert "zero model tokens" in (trial.result.error or "")


def test_a_cli_that_cannot_be_installed_is_infra_agent(tmp_path: Path, api_key: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> Path:
        raise RuntimeError("registry unreachable")

    monkeypatch.setattr(claude_module, "_ensure_cli", broken)
    trial = run_agent(get_task(TASK_ID, TASKS), tmp_path, options={"base_url": "http://127.0.0.1:9"})
    assert trial.result.infra_reason == "infra.agent"
    assert "registry unreachable" in (trial.result.error or "")


def test_a_cli_that_crashes_is_infra_agent(tmp_path: Path, api_key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    (fake / "claude").write_text("#!/bin/bash\necho 'Segmentation fault' >&2\nexit 139\n")
    (fake / "claude").chmod(0o755)
    monkeypatch.setattr(claude_module, "_ensure_cli", lambda: fake)
    trial = run_agent(get_task(TASK_ID, TASKS), tmp_path / "t", options={"base_url": "http://127.0.0.1:9"})
    assert trial.result.infra_reason == "infra.agent"
    assert "139" in (trial.result.error or "") and "Segmentation fault" in (trial.result.error or "")


# --- credentials and the registry --------------------------------------------------------------------------------

def test_missing_key_raises_missing_credentials_naming_the_variable(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(MissingCredentials, match="ANTHROPIC_API_KEY") as caught:
        ClaudeAgent().check_credentials(MODEL)
    assert "ANTHROPIC_AUTH_TOKEN" in str(caught.value)
    # Through the pipeline: before any sandbox or run directory exists.
    with pytest.raises(MissingCredentials, match="ANTHROPIC_API_KEY"):
        run_trial(TrialSpec(task_id=TASK_ID, condition="noskill+blank", trial=1, batch_date="2026-11-30",
                            agent="claude"), store=TrialStore(tmp_path / "evals.duckdb"), results_root=tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_either_key_variable_will_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "token")
    ClaudeAgent().check_credentials(MODEL)


def test_claude_is_registered() -> None:
    assert RUNNERS["claude"] is ClaudeAgent
    assert "claude" not in PLANNED_RUNNERS
    assert isinstance(get_runner("claude"), ClaudeAgent)


def test_the_cli_is_pinned() -> None:
    from mcp_evals_pipeline.agents.cli_tools import CLI_PINS

    package, version = CLI_PINS["claude"]
    assert package == "@anthropic-ai/claude-code" and version[0].isdigit()
