"""The `codex` runner: the real Codex CLI (`codex exec --json`, pinned in agents/cli_tools.CLI_PINS) working in
the sandbox.

The CLI is installed once into the cache with the pinned Node toolchain. Every run gets a private CODEX_HOME
outside the workspace (config, session rollout, the placeholder key), runs `codex exec` as one sandbox command with the
time budget as its hard timeout (the sandbox kills the process tree), streams the CLI's JSONL events into
transcript.jsonl as they arrive and reads the session rollout afterwards for per-request usage (the turn count).
The raw event stream and the rollout are kept next to the transcript (codex-events.jsonl, codex-rollout.jsonl).

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

import contextlib
import json
import os
import shlex
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_evals_pipeline.agents.base import AgentRequest, AgentResult, AgentRunner, MissingCredentials
from mcp_evals_pipeline.agents.cli_tools import (
    CLI_PINS,
    CliInstallError,
    cli_path,
    ensure_cli,
    keyed_endpoint,
    private_run_dir,
)
from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.records import TrialPerf
from mcp_evals_pipeline.models import AGENT_PINS, cost_usd
from mcp_evals_pipeline.sandbox.base import SandboxError

KEY_ENVS = AGENT_PINS["codex"].key_env  # ("OPENAI_API_KEY", "CODEX_API_KEY")
DEFAULT_BASE_URL = "https://api.openai.com/v1"
PROVIDER = "mcp_evals"
PROVIDER_KEY_ENV = "MCP_EVALS_CODEX_API_KEY"
TEXT_LIMIT = 20_000  # per transcript field: command output can be huge
POLL_S = 0.2
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


def read_rollout(codex_home: Path) -> tuple[RolloutUsage | None, Path | None]:
    """Per-request usage from the session rollout (sessions/YYYY/MM/DD/rollout-*.jsonl): one record per model
    response. None when the CLI wrote none (it never reached the model)."""
    files = sorted((codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"), key=lambda p: p.stat().st_mtime)
    if not files:
        return None, None
    path = files[-1]
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


class CodexAgent(AgentRunner):
    name = "codex"

    def check_credentials(self, model: str | None) -> None:
        if not any(os.environ.get(name) for name in KEY_ENVS):
            raise MissingCredentials(
                f"{' or '.join(KEY_ENVS)} is not set: the codex agent needs a key for its Responses API endpoint")

    def _key(self, options: dict[str, Any]) -> str | None:
        if options.get("api_key"):
            return str(options["api_key"])
        for name in KEY_ENVS:
            if os.environ.get(name):
                return os.environ[name]
        return None

    def command(self, request: AgentRequest, private: Path, bin_dir: Path, model: str, effort: str | None) -> str:
        """The sandbox command: one `codex exec`, the placeholder key from a private file, the prompt on stdin, the
        JSONL events and stderr into private files."""
        options = request.options
        base_url = str(options.get("base_url") or DEFAULT_BASE_URL)
        config = [
            f"model_provider={_toml_str(PROVIDER)}",
            f"model_providers.{PROVIDER}.name={_toml_str('mcp-evals')}",
            f"model_providers.{PROVIDER}.base_url={_toml_str(base_url)}",
            f"model_providers.{PROVIDER}.env_key={_toml_str(PROVIDER_KEY_ENV)}",
            f"model_providers.{PROVIDER}.wire_api={_toml_str('responses')}",
            # The CLI passes its environment to the agent's commands: never the key.
            f"shell_environment_policy.exclude=[{_toml_str(PROVIDER_KEY_ENV)}]",
            # Nothing but model requests leaves the run: no usage analytics, no update check.
            "analytics.enabled=false",
            "check_for_update_on_startup=false",
        ]
        if effort:
            config.append(f"model_reasoning_effort={_toml_str(effort)}")
        if options.get("max_retries") is not None:
            retries = max(0, int(options["max_retries"]))
            config += [f"model_providers.{PROVIDER}.request_max_retries={retries}",
                       f"model_providers.{PROVIDER}.stream_max_retries={retries}"]
        config += [str(c) for c in options.get("config") or []]
        argv = ["codex", "exec", "--json", "-m", model, "--skip-git-repo-check", "-C", str(request.sandbox.workspace),
                "--dangerously-bypass-approvals-and-sandbox"]
        for item in config:
            argv += ["-c", item]
        argv.append("-")
        q = shlex.quote
        return (f"set -a && . {q(str(private / 'env.sh'))} && set +a && "
                f"export PATH={q(cli_path(bin_dir))}:\"$PATH\" CODEX_HOME={q(str(private / 'home'))} && "
                f"exec {shlex.join(argv)} < {q(str(private / 'prompt.md'))} > {q(str(private / 'events.jsonl'))} "
                f"2> {q(str(private / 'stderr.log'))}")

    def run(self, request: AgentRequest) -> AgentResult:
        transcript = request.transcript
        model = request.model or AGENT_PINS["codex"].model or ""
        effort = request.reasoning_effort or AGENT_PINS["codex"].reasoning_effort
        package, version = CLI_PINS["codex"]

        def infra(reason: Infra, error: str, started: float, permanent: bool = False) -> AgentResult:
            transcript.emit("error", text=error)
            return AgentResult(perf=TrialPerf(duration_ms=int((time.monotonic() - started) * 1000), turns=0,
                                              tool_calls=0),
                               infra_reason=reason, error=error, model=model, permanent=permanent)

        key = self._key(request.options)
        if not key:
            return infra(Infra.AGENT, f"{' or '.join(KEY_ENVS)} is not set", time.monotonic(), permanent=True)
        install_started = time.monotonic()
        try:
            bin_dir = ensure_cli(package, version)
        except CliInstallError as exc:
            return infra(Infra.AGENT, f"codex CLI unavailable: {exc}", install_started)

        started = time.monotonic()
        try:
            upstream = str(request.options.get("base_url") or DEFAULT_BASE_URL)
            with keyed_endpoint(request.sandbox, upstream, {"Authorization": f"Bearer {key}"}) as (reachable, pass_key):
                request = request.model_copy(update={"options": {**request.options, "base_url": reachable}})
                with private_run_dir(request.sandbox, "codex-") as private:
                    return self._run(request, private, bin_dir, model, effort, upstream, pass_key)
        except SandboxError as exc:
            return infra(Infra.SANDBOX, f"sandbox failed: {exc}", started)

    def _run(self, request: AgentRequest, private: Path, bin_dir: Path, model: str, effort: str | None,
             upstream: str, pass_key: str) -> AgentResult:
        transcript = request.transcript
        (private / "home").mkdir()
        env_file = private / "env.sh"
        env_file.touch(mode=0o600)
        env_file.write_text(f"{PROVIDER_KEY_ENV}={shlex.quote(pass_key)}\n")  # the key stays in the proxy
        (private / "prompt.md").write_text(request.prompt, encoding="utf-8")
        events_path = private / "events.jsonl"
        events_path.touch()
        command = self.command(request, private, bin_dir, model, effort)

        transcript.emit("user", text=request.prompt)
        transcript.emit("info", text=f"codex agent: {CLI_PINS['codex'][0]}@{CLI_PINS['codex'][1]}, model {model}",
                        extra={"model": model, "reasoningEffort": effort, "timeBudgetS": request.time_budget_s,
                               "baseUrl": upstream, "viaKeyProxy": request.options.get("base_url"),
                               "cliVersion": CLI_PINS["codex"][1]})
        translator = EventTranslator(transcript)
        started = time.monotonic()
        sandbox_error: str | None = None
        result = None
        with ThreadPoolExecutor(max_workers=1) as pool:
            future = pool.submit(request.sandbox.run, command, request.time_budget_s)
            with open(events_path, encoding="utf-8", errors="replace") as stream:
                pending = ""
                while True:
                    finished = future.done()
                    chunk = stream.read()
                    pending += chunk
                    *lines, pending = pending.split("\n")
                    for line in lines:
                        translator.feed_line(line)
                    if finished and not chunk:
                        break
                    if not chunk:
                        time.sleep(POLL_S)
                translator.feed_line(pending)
            try:
                result = future.result()
            except SandboxError as exc:
                sandbox_error = f"sandbox failed: {exc}"
            except Exception as exc:
                sandbox_error = f"sandbox command failed: {type(exc).__name__}: {exc}"
        duration_ms = int((time.monotonic() - started) * 1000)

        rollout, rollout_path = read_rollout(private / "home")
        self._keep(transcript.path.parent, events_path, rollout_path)
        stderr = (private / "stderr.log").read_text(encoding="utf-8", errors="replace") \
            if (private / "stderr.log").exists() else ""

        if rollout is not None and rollout.turns:
            turns, tokens_in, tokens_out = rollout.turns, rollout.tokens_in, rollout.tokens_out
        elif translator.usage_in is not None:
            turns, tokens_in, tokens_out = None, translator.usage_in, translator.usage_out
        else:
            turns, tokens_in, tokens_out = 0, 0, 0
        served = (rollout.model if rollout else None) or model
        perf = TrialPerf(duration_ms=duration_ms, turns=turns, tokens_in=tokens_in, tokens_out=tokens_out,
                         tool_calls=translator.tool_calls)
        perf.cost_usd = cost_usd(served, tokens_in, tokens_out) or cost_usd(model, tokens_in, tokens_out)
        no_model_turn = not turns and not tokens_in and not tokens_out

        infra_reason: Infra | None = None
        error: str | None = None
        budget_exhausted = False
        if sandbox_error:
            infra_reason, error = Infra.SANDBOX, sandbox_error
        elif result is not None and result.timed_out:
            budget_exhausted = True
            transcript.emit("info", text=f"time budget of {request.time_budget_s:g}s exhausted: codex killed")
        elif translator.turn_failed is not None:
            if _is_context_overflow(translator.turn_failed):
                budget_exhausted = True
                transcript.emit("info", text=f"context window exhausted: {translator.turn_failed}")
            else:
                infra_reason = Infra.MODEL_API
                error = f"model API failed (after the codex CLI's retries): {translator.turn_failed}"
        elif result is not None and result.exit_code != 0:
            # The CLI's stderr, or the sandbox command's own output when it never got as far as the CLI (e.g. a
            # sandbox in which the private directory is not visible).
            detail = stderr.strip()[-2000:] or result.output.strip()[-2000:]
            infra_reason = Infra.AGENT
            error = f"codex exited with {result.exit_code}{' before any model turn' if no_model_turn else ''}: {detail}"
        if infra_reason is None and no_model_turn:
            # DESIGN "Validity": no model tokens, no model turn; neither a pass nor a fail.
            if translator.errors:  # the CLI kept retrying the endpoint until it was killed
                infra_reason = Infra.MODEL_API
                error = f"model API never answered: {translator.errors[-1]}"
            else:
                infra_reason = Infra.AGENT
                error = f"the agent run used zero model tokens: no model turn happened. {stderr.strip()[-1000:]}"
        if error:
            transcript.emit("error", text=error)
        return AgentResult(perf=perf, infra_reason=infra_reason, error=error,
                           budget_exhausted=budget_exhausted and infra_reason is None, model=served)

    @staticmethod
    def _keep(trial_dir: Path, events: Path, rollout: Path | None) -> None:
        """The CLI's own records, next to the transcript, for debugging a trial (never graded)."""
        for source, name in ((events, "codex-events.jsonl"), (rollout, "codex-rollout.jsonl")):
            if source is not None and source.exists():
                with contextlib.suppress(OSError):
                    shutil.copyfile(source, trial_dir / name)

