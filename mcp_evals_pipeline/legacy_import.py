"""Import the earlier harness's run directories, so old trend lines continue in our store.

A legacy run directory holds run.json (the seed's format, which RunFile reads unchanged), sometimes report.md (its
scorecard) and trials/*/memo.md. The files are copied under our results root, since files are the source of truth
and the database can be rebuilt from them; the legacy scorecard is kept as report.legacy.md so that rendering our
own report.md next to it never overwrites it. Importing is idempotent: rows are keyed by trial slot and attempt, and
a file is only rewritten when its bytes differ.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from mcp_evals_pipeline.contracts.records import RunFile, TrialRecord
from mcp_evals_pipeline.record_checks import (
    MAX_RECORD_BYTES,
    RecordError,
    check_records,
    check_run,
    check_text_file,
    read_capped,
)
from mcp_evals_pipeline.store import TrialStore

log = logging.getLogger(__name__)

RUN_FILE = "run.json"
LEGACY_REPORT = "report.md"
# Our renderer writes report.md into the same directory; the legacy scorecard must survive that.
IMPORTED_REPORT = "report.legacy.md"
MEMO = "memo.md"


@dataclass
class SkippedRun:
    """A run.json that could not be imported; the rest of the import goes on."""

    path: Path
    message: str


@dataclass
class ImportSummary:
    run_ids: list[str] = field(default_factory=list)
    trials: int = 0
    files_written: int = 0  # files whose bytes changed; 0 on a repeated import
    errors: list[SkippedRun] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return len(self.run_ids)


def find_run_dirs(source_dir: Path) -> list[Path]:
    """Every directory holding a run.json, without descending into a run (its workspaces may hold anything).

    Directories starting with `_` or `.` are skipped: `_tasks` holds task contracts, not runs."""
    found: list[Path] = []
    for root, dirs, files in os.walk(source_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        if RUN_FILE in files:
            found.append(Path(root))
            dirs[:] = []
    return sorted(found)


def _fill_trial(trial: TrialRecord, run: RunFile) -> TrialRecord:
    """Legacy trial rows carry no run, batch or grader version of their own: take them from the run.

    The same four fields `runs.load_run_file` fills, so a database rebuilt from the copied files equals this import."""
    defaults = {
        "run_id": run.run_id,
        "batch_id": run.batch_id,
        "batch_date": run.started_at[:10],
        "grader_version": run.manifest.grader_version,
    }
    update = {name: value for name, value in defaults.items() if getattr(trial, name) is None and value is not None}
    return trial.model_copy(update=update) if update else trial


def filled_run(run: RunFile) -> RunFile:
    return run.model_copy(update={"trials": [_fill_trial(t, run) for t in run.trials]})


def _copy_if_changed(src: Path, dest: Path) -> bool:
    """Copy unless dest already holds the same bytes, so a repeated import leaves files (and mtimes) alone."""
    data = src.read_bytes()
    if dest.is_file() and dest.read_bytes() == data:
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return True


def _texts(run_dir: Path) -> list[tuple[Path, Path]]:
    """(source, destination relative to the run's copy) of the texts copied beside run.json."""
    texts = [(run_dir / LEGACY_REPORT, Path(IMPORTED_REPORT))] if (run_dir / LEGACY_REPORT).exists() else []
    return texts + [(memo, memo.relative_to(run_dir)) for memo in sorted(run_dir.glob(f"trials/*/{MEMO}"))]


def _copy_run_files(run_dir: Path, dest_dir: Path) -> int:
    written = _copy_if_changed(run_dir / RUN_FILE, dest_dir / RUN_FILE)
    for src, rel in _texts(run_dir):
        written += _copy_if_changed(src, dest_dir / rel)
    return int(written)


def load_run(path: Path, *, checked: bool = True) -> RunFile:
    """Parse and validate one run.json; raises ValueError naming the file on any problem, RecordError (a
    ValueError) when it parses but holds what no run of ours would (record_checks.py; `checked=False` skips that:
    for a caller that only compares its id, never writes it)."""
    try:
        data = read_capped(path, MAX_RECORD_BYTES)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc}") from exc
    try:
        run = RunFile.model_validate_json(data)
    except ValidationError as exc:
        raise ValueError(f"{path}: {exc}") from exc
    # The run id becomes a directory name under the results root, its task ids trial directories: checked as the
    # rows will be written (their per-run fields filled in), with its numbers and dates.
    if checked:
        check_run(filled_run(run), path)
    return run


def import_runs(source_dir: Path, store: TrialStore, results_root: Path) -> ImportSummary:
    """Import every run under source_dir into store and copy its files to results_root/<runId>/.

    A run.json that is not a run (unreadable, not the format) is reported (path and reason) and skipped; it never
    stops the others. One that is a run but holds what no run of ours would (record_checks.py: a number DuckDB
    cannot hold, an id that is a path, an oversized file) stops the whole import before anything is written:
    RecordError, naming the file and the field."""
    source_dir, results_root = Path(source_dir), Path(results_root)
    summary = ImportSummary()
    loaded: list[tuple[RunFile, Path]] = []
    for run_dir in find_run_dirs(source_dir):
        run_file = run_dir / RUN_FILE
        try:
            run = filled_run(load_run(run_file, checked=False))  # checked below, all in one go
            for src, _ in _texts(run_dir):
                check_text_file(src, run_dir)
        except RecordError:
            raise
        except ValueError as exc:
            log.warning("skipping legacy run: %s", exc)
            summary.errors.append(SkippedRun(run_file, str(exc)))
            continue
        loaded.append((run, run_dir))
    check_records([(run, run_dir / RUN_FILE) for run, run_dir in loaded])  # as load_run(checked=True) would
    imported: list[tuple[RunFile, Path]] = []
    for run, run_dir in loaded:
        dest_dir = results_root / run.run_id
        # Files first: they are the source of truth, the rows below only index them.
        summary.files_written += _copy_run_files(run_dir, dest_dir)
        imported.append((run, dest_dir))
        summary.run_ids.append(run.run_id)
    with store.held():  # one connection for every row: each would open the file (~30 ms)
        summary.trials = store.record_trials([t for run, _ in imported for t in run.trials], source="import")
        for run, dest_dir in imported:
            store.record_run(run, dest_dir, source="import")
    return summary
