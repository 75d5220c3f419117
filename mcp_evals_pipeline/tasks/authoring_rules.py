"""The authoring rules a build task must keep, beyond its solutions grading as declared (docs/task-authoring.md).

One place for them: tests/test_requirement_coverage.py holds every suite task to them, and `mcp-evals serve`'s
submit gate holds every draft to them before it becomes a task.

- Every requirement has a check that names it and a negative declaring `violates` it; every negative says what it
  violates.
- The gap kinds a contract's shape implies (typed inputs, numbers at a path, an upstream, OAuth, ...) are each
  probed by a negative naming that `gapKind`; a typed argument is probed with a wrong JSON type expecting an error.
- A requirement named by more than one exchange has a negative breaking it at a later one (its `breaksAt`).
- The prompt states the contract, never the test: no sentence announcing what the grader calls or sends.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.tasks.catalog import Solution, Task

# Sentences by which a prompt would announce what the grader does: the prompt states the contract, not the test.
ANNOUNCING = re.compile(r"exact exchanges|the grader (?:performs|will call|calls|sends)|these (?:exact )?calls",
                        re.IGNORECASE)


def announcement(prompt: str) -> str | None:
    """The words by which a prompt announces its test, or None."""
    found = ANNOUNCING.search(prompt)
    return found.group() if found else None


def checked_requirements(contract: TaskContract) -> set[str]:
    ids = {rid for _, named in contract.requirement_refs() for rid in named}
    return ids | {r.id for r in contract.requirements if r.checked_by}


def requirement_problems(contract: TaskContract, solutions: Iterable[Solution]) -> list[str]:
    """Requirements no check names or no negative violates, and negatives that declare no `violates`."""
    negatives = [s for s in solutions if s.kind == "negative"]
    if not contract.requirements:
        return ["task.json lists no requirements"]
    checked = checked_requirements(contract)
    violated = {s.violates for s in negatives}
    problems = [f"{r.id}: no check names it" for r in contract.requirements if r.id not in checked]
    problems += [f"{r.id}: no negative violates it" for r in contract.requirements if r.id not in violated]
    problems += [f"negative {s.name} declares no `violates`" for s in negatives if s.violates is None]
    return problems


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


def gap_kind_problems(contract: TaskContract, solutions: Iterable[Solution]) -> list[str]:
    """Each gap kind that applies (implied by the contract's shape or declared on a requirement) needs a negative
    naming it that violates a requirement of that kind."""
    by_id = {r.id: r for r in contract.requirements}
    negatives = [s for s in solutions if s.kind == "negative"]
    problems = []
    for kind in sorted(implied_kinds(contract) | {k for r in contract.requirements for k in r.kinds}):
        owners = [r.id for r in contract.requirements if kind in r.kinds]
        if not owners:
            problems.append(f"the contract's shape implies {kind!r}, but no requirement has that kind")
            continue
        if not any(s.gap_kind == kind and s.violates in owners for s in negatives):
            problems.append(f"no negative with gapKind {kind!r} violates one of {owners}")
    problems += [f"negative {s.name}: gapKind {s.gap_kind!r} but {s.violates!r} does not have that kind"
                 for s in negatives if s.gap_kind and s.violates in by_id and s.gap_kind not in by_id[s.violates].kinds]
    return problems


def coercion_probe_problem(contract: TaskContract) -> str | None:
    """A typed non-string argument needs a call passing a string for it and expecting an error result."""
    typed = {(t.name, p): want for t in contract.expected_tools for p, want in t.prop_types.items() if want != "string"}
    if not typed:
        return None
    probes = [c for c in contract.calls if c.is_error and any(
        (c.tool, p) in typed and isinstance(v, str) for p, v in c.args.items())]
    return None if probes else f"no call passes a string for a typed argument ({sorted(typed)}) expecting isError"


def exchanges_by_requirement(contract: TaskContract) -> dict[str, list[str]]:
    """requirement id -> the ids of the exchanges (checks of an element naming it: a call, a form on one call, an
    invariant after one call, a read, ...) in the order a grading makes them. Whole-stage checks (`checkedBy`, the
    tools listing) are not exchanges: they run once."""
    from mcp_evals_pipeline.grader.functional import planned_checks  # lazily: the grader pulls in the MCP client

    named: dict[str, list[str]] = {}
    for step in planned_checks(contract):
        for rid in step.requirements:
            named.setdefault(rid, []).append(step.id)
    return named


def later_exchange_gaps(contract: TaskContract, solutions: Iterable[Solution]) -> list[str]:
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


def authoring_problems(task: Task) -> list[str]:
    """Every authoring rule a build task breaks, each a sentence naming what to add or change (empty: it keeps
    them all)."""
    contract = task.contract
    assert isinstance(contract, TaskContract), "the authoring rules are a build task's"
    problems = [f"requirements: {p}" for p in requirement_problems(contract, task.solutions)]
    problems += [f"gap kinds: {p}" for p in gap_kind_problems(contract, task.solutions)]
    if coercion := coercion_probe_problem(contract):
        problems.append(f"calls: {coercion}")
    problems += [f"later exchange: no negative breaks {gap} at a later exchange than its first (declare `breaksAt` "
                 f"on one that does)" for gap in later_exchange_gaps(contract, task.solutions)]
    if said := announcement(task.prompt):
        problems.append(f"prompt.md announces what is tested: {said!r} (state the contract, never the test)")
    return problems
