"""The functional grader: the one scored layer.

Its entry points load lazily: importing a light module of the package does not import the whole grader."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_evals_pipeline.grader.functional import grade_workspace, grade_workspace_sync

__all__ = ["grade_workspace", "grade_workspace_sync"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from mcp_evals_pipeline.grader import functional

        return getattr(functional, name)
    raise AttributeError(name)
