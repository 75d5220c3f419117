"""`rebuild-db`, the recovery path, after a full disk left a WAL the database cannot replay: it sets the old
database and its WAL aside (saying so) and rebuilds from the files under eval_results/, the source of truth.
A real replay trial, real DuckDB files, the real CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from mcp_evals_pipeline.cli import main
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.trials import TrialSpec, run_trial

TASK = "py-v4-01-basic-tool-server"
ROWS = ("SELECT slot, attempt, is_current, task, valid, contract_pass, failure_code, grader_version "
        "FROM trial_attempts ORDER BY slot, attempt")


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MCP_EVALS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("MCP_EVALS_DB", str(tmp_path / "results" / "evals.duckdb"))
    return tmp_path / "results"


def _uncheckpointed_wal(scratch: Path, name: str) -> Path:
    """A real WAL, left as a process killed mid-write leaves it (no checkpoint on close)."""
    con = duckdb.connect(str(scratch / name))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("CREATE TABLE other AS SELECT range AS n FROM range(1000)")
    wal = scratch / f"{name}.wal"
    shutil.copy(wal, scratch / "kept.wal")
    con.close()
    return scratch / "kept.wal"


def _another_files_wal(scratch: Path) -> bytes:
    return _uncheckpointed_wal(scratch, "another.duckdb").read_bytes()


def _corrupt_wal(scratch: Path) -> bytes:
    wal = bytearray(_uncheckpointed_wal(scratch, "another.duckdb").read_bytes())
    for i in range(100, len(wal), 7):
        wal[i] ^= 0xFF
    return bytes(wal)


@pytest.mark.parametrize("bad_wal", [_another_files_wal, _corrupt_wal], ids=["mismatched", "corrupt"])
def test_rebuild_db_sets_an_unreplayable_wal_aside_and_rebuilds_from_the_files(
        results: Path, tmp_path: Path, bad_wal) -> None:  # type: ignore[no-untyped-def]
    store = TrialStore()
    for trial in (1, 2):
        run_trial(TrialSpec(task_id=TASK, condition="noskill+blank", trial=trial, batch_date="2026-11-30",
                            agent="replay", skip_judge=True), store=store)
    expected = store.query(ROWS)
    assert len(expected) == 2
    database = results / "evals.duckdb"
    (tmp_path / "scratch").mkdir()
    wal = database.with_name("evals.duckdb.wal")
    wal.write_bytes(bad_wal(tmp_path / "scratch"))
    with pytest.raises(duckdb.Error, match="WAL"):  # the fault is real: the database no longer opens
        duckdb.connect(str(database)).close()

    done = CliRunner().invoke(main, ["rebuild-db"])
    assert done.exit_code == 0, done.output
    assert "2 trial rows from 1 runs" in done.output
    assert "set aside" in done.output and "evals.duckdb.wal" in done.output  # what it moved, named
    assert TrialStore().query(ROWS) == expected  # the rows are the files'
    aside = sorted(p.name for p in results.glob("evals.duckdb*.unusable-*"))
    assert [n.split(".unusable-")[0] for n in aside] == ["evals.duckdb", "evals.duckdb.wal"]


def test_a_wal_that_replays_is_not_set_aside(results: Path) -> None:
    store = TrialStore()
    run_trial(TrialSpec(task_id=TASK, condition="noskill+blank", trial=1, batch_date="2026-11-30",
                        agent="replay", skip_judge=True), store=store)
    con = duckdb.connect(str(results / "evals.duckdb"))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("CREATE TABLE scratch_notes AS SELECT 1 AS n")
    con.close()
    assert (results / "evals.duckdb.wal").exists()
    done = CliRunner().invoke(main, ["rebuild-db"])
    assert done.exit_code == 0 and "set aside" not in done.output, done.output
    assert not list(results.glob("*.unusable-*"))
    assert len(TrialStore().query(ROWS)) == 1
