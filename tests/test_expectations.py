"""Expectation semantics (docs/task-authoring.md), on real mcp result objects."""

from __future__ import annotations

import mcp_types as types
import pytest

from mcp_evals_pipeline.contracts.task import Expectation
from mcp_evals_pipeline.grader.expectations import describe, expectation_failure, text_content, tool_result_text


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
        # text-equals (grader 2.6.0): the whole text, trimmed, exactly ("the sum and nothing else")
        (exp(type="text-equals", value="42"), " 42\n", None, True),
        (exp(type="text-equals", value="42"), '{"sum": 42}', None, False),  # holds the value, is not the value
        (exp(type="text-equals", value="42"), "the sum is 42", None, False),
        (exp(type="text-equals", value="Done"), "done", None, False),  # case-sensitive unless told otherwise
        (exp(type="text-equals", value="Done", caseSensitive=False), "done", None, True),
        # one-of: exactly one of the values, JSON types included
        (exp(type="one-of", value=["open", "claimed"], path="status"), '{"status": "claimed"}', None, True),
        (exp(type="one-of", value=["open", "claimed"], path="status"), '{"status": "Open"}', None, False),
        (exp(type="one-of", value=[1, 2], path="n"), '{"n": "1"}', None, False),
        # `*`: at every item
        (exp(type="json-type", value="integer", path="tickets.*.id"), '{"tickets": [{"id": 1}, {"id": 2}]}', None,
         True),
        (exp(type="json-type", value="integer", path="tickets.*.id"), '{"tickets": [{"id": 1}, {"id": "2"}]}', None,
         False),  # only a later item breaks it
        (exp(type="equals", value="open", path="tickets.*.status"), '{"tickets": [{"status": "open"}, {}]}', None,
         False),  # an item without the key
        (exp(type="equals", value="open", path="tickets.*.status"), '{"tickets": []}', None, True),
        (exp(type="equals", value="open", path="tickets.*.status"), '{"count": 0}', None, False),  # no array at all
        (exp(type="equals", value=1, path="*.n"), '{"a": {"n": 1}, "b": {"n": 2}}', None, False),  # object values
        # sorted: by a key, ties allowed; unorderable or missing keys fail
        (exp(type="sorted", path="tickets", key="id"), '{"tickets": [{"id": 1}, {"id": 3}, {"id": 3}]}', None, True),
        (exp(type="sorted", path="tickets", key="id"), '{"tickets": [{"id": 1}, {"id": 4}, {"id": 2}]}', None, False),
        (exp(type="sorted", path="tickets", key="id", order="descending"), '{"tickets": [{"id": 4}, {"id": 2}]}',
         None, True),
        (exp(type="sorted", path="tickets", key="id"), '{"tickets": [{"id": 1}, {"id": "2"}]}', None, False),
        (exp(type="sorted", path="tickets", key="id"), '{"tickets": [{"id": 1}, {"title": "x"}]}', None, False),
        (exp(type="sorted", path="names"), '{"names": ["a", "b", "c"]}', None, True),
        (exp(type="sorted", path="names"), '{"names": "abc"}', None, False),
        # length-equals: a number, or the JSON integer another path states
        (exp(type="length-equals", path="tickets", valuePath="count"), '{"count": 2, "tickets": [1, 2]}', None, True),
        (exp(type="length-equals", path="tickets", valuePath="count"), '{"count": 3, "tickets": [1, 2]}', None, False),
        (exp(type="length-equals", path="tickets", valuePath="count"), '{"count": "2", "tickets": [1, 2]}', None,
         False),
        (exp(type="length-equals", path="tickets", value=0), '{"tickets": []}', None, True),
        (exp(type="length-equals", path="tickets", value=1), '{"tickets": []}', None, False),
    ],
)
def test_expectation(expectation: Expectation, text: str, structured: object, holds: bool) -> None:
    assert (expectation_failure(expectation, text, structured) is None) is holds


STRUCTURED_ID = exp(type="json-type", value="integer", path="id", **{"in": "structured", "ifPresent": True})
TEXT_SUM = exp(type="text-equals", value="5", **{"in": "text", "ifPresent": True})


@pytest.mark.parametrize(
    ("expectation", "texts", "structured", "holds"),
    [
        (STRUCTURED_ID, ['{"id": 1}'], None, True),  # absent structured content: nothing to hold to the rule
        (STRUCTURED_ID, ['{"id": 1}'], {"id": 1}, True),
        (STRUCTURED_ID, ['{"id": 1}'], {"ticket": {"id": 1}}, False),  # present with another shape: gap 1
        (STRUCTURED_ID, ['{"id": 1}'], {"id": "1"}, False),  # the text is right, the structured content is not
        (exp(type="json-type", value="integer", path="id", **{"in": "structured"}), ['{"id": 1}'], None, False),
        (TEXT_SUM, [], {"result": 5}, True),  # no text content
        (TEXT_SUM, ["5"], {"result": 5}, True),
        (TEXT_SUM, ['{"result": 5}'], {"result": 5}, False),  # text present, not exactly the sum
        (exp(type="text-equals", value="5", **{"in": "text"}), [], {"result": 5}, False),
        (exp(type="equals", value=5, path="result", **{"in": "text"}), ['{"result": 5}'], {"result": 6}, True),
        (exp(type="equals", value=5, path="result", **{"in": "text"}), ['{"result": 6}'], {"result": 5}, False),
        # parts-agree: "if both, they hold the same object"
        (exp(type="parts-agree"), ['{"id": 1, "status": "open"}'], {"status": "open", "id": 1}, True),
        (exp(type="parts-agree"), ['{"id": 1}'], None, True),  # one part only
        (exp(type="parts-agree"), [], {"id": 1}, True),
        (exp(type="parts-agree"), ['{"id": 2}'], {"id": 1}, False),
        (exp(type="parts-agree"), ['{"id": true}'], {"id": 1}, False),  # == would take true for 1
        (exp(type="parts-agree"), ["Created ticket 1"], {"id": 1}, False),
    ],
)
def test_expectation_on_one_part_of_a_result(expectation: Expectation, texts: list[str], structured: object,
                                             holds: bool) -> None:
    result = types.CallToolResult(content=[types.TextContent(type="text", text=t) for t in texts],
                                  structured_content=structured)
    why = expectation_failure(expectation, tool_result_text(result), structured, text_part=text_content(result))
    assert (why is None) is holds, why


@pytest.mark.parametrize("bad", [
    {"type": "equals", "path": "a"},  # no value
    {"type": "sorted", "path": "a", "value": 1},
    {"type": "sorted", "key": "id"},  # no path
    {"type": "length-equals", "path": "a"},
    {"type": "length-equals", "path": "a", "value": 1, "valuePath": "n"},
    {"type": "length-equals", "path": "a", "value": -1},
    {"type": "text-equals", "value": "x", "path": "a"},
    {"type": "one-of", "path": "a", "value": "open"},
    {"type": "contains", "value": "x", "ifPresent": True},  # ifPresent needs `in`
    {"type": "contains", "value": "x", "key": "id"},
    {"type": "parts-agree", "path": "id"},
])
def test_malformed_expectations_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        Expectation.model_validate(bad)


def test_failure_messages_say_what_was_found() -> None:
    assert expectation_failure(exp(type="number-equals", value=2, path="count"), '{"count": 3}') == (
        "expected the number 2 at path 'count', found 3"
    )
    assert expectation_failure(exp(type="contains", value="decline"), "not approved") == "does not contain 'decline'"
    assert expectation_failure(exp(type="sorted", path="tickets", key="id"), '{"tickets": [{"id": 2}, {"id": 1}]}') \
        == "not in ascending order by 'id' at path 'tickets': 1 comes after 2 (item 1)"
    assert expectation_failure(exp(type="length-equals", path="t", valuePath="n"), '{"n": 3, "t": [1]}') == (
        "expected 3 items at path 't' (the 'n' it states), found 1")
    assert expectation_failure(STRUCTURED_ID, "", {"id": "1"}) == (
        "expected a JSON integer at path 'id', found string in the structured content")


def test_a_check_describes_its_expectation_as_written() -> None:
    assert describe(exp(type="equals", path="owner", value=None)) == '{"type":"equals","path":"owner","value":null}'
    assert describe(exp(type="sorted", path="t", key="id", **{"in": "structured"})) == (
        '{"type":"sorted","path":"t","in":"structured","key":"id"}')


def test_result_text_prefers_text_content_then_structured() -> None:
    with_text = types.CallToolResult(content=[types.TextContent(type="text", text="a"),
                                              types.TextContent(type="text", text="b")])
    assert tool_result_text(with_text) == "a\nb"
    structured_only = types.CallToolResult(content=[], structured_content={"count": 1})
    assert tool_result_text(structured_only) == '{"count": 1}'
