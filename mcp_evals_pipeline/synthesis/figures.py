"""The synthesis's figures: the SQL models evaluated over a week's trials (from the store, or from the run.json
files of a results directory), and the records they fill."""

from __future__ import annotations

import logging
import re
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
from pydantic import ValidationError

from mcp_evals_pipeline.contracts.records import RunFile
from mcp_evals_pipeline.judge import (
    memo_status,
)
from mcp_evals_pipeline.models import JUDGE_KEY_ENV, NOT_REAL_MODELS, agent_label, agent_label_sql, real_model_sql
from mcp_evals_pipeline.paths import results_dir as default_results_dir
from mcp_evals_pipeline.paths import runs_dir
from mcp_evals_pipeline.reporting.release_boundary import Boundary, boundaries, releases_sql
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
    ran: list[tuple[str, str]] = field(default_factory=list)  # (case, batch date) of every valid usage trial


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
    # The headlines: one per suite x condition (as gate.headlines judges a batch), never pooled over SDKs.
    by_suite: list[RateRow] = field(default_factory=list)
    # (task, batch date) of every valid build trial: which tasks ran in which batches, for the findings' statuses
    # (a finding whose tasks did not run is not-observed, not resolved).
    ran: list[tuple[str, str]] = field(default_factory=list)
    releases: SdkReleases | None = None  # None: computed from no store (a WeekStats built by hand)


@dataclass
class SdkReleases:
    """The SDK release each batch of the window ran on (per suite) and the release boundaries inside the window, per
    suite x condition x real agent/model (reporting/release_boundary.py: the one rule the scorecard uses too)."""
    batches: list[tuple[str, str, str]]  # batch id, suite, release
    boundaries: list[Boundary]


def _sdk_releases(con: duckdb.DuckDBPyConnection, w: Window) -> SdkReleases:
    rows = con.execute(f"""SELECT DISTINCT r.batch_id, r.suite, r.release
                           FROM ({releases_sql()}) AS r JOIN trials AS t USING (batch_id, suite)
                           WHERE r.release IS NOT NULL AND {w.where.replace('batch_date', 't.batch_date')
                                                             .replace('recorded_at', 't.recorded_at')
                                                             .replace('agent_runner', 't.agent_runner')}
                           ORDER BY 1, 2""", w.params).fetchall()
    chosen = [b for b in boundaries(con, w.end) if w.start.isoformat() <= b.after.batch_date[:10]
              and (not w.agents or b.agent_runner in w.agents)]  # boundaries() holds real models only
    return SdkReleases([(str(b), str(s), str(r)) for b, s, r in rows], chosen)


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
_AGENT = agent_label_sql()
_AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

# How the per-run SQL models are regrouped for a week (column -> expression, see sql_models.scoped_select). A model
# grouped by run_id computes one figure per value given to run_id; batch_id joins the pooling where a model ranks
# batches (suspect markers: the whole window is one look at the task).
POOLED = {"run_id": "'window'", "batch_id": "'window'", "agent_runner": "'*'", "agent_model": "NULL::VARCHAR"}
BY_AGENT = {"run_id": _AGENT}
BY_SUITE = {"run_id": "coalesce(suite, '(none)')"}
BY_BATCH = {"run_id": f"CAST({_WINDOW_DATE} AS VARCHAR)"}
BY_BATCH_AND_AGENT = {"run_id": f"CAST({_WINDOW_DATE} AS VARCHAR) || ' · ' || {_AGENT}"}


@dataclass(frozen=True)
class Window:
    """The trials every figure reads: those dated in [start, end] of the agents chosen. By default every real
    model (models.is_real_model): an agent that plays canned sessions (replay) enters only when named in `agents`,
    so one forgotten `--agent` never puts recorded sessions into a weekly number."""
    start: date
    end: date
    agents: tuple[str, ...] = ()  # () = every real model

    def __post_init__(self) -> None:
        bad = [a for a in self.agents if not _AGENT_NAME.fullmatch(a)]
        if bad:
            raise SynthesisError(f"--agent {bad[0]!r} is not an agent runner name")

    @property
    def agent_filter(self) -> str:
        """A SQL predicate on agent_runner (names checked above: safe to inline, and no `?` to pass)."""
        if not self.agents:
            return real_model_sql()
        return f"agent_runner IN ({', '.join(repr(a) for a in self.agents)})"

    @property
    def where(self) -> str:
        return f"{_IN_WINDOW} AND {self.agent_filter}"

    @property
    def params(self) -> list[str]:
        return [self.start.isoformat(), self.end.isoformat()]


_ROWS_SQL = """
SELECT t.*, {run_dir} AS run_dir, CAST({window_date} AS VARCHAR) AS window_date
FROM trials t {join}
WHERE {in_window}
ORDER BY t.task, window_date, t.condition, t.trial
"""


def _dicts(cursor: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _fetch_rows(con: duckdb.DuckDBPyConnection, w: Window) -> list[dict[str, Any]]:
    """The window's trials, one dict each: for the listings (failing trials, their checks and memos), not figures."""
    params = w.params
    window = {"window_date": "coalesce(t.batch_date, CAST(timezone('UTC', t.recorded_at) AS DATE))",
              "in_window": w.where.replace("batch_date", "t.batch_date").replace("recorded_at", "t.recorded_at")
                                  .replace("agent_runner", "t.agent_runner")}
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


def _model(con: duckdb.DuckDBPyConnection, name: str, grouping: dict[str, str], w: Window,
           outer: str = "SELECT * FROM m") -> list[dict[str, Any]]:
    """SQL model `name` over the window's trials, regrouped; `outer` selects from it as `m`."""
    sql = f"WITH m AS ({scoped_select(name, w.where, replace=grouping)})\n{outer}"
    return _dicts(con.execute(sql, w.params))


def _rate(row: dict[str, Any], name: str | None = None) -> RateRow:
    return RateRow(name or str(row["run_id"]), int(row["passed"]), int(row["valid_scored"]), int(row["invalid"]))


def _pass_k(con: duckdb.DuckDBPyConnection, w: Window) -> list[PassK]:
    rows = _model(con, "pass_k", BY_BATCH_AND_AGENT, w,
                  "SELECT * FROM m WHERE condition = '*' ORDER BY run_id")
    curve = {(r["run_id"], int(r["k"])): float(r["value"])
             for r in _model(con, "pass_k_curve", BY_BATCH_AND_AGENT, w,
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


def _performance(con: duckdb.DuckDBPyConnection, w: Window) -> Performance:
    found = _model(con, "performance", POOLED, w, "SELECT * FROM m WHERE condition = '*'")
    if not found:
        return Performance(0, dict.fromkeys(("duration_ms", "turns", "tool_calls", "tokens_in", "tokens_out")),
                           None, None)
    row = found[0]
    medians = {column: None if row[f"median_{column}"] is None else float(row[f"median_{column}"])
               for column in ("duration_ms", "turns", "tool_calls", "tokens_in", "tokens_out")}
    return Performance(int(row["passed"]), medians, row["total_cost_usd"], row["cost_per_success"])


def _suspects(con: duckdb.DuckDBPyConnection, w: Window) -> list[Suspect]:
    rows = _model(con, "suspect_markers", POOLED, w, "SELECT * FROM m WHERE suspect ORDER BY task")
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
                       days: int = 7, agents: tuple[str, ...] = ()) -> WeekStats:
    """Every figure of the report, over trials whose batch date (else record date) lies in the `days` days ending
    on `end_date`, inclusive, of `agents` (default: every real model; see Window): the SQL models regrouped for
    the window. Invalid trials leave every denominator; source-imports tasks leave the headline."""
    if days < 1:
        raise ValueError("days must be >= 1")
    if isinstance(con_or_store, TrialStore):
        with con_or_store.connect() as con:
            stats = compute_week_stats(con, end_date, days, agents)
        stats.source = f"database {con_or_store.path}"
        return stats
    con = con_or_store
    end = _as_date(end_date)
    start = end - timedelta(days=days - 1)
    w = Window(start, end, tuple(agents))
    every_row = _fetch_rows(con, w)
    # The build figures read build trials only (as the build SQL models do); usage trials get a section of their own.
    rows = [r for r in every_row if (r.get("kind") or "build") == "build"]
    usage_rows = [r for r in every_row if r.get("kind") == "usage"]
    valid = [r for r in rows if r["valid"]]
    scored_valid = [r for r in valid if r["scored_for_pass_rate"]]
    failed = [r for r in valid if not r["contract_pass"]]

    def model(name: str, grouping: dict[str, str], outer: str = "SELECT * FROM m") -> list[dict[str, Any]]:
        return _model(con, name, grouping, w, outer)

    pooled = model("pass_rate", POOLED, "SELECT * FROM m ORDER BY condition")
    head = next((r for r in pooled if r["condition"] == "*"), None)
    headline = _rate(head, "valid scored trials") if head else RateRow("valid scored trials", 0, 0)
    notes = _left_out(con, w)
    conditions = sorted({r["condition"] for r in scored_valid})
    if len(conditions) > 1:
        notes.append(f"The headline pools {len(conditions)} conditions ({', '.join(conditions)}); compare them in "
                     "the per-condition table, not through the headline.")
    pooled_agents = sorted({agent_label(r["agent_runner"], r["agent_model"]) for r in scored_valid})
    if len(pooled_agents) > 1:
        notes.append(f"The headline pools {len(pooled_agents)} agent models ({', '.join(pooled_agents)}).")
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
        pass_k=_pass_k(con, w),
        performance=_performance(con, w),
        grader_versions=sorted(versions.items()),
        suspects=_suspects(con, w),
        failing=_failing_trials(failed),
        notes=notes,
        usage=_usage_week(con, w, usage_rows) if usage_rows else None,
        by_suite=[_rate(r, f"{r['run_id']} · {r['condition']}") for r in model(
            "pass_rate", BY_SUITE, "SELECT * FROM m WHERE condition <> '*' ORDER BY run_id, condition")],
        ran=sorted({(r["task"], r["window_date"]) for r in valid}),
        releases=_sdk_releases(con, w),
    )


WORST_CASES = 10


def _left_out(con: duckdb.DuckDBPyConnection, w: Window) -> list[str]:
    """What the window holds that the figures leave out (agents not chosen), and recorded sessions let in by name:
    each said once, as a note."""
    named = sorted(set(w.agents) & set(NOT_REAL_MODELS))
    notes = [f"Includes recorded sessions ({', '.join(named)}, named with --agent): figures of the harness, not of "
             "an SDK."] if named else []
    rows = con.execute(f"SELECT agent_runner, agent_model, count(*) FROM trials WHERE {_IN_WINDOW} "
                       f"AND NOT ({w.agent_filter}) GROUP BY ALL ORDER BY 1, 2", w.params).fetchall()
    if not rows:
        return notes
    left = ", ".join(f"{agent_label(runner, model)}: {n} trial(s)" for runner, model, n in rows)
    recorded = sorted({runner for runner, _, _ in rows if runner in NOT_REAL_MODELS})
    why = (f" ({', '.join(recorded)} plays recorded sessions, not a model; name it with --agent to include it)"
           if recorded and not w.agents else "")
    return [*notes, f"Left out of every figure: {left}{why}."]


def _usage_week(con: duckdb.DuckDBPyConnection, w: Window,
                rows: list[dict[str, Any]]) -> UsageWeek:
    """The usage_* SQL models over the window: rates per agent × condition, pass^k per batch and agent, the cases
    with the most unsafe trials and misses, and the trials marked miss or unsafe."""
    rates = [UsageRate(f"{r['run_id']} · {r['condition']}", int(r["passed"]), int(r["missed"]), int(r["unsafe"]),
                       int(r["valid_scored"]), int(r["invalid"]))
             for r in _model(con, "usage_rates", BY_AGENT, w,
                             "SELECT * FROM m WHERE condition <> '*' ORDER BY run_id, condition")]
    pass_k = [UsagePassK(r["run_id"], bool(r["reported"]), int(r["cases"]), None if r["k"] is None else int(r["k"]),
                         int(r["all_pass_cases"]), r["pass_k"], r["pass_k_estimate"], int(r["unsafe"]))
              for r in _model(con, "usage_pass_k", BY_BATCH_AND_AGENT, w,
                              "SELECT * FROM m WHERE condition = '*' AND task = '*' AND cases > 0 ORDER BY run_id")]
    # Pooled over the window's runs: a case's counts over every agent (the rates above keep agents apart).
    worst = [UsageCase(r["task"], int(r["trials"]), int(r["passed"]), int(r["missed"]), int(r["unsafe"]),
                       int(r["invalid"]), r["top_failing_check"])
             for r in _model(con, "usage_cases", POOLED, w,
                             "SELECT task, sum(trials) AS trials, sum(passed) AS passed, sum(missed) AS missed, "
                             "sum(unsafe) AS unsafe, sum(invalid) AS invalid, mode(top_failing_check) AS "
                             "top_failing_check FROM m GROUP BY task HAVING sum(missed) + sum(unsafe) > 0 "
                             f"ORDER BY sum(unsafe) DESC, sum(missed) DESC, task LIMIT {WORST_CASES}")]
    valid = [r for r in rows if r["valid"]]
    return UsageWeek(trials=len(rows), valid=len(valid), invalid=len(rows) - len(valid), rates=rates,
                     pass_k=pass_k, worst_cases=worst,
                     failing=_failing_trials([r for r in valid if not r["contract_pass"]]),
                     ran=sorted({(r["task"], r["window_date"]) for r in valid}))


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


def stats_from_results_dir(results_dir: Path, end_date: date | str | None, days: int = 7,
                           agents: tuple[str, ...] = ()) -> WeekStats:
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
        stats = compute_week_stats(store, end_date, days, agents)
    stats.source = f"run.json files under {results_dir} ({len(runs)} runs read)"
    stats.notes = notes + stats.notes
    return stats
