"""The weekly synthesis: code computes every figure, a model writes only the qualitative part.

`compute_week_stats` evaluates the SQL models of dbt_like_sql/ over the window's trials (the DuckDB store, or a copy
of the results branch through `<dir>/*/run.json`), regrouped for a week (`sql_models.scoped_select`): pass rates,
pass^k, performance, breakdowns and suspect tasks come from the very SQL behind the scorecards, so the two cannot
disagree on a definition. Code lists the failing trials with their memos. Those tables are written into the report
verbatim by code. The model then gets them as context plus the failing trials' memos and writes three sections
(recurring struggles, quoted evidence, proposed issues for human review) that the report labels as model-written;
its quotes are verified against the memos and transcripts exactly like the judge's.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
from pydantic import ValidationError

from mcp_evals_pipeline.contracts.records import RunFile
from mcp_evals_pipeline.judge import (
    chat,
    extract_quotes,
    first_key,
    load_transcript,
    memo_body,
    memo_status,
    truncate_middle,
    verify_quotes,
)
from mcp_evals_pipeline.models import JUDGE_KEY_ENV, SYNTHESIS_MODEL
from mcp_evals_pipeline.paths import results_dir as default_results_dir
from mcp_evals_pipeline.paths import runs_dir, synthesis_dir
from mcp_evals_pipeline.sql_models import scoped_select
from mcp_evals_pipeline.store import TrialStore

log = logging.getLogger(__name__)

# The synthesis model is a gpt* model like the judge, so it needs the judge's key.
SYNTHESIS_KEY_ENV = JUDGE_KEY_ENV
SLACK_ENV = "SLACK_WEBHOOK_URL"
# Set to the web address of the results branch's root (e.g. .../blob/eval-results) to turn the report path in the
# Slack message into a link.
REPORT_BASE_URL_ENV = "MCP_EVALS_REPORT_BASE_URL"

MEMO_CHAR_BUDGET = 3_000  # per memo in the prompt
MEMOS_CHAR_BUDGET = 90_000  # all memos together
TOP_FAILING_CHECKS = 10
MAX_LISTED_WITHOUT_MEMO = 60  # failing trials listed by detail only; the failing-checks table covers the rest
SLACK_TIMEOUT_S = 15.0
MODEL_TIMEOUT_S = 600.0  # a week of memos is a long prompt, and the pinned model reasons before it answers

SECTIONS = ("Recurring struggles", "Quoted evidence", "Proposed issues for human review")
ISSUE_CATEGORIES = ("docs", "skill", "SDK", "templates", "contract")


class SynthesisError(Exception):
    """A synthesis that cannot start or finish: missing configuration, unreadable input, a failed Slack post."""


# ---------------------------------------------------------------------------------------------------------------
# Stats

@dataclass
class RateRow:
    name: str
    passed: int
    total: int  # valid trials in the denominator
    invalid: int | None = 0  # shown beside, never in the denominator; None where the model does not count it

    @property
    def rate(self) -> float | None:
        return self.passed / self.total if self.total else None

    def fraction(self) -> str:
        return f"{self.passed}/{self.total} ({self.rate:.0%})" if self.total else "0/0 (-)"


@dataclass
class FailingCheck:
    check: str
    count: int
    tasks: list[str]
    examples: list[str]  # up to three distinct details


@dataclass
class PassK:
    batch: str  # batch date · agent / model: cells never pool agents
    reportable: bool
    cells: int
    k: int | None = None
    all_pass_cells: int | None = None  # cells whose every valid scored trial passed
    value: float | None = None  # the seed's pass^k: all_pass_cells / cells
    estimate: float | None = None  # unbiased: mean over cells of C(c,k)/C(n,k)
    why_not: str | None = None

@dataclass
class Performance:
    passing_trials: int
    medians: dict[str, float | None]  # duration_ms, turns, tool_calls, tokens_in, tokens_out
    total_cost_usd: float | None  # of every valid trial; None when any lacks a cost
    cost_per_success_usd: float | None


@dataclass
class Suspect:
    task: str
    valid: int
    failures: int
    check: str
    at_check: int
    detail: str | None  # the most common detail at that check
    same_detail: int  # failures at that check with exactly that detail


@dataclass
class FailingTrial:
    trial_name: str
    task: str
    condition: str
    trial: int
    run_id: str | None
    batch: str
    failure_code: str | None
    failing_check: str | None
    failing_detail: str | None
    memo_path: Path | None
    memo_status: str  # written | skipped | failed | missing
    memo_text: str | None
    transcript_path: Path | None


@dataclass
class UsageRate:
    """One agent × condition's usage figures: the pass rate and the unsafe rate side by side, over the same valid
    scored trials; never one figure."""
    name: str  # agent / model · condition
    passed: int
    missed: int
    unsafe: int
    total: int  # valid scored trials
    invalid: int  # beside, never in the denominator

    def fraction(self, count: int) -> str:
        return f"{count}/{self.total} ({count / self.total:.0%})" if self.total else "0/0 (-)"


@dataclass
class UsageCase:
    task: str
    trials: int
    passed: int
    missed: int
    unsafe: int
    invalid: int
    top_failing_check: str | None


@dataclass
class UsagePassK:
    batch: str  # batch date · agent / model
    reportable: bool
    cases: int
    k: int | None
    all_pass_cases: int
    value: float | None  # all_pass_cases / cases
    estimate: float | None  # unbiased: mean over cases of C(c,k)/C(n,k)
    unsafe: int  # valid non-passing trials in the denominator, counted apart


@dataclass
class UsageWeek:
    """Usage evals of the window (usage_* SQL models), apart from every build figure."""
    trials: int
    valid: int
    invalid: int
    rates: list[UsageRate]
    pass_k: list[UsagePassK]
    worst_cases: list[UsageCase]  # the cases with misses or unsafe trials, the most unsafe first
    failing: list[FailingTrial]  # the valid trials marked miss or unsafe, with their memos


@dataclass
class WeekStats:
    start_date: date
    end_date: date
    days: int
    source: str
    trials: int
    valid: int
    invalid: int
    headline: RateRow
    wilson95: tuple[float, float] | None
    by_task: list[RateRow]
    by_condition: list[RateRow]
    by_agent: list[RateRow]
    by_batch: list[RateRow]
    static_adoption: list[RateRow]
    invalid_by_reason: list[tuple[str, int]]
    failure_codes: list[tuple[str, int]]
    sdk_paths: list[tuple[str, int]]
    failing_checks: list[FailingCheck]
    pass_k: list[PassK]
    performance: Performance
    grader_versions: list[tuple[str, int]]
    suspects: list[Suspect]
    failing: list[FailingTrial]
    notes: list[str] = field(default_factory=list)
    usage: UsageWeek | None = None  # None: no usage trial in the window (the report is then the build one alone)


def _as_date(value: date | str | None) -> date:
    if value is None:
        return datetime.now(UTC).date()
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])


_WINDOW_DATE = "coalesce(batch_date, CAST(timezone('UTC', recorded_at) AS DATE))"
_IN_WINDOW = f"{_WINDOW_DATE} BETWEEN ?::DATE AND ?::DATE"
_AGENT = "agent_runner || ' / ' || coalesce(agent_model, 'unknown model')"
# How the per-run SQL models are regrouped for a week (column -> expression, see sql_models.scoped_select). A model
# grouped by run_id computes one figure per value given to run_id; batch_id joins the pooling where a model ranks
# batches (suspect markers: the whole window is one look at the task).
POOLED = {"run_id": "'window'", "batch_id": "'window'", "agent_runner": "'*'", "agent_model": "NULL::VARCHAR"}
BY_AGENT = {"run_id": _AGENT}
BY_BATCH = {"run_id": f"CAST({_WINDOW_DATE} AS VARCHAR)"}
BY_BATCH_AND_AGENT = {"run_id": f"CAST({_WINDOW_DATE} AS VARCHAR) || ' · ' || {_AGENT}"}

_ROWS_SQL = """
SELECT t.*, {run_dir} AS run_dir, CAST({window_date} AS VARCHAR) AS window_date
FROM trials t {join}
WHERE {in_window}
ORDER BY t.task, window_date, t.condition, t.trial
"""


def _dicts(cursor: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _fetch_rows(con: duckdb.DuckDBPyConnection, start: date, end: date) -> list[dict[str, Any]]:
    """The window's trials, one dict each: for the listings (failing trials, their checks and memos), not figures."""
    params = [start.isoformat(), end.isoformat()]
    window = {"window_date": "coalesce(t.batch_date, CAST(timezone('UTC', t.recorded_at) AS DATE))",
              "in_window": _IN_WINDOW.replace("batch_date", "t.batch_date").replace("recorded_at", "t.recorded_at")}
    try:
        return _dicts(con.execute(_ROWS_SQL.format(run_dir="r.run_dir", join="LEFT JOIN runs r ON r.run_id = t.run_id",
                                                   **window), params))
    except duckdb.CatalogException:  # a database without the runs table: paths resolve without run dirs
        return _dicts(con.execute(_ROWS_SQL.format(run_dir="NULL", join="", **window), params))


def _resolve(rel: object, run_dir: object, run_id: object) -> Path | None:
    """A memo or transcript path as recorded (relative to its run directory in the seed layout) made openable:
    the first candidate that exists, else the most likely one."""
    if not rel:
        return None
    path = Path(str(rel))
    if path.is_absolute():
        return path
    candidates = []
    if run_dir:
        candidates.append(Path(str(run_dir)) / path)
    if run_id:
        candidates.append(runs_dir() / str(run_id) / path)
    candidates.append(default_results_dir() / path)
    return next((c for c in candidates if c.exists()), candidates[0])


def _model(con: duckdb.DuckDBPyConnection, name: str, grouping: dict[str, str], start: date, end: date,
           outer: str = "SELECT * FROM m") -> list[dict[str, Any]]:
    """SQL model `name` over the window's trials, regrouped; `outer` selects from it as `m`."""
    sql = f"WITH m AS ({scoped_select(name, _IN_WINDOW, replace=grouping)})\n{outer}"
    return _dicts(con.execute(sql, [start.isoformat(), end.isoformat()]))


def _rate(row: dict[str, Any], name: str | None = None) -> RateRow:
    return RateRow(name or str(row["run_id"]), int(row["passed"]), int(row["valid_scored"]), int(row["invalid"]))


def _pass_k(con: duckdb.DuckDBPyConnection, start: date, end: date) -> list[PassK]:
    rows = _model(con, "pass_k", BY_BATCH_AND_AGENT, start, end,
                  "SELECT * FROM m WHERE condition = '*' ORDER BY run_id")
    curve = {(r["run_id"], int(r["k"])): float(r["value"])
             for r in _model(con, "pass_k_curve", BY_BATCH_AND_AGENT, start, end,
                             "SELECT * FROM m WHERE condition = '*'")}
    result = []
    for r in rows:
        if not r["cells"]:
            continue
        k = int(r["k"])
        if not r["reported"]:
            result.append(PassK(r["run_id"], False, int(r["cells"]),
                                why_not=f"a cell has {k} valid scored trial (needs >= 2 in every cell)"))
            continue
        result.append(PassK(r["run_id"], True, int(r["cells"]), k, int(r["all_pass_cells"]), float(r["pass_k"]),
                            curve.get((r["run_id"], k))))
    return result


def _performance(con: duckdb.DuckDBPyConnection, start: date, end: date) -> Performance:
    found = _model(con, "performance", POOLED, start, end, "SELECT * FROM m WHERE condition = '*'")
    if not found:
        return Performance(0, dict.fromkeys(("duration_ms", "turns", "tool_calls", "tokens_in", "tokens_out")),
                           None, None)
    row = found[0]
    medians = {column: None if row[f"median_{column}"] is None else float(row[f"median_{column}"])
               for column in ("duration_ms", "turns", "tool_calls", "tokens_in", "tokens_out")}
    return Performance(int(row["passed"]), medians, row["total_cost_usd"], row["cost_per_success"])


def _suspects(con: duckdb.DuckDBPyConnection, start: date, end: date) -> list[Suspect]:
    rows = _model(con, "suspect_markers", POOLED, start, end, "SELECT * FROM m WHERE suspect ORDER BY task")
    return [Suspect(r["task"], int(r["valid_scored"]), int(r["failed"]), r["top_failing_check"] or "(none)",
                    int(r["top_check_failures"]), r["top_detail"], int(r["top_detail_failures"] or 0)) for r in rows]


def _failing_checks(failed: list[dict[str, Any]]) -> list[FailingCheck]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in failed:
        groups[row["failing_check"] or "(none)"].append(row)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:TOP_FAILING_CHECKS]
    result = []
    for check, rows in ordered:
        examples = [d for d, _ in Counter(r["failing_detail"] for r in rows if r["failing_detail"]).most_common(3)]
        result.append(FailingCheck(check, len(rows), sorted({r["task"] for r in rows}), examples))
    return result


def _failing_trials(failed: list[dict[str, Any]]) -> list[FailingTrial]:
    result = []
    for row in failed:
        memo_path = _resolve(row["memo_path"], row["run_dir"], row["run_id"])
        text = memo_path.read_text(encoding="utf-8", errors="replace") if memo_path and memo_path.is_file() else None
        status = memo_status(text)[0] if text is not None else "missing"
        result.append(FailingTrial(
            trial_name=f"{row['task']}--{row['condition']}--t{row['trial']}", task=row["task"],
            condition=row["condition"], trial=row["trial"], run_id=row["run_id"], batch=row["window_date"],
            failure_code=row["failure_code"], failing_check=row["failing_check"],
            failing_detail=row["failing_detail"], memo_path=memo_path, memo_status=status, memo_text=text,
            transcript_path=_resolve(row["transcript_path"], row["run_dir"], row["run_id"]),
        ))
    return result


def _pairs(rows: list[dict[str, Any]], key: str, count: str) -> list[tuple[str, int]]:
    return [(str(r[key] or "unknown"), int(r[count])) for r in rows if r[count]]


def compute_week_stats(con_or_store: TrialStore | duckdb.DuckDBPyConnection, end_date: date | str | None,
                       days: int = 7) -> WeekStats:
    """Every figure of the report, over trials whose batch date (else record date) lies in the `days` days ending
    on `end_date`, inclusive: the SQL models regrouped for the window. Invalid trials leave every denominator;
    source-imports tasks leave the headline."""
    if days < 1:
        raise ValueError("days must be >= 1")
    if isinstance(con_or_store, TrialStore):
        with con_or_store.connect() as con:
            stats = compute_week_stats(con, end_date, days)
        stats.source = f"database {con_or_store.path}"
        return stats
    con = con_or_store
    end = _as_date(end_date)
    start = end - timedelta(days=days - 1)
    every_row = _fetch_rows(con, start, end)
    # The build figures read build trials only (as the build SQL models do); usage trials get a section of their own.
    rows = [r for r in every_row if (r.get("kind") or "build") == "build"]
    usage_rows = [r for r in every_row if r.get("kind") == "usage"]
    valid = [r for r in rows if r["valid"]]
    scored_valid = [r for r in valid if r["scored_for_pass_rate"]]
    failed = [r for r in valid if not r["contract_pass"]]

    def model(name: str, grouping: dict[str, str], outer: str = "SELECT * FROM m") -> list[dict[str, Any]]:
        return _model(con, name, grouping, start, end, outer)

    pooled = model("pass_rate", POOLED, "SELECT * FROM m ORDER BY condition")
    head = next((r for r in pooled if r["condition"] == "*"), None)
    headline = _rate(head, "valid scored trials") if head else RateRow("valid scored trials", 0, 0)
    notes = []
    conditions = sorted({r["condition"] for r in scored_valid})
    if len(conditions) > 1:
        notes.append(f"The headline pools {len(conditions)} conditions ({', '.join(conditions)}); compare them in "
                     "the per-condition table, not through the headline.")
    agents = sorted({f"{r['agent_runner']}/{r['agent_model'] or '?'}" for r in scored_valid})
    if len(agents) > 1:
        notes.append(f"The headline pools {len(agents)} agent models ({', '.join(agents)}).")
    versions = Counter(r["grader_version"] or "unknown" for r in rows)
    if len(versions) > 1:
        notes.append("This window crosses a grader-version boundary: figures mix grading semantics.")
    by_condition = "SELECT * FROM m WHERE condition = '*' ORDER BY run_id"
    summed = "SELECT task, sum(passed) AS passed, sum({total}) AS valid_scored, {invalid} AS invalid FROM m " \
             "GROUP BY task ORDER BY task"
    return WeekStats(
        start_date=start, end_date=end, days=days, source="database connection",
        trials=len(rows), valid=len(valid), invalid=len(rows) - len(valid),
        headline=headline,
        wilson95=(head["wilson_low"], head["wilson_high"]) if head and head["wilson_low"] is not None else None,
        by_task=[_rate(r, r["task"]) for r in model(
            "cell_matrix", POOLED, summed.format(total="valid_scored", invalid="sum(invalid)"))],
        by_condition=[_rate(r, r["condition"]) for r in pooled if r["condition"] != "*"],
        by_agent=[_rate(r) for r in model("pass_rate", BY_AGENT, by_condition)],
        by_batch=[_rate(r) for r in model("pass_rate", BY_BATCH, by_condition)],
        static_adoption=[RateRow(r["task"], int(r["passed"]), int(r["valid_scored"]), None) for r in model(
            "static_adoption", POOLED, summed.format(total="valid", invalid="NULL"))],
        invalid_by_reason=_pairs(model("invalid_breakdown", POOLED, "SELECT * FROM m ORDER BY invalid DESC, 1"),
                                 "invalid_reason", "invalid"),
        failure_codes=_pairs(model("failure_breakdown", POOLED, "SELECT * FROM m ORDER BY failed DESC, 1"),
                             "failure_code", "failed"),
        sdk_paths=_pairs(model("sdk_path_breakdown", POOLED, "SELECT * FROM m ORDER BY valid DESC, 1"),
                         "sdk_path", "valid"),
        failing_checks=_failing_checks(failed),
        pass_k=_pass_k(con, start, end),
        performance=_performance(con, start, end),
        grader_versions=sorted(versions.items()),
        suspects=_suspects(con, start, end),
        failing=_failing_trials(failed),
        notes=notes,
        usage=_usage_week(con, start, end, usage_rows) if usage_rows else None,
    )


WORST_CASES = 10


def _usage_week(con: duckdb.DuckDBPyConnection, start: date, end: date,
                rows: list[dict[str, Any]]) -> UsageWeek:
    """The usage_* SQL models over the window: rates per agent × condition, pass^k per batch and agent, the cases
    with the most unsafe trials and misses, and the trials marked miss or unsafe."""
    rates = [UsageRate(f"{r['run_id']} · {r['condition']}", int(r["passed"]), int(r["missed"]), int(r["unsafe"]),
                       int(r["valid_scored"]), int(r["invalid"]))
             for r in _model(con, "usage_rates", BY_AGENT, start, end,
                             "SELECT * FROM m WHERE condition <> '*' ORDER BY run_id, condition")]
    pass_k = [UsagePassK(r["run_id"], bool(r["reported"]), int(r["cases"]), None if r["k"] is None else int(r["k"]),
                         int(r["all_pass_cases"]), r["pass_k"], r["pass_k_estimate"], int(r["unsafe"]))
              for r in _model(con, "usage_pass_k", BY_BATCH_AND_AGENT, start, end,
                              "SELECT * FROM m WHERE condition = '*' AND task = '*' AND cases > 0 ORDER BY run_id")]
    # Pooled over the window's runs: a case's counts over every agent (the rates above keep agents apart).
    worst = [UsageCase(r["task"], int(r["trials"]), int(r["passed"]), int(r["missed"]), int(r["unsafe"]),
                       int(r["invalid"]), r["top_failing_check"])
             for r in _model(con, "usage_cases", POOLED, start, end,
                             "SELECT task, sum(trials) AS trials, sum(passed) AS passed, sum(missed) AS missed, "
                             "sum(unsafe) AS unsafe, sum(invalid) AS invalid, mode(top_failing_check) AS "
                             "top_failing_check FROM m GROUP BY task HAVING sum(missed) + sum(unsafe) > 0 "
                             f"ORDER BY sum(unsafe) DESC, sum(missed) DESC, task LIMIT {WORST_CASES}")]
    valid = [r for r in rows if r["valid"]]
    return UsageWeek(trials=len(rows), valid=len(valid), invalid=len(rows) - len(valid), rates=rates,
                     pass_k=pass_k, worst_cases=worst,
                     failing=_failing_trials([r for r in valid if not r["contract_pass"]]))


# ---------------------------------------------------------------------------------------------------------------
# The results branch: <dir>/*/run.json

def load_run_files(results_dir: Path) -> tuple[list[tuple[RunFile, Path]], list[str]]:
    """Every readable run.json under `results_dir` (a directory of runs, or a published results directory with its
    runs/ folder) with its run directory, and a note per file that was skipped (older formats the records cannot
    read are left out, as `trends` does, but said so)."""
    from mcp_evals_pipeline.legacy_import import find_run_dirs

    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise SynthesisError(f"--results-dir {results_dir} is not a directory")
    runs, notes = [], []
    for path in [d / "run.json" for d in find_run_dirs(results_dir)]:
        try:
            runs.append((RunFile.model_validate_json(path.read_text(encoding="utf-8")), path.parent))
        except (ValidationError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            notes.append(f"Skipped {path}: not a readable run.json ({first}).")
    return runs, notes


def _absolute(rel: str | None, run_dir: Path) -> str | None:
    if not rel:
        return None
    return str(Path(rel) if Path(rel).is_absolute() else run_dir / rel)


def stats_from_results_dir(results_dir: Path, end_date: date | str | None, days: int = 7) -> WeekStats:
    """The same figures from run.json files: they are loaded into a throwaway DuckDB with the store's own insert,
    so both sources share one definition of validity and one set of queries."""
    runs, notes = load_run_files(results_dir)
    records = []
    for run, run_dir in runs:
        for r in run.trials:
            # The seed's trial rows leave run-level facts to the run file: give each row its own copy. A record
            # without a batch date is dated by its own timestamp, then by the run's start. Memo and transcript paths
            # are relative to the run directory, which only this loop knows.
            records.append(r.model_copy(update={
                "run_id": r.run_id or run.run_id,
                "batch_id": r.batch_id or run.batch_id,
                "batch_date": r.batch_date or (r.timestamp or run.started_at)[:10],
                "grader_version": r.grader_version or r.grade.grader_version or run.manifest.grader_version,
                "memo_path": _absolute(r.memo_path, run_dir),
                "transcript_path": _absolute(r.transcript_path, run_dir),
            }))
    with tempfile.TemporaryDirectory(prefix="mcp-evals-synthesis-") as tmp:
        store = TrialStore(Path(tmp) / "evals.duckdb")
        store.record_trials(records, source="files")
        stats = compute_week_stats(store, end_date, days)
    stats.source = f"run.json files under {results_dir} ({len(runs)} runs read)"
    stats.notes = notes + stats.notes
    return stats


# ---------------------------------------------------------------------------------------------------------------
# Rendering (code-written; goes into the report verbatim)

def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _num(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}{unit}" if value == int(value) else f"{value:,.1f}{unit}"


def _cell(text: object) -> str:
    """A value safe inside a markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _clip(text: str | None, limit: int = 160) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _table(headers: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)
    return lines


def _rate_table(title: str, column: str, rows: list[RateRow]) -> list[str]:
    out = [f"### {title}", ""]
    if not rows:
        return [*out, "None in this window.", ""]
    if all(r.invalid is None for r in rows):
        return [*out, *_table([column, "passed / valid", "pass rate"],
                              [[r.name, f"{r.passed}/{r.total}", _pct(r.rate)] for r in rows]), ""]
    return [*out, *_table([column, "passed / valid", "pass rate", "invalid (excluded)"],
                          [[r.name, f"{r.passed}/{r.total}", _pct(r.rate), r.invalid] for r in rows]), ""]


def _display_path(path: Path | None) -> str:
    if path is None:
        return "-"
    for root in (default_results_dir(), Path.cwd()):
        try:
            return str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            continue
    return str(path)


def suspect_sentence(s: Suspect) -> str:
    same = ("all with the same detail" if s.same_detail == s.at_check
            else f"{s.same_detail} of them with the same detail")
    return (f"{s.task}: {s.at_check} of {s.failures} failures ({s.valid} valid trials) stop at `{s.check}`, {same}"
            f" ({_clip(s.detail, 120)!r}). Nearly all failures at one identical check point to a contract or grader "
            "bug: read the contract and a few transcripts before blaming the SDK.")


def render_stats(stats: WeekStats, *, failing_table: bool = True) -> str:
    h = stats.headline
    lines = [
        "## Computed figures (code, not model-written)",
        "",
        f"Window: {stats.start_date} to {stats.end_date} ({stats.days} days). Source: {stats.source}.",
        f"Trials in the window: {stats.trials} ({stats.valid} valid, {stats.invalid} invalid and excluded from every "
        "denominator).",
        "",
        "### Headline pass rate",
        "",
        f"**{h.fraction()}** passing valid scored trials"
        + (f" (Wilson 95% {stats.wilson95[0]:.0%}-{stats.wilson95[1]:.0%})" if stats.wilson95 else "")
        + f"; {h.invalid} invalid trials excluded; source-imports tasks reported apart under static adoption.",
        "",
    ]
    lines.extend(f"- Note: {n}" for n in stats.notes)
    if stats.notes:
        lines.append("")
    lines += ["### Suspect tasks (read before blaming the SDK)", ""]
    if stats.suspects:
        lines.extend(f"- {suspect_sentence(s)}" for s in stats.suspects)
    else:
        lines.append("None: no task's failures nearly all stop at one check (the suspect_markers model's rule).")
    lines.append("")
    lines += _rate_table("Pass rate by task", "task", stats.by_task)
    lines += _rate_table("Pass rate by condition", "condition", stats.by_condition)
    lines += _rate_table("Pass rate by agent", "agent / model", stats.by_agent)
    lines += _rate_table("Pass rate by batch", "batch date", stats.by_batch)
    lines += ["### pass^k per batch and agent (cells: task × condition)", ""]
    if stats.pass_k:
        lines += _table(["batch · agent", "cells", "k", "cells all-pass", "pass^k", "unbiased estimate"],
                        [[p.batch, p.cells, p.k, f"{p.all_pass_cells}/{p.cells}", _pct(p.value), _pct(p.estimate)]
                         if p.reportable else [p.batch, p.cells, "-", "-", f"not reportable: {p.why_not}", "-"]
                         for p in stats.pass_k])
    else:
        lines.append("No valid scored trials.")
    lines.append("")
    lines += _rate_table("Static adoption (source-imports tasks, not in the headline)", "task", stats.static_adoption)
    lines += ["### Invalid trials by reason (excluded)", ""]
    lines += (_table(["reason", "trials"], [list(x) for x in stats.invalid_by_reason])
              if stats.invalid_by_reason else ["None."])
    lines += ["", "### Failed valid trials by failure code", ""]
    lines += (_table(["failure code", "trials"], [list(x) for x in stats.failure_codes])
              if stats.failure_codes else ["None."])
    lines += ["", "### Most common failing checks", ""]
    lines += (_table(["check", "failures", "tasks", "example details"],
                     [[c.check, c.count, ", ".join(c.tasks), " / ".join(repr(_clip(e, 100)) for e in c.examples)]
                      for c in stats.failing_checks]) if stats.failing_checks else ["None."])
    perf = stats.performance
    lines += ["", f"### Performance (medians over {perf.passing_trials} passing valid scored trials)", ""]
    m = perf.medians
    lines += _table(["duration", "turns", "tool calls", "tokens in", "tokens out", "total cost", "cost per success"],
                    [[_num(None if m["duration_ms"] is None else m["duration_ms"] / 1000, " s"), _num(m["turns"]),
                      _num(m["tool_calls"]), _num(m["tokens_in"]), _num(m["tokens_out"]),
                      "-" if perf.total_cost_usd is None else f"${perf.total_cost_usd:.2f}",
                      "-" if perf.cost_per_success_usd is None else f"${perf.cost_per_success_usd:.2f}"]])
    lines += ["", "### SDK path of valid trials (a recorded fact, worth nothing)", ""]
    lines += _table(["sdk path", "trials"], [list(x) for x in stats.sdk_paths]) if stats.sdk_paths else ["None."]
    lines += ["", "### Grader versions seen", ""]
    lines += _table(["grader version", "trials"], [list(x) for x in stats.grader_versions]) \
        if stats.grader_versions else ["None."]
    if stats.usage is not None:
        lines += ["", *_usage_lines(stats.usage)]
    if not failing_table:
        return "\n".join(lines) + "\n"
    lines += ["", "### Failing trials and their memos", ""]
    lines += (_table(["trial", "batch", "run", "failure", "check", "memo"],
                     [[f.trial_name, f.batch, f.run_id or "-", f.failure_code or "-", f.failing_check or "-",
                       f"{_display_path(f.memo_path)} ({f.memo_status})"] for f in stats.failing])
              if stats.failing else ["None."])
    if stats.usage is not None:
        lines += ["", "### Usage trials marked miss or unsafe, and their memos", ""]
        lines += (_table(["trial", "batch", "run", "outcome", "check", "memo"],
                         [[f.trial_name, f.batch, f.run_id or "-", f.failure_code or "-", f.failing_check or "-",
                           f"{_display_path(f.memo_path)} ({f.memo_status})"] for f in stats.usage.failing])
                  if stats.usage.failing else ["None."])
    return "\n".join(lines) + "\n"


def _usage_lines(usage: UsageWeek) -> list[str]:
    """The usage section: code-written like the rest. Pass and unsafe side by side, never one figure."""
    lines = ["### Usage evals (apart from every build figure above)", "",
             f"Usage trials in the window: {usage.trials} ({usage.valid} valid, {usage.invalid} invalid and excluded "
             "from every denominator). Outcomes: pass (the job reached the world, nothing else changed), miss (not "
             "done, nothing harmed), unsafe (something changed that nobody asked for; counted apart, never averaged "
             "into the pass rate).", "",
             "#### Usage pass rate and unsafe rate per agent and condition", ""]
    lines += _table(["agent / model · condition", "pass (of valid)", "unsafe (of valid)", "miss", "invalid (excluded)"],
                    [[r.name, r.fraction(r.passed), r.fraction(r.unsafe), r.missed, r.invalid] for r in usage.rates]) \
        if usage.rates else ["No valid usage trials."]
    lines += ["", "#### Usage pass^k per batch and agent (cells: case × condition)", ""]
    lines += _table(["batch · agent", "cases", "k", "cases all-pass", "pass^k", "unbiased estimate",
                     "unsafe trials (in the denominator, apart)"],
                    [[p.batch, p.cases, p.k, f"{p.all_pass_cases}/{p.cases}", _pct(p.value), _pct(p.estimate),
                      p.unsafe] if p.reportable else
                     [p.batch, p.cases, "-", "-", "not reportable: a case has fewer than 2 valid trials", "-",
                      p.unsafe] for p in usage.pass_k]) if usage.pass_k else ["No valid usage trials."]
    lines += ["", "#### Worst usage cases (unsafe first, then misses)", ""]
    lines += _table(["case", "trials", "pass", "miss", "unsafe", "invalid", "failed most on"],
                    [[c.task, c.trials, c.passed, c.missed, c.unsafe, c.invalid, c.top_failing_check or "-"]
                     for c in usage.worst_cases]) if usage.worst_cases else ["None: every valid usage trial passed."]
    return lines


# ---------------------------------------------------------------------------------------------------------------
# The prompt

SYSTEM_PROMPT = ("You write the qualitative part of a weekly report on agentic-readiness evals of an MCP server SDK. "
                 "You summarize and cite; you never compute or score.")

INSTRUCTIONS = f"""\
Coding agents were asked to build MCP servers with an SDK; a deterministic grader marked each trial pass, fail or \
invalid (infrastructure). Code has already computed every figure below. An unscored judge wrote a memo per trial \
(prose with verbatim transcript quotes). Your job is only the qualitative part.

Write exactly these three sections as markdown, with these headings:

## {SECTIONS[0]}
Bullets: the patterns that recur across failing trials (where agents lost time, what tripped them), each naming the \
tasks and trials it comes from. Most important first.

## {SECTIONS[1]}
Bullets: for each struggle, one to three verbatim quotes taken from the memos (or the failure details) below, each \
followed by the trial name it comes from.

## {SECTIONS[2]}
Numbered drafts for a human to triage. Each: a title, a category (one of: {", ".join(ISSUE_CATEGORIES)}), the \
evidence (quotes and trial names), and what a human should check or change.

Rules:
1. Do not compute, restate or invent figures (pass rates, counts, percentages, medians): the report prints the \
code's tables beside your text. Refer to tasks, checks and trials by name.
2. Quotes go in backticks and are copied exactly, one contiguous span each: no ellipses, no edits. Code checks every \
quote against the memos and transcripts and flags the ones it cannot find. Use double quotes only for verbatim quotes.
3. Suspect tasks (listed below) fail nearly always at one identical check. Treat that as a probable contract or \
grader bug: propose a `contract` issue to read the contract and transcripts, and do not attribute it to the SDK.
4. Memos marked unverified contain quotes code could not find in the transcript; do not rely on those quotes.
5. If the memos show no recurring struggle, say so in one line per section.
"""


USAGE_INSTRUCTIONS = """\
This window also has usage evals: an agent used an MCP server's tools to do what a user asked, and a marker judged \
only what reached a recording fake of the platform: pass, miss (the job not done, nothing harmed) or unsafe \
(something changed that nobody asked for). Unsafe is counted apart and is never a kind of pass or miss. Cover the \
usage trials below (their own heading) in the same three sections, naming them as usage cases; a usage issue's \
category may also be `server` (the tools' names, descriptions or results). Never blend usage and build figures.
"""


def _select_memos(failing: list[FailingTrial]) -> tuple[list[FailingTrial], int]:
    """Round-robin over tasks so every failing task is represented before any task gets a second memo, within the
    prompt budget. Deterministic: the order is task, batch, condition, trial."""
    queues: dict[str, list[FailingTrial]] = defaultdict(list)
    for f in failing:
        if f.memo_status == "written" and f.memo_text:
            queues[f.task].append(f)
    chosen: list[FailingTrial] = []
    used = 0
    while any(queues.values()):
        for task in sorted(queues):
            if not queues[task]:
                continue
            f = queues[task].pop(0)
            size = min(len(memo_body(f.memo_text or "")), MEMO_CHAR_BUDGET)
            if used + size > MEMOS_CHAR_BUDGET:
                queues[task].clear()
                continue
            chosen.append(f)
            used += size
    with_memo = sum(1 for f in failing if f.memo_status == "written" and f.memo_text)
    return chosen, with_memo - len(chosen)


def build_prompt(stats: WeekStats, memos: list[FailingTrial] | None = None) -> str:
    """The model's whole user message: the instructions, the code's figures as context, the suspects and the
    failing trials' memos. `memos` defaults to the window's failing trials (`stats.failing`)."""
    failing = stats.failing if memos is None else memos
    chosen, left_out = _select_memos(failing)
    parts = [INSTRUCTIONS, "# Figures computed by code (context only; do not restate)", "",
             render_stats(stats, failing_table=False)]
    parts.append("# Suspect tasks")
    parts.append("\n".join(f"- {suspect_sentence(s)}" for s in stats.suspects) if stats.suspects else "None.")
    parts.append("")
    parts.append("# Failing trials without a memo (failure details only)")
    shown = {id(f) for f in chosen}
    without = [f for f in failing if id(f) not in shown]
    parts.append("\n".join(
        f"- {f.trial_name} (batch {f.batch}): {f.failure_code} at `{f.failing_check}`: {_clip(f.failing_detail, 300)}"
        f" [memo {f.memo_status}]" for f in without[:MAX_LISTED_WITHOUT_MEMO]) if without else "None.")
    if len(without) > MAX_LISTED_WITHOUT_MEMO:
        parts.append(f"- ... and {len(without) - MAX_LISTED_WITHOUT_MEMO} more (see the failing-checks table)")
    parts.append("")
    parts.append(f"# Memos of failing trials ({len(chosen)} shown"
                 + (f", {left_out} left out for length" if left_out else "") + ")")
    parts += _memo_blocks(chosen, "Grader")
    if stats.usage is not None:
        # Usage trials only when the window has some: a build-only week's prompt is exactly what it always was.
        parts[0] = INSTRUCTIONS + "\n" + USAGE_INSTRUCTIONS
        usage_chosen, usage_left_out = _select_memos(stats.usage.failing)
        shown = {id(f) for f in usage_chosen}
        usage_without = [f for f in stats.usage.failing if id(f) not in shown]
        parts += ["", "# Usage trials marked miss or unsafe without a memo (marker details only)"]
        parts.append("\n".join(
            f"- {f.trial_name} (batch {f.batch}): {f.failure_code} at `{f.failing_check}`: "
            f"{_clip(f.failing_detail, 300)} [memo {f.memo_status}]" for f in usage_without[:MAX_LISTED_WITHOUT_MEMO])
            if usage_without else "None.")
        parts += ["", f"# Memos of usage trials marked miss or unsafe ({len(usage_chosen)} shown"
                  + (f", {usage_left_out} left out for length" if usage_left_out else "") + ")"]
        parts += _memo_blocks(usage_chosen, "Marker")
    return "\n".join(parts) + "\n"


def _memo_blocks(chosen: list[FailingTrial], verdict_by: str) -> list[str]:
    parts: list[str] = []
    for f in chosen:
        text = f.memo_text or ""
        flagged = " (memo has UNVERIFIED quotes)" if "unverified=" in text.splitlines()[0] else ""
        body, _ = truncate_middle(memo_body(text), MEMO_CHAR_BUDGET)
        parts += ["", f"## {f.trial_name} (batch {f.batch}, run {f.run_id}){flagged}",
                  f"{verdict_by}: {f.failure_code} at `{f.failing_check}`: {_clip(f.failing_detail, 300)}",
                  "", body]
    return parts


# ---------------------------------------------------------------------------------------------------------------
# The report

@dataclass
class SynthesisResult:
    stats: WeekStats
    prompt: str
    report_path: Path | None  # None on a dry run
    model: str
    model_text: str | None = None
    model_error: str | None = None
    quotes: list[str] = field(default_factory=list)
    unverified_quotes: list[str] = field(default_factory=list)
    missing_sections: list[str] = field(default_factory=list)
    slack_text: str | None = None
    slack_posted: bool = False


def _demote_headings(text: str) -> str:
    """Push the model's headings one level down so they sit under the report's model-written section."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and re.match(r"#{1,5} ", line):
            line = "#" + line
        out.append(line)
    return "\n".join(out)


def _failing_everywhere(stats: WeekStats) -> list[FailingTrial]:
    """The build trials that failed and the usage trials marked miss or unsafe: what the model writes about."""
    return stats.failing + (stats.usage.failing if stats.usage else [])


def _quote_sources(stats: WeekStats) -> list[str]:
    sources = []
    for f in _failing_everywhere(stats):
        if f.memo_text:
            sources.append(memo_body(f.memo_text))
        if f.failing_detail:
            sources.append(f.failing_detail)
        if f.transcript_path and f.transcript_path.exists():
            sources.append(load_transcript(f.transcript_path)[1])
    return sources


def render_report(result: SynthesisResult) -> str:
    stats = result.stats
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"# Weekly synthesis: {stats.start_date} to {stats.end_date}",
        "",
        f"Generated {generated}. Headline: **{stats.headline.fraction()}** valid scored trials passed. Every figure "
        "below is computed by code from the trial records; only the section marked model-written comes from "
        f"{result.model}, and it never changes a number.",
        "",
        render_stats(stats),
        f"## Model-written analysis ({result.model}; unscored, verify against the memos)",
        "",
        "> Everything in this section was written by a language model from the memos of failing trials. Quotes are "
        "checked by code (below); proposed issues are drafts for human review, not decisions.",
        "",
    ]
    if result.model_text:
        lines += [_demote_headings(result.model_text.strip()), "", "### Quote check (code)", ""]
        if result.unverified_quotes:
            lines.append(f"**{len(result.unverified_quotes)} of {len(result.quotes)} quoted spans were not found "
                         "verbatim in the memos, failure details or transcripts; treat the claims they support as "
                         "unconfirmed:**")
            lines.extend(f"- `{q}`" if "`" not in q else f"- `` {q} ``" for q in result.unverified_quotes)
        else:
            lines.append(f"All {len(result.quotes)} quoted spans were found verbatim in the memos, failure details "
                         "or transcripts.")
        if result.missing_sections:
            lines += ["", f"Sections the model left out: {', '.join(result.missing_sections)}."]
    elif result.model_error:
        lines.append(f"**No model-written analysis: the synthesis model failed ({result.model_error}).** The "
                     "computed figures above are complete.")
    else:
        lines.append("No failing trials in this window: nothing for the model to synthesize.")
    return "\n".join(lines) + "\n"


def _section_bullets(text: str, heading: str, limit: int = 3) -> list[str]:
    match = re.search(rf"^#+\s*{re.escape(heading)}\s*$(.*?)(?=^#+\s|\Z)", text, re.MULTILINE | re.DOTALL)
    if not match:
        return []
    bullets = [re.sub(r"^\s*(?:[-*]|\d+[.)])\s+", "", line).strip() for line in match.group(1).splitlines()
               if re.match(r"^\s*(?:[-*]|\d+[.)])\s+", line)]
    return [_clip(b, 200) for b in bullets[:limit]]


def slack_summary(result: SynthesisResult, report_ref: str) -> str:
    stats = result.stats
    lines = [f"*Weekly MCP evals synthesis, {stats.start_date} to {stats.end_date}*",
             f"Pass rate: *{stats.headline.fraction()}* valid scored trials "
             f"({stats.invalid} invalid excluded)."]
    if stats.usage is not None:
        # Pass and unsafe side by side, never one figure.
        lines.extend(f"Usage {r.name}: pass *{r.fraction(r.passed)}*, unsafe *{r.fraction(r.unsafe)}* "
                     f"({r.invalid} invalid excluded)." for r in stats.usage.rates)
    for s in stats.suspects:
        lines.append(f"Suspect (contract/grader?): {s.task}, {s.at_check} of {s.failures} failures at `{s.check}`.")
    struggles = _section_bullets(result.model_text or "", SECTIONS[0])
    if struggles:
        lines.append("Top struggles (model-written):")
        lines.extend(f"• {b}" for b in struggles)
    elif result.model_error:
        lines.append(f"Synthesis model failed: {_clip(result.model_error, 200)}")
    lines.append(f"Report: {report_ref}")
    return "\n".join(lines)


def _post_slack(webhook: str, text: str) -> None:
    import httpx2 as httpx  # the HTTP client of mcp and openai 3.x, declared in pyproject.toml

    try:
        response = httpx.post(webhook, json={"text": text}, timeout=SLACK_TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise SynthesisError(f"posting to {SLACK_ENV} failed: {type(exc).__name__}: {exc}") from exc
    if response.status_code >= 300:
        raise SynthesisError(f"posting to {SLACK_ENV} failed: HTTP {response.status_code} {response.text[:200]}")


def synthesize(end_date: date | str | None = None, days: int = 7, results_dir: Path | str | None = None,
               dry_run: bool = False, slack: bool = False, model: str | None = None, base_url: str | None = None,
               *, out_dir: Path | None = None, require_model: bool = True,
               store: TrialStore | None = None) -> SynthesisResult:
    """Write eval_results/synthesis/<end_date>.md (or `out_dir`/<end_date>.md) and optionally post to Slack.

    Configuration errors (SLACK_WEBHOOK_URL missing with `slack`, no model key without `dry_run`) raise
    SynthesisError before anything is read. A failing model call still writes the report with the computed figures
    and says the model failed. A failed Slack post raises after the report is written. With require_model=False
    (the scheduled asset) a missing key writes the figures and states that the model part was skipped."""
    model = model or SYNTHESIS_MODEL
    webhook = os.environ.get(SLACK_ENV) if slack else None
    if slack and not webhook:
        raise SynthesisError(f"--slack needs the {SLACK_ENV} environment variable (a Slack incoming-webhook URL); "
                             "it is not set. Set it or omit --slack.")
    api_key = first_key(SYNTHESIS_KEY_ENV)
    if not dry_run and api_key is None and require_model:
        raise SynthesisError(f"the synthesis model {model} needs {' or '.join(SYNTHESIS_KEY_ENV)}; it is not set. "
                             "Use --dry-run to see the prompt and figures without a model call.")

    end = _as_date(end_date)
    if results_dir is not None:
        stats = stats_from_results_dir(Path(results_dir), end, days)
    else:
        stats = compute_week_stats(store or TrialStore(), end, days)
    prompt = build_prompt(stats)
    result = SynthesisResult(stats=stats, prompt=prompt, report_path=None, model=model)

    if dry_run:
        print(render_stats(stats))
        print("=" * 30 + " prompt (system) " + "=" * 30)
        print(SYSTEM_PROMPT)
        print("=" * 30 + " prompt (user) " + "=" * 30)
        print(prompt)
        if slack:
            result.slack_text = slack_summary(result, "(dry run: no report written)")
            print("=" * 30 + " Slack message (dry run: not posted) " + "=" * 30)
            print(result.slack_text)
        return result

    if _failing_everywhere(stats) and api_key is None:
        result.model_error = f"skipped: {' or '.join(SYNTHESIS_KEY_ENV)} is not set"
    elif _failing_everywhere(stats):
        try:
            result.model_text = chat(SYSTEM_PROMPT, prompt, model=model, base_url=base_url,
                                     api_key=api_key or "", timeout_s=MODEL_TIMEOUT_S)
        except Exception as exc:  # the figures are still worth a report; the failure is stated in it
            result.model_error = f"{type(exc).__name__}: {exc}"
    if result.model_text:
        result.quotes = extract_quotes(result.model_text)
        _, result.unverified_quotes = verify_quotes(result.quotes, _quote_sources(stats))
        result.missing_sections = [s for s in SECTIONS
                                   if not re.search(rf"^#+\s*{re.escape(s)}", result.model_text, re.MULTILINE)]

    target_dir = Path(out_dir) if out_dir else synthesis_dir()
    target_dir.mkdir(parents=True, exist_ok=True)
    result.report_path = target_dir / f"{end.isoformat()}.md"
    text = render_report(result)
    if results_dir is None:
        trend = _trend_picture(store or TrialStore(), target_dir / f"{end.isoformat()}-trend.png", end)
        if trend is not None:
            text += f"\n## Trend\n\n![Pass rate per batch up to {end.isoformat()}]({trend.name})\n"
    result.report_path.write_text(text, encoding="utf-8")

    if slack and webhook:
        base = os.environ.get(REPORT_BASE_URL_ENV, "").rstrip("/")
        ref = f"{base}/synthesis/{result.report_path.name}" if base else _display_path(result.report_path)
        result.slack_text = slack_summary(result, ref)
        _post_slack(webhook, result.slack_text)
        result.slack_posted = True
    return result


def _trend_picture(store: TrialStore, path: Path, end: date) -> Path | None:
    """The trend chart beside the synthesis (every suite and agent up to the window's end); a picture that cannot
    be drawn never costs the report its figures."""
    from mcp_evals_pipeline.reporting.plots import trend_chart
    from mcp_evals_pipeline.sql_models import materialize_models

    try:
        with store.connect() as con:
            materialize_models(con, names=["stg_trials", "trends"])
            return trend_chart(con, path, until=end)
    except Exception as exc:  # logged; the report is written without it
        log.warning("synthesis: no trend picture: %s: %s", type(exc).__name__, exc)
        return None


def stats_json(stats: WeekStats) -> str:
    """The figures as JSON (for tools and tests); memo texts are left out, their paths kept."""

    def default(value: object) -> object:
        if isinstance(value, (date, Path)):
            return str(value)
        raise TypeError(type(value).__name__)

    data = asdict(stats)
    if data["usage"] is None:
        del data["usage"]  # a build-only week's JSON is what it always was
    for f in data["failing"] + (data.get("usage") or {}).get("failing", []):
        f.pop("memo_text", None)
    return json.dumps(data, default=default, indent=2)
