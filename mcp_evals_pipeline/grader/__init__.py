"""The functional grader: the one scored layer."""

from mcp_evals_pipeline.grader.functional import grade_workspace, grade_workspace_sync

__all__ = ["grade_workspace", "grade_workspace_sync"]
