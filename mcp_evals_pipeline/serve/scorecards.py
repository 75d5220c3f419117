"""A run's scorecard (eval_results/runs/<run>/report.md as the pipeline wrote it; an imported run without one: the
earlier harness's own report.legacy.md) and the trends,
for `get_scorecard`, `get_trends` and the `run://{runId}/report` resource. Read-only: a report that was never written
is said to be missing (with the command that writes it), not rendered here; the trends are the `trends` and
`usage_trends` models evaluated over the current trials on a read-only connection (sql_models.scoped_select), so
they need no materialized table and write nothing.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mcp_evals_pipeline.contracts.task_base import ContractModel
from mcp_evals_pipeline.did_you_mean import suggestion
from mcp_evals_pipeline.ids import check_id
from mcp_evals_pipeline.legacy_import import IMPORTED_REPORT
from mcp_evals_pipeline.paths import runs_dir
from mcp_evals_pipeline.serve.results_query import (
    DEFAULT_MAX_ROWS,
    QueryRefused,
    QueryResult,
    read_only_connection,
    run_query,
)
from mcp_evals_pipeline.sql_models import scoped_select

REPORT = "report.md"
TrendKind = Literal["build", "usage"]
_TREND_MODEL: dict[str, str] = {"build": "trends", "usage": "usage_trends"}


class Scorecard(ContractModel):
    run_id: str
    path: str = Field(description="The file the scorecard was read from.")
    imported: bool = Field(description="True: the earlier harness's own report of an imported run (report.legacy.md), "
                                       "not one this pipeline rendered.")
    markdown: str = Field(description="The scorecard itself (Markdown).")


class Scorecards(ContractModel):
    scorecards: list[Scorecard] = Field(description="One per run: the run asked for, or each run of the batch.")


def _run_dirs() -> list[str]:
    root = runs_dir()
    return sorted(d.name for d in root.iterdir() if d.is_dir()) if root.is_dir() else []


def report_of(run_id: str) -> Scorecard:
    """The report.md of one run; a run id that is no plain name, names no run directory, or a run without its
    report is refused with the reason."""
    try:
        check_id(run_id, "run id")
    except ValueError as exc:
        raise QueryRefused(str(exc)) from None
    run_dir = runs_dir() / run_id
    if not run_dir.is_dir():
        raise QueryRefused(f"no run {run_id!r} under {runs_dir()}{suggestion(run_id, _run_dirs())}")
    path = run_dir / REPORT
    imported = not path.is_file() and (run_dir / IMPORTED_REPORT).is_file()
    if imported:
        path = run_dir / IMPORTED_REPORT
    elif not path.is_file():
        raise QueryRefused(f"run {run_id} has no {REPORT} yet (`mcp-evals report --run {run_id} --write` writes it)")
    return Scorecard(run_id=run_id, path=str(path), imported=imported, markdown=path.read_text(encoding="utf-8"))


def scorecards(run_id: str | None = None, batch_id: str | None = None) -> Scorecards:
    if (run_id is None) == (batch_id is None):
        raise QueryRefused("give exactly one of run_id and batch_id")
    if run_id is not None:
        return Scorecards(scorecards=[report_of(run_id)])
    assert batch_id is not None
    try:
        check_id(batch_id, "batch id")
    except ValueError as exc:
        raise QueryRefused(str(exc)) from None
    with read_only_connection() as con:
        runs = [r[0] for r in con.execute("SELECT DISTINCT run_id FROM trials WHERE batch_id = ? AND run_id IS NOT "
                                          "NULL ORDER BY 1", [batch_id]).fetchall()]
        if not runs:
            there = [r[0] for r in con.execute("SELECT DISTINCT batch_id FROM trials WHERE batch_id IS NOT NULL")
                     .fetchall()]
            raise QueryRefused(f"no trials of batch {batch_id!r} in the store{suggestion(batch_id, there)}")
    return Scorecards(scorecards=[report_of(r) for r in runs])


def trends(kind: TrendKind = "build", suite: str | None = None, agent: str | None = None,
           condition: str | None = None, max_rows: int = DEFAULT_MAX_ROWS) -> QueryResult:
    """Pass rate per batch over time (build: with Wilson bands and the grader / task-set boundaries; usage: pass
    and unsafe rates), one series per suite x agent x model x condition ('*': all of a batch's conditions)."""
    wanted = {"suite": suite, "agent_runner": agent, "condition": condition}
    where = " AND ".join(f"{column} = ?" for column, value in wanted.items() if value is not None) or "true"
    sql = (f"SELECT * FROM ({scoped_select(_TREND_MODEL[kind])}) WHERE {where} "
           "ORDER BY suite, agent_runner, agent_model, condition, batch_date, batch_id")
    return run_query(sql, max_rows=max_rows, params=[v for v in wanted.values() if v is not None])
