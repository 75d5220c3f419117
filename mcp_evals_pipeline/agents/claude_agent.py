"""The `claude` runner: the real Claude Code CLI (npm `@anthropic-ai/claude-code`, pinned in cli_tools.CLI_PINS).

    claude -p <prompt> --output-format stream-json --verbose --model M --permission-mode bypassPermissions

runs in the sandbox workspace, in the life cycle of agents/cli_runner.py (one `sandbox.run`, so the sandbox's
environment, process group and kill rules apply), with the time budget as the hard wall-clock limit: the CLI
retries a failing endpoint up to 10 times with long backoff, so it is only ever waited for that long and then its
whole process tree is killed. Its HOME and config dir (CLAUDE_CONFIG_DIR) are the run's private directory outside
the workspace, so no user settings, sessions or credentials leak in and nothing of the CLI's litters the graded
workspace. The commands the agent runs inherit the CLI's environment (CLAUDE_CODE_SUBPROCESS_ENV_SCRUB would strip
it, but it also makes the CLI demand its own bubblewrap+socat Bash sandbox and refuse writes), so the CLI never
holds the key: ANTHROPIC_BASE_URL points at a KeyProxy on the host (agents/key_proxy.py) that holds it and forwards
to the real endpoint, and the CLI's key variable carries a placeholder.

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
    api_key      the key itself (tests), sent as $ANTHROPIC_API_KEY's would be; else the pin's key variables
    max_retries  CLAUDE_CODE_MAX_RETRIES: the CLI's retries of one API request (its default is 10)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_evals_pipeline.agents.base import AgentRequest, TranscriptWriter
from mcp_evals_pipeline.agents.cli_runner import MCP_SERVER_NAME, CliAgentRunner, CliRun, Usage, Verdict
from mcp_evals_pipeline.agents.cli_tools import ensure_pinned_cli
from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.models import cost_usd

BASE_URL_ENV = "ANTHROPIC_BASE_URL"
DEFAULT_ENDPOINT = "https://api.anthropic.com"
SYNTHETIC_MODEL = "<synthetic>"  # the CLI's own stand-in messages (an API error shown as assistant text)
# What of the CLI's stderr goes into an error message.
STDERR_TAIL = 2000

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


def _ensure_cli() -> Path:
    """The bin dir of the pinned Claude Code CLI (installed on first use); a module function, so a test can
    stand a fake CLI in for it."""
    return ensure_pinned_cli("claude")


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

    def feed_line(self, line: str) -> None:
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


class ClaudeAgent(CliAgentRunner):
    name = "claude"
    key_for = f"its endpoint (${BASE_URL_ENV} selects an endpoint other than api.anthropic.com)"
    default_endpoint = DEFAULT_ENDPOINT
    prompt_on_stdin = False  # `-p <prompt>`
    skill_folder = ".claude/skills"

    def ensure_cli(self) -> Path:
        return _ensure_cli()

    def _base_url(self, request: AgentRequest) -> str | None:
        return request.options.get("base_url") or os.environ.get(BASE_URL_ENV) or None

    def upstream(self, request: AgentRequest) -> str:
        return self._base_url(request) or DEFAULT_ENDPOINT

    def keyless(self, request: AgentRequest) -> bool:
        return self._base_url(request) is not None  # an endpoint of one's own may need no key

    def credentials(self, key_env: str, secret: str) -> dict[str, str]:
        """In the header the variable's kind of credential goes in."""
        if not secret:
            return {}
        return {"Authorization": f"Bearer {secret}"} if key_env == "ANTHROPIC_AUTH_TOKEN" else {"x-api-key": secret}

    def prepare(self, run: CliRun) -> None:
        (run.home / ".claude").mkdir(parents=True)

    def cli_env(self, run: CliRun) -> dict[str, str]:
        env = {**CLI_ENV, "HOME": str(run.home), "CLAUDE_CONFIG_DIR": str(run.home / ".claude"),
               run.key_env: run.pass_key, BASE_URL_ENV: run.endpoint}
        if run.request.options.get("max_retries") is not None:
            env["CLAUDE_CODE_MAX_RETRIES"] = str(max(0, int(run.request.options["max_retries"])))
        return env

    def argv(self, run: CliRun) -> list[str]:
        request = run.request
        argv = [str(run.bin_dir / "claude"), "-p", request.prompt, "--output-format", "stream-json", "--verbose",
                "--model", run.model, "--permission-mode", "bypassPermissions", "--max-turns", str(request.max_turns)]
        if run.effort:
            argv += ["--effort", run.effort]
        return [*argv, *run.mcp_args]

    def mcp_config(self, run: CliRun, reachable_url: str) -> list[str]:
        """The usage task's server (the recording proxy) as the CLI's only MCP server (`--strict-mcp-config`: no
        user or project configuration adds others), Streamable HTTP; permissions are bypassed for the run."""
        config = run.private / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {MCP_SERVER_NAME: {"type": "http", "url": reachable_url}}}))
        return ["--mcp-config", str(config), "--strict-mcp-config"]

    def info_extra(self, run: CliRun) -> dict[str, Any]:
        return {"maxTurns": run.request.max_turns, "maxRetries": self.cli_env(run).get("CLAUDE_CODE_MAX_RETRIES")}

    def translator(self, run: CliRun) -> StreamState:
        return StreamState(run.request.transcript)

    def session_over(self, run: CliRun) -> bool:
        return run.stream.result is not None  # after its result event the CLI may wait for background commands

    def classify(self, run: CliRun, usage: Usage) -> Verdict:
        """A finished or killed CLI run; the result event decides when there is one."""
        request, state, done = run.request, run.stream, run.result
        assert done is not None  # set whenever there is no sandbox error
        result = state.result
        if done.timed_out and result is None:
            if state.pending_api_error is not None:
                return Verdict(Infra.MODEL_API, f"model API still failing when the time budget of "
                                                f"{request.time_budget_s:g}s ran out: {state.pending_api_error} "
                                                f"({state.api_errors} API errors); the CLI was killed")
            request.transcript.emit("info", text=f"time budget of {request.time_budget_s:g}s exhausted; "
                                                 f"the CLI was killed")
            return Verdict(budget_exhausted=True)
        if result is None:
            stderr_tail = run.stderr.strip()[-STDERR_TAIL:]
            if state.pending_api_error is not None or state.api_error_message:
                return Verdict(Infra.MODEL_API, f"model API failed: "
                                                f"{state.api_error_message or state.pending_api_error} "
                                                f"(the CLI exited with code {done.exit_code} without a result)")
            return Verdict(Infra.AGENT, f"the Claude Code CLI exited with code {done.exit_code} without a result "
                                        f"event{': ' + stderr_tail if stderr_tail else ''}")
        text = str(result.get("result") or "")[:2000]
        if (result.get("terminal_reason") == "api_error" or result.get("api_error_status") is not None
                or (result.get("is_error") and state.api_error_message)):
            status = result.get("api_error_status")
            return Verdict(Infra.MODEL_API, f"model API failed{f' (HTTP {status})' if status else ''}: "
                                            f"{text or state.api_error_message}")
        subtype = str(result.get("subtype") or "")
        if subtype == "error_max_turns":
            request.transcript.emit("info", text=f"turn budget of {request.max_turns} exhausted")
            return Verdict(budget_exhausted=True)
        if result.get("is_error") or subtype.startswith("error"):
            # The agent's session ended on an error of its own (e.g. the context window): graded as it stands.
            return Verdict(error=f"claude ended with {subtype or 'an error'}: {text}")
        return Verdict()

    def usage(self, run: CliRun) -> Usage:
        """Tokens in (cache included) and out, and cost: the result's totals, else the per-message usage seen."""
        state: StreamState = run.stream
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
            cost = cost_usd(state.served_model, tokens_in, tokens_out) or cost_usd(run.model, tokens_in, tokens_out)
        return Usage(state.turns, tokens_in, tokens_out, cost, state.served_model)
