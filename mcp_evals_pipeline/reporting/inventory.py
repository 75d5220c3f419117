"""What the store holds: the batches and runs `mcp-evals batches` and `mcp-evals runs` list, and the message that
names them when a command is given a batch id that is not there.

Read from DuckDB (the index of the files under eval_results/runs/, as `overview`, `trends` and `compare` read it):
the current attempt of every trial, with each run's start from the runs table. Nothing is written.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb

from mcp_evals_pipeline.did_you_mean import suggestion
from mcp_evals_pipeline.models import agent_label_sql

# The earlier harness named a batch by its GitHub Actions run (run id, then the attempt), not by its date.
IMPORTED_IDS = ("imported batch ids are the earlier harness's GitHub Actions run ids, `<run id>-<attempt>`, "
                "not dates")

# Counts over the current attempts: invalid trials leave every denominator; a usage trial's unsafe is counted apart.
_COUNTS = """
    count(*) AS trials,
    count(*) FILTER (WHERE valid AND scored_for_pass_rate) AS valid,
    count(*) FILTER (WHERE valid AND scored_for_pass_rate AND contract_pass) AS passed,
    count(*) FILTER (WHERE valid AND scored_for_pass_rate AND kind = 'usage'
                     AND failure_code LIKE 'usage.unsafe%') AS unsafe,
    count(*) FILTER (WHERE NOT valid) AS invalid,
    bool_or(source = 'import') AS imported
"""

_BATCHES = f"""
SELECT batch_id, min(batch_date) AS first_date, max(batch_date) AS last_date,
       string_agg(DISTINCT coalesce(suite, '-'), ', ' ORDER BY coalesce(suite, '-')) AS suites,
       string_agg(DISTINCT {agent_label_sql()}, ', ' ORDER BY {agent_label_sql()}) AS agents,
       count(DISTINCT run_id) AS runs, {_COUNTS}
FROM trials
GROUP BY batch_id
ORDER BY last_date DESC NULLS LAST, batch_id
"""

_RUNS = f"""
SELECT t.run_id, t.batch_id, {agent_label_sql("t.agent_runner", "t.agent_model")} AS agent,
       coalesce(min(t.started_at), min(t.recorded_at)) AS started, {_COUNTS}
FROM (SELECT trials.*, runs.started_at FROM trials LEFT JOIN runs ON runs.run_id = trials.run_id) AS t
WHERE ? IS NULL OR t.batch_id = ?
GROUP BY t.run_id, t.batch_id, t.agent_runner, t.agent_model
ORDER BY started DESC NULLS LAST, t.run_id
"""


@dataclass(frozen=True)
class Counts:
    trials: int
    valid: int
    passed: int
    unsafe: int
    invalid: int
    imported: bool

    def passes(self) -> str:
        """`7/9 pass`, with the usage trials' unsafe apart when there are any."""
        return f"{self.passed}/{self.valid}" + (f", {self.unsafe} unsafe" if self.unsafe else "")


@dataclass(frozen=True)
class Batch:
    batch_id: str
    first_date: dt.date | None
    last_date: dt.date | None
    suites: str
    agents: str
    runs: int
    counts: Counts

    @property
    def dates(self) -> str:
        if self.first_date is None:
            return "-"
        return str(self.first_date) if self.first_date == self.last_date else f"{self.first_date} to {self.last_date}"


@dataclass(frozen=True)
class Run:
    run_id: str
    batch_id: str | None
    agent: str
    started: dt.datetime | None
    counts: Counts


def _counts(row: dict[str, object]) -> Counts:
    return Counts(int(row["trials"]), int(row["valid"]), int(row["passed"]),  # type: ignore[call-overload]
                  int(row["unsafe"]), int(row["invalid"]), bool(row["imported"]))  # type: ignore[call-overload]


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> list[dict[str, object]]:
    cursor = con.execute(sql, params or [])
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def batches(con: duckdb.DuckDBPyConnection) -> list[Batch]:
    """Every batch of the store, newest first."""
    return [Batch(str(r["batch_id"]), r["first_date"], r["last_date"], str(r["suites"]),  # type: ignore[arg-type]
                  str(r["agents"]), int(r["runs"]), _counts(r))  # type: ignore[call-overload]
            for r in _rows(con, _BATCHES)]


def runs(con: duckdb.DuckDBPyConnection, batch: str | None = None) -> list[Run]:
    """Every run of the store (or of one batch), the latest started first."""
    return [Run(str(r["run_id"]), r["batch_id"], str(r["agent"]),  # type: ignore[arg-type]
                r["started"], _counts(r))  # type: ignore[arg-type]
            for r in _rows(con, _RUNS, [batch, batch])]


def unknown_batch(con: duckdb.DuckDBPyConnection, batch: str) -> str | None:
    """None when the store holds trials of `batch`; else what to say: the batches of that date when it is one
    (an imported batch is named by its run id, not its date), the nearest ids, and where the list is."""
    known = batches(con)
    if any(b.batch_id == batch for b in known):
        return None
    if not known:
        return f"no batch {batch!r}: the store holds no trials yet"
    try:
        day = dt.date.fromisoformat(batch)
    except ValueError:
        day = None
    that_day = [b for b in known if day is not None and b.first_date is not None and b.last_date is not None
                and b.first_date <= day <= b.last_date]
    if that_day:
        hint = "; the batch(es) of that date: " + ", ".join(
            b.batch_id + (" (imported)" if b.counts.imported else "") for b in that_day)
    else:
        hint = suggestion(batch, [b.batch_id for b in known])
    imported = f"; {IMPORTED_IDS}" if any(b.counts.imported for b in known) else ""
    return f"no batch {batch!r}{hint} (`mcp-evals batches` lists the {len(known)} there are{imported})"
