"""The committability gate of a draft: verify-tasks on it plus the authoring rules, then it becomes a frozen task.

What is graded is a snapshot of the draft, and that snapshot is what lands in tasks/<id>/: a revision racing the
gate changes neither. On a refusal nothing is written and every reason is given at once (the load error, each
authoring rule broken, each solution not graded as declared). On success the task is moved into tasks/ (never over
an existing one), its promptHash locked by the lock's one writer (catalog.lock_new_tasks), its id added to the
suite named (tasks/suites.json), its proof remembered for the batch gate, and the draft removed: the id is frozen,
a change is a new id.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import anyio

from mcp_evals_pipeline.paths import cache_dir, tasks_dir
from mcp_evals_pipeline.serve.drafts import DraftError, existing_draft, frozen_reason, symlinks_in
from mcp_evals_pipeline.serve.models import GradedSolution, SubmitOutcome
from mcp_evals_pipeline.tasks.authoring_rules import authoring_problems
from mcp_evals_pipeline.tasks.catalog import Task, TaskLoadError, load_task, lock_new_tasks
from mcp_evals_pipeline.tasks.suites import add_task, load_suites, unknown_suite
from mcp_evals_pipeline.verify import proof_key, remember_proof, verify_tasks

GATE_WORKERS = 2  # solutions graded at once: the machine is shared with the user's own work
_landing = anyio.Lock()  # one submit lands at a time: the frozen check and the move are one step


def load_problems(root: Path) -> tuple[Task | None, list[str]]:
    """The draft loaded as the task it would become, or why it does not load."""
    try:
        task = load_task(root)
    except TaskLoadError as exc:
        where = exc.path.relative_to(root.parent) if exc.path.is_relative_to(root.parent) else exc.path
        field = f" (field {exc.field_path})" if exc.field_path else ""
        return None, [f"load: {where}{field}: {exc.message}"]
    if task.kind != "build":
        return None, ["load: serve drafts build tasks only"]
    return task, []


def static_problems(root: Path) -> list[str]:
    """What the gate refuses before grading anything: a frozen id, a draft that does not load, a broken rule."""
    frozen = frozen_reason(root.name)
    task, problems = load_problems(root)
    return ([frozen] if frozen else []) + problems + (authoring_problems(task) if task else [])


def suite_problems(suite: str) -> list[str]:
    """The suite the task joins must exist (a task in no suite has no trend line and fails the suites' test)."""
    suites = load_suites()
    return [] if suite in suites else [f"suite: {unknown_suite(suite, suites)}"]


async def submit(draft_id: str, suite: str) -> SubmitOutcome:
    source = existing_draft(draft_id)
    if frozen := frozen_reason(draft_id):
        return SubmitOutcome(submitted=False, task_id=draft_id, reasons=[frozen])
    with tempfile.TemporaryDirectory(prefix="submit-", dir=_scratch()) as scratch:
        snapshot = Path(scratch) / draft_id  # the catalog names a task by its directory
        shutil.copytree(source, snapshot, symlinks=True)
        # Checked on the snapshot, what is graded and landed: verify's copy of a solution would follow a link.
        if links := symlinks_in(snapshot):
            raise DraftError(f"draft {draft_id} holds symlinks ({', '.join(links)}), which a draft never does")
        task, reasons = load_problems(snapshot)
        if task is None:
            return SubmitOutcome(submitted=False, task_id=draft_id, reasons=reasons)
        reasons += suite_problems(suite) + authoring_problems(task)
        results = await verify_tasks([task], workers=GATE_WORKERS)
        graded = [GradedSolution(solution=r.solution.label, expected=r.expected, got=r.got, ok=r.ok, why=r.why)
                  for r in results]
        reasons += [f"{g.solution}: expected {g.expected}, got {g.got}" + (f": {g.why}" if g.why else "")
                    for g in graded if not g.ok]
        if reasons:
            return SubmitOutcome(submitted=False, task_id=draft_id, reasons=reasons, graded=graded)
        async with _landing:
            if frozen := frozen_reason(draft_id):
                return SubmitOutcome(submitted=False, task_id=draft_id, reasons=[frozen], graded=graded)
            target = _land(snapshot)
        landed = load_task(target)
        added, changed = lock_new_tasks([landed])
        assert added == [draft_id] and not changed, (added, changed)
        add_task(suite, draft_id)
        remember_proof(landed, proof_key(landed), results)  # the gate graded every solution of exactly these files
        shutil.rmtree(source, ignore_errors=True)
        return SubmitOutcome(submitted=True, task_id=draft_id, task_dir=str(target), prompt_hash=landed.prompt_hash,
                             graded=graded)


def _scratch() -> Path:
    parent = cache_dir() / "serve"
    parent.mkdir(parents=True, exist_ok=True)
    return parent


def _land(snapshot: Path) -> Path:
    """Copy the snapshot beside tasks/ and rename it into place: a reader never sees half a task, and the rename
    refuses a target that appeared meanwhile."""
    root = tasks_dir()
    staging = root / f".{snapshot.name}.submitting-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(snapshot, staging, symlinks=True)
    target = root / snapshot.name
    try:
        os.rename(staging, target)  # fails when target exists and is not empty
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise DraftError(f"{target} appeared while the draft was graded: {exc}") from None
    return target
