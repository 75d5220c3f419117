"""Task kinds: what a trial of a task is. `build` (an agent builds an MCP server, the functional grader marks the
workspace) is the only kind today; each kind owns its preparation, the services its agent phase runs, how a trial
is marked and how verify-tasks proves its marker, so run_trial and verify-tasks are the same for every kind."""

from __future__ import annotations

from mcp_evals_pipeline.kinds.base import TaskKind
from mcp_evals_pipeline.kinds.build import BuildKind

KINDS: dict[str, TaskKind] = {kind.name: kind for kind in (BuildKind(),)}


def kind_of(name: str) -> TaskKind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown task kind {name!r} (known: {', '.join(KINDS)})") from None


__all__ = ["KINDS", "TaskKind", "kind_of"]
