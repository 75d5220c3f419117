"""The `claude` runner: the real Claude Code CLI (npm `@anthropic-ai/claude-code`, pinned in cli_tools.CLI_PINS).

    claude -p <prompt> --output-format stream-json --verbose --model M --permission-mode bypassPermissions

runs in the sandbox workspace (through `sandbox.run`, so the sandbox's environment, process group and kill rules
apply), with the time budget as the hard wall-clock limit: the CLI retries a failing endpoint up to 10 times with
long backoff, so it is only ever waited for that long and then its whole process tree is killed. Its HOME and
config dir (CLAUDE_CONFIG_DIR) are a private temporary directory outside the workspace, so no user settings,
sessions or credentials leak in and nothing of the CLI's litters the graded workspace. The commands the agent
runs inherit the CLI's environment (CLAUDE_CODE_SUBPROCESS_ENV_SCRUB would strip it, but it also makes the CLI demand
its own bubblewrap+socat Bash sandbox and refuse writes), so the CLI never holds the key: ANTHROPIC_BASE_URL points
at a KeyProxy on the host (agents/key_proxy.py) that holds it and forwards to the real endpoint, and the CLI's key
variable carries a placeholder.

The stream-json events are tailed while the CLI runs and written to the transcript as they happen: assistant
text (and thinking), tool_use -> tool_call, tool_result, the CLI's API retries as errors, and the final result
event (turns, token usage including cache tokens, total_cost_usd) as a usage + info event. TrialPerf takes the
result's totals when there is one; a killed run is accounted from the per-message usage seen so far.

Validity (DESIGN "Validity"): the CLI failing to install, crashing, or exiting without a result or without any
model turn is `infra.agent`; the endpoint failing (an API error result, or still retrying API errors when the time
budget ran out) is `infra.model_api`; running out of time or turns (`error_max_turns`) is a valid trial with
`budget_exhausted`, graded as it stands.

Options (request.options), all optional:
    base_url     endpoint (ANTHROPIC_BASE_URL), else $ANTHROPIC_BASE_URL, else api.anthropic.com. With a base_url
                 and no key set, no credential is added (an endpoint that needs none).
    max_retries  CLAUDE_CODE_MAX_RETRIES: the CLI's retries of one API request (its default is 10)
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import stat
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from mcp_evals_pipeline.agents.base import AgentRequest, AgentResult, AgentRunner, MissingCredentials, TranscriptWriter
from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.records import TrialPerf
from mcp_evals_pipeline.models import AGENT_PINS, cost_usd
from mcp_evals_pipeline.sandbox.base import CommandResult, SandboxError

KEY_ENVS: tuple[str, ...] = AGENT_PINS["claude"].key_env or ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
DEFAULT_ENDPOINT = "https://api.anthropic.com"
SYNTHETIC_MODEL = "<synthetic>"  # the CLI's own stand-in messages (an API error shown as assistant text)
# What of the CLI's stderr goes into an error message.
STDERR_TAIL = 2000
POLL_S = 0.1
# After its result event the CLI still waits for the agent's background commands (a server it started): it gets
# this long to exit on its own, then its tree is killed. The session is over; the grader starts its own server.
RESULT_GRACE_S = 3.0
# Every process of one run carries this variable with a fresh value: what the CLI and the agent's commands leave
# running (reparented away from the process group, e.g. `(server &)`) is found and killed by it.
RUN_MARKER_ENV = "MCP_EVALS_AGENT_RUN"

# Quiet, self-contained, non-interactive: no updater, no telemetry or error reports, no survey; the bypass mode's
# refusal under root is lifted because it does run inside our sandbox (IS_SANDBOX).
CLI_ENV: dict[str, str] = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "IS_SANDBOX": "1",
    "NO_COLOR": "1",
}


def _key() -> tuple[str, str] | None:
    """(variable, value) of the first key set, in the order of AGENT_PINS."""
    for name in KEY_ENVS:
        value = os.environ.get(name)
        if value:
            return name, value
    return None


def _ensure_cli() -> Path:
    """The bin dir of the pinned Claude Code CLI (installed on first use)."""
    from mcp_evals_pipeline.agents.cli_tools import ensure_pinned_cli

    return ensure_pinned_cli("claude")


def _cli_path(bin_dir: Path) -> str:
    from mcp_evals_pipeline.agents.cli_tools import cli_path

    return cli_path(bin_dir)


def _cli_version() -> str:
    from mcp_evals_pipeline.agents.cli_tools import CLI_PINS

    package, version = CLI_PINS["claude"]
    return f"{package}@{version}"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _tokens(usage: dict[str, Any] | None) -> tuple[int, int, int, int]:
    """(input, output, cache creation, cache read) of a Messages API usage object."""
    usage = usage or {}
    return (_int(usage.get("input_tokens")), _int(usage.get("output_tokens")),
            _int(usage.get("cache_creation_input_tokens")), _int(usage.get("cache_read_input_tokens")))


def _block_text(content: Any) -> str:
    """A tool_result's content as text (a string, or a list of text/image blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                else:
                    parts.append(f"[{block.get('type', 'block')}]")
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return "" if content is None else json.dumps(content)


@dataclass
class StreamState:
    """What the stream-json events said, gathered while they are written to the transcript."""

    transcript: TranscriptWriter
    turns: int = 0
    tool_calls: int = 0
    message_ids: set[str] = field(default_factory=set)
    # Per-message usage (the CLI repeats a message's usage on each of its content blocks: counted once per id).
    usage_in: int = 0
    usage_out: int = 0
    usage_cache_creation: int = 0
    usage_cache_read: int = 0
    tool_names: dict[str, str] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    init: dict[str, Any] | None = None
    served_model: str | None = None
    api_errors: int = 0
    # API errors seen since the last successful model message: still failing at the end means the endpoint.
    pending_api_error: str | None = None
    api_error_message: str | None = None
    non_json_lines: int = 0

    def feed(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            self.non_json_lines += 1
            self.transcript.emit("info", text=line[:4000], extra={"source": "claude stdout (not JSON)"})
            return
        if not isinstance(event, dict):
            self.transcript.emit("info", text=line[:4000], extra={"source": "claude stdout (not an object)"})
            return
        kind = event.get("type")
        if kind == "system":
            self._system(event)
        elif kind == "assistant":
            self._assistant(event)
        elif kind == "user":
            self._user(event)
        elif kind == "result":
            self._result(event)
        else:
            self.transcript.emit("info", text=f"claude event {kind!r}", extra={"event": event})

    def _system(self, event: dict[str, Any]) -> None:
        subtype = event.get("subtype")
        if subtype == "init":
            self.init = event
            self.transcript.emit(
                "info", text=f"claude code {event.get('claude_code_version')}: model {event.get('model')} "
                             f"in {event.get('cwd')}",
                extra={k: event.get(k) for k in ("session_id", "model", "cwd", "tools", "permissionMode",
                                                 "apiKeySource", "claude_code_version", "mcp_servers")})
        elif subtype == "api_retry":
            self.api_errors += 1
            status = event.get("error_status")
            detail = f"HTTP {status} {event.get('error')}" if status else str(event.get("error"))
            self.pending_api_error = detail
            delay = _int(event.get("retry_delay_ms")) / 1000
            self.transcript.emit("error", text=f"model API: {detail}; retry {event.get('attempt')}/"
                                               f"{event.get('max_retries')} in {delay:.2f}s",
                                 extra={"source": "claude api_retry", "status": status})
        else:
            self.transcript.emit("info", text=f"claude system event {subtype!r}", extra={"event": event})

    def _assistant(self, event: dict[str, Any]) -> None:
        message = event.get("message") or {}
        model = message.get("model")
        content = message.get("content") or []
        if model == SYNTHETIC_MODEL or event.get("is_api_error_message"):
            # The CLI's own message, e.g. "API Error: 500 ...": not a model turn.
            text = "\n".join(_block_text([b]) for b in content if isinstance(b, dict))
            if event.get("is_api_error_message") or event.get("error"):
                self.api_error_message = text or str(event.get("error"))
                self.transcript.emit("error", text=text or f"claude: {event.get('error')}",
                                     extra={"source": "claude synthetic message", "error": event.get("error"),
                                            "status": event.get("api_error_status")})
            else:
                self.transcript.emit("info", text=text, extra={"source": "claude synthetic message"})
            return
        message_id = message.get("id") or event.get("uuid") or ""
        extra: dict[str, Any] = {}
        if event.get("parent_tool_use_id"):
            extra["parentToolUseId"] = event["parent_tool_use_id"]
        if message_id not in self.message_ids:
            self.message_ids.add(message_id)
            self.turns += 1
            self.pending_api_error = None  # the endpoint answered
            self.served_model = model or self.served_model
            tokens_in, tokens_out, cache_creation, cache_read = _tokens(message.get("usage"))
            self.usage_in += tokens_in
            self.usage_out += tokens_out
            self.usage_cache_creation += cache_creation
            self.usage_cache_read += cache_read
            extra.update({"turn": self.turns, "messageId": message_id, "model": model,
                          "usage": {"input": tokens_in, "cacheCreation": cache_creation, "cacheRead": cache_read}})
        else:
            extra.update({"turn": self.turns, "messageId": message_id})
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                self.transcript.emit("assistant", text=block.get("text"), extra=extra)
            elif btype in ("thinking", "redacted_thinking"):
                self.transcript.emit("assistant", text=None,
                                     extra={**extra, "reasoning": block.get("thinking") or "[redacted]"})
            elif btype in ("tool_use", "server_tool_use"):
                self.tool_calls += 1
                call_id = block.get("id")
                name = str(block.get("name"))
                if call_id:
                    self.tool_names[call_id] = name
                args = block.get("input")
                self.transcript.emit("tool_call", tool=name, call_id=call_id,
                                     args=args if isinstance(args, dict) else {"_raw": args}, extra=extra)
            else:
                self.transcript.emit("assistant", text=None, extra={**extra, "block": block})

    def _user(self, event: dict[str, Any]) -> None:
        message = event.get("message") or {}
        content = message.get("content")
        extra: dict[str, Any] = {}
        if event.get("parent_tool_use_id"):
            extra["parentToolUseId"] = event["parent_tool_use_id"]
        if isinstance(content, str):
            self.transcript.emit("user", text=content, extra=extra)
            return
        for block in content or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                call_id = block.get("tool_use_id")
                result_extra = {**extra, "error": bool(block.get("is_error"))}
                detail = event.get("tool_use_result")
                if isinstance(detail, dict) and detail.get("interrupted"):
                    result_extra["interrupted"] = True
                self.transcript.emit("tool_result", tool=self.tool_names.get(call_id or ""), call_id=call_id,
                                     text=_block_text(block.get("content")), extra=result_extra)
            elif block.get("type") == "text":
                self.transcript.emit("user", text=block.get("text"), extra=extra)

    def _result(self, event: dict[str, Any]) -> None:
        self.result = event
        tokens_in, tokens_out, cache_creation, cache_read = _tokens(event.get("usage"))
        self.transcript.emit(
            "usage", tokens_in=tokens_in + cache_creation + cache_read, tokens_out=tokens_out,
            extra={"scope": "session", "input": tokens_in, "cacheCreation": cache_creation, "cacheRead": cache_read,
                   "costUsd": event.get("total_cost_usd"), "modelUsage": event.get("modelUsage")})
        self.transcript.emit(
            "info", text=f"claude result: {event.get('subtype')}"
                         f"{' (error)' if event.get('is_error') else ''}: {str(event.get('result') or '')[:2000]}",
            extra={k: event.get(k) for k in ("subtype", "is_error", "num_turns", "duration_ms", "duration_api_ms",
                                             "total_cost_usd", "stop_reason", "terminal_reason", "api_error_status",
                                             "api_error_type", "permission_denials", "session_id")})


class _Tail:
    """Reads whole lines appended to a file by another process."""

    def __init__(self, path: Path):
        self.path = path
        self._offset = 0
        self._partial = b""

    def lines(self, final: bool = False) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self._offset += len(data)
        data = self._partial + data
        *complete, self._partial = data.split(b"\n")
        if final and self._partial:
            complete.append(self._partial)
            self._partial = b""
        return [c.decode("utf-8", errors="replace") for c in complete]


def _marked(marker: str) -> list[psutil.Process]:
    """Live processes whose environment carries the run's marker."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if proc.environ().get(RUN_MARKER_ENV) == marker:
                found.append(proc)
    return found


def _kill_marked(marker: str) -> int:
    """SIGKILL every process of the run (the CLI and whatever the agent left running); returns how many."""
    procs = _marked(marker)
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(procs, timeout=2)
    return len(procs)


def _launcher(private: Path, env: dict[str, str], argv: list[str], stream: Path, stderr: Path) -> Path:
    """A script only we can read: the key never appears on a command line."""
    script = private / "launch.sh"
    exports = "\n".join(f"export {name}={shlex.quote(value)}" for name, value in env.items())
    command = " ".join(shlex.quote(a) for a in argv)
    script.write_text(f"#!/bin/bash\n{exports}\nexec {command} >{shlex.quote(str(stream))} "
                      f"2>{shlex.quote(str(stderr))} </dev/null\n")
    script.chmod(stat.S_IRWXU)
    return script


class ClaudeAgent(AgentRunner):
    name = "claude"

    def check_credentials(self, model: str | None) -> None:
        if _key() is None:
            raise MissingCredentials(
                f"{KEY_ENVS[0]} (or {' or '.join(KEY_ENVS[1:])}) is not set: the claude agent needs a key for "
                f"its endpoint (${BASE_URL_ENV} selects an endpoint other than api.anthropic.com)")

    def run(self, request: AgentRequest) -> AgentResult:
        started = time.monotonic()
        transcript = request.transcript
        model = request.model or AGENT_PINS["claude"].model or ""
        base_url = request.options.get("base_url") or os.environ.get(BASE_URL_ENV) or None
        state = StreamState(transcript)

        def perf() -> TrialPerf:
            return TrialPerf(duration_ms=int((time.monotonic() - started) * 1000), turns=state.turns,
                             tool_calls=state.tool_calls)

        key = _key()
        if key is None and base_url:
            key = ("ANTHROPIC_API_KEY", "")  # a keyless endpoint: the proxy adds no credential
        if key is None:
            error = f"{' or '.join(KEY_ENVS)} is not set"
            transcript.emit("error", text=error)
            return AgentResult(perf=perf(), infra_reason=Infra.AGENT, error=error, model=model, permanent=True)

        transcript.emit("user", text=request.prompt)
        try:
            bin_dir = _ensure_cli()
            path = _cli_path(bin_dir)
        except Exception as exc:  # CliInstallError and anything under it: the host's problem
            error = f"cannot install the Claude Code CLI ({_cli_version()}): {type(exc).__name__}: {exc}"
            transcript.emit("error", text=error)
            return AgentResult(perf=perf(), infra_reason=Infra.AGENT, error=error, model=model)

        # Beside the codex runner's: the sandbox's private directory for the CLI runners (not the workspace).
        from mcp_evals_pipeline.agents.cli_tools import keyed_endpoint, private_run_dir

        name, secret = key  # what the proxy adds, in the header the variable's kind of credential goes in
        credentials: dict[str, str] = {}
        if secret and name == "ANTHROPIC_AUTH_TOKEN":
            credentials["Authorization"] = f"Bearer {secret}"
        elif secret:
            credentials["x-api-key"] = secret
        try:
            with keyed_endpoint(request.sandbox, base_url or DEFAULT_ENDPOINT, credentials) as (reachable, pass_key), \
                    private_run_dir(request.sandbox, "claude-") as private:
                return self._run_cli(request, state, private, bin_dir, path, (name, pass_key), reachable,
                                     model, perf)
        except SandboxError as exc:
            error = f"sandbox failed: {exc}"
            transcript.emit("error", text=error)
            return AgentResult(perf=perf(), infra_reason=Infra.SANDBOX, error=error, model=model)

    def _run_cli(self, request: AgentRequest, state: StreamState, private: Path, bin_dir: Path, path: str,
                 key: tuple[str, str], base_url: str | None, model: str,
                 perf: Callable[[], TrialPerf]) -> AgentResult:
        transcript = request.transcript
        home = private / "home"
        config = home / ".claude"
        config.mkdir(parents=True)
        marker = uuid.uuid4().hex
        env = {**CLI_ENV, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(config), "PATH": path, key[0]: key[1],
               RUN_MARKER_ENV: marker}
        if base_url:
            env[BASE_URL_ENV] = base_url
        if request.options.get("max_retries") is not None:
            env["CLAUDE_CODE_MAX_RETRIES"] = str(max(0, int(request.options["max_retries"])))
        argv = [str(bin_dir / "claude"), "-p", request.prompt, "--output-format", "stream-json", "--verbose",
                "--model", model, "--permission-mode", "bypassPermissions", "--max-turns", str(request.max_turns)]
        if request.reasoning_effort:
            argv += ["--effort", request.reasoning_effort]
        stream, stderr = private / "stream.jsonl", private / "stderr.log"
        launcher = _launcher(private, env, argv, stream, stderr)
        shown_argv = [*argv[:2], "<prompt>", *argv[3:]]
        transcript.emit("info", text=f"claude agent: {_cli_version()}, model {model} at "
                                     f"{base_url or 'the default endpoint'}",
                        extra={"model": model, "baseUrl": base_url, "argv": shown_argv, "keyEnv": key[0],
                               "maxTurns": request.max_turns, "timeBudgetS": request.time_budget_s,
                               "reasoningEffort": request.reasoning_effort,
                               "maxRetries": env.get("CLAUDE_CODE_MAX_RETRIES")})

        outcome: dict[str, Any] = {}

        def target() -> None:
            try:
                outcome["result"] = request.sandbox.run(f"exec {shlex.quote(str(launcher))}",
                                                        timeout_s=max(0.1, request.time_budget_s))
            except BaseException as exc:  # re-raised in the caller's thread
                outcome["exc"] = exc

        infra_reason: Infra | None = None
        error: str | None = None
        budget_exhausted = False
        tail = _Tail(stream)
        worker = threading.Thread(target=target, name="claude-cli", daemon=True)
        result_seen: float | None = None
        try:
            worker.start()
            while worker.is_alive():
                worker.join(POLL_S)
                for line in tail.lines():
                    state.feed(line)
                if state.result is not None and result_seen is None:
                    result_seen = time.monotonic()
                if result_seen is not None and time.monotonic() - result_seen > RESULT_GRACE_S and worker.is_alive():
                    killed = _kill_marked(marker)
                    transcript.emit("info", text=f"the session ended but the CLI was still waiting for background "
                                                 f"commands after {RESULT_GRACE_S:g}s: killed {killed} processes")
                    result_seen = float("inf")  # once
            for line in tail.lines(final=True):
                state.feed(line)
            if "exc" in outcome:
                raise outcome["exc"]
            done: CommandResult = outcome["result"]
            infra_reason, error, budget_exhausted = self._classify(request, state, done, stderr)
        except SandboxError as exc:
            infra_reason, error = Infra.SANDBOX, f"sandbox failed: {exc}"
        except Exception as exc:  # a bug of ours: the harness's failure, with the perf so far
            infra_reason, error = Infra.AGENT, f"claude agent crashed: {type(exc).__name__}: {exc}"
        finally:
            worker.join(5)
            leftover = _kill_marked(marker)
            if leftover:
                transcript.emit("info", text=f"killed {leftover} processes the agent left running")

        tokens_in, tokens_out, cost = self._totals(state, model)
        if infra_reason is None and (state.turns == 0 or (tokens_in == 0 and tokens_out == 0)):
            # DESIGN "Validity": a run with no model tokens made no model turn; neither a pass nor a fail.
            infra_reason = Infra.AGENT
            error = "the agent run used zero model tokens: no model turn happened" + (f" ({error})" if error else "")
        if error:
            transcript.emit("error", text=error)
        result_perf = perf()
        result_perf.turns = state.turns
        result_perf.tokens_in = tokens_in
        result_perf.tokens_out = tokens_out
        result_perf.cost_usd = cost
        return AgentResult(perf=result_perf, infra_reason=infra_reason, error=error,
                           budget_exhausted=budget_exhausted and infra_reason is None,
                           model=state.served_model or model)

    @staticmethod
    def _classify(request: AgentRequest, state: StreamState, done: CommandResult,
                  stderr: Path) -> tuple[Infra | None, str | None, bool]:
        """(infra_reason, error, budget_exhausted) of a finished or killed CLI run."""
        result = state.result
        if done.timed_out and result is None:
            if state.pending_api_error is not None:
                return (Infra.MODEL_API, f"model API still failing when the time budget of "
                                           f"{request.time_budget_s:g}s ran out: {state.pending_api_error} "
                                           f"({state.api_errors} API errors); the CLI was killed", False)
            request.transcript.emit("info", text=f"time budget of {request.time_budget_s:g}s exhausted; "
                                                 f"the CLI was killed")
            return None, None, True
        if result is None:
            stderr_tail = _tail_text(stderr)
            if state.pending_api_error is not None or state.api_error_message:
                return (Infra.MODEL_API, f"model API failed: {state.api_error_message or state.pending_api_error}"
                                           f" (the CLI exited with code {done.exit_code} without a result)", False)
            return (Infra.AGENT, f"the Claude Code CLI exited with code {done.exit_code} without a result event"
                                   f"{': ' + stderr_tail if stderr_tail else ''}", False)
        text = str(result.get("result") or "")[:2000]
        if (result.get("terminal_reason") == "api_error" or result.get("api_error_status") is not None
                or (result.get("is_error") and state.api_error_message)):
            status = result.get("api_error_status")
            return (Infra.MODEL_API, f"model API failed{f' (HTTP {status})' if status else ''}: "
                                       f"{text or state.api_error_message}", False)
        subtype = str(result.get("subtype") or "")
        if subtype == "error_max_turns":
            request.transcript.emit("info", text=f"turn budget of {request.max_turns} exhausted")
            return None, None, True
        if result.get("is_error") or subtype.startswith("error"):
            # The agent's session ended on an error of its own (e.g. the context window): graded as it stands.
            return None, f"claude ended with {subtype or 'an error'}: {text}", False
        return None, None, False

    @staticmethod
    def _totals(state: StreamState, model: str) -> tuple[int, int, float | None]:
        """(tokens in incl. cache, tokens out, cost): the result's totals, else the per-message usage seen."""
        result = state.result
        if result is not None and isinstance(result.get("usage"), dict):
            tokens_in, tokens_out, cache_creation, cache_read = _tokens(result["usage"])
            tokens_in += cache_creation + cache_read
            reported = result.get("total_cost_usd")
            cost = float(reported) if isinstance(reported, int | float) and not isinstance(reported, bool) else None
        else:
            tokens_in = state.usage_in + state.usage_cache_creation + state.usage_cache_read
            tokens_out = state.usage_out
            cost = None
            if state.turns:
                state.transcript.emit("usage", tokens_in=tokens_in, tokens_out=tokens_out,
                                      extra={"scope": "session", "source": "per-message usage (no result event; "
                                                                            "output tokens may be undercounted)",
                                             "input": state.usage_in, "cacheCreation": state.usage_cache_creation,
                                             "cacheRead": state.usage_cache_read})
        if cost is None or (cost == 0 and (tokens_in or tokens_out)):
            cost = cost_usd(state.served_model, tokens_in, tokens_out) or cost_usd(model, tokens_in, tokens_out)
        return tokens_in, tokens_out, cost


def _tail_text(path: Path) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(errors="replace")[-STDERR_TAIL:].strip()
    return ""
