"""Every requirement a suite task's prompt states has a check and a negative that breaks only it.

The grader is judged by solutions it never sees: a requirement without a check scores an agent's bug there as a
pass. So each task of a suite (tasks/suites.json) lists its requirements; every check names the ids it tests; every
requirement has a check and a negative declaring `violates` (verify-tasks then proves the negative's first failing
check is one of that requirement). Gap kinds the contract's own shape implies must be probed by a named negative, so
coarse self-declared requirements cannot pass this test.

The rule (issue 24): a property the prompt states is checked at every exchange where it applies, and proven so:
every requirement named by more than one exchange (calls, reads, forms on several calls, invariants after several
calls, ...) has a negative that breaks it only at a later exchange, declaring that check as its `breaksAt`
(verify-tasks proves the negative first fails exactly there). A negative that breaks a property everywhere proves
only the first exchange; one that breaks it later proves the property is not checked once and forgotten.

The rules themselves live in mcp_evals_pipeline/tasks/authoring_rules.py: `mcp-evals serve`'s submit gate holds every
draft to the same ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.tasks.authoring_rules import (
    announcement,
    checked_requirements,
    coercion_probe_problem,
    exchanges_by_requirement,
    gap_kind_problems,
    implied_kinds,
    later_exchange_gaps,
    requirement_problems,
)
from mcp_evals_pipeline.tasks.catalog import Solution, Task, load_task
from mcp_evals_pipeline.tasks.suites import load_suites

from .conftest import TASKS

SUITE_TASKS = sorted({t for s in load_suites(TASKS).values() for t in s.tasks})
PRESENT = [t for t in SUITE_TASKS if (TASKS / t).is_dir()]
# Requirements, checks and negatives are a build task's; a usage task is proven by its sessions (test_usage.py).
BUILD = [t for t in PRESENT if load_task(TASKS / t).kind == "build"]


def _load(task_id: str) -> Task:
    return load_task(TASKS / task_id)


# Suite build tasks that do not satisfy the later-exchange rule yet (none now): known debt, named so the list can
# only shrink (a task on it that satisfies the rule fails the test until it is taken off; a task off it must satisfy
# it). A task leaves the list by negatives that break each property at a later exchange, or, where the contract
# checks a property once, by a new version that checks it wherever it applies (docs/task-authoring.md, "The rule,
# proven"). A new task never joins it.
LATER_EXCHANGE_DEBT: frozenset[str] = frozenset()


def test_every_suite_task_exists() -> None:
    missing = [t for t in SUITE_TASKS if not (TASKS / t).is_dir()]
    assert not missing, f"tasks/suites.json names tasks with no directory: {missing}"


def test_every_task_is_in_exactly_one_suite() -> None:
    on_disk = sorted(p.name for p in TASKS.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    assert sorted(SUITE_TASKS) == on_disk


@pytest.mark.parametrize("task_id", BUILD)
def test_every_requirement_has_a_check_and_a_negative(task_id: str) -> None:
    task = _load(task_id)
    problems = requirement_problems(task.contract, task.solutions)
    assert not problems, f"{task_id}: " + "; ".join(problems)


@pytest.mark.parametrize("task_id", BUILD)
def test_every_gap_kind_that_applies_has_a_named_negative(task_id: str) -> None:
    task = _load(task_id)
    problems = gap_kind_problems(task.contract, task.solutions)
    assert not problems, f"{task_id}: " + "; ".join(problems)


@pytest.mark.parametrize("task_id", BUILD)
def test_coercion_probes_pass_a_wrong_type(task_id: str) -> None:
    """A `coerced-argument` requirement is probed by a call that passes a typed argument with the wrong JSON type
    and must get an error result."""
    contract = _load(task_id).contract
    if not any(t != "string" for tool in contract.expected_tools for t in tool.prop_types.values()):
        pytest.skip("no typed non-string input")
    problem = coercion_probe_problem(contract)
    assert problem is None, f"{task_id}: {problem}"


@pytest.mark.parametrize("task_id", BUILD)
def test_every_property_is_broken_at_a_later_exchange(task_id: str) -> None:
    task = _load(task_id)
    gaps = later_exchange_gaps(task.contract, task.solutions)
    if task_id in LATER_EXCHANGE_DEBT:
        assert gaps, f"{task_id} satisfies the later-exchange rule now: take it off LATER_EXCHANGE_DEBT"
    else:
        assert not gaps, (f"{task_id}: no negative breaks these at a later exchange than their first (declare "
                          f"`breaksAt` on one that does): " + "; ".join(gaps))


def test_the_debt_list_names_only_suite_build_tasks() -> None:
    stale = sorted(LATER_EXCHANGE_DEBT - set(BUILD))
    assert not stale, f"LATER_EXCHANGE_DEBT names tasks that are no suite build task (retired?): {stale}"


def test_the_later_exchange_rule_catches_a_property_checked_once() -> None:
    """A requirement checked at two calls: no negative, or one breaking it at the first call, leaves a gap; one
    declaring the second call as `breaksAt` closes it. A requirement named once needs none."""
    contract = TaskContract.model_validate({
        "title": "t", "entryCandidates": ["server.py"],
        "requirements": [{"id": "sum", "text": "adds"}, {"id": "typed", "text": "integers"}],
        "expectedTools": [{"name": "add", "requirements": ["sum"],
                           "forms": [{"when": "ok", "requirements": ["typed"],
                                      "expect": [{"type": "json-type", "path": "result", "value": "integer"}]}]}],
        "calls": [{"tool": "add", "args": {"a": 1, "b": 2}, "requirements": ["sum"]},
                  {"tool": "add", "args": {"a": 2, "b": 2}, "requirements": ["sum"]},
                  {"tool": "add", "args": {"a": "x", "b": 2}, "isError": True}],
    })
    assert exchanges_by_requirement(contract) == {
        "sum": ["call:add:1", "call:add:2"], "typed": ["form:add:1:1", "form:add:2:1"]}  # not after the error call

    def negative(violates: str, breaks_at: str) -> Solution:
        return Solution("negative", "n", Path("."), "contract.calls", violates=violates, breaks_at=breaks_at)

    assert len(later_exchange_gaps(contract, [])) == 2
    assert len(later_exchange_gaps(contract, [negative("sum", "call:add:1"), negative("typed", "form:add:1:1")])) == 2
    assert later_exchange_gaps(contract, [negative("sum", "call:add:2"), negative("typed", "form:add:1:1")]) == [
        "typed (2 exchanges, first form:add:1:1)"]
    assert later_exchange_gaps(contract, [negative("sum", "call:add:2"), negative("typed", "form:add:2:1")]) == []


@pytest.mark.parametrize("task_id", PRESENT)
def test_prompt_does_not_announce_the_tests(task_id: str) -> None:
    found = announcement(_load(task_id).prompt)
    assert found is None, f"{task_id}/prompt.md announces what is tested: {found!r}"


def test_the_coverage_rules_catch_a_thin_contract() -> None:
    """The rules above fail a contract that states typed inputs and an upstream but probes neither."""
    contract = TaskContract.model_validate({
        "title": "t", "entryCandidates": ["server.py"], "requirements": [{"id": "sum", "text": "adds"}],
        "expectedTools": [{"name": "add", "propTypes": {"a": "integer"}, "requirements": ["sum"]}],
        "upstream": {"service": "orders"},
    })
    assert implied_kinds(contract) == {"coerced-argument", "relay-query"}
    assert checked_requirements(contract) == {"sum"}
