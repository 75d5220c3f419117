"""The seam for ladder stages a task opts into (views, input_required, oauth, upstream).

A Feature is instantiated per grading. It may start services before the server starts (an upstream fake, an
identity provider) and hand the server environment variables; it may set what the MCP client sends (headers, an
httpx2 Auth) before the handshake; and it contributes checks at fixed places of the one ladder:

    ... start -> [after_start] -> handshake -> tools -> resources -> [after_resources] -> calls -> [after_calls]

Each check it contributes is a Step (id, stage, coroutine): raise StepFailed(detail) to fail it. Everything a
feature opens is closed in `close()`, which runs on every path.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from mcp_evals_pipeline.contracts.task import TaskContract
    from mcp_evals_pipeline.grader.functional import Grading

Position = Literal["after_start", "after_resources", "after_calls"]


class StepFailed(Exception):
    """A check failed: the server's doing, reported with a detail a reader can act on."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


@dataclass
class Step:
    id: str
    stage: str
    run: Callable[[], Awaitable[str | None]]
    requirements: list[str] = field(default_factory=list)  # of the contract element behind the check


class Feature(ABC):
    name: str  # as declared by TaskContract.declared_features()

    def __init__(self, grading: Grading):
        self.grading = grading

    @classmethod
    def applies(cls, contract: TaskContract) -> bool:
        return cls.name in contract.declared_features()

    async def before_start(self) -> dict[str, str]:
        """Start what the server needs; return environment variables for it."""
        return {}

    def steps(self, position: Position) -> list[Step]:
        return []

    async def close(self) -> None:  # noqa: B027 - optional hook: most features start nothing
        """Stop everything started; runs on every path."""


# name -> Feature class. A feature a contract declares but this grader lacks makes the grade infra.grader with
# the reason (never a grade without its checks).
FEATURES: dict[str, type[Feature]] = {}


def register(feature: type[Feature]) -> type[Feature]:
    FEATURES[feature.name] = feature
    return feature
