"""Model pins and prices: the one place a model changes. A harness's own default can shift silently across a
dependency bump and move trend data; a change here is a deliberate, visible edit. --model and
--reasoning-effort override per run, and every trial row records what actually ran."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class AgentPin:
    model: str | None
    reasoning_effort: str | None = None
    key_env: tuple[str, ...] = ()  # any one of these must be set for a live run


AGENT_PINS: dict[str, AgentPin] = {
    "codex": AgentPin("gpt-5.6-terra", "high", ("OPENAI_API_KEY", "CODEX_API_KEY")),
    "claude": AgentPin("claude-sonnet-5", None, ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")),
    # The built-in loop for any OpenAI-compatible endpoint (OPENAI_BASE_URL selects the endpoint).
    "openai": AgentPin("gpt-5.6-terra", None, ("OPENAI_API_KEY",)),
    # Replays recorded sessions: no model, no key; the keyless default run and the tests.
    "replay": AgentPin(None, None, ()),
}

# The usage evals' calibration (seeds 002, 004: calibrate on the strongest model first): a usage case this agent
# and model fail in most of their trials is flagged as suspect (the case or the world is more likely wrong).
CALIBRATION: tuple[str, str] = ("codex", "gpt-5.6-sol")

# The pin; MCP_EVALS_JUDGE_MODEL overrides it for one run (the composite action's `judge-model` input). Either way
# run.json and every memo name the model that wrote them.
JUDGE_MODEL = os.environ.get("MCP_EVALS_JUDGE_MODEL") or "gpt-5.6-sol"
SYNTHESIS_MODEL = "gpt-5.6-sol"
JUDGE_KEY_ENV = ("OPENAI_API_KEY",)

# USD per million tokens (input, output). A model missing here has unknown cost: costUsd stays null and
# reports print "-" rather than a guess. Add a model's list price deliberately, with the date you read it.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
}


def cost_usd(model: str | None, tokens_in: int | None, tokens_out: int | None) -> float | None:
    price = PRICES_PER_MTOK.get(model or "")
    if price is None or tokens_in is None or tokens_out is None:
        return None
    return round((tokens_in * price[0] + tokens_out * price[1]) / 1_000_000, 6)

