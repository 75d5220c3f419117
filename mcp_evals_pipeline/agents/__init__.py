"""Agent runners: one seam (agents/base.py), one tool executor (agents/tools.py), one registry here."""

from __future__ import annotations

from mcp_evals_pipeline.agents.base import (
    AgentRequest,
    AgentResult,
    AgentRunner,
    MissingCredentials,
    TranscriptWriter,
)
from mcp_evals_pipeline.agents.openai_agent import OpenAIAgent
from mcp_evals_pipeline.agents.replay import ReplayAgent

RUNNERS: dict[str, type[AgentRunner]] = {"replay": ReplayAgent, "openai": OpenAIAgent}

# Pinned in models.AGENT_PINS and part of the design, but their runners are not built yet: named apart so the
# error says "not available yet" rather than "unknown".
PLANNED_RUNNERS: tuple[str, ...] = ("codex", "claude")


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
        raise UnknownRunner(f"unknown agent runner {name!r} (available: {available}; not available yet: "
                            f"{', '.join(PLANNED_RUNNERS)})") from None


__all__ = [
    "PLANNED_RUNNERS",
    "RUNNERS",
    "AgentRequest",
    "AgentResult",
    "AgentRunner",
    "MissingCredentials",
    "OpenAIAgent",
    "ReplayAgent",
    "TranscriptWriter",
    "UnknownRunner",
    "get_runner",
]
