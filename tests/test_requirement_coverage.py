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
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader.functional import planned_checks
from mcp_evals_pipeline.tasks.catalog import Solution, Task, load_task
from mcp_evals_pipeline.tasks.suites import load_suites

from .conftest import TASKS

SUITE_TASKS = sorted({t for s in load_suites(TASKS).values() for t in s.tasks})
PRESENT = [t for t in SUITE_TASKS if (TASKS / t).is_dir()]
# Requirements, checks and negatives are a build task's; a usage task is proven by its sessions (test_usage.py).
BUILD = [t for t in PRESENT if load_task(TASKS / t).kind == "build"]
# Sentences by which a prompt would announce what the grader does: the prompt states the contract, not the test.
ANNOUNCING = re.compile(r"exact exchanges|the grader (?:performs|will call|calls|sends)|these (?:exact )?calls",
                        re.IGNORECASE)


def _load(task_id: str) -> Task:
    return load_task(TASKS / task_id)


def checked_requirements(contract: TaskContract) -> set[str]:
    ids = {rid for _, named in contract.requirement_refs() for rid in named}
    return ids | {r.id for r in contract.requirements if r.checked_by}


def implied_kinds(contract: TaskContract) -> set[str]:
    """The gap kinds a contract of this shape must probe."""
    kinds: set[str] = set()
    if any(t != "string" for tool in contract.expected_tools for t in tool.prop_types.values()):
        kinds.add("coerced-argument")
    expectations = [e for c in contract.calls for e in c.expect]
    expectations += [e for c in contract.input_required_calls for e in c.expect]
    expectations += [e for r in (*contract.resource_reads, *contract.post_call_resource_reads) for e in r.expect]
    expectations += [e for c in contract.calls for r in (*c.reads_before, *c.reads_after) for e in r.expect]
    expectations += [e for t in contract.expected_tools for f in t.forms for e in f.expect]
    expectations += [e for inv in contract.invariants for e in inv.expect]
    if any(e.case_sensitive for e in expectations):
        kinds.add("case-pinned")
    if any(e.path and ((e.type in ("number-equals", "equals") and not isinstance(e.value, str))
                       or (e.type == "json-type" and e.value in ("integer", "number"))) for e in expectations):
        kinds.add("numeric-string")
    if contract.input_required_calls:
        kinds.add("requested-field-type")
        answers = [r.respond for c in contract.input_required_calls for r in c.rounds]
        if any(a.action != "accept" or False in (a.content or {}).values() for a in answers):
            kinds.add("negative-confirmation")
    if contract.upstream is not None:
        kinds.add("relay-query")
    if contract.oauth is not None:
        kinds.add("other-user")
    return kinds


# Suite build tasks that do not satisfy the later-exchange rule yet (none now): known debt, named so the list can
# only shrink (a task on it that satisfies the rule fails the test until it is taken off; a task off it must satisfy
# it). A task leaves the list by negatives that break each property at a later exchange, or, where the contract
# checks a property once, by a new version that checks it wherever it applies (docs/task-authoring.md, "The rule,
# proven"). A new task never joins it.
LATER_EXCHANGE_DEBT: frozenset[str] = frozenset()


def exchanges_by_requirement(contract: TaskContract) -> dict[str, list[str]]:
    """requirement id -> the ids of the exchanges (checks of an element naming it: a call, a form on one call, an
    invariant after one call, a read, ...) in the order a grading makes them. Whole-stage checks (`checkedBy`, the
    tools listing) are not exchanges: they run once."""
    named: dict[str, list[str]] = {}
    for step in planned_checks(contract):
        for rid in step.requirements:
            named.setdefault(rid, []).append(step.id)
    return named


def later_exchange_gaps(contract: TaskContract, solutions: tuple[Solution, ...] | list[Solution]) -> list[str]:
    """The requirements named by more than one exchange that no negative breaks at a later one (its `breaksAt`
    one of those exchanges but the first)."""
    negatives = [s for s in solutions if s.kind == "negative"]
    gaps = []
    for rid, exchanges in exchanges_by_requirement(contract).items():
        if len(exchanges) < 2:
            continue
        later = set(exchanges[1:])
        if not any(s.violates == rid and s.breaks_at in later for s in negatives):
            gaps.append(f"{rid} ({len(exchanges)} exchanges, first {exchanges[0]})")
    return gaps


def test_every_suite_task_exists() -> None:
    missing = [t for t in SUITE_TASKS if not (TASKS / t).is_dir()]
    assert not missing, f"tasks/suites.json names tasks with no directory: {missing}"


def test_every_task_is_in_exactly_one_suite() -> None:
    on_disk = sorted(p.name for p in TASKS.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    assert sorted(SUITE_TASKS) == on_disk


@pytest.mark.parametrize("task_id", BUILD)
def test_every_requirement_has_a_check_and_a_negative(task_id: str) -> None:
    task = _load(task_id)
    contract = task.contract
    assert contract.requirements, f"{task_id}: task.json lists no requirements"
    checked = checked_requirements(contract)
    negatives = [s for s in task.solutions if s.kind == "negative"]
    violated = {s.violates for s in negatives}
    problems = [f"{r.id}: no check names it" for r in contract.requirements if r.id not in checked]
    problems += [f"{r.id}: no negative violates it" for r in contract.requirements if r.id not in violated]
    problems += [f"negative {s.name} declares no `violates`" for s in negatives if s.violates is None]
    assert not problems, f"{task_id}: " + "; ".join(problems)


@pytest.mark.parametrize("task_id", BUILD)
def test_every_gap_kind_that_applies_has_a_named_negative(task_id: str) -> None:
    task = _load(task_id)
    contract = task.contract
    by_id = {r.id: r for r in contract.requirements}
    negatives = [s for s in task.solutions if s.kind == "negative"]
    problems = []
    for kind in sorted(implied_kinds(contract) | {k for r in contract.requirements for k in r.kinds}):
        owners = [r.id for r in contract.requirements if kind in r.kinds]
        if not owners:
            problems.append(f"the contract's shape implies {kind!r}, but no requirement has that kind")
            continue
        named = [s for s in negatives if s.gap_kind == kind and s.violates in owners]
        if not named:
            problems.append(f"no negative with gapKind {kind!r} violates one of {owners}")
    problems += [f"negative {s.name}: gapKind {s.gap_kind!r} but {s.violates!r} does not have that kind"
                 for s in negatives if s.gap_kind and s.violates in by_id and s.gap_kind not in by_id[s.violates].kinds]
    assert not problems, f"{task_id}: " + "; ".join(problems)


@pytest.mark.parametrize("task_id", BUILD)
def test_coercion_probes_pass_a_wrong_type(task_id: str) -> None:
    """A `coerced-argument` requirement is probed by a call that passes a typed argument with the wrong JSON type
    and must get an error result."""
    contract = _load(task_id).contract
    typed = {(t.name, p): want for t in contract.expected_tools for p, want in t.prop_types.items() if want != "string"}
    if not typed:
        pytest.skip("no typed non-string input")
    probes = [c for c in contract.calls if c.is_error and any(
        (c.tool, p) in typed and isinstance(v, str) for p, v in c.args.items())]
    assert probes, f"{task_id}: no call passes a string for a typed argument ({sorted(typed)}) expecting isError"


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
    found = ANNOUNCING.search(_load(task_id).prompt)
    assert found is None, f"{task_id}/prompt.md announces what is tested: {found.group()!r}"


def test_the_coverage_rules_catch_a_thin_contract() -> None:
    """The rules above fail a contract that states typed inputs and an upstream but probes neither."""
    contract = TaskContract.model_validate({
        "title": "t", "entryCandidates": ["server.py"], "requirements": [{"id": "sum", "text": "adds"}],
        "expectedTools": [{"name": "add", "propTypes": {"a": "integer"}, "requirements": ["sum"]}],
        "upstream": {"service": "orders"},
    })
    assert implied_kinds(contract) == {"coerced-argument", "relay-query"}
    assert checked_requirements(contract) == {"sum"}
