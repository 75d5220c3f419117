"""The build kind: an agent builds an MCP server in its workspace; the functional grader marks the workspace."""

from __future__ import annotations

import shutil
import tempfile
from contextlib import AbstractContextManager
from pathlib import Path

from mcp_evals_pipeline.conditions import Condition, prepare_workspace
from mcp_evals_pipeline.contracts.grade import TrialGrade
from mcp_evals_pipeline.grader import grade_workspace, grade_workspace_sync
from mcp_evals_pipeline.kinds.base import TaskKind
from mcp_evals_pipeline.oauth_idp import agent_phase_env
from mcp_evals_pipeline.tasks.catalog import NEGATIVE_DECLARATION, Solution, Task


class BuildKind(TaskKind):
    name = "build"

    def prepare(self, workspace: Path, task: Task, condition: Condition, agent: str) -> str:
        return prepare_workspace(workspace, task, condition, agent)

    def agent_services(self, task: Task, trial_dir: Path) -> AbstractContextManager[dict[str, str]]:
        # An OAuth task's IdP while the agent works; grading starts its own (deterministic) services.
        return agent_phase_env(task.contract)

    def mark(self, task: Task, workspace: Path, trial_dir: Path) -> TrialGrade:
        return grade_workspace_sync(task.contract, workspace)

    async def verify(self, task: Task, solution: Solution, scratch: Path) -> TrialGrade:
        # A copy of the solution as an agent would leave it (without a negative's declaration).
        workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=scratch))
        try:
            shutil.copytree(solution.path, workspace, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns(NEGATIVE_DECLARATION))
            return await grade_workspace(task.contract, workspace)
        finally:
            shutil.rmtree(workspace, ignore_errors=True)
