"""The codex and claude runners in the `hardened` sandbox: the REAL CLIs (pinned, from the cache) run inside the
bubblewrap box as the unprivileged box uid, with net=proxy, against the scripted local model servers on the host's
127.0.0.1 (reached through the sandbox's loopback relay), and the real grader grades what they wrote: a golden
server passes, a wrong one fails.

What makes it work (sandbox/hardened.py): the runner's private directory (HOME, CODEX_HOME / CLAUDE_CONFIG_DIR,
the key file) comes from `sandbox.private_dir()`, bind-mounted read-write at the same path and owned by the box
uid; the CLIs and the Node toolchain are mounted read-only; `sandbox.allow_endpoint(base_url)` relays the host's
loopback port into the box."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.records import TrialRecord
from mcp_evals_pipeline.contracts.transcript import read_transcript
from mcp_evals_pipeline.models import AGENT_PINS
from mcp_evals_pipeline.paths import cache_dir
from mcp_evals_pipeline.sandbox.base import SandboxError
from mcp_evals_pipeline.sandbox.egress import is_allowed
from mcp_evals_pipeline.sandbox.hardened import HardenedSandbox, detect
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.tasks.catalog import get_task
from mcp_evals_pipeline.trials import TrialSpec, run_id_for, run_trial, trial_key
from mcp_evals_pipeline.usage.proxy import read_events, tool_calls

from .conftest import TASKS
from .support.key_probe import CLEAN
from .support.messages_server import ScriptedMessages
from .support.responses_server import ScriptedResponses
from .test_claude_agent import USAGE_SCRIPTS as CLAUDE_USAGE
from .test_claude_agent import USAGE_TASK
from .test_claude_agent import session as claude_session
from .test_codex_agent import USAGE_SCRIPTS as CODEX_USAGE
from .test_codex_agent import session_writing as codex_session

_SUPPORT = detect()
# Only the tests that start a box skip where the host cannot provide one; the rest run everywhere.
needs_box = pytest.mark.skipif(not _SUPPORT.can_harden,
                               reason="the hardened sandbox is not available on this host: "
                                      + "; ".join(_SUPPORT.missing))

TASK_ID = "py-v4-01-basic-tool-server"
CASES = [("golden", True), ("negatives/wrong-sum", False)]


@pytest.fixture(autouse=True)
def hardened_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_EVALS_SANDBOX_NET", "proxy")


def boxed_codex_trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: str, passes: bool,
                      sandbox: str) -> TrialRecord:
    """The real codex CLI in a box (`sandbox`) builds `server` as scripted; the real grader grades it. Checks what
    every box must hold (the key only on the host, the workspace as written) and returns the record."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("CODEX_API_KEY", raising=False)
    source = TASKS / TASK_ID / server
    runs = tmp_path / "runs"
    with ScriptedResponses(codex_session(source)) as api:
        record = run_trial(TrialSpec(task_id=TASK_ID, condition="noskill+blank", trial=1, batch_date="2026-11-30",
                                     agent="codex", skip_judge=True, time_budget_s=180.0, sandbox=sandbox,
                                     options={"base_url": api.base_url, "max_retries": 1}),
                           store=TrialStore(tmp_path / "evals.duckdb"), results_root=runs)
    assert record.sandbox == sandbox and record.valid, record.error
    assert record.grade.contract_pass is passes, record.grade.failure_code
    if not passes:
        assert record.grade.failure_code == "contract.calls"
    assert record.perf.turns == 4 and (record.perf.tokens_in, record.perf.tokens_out) == (5900, 290)
    assert len(api.requests) == 4 and api.headers[0]["authorization"] == "Bearer test-key"
    probe = [e for e in read_transcript(runs / record.run_id / "trials" / record.trial_name / "transcript.jsonl")
             if e.type == "tool_result"][2]
    assert CLEAN in (probe.text or ""), probe.text  # no key inside the box: not in codex's environment, nor a file
    workspace = runs / record.run_id / "trials" / record.trial_name / "workspace"
    assert (workspace / "server.py").read_text().strip() == (source / "server.py").read_text().strip()
    assert workspace.stat().st_uid == 0  # handed back to its owner at close
    return record


@needs_box
@pytest.mark.parametrize(("server", "passes"), CASES)
def test_codex_in_the_hardened_sandbox_grades_as_scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          server: str, passes: bool) -> None:
    record = boxed_codex_trial(tmp_path, monkeypatch, server, passes, "hardened")
    assert "net=proxy" in (record.isolation or "")


def boxed_claude_trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: str, passes: bool,
                       sandbox: str) -> TrialRecord:
    """The real claude CLI in a box (`sandbox`), as boxed_codex_trial."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    task = get_task(TASK_ID, TASKS)
    model = AGENT_PINS["claude"].model or "claude-sonnet-5"
    runs = tmp_path / "runs"
    trial_dir = runs / run_id_for("2026-11-30", "claude", model) / "trials" / trial_key(TASK_ID, "noskill+blank", 1)
    workspace = (trial_dir / "workspace").resolve()
    with ScriptedMessages(claude_session(task.dir / server, workspace)) as api:
        record = run_trial(TrialSpec(task_id=TASK_ID, condition="noskill+blank", trial=1, batch_date="2026-11-30",
                                     agent="claude", skip_judge=True, time_budget_s=180, sandbox=sandbox,
                                     options={"base_url": api.base_url}),
                           store=TrialStore(tmp_path / "evals.duckdb"), results_root=runs)
    assert record.sandbox == sandbox and record.valid, record.error
    assert record.grade.contract_pass is passes, record.grade.failure_code
    assert (record.perf.turns, record.perf.tool_calls) == (4, 4)
    assert len(api.agent_requests) == 4
    assert all(r.headers.get("x-api-key") == "test-anthropic-key" for r in api.agent_requests)
    probe = next(e for e in read_transcript(trial_dir / "transcript.jsonl") if e.type == "tool_result")
    assert CLEAN in (probe.text or ""), probe.text  # no key inside the box: not in claude's environment, nor a file
    assert (workspace / "server.py").read_text() == (task.dir / server / "server.py").read_text()
    assert not (workspace / ".claude").exists()
    return record


@needs_box
@pytest.mark.parametrize(("server", "passes"), CASES)
def test_claude_in_the_hardened_sandbox_grades_as_scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           server: str, passes: bool) -> None:
    record = boxed_claude_trial(tmp_path, monkeypatch, server, passes, "hardened")
    assert "net=proxy" in (record.isolation or "")


@needs_box
def test_a_private_dir_is_the_box_users_only_and_gone_at_close(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    box = HardenedSandbox(workspace)
    try:
        private = box.private_dir("agent-")
        assert not private.is_relative_to(workspace)
        key = private / "key"
        key.touch(mode=0o600)
        key.write_text("secret\n")
        done = box.run(f"cat {key} && touch {private}/written && id -u", 30)
        assert done.exit_code == 0 and "secret" in done.output and str(box.uid) in done.output, done.output
        st = key.stat()
        assert st.st_uid == box.uid and stat.S_IMODE(st.st_mode) == 0o600
        assert stat.S_IMODE(private.stat().st_mode) == 0o700 and (private / "written").exists()
        # The CLIs' toolchains are there, read-only.
        tools = cache_dir() / "agent-clis"
        listed = box.run(f"ls {tools} && touch {tools}/x", 30)
        assert listed.exit_code != 0 and "Read-only file system" in listed.output, listed.output
        # Nobody but the box uid (and root) can enter the private directory.
        assert stat.S_IMODE(private.parent.stat().st_mode) == 0o711
    finally:
        box.close()
    assert not private.exists()


@needs_box
def test_an_endpoint_cannot_be_reached_from_a_net_none_box(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_EVALS_SANDBOX_NET", "none")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    box = HardenedSandbox(workspace)
    try:
        with pytest.raises(SandboxError, match="MCP_EVALS_SANDBOX_NET=proxy"):
            box.allow_endpoint("http://127.0.0.1:9/v1")
    finally:
        box.close()


def test_an_allow_list_entry_with_a_port_allows_exactly_that_port() -> None:
    allowed = ("api.openai.com", "models.internal:8080")
    assert is_allowed("models.internal", 8080, allowed) and not is_allowed("models.internal", 443, allowed)
    assert not is_allowed("other.internal", 8080, allowed)
    assert is_allowed("api.openai.com", 443, allowed) and not is_allowed("api.openai.com", 8080, allowed)


def boxed_usage_trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: str, sandbox: str) -> TrialRecord:
    """A usage trial with the CLI boxed: the recording proxy on the host's loopback is relayed into the box like the
    model endpoint, and the CLI's calls of the server's tools land in the world."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    runs = tmp_path / "runs"
    if agent == "codex":
        api: ScriptedResponses | ScriptedMessages = ScriptedResponses(list(CODEX_USAGE["pass"]))
    else:
        api = ScriptedMessages(list(CLAUDE_USAGE["pass"]))
    with api:
        record = run_trial(TrialSpec(task_id=USAGE_TASK, condition="bare", trial=1, batch_date="2026-11-30",
                                     agent=agent, skip_judge=True, time_budget_s=180.0, sandbox=sandbox,
                                     options={"base_url": api.base_url, "max_retries": 1}),
                           store=TrialStore(tmp_path / "evals.duckdb"), results_root=runs)
    assert record.sandbox == sandbox and record.valid, record.error
    assert record.grade.contract_pass, record.grade.checks
    calls = tool_calls(read_events(runs / record.run_id / "trials" / record.trial_name / "mcp-calls.jsonl"))
    assert [c.tool for c in calls] == ["find_apps", "restart_app"]
    return record


@needs_box
@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_a_cli_in_the_hardened_sandbox_reaches_a_usage_tasks_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    agent: str) -> None:
    record = boxed_usage_trial(tmp_path, monkeypatch, agent, "hardened")
    assert "net=proxy" in (record.isolation or "")
