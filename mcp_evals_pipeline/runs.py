"""Run directories: run.json from the trial files, and the database rebuilt from the files.

A pipeline run directory holds one trial directory per slot (`trials/<key>/`, laid out as trial_dir.py says);
run.json lists the current attempts. An imported run of the earlier harness
has only its run.json. Both rebuild the same rows.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from mcp_evals_pipeline import models
from mcp_evals_pipeline.conditions import skill_hash
from mcp_evals_pipeline.contracts.records import RunFile, RunManifest, TrialRecord
from mcp_evals_pipeline.ids import check_id
from mcp_evals_pipeline.record_checks import MAX_RECORD_BYTES, read_capped
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.tasks.catalog import TaskLoadError, get_task
from mcp_evals_pipeline.tasks.suites import SuiteError, load_suites
from mcp_evals_pipeline.trial_dir import UNINDEXED_MARKER, TrialDir, current_trials, read_trial_records
from mcp_evals_pipeline.versions import GRADER_VERSION

RUN_FILE = "run.json"


def build_run_file(run_dir: Path) -> RunFile:
    """run.json of a pipeline run: its current trials and a manifest of what they ran against."""
    trials = current_trials(run_dir)
    if not trials:
        raise FileNotFoundError(f"no trials under {run_dir}")
    first = min(trials, key=lambda t: t.timestamp)
    versions = sorted({t.grader_version or GRADER_VERSION for t in trials})
    return RunFile(
        run_id=run_dir.name,
        batch_id=first.batch_id or first.batch_date or run_dir.name,
        started_at=first.timestamp,
        agent_runner=first.agent_runner,
        agent_model=first.agent_model,
        judge_model=models.JUDGE_MODEL,
        manifest=RunManifest(
            grader_version=versions[-1],
            sandbox=first.sandbox,
            task_prompt_hashes={t.task: t.prompt_hash or "" for t in trials},
            skill_hash=skill_hash(skilled) if (skilled := _runtimes(t.task for t in trials
                                                                     if t.condition.startswith("skill+"))) else None,
            conditions=sorted({t.condition for t in trials}),
            trials_per_cell=max(t.trial for t in trials),
            suites=_suite_manifest(trials),
            extra={"graderVersions": versions} if len(versions) > 1 else None,
        ),
        trials=trials,
    )


def _suite_manifest(trials: list[TrialRecord]) -> dict[str, dict[str, str | None]] | None:
    """suite -> the SDK package it tests and the newest release its trials saw on the registry."""
    try:
        suites = load_suites()
    except SuiteError:
        suites = {}
    out: dict[str, dict[str, str | None]] = {}
    for trial in sorted(trials, key=lambda t: t.timestamp):
        if trial.suite is None:
            continue
        entry = out.setdefault(trial.suite, {
            "sdkPackage": suites[trial.suite].sdk_package if trial.suite in suites else trial.sdk_package,
            "registryLatest": None})
        entry["registryLatest"] = trial.sdk_registry_latest or entry["registryLatest"]
    return out or None


def _runtimes(task_ids: Iterable[str]) -> set[str]:
    """The runtimes of the tasks that ran (a task no longer on disk counts as python)."""
    runtimes = set()
    for task_id in set(task_ids):
        try:
            runtimes.add(get_task(task_id).contract.effective_runtime)
        except TaskLoadError:
            runtimes.add("python")
    return runtimes


def write_run_file(run_dir: Path, store: TrialStore | None = None) -> RunFile:
    run = build_run_file(run_dir)
    (run_dir / RUN_FILE).write_text(run.model_dump_json(indent=2))
    if store is not None:
        store.record_run(run, run_dir)
    return run


def index_pending_trials(runs_root: Path, store: TrialStore) -> tuple[int, list[str]]:
    """The one writer's sweep: every trial whose trial.json carries a .unindexed marker (its run left the row to
    the indexer, or could not write it) gets the rows of all its attempts, re-read from the files, in one
    connection. A marker is claimed by renaming it first, so a new attempt that starts meanwhile (and writes its
    own marker when it ends) is never taken for one already indexed; a claim a killed sweep left is claimed again.
    Returns (trials indexed, "<trial dir>: <why>" for those that could not be: their marker stays for the next
    sweep)."""
    mine = f"{UNINDEXED_MARKER}.indexing-{os.getpid()}"
    claimed: dict[Path, TrialDir] = {}  # one claim per folder: a killed sweep's claim and a newer marker are one
    for marker in sorted(runs_root.glob(f"*/trials/*/{UNINDEXED_MARKER}*")):
        try:
            os.rename(marker, marker.with_name(mine))
        except OSError:
            continue  # another sweep claimed it, or a new attempt removed it
        claimed.setdefault(marker.parent, TrialDir(marker.parent))
    indexed, broken = 0, []
    with store.held() if claimed else contextlib.nullcontext():
        for trial_dir in claimed.values():
            claim = trial_dir.path / mine
            try:
                if trial_dir.trial_file.exists():  # absent: a new attempt runs; its marker comes with its record
                    current = TrialRecord.model_validate_json(read_capped(trial_dir.trial_file, MAX_RECORD_BYTES))
                    store.record_trials([*trial_dir.earlier_records(), current])
                    indexed += 1
                claim.unlink()
            except Exception as exc:  # a corrupt record, a refused write: reported, kept for the next sweep
                broken.append(f"{trial_dir.path}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
                if trial_dir.unindexed_marker.exists():
                    claim.unlink()
                else:
                    os.rename(claim, trial_dir.unindexed_marker)
    return indexed, broken


def index_missing_runs(runs_root: Path, store: TrialStore) -> tuple[list[str], list[str]]:
    """run.json and a `runs` row for every run whose trials are indexed but which has none yet (trials
    materialized from the UI or a backfill: only the scorecard wrote runs before). Returns (indexed run ids,
    "<run id>: <why>" for those that could not be: a broken run never stops the others)."""
    missing = [str(r["run_id"]) for r in store.query(
        "SELECT DISTINCT run_id FROM trials WHERE run_id IS NOT NULL AND source = 'pipeline' "
        "AND run_id NOT IN (SELECT run_id FROM runs) ORDER BY run_id")]
    done, broken = [], []
    for run_id in missing:
        try:
            run_dir = runs_root / check_id(run_id, "run id")
            if run_dir.is_dir():
                write_run_file(run_dir, store)
                done.append(run_id)
        except Exception as exc:  # corrupt files, an id that would leave the results root
            broken.append(f"{run_id}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
    return done, broken


def load_run_file(path: Path) -> RunFile:
    """A run.json of ours or of the earlier harness, with the per-trial fields the older format kept per run."""
    run = RunFile.model_validate_json(read_capped(path, MAX_RECORD_BYTES))
    for t in run.trials:
        t.run_id = t.run_id or run.run_id
        t.batch_id = t.batch_id or run.batch_id
        t.batch_date = t.batch_date or run.started_at[:10]
        t.grader_version = t.grader_version or run.manifest.grader_version
    return run


@dataclass
class RebuildSummary:
    runs: int
    rows: int
    errors: list[str]
    moved: list[str] = field(default_factory=list)  # "<path> -> <aside>: <why>" for an old database set aside


def wal_of(database: Path) -> Path:
    return database.with_name(database.name + ".wal")


def _set_aside_if_unusable(database: Path) -> list[str]:
    """An old database whose WAL cannot be replayed (a full disk, a WAL of another file) is moved aside, WAL and
    all: the rebuilt file must never meet that WAL, and the old pair is kept for whoever wants to look. A WAL that
    replays is checkpointed into its own file, which the rebuilt one then replaces. Called under the store lock."""
    wal = wal_of(database)
    if not wal.exists():
        return []
    try:
        duckdb.connect(str(database)).close()
        return []
    except duckdb.Error as exc:
        if "Could not set lock" in str(exc):  # another process has it open: not ours to move
            raise
        why = " ".join(str(exc).split())[:300]
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    moved = []
    for path in (database, wal):
        if path.exists():
            aside = path.with_name(f"{path.name}.unusable-{stamp}")
            os.replace(path, aside)
            moved.append(f"{path} -> {aside}: {why}")
    return moved


def rebuild_database(runs_root: Path, database: Path) -> RebuildSummary:
    """Rebuild the DuckDB index from the files into a new file, then swap it in (a crash leaves the old one). An
    old database whose WAL does not replay is set aside first (the files are the source of truth)."""
    database.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".rebuild-", suffix=".duckdb", dir=database.parent)
    os.close(fd)
    os.unlink(tmp_name)  # duckdb creates the file itself
    fresh = TrialStore(Path(tmp_name))
    runs = rows = 0
    errors: list[str] = []
    with fresh.held():  # one connection for the whole rebuild
        for run_dir in sorted(p for p in runs_root.iterdir() if p.is_dir()) if runs_root.is_dir() else []:
            try:
                records = read_trial_records(run_dir)
                source = "pipeline"
                run: RunFile | None = None
                if (run_dir / RUN_FILE).exists():
                    run = load_run_file(run_dir / RUN_FILE)
                if not records and run is not None:
                    records, source = run.trials, "import"
                if not records:
                    continue
                rows += fresh.record_trials(records, source=source)
                if run is not None:
                    fresh.record_run(run, run_dir, source=source)
                runs += 1
            except Exception as exc:  # one bad directory never hides the others
                errors.append(f"{run_dir}: {type(exc).__name__}: {exc}")
    lock = TrialStore(database)._lock  # the same lock every writer takes
    with lock:
        moved = _set_aside_if_unusable(database)
        os.replace(tmp_name, database)
    Path(tmp_name + ".lock").unlink(missing_ok=True)
    return RebuildSummary(runs, rows, errors, moved)
