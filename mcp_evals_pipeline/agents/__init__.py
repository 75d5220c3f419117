"""Agent runners: one seam (agents/base.py), one tool executor (agents/tools.py), one registry (agents/registry.py)."""

from __future__ import annotations

from mcp_evals_pipeline.agents.base import (
    AgentRequest,
    AgentResult,
    AgentRunner,
    MissingCredentials,
    TranscriptWriter,
)
from mcp_evals_pipeline.agents.registry import (
    AGENTS,
    DEFAULT_AGENT,
    PLANNED_RUNNERS,
    AgentEntry,
    UnknownRunner,
    agent_entry,
    get_runner,
)

_RUNNER_CLASSES = {"ClaudeAgent": "claude", "CodexAgent": "codex", "OpenAIAgent": "openai", "ReplayAgent": "replay"}


def __getattr__(name: str) -> object:
    """The runner classes, and RUNNERS (name -> class), imported when asked for (agents/registry.py: lazily)."""
    if name in _RUNNER_CLASSES:
        return AGENTS[_RUNNER_CLASSES[name]].runner
    if name == "RUNNERS":
        runners: dict[str, type[AgentRunner]] = {key: entry.runner for key, entry in AGENTS.items()}
        return runners
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "AGENTS",
    "DEFAULT_AGENT",
    "PLANNED_RUNNERS",
    "RUNNERS",
    "AgentEntry",
    "AgentRequest",
    "AgentResult",
    "AgentRunner",
    "ClaudeAgent",
    "CodexAgent",
    "MissingCredentials",
    "OpenAIAgent",
    "ReplayAgent",
    "TranscriptWriter",
    "UnknownRunner",
    "agent_entry",
    "get_runner",
]
