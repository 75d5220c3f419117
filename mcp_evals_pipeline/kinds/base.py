"""What a task kind provides to run_trial and verify-tasks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from mcp_evals_pipeline.conditions import BASELINES

if TYPE_CHECKING:
    from mcp_evals_pipeline.conditions import Condition
    from mcp_evals_pipeline.contracts.grade import TrialGrade
    from mcp_evals_pipeline.tasks.catalog import Solution, Task


@dataclass
class AgentPhase:
    """What the agent phase gets from its kind's services: variables for its sandbox and, for a usage task, the
    MCP server it is to use."""

    env: dict[str, str] = field(default_factory=dict)
    mcp_url: str | None = None
    # What the condition gives the agent besides its task, appended to the prompt (a usage task's instructions
    # or docs pack, known only once the server is up); '' for nothing.
    brief: str = ""


class TaskKind(ABC):
    name: ClassVar[str]

    def supports(self, condition: Condition) -> bool:
        """Whether a trial of this kind can run under the condition: each kind has conditions of its own (a batch
        leaves out the pairs it cannot)."""
        return condition.kind == self.name

    @property
    def baseline(self) -> str:
        """The condition a batch runs when it names none."""
        return BASELINES[self.name]

    def condition_problem(self, task: Task, condition: Condition) -> str | None:
        """Why this task cannot run under a condition its kind supports (None: it can); checked before a batch
        spends anything."""
        return None

    @abstractmethod
    def prepare(self, workspace: Path, task: Task, condition: Condition, agent: str) -> str:
        """Lay out the agent's fresh workspace for the condition; return the prompt the agent gets."""

    @abstractmethod
    def agent_services(self, task: Task, condition: Condition,
                       trial_dir: Path) -> AbstractContextManager[AgentPhase]:
        """What the agent phase needs live, entered before the sandbox opens and closed after the agent stops
        (before marking). What the marker needs of it is left as files in `trial_dir` (the files stay the source
        of truth)."""

    @abstractmethod
    def mark(self, task: Task, workspace: Path, trial_dir: Path) -> TrialGrade:
        """Mark one finished agent phase. Never raises for anything the agent or its work does: an infra grade."""

    @abstractmethod
    async def verify(self, task: Task, solution: Solution, scratch: Path) -> TrialGrade:
        """Mark one of the task's own solutions (golden, alternate, negative, session) as verify-tasks proves the
        marker."""
