"""`mcp-evals merge-shards DIR...`: a batch split into per-task CI jobs is still one batch. Each shard is what one job
uploaded (its results directory, or a `publish`ed copy: any folder holding runs/<runId>/run.json); their trials are
joined into one run under the results directory (trial.json per trial, the memos, run.json), indexed, and given
its scorecard like any batch.

A shard is malformed when it holds no readable run.json, a run other than the batch's (another batch, agent or
model), or a trial another shard holds with a different result; a shard is missing when an expected task (named
with --expect-task, or every task of --suite) has no trial in any shard. Both are reported by name; the healthy
shards are merged all the same, and the exit code says the batch is incomplete. A shard whose run.json parses but
holds what no run of ours would (record_checks.py: a number DuckDB cannot hold, a task id that is a path, an
oversized file) is not a broken upload but a forged or corrupt one: the whole merge stops before anything is
written (RecordError, naming the file and the field)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from mcp_evals_pipeline.contracts.records import TrialRecord
from mcp_evals_pipeline.legacy_import import find_run_dirs
from mcp_evals_pipeline.record_checks import RecordError, check_run, check_text_file
from mcp_evals_pipeline.runs import RUN_FILE, load_run_file, write_run_file
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.trial_dir import MEMO_FILE, TRIAL_FILE, run_file


@dataclass
class MergeSummary:
    run_id: str | None = None
    trials: int = 0
    shards: list[str] = field(default_factory=list)  # merged
    malformed: list[str] = field(default_factory=list)  # "<shard>: why"
    missing: list[str] = field(default_factory=list)  # expected tasks no shard ran

    @property
    def complete(self) -> bool:
        return not self.malformed and not self.missing


def _same_result(a: TrialRecord, b: TrialRecord) -> bool:
    return a.model_dump(exclude={"memo_path", "transcript_path"}) == b.model_dump(
        exclude={"memo_path", "transcript_path"})


def merge_shards(shards: list[Path], runs_root: Path, store: TrialStore,
                 expected_tasks: list[str] | None = None) -> MergeSummary:
    summary = MergeSummary()
    found: dict[str, tuple[TrialRecord, Path, str]] = {}  # trial key -> record, its run dir, its shard
    refused: list[RecordError] = []
    for shard in shards:
        run_dirs = find_run_dirs(shard) if shard.is_dir() else []
        if not run_dirs:
            summary.malformed.append(f"{shard}: no run.json (not a results directory of a shard)")
            continue
        problems, mine = [], []
        for run_dir in run_dirs:
            try:
                run = check_run(load_run_file(run_dir / RUN_FILE), run_dir / RUN_FILE)
                for trial in run.trials:
                    if (memo := run_file(run_dir, trial.memo_path)) is not None:
                        check_text_file(memo, run_dir)
            except RecordError as exc:
                refused.append(exc)
                continue
            except (OSError, ValueError) as exc:
                problems.append(f"{run_dir / RUN_FILE}: {' '.join(str(exc).split())[:300]}")
                continue
            summary.run_id = summary.run_id or run.run_id
            if run.run_id != summary.run_id:
                problems.append(f"holds run {run.run_id}, not the batch's run {summary.run_id}")
                continue
            mine += [(t, run_dir) for t in run.trials]
        for trial, run_dir in mine:
            held = found.get(trial.trial_name)
            if held is None:
                found[trial.trial_name] = (trial, run_dir, str(shard))
            elif not _same_result(held[0], trial):
                problems.append(f"{trial.trial_name} differs from the one in {held[2]}")
        if problems:
            summary.malformed.append(f"{shard}: " + "; ".join(problems))
        if mine:
            summary.shards.append(str(shard))
    if refused:  # before any trial directory, row or run.json is written
        more = f" (and {len(refused) - 1} more run.json refused)" if len(refused) > 1 else ""
        raise RecordError(refused[0].source, refused[0].field, refused[0].message + more)
    ran = {t.task for t, _, _ in found.values()}
    summary.missing = [task for task in expected_tasks or [] if task not in ran]
    if summary.run_id is None or not found:
        return summary
    target = runs_root / summary.run_id
    records = []
    for key, (trial, run_dir, _) in sorted(found.items()):
        trial_dir = target / "trials" / key
        trial_dir.mkdir(parents=True, exist_ok=True)
        memo = run_file(run_dir, trial.memo_path)  # inside the shard's run, or not copied at all
        if memo is not None and memo != (trial_dir / MEMO_FILE).resolve():
            shutil.copyfile(memo, trial_dir / MEMO_FILE)
        has_memo = (trial_dir / MEMO_FILE).is_file()
        record = trial.model_copy(update={"memo_path": f"trials/{key}/{MEMO_FILE}" if has_memo else None,
                                          "transcript_path": None})  # transcripts stay with their shard
        (trial_dir / TRIAL_FILE).write_text(record.model_dump_json(indent=2))
        records.append(record)
    store.record_trials(records)  # the rows say what the files say
    write_run_file(target, store)
    summary.trials = len(found)
    return summary
