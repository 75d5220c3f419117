"""`inputRequiredCalls`: multi-round tool calls (protocol 2026-07-28 input_required), answered by the grader.

A call is scripted round by round: in each round the server must answer `tools/call` with an input_required result
carrying one elicitation request, and the grader answers it with the round's `respond` (an elicitation result).
After the last scripted round the server must return the final tool result, which `isError` / `expect` check.

Two options test that a flow's progress lives in `requestState` alone, as a client sees it: `resendRound` re-sends
a round's answers with its requestState (a client retry) and expects the same next step again; `interleaveWith`
plays another call's flow alongside this one, exchange by exchange (with the same arguments: two flows for one
target at once). Both absent: the call is played alone, once through.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from mcp_evals_pipeline.contracts.task_base import (
    MAX_WAIT_SECONDS,
    ContractModel,
    Covers,
    Expectation,
    JsonType,
    as_list,
)

# What an elicitation form may carry back (mcp_types.ElicitResult.content): flat primitive values only.
FormValue = str | int | float | bool | list[str] | None


class InputAnswer(ContractModel):
    """The grader's answer to one round's elicitation request, sent as an ElicitResult."""

    action: Literal["accept", "decline", "cancel"]
    # Only with "accept": the submitted form, e.g. {"confirm": true}. Each key must be a property the round's
    # requested schema declares (a real client renders only those fields).
    content: dict[str, FormValue] | None = None

    @model_validator(mode="after")
    def _content_only_on_accept(self) -> InputAnswer:
        if self.content is not None and self.action != "accept":
            raise ValueError(f"an answer with action {self.action!r} carries no content")
        return self


class InputRound(ContractModel):
    # A substring the round's request message must carry (case-insensitive), so a server asking the wrong
    # question, or asking the right questions in the wrong order, fails at the round it goes wrong.
    request_contains: str | None = Field(default=None, min_length=1)
    # Fields the round's requestedSchema must declare, each with this JSON Schema type (e.g. {"confirm": "boolean"}),
    # so a server asking for "yes"/"no" text where a boolean was asked for fails at the round.
    requested_fields: dict[str, JsonType] = Field(default_factory=dict)
    # Fields the requestedSchema must list in its `required` (a prompt's "one required field approver"): a form
    # whose field is optional lets a client submit without it.
    required_fields: list[str] = Field(default_factory=list)
    # The answer the grader gives, e.g. {"action": "accept", "content": {"confirm": true}} or {"action": "decline"}.
    respond: InputAnswer


class InputRequiredCall(Covers):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    rounds: list[InputRound] = Field(min_length=1)
    # None: not checked; True/False: the final result's isError flag must equal it.
    is_error: bool | None = None
    expect: list[Expectation] = Field(default_factory=list)
    # per exchange; default: the contract's
    timeout_seconds: float | None = Field(default=None, gt=0, le=MAX_WAIT_SECONDS)

    # A client retry: after round K's answers are sent and the next step is checked, the grader sends round K's
    # answers again with round K's requestState; the reply is held to the same script (round K+1's, or the final
    # result's `isError` / `expect`) and the flow goes on from it. None: no retry.
    resend_round: int | None = Field(default=None, ge=1)
    # Another flow at once: the index (0-based) in inputRequiredCalls of a call whose exchanges this check plays
    # alternately with its own (this call's first, then that call's, ...), held to that call's rounds, `isError`
    # and `expect` (its own resendRound / interleaveWith are not played here). That call still runs alone at its own
    # check. None: this flow alone.
    interleave_with: int | None = Field(default=None, ge=0)

    _listify = field_validator("expect", mode="before")(as_list)

    @model_validator(mode="after")
    def _resend_a_scripted_round(self) -> InputRequiredCall:
        if self.resend_round is not None and self.resend_round > len(self.rounds):
            raise ValueError(f"resendRound {self.resend_round} names no round (the call scripts "
                             f"{len(self.rounds)})")
        return self
