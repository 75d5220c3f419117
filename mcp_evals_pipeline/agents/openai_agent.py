"""The `openai` runner: a built-in coding-agent loop for any OpenAI-compatible chat.completions endpoint.

System prompt + the task prompt as the user message; the model works through the four executor tools until it
replies without tool calls, or until its turn or time budget runs out (a valid trial: it is graded as it stands).
The model endpoint failing (after bounded retries with backoff on 429, 5xx, timeouts and connection errors) is
`infra.model_api`; a run in which no model turn happened (zero tokens in and out) is `infra.agent` (DESIGN
"Validity"). Everything the model is shown and everything it says is written to the transcript.

Options (request.options), all optional:
    base_url            endpoint, else $OPENAI_BASE_URL, else the client's default (api.openai.com)
    max_retries         retries of one model request after its first attempt (default 4)
    retry_backoff_s     first backoff; it doubles per retry (default 1.0)
    retry_backoff_max_s cap of one backoff, also of an honoured Retry-After (default 30)
    request_timeout_s   per model request (default 300), never beyond the time budget left
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from mcp_evals_pipeline.agents.base import (
    AgentRequest,
    AgentResult,
    AgentRunner,
    TranscriptWriter,
)
from mcp_evals_pipeline.agents.mcp_tools import SYSTEM_PROMPT as USAGE_SYSTEM_PROMPT
from mcp_evals_pipeline.agents.mcp_tools import McpToolExecutor, mcp_tools
from mcp_evals_pipeline.agents.tools import TOOL_SCHEMAS, ToolExecutor
from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.records import TrialPerf
from mcp_evals_pipeline.models import cost_usd
from mcp_evals_pipeline.sandbox.base import SandboxError

KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"

SYSTEM_PROMPT = """\
You are a coding agent working alone in a workspace directory, which is your current directory; every path you \
use is relative to it. Use the tools to inspect files, write files and run shell commands (python3 and uv are \
available). Nobody will answer questions: make reasonable decisions yourself. When the task is complete, reply \
with a short summary and no tool calls; that reply ends the session."""


class ModelAPIFailure(Exception):
    """The endpoint failed and retrying did not help (or could not: e.g. a 401, then `permanent`)."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


class ModelBudgetEnd(Exception):
    """The model could not go on for the agent's own reasons (time budget, context window): a valid trial."""


@dataclass(frozen=True)
class Settings:
    base_url: str | None
    max_retries: int = 4
    retry_backoff_s: float = 1.0
    retry_backoff_max_s: float = 30.0
    request_timeout_s: float = 300.0

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Settings:
        # Options may arrive as strings from the command line, hence the conversions.
        return cls(
            base_url=options.get("base_url") or os.environ.get(BASE_URL_ENV) or None,
            max_retries=max(0, int(options.get("max_retries", cls.max_retries))),
            retry_backoff_s=max(0.0, float(options.get("retry_backoff_s", cls.retry_backoff_s))),
            retry_backoff_max_s=max(0.0, float(options.get("retry_backoff_max_s", cls.retry_backoff_max_s))),
            request_timeout_s=max(0.1, float(options.get("request_timeout_s", cls.request_timeout_s))),
        )


def _retryable(exc: openai.APIError) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        # The statuses the openai client itself retries: request timeout, lock conflict, rate limit, server side.
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


def _describe(exc: openai.APIError) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code} {type(exc).__name__}: {exc.message}"
    return f"{type(exc).__name__}: {exc.message}"


def _retry_after(exc: openai.APIError) -> float | None:
    if not isinstance(exc, openai.APIStatusError):
        return None
    value = exc.response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


class OpenAIAgent(AgentRunner):
    name = "openai"
    key_for = f"its endpoint (${BASE_URL_ENV} selects an OpenAI-compatible endpoint other than api.openai.com)"

    def run(self, request: AgentRequest) -> AgentResult:
        if request.mcp_url is not None:  # a usage task: the server's tools, through the real mcp client
            with mcp_tools(request.mcp_url, request.transcript) as tools:
                return self._run(request, tools, tools.schemas, USAGE_SYSTEM_PROMPT)
        executor = ToolExecutor(request.sandbox, request.transcript, deadline=time.monotonic() + request.time_budget_s)
        return self._run(request, executor, TOOL_SCHEMAS, SYSTEM_PROMPT)

    def _run(self, request: AgentRequest, executor: ToolExecutor | McpToolExecutor, schemas: list[dict[str, Any]],
             system_prompt: str) -> AgentResult:
        started = time.monotonic()
        deadline = started + request.time_budget_s
        transcript = request.transcript
        model = request.model or self.pin.model or ""
        settings = Settings.from_options(request.options)
        turns = 0
        tokens_in = tokens_out = 0
        usage_known = True  # an endpoint may omit usage: then token counts (and cost) are unknown, not zero
        served_model: str | None = None
        budget_exhausted = False
        infra_reason: Infra | None = None
        permanent = False
        error: str | None = None

        key = os.environ.get(KEY_ENV)
        if not key:
            error = f"{KEY_ENV} is not set"
            transcript.emit("error", text=error)
            return AgentResult(perf=TrialPerf(duration_ms=0, turns=0, tool_calls=0), infra_reason=Infra.AGENT,
                               error=error, model=model, permanent=True)

        transcript.emit("system", text=system_prompt, extra={"tools": schemas})
        transcript.emit("user", text=request.prompt)
        transcript.emit("info", text=f"openai agent: model {model} at {settings.base_url or 'the default endpoint'}",
                        extra={"model": model, "baseUrl": settings.base_url, "maxTurns": request.max_turns,
                               "timeBudgetS": request.time_budget_s,
                               "reasoningEffort": request.reasoning_effort})
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": request.prompt},
        ]
        params: dict[str, Any] = {"model": model, "messages": messages, "tools": schemas}
        if request.reasoning_effort:
            params["reasoning_effort"] = request.reasoning_effort

        # Our own retry loop (client retries off): the bound and the backoff are ours to set, and every failed
        # attempt is visible in the transcript.
        client = openai.OpenAI(api_key=key, base_url=settings.base_url, max_retries=0,
                               timeout=settings.request_timeout_s)
        try:
            while True:
                if turns >= request.max_turns:
                    budget_exhausted = True
                    transcript.emit("info", text=f"turn budget of {request.max_turns} exhausted")
                    break
                if time.monotonic() >= deadline:
                    budget_exhausted = True
                    transcript.emit("info", text=f"time budget of {request.time_budget_s:g}s exhausted")
                    break
                try:
                    completion = self._complete(client, params, settings, deadline, transcript)
                except ModelBudgetEnd as exc:
                    budget_exhausted = True
                    transcript.emit("info", text=str(exc))
                    break
                turns += 1
                served_model = completion.model or served_model
                usage = completion.usage
                if usage is None:
                    usage_known = False
                else:
                    tokens_in += usage.prompt_tokens
                    tokens_out += usage.completion_tokens
                transcript.emit("usage", tokens_in=usage.prompt_tokens if usage else None,
                                tokens_out=usage.completion_tokens if usage else None,
                                extra={"model": completion.model, "turn": turns})
                if not completion.choices:
                    raise ModelAPIFailure("the endpoint answered with no choices")
                choice = completion.choices[0]
                message = choice.message
                tool_calls = list(message.tool_calls or [])
                extra: dict[str, Any] = {"turn": turns, "finishReason": choice.finish_reason,
                                         "toolCalls": len(tool_calls)}
                reasoning = (message.model_extra or {}).get("reasoning_content")
                if reasoning:
                    extra["reasoning"] = reasoning
                if message.refusal:
                    extra["refusal"] = message.refusal
                transcript.emit("assistant", text=message.content, extra=extra)
                assistant: dict[str, Any] = {"role": "assistant", "content": message.content}
                if tool_calls:
                    assistant["tool_calls"] = [tc.model_dump(mode="json", exclude_none=True) for tc in tool_calls]
                messages.append(assistant)
                if not tool_calls:
                    break
                for tc in tool_calls:
                    if tc.type == "function":
                        result = executor.execute(tc.function.name, tc.function.arguments, call_id=tc.id)
                    else:
                        # Every tool call needs an answer, or the next request is rejected.
                        result = executor.execute(f"custom:{tc.custom.name}", None, call_id=tc.id)
                    messages.append({"role": "tool", "tool_call_id": tc.id, "content": result})
        except ModelAPIFailure as exc:
            infra_reason, error, permanent = Infra.MODEL_API, str(exc), exc.permanent
        except SandboxError as exc:
            infra_reason, error = Infra.SANDBOX, f"sandbox failed: {exc}"
        except Exception as exc:  # a bug of ours: recorded as the harness's failure, with the perf so far
            infra_reason, error = Infra.AGENT, f"openai agent crashed: {type(exc).__name__}: {exc}"
        finally:
            client.close()

        if infra_reason is None and (turns == 0 or (usage_known and tokens_in == 0 and tokens_out == 0)):
            # DESIGN "Validity": a run with no model tokens made no model turn; neither a pass nor a fail.
            infra_reason = Infra.AGENT
            error = "the agent run used zero model tokens: no model turn happened"
        if error:
            transcript.emit("error", text=error)
        perf = TrialPerf(
            duration_ms=int((time.monotonic() - started) * 1000),
            turns=turns,
            tokens_in=tokens_in if usage_known else None,
            tokens_out=tokens_out if usage_known else None,
            tool_calls=executor.calls,
        )
        if usage_known:
            # Endpoints report dated snapshots (gpt-4o-mini-2024-07-18) for an alias: fall back to the name asked.
            perf.cost_usd = cost_usd(served_model, tokens_in, tokens_out) or cost_usd(model, tokens_in, tokens_out)
        return AgentResult(perf=perf, infra_reason=infra_reason, error=error, permanent=permanent,
                           budget_exhausted=budget_exhausted and infra_reason is None, model=served_model or model)

    def _complete(self, client: openai.OpenAI, params: dict[str, Any], settings: Settings, deadline: float,
                  transcript: TranscriptWriter) -> ChatCompletion:
        """One model turn, with bounded retries. Raises ModelAPIFailure or ModelBudgetEnd."""
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ModelBudgetEnd("time budget exhausted while waiting for the model")
            timeout = min(settings.request_timeout_s, remaining)
            clipped = timeout < settings.request_timeout_s
            try:
                return client.chat.completions.create(**params, timeout=timeout)
            except openai.APITimeoutError as exc:
                if clipped:
                    # Only the agent's own budget was too short for this turn: a valid trial, not an API fault.
                    raise ModelBudgetEnd("time budget exhausted while waiting for the model") from exc
                failure = exc
            except openai.BadRequestError as exc:
                if exc.code == "context_length_exceeded":
                    # The conversation outgrew the model's window: the agent's budget, like max_turns.
                    raise ModelBudgetEnd(f"context window exhausted: {exc.message}") from exc
                failure = exc
            except openai.APIError as exc:
                failure = exc
            detail = _describe(failure)
            if not _retryable(failure):
                raise ModelAPIFailure(f"model API failed: {detail} (not retryable)", permanent=True) from failure
            if attempt >= settings.max_retries:
                raise ModelAPIFailure(f"model API failed after {attempt + 1} attempts: {detail}") from failure
            delay = min(settings.retry_backoff_s * 2**attempt, settings.retry_backoff_max_s)
            hinted = _retry_after(failure)
            if hinted is not None:
                delay = min(max(delay, hinted), settings.retry_backoff_max_s)
            if time.monotonic() + delay >= deadline:
                raise ModelAPIFailure(f"model API failed and the time budget ends before the next retry: "
                                      f"{detail}") from failure
            attempt += 1
            transcript.emit("error", text=f"model API: {detail}; retry {attempt}/{settings.max_retries} "
                                          f"in {delay:.2f}s")
            time.sleep(delay)
