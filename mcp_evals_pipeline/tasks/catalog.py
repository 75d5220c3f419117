"""Finding, validating and hashing tasks (`tasks/<id>/`).

A task directory holds `prompt.md`, `task.json`, `golden/`, optional `starter/`, optional `alternates/<name>/`
(further legitimate solutions that must pass) and `negatives/<name>/` (known-bad solutions, each with a
`negative.json` declaring the failureCode it must get). One broken task never hides the others: discovery returns
the tasks that loaded and a precise error for each that did not.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import ValidationError

from mcp_evals_pipeline.contracts.task import ContractModel, TaskContract
from mcp_evals_pipeline.contracts.task_base import GapKind
from mcp_evals_pipeline.contracts.usage import UsageContract, UsageSession
from mcp_evals_pipeline.did_you_mean import suggestion
from mcp_evals_pipeline.ids import check_id
from mcp_evals_pipeline.paths import prompt_hash_lock, tasks_dir

if TYPE_CHECKING:  # suites.py reads the catalog's ids: imported only for the type
    from mcp_evals_pipeline.tasks.suites import Suite

NEGATIVE_DECLARATION = "negative.json"
# A solution written blind (from prompt.md and starter/ alone, issue 24's blind round) keeps its author's note here.
BLIND_NOTE = "BLIND.json"
ORACLE_SESSION = "oracle"  # a usage task's sessions/oracle.json: the job done right


class NegativeDeclaration(ContractModel):
    failure_code: str
    why: str
    # The one requirement (task.json `requirements`) this negative breaks: its first failing check must name it.
    violates: str | None = None
    # The kind of gap it commits (contracts/task_base.GapKind), when it is one the coverage test looks for.
    gap_kind: GapKind | None = None
    # The id of the check it must first fail at (e.g. "call:list_tickets:4"): where it breaks, so a negative written
    # to break a property at a later exchange proves that exchange is checked (tests/test_requirement_coverage.py).
    breaks_at: str | None = None
    # Written in a blind round (its directory holds BLIND.json): said here too so a reader of negative.json sees it.
    blind: bool = False


class TaskLoadError(Exception):
    """A task that cannot be used, naming the file and the field."""

    def __init__(self, path: Path, message: str, field_path: str | None = None):
        self.path = path
        self.field_path = field_path
        self.message = message
        where = f"{path}" + (f": field {field_path!r}" if field_path else "")
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Solution:
    """What verify-tasks marks: a build task's golden, alternate or negative directory, or a usage task's recorded
    session (the oracle, or a known-bad one)."""

    kind: str  # "golden" | "alternate" | "negative" | "oracle" | "session"
    name: str
    path: Path
    expected_failure_code: str | None  # None: must pass
    why: str | None = None
    violates: str | None = None  # negatives: the requirement it breaks
    gap_kind: str | None = None
    breaks_at: str | None = None  # negatives: the check id it must first fail at
    blind: bool = False  # written from the prompt alone (BLIND.json): full verify-tasks grades it, --quick skips it

    @property
    def label(self) -> str:
        """How verify-tasks names it: `negative:blind-x (blind)`."""
        return f"{self.kind}:{self.name}" + (" (blind)" if self.blind else "")


@dataclass(frozen=True)
class Task:
    id: str
    dir: Path
    prompt: str
    contract: TaskContract | UsageContract
    prompt_hash: str
    solutions: tuple[Solution, ...] = field(default_factory=tuple)

    @property
    def starter_dir(self) -> Path | None:
        starter = self.dir / "starter"
        return starter if starter.is_dir() else None

    @property
    def kind(self) -> str:
        return self.contract.kind

    @property
    def golden(self) -> Solution:
        return self.solutions[0]


def compute_prompt_hash(prompt_bytes: bytes, contract_bytes: bytes) -> str:
    """Short sha256 over prompt.md + task.json: a changed prompt or contract is a different task."""
    digest = hashlib.sha256()
    digest.update(prompt_bytes)
    digest.update(b"\0")
    digest.update(contract_bytes)
    return digest.hexdigest()[:12]


def _format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def parse_contract(path: Path) -> TaskContract | UsageContract:
    """Validate one task.json (its `kind` picks the contract); errors name the file and the first offending
    field."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise TaskLoadError(path, "file is missing") from exc
    except json.JSONDecodeError as exc:
        raise TaskLoadError(path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    try:
        if isinstance(raw, dict) and raw.get("kind") == "usage":
            return UsageContract.model_validate(raw)
        return TaskContract.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        others = len(exc.errors()) - 1
        message = first["msg"] + (f" (and {others} more error{'s' if others > 1 else ''})" if others else "")
        raise TaskLoadError(path, message, _format_loc(first["loc"])) from exc


def _load_solutions(task_dir: Path) -> tuple[Solution, ...]:
    golden = task_dir / "golden"
    if not golden.is_dir():
        raise TaskLoadError(golden, "every task needs a known-good golden/ solution")
    solutions = [Solution("golden", "golden", golden, None)]
    alternates = task_dir / "alternates"
    if alternates.is_dir():
        solutions += [Solution("alternate", p.name, p, None, blind=(p / BLIND_NOTE).is_file())
                      for p in sorted(alternates.iterdir()) if p.is_dir()]
    negatives = task_dir / "negatives"
    if negatives.is_dir():
        for neg in sorted(p for p in negatives.iterdir() if p.is_dir()):
            decl_path = neg / NEGATIVE_DECLARATION
            try:
                decl = NegativeDeclaration.model_validate_json(decl_path.read_text(encoding="utf-8"))
            except FileNotFoundError as exc:
                raise TaskLoadError(decl_path, "a negative must declare its failureCode") from exc
            except ValidationError as exc:
                first = exc.errors()[0]
                raise TaskLoadError(decl_path, first["msg"], _format_loc(first["loc"])) from exc
            if not decl.failure_code.startswith("contract."):
                raise TaskLoadError(decl_path, "must be a contract.<stage> code", "failureCode")
            if decl.blind != (neg / BLIND_NOTE).is_file():
                raise TaskLoadError(decl_path, f"\"blind\": true and a {BLIND_NOTE} beside it go together", "blind")
            solutions.append(Solution("negative", neg.name, neg, decl.failure_code, decl.why, decl.violates,
                                      decl.gap_kind, decl.breaks_at, decl.blind))
    return tuple(solutions)


def _load_usage_sessions(task_dir: Path, from_qa: bool = False) -> tuple[Solution, ...]:
    """A usage task's recorded sessions as the solutions verify-tasks marks: the oracle first (must pass), then
    each known-bad one at its declared outcome (usage.miss / usage.unsafe)."""
    paths = sorted((task_dir / "sessions").glob("*.json"))
    sessions = []
    for path in paths:
        try:
            session = UsageSession.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise TaskLoadError(path, first["msg"], _format_loc(first["loc"])) from exc
        code = session.expected_code
        sessions.append(Solution("oracle" if path.stem == ORACLE_SESSION else "session", path.stem, path, code,
                                 session.why, blind=session.blind))
    oracle = [s for s in sessions if s.kind == "oracle"]
    if not oracle:
        # An import from a QA file (usage/qa_pairs.py) cannot write one: the file names no tool calls.
        hint = (" — this case was imported from a QA pair, which names no tool calls: record the calls that answer "
                "its question and a reply giving the answer, and its bad sessions") if from_qa else ""
        raise TaskLoadError(task_dir / "sessions",
                            f"a usage task needs {ORACLE_SESSION}.json (the job done right){hint}")
    if oracle[0].expected_failure_code is not None:
        raise TaskLoadError(oracle[0].path, "the oracle session's outcome must be pass", "outcome")
    return tuple(oracle + [s for s in sessions if s.kind != "oracle"])


def _check_breaks_at(contract: TaskContract, solutions: tuple[Solution, ...]) -> None:
    """A `breaksAt` must name a check the contract makes, of the stage the negative's failureCode names."""
    from mcp_evals_pipeline.grader.functional import planned_checks  # lazily: the grader pulls in the MCP client

    stages = {step.id: step.stage for step in planned_checks(contract)}
    for sol in solutions:
        if sol.breaks_at is None:
            continue
        where = sol.path / NEGATIVE_DECLARATION
        if sol.breaks_at not in stages:
            near = difflib.get_close_matches(sol.breaks_at, list(stages), n=1, cutoff=0.0)
            raise TaskLoadError(where, f"breaksAt {sol.breaks_at!r} names no check of the contract"
                                       + (f"; the closest is {near[0]!r}" if near else ""), "breaksAt")
        if f"contract.{stages[sol.breaks_at]}" != sol.expected_failure_code:
            raise TaskLoadError(where, f"breaksAt {sol.breaks_at!r} is a check of stage {stages[sol.breaks_at]}, "
                                       f"but failureCode is {sol.expected_failure_code}", "breaksAt")


def load_task(task_dir: Path) -> Task:
    prompt_path = task_dir / "prompt.md"
    contract_path = task_dir / "task.json"
    try:
        prompt_bytes = prompt_path.read_bytes()
    except FileNotFoundError as exc:
        raise TaskLoadError(prompt_path, "file is missing") from exc
    contract = parse_contract(contract_path)
    if isinstance(contract, UsageContract):
        solutions = _load_usage_sessions(task_dir, from_qa=contract.qa is not None)
        known: set[str] = set()
    else:
        solutions = _load_solutions(task_dir)
        known = {r.id for r in contract.requirements}
    for sol in solutions:
        if sol.violates is not None and sol.violates not in known:
            raise TaskLoadError(sol.path / NEGATIVE_DECLARATION,
                                f"violates {sol.violates!r}, which is not a requirement of {contract_path}", "violates")
    if isinstance(contract, TaskContract) and any(sol.breaks_at for sol in solutions):
        _check_breaks_at(contract, solutions)
    if contract.id is not None and contract.id != task_dir.name:
        raise TaskLoadError(contract_path, f"id {contract.id!r} differs from the directory name", "id")
    if "--" in task_dir.name or any(ch in task_dir.name for ch in "|[],"):
        raise TaskLoadError(task_dir, "task ids may not contain '--', '|', '[', ']' or ','")
    return Task(
        id=task_dir.name,
        dir=task_dir,
        prompt=prompt_bytes.decode("utf-8"),
        contract=contract,
        prompt_hash=compute_prompt_hash(prompt_bytes, contract_path.read_bytes()),
        solutions=solutions,
    )


def discover_tasks(root: Path | None = None) -> tuple[list[Task], list[TaskLoadError]]:
    """Every task under root, plus one error per directory that failed to load."""
    root = root or tasks_dir()
    tasks: list[Task] = []
    errors: list[TaskLoadError] = []
    for task_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        try:
            tasks.append(load_task(task_dir))
        except TaskLoadError as exc:
            errors.append(exc)
    return tasks, errors


class UnknownTask(TaskLoadError):
    """A task id naming no task: bad usage (exit 2), not a broken task."""


def get_task(task_id: str, root: Path | None = None) -> Task:
    root = root or tasks_dir()
    try:
        check_id(task_id, "task id")  # `../../x` is no task, whatever directory it names
    except ValueError as exc:
        raise UnknownTask(root, str(exc)) from None
    task_dir = root / task_id
    if not task_dir.is_dir():
        known = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
        raise UnknownTask(task_dir, f"no such task{suggestion(task_id, known)} "
                                    f"({len(known)} tasks under {root}: `mcp-evals list-tasks`)")
    return load_task(task_dir)


def read_lock(path: Path | None = None) -> dict[str, str]:
    path = path or prompt_hash_lock()
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def lock_new_tasks(tasks: list[Task], path: Path | None = None) -> tuple[list[str], list[str]]:
    """Add the hashes of tasks not yet locked. Never rewrites an entry: returns (added, changed-in-place)."""
    path = path or prompt_hash_lock()
    lock = read_lock(path)
    added = [t.id for t in tasks if t.id not in lock]
    changed = [t.id for t in tasks if t.id in lock and lock[t.id] != t.prompt_hash]
    for task in tasks:
        lock.setdefault(task.id, task.prompt_hash)
    path.write_text(json.dumps(dict(sorted(lock.items())), indent=2) + "\n", encoding="utf-8")
    return added, changed


Tier = Literal["pr", "full"]


def in_tier(task: Task, tier: Tier, suites: Mapping[str, Suite] | None = None) -> bool:
    """Whether a task runs in `tier`: `full` is every task, `pr` the fast subset a pull request (and `make run`)
    runs: the usage cases marked pr in their task.json and the build tasks their suite lists under `pr`."""
    if tier == "full":
        return True
    if getattr(task.contract, "kind", None) == "usage":
        return getattr(task.contract, "tier", None) == "pr"
    from mcp_evals_pipeline.tasks.suites import load_suites  # suites.py reads the catalog's ids

    # `suites`: tasks/suites.json read once by a caller asking about many tasks
    return any(task.id in suite.pr for suite in (load_suites() if suites is None else suites).values())
