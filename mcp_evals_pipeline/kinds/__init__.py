"""Task kinds: what a trial of a task is.

`build`: an agent builds an MCP server; the functional grader marks its workspace. `usage`: an agent uses a
server's tools; it is marked on what reached the recording world. Each kind owns its preparation, the services its
agent phase runs, how a trial is marked and how verify-tasks proves its marker, so run_trial and verify-tasks are
the same for every kind."""

from __future__ import annotations

from mcp_evals_pipeline.kinds.base import AgentPhase, TaskKind
from mcp_evals_pipeline.kinds.build import BuildKind
from mcp_evals_pipeline.kinds.usage import UsageKind

KINDS: dict[str, TaskKind] = {kind.name: kind for kind in (BuildKind(), UsageKind())}


def kind_of(name: str) -> TaskKind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown task kind {name!r} (known: {', '.join(KINDS)})") from None


__all__ = ["KINDS", "AgentPhase", "TaskKind", "kind_of"]
