"""The agent registry: every agent the pipeline can run, one entry each (name, pin, runner class, description).

The one list of agent names: `mcp-evals eval --agent` (its help), the Dagster trial config (its description and
validation), `get_runner` and the credential check (each runner's pin) all read it. The pins themselves stay in
models.AGENT_PINS ("models are pinned in one place"); an entry refers to its pin by name, and the two are checked
to agree when this module is imported, as are the CLI pins (agents/cli_tools.CLI_PINS).

Adding an agent: its runner class (an AgentRunner with a `name`; a CLI agent subclasses
agents/cli_runner.CliAgentRunner), its pin in models.AGENT_PINS, and one entry below.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cached_property

from mcp_evals_pipeline.agents.base import AgentRunner
from mcp_evals_pipeline.agents.cli_tools import CLI_PINS
from mcp_evals_pipeline.did_you_mean import suggestion
from mcp_evals_pipeline.models import AGENT_PINS, AgentPin


class UnknownRunner(ValueError):
    """No runner by that name (or not built yet)."""


@dataclass(frozen=True)
class AgentEntry:
    name: str  # the runner class's `name` too (tests/test_agent_registry.py holds them equal)
    runner_path: str  # "module:Class", imported when first used: the openai client alone costs a CLI ~2 s to load
    description: str  # one line, for help texts

    @cached_property
    def runner(self) -> type[AgentRunner]:
        module, cls = self.runner_path.split(":")
        runner: type[AgentRunner] = getattr(importlib.import_module(module), cls)
        return runner

    @property
    def pin(self) -> AgentPin:
        return AGENT_PINS[self.name]

    @property
    def plays_recordings(self) -> bool:
        """No model behind it: it plays recorded sessions (replay), spends nothing and measures no SDK. Its gate
        proves only what its sessions rest on (verify.replay_selection)."""
        return not self.pin.real_model

    @property
    def key_env(self) -> tuple[str, ...]:
        """Any one of these must be set for a live run (empty: no key needed)."""
        return self.pin.key_env


# In the order help texts list them.
_PKG = "mcp_evals_pipeline.agents"
AGENTS: dict[str, AgentEntry] = {entry.name: entry for entry in (
    AgentEntry("replay", f"{_PKG}.replay:ReplayAgent",
               "replays a task's recorded sessions: no model, no key (the default run and the tests)"),
    AgentEntry("openai", f"{_PKG}.openai_agent:OpenAIAgent",
               "the built-in tool loop against an OpenAI-compatible endpoint"),
    AgentEntry("codex", f"{_PKG}.codex_agent:CodexAgent",
               "the real Codex CLI (`codex exec`, pinned in agents/cli_tools.py)"),
    AgentEntry("claude", f"{_PKG}.claude_agent:ClaudeAgent",
               "the real Claude Code CLI (`claude -p`, pinned in agents/cli_tools.py)"),
)}
DEFAULT_AGENT = "replay"  # keyless, so a bare `mcp-evals eval` spends nothing

# Pinned in models.AGENT_PINS and part of the design, but their runners are not built yet: named apart so the
# error says "not available yet" rather than "unknown".
PLANNED_RUNNERS: tuple[str, ...] = ()


def _check_consistent() -> None:
    """The pins and the registry name the same agents: a pin without an entry (or the reverse) is a slip that
    would otherwise surface as a KeyError mid-run."""
    registered, pinned = set(AGENTS) | set(PLANNED_RUNNERS), set(AGENT_PINS)
    if registered != pinned:
        raise RuntimeError(f"agents/registry.py and models.AGENT_PINS disagree: registered only "
                           f"{sorted(registered - pinned)}, pinned only {sorted(pinned - registered)}")
    if not set(CLI_PINS) <= set(AGENTS):
        raise RuntimeError(f"agents/cli_tools.CLI_PINS pins CLIs of unregistered agents: "
                           f"{sorted(set(CLI_PINS) - set(AGENTS))}")


_check_consistent()


def agents_help() -> str:
    """`replay | openai | codex | claude`: the registered names, for a help text."""
    return " | ".join(AGENTS)


def agent_entry(name: str) -> AgentEntry:
    """The entry of `name`; UnknownRunner (a ValueError) listing what there is, for anything else."""
    try:
        return AGENTS[name]
    except KeyError:
        available = ", ".join(sorted(AGENTS))
        if name in PLANNED_RUNNERS:
            raise UnknownRunner(f"agent runner {name!r} is not available yet (available: {available})") from None
        planned = f"; not available yet: {', '.join(PLANNED_RUNNERS)}" if PLANNED_RUNNERS else ""
        raise UnknownRunner(f"unknown agent runner {name!r}{suggestion(name, AGENTS)} "
                            f"(available: {available}{planned})") from None


def get_runner(name: str) -> AgentRunner:
    """A fresh runner instance for `name`."""
    return agent_entry(name).runner()
