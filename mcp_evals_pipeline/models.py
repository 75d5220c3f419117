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
    # False for an agent that plays canned sessions (replay): its figures prove the harness, never an SDK, so they
    # stay out of every headline (synthesis, trend) unless asked for by name, and no unsafe ceiling judges them.
    real_model: bool = True


AGENT_PINS: dict[str, AgentPin] = {
    "codex": AgentPin("gpt-5.6-terra", "high", ("OPENAI_API_KEY", "CODEX_API_KEY")),
    "claude": AgentPin("claude-sonnet-5", None, ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")),
    # The built-in loop for any OpenAI-compatible endpoint (OPENAI_BASE_URL selects the endpoint).
    "openai": AgentPin("gpt-5.6-terra", None, ("OPENAI_API_KEY",)),
    # Replays recorded sessions: no model, no key; the keyless default run and the tests.
    "replay": AgentPin(None, None, (), real_model=False),
}

# ---------------------------------------------------------------------------------------------------------------
# Which agents are real models, and how an agent/model is written: one fact each, read by every report.

NOT_REAL_MODELS: tuple[str, ...] = tuple(sorted(name for name, pin in AGENT_PINS.items() if not pin.real_model))
NO_MODEL = "(no model)"  # the one spelling of a missing model (replay's, or a record that never named one)


def is_real_model(agent_runner: object) -> bool:
    """A runner that is a real model (or one this checkout does not know, e.g. an imported run's): True."""
    return str(agent_runner) not in NOT_REAL_MODELS


def real_model_sql(column: str = "agent_runner") -> str:
    """is_real_model as a SQL predicate on `column` (the names are identifiers of ours: no quoting to escape)."""
    names = ", ".join(f"'{name}'" for name in NOT_REAL_MODELS)
    return f"{column} NOT IN ({names})" if names else "true"


def agent_label(agent_runner: object, agent_model: object) -> str:
    """`codex/gpt-5.6-terra`, or `replay (no model)`: how every report, table and picture names an agent."""
    return f"{agent_runner}/{agent_model}" if agent_model else f"{agent_runner} {NO_MODEL}"


def agent_label_sql(runner: str = "agent_runner", model: str = "agent_model") -> str:
    """agent_label as a SQL expression over two columns (for models regrouped by agent)."""
    return f"{runner} || coalesce('/' || nullif({model}, ''), ' {NO_MODEL}')"

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

