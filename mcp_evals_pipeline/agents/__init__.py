"""Agent runners: one seam (agents/base.py), one tool executor (agents/tools.py), one registry (agents/registry.py)."""

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
from mcp_evals_pipeline.agents.registry import (
    AGENTS,
    DEFAULT_AGENT,
    PLANNED_RUNNERS,
    AgentEntry,
    UnknownRunner,
    agent_entry,
    get_runner,
)
from mcp_evals_pipeline.agents.replay import ReplayAgent

# Name -> runner class, derived from the registry (for callers that predate it).
RUNNERS: dict[str, type[AgentRunner]] = {name: entry.runner for name, entry in AGENTS.items()}

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
