"""SDKs on one contract: the `sdk_comparison` model (dbt_like_sql/sdk_comparison.sql) read for two named suites, in
the order a reader names them, and rendered the one way the scorecard and `mcp-evals compare --suite A --suite B`
print it: per agent x model x condition, the pool over the shared tasks, then each shared task.

The model orders each pair by suite name; asking for the other order swaps the sides, negates the difference and
mirrors its interval (Newcombe's interval of b - a is minus that of a - b, bounds exchanged).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from mcp_evals_pipeline.reporting.markdown import md_code, md_text

MODEL = "sdk_comparison"
POOLED = "*"  # the model's task_slug of the pool over the shared tasks


@dataclass(frozen=True)
class SideFigures:
    task: str | None
    passed: int
    valid: int
    trials: int
    invalid: int
    rate: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class SlugComparison:
    agent_runner: str
    agent_model: str
    condition: str
    task_slug: str  # POOLED for the pool
    paired_tasks: int
    a: SideFigures
    b: SideFigures
    delta: float | None  # b - a
    low: float | None
    high: float | None
    recorded_sessions: bool


def _side(row: dict[str, Any], s: str) -> SideFigures:
    def num(name: str) -> float | None:
        value = row[f"{name}_{s}"]
        return None if value is None else float(value)

    return SideFigures(row[f"task_{s}"], int(row[f"passed_{s}"]), int(row[f"valid_scored_{s}"]),
                       int(row[f"trials_{s}"]), int(row[f"invalid_{s}"]),
                       num("pass_rate"), num("wilson_low"), num("wilson_high"))


def suite_comparison(con: duckdb.DuckDBPyConnection, suite_a: str, suite_b: str, agent_runner: str | None = None,
                     agent_model: str | None = None) -> list[SlugComparison]:
    """Every row of the model for the two suites (a first, as named), optionally for one agent and model."""
    swapped = suite_a > suite_b
    first, second = sorted((suite_a, suite_b))
    sql = f"SELECT * FROM {MODEL} WHERE suite_a = ? AND suite_b = ?"
    params: list[object] = [first, second]
    if agent_runner is not None:
        sql, params = sql + " AND agent_runner = ? AND agent_model = ?", [*params, agent_runner,
                                                                            agent_model or "-"]
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    found = []
    for values in cursor.fetchall():
        row = dict(zip(names, values, strict=True))
        a, b = _side(row, "a"), _side(row, "b")
        delta, low, high = row["delta"], row["newcombe_low"], row["newcombe_high"]
        if swapped:
            a, b = b, a
            # + 0.0: a tie read the other way round is 0, not -0
            delta, low, high = (None if delta is None else -delta + 0.0, None if high is None else -high + 0.0,
                                None if low is None else -low + 0.0)
        found.append(SlugComparison(row["agent_runner"], row["agent_model"], row["condition"], row["task_slug"],
                                    int(row["paired_tasks"]), a, b, delta, low, high, bool(row["recorded_sessions"])))
    return found


def as_dicts(rows: list[SlugComparison]) -> list[dict[str, Any]]:
    """The rows as JSON-ready dicts (`compare --suite A --suite B --json`)."""
    def side(s: SideFigures) -> dict[str, Any]:
        return {"task": s.task, "passed": s.passed, "valid": s.valid, "trials": s.trials, "invalid": s.invalid,
                "rate": s.rate, "low": s.low, "high": s.high}

    return [{"agent": f"{c.agent_runner}/{c.agent_model}", "condition": c.condition, "taskSlug": c.task_slug,
             "pairedTasks": c.paired_tasks, "a": side(c.a), "b": side(c.b),
             "change": None if c.delta is None else {"delta": c.delta, "low": c.low, "high": c.high},
             "recordedSessions": c.recorded_sessions} for c in rows]


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.0f}%"


def _pts(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.0f} pts"


def _figures(side: SideFigures) -> str:
    interval = f" (95% {_pct(side.low)}-{_pct(side.high)})" if side.low is not None else ""
    invalid = f", {side.invalid} invalid" if side.invalid else ""
    return f"{side.passed}/{side.valid} pass, {_pct(side.rate)}{interval}; {side.trials} trials{invalid}"


def _change(c: SlugComparison) -> str:
    if c.delta is None:
        return "-"
    return f"{_pts(c.delta)} (95% {_pts(c.low)} to {_pts(c.high)})"


def render_lines(rows: list[SlugComparison], suite_a: str, suite_b: str) -> list[str]:
    """The comparison as Markdown lines (no heading): a pooled line per agent x condition, then a task table."""
    if not rows:
        return [f"No agent ran a task of {md_code(suite_a)} and one of {md_code(suite_b)} sharing its assignment "
                "(the task id without its suite and version prefix) under the same condition: nothing to compare."]
    lines = [f"Each suite's newest version of each shared task, over every batch that ran it; a = {md_code(suite_a)}, "
             f"b = {md_code(suite_b)}; change = b - a with Newcombe's 95% interval. Never pooled across agents or "
             "models; invalid trials leave every rate.", ""]
    for c in (r for r in rows if r.task_slug == POOLED):
        agent = f"{c.agent_runner}/{c.agent_model}" + (" (recorded sessions, not an agent)"
                                                        if c.recorded_sessions else "")
        lines.append(f"- {md_text(agent)} {md_code(c.condition)}, {c.paired_tasks} shared task(s): "
                     f"a {_figures(c.a)} | b {_figures(c.b)} | change {_change(c)}")
    lines += ["", "| agent | condition | assignment | a task | a | b task | b | change |",
              "|---|---|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(md_text(x) for x in (
        f"{c.agent_runner}/{c.agent_model}", c.condition, c.task_slug, c.a.task or "-", _figures(c.a),
        c.b.task or "-", _figures(c.b), _change(c))) + " |" for c in rows if c.task_slug != POOLED]
    return lines
