"""verify-tasks: every golden and alternate must pass, every negative must fail at its declared failureCode.

Each solution is copied into a fresh workspace and graded by exactly the grader that trials use. This gates any
agent spend: a red trial means something only when the task's own solutions grade as declared.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio

from mcp_evals_pipeline.contracts.failures import ContractCode, Infra, UsageCode
from mcp_evals_pipeline.contracts.grade import STAGES, TrialGrade
from mcp_evals_pipeline.kinds import kind_of
from mcp_evals_pipeline.paths import cache_dir
from mcp_evals_pipeline.tasks.catalog import Solution, Task

# What a negative may declare: the code of a stage of the ladder; a usage session: a usage.* code, or the usage
# marker's one verdict that is neither pass nor fail (an injection case whose planted text never reached the model).
# Any other `infra.*` code says nothing could be judged, which a known-bad solution must never be counted on; any
# other code (a typo) is one the marker never gives.
DECLARABLE_CODES: frozenset[str] = frozenset({*ContractCode, *UsageCode, Infra.INJECTION_UNSEEN})
_CONTRACT_CODES: frozenset[str] = frozenset(ContractCode)
_USAGE_SOLUTIONS = ("oracle", "session")


def declaration_error(solution: Solution) -> str | None:
    """Why a solution's declared failureCode cannot be verified, or None when it can."""
    code = solution.expected_failure_code
    usage = solution.kind in _USAGE_SOLUTIONS
    if code is None or (code in DECLARABLE_CODES and (code in _CONTRACT_CODES) != usage):
        return None
    return (f"{solution.kind}:{solution.name} declares failureCode {code!r}, which is not a code the marker gives: "
            + (f"a usage session declares one of {', '.join(sorted(UsageCode))} or {Infra.INJECTION_UNSEEN}"
               if usage else f"a negative must declare contract.<stage>, stage one of {', '.join(STAGES)}"))


@dataclass(frozen=True)
class VerifyResult:
    task_id: str
    solution: Solution
    grade: TrialGrade
    seconds: float

    @property
    def declaration_error(self) -> str | None:
        return declaration_error(self.solution)

    @property
    def ok(self) -> bool:
        if self.declaration_error is not None:
            return False  # refused whatever the grade says: an infra grade must never count as a negative's fail
        if self.solution.expected_failure_code is None:
            return self.grade.contract_pass
        return self.grade.failure_code == self.solution.expected_failure_code and self.requirement_error is None

    @property
    def requirement_error(self) -> str | None:
        """A negative that names the requirement it violates must fail at a check of that requirement: failing
        somewhere else means the contract does not test what the negative was written to break."""
        wanted = self.solution.violates
        first = self.grade.first_failure
        if wanted is None or first is None or wanted in first.requirements:
            return None
        named = ", ".join(first.requirements) or "no requirement"
        return f"violates {wanted!r} but first failed at {first.id}, which checks {named}"

    @property
    def expected(self) -> str:
        return self.solution.expected_failure_code or "pass"

    @property
    def got(self) -> str:
        return "pass" if self.grade.contract_pass else str(self.grade.failure_code)

    @property
    def why(self) -> str | None:
        """The refused declaration, the infra error or the first failing check: what a reader needs to see when
        `ok` is False."""
        if self.declaration_error is not None:
            return self.declaration_error
        if self.grade.error:
            return self.grade.error.splitlines()[0]
        if self.grade.failure_code == self.solution.expected_failure_code and self.requirement_error:
            return self.requirement_error
        first = self.grade.first_failure
        return f"{first.id}: {first.detail}" if first else None

    def as_dict(self) -> dict[str, object]:
        return {
            "task": self.task_id,
            "kind": self.solution.kind,
            "solution": self.solution.name,
            "expected": self.expected,
            "got": self.got,
            "ok": self.ok,
            "seconds": round(self.seconds, 2),
            "why": self.why,
            "grade": self.grade.model_dump(mode="json"),
        }


def quick_selection(tasks: list[Task]) -> list[Task]:
    """Every golden and alternate, and per runtime one negative for each failure code the suite declares (the
    first in task order): that the grader still passes legitimate work and still fails each stage, in a fraction of
    the time of every solution (which `verify-tasks` without --quick grades). A usage task's sessions are all kept
    (about a second each: a fresh world and server)."""
    seen: set[tuple[str, str | None]] = set()
    picked = []
    for task in tasks:
        keep = []
        for solution in task.solutions:
            key = (task.contract.effective_runtime, solution.expected_failure_code)
            if solution.kind != "negative" or key not in seen:
                seen.add(key)
                keep.append(solution)
        picked.append(dataclasses.replace(task, solutions=tuple(keep)))
    return picked


async def verify_tasks(
    tasks: list[Task], *, workers: int = 3, on_result: Callable[[VerifyResult], None] | None = None
) -> list[VerifyResult]:
    """Grade every solution of every task, `workers` at a time; results in task/solution order."""
    jobs = [(task, solution) for task in tasks for solution in task.solutions]
    results: list[VerifyResult | None] = [None] * len(jobs)
    limiter = anyio.CapacityLimiter(max(1, workers))
    parent = cache_dir() / "verify"
    parent.mkdir(parents=True, exist_ok=True)

    async def one(index: int, task: Task, solution: Solution) -> None:
        async with limiter:
            started = time.perf_counter()
            grade = await kind_of(task.kind).verify(task, solution, parent)
            result = VerifyResult(task.id, solution, grade, time.perf_counter() - started)
            results[index] = result
            if on_result is not None:
                on_result(result)

    async with anyio.create_task_group() as group:
        for index, (task, solution) in enumerate(jobs):
            group.start_soon(one, index, task, solution)
    return [r for r in results if r is not None]
