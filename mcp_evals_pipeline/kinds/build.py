"""The build kind: an agent builds an MCP server in its workspace; the functional grader marks the workspace."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from mcp_evals_pipeline import grader  # its attributes load the grader (and the MCP client) when first used
from mcp_evals_pipeline.conditions import Condition, prepare_workspace
from mcp_evals_pipeline.contracts.grade import TrialGrade
from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.kinds.base import AgentPhase, TaskKind
from mcp_evals_pipeline.oauth_idp import agent_phase_env
from mcp_evals_pipeline.tasks.catalog import NEGATIVE_DECLARATION, Solution, Task


class BuildKind(TaskKind):
    name = "build"

    def prepare(self, workspace: Path, task: Task, condition: Condition, agent: str) -> str:
        return prepare_workspace(workspace, task, condition, agent)

    @contextlib.contextmanager
    def agent_services(self, task: Task, condition: Condition, trial_dir: Path) -> Iterator[AgentPhase]:
        # An OAuth task's IdP while the agent works; grading starts its own (deterministic) services.
        with agent_phase_env(task.contract) as env:
            yield AgentPhase(env=env)

    def mark(self, task: Task, workspace: Path, trial_dir: Path) -> TrialGrade:
        assert isinstance(task.contract, TaskContract)
        return grader.grade_workspace_sync(task.contract, workspace)

    async def verify(self, task: Task, solution: Solution, scratch: Path) -> TrialGrade:
        # A copy of the solution as an agent would leave it (without a negative's declaration).
        workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=scratch))
        try:
            shutil.copytree(solution.path, workspace, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns(NEGATIVE_DECLARATION))
            assert isinstance(task.contract, TaskContract)
            return await grader.grade_workspace(task.contract, workspace)
        finally:
            shutil.rmtree(workspace, ignore_errors=True)
