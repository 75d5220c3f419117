"""`mcp-evals regrade`: mark stored work again with today's marker, changing nothing else (seed 004: "mark them
again").

Each regraded trial becomes a new attempt of its slot: the agent's work (workspace snapshot, transcript, a usage
trial's world and call record, the condition brief) is copied unchanged from the attempt it marks again, the grade
is today's (GRADER_VERSION and contracts), the perf figures, model and every agent fact are the old attempt's, and
`regradedFrom` names that attempt. The old attempt stays under previous/attempt-<n>/ and in DuckDB, so
`mcp-evals compare BATCH@<old grader> BATCH@<new grader>` shows what the marker change alone moved.

What is not marked again, and why (each is reported): a trial whose agent phase never finished (an infra failure
before marking: there is no work to mark), an imported trial without a workspace snapshot, a task whose prompt
changed since (a changed prompt is a new task: its contract does not describe that work), a task that is gone, and
a trial already marked by today's grader (unless --force).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.records import TrialRecord
from mcp_evals_pipeline.file_copy import copy_tree
from mcp_evals_pipeline.kinds import kind_of
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.tasks.catalog import TaskLoadError, get_task
from mcp_evals_pipeline.trial_dir import (
    MEMO_FILE,
    PREVIOUS_DIR,
    RESERVE_FILE,
    SERVER_LOG,
    TRIAL_FILE,
    UNINDEXED_MARKER,
    WORLD_FILE,
    TrialDir,
)
from mcp_evals_pipeline.trials import _index, _write_memo
from mcp_evals_pipeline.versions import GRADER_VERSION

# Invalid for a reason found while marking: the agent's work is complete and can be marked again.
MARKING_INFRA = frozenset({Infra.GRADER, Infra.INSTALL, Infra.UPSTREAM, Infra.OAUTH, Infra.INJECTION_UNSEEN})
# What marking (and the judge) wrote: everything else of an attempt is the agent's and is carried over.
MARKING_OUTPUTS = frozenset({TRIAL_FILE, MEMO_FILE, SERVER_LOG, UNINDEXED_MARKER, RESERVE_FILE, PREVIOUS_DIR})


@dataclass(frozen=True)
class Regraded:
    key: str
    before: TrialRecord | None
    after: TrialRecord | None = None
    skipped: str | None = None  # why it was not marked again
    left_out: list[str] = field(default_factory=list)  # special files of the work, not copied: "<path> (<kind>)"


def why_not(record: TrialRecord, trial_dir: TrialDir, *, force: bool) -> str | None:
    """Why this attempt cannot (or need not) be marked again; None when it can."""
    if not record.valid and record.invalid_reason not in MARKING_INFRA:
        return f"its agent phase never finished ({record.invalid_reason}): no work to mark"
    if record.grader_version == GRADER_VERSION and not force:
        return f"already marked by grader {GRADER_VERSION}"
    try:
        task = get_task(record.task)
    except TaskLoadError as exc:
        return f"the task cannot be loaded: {exc}"
    if record.prompt_hash and task.prompt_hash != record.prompt_hash:
        return (f"the task's prompt changed since ({record.prompt_hash} -> {task.prompt_hash}): a new task, whose "
                "contract does not describe this work")
    if task.kind == "build" and not trial_dir.workspace.is_dir():
        return "no workspace snapshot (an imported trial)"
    if task.kind == "usage" and not (trial_dir.path / WORLD_FILE).is_file():
        return f"no {WORLD_FILE}: the world's record is what a usage trial is marked on"
    return None


def regrade_trial(trial_dir: TrialDir, store: TrialStore, *, force: bool = False) -> Regraded:
    """Mark the slot's current attempt again. The new attempt is built whole in a staging directory beside the
    run's trials (the agent's work copied, marked, its record and memo written) and only then swapped in: whatever
    fails before the swap (a special file, a full disk, a crash) leaves the old attempt current, untouched."""
    record = trial_dir.current_record()
    if record is None:
        return Regraded(trial_dir.key, None, skipped="no readable trial.json")
    reason = why_not(record, trial_dir, force=force)
    if reason:
        return Regraded(trial_dir.key, record, skipped=reason)
    task = get_task(record.task)
    # Not under trials/: a staged trial.json must never be read as a slot's record (trials/*/trial.json).
    staging = Path(tempfile.mkdtemp(prefix=f".regrade-{trial_dir.key}-", dir=trial_dir.path.parent.parent))
    try:
        staged = TrialDir(staging / trial_dir.key)
        # The agent's work, unchanged (the archive keeps the original); FIFOs, sockets, devices are never opened.
        left_out = copy_tree(trial_dir.path, staged.path, leave=MARKING_OUTPUTS)
        grade = kind_of(task.kind).mark(task, staged.workspace, staged.path)
        if grade.server_output:
            staged.server_log.write_text(grade.server_output)
        attempt = max([record.attempt, *trial_dir.earlier_attempts()]) + 1
        after = record.model_copy(update={
            "attempt": attempt, "grader_version": GRADER_VERSION, "regraded_from": record.attempt,
            "grade": grade.model_copy(update={"server_output": None}),
            "valid": grade.valid, "invalid_reason": None if grade.valid else grade.failure_code,
            "error": (record.error if record.valid else None) if grade.valid else grade.error,
            "retryable": None if grade.valid else not grade.permanent,
            "sdk_version": grade.sdk_version or record.sdk_version,
            "sdk_package": grade.sdk_package or record.sdk_package,
        })
        _write_memo(after, staged, skip=True)  # the judge never moves a number; a regrade asks it nothing
        staged.trial_file.write_text(after.model_dump_json(indent=2))
        after = _swap_in(trial_dir, staged, after)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _index(store, after, trial_dir)
    return Regraded(trial_dir.key, record, after, left_out=left_out)


def _swap_in(trial_dir: TrialDir, staged: TrialDir, after: TrialRecord) -> TrialRecord:
    """The old attempt to previous/, the staged one in its place (renames on one filesystem; trial.json last: its
    presence means the attempt is complete). Returns the record as written."""
    archived_as = trial_dir.archive_current()
    if archived_as != after.attempt:  # another attempt landed meanwhile: number this one after it, never over it
        after = after.model_copy(update={"attempt": archived_as})
        staged.trial_file.write_text(after.model_dump_json(indent=2))
    for item in sorted(staged.path.iterdir(), key=lambda p: p.name == TRIAL_FILE):
        os.replace(item, trial_dir.path / item.name)
    return after


def regrade_run(run_dir: Path, store: TrialStore, *, tasks: Iterable[str] = (), force: bool = False) -> list[Regraded]:
    """Mark every current trial of a run again (or those of `tasks`)."""
    wanted = set(tasks)
    results = []
    for path in sorted(p.parent for p in run_dir.glob(f"trials/*/{TRIAL_FILE}")):
        trial_dir = TrialDir(path)
        if wanted:
            record = trial_dir.current_record()
            if record is None or record.task not in wanted:
                continue
        results.append(regrade_trial(trial_dir, store, force=force))
    return results
