"""Published servers under evaluation (`server.package`): real packages from the registries, installed in the
install box, run in the graded servers' box, over Streamable HTTP (npm) and stdio (PyPI), behind the recording
proxy."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from mcp_evals_pipeline.contracts.usage import UsageContract, UsageServer
from mcp_evals_pipeline.grader.boxes import boxes_enabled
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.tasks.catalog import load_task
from mcp_evals_pipeline.trials import TrialSpec, run_trial
from mcp_evals_pipeline.usage.proxy import read_events, tool_calls
from mcp_evals_pipeline.verify import verify_tasks

pytestmark = pytest.mark.skipif(not boxes_enabled(), reason="published servers run only boxed")

EVERYTHING = {"package": "npm:@modelcontextprotocol/server-everything@2026.8.31",
              "command": ["mcp-server-everything", "streamableHttp"]}
TIME = {"package": "pypi:mcp-server-time==2026.10.19", "command": ["mcp-server-time"], "transport": "stdio"}
CANARY = "CANARY-harness-secret-4f1c"


def write_case(root: Path, name: str, server: dict, answer: str, oracle: list[dict], reply: str) -> Path:
    case = root / name
    (case / "sessions").mkdir(parents=True)
    (case / "prompt.md").write_text("What do the tools say? Answer in one line.\n")
    (case / "task.json").write_text(json.dumps({
        "kind": "usage", "title": f"published server {name}", "server": server, "world": "ops-platform",
        "mustLand": [], "otherMutations": "violation", "otherMutationsReason": "a question changes nothing",
        "answer": answer, "maxTurns": 6}))
    (case / "sessions" / "oracle.json").write_text(json.dumps(
        {"outcome": "pass", "why": "asks the tool", "calls": oracle, "reply": reply}))
    (case / "sessions" / "guesses.json").write_text(json.dumps(
        {"outcome": "miss", "why": "answers without asking", "calls": [], "reply": "I cannot tell."}))
    return case


def test_a_published_server_must_be_pinned_and_started_by_a_command() -> None:
    with pytest.raises(ValueError, match="not pinned"):
        UsageServer(package="npm:@modelcontextprotocol/server-everything@latest", command=["x"])
    with pytest.raises(ValueError, match="needs its `command`"):
        UsageServer(package="pypi:mcp-server-time==2026.10.19")
    assert UsageServer(**EVERYTHING).distribution == ("@modelcontextprotocol/server-everything", "2026.8.31")
    assert UsageServer(**TIME).distribution == ("mcp-server-time", "2026.10.19")


def test_published_servers_are_installed_boxed_and_marked_over_http_and_stdio(tmp_path: Path) -> None:
    tasks = [load_task(write_case(tmp_path, "everything-sum", EVERYTHING, r"\b5\b",
                                  [{"tool": "get-sum", "arguments": {"a": 2, "b": 3}}], "The sum is 5.")),
             load_task(write_case(tmp_path, "time-utc", TIME, r"UTC",
                                  [{"tool": "get_current_time", "arguments": {"timezone": "UTC"}}],
                                  "It is now 12:00 in UTC."))]
    assert all(isinstance(t.contract, UsageContract) for t in tasks)
    results = anyio.run(lambda: verify_tasks(tasks, workers=2))
    assert sorted((r.task_id, r.solution.name, r.got) for r in results) == [
        ("everything-sum", "guesses", "usage.miss"), ("everything-sum", "oracle", "pass"),
        ("time-utc", "guesses", "usage.miss"), ("time-utc", "oracle", "pass")]
    assert all(r.ok for r in results)


def test_a_published_server_runs_boxed_without_the_harness_environment(grader_box: str, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay trial against the published server: its own environment (get-env) carries nothing of the
    harness's (nor of the image's, in a container), its confirmation request is declined by the proxy, and the
    record says how it was boxed."""
    monkeypatch.setenv("MCP_EVALS_TEST_SECRET", CANARY)
    case = write_case(tmp_path / "tasks", "everything-env", EVERYTHING, r"declined",
                      [{"tool": "get-env", "arguments": {}}, {"tool": "trigger-elicitation-request", "arguments": {}}],
                      "The server asked a question and it was declined.")
    monkeypatch.setenv("MCP_EVALS_TASKS_DIR", str(tmp_path / "tasks"))
    record = run_trial(TrialSpec(task_id=case.name, condition="bare", trial=1, batch_date="2026-12-01",
                                 agent="replay", options={"session": "oracle.json"}),
                       store=TrialStore(tmp_path / "evals.duckdb"), results_root=tmp_path / "runs")
    assert record.valid, record.error
    trial_dir = tmp_path / "runs" / record.run_id / "trials" / record.trial_name
    world = json.loads((trial_dir / "world.json").read_text())
    assert world["server"] == EVERYTHING["package"] and world["isolation"].startswith(
        "docker container" if grader_box == "docker" else "bwrap")
    events = read_events(trial_dir / "mcp-calls.jsonl")
    env_call, elicit_call = tool_calls(events)
    assert env_call.tool == "get-env" and env_call.is_error is False and "PATH" in (env_call.text or "")
    assert CANARY not in (env_call.text or "") and "MCP_EVALS_TEST_SECRET" not in (env_call.text or "")
    seen = json.loads(env_call.text or "{}")  # the sanitized environment, nothing of the harness's
    assert set(seen) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "SHELL", "PYTHONUNBUFFERED", "PWD", "PORT",
                         "PYTHONDONTWRITEBYTECODE", "MCP_USE_ANONYMIZED_TELEMETRY"}, sorted(seen)
    assert Path(seen["HOME"]) != Path.home() and not Path(seen["HOME"]).exists()  # its own HOME, gone with it
    (asked,) = [e for e in events if e.event == "elicitation"]
    assert asked.answer == "decline" and asked.during == [elicit_call.id]
    assert "decline" in (elicit_call.text or "").lower()
