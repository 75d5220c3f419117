"""verify-tasks: every golden and alternate must pass, every negative must fail at its declared failureCode.

Each solution is copied into a fresh workspace and graded by exactly the grader that trials use. This gates any
agent spend: a red trial means something only when the task's own solutions grade as declared.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio

from mcp_evals_pipeline.contracts.failures import ContractCode, Infra, UsageCode
from mcp_evals_pipeline.contracts.grade import STAGES, TrialGrade
from mcp_evals_pipeline.kinds import kind_of
from mcp_evals_pipeline.paths import REPO_ROOT, cache_dir
from mcp_evals_pipeline.tasks.catalog import Solution, Task
from mcp_evals_pipeline.versions import GRADER_VERSION

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
        return (self.grade.failure_code == self.solution.expected_failure_code and self.requirement_error is None
                and self.breaks_at_error is None)

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
    def breaks_at_error(self) -> str | None:
        """A negative that declares where it breaks (`breaksAt`) must first fail at exactly that check: failing
        earlier means the later exchange it was written for is never reached, failing later that it is not
        checked there."""
        wanted = self.solution.breaks_at
        first = self.grade.first_failure
        if wanted is None or first is None or first.id == wanted:
            return None
        return f"breaks at {wanted} but first failed at {first.id}: {first.detail}"

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
        if self.grade.failure_code == self.solution.expected_failure_code and self.breaks_at_error:
            return self.breaks_at_error
        first = self.grade.first_failure
        return f"{first.id}: {first.detail}" if first else None

    def as_dict(self) -> dict[str, object]:
        return {
            "task": self.task_id,
            "kind": self.solution.kind,
            "solution": self.solution.name,
            "blind": self.solution.blind,
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
    (about a second each: a fresh world and server) but its blind ones. Blind solutions and sessions (the authoring
    blind round) are left to the full run: they add no stage the task's own solutions miss, and CI's time is
    spent."""
    seen: set[tuple[str, str | None]] = set()
    picked = []
    for task in tasks:
        keep = []
        for solution in task.solutions:
            if solution.blind:
                continue
            key = (task.contract.effective_runtime, solution.expected_failure_code)
            if solution.kind != "negative" or key not in seen:
                seen.add(key)
                keep.append(solution)
        picked.append(dataclasses.replace(task, solutions=tuple(keep)))
    return picked


def replay_selection(tasks: list[Task]) -> list[Task]:
    """What a batch of recorded sessions rests on: each build task's golden (its recorded passes are the golden's
    work) and each usage case's oracle and the sessions replay plays (never the blind round's). The gate of an agent
    that spends nothing: a broken grader still stops it, in a minute instead of the whole proof's many."""
    return [dataclasses.replace(task, solutions=tuple(
        s for s in task.solutions if s.kind in ("golden", "oracle") or (s.kind == "session" and not s.blind)))
        for task in tasks]


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


# ---- proofs that still hold: the gate before a batch re-proves only what changed ---------------------------------
#
# A task proven (every solution graded as declared) stays proven while nothing that decides its grades changed:
# its files (contract, prompt, solutions, sessions), GRADER_VERSION, the harness's code (the package, the servers
# under evaluation, the suites file: a marker edited without a version bump still invalidates), the Node toolchain
# pins and the Python, and the day (what the registries resolve a declared range to can change overnight, and
# with it the SDK a solution is graded against). Only a passing proof is kept; a failing one is proven again.

PROOFS_DIR = "verify-proofs"
_CODE_ROOTS = ("mcp_evals_pipeline", "servers")


def _digest(paths: list[Path], root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def _harness_fingerprint() -> str:
    from mcp_evals_pipeline.node_toolchain import toolchain_key

    files = [p for root in _CODE_ROOTS for p in (REPO_ROOT / root).rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    suites = REPO_ROOT / "tasks" / "suites.json"
    files += [suites] if suites.is_file() else []
    return hashlib.sha256(f"{_digest(files, REPO_ROOT)}|{toolchain_key()}|{sys.version}|{platform.machine()}"
                          .encode()).hexdigest()


def _grading_settings() -> str:
    """The environment that changes how grading runs (the boxes, the sandbox image): a proof under one box is not
    a proof under another."""
    names = ("MCP_EVALS_GRADER_BOX", "MCP_EVALS_UNSAFE_UNBOXED_GRADING", "MCP_EVALS_DOCKER_IMAGE",
             "MCP_EVALS_TSC_WORKERS", "MCP_EVALS_SANDBOX_EGRESS_ALLOW")
    return json.dumps({name: os.environ.get(name) for name in names}, sort_keys=True)


def proof_key(task: Task, today: dt.date | None = None) -> str:
    """What a task's proof depends on, hashed (shown to the user: a changed key explains a re-proof)."""
    files = [p for p in task.dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    day = (today or dt.datetime.now(dt.UTC).date()).isoformat()
    material = (f"{task.id}|{_digest(files, task.dir)}|grader {GRADER_VERSION}|{_harness_fingerprint()}|"
                f"{_grading_settings()}|{day}")
    return hashlib.sha256(material.encode()).hexdigest()[:16]


PROOF_DAYS = 3  # a task's proofs older than this are deleted when it is proven again (the key holds the day)


def _proof_file(task: Task, key: str) -> Path:
    """One file per task and key: two copies of a task (another tasks dir, a test's copy) or two checkouts' code
    never overwrite each other's proof, so neither proves again for the other's sake."""
    return cache_dir() / PROOFS_DIR / task.id / f"{key}.json"


# What a proof graded: every solution (`full`: verify-tasks, a live agent's gate) or what recorded sessions rest on
# (`replay`: replay_selection, the gate of an agent that spends nothing). A full proof also holds where a replay one
# is asked for, never the reverse. Proofs written before scopes existed were full.
ProofScope = Literal["full", "replay"]


def still_proven(task: Task, key: str, scope: ProofScope = "full") -> bool:
    try:
        proof = json.loads(_proof_file(task, key).read_text())
    except (OSError, ValueError):
        return False
    held = proof.get("scope", "full")
    return proof.get("key") == key and proof.get("ok") is True and (held == "full" or scope == "replay")


def remember_proof(task: Task, key: str, results: list[VerifyResult], scope: ProofScope = "full") -> None:
    """Keep a passing proof (every solution of the task graded as declared); forget a failing one. A passing replay
    proof never replaces a full one of the same key."""
    path = _proof_file(task, key)
    if not results or not all(r.ok for r in results):
        path.unlink(missing_ok=True)
        return
    if scope == "replay" and still_proven(task, key, "full"):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    stale = time.time() - PROOF_DAYS * 86400
    for old in path.parent.glob("*.json"):
        with contextlib.suppress(OSError):
            if old.stat().st_mtime < stale:
                old.unlink()
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"key": key, "ok": True, "scope": scope, "grader": GRADER_VERSION,
                               "solutions": len(results),
                               "proven": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}))
    tmp.replace(path)


@dataclass(frozen=True)
class Gate:
    results: list[VerifyResult]  # of the tasks proven now
    reused: dict[str, str]  # task id -> the key its proof still holds for

    @property
    def failed(self) -> list[VerifyResult]:
        return [r for r in self.results if not r.ok]


def _gate_todo(tasks: list[Task], scope: ProofScope = "full") -> tuple[list[Task], dict[str, str], dict[str, str]]:
    """What a gate of this scope grades (the tasks whose proof no longer holds, cut to replay_selection for a replay
    gate), the proofs it reuses (task id -> key) and every task's key as of now (a proof is kept under the key of
    the files it graded): known before anything is graded, so progress has its total."""
    keys = {task.id: proof_key(task) for task in tasks}
    reused = {t.id: keys[t.id] for t in tasks if still_proven(t, keys[t.id], scope)}
    todo = [t for t in tasks if t.id not in reused]
    return (replay_selection(todo) if scope == "replay" else todo), reused, keys


async def verify_gate(tasks: list[Task], *, workers: int = 3, scope: ProofScope = "full",
                      on_start: Callable[[list[Task]], None] | None = None,
                      on_result: Callable[[VerifyResult], None] | None = None) -> Gate:
    """verify-tasks for the tasks whose proof (of this scope, or a full one) no longer holds; the others' proofs
    are reused. `on_start` hears what will be graded before anything is."""
    todo, reused, keys = _gate_todo(tasks, scope)
    if on_start is not None:
        on_start(todo)
    results = await verify_tasks(todo, workers=workers, on_result=on_result) if todo else []
    for task in todo:
        remember_proof(task, keys[task.id], [r for r in results if r.task_id == task.id], scope)
    return Gate(results, reused)
