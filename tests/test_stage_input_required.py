"""The input_required stage against real server processes: one check per scripted call, failing at the round
where the server leaves the script, with a detail that says which round and what was found."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from mcp_evals_pipeline.contracts.grade import TrialGrade
from mcp_evals_pipeline.contracts.input_required import InputAnswer, InputRequiredCall
from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.grader.features import FEATURES
from mcp_evals_pipeline.grader.functional import Grading, unsupported_features
from mcp_evals_pipeline.grader.runtimes import runtime_for
from mcp_evals_pipeline.tasks.catalog import Task, discover_tasks

from .conftest import write_tree
from .support.prompt_strings import unstated

REQS = {"requirements.txt": "mcp>=2.3,<3\n"}

# One server, its behaviour picked by a `mode` file in the workspace: `approve(item)` asks one yes/no round
# ("Approve <item>?", field `ok`) with the raw helpers, then answers "approved <item>" or "declined <item>".
# Two modes keep the flow in server memory instead of requestState: "one-time-token" (state is a token, forgotten
# once answered: a retry is asked again) and "latest-flow-wins" (one pending flow per item: an earlier flow for the
# same item is asked again).
RAW_SERVER = '''
import json
import os
import pathlib
import uuid

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (CallToolResult, ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult,
                       TextContent)

MODE = pathlib.Path("mode").read_text().strip() if pathlib.Path("mode").exists() else "good"
mcp = MCPServer("approver")
TOKENS = {}


@mcp.tool()
def echo(text: str) -> str:
    return text


def ask(item: str, round_no: int, state: str | None = None) -> InputRequiredResult:
    message = f"Delete {item}?" if MODE == "wrong-question" else f"Approve {item}?"
    field = "reason" if MODE == "wrong-field" else "ok"
    schema = {"type": "object", "properties": {field: {"type": "boolean"}},
              "required": [] if MODE == "optional-field" else [field]}
    requests = {"q": ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))}
    if MODE == "two-questions":
        requests["q2"] = requests["q"]
    return InputRequiredResult(input_requests=requests, request_state=state or json.dumps({"round": round_no}))


def final(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)])


@mcp.tool()
async def approve(item: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    if MODE == "no-ask":
        return final(f"approved {item}")
    state = json.loads(ctx.request_state) if MODE == "extra-round" and ctx.request_state else {"round": 0}
    answer = (ctx.input_responses or {}).get("q")
    if MODE == "one-time-token" and TOKENS.pop(ctx.request_state or "", None) is None:
        answer = None
    if MODE == "latest-flow-wins" and TOKENS.get(item) != ctx.request_state:
        answer = None
    if not isinstance(answer, ElicitResult):
        token = uuid.uuid4().hex
        TOKENS[item if MODE == "latest-flow-wins" else token] = token
        return ask(item, 1, token if MODE in ("one-time-token", "latest-flow-wins") else None)
    if MODE == "extra-round" and state["round"] < 2:
        return ask(item, 2)
    if answer.action == "accept" and (answer.content or {}).get("ok"):
        return final(f"approved {item}")
    return final(f"not approved {item}" if MODE == "wrong-text" else f"declined {item}")


def legacy_only(app):
    """Refuse server/discover with HTTP 400, as a server that predates protocol 2026-07-28 would."""
    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and (b"mcp-method", b"server/discover") in scope["headers"]:
            await send({"type": "http.response.start", "status": 400, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)
    return wrapped


if __name__ == "__main__":
    if MODE == "legacy-only":
        import uvicorn
        uvicorn.run(legacy_only(mcp.streamable_http_app(streamable_http_path="/mcp")), host="127.0.0.1",
                    port=int(os.environ["PORT"]), log_level="warning")
    else:
        mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
'''

# The same tool with the SDK's Resolve/Elicit resolvers (style A). It asks only a client that declared the
# elicitation capability, so it passes only because the stage's client declares it.
RESOLVE_SERVER = '''
import os
from typing import Annotated

from mcp.server.mcpserver import AcceptedElicitation, Elicit, ElicitationResult, MCPServer, Resolve
from pydantic import BaseModel

mcp = MCPServer("approver-resolve")


class Ok(BaseModel):
    ok: bool


def ask(item: str) -> Elicit[Ok]:
    return Elicit(f"Approve {item}?", Ok)


@mcp.tool()
def echo(text: str) -> str:
    return text


@mcp.tool()
def approve(item: str, answer: Annotated[ElicitationResult[Ok], Resolve(ask)]) -> str:
    return f"approved {item}" if isinstance(answer, AcceptedElicitation) and answer.data.ok else f"declined {item}"


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
'''


def _round_call(item: str, respond: dict, expect: str) -> dict:
    return {"tool": "approve", "args": {"item": item},
            "rounds": [{"requestContains": f"Approve {item}?", "requiredFields": ["ok"], "respond": respond}],
            "isError": False, "expect": {"type": "contains", "value": expect}}


CONTRACT = {
    "title": "input_required fixture",
    "runtime": "python",
    "entryCandidates": ["server.py"],
    "expectedTools": [{"name": "echo", "requiredProps": ["text"]}, {"name": "approve", "requiredProps": ["item"]}],
    "calls": [{"tool": "echo", "args": {"text": "hi"}, "expect": {"type": "contains", "value": "hi"}}],
    "inputRequiredCalls": [
        _round_call("invoice 7", {"action": "accept", "content": {"ok": True}}, "approved invoice 7"),
        _round_call("invoice 8", {"action": "decline"}, "declined invoice 8"),
        # invoice 7 again, declined this time, alongside call 0's flow for it, its answer sent twice (a retry)
        {**_round_call("invoice 7", {"action": "decline"}, "declined invoice 7"), "resendRound": 1,
         "interleaveWith": 0},
    ],
}
IDS = ["input-required:approve:1", "input-required:approve:2", "input-required:approve:3"]


def _grade(tmp_path: Path, mode: str, server: str = RAW_SERVER) -> TrialGrade:
    workspace = write_tree(tmp_path / "ws", {**REQS, "server.py": server, "mode": mode + "\n"})
    return grade_workspace_sync(TaskContract.model_validate(CONTRACT), workspace)


def _first_failure(grade: TrialGrade) -> tuple[str, str]:
    failing = [c for c in grade.checks if not c.passed]
    assert failing, "expected a failing check"
    first = failing[0]
    assert all(c.detail == f"blocked by {first.stage}" for c in failing[1:])
    return first.id, first.detail or ""


@pytest.mark.parametrize("server", [RAW_SERVER, RESOLVE_SERVER], ids=["raw-helpers", "resolve-elicit"])
def test_a_server_that_follows_the_script_passes(tmp_path: Path, server: str) -> None:
    grade = _grade(tmp_path, "good", server)
    assert grade.contract_pass, (grade.failure_code, grade.first_failure, grade.error)
    ids = [c.id for c in grade.checks]
    # after the calls stage, in contract order, one check per scripted call
    assert ids[-4:] == ["call:echo:1", *IDS]
    stage_checks = {c.id: c for c in grade.checks if c.stage == "input_required"}
    assert list(stage_checks) == IDS
    assert stage_checks[IDS[0]].detail == '1 round(s) answered (accept); final "approved invoice 7"'
    assert stage_checks[IDS[1]].detail == '1 round(s) answered (decline); final "declined invoice 8"'
    assert stage_checks[IDS[2]].detail == ('1 round(s) answered (decline); final "declined invoice 7"; round 1\'s '
                                           'answers re-sent: the same next step; alongside inputRequiredCalls[0]: '
                                           'final "approved invoice 7"')


# mode -> (the check that fails first, a regex its detail must match)
FAILURES = {
    "no-ask": (IDS[0], r'^approve\(\{"item":"invoice 7"\}\) round 1 of 1: expected an input_required result asking '
                       r'"Approve invoice 7\?", found the final result "approved invoice 7" \(isError false\)$'),
    "extra-round": (IDS[0], r'^approve\(\{"item":"invoice 7"\}\): expected the final result after 1 round\(s\), '
                            r'found an input_required result asking for round 2 '
                            r'\(elicitation/create "Approve invoice 7\?"\)$'),
    "wrong-text": (IDS[1], r'^approve\(\{"item":"invoice 8"\}\) after 1 round\(s\) -> "not approved invoice 8" did not '
                           r'match \{"type":"contains","value":"declined invoice 8"\}: does not contain '
                           r"'declined invoice 8'$"),
    "wrong-question": (IDS[0], r'round 1 of 1: the elicitation message "Delete invoice 7\?" does not contain '
                               r"'Approve invoice 7\?'$"),
    "wrong-field": (IDS[0], r"round 1 of 1: the requested schema has no field 'ok' \(has: reason\)$"),
    "optional-field": (IDS[0], r"round 1 of 1: the requested schema does not list 'ok' in required "
                               r"\(required: none\)$"),
    "legacy-only": (IDS[0], r"^expected the server to speak protocol 2026-07-28 \(server/discover\), which "
                            r"input_required results need; it negotiated 2025-11-25$"),
    "two-questions": (IDS[0], r"round 1 of 1: expected an input_required result carrying exactly one input request, "
                              r"found 2 \(q, q2\)$"),
    # each alone passes its lone flows; the retry finds the token gone, the earlier of two flows for one item is lost
    "one-time-token": (IDS[2], r'^approve\(\{"item":"invoice 7"\}\) \(round 1\'s answers re-sent\): expected the '
                               r"final result after 1 round\(s\), found an input_required result asking for round 2"),
    "latest-flow-wins": (IDS[2], r'^approve\(\{"item":"invoice 7"\}\): expected the final result after 1 round\(s\), '
                                 r"found an input_required result asking for round 2"),
}


@pytest.mark.parametrize("mode", sorted(FAILURES))
def test_a_server_off_script_fails_at_exactly_that_check(tmp_path: Path, mode: str) -> None:
    grade = _grade(tmp_path, mode)
    assert grade.failure_code == "contract.input_required", (grade.failure_code, grade.error)
    check_id, detail = _first_failure(grade)
    want_id, pattern = FAILURES[mode]
    assert check_id == want_id
    assert re.search(pattern, detail), detail
    # everything before the stage passed: the failure is the stage's own
    assert all(c.passed for c in grade.checks if c.stage != "input_required")


def test_check_ids_count_per_tool(tmp_path: Path) -> None:
    contract = TaskContract.model_validate({
        **CONTRACT,
        "expectedTools": [*CONTRACT["expectedTools"], {"name": "deploy"}],
        "inputRequiredCalls": [
            *CONTRACT["inputRequiredCalls"],
            {"tool": "deploy", "rounds": [{"respond": {"action": "cancel"}}]},
            _round_call("invoice 9", {"action": "accept", "content": {"ok": False}}, "declined invoice 9"),
        ],
    })
    grading = Grading(contract, tmp_path, runtime_for("python"))
    try:
        steps = [s for s in grading.plan() if s.stage == "input_required"]
    finally:
        shutil.rmtree(grading.scratch, ignore_errors=True)
    assert [s.id for s in steps] == [*IDS, "input-required:deploy:1", "input-required:approve:4"]


def test_the_stage_is_registered_so_a_task_declaring_it_is_graded() -> None:
    assert "input_required" in FEATURES
    assert unsupported_features(TaskContract.model_validate(CONTRACT)) == []


def test_answers_are_validated_when_the_contract_loads() -> None:
    assert InputAnswer.model_validate({"action": "accept", "content": {"ok": True, "n": 2}}).content == {"ok": True,
                                                                                                        "n": 2}
    with pytest.raises(ValidationError, match="carries no content"):
        InputAnswer.model_validate({"action": "decline", "content": {"ok": False}})
    with pytest.raises(ValidationError):
        InputAnswer.model_validate({"action": "approve"})
    with pytest.raises(ValidationError):  # nested objects are not form values
        InputAnswer.model_validate({"action": "accept", "content": {"ok": {"nested": True}}})
    with pytest.raises(ValidationError):
        InputRequiredCall.model_validate({"tool": "approve", "rounds": []})
    with pytest.raises(ValidationError):  # a typo fails loudly
        InputRequiredCall.model_validate({"tool": "approve", "rounds": [{"respond": {"action": "accept"}}],
                                          "expects": []})
    with pytest.raises(ValidationError, match="resendRound 2 names no round"):
        InputRequiredCall.model_validate({"tool": "approve", "rounds": [{"respond": {"action": "accept"}}],
                                          "resendRound": 2})
    for partner in (2, 3):  # itself; past the end
        calls = [*CONTRACT["inputRequiredCalls"][:2], {**CONTRACT["inputRequiredCalls"][2], "interleaveWith": partner}]
        with pytest.raises(ValidationError, match=rf"inputRequiredCalls\[2\]\.interleaveWith {partner} names no other"):
            TaskContract.model_validate({**CONTRACT, "inputRequiredCalls": calls})


# ---- the checked-in tasks that use the stage -----------------------------------------------------------------

TASKS_WITH_ROUNDS = [t for t in discover_tasks()[0] if t.kind == "build" and t.contract.input_required_calls]


def test_some_task_uses_the_stage() -> None:
    assert "py-v6-09-raw-input-required-approval" in {t.id for t in TASKS_WITH_ROUNDS}


@pytest.mark.parametrize("task", TASKS_WITH_ROUNDS, ids=lambda t: t.id)
def test_prompt_states_every_string_the_rounds_check(task: Task) -> None:
    """tests/test_task_suite.py covers `calls`; the scripted rounds follow the same rule: the earlier harness's
    v2-09 failed 59 of 61 trials on a 'decline' its prompt never pinned."""
    strings = []
    for call in task.contract.input_required_calls:
        strings += [r.request_contains for r in call.rounds if r.request_contains]
        strings += [str(e.value) for e in call.expect if e.type in ("contains", "not-contains")]
    missing = unstated(strings, task.prompt)
    assert not missing, f"{task.id}: prompt.md never states {missing}"


@pytest.mark.parametrize("task", TASKS_WITH_ROUNDS, ids=lambda t: t.id)
def test_scripted_tools_and_answer_fields_are_in_the_contract_and_prompt(task: Task) -> None:
    tools = {t.name for t in task.contract.expected_tools}
    for call in task.contract.input_required_calls:
        assert call.tool in tools, f"{call.tool} is not in expectedTools"
        for scripted in call.rounds:
            for field in scripted.respond.content or {}:
                assert f"`{field}`" in task.prompt, f"answer field {field} is not named in the prompt"
