"""verify-tasks --repeat N: the solutions that must pass, graded N times, and every one whose outcome changed.

A golden that passes on one run and fails on the next moves a trend without any agent changing: found here, by
grading each golden and alternate (a usage task's oracle and other passing sessions) N times, it is named before a
batch relies on it. An outcome is the verdict and, when it fails, the first failing check: a solution failing at
another check on another run is flaky too. Every run is a fresh grading (verify-tasks never reads the proofs
`eval`'s gate keeps); a task with a flaky solution is never remembered as proven.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from mcp_evals_pipeline.tasks.catalog import Solution, Task
from mcp_evals_pipeline.verify import VerifyResult


def must_pass(tasks: list[Task]) -> list[Task]:
    """The tasks with only their solutions that must pass (golden, alternates; a usage task's passing sessions)."""
    return [dataclasses.replace(task, solutions=tuple(s for s in task.solutions if s.expected_failure_code is None))
            for task in tasks]


def repeated(tasks: list[Task], times: int) -> list[Task]:
    """`must_pass(tasks)`, each solution listed `times` times (one grading each)."""
    return [dataclasses.replace(task, solutions=task.solutions * times) for task in must_pass(tasks)]


def outcome(result: VerifyResult) -> str:
    """What must not change between runs: the verdict, and the first failing check when it fails."""
    first = result.grade.first_failure
    return result.got if result.grade.contract_pass or first is None else f"{result.got} at {first.id}"


@dataclass(frozen=True)
class Flaky:
    task_id: str
    solution: Solution
    outcomes: tuple[str, ...]  # run by run, the first run first

    def as_dict(self) -> dict[str, object]:
        return {"task": self.task_id, "kind": self.solution.kind, "solution": self.solution.name,
                "outcomes": list(self.outcomes)}

    def __str__(self) -> str:
        return (f"{self.task_id} {self.solution.kind}:{self.solution.name} changed between runs: "
                + ", ".join(self.outcomes))


def find_flaky(results: Iterable[VerifyResult]) -> list[Flaky]:
    """Every solution (task, kind, name) whose outcomes over `results` (runs in order) are not all the same."""
    runs: dict[tuple[str, str, str], list[VerifyResult]] = {}
    for result in results:
        runs.setdefault((result.task_id, result.solution.kind, result.solution.name), []).append(result)
    return [Flaky(mine[0].task_id, mine[0].solution, tuple(outcome(r) for r in mine))
            for mine in runs.values() if len({outcome(r) for r in mine}) > 1]
