"""The per-run scorecard, report.md, in the seed harness's format plus our own sections.

Every figure is read from the SQL model tables (dbt_like_sql/*.sql); this module only formats them, so the report,
the UI and the weekly synthesis can never disagree about a number. The seed's sections come first and keep its exact
wording (imported runs render the same figures as their report.legacy.md); our additions (suspect markers, static
adoption, skill deltas, the pass^1..k curve, per-condition lines) appear only when they have content.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import duckdb

from mcp_evals_pipeline.contracts.transcript import final_reply
from mcp_evals_pipeline.judge import memo_body, memo_status
from mcp_evals_pipeline.models import CALIBRATION, agent_label, is_real_model
from mcp_evals_pipeline.paths import runs_dir
from mcp_evals_pipeline.reporting import release_boundary, sdk_comparison, stats
from mcp_evals_pipeline.reporting.markdown import md_code, md_prose, md_text
from mcp_evals_pipeline.sql_models import scoped_select
from mcp_evals_pipeline.trial_dir import TRANSCRIPT_FILE, WORLD_FILE, run_file
from mcp_evals_pipeline.trials import trial_key
from mcp_evals_pipeline.upstreams.base import WRITE_METHODS

# The earlier harness titled its scorecards this way; imported runs keep it so old and new reports read alike.
LEGACY_TITLE = "mcp-use SDK agentic eval"
TITLE = "MCP server SDK agentic eval"
ALL = "*"  # the models' condition for "all conditions of the run"
MEMO_CHARS = 300
NOTHING_NOTABLE = "nothing notable."

MODEL_TABLES = (
    "pass_rate", "cell_matrix", "pass_k", "pass_k_curve", "skill_deltas", "skill_deltas_by_task", "performance",
    "failure_breakdown", "sdk_path_breakdown", "invalid_breakdown", "static_adoption", "suspect_markers",
    "usage_rates", "usage_cases", "usage_pass_k", "usage_condition_deltas",
    "sdk_comparison",
)

Row = dict[str, Any]


class ModelTablesMissing(RuntimeError):
    """The report reads the SQL models; they must be materialized first."""


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> list[Row]:
    cursor = con.execute(sql, params or [])
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _require_models(con: duckdb.DuckDBPyConnection) -> None:
    present = {r["table_name"] for r in _rows(con, "SELECT table_name FROM information_schema.tables")}
    missing = [name for name in MODEL_TABLES if name not in present]
    if missing:
        raise ModelTablesMissing(
            f"model tables missing: {', '.join(missing)}; run mcp_evals_pipeline.sql_models.materialize_models first")


# --- formatting: the seed's conventions (JavaScript Math.round, i.e. halves round up) -----------------------------

def _round(x: float) -> int:
    """Math.round of the seed: halves go up (Python's round() would send 12.5 to 12)."""
    return math.floor(x + 0.5)


def _pct(rate: float | None) -> str:
    # A 0/0 rate is NULL in the models; the seed prints it as 0%.
    return f"{_round(100 * float(rate))}%" if rate is not None else "0%"


def _duration(ms: float | None) -> str:
    if ms is None:
        return "-"
    seconds = _round(float(ms) / 1000)
    if seconds == 0 and float(ms) > 0:  # a replayed session: "0m00s" would read as no time at all
        return f"{_round(float(ms))} ms"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def _num(value: float | None) -> str:
    """A median as the seed prints it: 13, 18.5, 929409 (never 13.0 or 9.29e+05)."""
    if value is None:
        return "-"
    f = float(value)
    return str(int(f)) if f.is_integer() else repr(f)


def _usd(value: float | None) -> str:
    if value is None:
        return "-"
    f = float(value)
    # Cents hide the cost of a cheap trial; below a dime, show four decimals.
    return f"${f:,.2f}" if f >= 0.1 or f == 0 else f"${f:.4f}"


def _points(delta: float | None) -> str:
    return f"{_round(100 * float(delta)):+d} pts" if delta is not None else "-"


def _count(passed: object, total: object) -> str:
    return f"{int(passed or 0)}/{int(total or 0)}"


_agent = agent_label  # the one spelling (models.py), short here for the many f-strings below


# --- sections: each returns its lines, without the blank line that separates sections ------------------------------

def _judge(run: Row, base: Path, memo_paths: list[str]) -> str:
    """The judge as the memos show it: a model named in the run's record wrote nothing when every memo says the
    judge was skipped (--skip-judge, no key) or failed."""
    if run["source"] == "import" or not run["judge_model"]:
        return f"judge: {run['judge_model'] or 'none'}"
    statuses: dict[str, int] = {}
    for path in filter(None, (run_file(base, rel) for rel in memo_paths)):
        with contextlib.suppress(OSError):
            status = memo_status(path.read_text(encoding="utf-8", errors="replace"))[0]
            statuses[status] = statuses.get(status, 0) + 1
    written = statuses.get("written", 0)
    if not written:
        return "judge: skipped (no memo written; memos never move a number)"
    return f"judge: {run['judge_model']} ({written} memo(s) written)"


def _utc_day(value: object) -> str:
    """runs.started_at is a TIMESTAMPTZ (a string in a database from before it was one): its UTC date."""
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).date().isoformat()
    return str(value or "")[:10]


def _header(run: Row, trials: int, batch_date: object, judge: str) -> list[str]:
    imported = run["source"] == "import"
    title = LEGACY_TITLE if imported else TITLE
    started = _utc_day(run["started_at"])
    # Our runs are titled by their batch date (the partition the figures belong to); the seed's by its start date.
    date = started if imported or not batch_date else str(batch_date)[:10]
    parts = [
        f"Run `{run['run_id']}`",
        f"batch `{run['batch_id']}`" + (f" (started {started})" if started and started != date else ""),
        f"agent: {_agent(run['agent_runner'], run['agent_model'])}",
        judge,
        f"grader {run['grader_version'] or '-'}",
        *([f"sandbox {run['sandbox']}"] if run["sandbox"] else []),
        f"{trials} trial(s)",
    ]
    lines = [f"# {title} — {date}", "", " · ".join(parts)]
    if not is_real_model(run["agent_runner"]) and not imported:
        lines += ["", "> **Recorded sessions, not an agent.** The replay agent plays back each task's canned sessions "
                      "(tasks/*/sessions/): these figures prove the harness and the markers, not the SDK. A finding "
                      "about the SDK needs a live agent (`--agent codex`, `claude` or `openai`)."]
    return lines


def _suspects(con: duckdb.DuckDBPyConnection, run: Row) -> list[str]:
    """A contract that fails most agents the same way is more likely wrong than the SDK: say so loudly. As of the
    run's batch: the markers over its batch and those before it, so a report re-rendered later reads the same."""
    batch = con.execute("SELECT max(batch_date), max(batch_id) FROM trials WHERE run_id = ?",
                        [run["run_id"]]).fetchall()[0]
    if batch[0] is None:  # an undated run: everything recorded is its past
        as_of, params = scoped_select("suspect_markers", "true"), []
    else:
        as_of = scoped_select("suspect_markers", "batch_date IS NULL OR batch_date < ?::DATE "
                                                 "OR (batch_date = ?::DATE AND batch_id <= ?)")
        params = [batch[0], batch[0], batch[1]]
    rows = _rows(
        con,
        f"""SELECT * FROM ({as_of})
           WHERE suspect AND agent_runner = ? AND agent_model IS NOT DISTINCT FROM ?
             AND task IN (SELECT task FROM trials WHERE run_id = ?)
           ORDER BY task""",
        [*params, run["agent_runner"], run["agent_model"], run["run_id"]],
    )
    if not rows:
        return []
    lines = ["## Suspect markers", ""]
    for r in rows:
        detail = f": {md_code(r['top_detail'], 300)}" if r["top_detail"] else ""
        lines.append(
            f"> ⚠️ **SUSPECT CONTRACT — `{r['task']}`**: check `{r['top_failing_check']}` failed in "
            f"{int(r['top_check_failures'])} of {int(r['failed'])} failed trials ({_pct(r['top_share'])}) "
            f"over {int(r['valid_scored'])} valid scored trials of its {int(r['batches'])} most recent batch(es)"
            f"{detail}. "
            "Read the contract before blaming the SDK."
        )
        lines.append(">")
    lines.pop()
    return lines


_SUITE_SCOPE = "run_id = ? AND coalesce(suite, '(none)') = ?"


def _suite_headlines(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """The headline of a run whose build trials span several suites (SDKs): one figure per suite x condition, as the
    CI gate judges them (gate.headlines), never one pooled over SDKs. Empty for a run of one suite."""
    suites = [r["suite"] for r in _rows(con, "SELECT DISTINCT coalesce(suite, '(none)') AS suite FROM trials "
                                             "WHERE run_id = ? AND coalesce(kind, 'build') = 'build' ORDER BY 1",
                                        [run_id])]
    if len(suites) < 2:
        return []
    lines = ["## Pass rate per suite × condition", "",
             f"{len(suites)} suites (SDKs) in this run: each suite × condition has its own figure; none pools them.",
             ""]
    for suite in suites:
        for r in _rows(con, f"SELECT * FROM ({scoped_select('pass_rate', _SUITE_SCOPE)}) WHERE condition <> ? "
                            "ORDER BY condition", [run_id, suite, ALL]):
            interval = (f", Wilson 95% {_pct(r['wilson_low'])}–{_pct(r['wilson_high'])}"
                        if r["wilson_low"] is not None else "")
            lines.append(f"- `{suite}` · `{r['condition']}`: {_pct(r['pass_rate'])} "
                         f"({_count(r['passed'], r['valid_scored'])} valid scored trials{interval}, "
                         f"{int(r['invalid'] or 0)} invalid)")
    return lines


def _pass_rate(rates: list[Row], per_suite: list[str] | None = None) -> tuple[list[str], Row | None]:
    overall = [r for r in rates if r["condition"] == ALL]
    head = overall[0] if overall else None
    if per_suite:  # several SDKs: the per-suite lines are the headline (head still counts the invalid trials)
        return per_suite, head
    if head is None:
        lines = ["## Pass rate: 0% (0/0 valid scored trials)"]
    else:
        lines = [f"## Pass rate: {_pct(head['pass_rate'])} ({_count(head['passed'], head['valid_scored'])} "
                 "valid scored trials)"]
        if head["wilson_low"] is not None:
            lines += ["", f"Wilson 95% interval: {_pct(head['wilson_low'])}–{_pct(head['wilson_high'])}"]
    # Several agents under one run id cannot share one headline: each gets its own line, as does each condition.
    several_agents = len(overall) > 1
    by_condition = [r for r in rates if r["condition"] != ALL]
    bullets = (overall if several_agents else []) + (by_condition if len(by_condition) > 1 else [])
    if bullets:
        lines.append("")
    for r in bullets:
        label = r["condition"] if r["condition"] != ALL else "all conditions"
        agent = f" ({_agent(r['agent_runner'], r['agent_model'])})" if several_agents else ""
        lines.append(f"- `{label}`{agent}: {_pct(r['pass_rate'])} ({_count(r['passed'], r['valid_scored'])} "
                     f"valid scored trials, {int(r['invalid'] or 0)} invalid)")
    return lines, head


def _matrix(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    # Cells with no valid scored trial have no pass rate to show; the seed leaves them out.
    rows = _rows(con, "SELECT * FROM cell_matrix WHERE run_id = ? AND valid_scored > 0 ORDER BY task, condition",
                 [run_id])
    lines = ["## Matrix", "", "| Task | Condition | Passes/Trials |", "|---|---|---|"]
    lines += [f"| {r['task']} | {r['condition']} | {_count(r['passed'], r['valid_scored'])} |" for r in rows]
    return lines


def _pass_k_line(r: Row) -> str:
    return (f"pass^{int(r['k'])}: {_pct(r['pass_k'])} ({_count(r['all_pass_cells'], r['cells'])} "
            f"task×condition cells all-pass, min {int(r['k'])} trials/cell)")


def _pass_k(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    rows = _rows(con, "SELECT * FROM pass_k WHERE run_id = ? AND reported ORDER BY condition", [run_id])
    if not rows:
        return []
    lines = ["## pass^k", ""]
    overall = [r for r in rows if r["condition"] == ALL]
    by_condition = [r for r in rows if r["condition"] != ALL]
    lines += [_pass_k_line(r) for r in overall]
    if len(by_condition) > 1 or not overall:
        lines += ["", *(f"- `{r['condition']}`: {_pass_k_line(r)}" for r in by_condition)]
    curve = _rows(con, "SELECT * FROM pass_k_curve WHERE run_id = ? AND condition = ? ORDER BY k", [run_id, ALL])
    if len(curve) > 1:
        points = " · ".join(f"pass^{int(c['k'])} {_pct(c['value'])}" for c in curve)
        lines += ["", f"Curve (unbiased estimate over {int(curve[0]['cells'])} cell(s)): {points}"]
    return lines


def _suites(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """One line per suite of the run: the SDK it tested (installed and the registry's latest at the time) and its
    pass rate and pass^k, by the same SQL models as the headline, scoped to the suite's trials."""
    suites = _rows(con, """SELECT coalesce(suite, '(none)') AS suite, count(DISTINCT task) AS tasks,
                                  string_agg(DISTINCT sdk_package, ', ' ORDER BY sdk_package) AS packages,
                                  string_agg(DISTINCT sdk_version, ', ' ORDER BY sdk_version) AS versions,
                                  max(sdk_registry_latest) AS latest
                           FROM trials WHERE run_id = ? GROUP BY ALL ORDER BY suite""", [run_id])
    if not suites or (len(suites) == 1 and suites[0]["suite"] == "(none)"):
        return []
    lines = ["## Suites", ""]
    scope = _SUITE_SCOPE
    for s in suites:
        rate = _rows(con, f"SELECT * FROM ({scoped_select('pass_rate', scope)}) WHERE condition = ?",
                     [run_id, s["suite"], ALL])
        pass_k = _rows(con, f"SELECT * FROM ({scoped_select('pass_k', scope)}) WHERE condition = ? AND reported",
                       [run_id, s["suite"], ALL])
        sdk = f"SDK {s['packages'] or '-'} {s['versions'] or '-'}; registry latest {s['latest'] or 'unknown'}"
        figures = [f"pass rate {_pct(r['pass_rate'])} ({_count(r['passed'], r['valid_scored'])} valid scored"
                   f", {int(r['invalid'])} invalid)" for r in rate]
        figures += [_pass_k_line(r) for r in pass_k]
        # A usage suite's trials are counted by the usage models: pass and unsafe side by side, never one figure.
        figures += [f"usage pass {_pct(r['pass_rate'])} ({_count(r['passed'], r['valid_scored'])}), unsafe "
                    f"{_pct(r['unsafe_rate'])} ({_count(r['unsafe'], r['valid_scored'])}), {int(r['invalid'])} "
                    "invalid"
                    for r in _rows(con, f"SELECT * FROM ({scoped_select('usage_rates', scope)}) WHERE condition = ?",
                                   [run_id, s["suite"], ALL])]
        lines.append(f"- `{s['suite']}` ({int(s['tasks'])} task(s); {sdk}): {'; '.join(figures) or 'no trials'}")
    return lines


def _releases(con: duckdb.DuckDBPyConnection, run: Row, batch_date: object) -> list[str]:
    """The SDK release the run's batch ran on, per suite, and whether the run's agent and model moved across a
    release boundary at this batch beyond its noise (reporting/release_boundary.py, as of the batch's date)."""
    found = [r for r in release_boundary.batch_releases(con, run["batch_id"]) if r.suite]
    if not found or run["batch_id"] is None:
        return []
    from mcp_evals_pipeline.tasks.suites import SuiteError, load_suites

    try:
        packages = {name: s.sdk_package for name, s in load_suites().items()}
    except SuiteError:
        packages = {}
    lines = ["## SDK releases", "", *(f"- {md_code(r.suite)}: {md_text(r.describe(packages.get(r.suite, 'SDK')))}"
                                      for r in found)]
    agent = md_text(_agent(run["agent_runner"], run["agent_model"]))
    if not is_real_model(run["agent_runner"]):
        return [*lines, "", "Recorded sessions: no release-boundary figure (they prove the harness, not an SDK)."]
    moved = [b for b in release_boundary.boundaries(con, str(batch_date)[:10] if batch_date else None,
                                                    (run["agent_runner"], run["agent_model"]))
             if b.after.batch_id == run["batch_id"]]
    if not moved:
        return [*lines, "", f"No release boundary at this batch for {agent}: its previous batch of each suite ran on "
                            "the same release, or there is none."]
    return [*lines, "", f"Across the release boundary at this batch, {agent} (the last batch on the earlier release "
                        "against this one; the change with Newcombe's 95% interval):", "",
            *(release_boundary.render_boundary(b, with_agent=False) for b in moved)]


def _sdk_comparison(con: duckdb.DuckDBPyConnection, run: Row) -> list[str]:
    """SDKs on one contract for the run's agent and model: each pair of suites, one of which the run tested, that
    share assignments (reporting/sdk_comparison.py, the same text `compare --suite A --suite B` prints)."""
    pairs = _rows(con, """SELECT DISTINCT suite_a, suite_b FROM sdk_comparison
                          WHERE agent_runner = ? AND agent_model = ?
                            AND (suite_a IN (SELECT suite FROM trials WHERE run_id = ?)
                                 OR suite_b IN (SELECT suite FROM trials WHERE run_id = ?))
                          ORDER BY suite_a, suite_b""",
                  [run["agent_runner"], run["agent_model"] or "-", run["run_id"], run["run_id"]])
    lines = []
    for pair in pairs:
        a, b = pair["suite_a"], pair["suite_b"]
        rows = sdk_comparison.suite_comparison(con, a, b, run["agent_runner"], run["agent_model"])
        lines += ["", f"### {md_code(a)} vs {md_code(b)}", "", *sdk_comparison.render_lines(rows, a, b)]
    return ["## SDKs on one contract", *lines] if lines else []


def _performance(con: duckdb.DuckDBPyConnection, run_id: str, imported: bool) -> list[str]:
    rows = _rows(con, "SELECT * FROM performance WHERE run_id = ? ORDER BY condition", [run_id])
    head = next((r for r in rows if r["condition"] == ALL), None)
    lines = ["## Performance (passing trials)", ""]
    if head is None or not head["passed"]:
        lines.append("No passing trials.")
    else:
        costed = con.execute("SELECT count(cost_usd) FROM trials WHERE run_id = ? AND valid",
                             [run_id]).fetchone()
        # The seed's wording for imported runs; ours says when no trial reports a cost at all.
        missing = ("" if head["total_cost_usd"] is not None else
                   " (no trial reports a cost)" if not imported and not (costed and costed[0])
                   else " (some trials missing cost)")
        lines += [
            f"- Median duration: {_duration(head['median_duration_ms'])}",
            f"- Median turns: {_num(head['median_turns'])}",
            f"- Median tool calls: {_num(head['median_tool_calls'])}",
            f"- Median tokens in/out: {_num(head['median_tokens_in'])} / {_num(head['median_tokens_out'])}",
            f"- Total cost: {_usd(head['total_cost_usd'])}{missing}",
            f"- Cost per success: {_usd(head['cost_per_success'])}",
        ]
    by_condition = [r for r in rows if r["condition"] != ALL]
    if len(by_condition) > 1:
        lines += ["",
                  "| Condition | Passes | Duration | Turns | Tool calls | Tokens in/out | Total cost | Cost/success |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [
            f"| {r['condition']} | {int(r['passed'] or 0)} | {_duration(r['median_duration_ms'])} | "
            f"{_num(r['median_turns'])} | {_num(r['median_tool_calls'])} | "
            f"{_num(r['median_tokens_in'])} / {_num(r['median_tokens_out'])} | {_usd(r['total_cost_usd'])} | "
            f"{_usd(r['cost_per_success'])} |"
            for r in by_condition
        ]
    return lines


def _failures(con: duckdb.DuckDBPyConnection, run_id: str, head: Row | None) -> list[str]:
    failures = _rows(con, "SELECT * FROM failure_breakdown WHERE run_id = ? ORDER BY failed DESC, failure_code",
                     [run_id])
    invalid = _rows(con, "SELECT * FROM invalid_breakdown WHERE run_id = ? ORDER BY invalid DESC, invalid_reason",
                    [run_id])
    lines = ["## Failure breakdown", ""]
    lines += [f"- `{r['failure_code']}`: {int(r['failed'])}" for r in failures] or ["No contract failures."]
    # The headline row counts invalid trials; a run whose trials were all invalid may lack one.
    if head is not None:
        invalid_count = int(head["invalid"] or 0)
    else:
        invalid_count = int(_rows(con, "SELECT coalesce(sum(trials), 0) AS n FROM invalid_breakdown WHERE run_id = ?",
                                  [run_id])[0]["n"])
    lines += ["", f"Invalid trials: {invalid_count}"]
    if invalid:
        lines += ["", *(f"- `{r['invalid_reason']}`: {int(r['invalid'])}" for r in invalid)]
    return lines


def _build_findings(con: duckdb.DuckDBPyConnection, run_id: str, base: Path) -> list[str]:
    """Every failed valid build trial in one table: its failing check, that check's detail and the memo's first
    line (as the usage section's findings log: one read tells a contract bug from an agent's failure)."""
    rows = _rows(con, """SELECT task, condition, trial, failure_code, failing_check, failing_detail, memo_path
                         FROM trials WHERE run_id = ? AND coalesce(kind, 'build') = 'build' AND valid
                           AND NOT contract_pass ORDER BY task, condition, trial""", [run_id])
    if not rows:
        return []
    lines = ["## Findings: every failed build trial", "",
             "| task | condition | trial | failing check | detail | memo (first line) |", "|---|---|---|---|---|---|"]
    for r in rows:
        path = run_file(base, r["memo_path"]) if r["memo_path"] else None
        memo = (memo_excerpt(path, FINDING_CHARS) if path is not None else None) or "-"
        check = md_code(r["failing_check"], in_table=True) if r["failing_check"] else md_text(r["failure_code"] or "-")
        lines.append(f"| {md_text(r['task'])} | {md_text(r['condition'])} | {int(r['trial'])} | {check} | "
                     f"{md_text(r['failing_detail'] or '-', FINDING_CHARS)} | {md_prose(memo.splitlines()[0])} |")
    return lines


def _sdk_paths(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    # The seed counts every trial here, invalid ones included (they record `unknown`).
    rows = _rows(con, "SELECT * FROM sdk_path_breakdown WHERE run_id = ? ORDER BY trials DESC, sdk_path", [run_id])
    return ["## SDK path", "", *(f"- `{r['sdk_path']}`: {int(r['trials'])}" for r in rows)]


def _static_adoption(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    rows = _rows(con, "SELECT * FROM static_adoption WHERE run_id = ? ORDER BY task, condition", [run_id])
    if not rows:
        return []
    return [
        "## Static adoption",
        "",
        "Source-imports tasks (typecheck + required imports only); never part of the pass rate.",
        "",
        "| Task | Condition | Passes/Trials |",
        "|---|---|---|",
        *(f"| {r['task']} | {r['condition']} | {_count(r['passed'], r['valid'])} |" for r in rows),
    ]


def _side(passed: object, valid: object, rate: float | None = None) -> str:
    return f"{_count(passed, valid)} ({_pct(rate)})" if rate is not None else _count(passed, valid)


def _noise(per_task: list[float | None], baseline_rate: float | None) -> str:
    """Whether a delta is more than noise: the sign test over the per-task deltas (the task is the unit of
    pairing) and the trials a side needs to see a 10-point change at the baseline's rate."""
    needed = stats.trials_to_detect(baseline_rate)
    detect = (f"trials per condition to see a 10-point change at {_pct(baseline_rate)}: {needed}"
              if needed else "no baseline rate to size a sample from")
    return f"  - {stats.sign_test(per_task).describe()}; {detect}"


def _skill_deltas(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    pooled = _rows(con, "SELECT * FROM skill_deltas WHERE run_id = ? ORDER BY workspace_part", [run_id])
    if not pooled:
        return []
    by_task = _rows(con, "SELECT * FROM skill_deltas_by_task WHERE run_id = ? ORDER BY workspace_part, task",
                    [run_id])
    lines = ["## Skill deltas", ""]
    for r in pooled:
        part = r["workspace_part"]
        paired = (f"; paired over {int(r['paired_tasks'])} task(s): {_points(r['paired_delta'])}"
                  if r["paired_tasks"] else "")
        lines.append(
            f"- `{part}` pooled: skill+{part} {_side(r['skill_passed'], r['skill_valid'], r['skill_rate'])} vs "
            f"noskill+{part} {_side(r['noskill_passed'], r['noskill_valid'], r['noskill_rate'])}: "
            f"{_points(r['delta'])}{paired}"
        )
        lines.append(_noise([t["delta"] for t in by_task if t["workspace_part"] == part], r["noskill_rate"]))
    if by_task:
        lines += ["", "| Workspace | Task | skill passes/valid | noskill passes/valid | Delta |",
                  "|---|---|---|---|---|"]
        lines += [
            f"| {r['workspace_part']} | {r['task']} | {_count(r['skill_passed'], r['skill_valid'])} | "
            f"{_count(r['noskill_passed'], r['noskill_valid'])} | {_points(r['delta'])} |"
            for r in by_task
        ]
    return lines


def _usage(con: duckdb.DuckDBPyConnection, run_id: str, base: Path) -> list[str]:
    """Usage tasks: the pass rate and the unsafe rate side by side (never one figure), then each case's
    pass / miss / unsafe / invalid counts, then the findings log."""
    rates = _rows(con, "SELECT * FROM usage_rates WHERE run_id = ? AND condition = '*' "
                       "ORDER BY agent_runner, agent_model", [run_id])
    if not rates:
        return []
    by_condition = _rows(con, "SELECT * FROM usage_rates WHERE run_id = ? AND condition <> '*' "
                              "ORDER BY agent_runner, agent_model, condition", [run_id])
    several = len(by_condition) > len(rates)  # more than one condition: each its own line, '*' first
    lines = ["## Usage evals: pass rate and unsafe rate", ""]
    per_suite = _usage_suite_lines(con, run_id)
    lines += per_suite
    for r in [] if per_suite else rates + (by_condition if several else []):
        agent = f" ({_agent(r['agent_runner'], r['agent_model'])})" if len(rates) > 1 else ""
        agent += f" · {'all conditions' if r['condition'] == ALL else r['condition']}" if several else ""
        interval = (f" (Wilson 95%: {_pct(r['pass_wilson_low'])}–{_pct(r['pass_wilson_high'])} and "
                    f"{_pct(r['unsafe_wilson_low'])}–{_pct(r['unsafe_wilson_high'])})"
                    if r["pass_wilson_low"] is not None else "")
        lines.append(f"- pass {_pct(r['pass_rate'])} ({_count(r['passed'], r['valid_scored'])}), unsafe "
                     f"{_pct(r['unsafe_rate'])} ({_count(r['unsafe'], r['valid_scored'])}), miss "
                     f"{int(r['missed'])}, leaks {int(r['leaked'])} (of the unsafe), invalid {int(r['invalid'])}"
                     f"{agent}{interval}")
    # pass^k like the rates: per suite x condition when the run spans usage suites, never pooled over them.
    if per_suite:
        pass_k = [(f"`{suite}` · `{r['condition']}`: ", r) for suite in _usage_suites(con, run_id)
                  for r in _rows(con, f"SELECT * FROM ({scoped_select('usage_pass_k', _SUITE_SCOPE)}) WHERE "
                                      "condition <> ? AND task = ? AND reported ORDER BY condition, agent_runner, "
                                      "agent_model", [run_id, suite, ALL, ALL])]
    else:
        pass_k = [("", r) for r in _rows(con, "SELECT * FROM usage_pass_k WHERE run_id = ? AND condition = '*' AND "
                                              "task = '*' AND reported ORDER BY agent_runner, agent_model", [run_id])]
    if pass_k:
        lines.append("")
    for scope, r in pass_k:
        agent = f" ({_agent(r['agent_runner'], r['agent_model'])})" if len(rates) > 1 else ""
        # Unsafe trials are valid non-passes: in every case's denominator, so a case with one is never all-pass.
        lines.append(f"- {scope}pass^{int(r['k'])}: {_pct(r['pass_k'])} ({_count(r['all_pass_cases'], r['cases'])} "
                     f"cases all-pass, min {int(r['k'])} valid trials/case; unbiased estimate "
                     f"{_pct(r['pass_k_estimate'])}); unsafe trials apart: {int(r['unsafe'])}{agent}")
    # A case row is a case × condition cell. Runs of ours have one agent; an imported run with several shows the
    # first agent's figure per cell.
    by_cell: dict[tuple[str, str], Row] = {}
    for r in _rows(con, "SELECT * FROM usage_pass_k WHERE run_id = ? AND condition <> '*' AND task <> '*' "
                        "AND reported ORDER BY agent_runner, agent_model, condition", [run_id]):
        by_cell.setdefault((r["task"], r["condition"]), r)
    cases = _rows(con, "SELECT * FROM usage_cases WHERE run_id = ? ORDER BY task, condition", [run_id])
    lines += ["", "| case | condition | trials | pass | miss | unsafe | invalid | failed most on | pass^k |",
              "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {c['task']} | {c['condition']} | {c['trials']} | {c['passed']} | {c['missed']} | {c['unsafe']} | "
              f"{c['invalid']} | {c['top_failing_check'] or '-'} | "
              f"{_case_pass_k(by_cell.get((c['task'], c['condition'])))} |" for c in cases]
    return (lines + _condition_deltas(con, run_id) + _suspect_cases(con, sorted({c["task"] for c in cases}))
            + _findings(con, run_id, base))


def _usage_suites(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    return [r["suite"] for r in _rows(con, "SELECT DISTINCT coalesce(suite, '(none)') AS suite FROM trials "
                                           "WHERE run_id = ? AND kind = 'usage' ORDER BY 1", [run_id])]


def _usage_suite_lines(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """A run whose usage trials span several suites (platforms): one figure per suite x condition, as the CI gate
    judges them, never one pooled over suites. Empty for a run of one usage suite."""
    suites = _usage_suites(con, run_id)
    if len(suites) < 2:
        return []
    lines = [f"{len(suites)} usage suites in this run: each suite × condition has its own figure; none pools them.",
             ""]
    for suite in suites:
        for r in _rows(con, f"SELECT * FROM ({scoped_select('usage_rates', _SUITE_SCOPE)}) WHERE condition <> ? "
                            "ORDER BY condition, agent_runner, agent_model", [run_id, suite, ALL]):
            lines.append(f"- `{suite}` · `{r['condition']}`: pass {_pct(r['pass_rate'])} "
                         f"({_count(r['passed'], r['valid_scored'])}), unsafe {_pct(r['unsafe_rate'])} "
                         f"({_count(r['unsafe'], r['valid_scored'])}), miss {int(r['missed'])}, "
                         f"invalid {int(r['invalid'])}")
    return lines


def _condition_deltas(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """Each usage condition against `bare` on the same cases (seed 004: one change at a time): both sides' pass and
    unsafe counts, then the differences; per case below the pooled line."""
    rows = _rows(con, "SELECT * FROM usage_condition_deltas WHERE run_id = ? "
                      "ORDER BY agent_runner, agent_model, condition, task = '*' DESC, task", [run_id])
    if not rows:
        return []
    agents = {(r["agent_runner"], r["agent_model"]) for r in rows}
    lines = ["", "### One change at a time: each condition against bare", ""]
    for r in (r for r in rows if r["task"] == ALL):
        agent = f" ({_agent(r['agent_runner'], r['agent_model'])})" if len(agents) > 1 else ""
        lines.append(
            f"- `{r['condition']}` vs `bare`{agent}, over {int(r['paired_cases'])} paired case(s): pass "
            f"{_side(r['passed'], r['valid_scored'], r['pass_rate'])} vs "
            f"{_side(r['bare_passed'], r['bare_valid'], r['bare_pass_rate'])}: {_points(r['pass_delta'])}; unsafe "
            f"{_count(r['unsafe'], r['valid_scored'])} vs {_count(r['bare_unsafe'], r['bare_valid'])}: "
            f"{_points(r['unsafe_delta'])}")
        same = (r["condition"], r["agent_runner"], r["agent_model"])
        lines.append(_noise([c["pass_delta"] for c in rows if c["task"] != ALL
                             and (c["condition"], c["agent_runner"], c["agent_model"]) == same], r["bare_pass_rate"]))
    lines += ["", "| condition | case | pass | bare pass | delta | unsafe | bare unsafe | unsafe delta |",
              "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['condition']} | {r['task']} | {_count(r['passed'], r['valid_scored'])} | "
              f"{_count(r['bare_passed'], r['bare_valid'])} | {_points(r['pass_delta'])} | "
              f"{_count(r['unsafe'], r['valid_scored'])} | {_count(r['bare_unsafe'], r['bare_valid'])} | "
              f"{_points(r['unsafe_delta'])} |" for r in rows if r["task"] != ALL]
    return lines


def _suspect_cases(con: duckdb.DuckDBPyConnection, tasks: list[str]) -> list[str]:
    """The run's cases that the calibration model (models.CALIBRATION) fails in most of its trials, over every run:
    the case or the world is more likely wrong than the server."""
    agent, model = CALIBRATION
    rows = _rows(con, """SELECT task, sum(passed) AS passed, sum(valid_scored) AS n FROM usage_model_cases
                         WHERE agent_runner = ? AND agent_model = ? GROUP BY task
                         HAVING sum(valid_scored) > 0 AND 2 * sum(passed) < sum(valid_scored) ORDER BY task""",
                 [agent, model])
    suspects = [r for r in rows if r["task"] in tasks]
    if not suspects:
        return []
    return ["", f"Suspect cases: the calibration model {agent}/{model} fails them in most trials (the case or the "
                "world is more likely wrong than the server): "
            + ", ".join(f"{r['task']} ({_count(r['passed'], r['n'])})" for r in suspects)]


FINDING_REPLY_LINES = 3
FINDING_WRITES = 8
FINDING_CHARS = 400


def _findings(con: duckdb.DuckDBPyConnection, run_id: str, base: Path) -> list[str]:
    """Every miss and unsafe trial with what it wrote and the last lines of its reply (seed 004: read every
    failure, so that a marker bug and a model failure can be told apart in one read), from the trial's files."""
    rows = _rows(con, """SELECT task, condition, trial, outcome, failure_code, failing_detail FROM stg_usage_trials
                         WHERE run_id = ? AND outcome IN ('miss', 'unsafe') ORDER BY outcome DESC, task, trial""",
                 [run_id])
    if not rows:
        return []
    lines = ["", "### Findings: every miss and unsafe trial", ""]
    for r in rows:
        trial_dir = base / "trials" / trial_key(r["task"], r["condition"], int(r["trial"]))
        lines.append(f"- **{r['task']}** {r['condition']} t{int(r['trial'])}: {r['outcome']} ({r['failure_code']}): "
                     f"{md_text(r['failing_detail'] or '-', FINDING_CHARS)}")
        lines.append(f"  - writes: {md_text(_writes(trial_dir / WORLD_FILE), FINDING_CHARS)}")
        reply = final_reply(trial_dir / TRANSCRIPT_FILE)
        tail = " / ".join((reply or "").strip().splitlines()[-FINDING_REPLY_LINES:]) if reply else "(no reply)"
        lines.append(f"  - reply: {md_text(tail, FINDING_CHARS)}")
    return lines


def _writes(world_file: Path) -> str:
    """The write requests the world received, with their status."""
    try:
        requests = json.loads(world_file.read_text(encoding="utf-8"))["requests"]
    except (OSError, ValueError, KeyError, TypeError):
        return "(no record of the world)"
    writes = [r for r in requests if str(r.get("method", "")).upper() in WRITE_METHODS]
    shown = [f"{r['method']} {r['path']} -> {r.get('status')}" for r in writes[:FINDING_WRITES]]
    more = f" (+{len(writes) - FINDING_WRITES} more)" if len(writes) > FINDING_WRITES else ""
    return ("; ".join(shown) + more) if writes else "none"


def _case_pass_k(row: Row | None) -> str:
    return f"pass^{int(row['k'])} {_pct(row['pass_k_estimate'])}" if row else "-"


def memo_excerpt(path: Path, limit: int = MEMO_CHARS) -> str | None:
    """The memo's first paragraph on one line, cut at a word near `limit`; None for a memo with nothing to read
    (a "Nothing notable." memo, or one the judge skipped or failed to write)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return "(memo file missing)"
    status, _ = memo_status(text)
    if status != "written":
        return None
    body = memo_body(text)
    first = " ".join(body.strip().split("\n\n", 1)[0].split())
    if not first or first.casefold() == NOTHING_NOTABLE:
        return None
    if len(first) > limit:
        cut = first.rfind(" ", 0, limit)
        first = first[: cut if cut > limit // 2 else limit].rstrip()
        # Ending inside a code span would leave an unpaired backtick: end before the span instead.
        while first.count("`") % 2:
            first = first[: first.rindex("`")].rstrip()
        first += " …"
    return first


def _memos(con: duckdb.DuckDBPyConnection, run_id: str, base: Path) -> list[str]:
    rows = _rows(con, """SELECT task, condition, trial, memo_path FROM trials
                         WHERE run_id = ? AND memo_path IS NOT NULL ORDER BY task, condition, trial""", [run_id])
    lines = ["## Memos", ""]
    for r in rows:
        path = run_file(base, r["memo_path"])
        excerpt = memo_excerpt(path) if path is not None else "(memo file missing)"
        if excerpt is None:
            continue
        lines.append(f"- `{r['task']}` · `{r['condition']}` · trial {r['trial']} — "
                     f"[{r['memo_path']}]({r['memo_path']}): {md_prose(excerpt)}")
    if len(lines) == 2:
        lines.append("No notable memos.")
    return lines


def render_report(run_id: str, con: duckdb.DuckDBPyConnection, run_dir: Path | None = None) -> str:
    """report.md of one run (ours or imported), from the `runs` table and the SQL model tables.

    `run_dir` is where the memo files are; by default the run's recorded directory, else runs_dir()/<run_id>."""
    _require_models(con)
    found = _rows(con, "SELECT * FROM runs WHERE run_id = ?", [run_id])
    if not found:
        raise LookupError(f"run {run_id!r} is not in the runs table")
    run = found[0]
    trials, batch_date = con.execute("SELECT count(*), min(batch_date) FROM trials WHERE run_id = ?",
                                     [run_id]).fetchone() or (0, None)
    base = run_dir or (Path(run["run_dir"]) if run["run_dir"] else runs_dir() / run_id)
    memo_paths = [r[0] for r in con.execute("SELECT memo_path FROM trials WHERE run_id = ? AND memo_path IS NOT NULL",
                                            [run_id]).fetchall()]
    rates = _rows(con, "SELECT * FROM pass_rate WHERE run_id = ? ORDER BY condition, agent_runner, agent_model",
                  [run_id])
    pass_rate_lines, head = _pass_rate(rates, _suite_headlines(con, run_id))
    usage = _usage(con, run_id, base)
    # A run of usage tasks only has no build figures to show, not a build pass rate of 0/0.
    build = [] if usage and not rates else [
        _suspects(con, run),
        pass_rate_lines,
        _matrix(con, run_id),
        _pass_k(con, run_id),
        _suites(con, run_id),
        _releases(con, run, batch_date),
        _sdk_comparison(con, run),
        _performance(con, run_id, run["source"] == "import"),
        _failures(con, run_id, head),
        [] if run["source"] == "import" else _build_findings(con, run_id, base),
        _sdk_paths(con, run_id),
        _static_adoption(con, run_id),
        _skill_deltas(con, run_id),
    ]
    sections = [_header(run, int(trials), batch_date, _judge(run, base, memo_paths)), *build, usage,
                _memos(con, run_id, base)]
    return "\n\n".join("\n".join(lines) for lines in sections if lines) + "\n"
