"""The DuckDB store: one row per trial attempt, rebuilt from the files whenever needed.

Files under eval_results/ are the source of truth; the database is an index of them for SQL. Writes are short,
idempotent (delete + insert by trial slot and attempt) and serialized across processes with a file lock, since
DuckDB admits one writing process at a time. Every access holds the lock only for its own few milliseconds.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
from filelock import FileLock

from mcp_evals_pipeline.contracts.records import RunFile, TrialRecord
from mcp_evals_pipeline.paths import database_path
from mcp_evals_pipeline.tasks.suites import Suite, SuiteError, load_suites, suite_of

LOCK_TIMEOUT_S = 120
LOCK_POLL_S = 0.05

# Who writes a trial's row. `trial`: the trial's own run, as it ends (one host, or one DuckDB file every writer
# reaches through one kernel's locks). `indexer`: the trial's run writes its files only, with a .unindexed marker,
# and one writer indexes them (runs.index_pending_trials, at the start of every reports run): run workers on many
# hosts never share a DuckDB file, which one process on one host may write at a time.
ROW_WRITER_ENV = "MCP_EVALS_ROW_WRITER"
ROW_WRITERS = ("trial", "indexer")
# On the runs that write the DuckDB file as a whole (the reports run: the indexer and the models; the synthesis):
# deploy/dagster.yaml lets one such run at a time start (concurrency.runs.tag_concurrency_limits), on any host.
WRITER_TAG = "mcp-evals/duckdb-writer"


def row_writer(value: str = "") -> str:
    """The row writer asked for (`value`, else MCP_EVALS_ROW_WRITER, else `trial`); ValueError naming the
    variable for any other value."""
    chosen = value or os.environ.get(ROW_WRITER_ENV, "") or "trial"
    if chosen not in ROW_WRITERS:
        raise ValueError(f"{ROW_WRITER_ENV}={chosen!r}: expected one of {', '.join(ROW_WRITERS)}")
    return chosen

SCHEMA = """
CREATE TABLE IF NOT EXISTS trial_attempts (
    slot VARCHAR NOT NULL,            -- batch_id|task--condition--tN|agent_runner|agent_model
    attempt INTEGER NOT NULL,
    is_current BOOLEAN NOT NULL,
    run_id VARCHAR,
    batch_id VARCHAR,
    batch_date DATE,
    task VARCHAR NOT NULL,
    condition VARCHAR NOT NULL,
    trial INTEGER NOT NULL,
    prompt_hash VARCHAR,
    agent_runner VARCHAR NOT NULL,
    agent_model VARCHAR,
    reasoning_effort VARCHAR,
    sdk_version VARCHAR,
    grader_version VARCHAR,
    sandbox VARCHAR,
    valid BOOLEAN NOT NULL,
    invalid_reason VARCHAR,
    error VARCHAR,
    contract_pass BOOLEAN NOT NULL,
    failure_code VARCHAR,
    failing_check VARCHAR,
    failing_detail VARCHAR,
    sdk_path VARCHAR,
    scored_for_pass_rate BOOLEAN NOT NULL,
    duration_ms BIGINT,
    turns INTEGER,
    tokens_in BIGINT,
    tokens_out BIGINT,
    tool_calls INTEGER,
    cost_usd DOUBLE,
    memo_path VARCHAR,
    transcript_path VARCHAR,
    source VARCHAR NOT NULL,          -- pipeline | import
    recorded_at TIMESTAMPTZ NOT NULL,
    grade_json JSON,
    PRIMARY KEY (slot, attempt)
);
-- Columns added after the first release: older database files gain them in place.
ALTER TABLE trial_attempts ADD COLUMN IF NOT EXISTS isolation VARCHAR;
ALTER TABLE trial_attempts ADD COLUMN IF NOT EXISTS suite VARCHAR;
ALTER TABLE trial_attempts ADD COLUMN IF NOT EXISTS sdk_package VARCHAR;
ALTER TABLE trial_attempts ADD COLUMN IF NOT EXISTS sdk_registry_latest VARCHAR;
ALTER TABLE trial_attempts ADD COLUMN IF NOT EXISTS kind VARCHAR DEFAULT 'build';
ALTER TABLE trial_attempts ADD COLUMN IF NOT EXISTS condition_hash VARCHAR;
ALTER TABLE trial_attempts ADD COLUMN IF NOT EXISTS regraded_from INTEGER;  -- the attempt a regrade marked again
CREATE OR REPLACE VIEW trials AS SELECT * EXCLUDE (is_current, grade_json) FROM trial_attempts WHERE is_current;
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY,
    batch_id VARCHAR,
    started_at TIMESTAMPTZ,
    agent_runner VARCHAR,
    agent_model VARCHAR,
    judge_model VARCHAR,
    grader_version VARCHAR,
    sandbox VARCHAR,
    skill_hash VARCHAR,
    source VARCHAR,
    run_dir VARCHAR
);
-- suite -> {sdkPackage, registryLatest} of the run's manifest
ALTER TABLE runs ADD COLUMN IF NOT EXISTS suites JSON;
"""

_MIGRATED: set[str] = set()  # database files this process has brought up to date (a connection per write)


def _migrate(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Types changed after the first release, changed in place in older database files: runs.started_at was a
    string (an unreadable one becomes NULL; run.json keeps it). Once per file and process, not on every write."""
    if str(path) in _MIGRATED:
        return
    found = con.execute("SELECT data_type FROM information_schema.columns WHERE table_name = 'runs' "
                        "AND column_name = 'started_at'").fetchone()
    if found and found[0] == "VARCHAR":
        con.execute("ALTER TABLE runs ALTER started_at SET DATA TYPE TIMESTAMPTZ "
                    "USING try_cast(started_at AS TIMESTAMPTZ)")
    _MIGRATED.add(str(path))


COLUMNS = (
    "slot", "attempt", "is_current", "run_id", "batch_id", "batch_date", "task", "condition", "trial",
    "prompt_hash", "agent_runner", "agent_model", "reasoning_effort", "sdk_version", "grader_version", "sandbox",
    "valid", "invalid_reason", "error", "contract_pass", "failure_code", "failing_check", "failing_detail",
    "sdk_path", "scored_for_pass_rate", "duration_ms", "turns", "tokens_in", "tokens_out", "tool_calls", "cost_usd",
    "memo_path", "transcript_path", "source", "recorded_at", "grade_json", "isolation", "suite", "sdk_package",
    "sdk_registry_latest", "kind", "condition_hash", "regraded_from",
)


def slot_of(record: TrialRecord) -> str:
    return f"{record.batch_id}|{record.trial_name}|{record.agent_runner}|{record.agent_model or ''}"


def _row(record: TrialRecord, source: str, suites: dict[str, Suite]) -> tuple[object, ...]:
    grade = record.grade
    first = grade.first_failure
    valid = record.valid and grade.valid
    return (
        slot_of(record), record.attempt, False, record.run_id, record.batch_id, record.batch_date, record.task,
        record.condition, record.trial, record.prompt_hash, record.agent_runner, record.agent_model,
        record.reasoning_effort, record.sdk_version, record.grader_version or grade.grader_version, record.sandbox,
        valid, record.invalid_reason or (None if valid else grade.failure_code), record.error,
        grade.contract_pass, grade.failure_code, first.id if first else None, first.detail if first else None,
        grade.sdk_path, grade.scored_for_pass_rate, record.perf.duration_ms, record.perf.turns,
        record.perf.tokens_in, record.perf.tokens_out, record.perf.tool_calls, record.perf.cost_usd,
        record.memo_path, record.transcript_path, source, record.timestamp,
        grade.model_dump_json(exclude={"server_output"}), record.isolation,
        # A record that predates suites (or an imported one) gets its suite from tasks/suites.json.
        record.suite or suite_of(record.task, record.prompt_hash, suites=suites),
        record.sdk_package or grade.sdk_package or _legacy_sdk_package(record, source), record.sdk_registry_latest,
        record.kind, record.condition_hash, record.regraded_from,
    )


def _legacy_sdk_package(record: TrialRecord, source: str) -> str | None:
    # The earlier harness tested the mcp-use npm package only; its sdkVersion is that package's.
    return "mcp-use" if source == "import" and record.sdk_version else None


def _suites() -> dict[str, Suite]:
    try:
        return load_suites()
    except SuiteError:
        return {}  # a broken suites.json must not lose a row: the suite stays NULL, verify-tasks reports the file


class TrialStore:
    def __init__(self, path: Path | None = None, *, writer: str = ""):
        self.path = Path(path) if path else database_path()
        self._writer = writer
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.path) + ".lock", timeout=LOCK_TIMEOUT_S)
        self._held: duckdb.DuckDBPyConnection | None = None

    @property
    def deferred(self) -> bool:
        """True: a trial's run leaves its row to the one indexer (ROW_WRITER_ENV); reads and the indexer's own
        writes are unchanged. Read when a trial writes (a reader never meets a bad value)."""
        return row_writer(self._writer) == "indexer"

    @contextmanager
    def held(self) -> Iterator[None]:
        """One connection (and the lock) for every write inside: an import or a rebuild of hundreds of runs opens
        the file once instead of twice per run (~30 ms each). Kept no longer than the loop that needs it: a
        connection left open in the process can crash a later fork's child (record_checks.py)."""
        with self.connect() as con:
            self._held = con
            try:
                yield
            finally:
                self._held = None

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived connection holding the cross-process lock (or the one `held` keeps); the schema always
        exists."""
        if self._held is not None:
            yield self._held
            return
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        # The timeout is read at each access, not when the store was built: one setting for both waits.
        with self._lock.acquire(timeout=LOCK_TIMEOUT_S):
            # A process outside this lock (a duckdb shell, a notebook) may hold DuckDB's own file lock: wait for
            # it like for ours, within the same timeout, instead of failing the write at once.
            while True:
                try:
                    con = duckdb.connect(str(self.path))
                    break
                except duckdb.IOException as exc:
                    if "lock" not in str(exc).lower() or time.monotonic() >= deadline:
                        raise
                    time.sleep(LOCK_POLL_S)
            try:
                con.execute(SCHEMA)
                _migrate(con, self.path)
                yield con
            finally:
                con.close()

    def record_trials(self, records: Iterable[TrialRecord], source: str = "pipeline") -> int:
        """Insert or replace attempts; the newest attempt of each slot is current. Returns rows written."""
        suites = _suites()
        rows = [_row(r, source, suites) for r in records]
        if not rows:
            return 0
        placeholders = ", ".join("?" for _ in COLUMNS)
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                con.executemany("DELETE FROM trial_attempts WHERE slot = ? AND attempt = ?",
                                [(row[0], row[1]) for row in rows])
                con.executemany(f"INSERT INTO trial_attempts ({', '.join(COLUMNS)}) VALUES ({placeholders})", rows)
                slots = sorted({row[0] for row in rows})
                con.execute(
                    """UPDATE trial_attempts t SET is_current = (t.attempt = m.latest)
                       FROM (SELECT slot, max(attempt) AS latest FROM trial_attempts
                             WHERE slot IN (SELECT unnest(?::VARCHAR[])) GROUP BY slot) m
                       WHERE t.slot = m.slot""",
                    [slots],
                )
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return len(rows)

    def record_run(self, run: RunFile, run_dir: Path | None, source: str = "pipeline") -> None:
        with self.connect() as con:
            con.execute("DELETE FROM runs WHERE run_id = ?", [run.run_id])
            con.execute(
                "INSERT INTO runs (run_id, batch_id, started_at, agent_runner, agent_model, judge_model, "
                "grader_version, sandbox, skill_hash, source, run_dir, suites) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run.run_id, run.batch_id, run.started_at, run.agent_runner, run.agent_model, run.judge_model,
                 run.manifest.grader_version, run.manifest.sandbox, run.manifest.skill_hash, source,
                 str(run_dir) if run_dir else None,
                 json.dumps(run.manifest.suites) if run.manifest.suites is not None else None],
            )

    def query(self, sql: str, params: list[object] | None = None) -> list[dict[str, object]]:
        with self.connect() as con:
            cursor = con.execute(sql, params or [])
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def grade_of_row(row: dict[str, object]) -> dict[str, object]:
    return json.loads(str(row["grade_json"])) if row.get("grade_json") else {}
