"""The `codex` runner: the real Codex CLI (`codex exec --json`, pinned in agents/cli_tools.CLI_PINS) working in
the sandbox.

The life cycle is agents/cli_runner.py's (key, pinned CLI, KeyProxy, private run directory, one sandbox command
with the time budget as its hard timeout, the JSONL events streamed into transcript.jsonl as they arrive). What is
Codex's own: a private CODEX_HOME (config, session rollout), its command line, its event translator, and the
session rollout read afterwards for per-request usage (the turn count). The raw event stream and the rollout are
kept next to the transcript (codex-events.jsonl, codex-rollout.jsonl).

The endpoint is always configured as an explicit Responses API provider (`model_providers.mcp_evals`): the CLI
does not honour OPENAI_BASE_URL, and this keeps the production and test paths the same. Its base URL is a KeyProxy
on the host (agents/key_proxy.py) that holds the key and forwards to the real endpoint; the CLI's `env_key` variable
holds only a placeholder, so neither its environment nor its files carry the key the agent's commands could read.

Classification (DESIGN "Validity"):
    the CLI cannot be installed, does not start, or exits non-zero without a model API failure -> infra.agent
    the model API failed after the CLI's own retries (turn.failed)                             -> infra.model_api
    no model turn happened at all (zero tokens)                                                 -> infra.agent
    the time budget ran out (killed) or the context window filled                               -> budget_exhausted

Options (request.options), all optional:
    base_url        Responses API endpoint (default https://api.openai.com/v1); tests point it at 127.0.0.1
    api_key         the key itself (tests); else $OPENAI_API_KEY, else $CODEX_API_KEY
    max_retries     the CLI's request and stream retries of one model request (default: the CLI's own)
    config          extra `-c key=value` overrides for the CLI, a list of strings
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_evals_pipeline.agents.cli_runner import MCP_SERVER_NAME, CliAgentRunner, CliRun, Usage, Verdict
from mcp_evals_pipeline.contracts.failures import Infra

DEFAULT_BASE_URL = "https://api.openai.com/v1"
PROVIDER = "mcp_evals"
MCP_STARTUP_TIMEOUT_S = 30
MCP_TOOL_TIMEOUT_S = 60
PROVIDER_KEY_ENV = "MCP_EVALS_CODEX_API_KEY"
TEXT_LIMIT = 20_000  # per transcript field: command output can be huge
# Command execution, file edits, MCP and web tools: what counts as a tool call.
TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "web_search", "collab_tool_call"}


def _clip(text: Any) -> str | None:
    if text is None:
        return None
    text = text if isinstance(text, str) else json.dumps(text)
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + f"\n[... {len(text) - TEXT_LIMIT} more chars]"


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


@dataclass
class EventTranslator:
    """Turns `codex exec --json` events into transcript events and keeps the counts."""

    transcript: Any
    tool_calls: int = 0
    usage_in: int | None = None
    usage_out: int | None = None
    turn_failed: str | None = None
    errors: list[str] = field(default_factory=list)
    thread_id: str | None = None
    unparsed: int = 0
    _started: set[str] = field(default_factory=set)

    def feed_line(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        try:
            event = json.loads(line)
        except ValueError:
            self.unparsed += 1
            self.transcript.emit("info", text=_clip(line), extra={"source": "codex", "unparsed": True})
            return
        if isinstance(event, dict):
            self.feed(event)

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        emit = self.transcript.emit
        if kind == "thread.started":
            self.thread_id = event.get("thread_id")
            emit("info", text="codex thread started", extra={"threadId": self.thread_id})
        elif kind == "turn.started":
            pass
        elif kind == "turn.completed":
            usage = event.get("usage") or {}
            self.usage_in = (self.usage_in or 0) + int(usage.get("input_tokens") or 0)
            self.usage_out = (self.usage_out or 0) + int(usage.get("output_tokens") or 0)
            emit("usage", tokens_in=usage.get("input_tokens"), tokens_out=usage.get("output_tokens"),
                 extra={"scope": "codex turn", **{k: v for k, v in usage.items()
                                                  if k not in ("input_tokens", "output_tokens")}})
        elif kind == "turn.failed":
            message = str((event.get("error") or {}).get("message") or "turn failed")
            self.turn_failed = message
            emit("error", text=f"codex turn failed: {message}")
        elif kind == "error":
            message = str(event.get("message") or "")
            self.errors.append(message)
            emit("error", text=f"codex: {message}")
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            if isinstance(item, dict):
                self._item(kind, item)
        else:
            emit("info", text=f"codex event {kind}", extra={"event": event})

    def _tool_call(self, item: dict[str, Any], tool: str, args: dict[str, Any]) -> None:
        item_id = str(item.get("id"))
        if item_id in self._started:
            return
        self._started.add(item_id)
        self.tool_calls += 1
        self.transcript.emit("tool_call", tool=tool, call_id=item_id, args=args)

    def _item(self, kind: str, item: dict[str, Any]) -> None:
        emit = self.transcript.emit
        item_type = item.get("type")
        item_id = str(item.get("id"))
        done = kind == "item.completed"
        if item_type == "command_execution":
            self._tool_call(item, "shell", {"command": item.get("command")})
            if done:
                emit("tool_result", tool="shell", call_id=item_id, text=_clip(item.get("aggregated_output")),
                     exit_code=item.get("exit_code"), extra={"status": item.get("status")})
        elif item_type == "file_change":
            changes = item.get("changes") or []
            self._tool_call(item, "apply_patch", {"changes": changes})
            if done:
                emit("tool_result", tool="apply_patch", call_id=item_id,
                     text=f"{item.get('status')}: " + ", ".join(f"{c.get('kind')} {c.get('path')}" for c in changes
                                                                if isinstance(c, dict)),
                     extra={"status": item.get("status")})
        elif item_type == "mcp_tool_call":
            tool = f"mcp:{item.get('server')}/{item.get('tool')}"
            self._tool_call(item, tool, {"arguments": item.get("arguments")})
            if done:
                emit("tool_result", tool=tool, call_id=item_id,
                     text=_clip(item.get("result") or item.get("error")), extra={"status": item.get("status")})
        elif item_type in TOOL_ITEMS:
            self._tool_call(item, str(item_type), {k: v for k, v in item.items() if k not in ("id", "type")})
        elif not done:
            return  # messages and reasoning are written once, complete
        elif item_type == "agent_message":
            emit("assistant", text=item.get("text"), extra={"itemId": item_id})
        elif item_type == "reasoning":
            emit("info", text=_clip(item.get("text")), extra={"itemId": item_id, "kind": "reasoning"})
        elif item_type == "error":
            emit("error", text=f"codex: {item.get('message')}", extra={"itemId": item_id})
        else:
            emit("info", text=f"codex item {item_type}", extra={"item": item})


@dataclass(frozen=True)
class RolloutUsage:
    turns: int
    tokens_in: int
    tokens_out: int
    model: str | None


def latest_rollout(codex_home: Path) -> Path | None:
    """The session rollout (sessions/YYYY/MM/DD/rollout-*.jsonl), None when the CLI wrote none."""
    files = sorted((codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"), key=lambda p: p.stat().st_mtime)
    return files[-1] if files else None


def read_rollout(codex_home: Path) -> tuple[RolloutUsage | None, Path | None]:
    """Per-request usage from the session rollout: one record per model response. None when the CLI wrote none
    (it never reached the model)."""
    path = latest_rollout(codex_home)
    if path is None:
        return None, None
    per_response: dict[str, tuple[int, int]] = {}
    token_counts: list[tuple[int, int]] = []
    model: str | None = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        payload = record.get("payload") if isinstance(record, dict) else None
        if not isinstance(payload, dict):
            continue
        if record.get("type") == "token_usage_record":
            usage = payload.get("usage") or {}
            key = str(payload.get("response_id") or len(per_response))
            per_response[key] = (int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0))
        elif record.get("type") == "turn_context" and payload.get("model"):
            model = str(payload["model"])
        elif payload.get("type") == "token_count" and isinstance(payload.get("info"), dict):
            last = payload["info"].get("last_token_usage") or {}
            token_counts.append((int(last.get("input_tokens") or 0), int(last.get("output_tokens") or 0)))
    counts = list(per_response.values()) or token_counts
    if not counts:
        return RolloutUsage(0, 0, 0, model), path
    return RolloutUsage(len(counts), sum(c[0] for c in counts), sum(c[1] for c in counts), model), path


def _is_context_overflow(message: str) -> bool:
    lowered = message.lower()
    return "context window" in lowered or "context_length_exceeded" in lowered


class CodexAgent(CliAgentRunner):
    name = "codex"
    key_for = "its Responses API endpoint"
    default_endpoint = DEFAULT_BASE_URL
    skill_folder = ".codex/skills"

    def cli_env(self, run: CliRun) -> dict[str, str]:
        return {PROVIDER_KEY_ENV: run.pass_key, "CODEX_HOME": str(run.home)}  # the key stays in the proxy

    def argv(self, run: CliRun) -> list[str]:
        """One `codex exec`: the endpoint as an explicit provider whose `env_key` holds the placeholder, the prompt
        on stdin."""
        options = run.request.options
        config = [
            f"model_provider={_toml_str(PROVIDER)}",
            f"model_providers.{PROVIDER}.name={_toml_str('mcp-evals')}",
            f"model_providers.{PROVIDER}.base_url={_toml_str(run.endpoint)}",
            f"model_providers.{PROVIDER}.env_key={_toml_str(PROVIDER_KEY_ENV)}",
            f"model_providers.{PROVIDER}.wire_api={_toml_str('responses')}",
            # The CLI passes its environment to the agent's commands: never the key.
            f"shell_environment_policy.exclude=[{_toml_str(PROVIDER_KEY_ENV)}]",
            # Nothing but model requests leaves the run: no usage analytics, no update check.
            "analytics.enabled=false",
            "check_for_update_on_startup=false",
        ]
        if run.effort:
            config.append(f"model_reasoning_effort={_toml_str(run.effort)}")
        if options.get("max_retries") is not None:
            retries = max(0, int(options["max_retries"]))
            config += [f"model_providers.{PROVIDER}.request_max_retries={retries}",
                       f"model_providers.{PROVIDER}.stream_max_retries={retries}"]
        config += [str(c) for c in options.get("config") or []]
        argv = ["codex", "exec", "--json", "-m", run.model, "--skip-git-repo-check", "-C",
                str(run.request.sandbox.workspace), "--dangerously-bypass-approvals-and-sandbox"]
        for item in config:
            argv += ["-c", item]
        return [*argv, *run.mcp_args, "-"]

    def mcp_config(self, run: CliRun, reachable_url: str) -> list[str]:
        """The usage task's server (the recording proxy) as a Streamable HTTP MCP server of the CLI's; its tools
        need no approval (approvals are bypassed for the whole run, as for the build tasks' shell)."""
        table = f"mcp_servers.{MCP_SERVER_NAME}"
        return ["-c", f"{table}.url={_toml_str(reachable_url)}",
                "-c", f"{table}.startup_timeout_sec={MCP_STARTUP_TIMEOUT_S}",
                "-c", f"{table}.tool_timeout_sec={MCP_TOOL_TIMEOUT_S}"]

    def translator(self, run: CliRun) -> EventTranslator:
        return EventTranslator(run.request.transcript)

    def usage(self, run: CliRun) -> Usage:
        """The rollout's per-request usage (its turn count), else the events' per-turn totals (turns unknown)."""
        translator: EventTranslator = run.stream
        rollout, _ = read_rollout(run.home)
        served = rollout.model if rollout else None
        if rollout is not None and rollout.turns:
            return Usage(rollout.turns, rollout.tokens_in, rollout.tokens_out, served_model=served)
        if translator.usage_in is not None:
            return Usage(None, translator.usage_in, translator.usage_out, served_model=served)
        return Usage(0, 0, 0, served_model=served)

    def classify(self, run: CliRun, usage: Usage) -> Verdict:
        translator: EventTranslator = run.stream
        result, transcript = run.result, run.request.transcript
        if result is not None and result.timed_out:
            transcript.emit("info", text=f"time budget of {run.request.time_budget_s:g}s exhausted: codex killed")
            return Verdict(budget_exhausted=True)
        if translator.turn_failed is not None:
            if _is_context_overflow(translator.turn_failed):
                transcript.emit("info", text=f"context window exhausted: {translator.turn_failed}")
                return Verdict(budget_exhausted=True)
            return Verdict(Infra.MODEL_API,
                           f"model API failed (after the codex CLI's retries): {translator.turn_failed}")
        if result is not None and result.exit_code != 0:
            # The CLI's stderr, or the sandbox command's own output when it never got as far as the CLI (e.g. a
            # sandbox in which the private directory is not visible).
            detail = run.stderr.strip()[-2000:] or result.output.strip()[-2000:]
            no_model_turn = not usage.turns and not usage.tokens_in and not usage.tokens_out
            return Verdict(Infra.AGENT, f"codex exited with {result.exit_code}"
                                        f"{' before any model turn' if no_model_turn else ''}: {detail}")
        return Verdict()

    def zero_tokens(self, run: CliRun, verdict: Verdict) -> Verdict:
        translator: EventTranslator = run.stream
        if translator.errors:  # the CLI kept retrying the endpoint until it was killed
            return Verdict(Infra.MODEL_API, f"model API never answered: {translator.errors[-1]}")
        return super().zero_tokens(run, verdict)

    def records(self, run: CliRun) -> list[tuple[Path | None, str]]:
        return [*super().records(run), (latest_rollout(run.home), "codex-rollout.jsonl")]
