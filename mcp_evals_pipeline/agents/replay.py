"""The `replay` runner: plays a recorded agent session through the same tool executor a live agent uses.

No model and no key: the keyless default run and the tests. A session is JSONL, one action per line:

    {"type": "assistant", "text": "I'll start by looking at the workspace."}
    {"type": "tool", "tool": "write_file", "args": {"path": "server.py", "content": "..."}}
    {"type": "usage", "tokens_in": 1200, "tokens_out": 340}      (optional: only if the recording had a model)

Tool results are not replayed from the recording: every command really runs in this trial's sandbox, so the
workspace the grader sees is what the recorded actions produce here.

Which session: `options["session"]` (a path, or a file name inside the task's sessions/) if given; otherwise
the task's `tasks/<id>/sessions/*.jsonl` sorted by name, taking index (trial - 1) % count, so a batch of trials
mixes the passing and failing sessions deterministically.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcp_evals_pipeline.agents.base import AgentRequest, AgentResult, AgentRunner
from mcp_evals_pipeline.agents.tools import TOOL_NAMES, ToolExecutor
from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.records import TrialPerf
from mcp_evals_pipeline.paths import tasks_dir
from mcp_evals_pipeline.sandbox.base import SandboxError

SESSIONS_DIR = "sessions"


class SessionError(Exception):
    """A session that cannot be replayed (missing, or a line that does not parse): an infra failure."""


@dataclass(frozen=True)
class SessionAction:
    line: int
    type: Literal["assistant", "tool", "usage"]
    text: str | None = None
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    tokens_in: int | None = None
    tokens_out: int | None = None


def _non_negative_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _parse_action(raw: Any, line: int) -> SessionAction:
    if not isinstance(raw, dict):
        raise ValueError(f"expected a JSON object, got {type(raw).__name__}")
    kind = raw.get("type")
    if kind == "assistant":
        if not isinstance(raw.get("text"), str):
            raise ValueError("an assistant action needs a string 'text'")
        return SessionAction(line, "assistant", text=raw["text"])
    if kind == "tool":
        tool = raw.get("tool")
        if tool not in TOOL_NAMES:
            raise ValueError(f"unknown tool {tool!r} (the executor has: {', '.join(TOOL_NAMES)})")
        args = raw.get("args", {})
        if not isinstance(args, dict):
            raise ValueError("a tool action's 'args' must be a JSON object")
        return SessionAction(line, "tool", tool=tool, args=args)
    if kind == "usage":
        tokens_in, tokens_out = raw.get("tokens_in"), raw.get("tokens_out")
        if not (_non_negative_int(tokens_in) and _non_negative_int(tokens_out)):
            raise ValueError("a usage action needs non-negative integers 'tokens_in' and 'tokens_out'")
        return SessionAction(line, "usage", tokens_in=tokens_in, tokens_out=tokens_out)
    raise ValueError(f"unknown action type {kind!r} (expected assistant, tool or usage)")


def load_session(path: Path) -> list[SessionAction]:
    """Parse a whole session before anything runs, so a broken file never leaves a half-replayed workspace."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionError(f"cannot read session {path}: {exc}") from exc
    actions: list[SessionAction] = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            actions.append(_parse_action(json.loads(text), number))
        except (json.JSONDecodeError, ValueError) as exc:
            raise SessionError(f"{path}: line {number}: {exc}") from exc
    if not actions:
        raise SessionError(f"{path}: the session has no actions")
    return actions


def task_sessions(task_id: str, root: Path | None = None, pattern: str = "*.jsonl") -> list[Path]:
    """The task's recorded sessions, sorted by file name (the order trial indices map onto); a usage task's are
    `*.json`, of which the blind round's (`"blind": true`) are left out: they prove the marker (verify-tasks), and
    the replay rotation keeps each case's own pass, miss and unsafe sessions."""
    directory = (root or tasks_dir()) / task_id / SESSIONS_DIR
    return sorted(p for p in directory.glob(pattern) if not _blind(p)) if directory.is_dir() else []


def _blind(path: Path) -> bool:
    if path.suffix != ".json":
        return False
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("blind") is True
    except (OSError, ValueError, AttributeError):
        return False  # a session that does not load fails where it is played, with its reason


def choose_session(task_id: str, trial: int, option: str | Path | None = None, root: Path | None = None,
                   pattern: str = "*.jsonl") -> Path:
    if option:
        given = Path(option).expanduser()
        if given.is_file():
            return given
        # A bare file name picks one of the task's own sessions (e.g. `--option session=pass-1.jsonl`).
        in_task = (root or tasks_dir()) / task_id / SESSIONS_DIR / str(option)
        if in_task.is_file():
            return in_task
        raise SessionError(f"session {option} not found (neither a file nor one of {task_id}'s sessions)")
    sessions = task_sessions(task_id, root, pattern)
    if not sessions:
        raise SessionError(f"task {task_id} has no recorded sessions in "
                           f"{(root or tasks_dir()) / task_id / SESSIONS_DIR}")
    return sessions[(max(trial, 1) - 1) % len(sessions)]


class ReplayAgent(AgentRunner):
    name = "replay"  # its pin has no key variables: AgentRunner.check_credentials has nothing to check

    def run(self, request: AgentRequest) -> AgentResult:
        if request.mcp_url is not None:
            return self._run_usage(request)
        started = time.monotonic()
        deadline = started + request.time_budget_s
        transcript = request.transcript
        executor = ToolExecutor(request.sandbox, transcript, deadline=deadline)
        turns = 0
        tokens_in: int | None = None
        tokens_out: int | None = None
        budget_exhausted = False
        infra_reason: Infra | None = None
        error: str | None = None

        def perf() -> TrialPerf:
            return TrialPerf(duration_ms=int((time.monotonic() - started) * 1000), turns=turns,
                             tokens_in=tokens_in, tokens_out=tokens_out, tool_calls=executor.calls, cost_usd=None)

        try:
            path = choose_session(request.task_id, request.trial, request.options.get("session"))
            actions = load_session(path)
        except SessionError as exc:
            transcript.emit("error", text=str(exc))
            return AgentResult(perf=perf(), infra_reason=Infra.AGENT, error=str(exc), permanent=True)

        transcript.emit("info", text=f"replaying recorded session {path.name}",
                        extra={"session": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:12],
                               "actions": len(actions)})
        transcript.emit("user", text=request.prompt)
        try:
            for action in actions:
                # The same budgets as a live agent: a recording longer than the budget stops where a live run
                # would have been stopped.
                if time.monotonic() >= deadline:
                    budget_exhausted = True
                    transcript.emit("info", text=f"time budget of {request.time_budget_s:g}s exhausted")
                    break
                if action.type == "assistant":
                    if turns >= request.max_turns:
                        budget_exhausted = True
                        transcript.emit("info", text=f"turn budget of {request.max_turns} exhausted")
                        break
                    turns += 1
                    transcript.emit("assistant", text=action.text)
                elif action.type == "tool":
                    executor.execute(action.tool or "", action.args, call_id=f"replay-{action.line}")
                else:
                    tokens_in = (tokens_in or 0) + (action.tokens_in or 0)
                    tokens_out = (tokens_out or 0) + (action.tokens_out or 0)
                    transcript.emit("usage", tokens_in=action.tokens_in, tokens_out=action.tokens_out)
        except SandboxError as exc:
            infra_reason, error = Infra.SANDBOX, f"sandbox failed: {exc}"
        except Exception as exc:  # a bug of ours, not the session's: keep the perf gathered so far
            infra_reason, error = Infra.AGENT, f"replay crashed: {type(exc).__name__}: {exc}"
        if error:
            transcript.emit("error", text=error)
        return AgentResult(perf=perf(), infra_reason=infra_reason, error=error,
                           budget_exhausted=budget_exhausted and infra_reason is None, model=None)

    def _run_usage(self, request: AgentRequest) -> AgentResult:
        """A usage task: the recorded session's tool calls made on the server under evaluation through the real
        mcp client (usage sessions are `sessions/*.json`), then its final reply."""
        from mcp_evals_pipeline.agents.mcp_tools import mcp_tools
        from mcp_evals_pipeline.contracts.usage import UsageSession

        started = time.monotonic()
        transcript = request.transcript
        calls = 0

        def perf() -> TrialPerf:
            return TrialPerf(duration_ms=int((time.monotonic() - started) * 1000), turns=1 if calls else 0,
                             tool_calls=calls)

        try:
            path = choose_session(request.task_id, request.trial, request.options.get("session"), pattern="*.json")
            session = UsageSession.model_validate_json(path.read_text(encoding="utf-8"))
        except (SessionError, OSError, ValueError) as exc:
            transcript.emit("error", text=str(exc))
            return AgentResult(perf=perf(), infra_reason=Infra.AGENT, error=str(exc), permanent=True)
        transcript.emit("info", text=f"replaying recorded usage session {path.name}",
                        extra={"session": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:12]})
        transcript.emit("user", text=request.prompt)

        assert request.mcp_url is not None
        try:
            # The same executor a live model's calls go through: the same transcript events, the same errors.
            with mcp_tools(request.mcp_url, transcript) as tools:
                for n, call in enumerate(session.calls, 1):
                    tools.execute(call.tool, call.arguments, call_id=f"replay-{n}")
                    calls = tools.calls
        except Exception as exc:  # the server under evaluation or the client broke: not the session's doing
            error = f"replay could not use the server: {type(exc).__name__}: {exc}"
            transcript.emit("error", text=error)
            return AgentResult(perf=perf(), infra_reason=Infra.AGENT, error=error)
        transcript.emit("assistant", text=session.reply)
        return AgentResult(perf=perf(), model=None)
