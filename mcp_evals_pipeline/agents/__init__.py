"""Agent runners: one seam (agents/base.py), one tool executor (agents/tools.py), one registry here."""

from __future__ import annotations

from mcp_evals_pipeline.agents.base import (
    AgentRequest,
    AgentResult,
    AgentRunner,
    MissingCredentials,
    TranscriptWriter,
)
from mcp_evals_pipeline.agents.claude_agent import ClaudeAgent
from mcp_evals_pipeline.agents.codex_agent import CodexAgent
from mcp_evals_pipeline.agents.openai_agent import OpenAIAgent
from mcp_evals_pipeline.agents.replay import ReplayAgent

RUNNERS: dict[str, type[AgentRunner]] = {
    "replay": ReplayAgent,
    "openai": OpenAIAgent,
    "codex": CodexAgent,
    "claude": ClaudeAgent,
}

# Pinned in models.AGENT_PINS and part of the design, but their runners are not built yet: named apart so the
# error says "not available yet" rather than "unknown".
PLANNED_RUNNERS: tuple[str, ...] = ()


class UnknownRunner(ValueError):
    """No runner by that name (or not built yet)."""


def get_runner(name: str) -> AgentRunner:
    """A fresh runner instance for `name`."""
    try:
        return RUNNERS[name]()
    except KeyError:
        available = ", ".join(sorted(RUNNERS))
        if name in PLANNED_RUNNERS:
            raise UnknownRunner(f"agent runner {name!r} is not available yet (available: {available})") from None
        planned = f"; not available yet: {', '.join(PLANNED_RUNNERS)}" if PLANNED_RUNNERS else ""
        raise UnknownRunner(f"unknown agent runner {name!r} (available: {available}{planned})") from None


__all__ = [
    "PLANNED_RUNNERS",
    "RUNNERS",
    "AgentRequest",
    "AgentResult",
    "AgentRunner",
    "ClaudeAgent",
    "MissingCredentials",
    "OpenAIAgent",
    "ReplayAgent",
    "TranscriptWriter",
    "UnknownRunner",
    "get_runner",
]
