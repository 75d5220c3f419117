"""The SDK release a batch ran on, and whether the pass rate moved across a release boundary beyond its noise.

A batch's release, per suite (`releases`): the SDK version its trials installed (`sdk_version`, counted only where
`sdk_package` is the suite's `sdkPackage`; the version most of them installed, a tie the greater string), else
the registry's latest recorded at batch time (`sdk_registry_latest`, what a release sensor's batch carries when no
trial got as far as installing). A batch-level fact on purpose: a trial that failed before installing anything
records no version, and filing trials by their own version would drop exactly those failures from a release.

A boundary (`boundaries`), per suite x condition (and `*`, all conditions) x agent runner x model: the last batch
before the release changed against the first batch after it, read from the `trends` model (one row per batch of
the series). Adjacent batches and not all batches of each version: a pool over weeks would mix in whatever else
drifted across them (task versions, grader, the model behind an alias), while two adjacent batches differ by as
little as the calendar allows; the price is a wider interval, which the verdict carries. The change is the
difference of pass rates with Newcombe's 95% interval (dbt_like_sql/macros/newcombe.sql, the interval
sdk_comparison reports); it moved "beyond its noise" when that interval excludes 0. A boundary where the task set
or the grader changed too is marked: the release is then not the only difference. Recorded sessions (replay) never
enter: they prove the harness, not an SDK (models.real_model_sql).

One function each, read by the scorecard (reporting/scorecard.py), the weekly synthesis (synthesis/figures.py) and
`mcp-evals compare --sdk A B` (reporting/compare.py): every reader names the same release for a batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

import duckdb

from mcp_evals_pipeline.models import agent_label, real_model_sql
from mcp_evals_pipeline.reporting.markdown import md_code, md_text
from mcp_evals_pipeline.sql_models import adhoc, scoped_select
from mcp_evals_pipeline.tasks.suites import SuiteError, load_suites


def _suite_packages() -> str:
    """suite -> its SDK package, as SQL VALUES (names of tasks/suites.json: quotes doubled)."""
    try:
        suites = load_suites()
    except SuiteError:
        suites = {}
    rows = [f"('{name.replace(chr(39), chr(39) * 2)}', '{s.sdk_package.replace(chr(39), chr(39) * 2)}')"
            for name, s in suites.items()]
    return ", ".join(rows) or "(NULL, NULL)"


def releases_sql(trials: str = "trials") -> str:
    """A SELECT of (batch_id, suite, release, installed, installed_trials, trials, registry_latest) over the
    relation `trials`: the release each batch ran on, per suite (the module's docstring says which version)."""
    return f"""
SELECT b.batch_id, b.suite, coalesce(i.sdk_version, b.registry_latest) AS release,
       i.sdk_version IS NOT NULL AS installed, coalesce(i.n, 0) AS installed_trials, b.trials, b.registry_latest
FROM (SELECT batch_id, suite, count(*) AS trials, max(sdk_registry_latest) AS registry_latest
      FROM {trials} WHERE suite IS NOT NULL AND batch_id IS NOT NULL GROUP BY batch_id, suite) AS b
LEFT JOIN (
    SELECT t.batch_id, t.suite, t.sdk_version, count(*) AS n
    FROM {trials} AS t JOIN (VALUES {_suite_packages()}) AS p(suite, package)
      ON p.suite = t.suite AND p.package = t.sdk_package
    WHERE t.sdk_version IS NOT NULL AND t.batch_id IS NOT NULL
    GROUP BY t.batch_id, t.suite, t.sdk_version
    QUALIFY row_number() OVER (PARTITION BY t.batch_id, t.suite ORDER BY count(*) DESC, t.sdk_version DESC) = 1
) AS i ON i.batch_id = b.batch_id AND i.suite = b.suite
"""


@dataclass(frozen=True)
class Release:
    suite: str
    release: str | None
    installed: bool  # the version the trials installed (else the registry's latest at batch time)
    installed_trials: int
    trials: int
    registry_latest: str | None

    def describe(self, package: str) -> str:
        if self.release is None:
            return f"{package} release unknown (no trial recorded an installed version, no registry lookup)"
        source = (f"installed in {self.installed_trials} of {self.trials} trial(s)" if self.installed else
                  f"the registry's latest at batch time; no trial recorded an installed {package}")
        registry = (f"; registry latest {self.registry_latest}"
                    if self.installed and self.registry_latest and self.registry_latest != self.release else "")
        return f"{package} {self.release} ({source}{registry})"


def _dicts(cursor: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def batch_releases(con: duckdb.DuckDBPyConnection, batch_id: str) -> list[Release]:
    """The release `batch_id` ran on, per suite of its trials."""
    rows = _dicts(con.execute(f"SELECT * FROM ({releases_sql('(SELECT * FROM trials WHERE batch_id = $batch)')}) "
                              "ORDER BY suite", {"batch": batch_id}))
    return [Release(r["suite"], r["release"], bool(r["installed"]), int(r["installed_trials"]), int(r["trials"]),
                    r["registry_latest"]) for r in rows]


def held_releases(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """suite -> the releases its batches ran on, in the order they first ran."""
    rows = con.execute(f"""SELECT r.suite, r.release, min(t.batch_date) AS first
                           FROM ({releases_sql()}) AS r JOIN trials AS t USING (batch_id, suite)
                           WHERE r.release IS NOT NULL GROUP BY ALL ORDER BY r.suite, first, r.release""").fetchall()
    held: dict[str, list[str]] = {}
    for suite, release, _ in rows:
        held.setdefault(suite, []).append(release)
    return held


@dataclass(frozen=True)
class Side:
    batch_id: str
    batch_date: str
    release: str
    passed: int
    valid: int
    rate: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Boundary:
    suite: str
    condition: str  # '*': all conditions of the batch
    agent_runner: str
    agent_model: str | None
    before: Side  # the last batch on the earlier release
    after: Side  # the first batch on the next one
    delta: float | None  # after - before
    low: float | None  # Newcombe's 95% interval of the delta
    high: float | None
    task_set_changed: bool
    grader_changed: bool

    @property
    def beyond_noise(self) -> bool:
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)

    @property
    def agent(self) -> str:
        return agent_label(self.agent_runner, self.agent_model)

    def verdict(self) -> str:
        if self.delta is None:
            return "no figure (a side has no valid scored trial)"
        moved = "moved beyond its noise" if self.beyond_noise else "within its noise"
        return f"{_pts(self.delta)} (95% {_pts(self.low)} to {_pts(self.high)}): {moved}"


_BOUNDARIES = """
WITH releases AS ({releases}),
series AS (
    SELECT t.*, r.release
    FROM ({trends}) AS t JOIN releases AS r ON r.batch_id = t.batch_id AND r.suite = t.suite
    WHERE r.release IS NOT NULL AND {real}
),
steps AS (
    SELECT *,
           lag(batch_id) OVER s AS b_batch_id, lag(batch_date) OVER s AS b_batch_date,
           lag(release) OVER s AS b_release, lag(passed) OVER s AS b_passed,
           lag(valid_scored) OVER s AS b_valid_scored, lag(pass_rate) OVER s AS b_pass_rate,
           lag(wilson_low) OVER s AS b_wilson_low, lag(wilson_high) OVER s AS b_wilson_high,
           lag(task_set) OVER s AS b_task_set, lag(grader_versions) OVER s AS b_grader_versions
    FROM series
    WINDOW s AS (PARTITION BY suite, agent_runner, agent_model, condition ORDER BY batch_date, batch_id)
)
SELECT *,
       {{{{ newcombe_low('b_pass_rate', 'b_wilson_low', 'b_wilson_high',
                         'pass_rate', 'wilson_low', 'wilson_high') }}}} AS d_low,
       {{{{ newcombe_high('b_pass_rate', 'b_wilson_low', 'b_wilson_high',
                          'pass_rate', 'wilson_low', 'wilson_high') }}}} AS d_high
FROM steps
WHERE b_release IS NOT NULL AND b_release <> release
ORDER BY batch_date, batch_id, suite, agent_runner, agent_model, condition = '*' DESC, condition
"""


def _side(row: dict[str, Any], prefix: str) -> Side:
    """One side of a boundary row: the `b_` columns are the batch before (lagged), the bare ones the batch after."""
    def num(column: str) -> float | None:
        value = row[column]
        return None if value is None else float(value)

    p = prefix
    return Side(str(row[f"{p}batch_id"]), str(row[f"{p}batch_date"]), str(row[f"{p}release"]),
                int(row[f"{p}passed"]), int(row[f"{p}valid_scored"]), num(f"{p}pass_rate"), num(f"{p}wilson_low"),
                num(f"{p}wilson_high"))


def boundaries(con: duckdb.DuckDBPyConnection, through: str | date | None = None,
               agent: tuple[str, str | None] | None = None) -> list[Boundary]:
    """Every release boundary of every real model's series (or of one agent runner and model's), over the batches
    dated up to `through` (None: all), so a report re-rendered later shows what was known at its batch."""
    # a checked ISO date inlined: the filter appears in three subqueries
    dated = f"batch_date <= DATE '{date.fromisoformat(str(through)[:10]).isoformat()}'" if through else "true"
    scoped = f"(SELECT * FROM trials WHERE {dated})"  # a batch's release is all its trials' fact, any agent's
    series = dated + (" AND agent_runner = $runner AND agent_model IS NOT DISTINCT FROM $model" if agent else "")
    sql = _BOUNDARIES.format(releases=releases_sql(scoped), trends=scoped_select("trends", series),
                             real=real_model_sql("t.agent_runner"))
    found = []
    for r in _dicts(con.execute(adhoc(sql), {"runner": agent[0], "model": agent[1]} if agent else None)):
        before, after = _side(r, "b_"), _side(r, "")
        delta = None if before.rate is None or after.rate is None else after.rate - before.rate
        found.append(Boundary(
            r["suite"], r["condition"], r["agent_runner"], r["agent_model"], before, after, delta,
            None if r["d_low"] is None else float(r["d_low"]), None if r["d_high"] is None else float(r["d_high"]),
            r["task_set"] != r["b_task_set"], r["grader_versions"] != r["b_grader_versions"]))
    return found


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.0f}%"


def _pts(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.0f} pts"


def render_boundary(b: Boundary, with_agent: bool = True) -> str:
    """One Markdown line: the two batches, their releases and rates, the change and its verdict."""
    def side(s: Side) -> str:
        return f"{md_text(s.release)} (batch {md_text(s.batch_id)}: {s.passed}/{s.valid}, {_pct(s.rate)})"

    caveats = [what for what, changed in (("the task set", b.task_set_changed), ("the grader", b.grader_changed))
               if changed]
    also = f"; {' and '.join(caveats)} changed too: not the release alone" if caveats else ""
    agent = f"{md_text(b.agent)} " if with_agent else ""
    condition = "all conditions" if b.condition == "*" else md_code(b.condition)
    return f"- {md_code(b.suite)} {agent}{condition}: {side(b.before)} -> {side(b.after)}: {b.verdict()}{also}"
