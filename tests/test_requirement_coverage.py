"""Every requirement a suite task's prompt states has a check and a negative that breaks only it.

The grader is judged by solutions it never sees: a requirement without a check scores an agent's bug there as a
pass. So each task of a suite (tasks/suites.json) lists its requirements; every check names the ids it tests; every
requirement has a check and a negative declaring `violates` (verify-tasks then proves the negative's first failing
check is one of that requirement). Gap kinds the contract's own shape implies must be probed by a named negative, so
coarse self-declared requirements cannot pass this test.
"""

from __future__ import annotations

import re

import pytest

from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.tasks.catalog import Task, load_task
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
    if any(e.case_sensitive for e in expectations):
        kinds.add("case-pinned")
    if any(e.path and e.type in ("number-equals", "equals") and not isinstance(e.value, str) for e in expectations):
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
