"""The DuckDB store: idempotent attempts, current rows, and concurrent writers that lose nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mcp_evals_pipeline.contracts.grade import Check, TrialGrade
from mcp_evals_pipeline.contracts.records import TrialPerf, TrialRecord
from mcp_evals_pipeline.store import TrialStore

from .conftest import REPO


def make_record(task: str = "t1", trial: int = 1, attempt: int = 1, passed: bool = True, valid: bool = True,
                condition: str = "noskill+blank", batch: str = "2026-11-30") -> TrialRecord:
    code = None if passed else ("contract.calls" if valid else "infra.agent")
    checks = [] if not valid else [Check(id="call:add:1", passed=passed, detail=None if passed else "wrong",
                                         stage="calls")]
    return TrialRecord(
        task=task, condition=condition, trial=trial, agent_runner="replay", agent_model=None, batch_id=batch,
        batch_date=batch, run_id=f"{batch}--replay--default", attempt=attempt, valid=valid,
        invalid_reason=None if valid else "infra.agent",
        grade=TrialGrade(contract_pass=passed, checks=checks, failure_code=code, grader_version="1.0.0"),
        perf=TrialPerf(duration_ms=1000 * trial), timestamp=f"2026-11-30T14:00:0{attempt}Z",
    )


def test_writes_are_idempotent_and_the_newest_attempt_is_current(tmp_path: Path) -> None:
    store = TrialStore(tmp_path / "evals.duckdb")
    first = make_record(passed=False)
    store.record_trials([first])
    store.record_trials([first])  # the same attempt again: replaced, not duplicated
    store.record_trials([make_record(attempt=2, passed=True)])
    rows = store.query("SELECT attempt, is_current, contract_pass FROM trial_attempts ORDER BY attempt")
    assert rows == [{"attempt": 1, "is_current": False, "contract_pass": False},
                    {"attempt": 2, "is_current": True, "contract_pass": True}]
    assert store.query("SELECT count(*) AS n FROM trials") == [{"n": 1}]
    # An earlier attempt written late (e.g. by rebuild-db) never becomes current again.
    store.record_trials([first])
    assert store.query("SELECT attempt FROM trials") == [{"attempt": 2}]


def test_invalid_rows_carry_their_reason(tmp_path: Path) -> None:
    store = TrialStore(tmp_path / "evals.duckdb")
    store.record_trials([make_record(passed=False, valid=False)])
    assert store.query("SELECT valid, invalid_reason, failure_code FROM trials") == [
        {"valid": False, "invalid_reason": "infra.agent", "failure_code": "infra.agent"}]


WRITER = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from tests.test_store import make_record
from mcp_evals_pipeline.store import TrialStore
store = TrialStore(Path(sys.argv[1]))
worker = int(sys.argv[2])
for n in range(40):  # one short write per trial, as trial runs do
    store.record_trials([make_record(task=f"w{worker}", trial=n + 1, passed=n % 3 != 0)])
"""


def test_concurrent_writer_processes_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "evals.duckdb"
    workers = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(w), str(REPO)], cwd=REPO,
                                stderr=subprocess.PIPE, text=True) for w in range(4)]
    for proc in workers:
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
    rows = TrialStore(db).query("SELECT task, count(*) AS n, sum(contract_pass::INT) AS passed FROM trials "
                                "GROUP BY task ORDER BY task")
    assert rows == [{"task": f"w{w}", "n": 40, "passed": 26} for w in range(4)]


def test_the_lock_timeout_is_read_at_each_access(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """One setting, LOCK_TIMEOUT_S, bounds the wait for the store's lock, also for a store built before it was set
    (the fault-injection guards and a long-lived resource rely on it)."""
    import time

    import pytest
    from filelock import FileLock, Timeout

    from mcp_evals_pipeline import store as store_module

    store = TrialStore(tmp_path / "evals.duckdb")
    monkeypatch.setattr(store_module, "LOCK_TIMEOUT_S", 0.2)
    with FileLock(str(store.path) + ".lock"):  # another holder (its own file descriptor)
        started = time.monotonic()
        with pytest.raises(Timeout):
            store.query("SELECT 1")
        assert time.monotonic() - started < 30  # not the 120 s the store was built with
    assert store.query("SELECT 1 AS one") == [{"one": 1}]


def test_runs_started_at_is_a_timestamp_and_an_old_string_column_is_converted(tmp_path: Path) -> None:
    import datetime as dt

    import duckdb

    from mcp_evals_pipeline.contracts.records import RunFile, RunManifest

    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as con:  # a database file from before: started_at a string
        con.execute("CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, batch_id VARCHAR, started_at VARCHAR, "
                    "agent_runner VARCHAR, agent_model VARCHAR, judge_model VARCHAR, grader_version VARCHAR, "
                    "sandbox VARCHAR, skill_hash VARCHAR, source VARCHAR, run_dir VARCHAR)")
        con.execute("INSERT INTO runs (run_id, started_at) VALUES ('old', '2026-08-03T14:02:11.123Z'), "
                    "('unreadable', 'yesterday')")
    store = TrialStore(path)
    store.record_run(RunFile(run_id="new", batch_id="2026-11-30", started_at="2026-11-30T14:00:00Z",
                             agent_runner="replay", manifest=RunManifest(grader_version="3.0.0", sandbox="local"),
                             trials=[]), tmp_path / "new")
    with store.connect() as con:
        kind = con.execute("SELECT DISTINCT typeof(started_at) FROM runs").fetchall()
        rows = dict(con.execute("SELECT run_id, started_at FROM runs").fetchall())
    assert kind == [("TIMESTAMP WITH TIME ZONE",)]
    assert rows["old"] == dt.datetime(2026, 8, 3, 14, 2, 11, 123000, tzinfo=dt.UTC)
    assert rows["new"] == dt.datetime(2026, 11, 30, 14, tzinfo=dt.UTC) and rows["unreadable"] is None
