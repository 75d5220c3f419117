"""The row writer (store.ROW_WRITER_ENV): with `indexer`, a trial's run writes its files and a .unindexed marker,
never the DuckDB file, and the one writer's sweep (runs.index_pending_trials, at the start of every reports run)
indexes every attempt of each marked trial once, exactly the rows rebuild-db makes from the same files. What the
many-worker deployment rests on (tests/test_docker_postgres_workers.py runs it on Postgres and containers)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mcp_evals_pipeline.cli import main
from mcp_evals_pipeline.runs import index_pending_trials, rebuild_database
from mcp_evals_pipeline.store import TrialStore, row_writer
from mcp_evals_pipeline.trial_dir import UNINDEXED_MARKER
from mcp_evals_pipeline.trials import DEFERRED_MARKER, TrialSpec, reindex_recorded, run_trial, trial_dir_for

CASE = "usage-ops-v3-01-restart-by-id"
COLUMNS = "slot, attempt, is_current, valid, contract_pass, failure_code"


def _spec(trial: int) -> TrialSpec:
    return TrialSpec(task_id=CASE, condition="bare", trial=trial, batch_date="2026-11-30", agent="replay",
                     skip_judge=True)


def _rows(store: TrialStore) -> list[dict[str, object]]:
    return store.query(f"SELECT {COLUMNS} FROM trial_attempts ORDER BY slot, attempt")


def test_a_deferred_trial_writes_files_only_and_one_sweep_indexes_every_attempt_once(tmp_path: Path) -> None:
    runs, database = tmp_path / "runs", tmp_path / "evals.duckdb"
    worker_store = TrialStore(database, writer="indexer")
    for trial in (1, 2, 2):  # t2 twice: two attempts of one slot
        record = run_trial(_spec(trial), store=worker_store, results_root=runs)
        assert record.valid
    assert _rows(TrialStore(database)) == []  # no run worker wrote the database
    t2 = trial_dir_for(_spec(2), runs)
    assert t2.unindexed_marker.read_text() == DEFERRED_MARKER
    # A Dagster retry of a deferred trial runs a new attempt: the marker is not a row its own run failed to write.
    assert reindex_recorded(_spec(2), store=worker_store, results_root=runs) is None

    writer = TrialStore(database)
    assert index_pending_trials(runs, writer) == (2, [])
    rows = _rows(writer)
    assert [(r["slot"].split("|")[1], r["attempt"], r["is_current"]) for r in rows] == [  # type: ignore[union-attr]
        (f"{CASE}--bare--t1", 1, True), (f"{CASE}--bare--t2", 1, False), (f"{CASE}--bare--t2", 2, True)]
    assert not list(runs.glob(f"*/trials/*/{UNINDEXED_MARKER}*"))
    assert index_pending_trials(runs, writer) == (0, [])  # nothing twice
    assert _rows(writer) == rows
    assert rebuild_database(runs, tmp_path / "rebuilt.duckdb").errors == []
    assert _rows(TrialStore(tmp_path / "rebuilt.duckdb")) == rows


def test_a_record_the_sweep_cannot_read_is_reported_and_swept_again_once_fixed(tmp_path: Path) -> None:
    runs, database = tmp_path / "runs", tmp_path / "evals.duckdb"
    run_trial(_spec(1), store=TrialStore(database, writer="indexer"), results_root=runs)
    folder = trial_dir_for(_spec(1), runs)
    good = folder.trial_file.read_text()
    folder.trial_file.write_text("{not json")
    indexed, broken = index_pending_trials(runs, TrialStore(database))
    assert indexed == 0 and len(broken) == 1 and str(folder.path) in broken[0], broken
    assert folder.unindexed_marker.exists()  # put back for the next sweep
    # A sweep killed after it claimed the marker leaves its claim: the next sweep takes it over.
    folder.unindexed_marker.rename(folder.path / f"{UNINDEXED_MARKER}.indexing-999999")
    folder.trial_file.write_text(good)
    assert index_pending_trials(runs, TrialStore(database)) == (1, [])
    assert len(_rows(TrialStore(database))) == 1
    assert not list(folder.path.glob(f"{UNINDEXED_MARKER}*"))


def test_a_killed_sweep_s_claim_beside_a_new_attempt_s_marker_is_one_trial(tmp_path: Path) -> None:
    """A sweep killed after it claimed the marker of a trial whose next attempt was running (a new attempt archives
    the folder's files, the claim with them, when it starts), then that attempt ending with its own marker: the next
    sweep finds two markers in one folder and indexes the trial once, reporting nothing."""
    runs, database = tmp_path / "runs", tmp_path / "evals.duckdb"
    worker = TrialStore(database, writer="indexer")
    for _ in range(2):
        run_trial(_spec(1), store=worker, results_root=runs)
    folder = trial_dir_for(_spec(1), runs)
    (folder.path / f"{UNINDEXED_MARKER}.indexing-999999").write_text(DEFERRED_MARKER)
    assert len(list(folder.path.glob(f"{UNINDEXED_MARKER}*"))) == 2
    assert index_pending_trials(runs, TrialStore(database)) == (1, [])
    assert [(r["attempt"], r["is_current"]) for r in _rows(TrialStore(database))] == [(1, False), (2, True)]
    assert not list(folder.path.glob(f"{UNINDEXED_MARKER}*"))


def test_an_unknown_row_writer_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    monkeypatch.setenv("MCP_EVALS_ROW_WRITER", "everyone")
    with pytest.raises(ValueError, match="MCP_EVALS_ROW_WRITER='everyone'"):
        row_writer()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MCP_EVALS_RESULTS_DIR", str(tmp_path / "results"))
    result = CliRunner().invoke(main, ["eval", "--agent", "replay", "--task", CASE, "--condition", "bare",
                                       "--no-verify"])
    assert result.exit_code == 2 and "MCP_EVALS_ROW_WRITER" in result.output, result.output
    assert not (tmp_path / "results").exists() and not (tmp_path / "home").exists()  # refused before any write
