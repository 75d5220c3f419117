"""The `input_required` stage: multi-round tool calls of protocol 2026-07-28 (SEP-2322), answered round by round.

For each `inputRequiredCalls` entry the grader calls the tool and, for every scripted round, expects an
input_required result carrying one elicitation request (whose message holds `requestContains`); it answers with
the round's `respond` and the echoed `requestState`, exactly as a host would. After the last scripted round the
server must return the final tool result, checked like a call of the `calls` stage. The loop is driven by hand
(`session.call_tool(..., allow_input_required=True)`) rather than by the SDK's automatic driver, so a server that
answers too early, asks the wrong question or asks once too often fails at the round where it went wrong, and the
detail says which round.

A call may also prove that the flow's progress travels in requestState alone: with `resendRound` K the exchange
carrying round K's answers is sent twice, as a client retry would (the second reply held to the same script, the
flow going on from it); with `interleaveWith` another call's flow is played alongside, exchange by exchange, on
the same client. A server that keeps the round in its own memory (keyed by the target, or by a token it forgets
once used) answers one of them with the wrong step.

One check per call, id `input-required:<tool>:<n>` (n counts per tool), all on one modern-protocol client.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.client import ClientRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_evals_pipeline.contracts.input_required import InputAnswer, InputRequiredCall, InputRound
from mcp_evals_pipeline.contracts.task_base import Expectation
from mcp_evals_pipeline.grader.expectations import (
    clip,
    declared_type_ok,
    expectation_failure,
    schema_types,
    tool_result_text,
)
from mcp_evals_pipeline.grader.features import Feature, GradingContext, Step, StepFailed, register

STAGE = "input_required"
CHECK_PREFIX = "input-required"


async def _no_standalone_elicitation(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    # Never reached on 2026-07-28 (there a server asks only inside an input_required result, and this stage
    # refuses any other protocol). The callback exists so the client declares the elicitation capability: a
    # conforming server, e.g. one built on the SDK's Resolve/Elicit, refuses to ask a client that did not.
    return types.ErrorData(code=types.INVALID_REQUEST,
                           message="the grader answers elicitations only inside input_required results")


def _signature(tool: str, args: dict[str, Any]) -> str:
    return f"{tool}({json.dumps(args, separators=(',', ':'))})"


def _flag(value: bool | None) -> str:
    return str(bool(value)).lower()


def _describe_request(request: types.InputRequest) -> str:
    if isinstance(request, types.ElicitRequest):
        return f'{request.method} "{clip(request.params.message, 120)}"'
    return request.method


@register
class InputRequiredStage(Feature):
    name = STAGE

    def __init__(self, grading: GradingContext):
        super().__init__(grading)
        self._client: Client | None = None

    def steps(self) -> list[Step]:
        counts: dict[str, int] = defaultdict(int)
        steps = []
        for call in self.grading.contract.input_required_calls:
            counts[call.tool] += 1
            steps.append(Step(f"{CHECK_PREFIX}:{call.tool}:{counts[call.tool]}", STAGE,
                              lambda call=call: self._check(call), list(call.requirements)))
        return steps

    # ---- the client ------------------------------------------------------------------------------------------

    async def _modern_client(self) -> Client:
        """One client for all of this stage's calls, opened on first use: mode "auto" (server/discover, protocol
        2026-07-28; the legacy handshake client cannot receive input_required results), declaring elicitation.

        The elicitation callback declares the capability: without it a server on the SDK's Resolve/Elicit API
        refuses to ask (-32021)."""
        if self._client is not None:
            return self._client
        grading = self.grading
        client = await grading.connect(
            f"connecting a client for protocol {' or '.join(MODERN_PROTOCOL_VERSIONS)} to {grading.url}",
            mode="auto", elicitation_callback=_no_standalone_elicitation)
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # mode "auto" falls back to the initialize handshake when server/discover is not understood.
            raise StepFailed(f"expected the server to speak protocol {' or '.join(MODERN_PROTOCOL_VERSIONS)} "
                             f"(server/discover), which input_required results need; it negotiated "
                             f"{client.protocol_version}")
        self._client = client
        return client

    # ---- one scripted call -----------------------------------------------------------------------------------

    async def _check(self, call: InputRequiredCall) -> str:
        client = await self._modern_client()
        flow = _Flow(self.grading, client, call, _signature(self.grading.tool_names.get(call.tool, call.tool),
                                                             call.args), call.resend_round)
        flows = [flow]
        if call.interleave_with is not None:
            # The other call's flow, played alongside without its own options; named apart, as its arguments
            # may equal this call's.
            other = self.grading.contract.input_required_calls[call.interleave_with]
            sig = _signature(self.grading.tool_names.get(other.tool, other.tool), other.args)
            flows.append(_Flow(self.grading, client, other,
                               f"{sig} (inputRequiredCalls[{call.interleave_with}], played alongside)", None))
        while not all(f.final_text is not None for f in flows):
            for f in flows:
                if f.final_text is None:
                    await f.step()
        total = len(call.rounds)
        actions = ", ".join(r.respond.action for r in call.rounds)
        detail = f'{total} round(s) answered ({actions}); final "{clip(flow.final_text or "", 120)}"'
        if call.resend_round is not None:
            detail += f"; round {call.resend_round}'s answers re-sent: the same next step"
        if len(flows) > 1:
            detail += f'; alongside inputRequiredCalls[{call.interleave_with}]: final ' \
                      f'"{clip(flows[1].final_text or "", 60)}"'
        return detail


class _Flow:
    """One scripted call played one exchange at a time (so that two can be played alternately): exchange n
    (1..rounds) must be round n's input_required result, exchange rounds+1 the final result."""

    def __init__(self, grading: GradingContext, client: Client, call: InputRequiredCall, sig: str,
                 resend_round: int | None):
        self.grading, self.client, self.call, self.sig = grading, client, call, sig
        self.resend_round = resend_round
        self.timeout = call.timeout_seconds or grading.contract.call_timeout_seconds
        self.sent = 0  # exchanges made
        self.responses: types.InputResponses | None = None
        self.state: str | None = None
        self.final_text: str | None = None  # set once the final result passed its checks

    async def _send(self, what: str, answers: types.InputResponses | None,
                    echoed: str | None) -> types.CallToolResult | types.InputRequiredResult:
        name, args, timeout = self.grading.tool_names.get(self.call.tool, self.call.tool), self.call.args, self.timeout
        client = self.client
        return await self.grading.talk(what, lambda: client.session.call_tool(
            name, args, read_timeout_seconds=timeout, input_responses=answers, request_state=echoed,
            allow_input_required=True), timeout + 5)

    async def step(self) -> None:
        self.sent += 1
        n, total = self.sent, len(self.call.rounds)
        # The exchange carrying round n-1's answers is the one a client retry re-sends.
        plays = [""] if self.resend_round != n - 1 else ["", f" (round {n - 1}'s answers re-sent)"]
        answers, echoed = self.responses, self.state  # what this exchange sends, each time it is played
        for again in plays:
            if n <= total:
                self._take_round(n, await self._send(f"{self.sig} round {n} of {total}{again}", answers, echoed),
                                 again)
            else:
                self._take_final(await self._send(f"{self.sig} final call after {total} round(s){again}", answers,
                                                  echoed), again)

    def _take_round(self, n: int, result: types.CallToolResult | types.InputRequiredResult, again: str) -> None:
        scripted, where = self.call.rounds[n - 1], f"{self.sig} round {n} of {len(self.call.rounds)}{again}"
        if not isinstance(result, types.InputRequiredResult):
            asking = f' asking "{scripted.request_contains}"' if scripted.request_contains else ""
            raise StepFailed(f'{where}: expected an input_required result{asking}, found the final result '
                             f'"{clip(tool_result_text(result))}" (isError {_flag(result.is_error)})')
        self.responses = {_answered_key(where, scripted, result): _elicit_result(scripted.respond)}
        self.state = result.request_state

    def _take_final(self, final: types.CallToolResult | types.InputRequiredResult, again: str) -> None:
        total, lead = len(self.call.rounds), f"{self.sig}{again}"
        if isinstance(final, types.InputRequiredResult):
            asked = "; ".join(_describe_request(r) for r in (final.input_requests or {}).values()) or "no request"
            raise StepFailed(f"{lead}: expected the final result after {total} round(s), found an input_required "
                             f"result asking for round {total + 1} ({asked})")
        self.final_text = self.grading.check_result(f"{lead} after {total} round(s)", final, self.call.is_error,
                                                    self.call.expect)


def _answered_key(where: str, scripted: InputRound, result: types.InputRequiredResult) -> str:
    """Check the round's one request against the script; return its key (the answer goes back under it)."""
    requests = result.input_requests or {}
    if len(requests) != 1:
        found = f"{len(requests)} ({', '.join(requests)})" if requests else "none"
        raise StepFailed(f"{where}: expected an input_required result carrying exactly one input request, "
                         f"found {found}")
    key, request = next(iter(requests.items()))
    if not isinstance(request, types.ElicitRequest):
        raise StepFailed(f"{where}: expected an elicitation/create input request, found {request.method}")
    message = request.params.message
    if scripted.request_contains is not None:
        why = expectation_failure(Expectation(type="contains", value=scripted.request_contains), message)
        if why:
            raise StepFailed(f'{where}: the elicitation message "{clip(message)}" {why}')
    content = scripted.respond.content
    if content or scripted.requested_fields or scripted.required_fields:
        params = request.params
        wanted = list(dict.fromkeys([*(content or {}), *scripted.requested_fields, *scripted.required_fields]))
        if not isinstance(params, types.ElicitRequestFormParams):
            raise StepFailed(f"{where}: expected a form elicitation with the field(s) {', '.join(wanted)}, "
                             f"found a {params.mode}-mode elicitation")
        properties = (params.requested_schema or {}).get("properties") or {}
        missing = [field for field in wanted if field not in properties]
        if missing:
            raise StepFailed(f"{where}: the requested schema has no field {', '.join(map(repr, missing))} "
                             f"(has: {', '.join(properties) or 'none'})")
        for field, json_type in scripted.requested_fields.items():
            declared = schema_types(properties[field])
            if not declared_type_ok(declared, json_type):
                raise StepFailed(f"{where}: the requested field {field!r} has type "
                                 f"{'/'.join(sorted(declared)) or 'none'} (expected {json_type})")
        required = (params.requested_schema or {}).get("required") or []
        optional = [field for field in scripted.required_fields if field not in required]
        if optional:
            raise StepFailed(f"{where}: the requested schema does not list {', '.join(map(repr, optional))} in "
                             f"required (required: {', '.join(map(str, required)) or 'none'})")
    return key


def _elicit_result(answer: InputAnswer) -> types.ElicitResult:
    return types.ElicitResult(action=answer.action, content=answer.content)
