"""Expectation semantics (docs/task-authoring.md), on real mcp result objects."""

from __future__ import annotations

import mcp_types as types
import pytest

from mcp_evals_pipeline.contracts.task import Expectation
from mcp_evals_pipeline.grader.expectations import expectation_failure, tool_result_text


def exp(**kw) -> Expectation:
    return Expectation.model_validate(kw)


@pytest.mark.parametrize(
    ("expectation", "text", "structured", "holds"),
    [
        (exp(type="contains", value="Record R-1"), "record r-1 read", None, True),
        (exp(type="contains", value="Record R-1", caseSensitive=True), "record r-1 read", None, False),
        (exp(type="not-contains", value="Fix login bug"), "2 tickets: FIX LOGIN BUG", None, False),
        (exp(type="not-contains", value="Fix login bug"), "1 ticket: docs", None, True),
        (exp(type="number-equals", value=42), "42", None, True),
        (exp(type="number-equals", value=42), "41", {"result": 42}, True),
        (exp(type="number-equals", value=3), "sum is 3.0", None, True),
        (exp(type="number-equals", value=2, path="count"), '{"count": 2, "tickets": [{"id": 1}]}', None, True),
        (exp(type="number-equals", value=1, path="count"), '{"count": 2, "tickets": [{"id": 1}]}', None, False),
        (exp(type="number-equals", value=7, path="tickets.0.id"), "not json", {"tickets": [{"id": 7}]}, True),
        (exp(type="number-equals", value=2, path="count"), "count: 2", None, False),  # a path needs JSON
        (exp(type="number-equals", value=1, path="ok"), '{"ok": true}', None, False),  # booleans are not numbers
        (exp(type="number-equals", value=5), "no digits here", None, False),
        # exact JSON types (grader 2.0.0): a numeric string read from JSON is not a number
        (exp(type="number-equals", value=2, path="count"), '{"count": "2"}', None, False),
        (exp(type="number-equals", value=42), "41", {"result": "42"}, False),
        (exp(type="number-equals", value=42), '"42"', None, False),
        (exp(type="number-equals", value=2), '{"id": "T-1", "count": 2}', None, True),  # not the "-1" of "T-1"
        (exp(type="number-equals", value=1), '{"id": "1"}', None, False),
        (exp(type="equals", value="open", path="status"), '{"status": "open"}', None, True),
        (exp(type="equals", value="open", path="status"), '{"status": "Open"}', None, False),
        (exp(type="equals", value=2, path="n"), '{"n": "2"}', None, False),
        (exp(type="equals", value=True, path="ok"), '{"ok": 1}', None, False),
        (exp(type="equals", value=[1, 2], path="$"), "[1, 2]", None, True),
        (exp(type="json-type", value="integer", path="id"), '{"id": 3}', None, True),
        (exp(type="json-type", value="integer", path="id"), '{"id": "3"}', None, False),
        (exp(type="json-type", value="number", path="x"), '{"x": 3}', None, True),
        (exp(type="json-type", value="string", path="x"), '{"y": "3"}', None, False),  # no value at the path
        (exp(type="contains", value="Fix", path="items.0.title"), '{"items": [{"title": "Fix it"}]}', None, True),
        (exp(type="contains", value="Fix", path="items.1.title"), '{"items": [{"title": "Fix it"}, {"title": "x"}]}',
         None, False),
        (exp(type="not-contains", value="closed", path="items"), '{"items": ["open"], "note": "closed"}', None, True),
    ],
)
def test_expectation(expectation: Expectation, text: str, structured: object, holds: bool) -> None:
    assert (expectation_failure(expectation, text, structured) is None) is holds


def test_failure_messages_say_what_was_found() -> None:
    assert expectation_failure(exp(type="number-equals", value=2, path="count"), '{"count": 3}') == (
        "expected the number 2 at path 'count', found 3"
    )
    assert expectation_failure(exp(type="contains", value="decline"), "not approved") == "does not contain 'decline'"


def test_result_text_prefers_text_content_then_structured() -> None:
    with_text = types.CallToolResult(content=[types.TextContent(type="text", text="a"),
                                              types.TextContent(type="text", text="b")])
    assert tool_result_text(with_text) == "a\nb"
    structured_only = types.CallToolResult(content=[], structured_content={"count": 1})
    assert tool_result_text(structured_only) == '{"count": 1}'
