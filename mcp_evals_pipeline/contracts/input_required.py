"""`inputRequiredCalls`: multi-round tool calls (protocol 2026-07-28 input_required), answered by the grader."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from mcp_evals_pipeline.contracts.task_base import ContractModel, Expectation, as_list


class InputRound(ContractModel):
    # A substring the round's request must carry (its message), so a server asking the wrong question fails.
    request_contains: str | None = None
    # The answer the grader gives, e.g. {"action": "accept", "content": {"approve": true}} or {"action": "decline"}.
    respond: dict[str, Any]


class InputRequiredCall(ContractModel):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    rounds: list[InputRound] = Field(min_length=1)
    is_error: bool | None = None
    expect: list[Expectation] = Field(default_factory=list)

    _listify = field_validator("expect", mode="before")(as_list)
