"""The seam for ladder stages a task opts into (views, input_required, oauth, upstream).

A Feature is instantiated per grading and implements one opt-in stage of the ladder (contracts/ladder.py says where
it runs). It may start services before the server starts (an upstream fake, an identity provider) and hand the
server environment variables; it may set what the MCP client sends (headers, an httpx2 Auth) before the handshake;
and it contributes the checks of its stage: Steps (id, stage, coroutine, requirement ids); raise StepFailed(detail)
to fail one. Everything a feature opens is closed in `close()`, which runs on every path.

Features see the grading only through `GradingContext`: the helpers every stage shares, public on one object, so a
stage never re-implements paging, exchanges or result checks (and this module never imports the grader).
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.ladder import BY_NAME

if TYPE_CHECKING:
    import httpx2
    import mcp_types as types
    from mcp import Client

    from mcp_evals_pipeline.contracts.task import TaskContract
    from mcp_evals_pipeline.contracts.task_base import Expectation


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


class GradingContext(Protocol):
    """What a stage may use of the grading in progress (grader/functional.Grading implements it)."""

    contract: TaskContract
    url: str | None
    client: Client | None
    tool_names: dict[str, str]
    http_headers: dict[str, str]
    http_auth: httpx2.Auth | None
    features: list[Feature]

    def server_status(self) -> str: ...

    async def talk(self, what: str, op: Callable[[], Awaitable[Any]], timeout: float) -> Any: ...

    async def connect(self, what: str, mode: str = "legacy", **options: Any) -> Client: ...

    async def list_all(self, what: str, fetch: Callable[..., Awaitable[Any]], attr: str) -> list[Any]: ...

    def check_result(self, where: str, result: types.CallToolResult, is_error: bool | None,
                     expect: list[Expectation]) -> str: ...


class Feature(ABC):
    name: str  # its stage in contracts/ladder.py, and the feature TaskContract.declared_features() names
    # The trial's invalid reason when what before_start starts (a service of the harness) does not come up.
    infra: Infra = Infra.GRADER

    def __init__(self, grading: GradingContext):
        self.grading = grading

    @classmethod
    def applies(cls, contract: TaskContract) -> bool:
        return cls.name in contract.declared_features()

    async def before_start(self) -> dict[str, str]:
        """Start what the server needs; return environment variables for it."""
        return {}

    def steps(self) -> list[Step]:
        """The checks of this feature's stage, run where the ladder places the stage."""
        return []

    async def close(self) -> None:  # noqa: B027 - optional hook: most features start nothing
        """Stop everything started; runs on every path."""


# name -> Feature class. A feature a contract declares but this grader lacks makes the grade infra.grader with
# the reason (never a grade without its checks).
FEATURES: dict[str, type[Feature]] = {}


def register(feature: type[Feature]) -> type[Feature]:
    stage = BY_NAME.get(feature.name)
    if stage is None or stage.feature != feature.name:
        raise ValueError(f"feature {feature.name!r} has no opt-in stage in contracts/ladder.py")
    FEATURES[feature.name] = feature
    return feature
