"""Per-batch scorecards (run.json + report.md) and the weekly synthesis."""


import datetime as dt
from pathlib import Path

import dagster as dg
import duckdb

from mcp_evals_pipeline.batch_calendar import FIRST_BATCH, TIMEZONE
from mcp_evals_pipeline.defs.models.assets import MODELS
from mcp_evals_pipeline.defs.partitions import batch_date_partitions
from mcp_evals_pipeline.defs.reports.rates import rates_table, suite_rates
from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.ids import check_id
from mcp_evals_pipeline.reporting.markdown import md_code
from mcp_evals_pipeline.reporting.scorecard import render_report
from mcp_evals_pipeline.runs import write_run_file
from mcp_evals_pipeline.store import TrialStore

weekly_partitions = dg.WeeklyPartitionsDefinition(start_date=FIRST_BATCH, day_offset=1, timezone=TIMEZONE)


@dg.asset(
    partitions_def=batch_date_partitions,
    deps=[m.name for m in MODELS],
    group_name="reports",
    kinds={"markdown", "json"},
    description=(
        "The batch scorecard: run.json (a superset of the seed's) and report.md for every run of the batch. Each run "
        "stands alone: one whose id, directory or files are broken is listed under `broken_runs` (and logged), "
        "and the others still get their files."
    ),
)
def batch_scorecard(context: dg.AssetExecutionContext, eval_store: EvalStore) -> dg.MaterializeResult:
    batch_date = context.partition_key
    store = eval_store.store()
    run_ids = [r["run_id"] for r in store.query(
        "SELECT DISTINCT run_id FROM trials WHERE batch_date = ?::DATE AND source = 'pipeline' ORDER BY run_id",
        [batch_date])]
    written, broken = [], []
    pictures: dict[str, dg.MetadataValue] = {}
    for run_id in run_ids:
        try:
            written.append(str(write_scorecard(str(run_id), eval_store.runs(), store)))
            pictures.update({f"{run_id}: {p.name}": dg.MetadataValue.path(str(p))
                             for p in (Path(written[-1]).parent / name for name in ("trend.png", "grid.png"))
                             if p.is_file()})
        except Exception as exc:  # one broken run never costs the others their scorecards
            context.log.error(f"{run_id}: scorecard not written: {type(exc).__name__}: {exc}")
            broken.append(f"{run_id}: {type(exc).__name__}: {' '.join(str(exc).split())[:500]}")  # one line
    headline = store.query(
        "SELECT sum(passed)::INT AS passed, sum(valid_scored)::INT AS valid FROM pass_rate "
        "WHERE condition = '*' AND batch_date = ?::DATE", [batch_date])[0]
    # Usage figures beside the build ones, never summed with them (a usage-only batch once showed 0 of 0).
    usage = store.query(
        "SELECT sum(passed)::INT AS passed, sum(unsafe)::INT AS unsafe, sum(valid_scored)::INT AS valid "
        "FROM usage_rates WHERE condition = '*' AND batch_date = ?::DATE", [batch_date])[0]
    with store.connect() as con:
        rates = suite_rates(con, batch_date)
    return dg.MaterializeResult(metadata={
        "pass_rates": rates_table(rates),
        "runs": len(written),
        "reports": dg.MetadataValue.md("\n".join(f"- {md_code(p)}" for p in written) or "none"),
        "broken_runs": dg.MetadataValue.text("\n".join(broken) or "none"),
        "passed": headline["passed"] or 0,
        "valid_scored": headline["valid"] or 0,
        "usage_passed": usage["passed"] or 0,
        "usage_unsafe": usage["unsafe"] or 0,
        "usage_valid_scored": usage["valid"] or 0,
        **_inline_picture(written),
        **pictures,
        # The report itself, readable in the UI (its pictures are inline above: the UI cannot read the files).
        **{f"report: {Path(p).parent.name}": dg.MetadataValue.md(Path(p).read_text()) for p in written},
    })


def _inline_picture(reports: list[str]) -> dict[str, dg.MetadataValue]:
    """The first run's pictures, inline in the UI (data URIs: the UI cannot read the results directory): its trend
    (build suites have one) and its task x trial grid."""
    import base64

    for report in reports:
        found = {name: Path(report).parent / f"{name}.png" for name in ("trend", "grid")}
        inline = {name: dg.MetadataValue.md(f"![{name}](data:image/png;base64,"
                                            f"{base64.b64encode(path.read_bytes()).decode()})")
                  for name, path in found.items() if path.is_file()}
        if inline:
            return inline
    return {}


def write_scorecard(run_id: str, runs_root: Path, store: TrialStore) -> Path:
    """run.json and report.md of one run; raises for a run whose id, directory or trial files are broken."""
    run_dir = runs_root / check_id(run_id, "run id")
    if not run_dir.is_dir():
        raise FileNotFoundError(f"no run directory at {run_dir}")
    from mcp_evals_pipeline.reporting.plots import markdown  # lazily: matplotlib is not paid by every defs load

    write_run_file(run_dir, store)
    with store.connect() as con:
        report = render_report(run_id, con)
        pictures = run_pictures(con, run_id, run_dir)
    (run_dir / "report.md").write_text(report + "\n" + "\n".join(markdown(pictures, run_dir)) + "\n"
                                       if pictures else report)
    return run_dir / "report.md"


def run_pictures(con: duckdb.DuckDBPyConnection, run_id: str, run_dir: Path) -> list[tuple[str, Path]]:
    """trend.png (the run's suites up to its batch: every real model's series, or the run's own agent's when it is
    not a real model, e.g. replay) and grid.png (its trials) beside report.md."""
    from mcp_evals_pipeline.models import is_real_model
    from mcp_evals_pipeline.reporting import plots
    found = con.execute("SELECT list(DISTINCT coalesce(suite, '(none)')), max(batch_date), min(agent_runner) "
                        "FROM trials WHERE run_id = ?", [run_id]).fetchone()
    suites, until, runner = found if found else ([], None, None)
    agents = () if runner is None or is_real_model(runner) else (str(runner),)
    pictures = [("Trend of the run's suites (Wilson 95% bands; red: grader changed, grey: task set changed)",
                 plots.trend_chart(con, run_dir / "trend.png", until=until, suites=suites or None, agents=agents)),
                ("Trials of this run", plots.trial_grid(con, run_id, run_dir / "grid.png"))]
    return [(caption, path) for caption, path in pictures if path is not None]


@dg.asset(
    partitions_def=weekly_partitions,
    deps=[m.name for m in MODELS],
    group_name="reports",
    kinds={"openai", "markdown"},
    description=(
        "Weekly synthesis: code computes every figure over the week's trials and memos; the pinned model writes "
        "recurring struggles, quoted evidence and proposed issues for human review to "
        "`eval_results/synthesis/<date>.md`. Without OPENAI_API_KEY the figures are written and the model part is "
        "marked skipped."
    ),
)
def weekly_synthesis(context: dg.AssetExecutionContext, eval_store: EvalStore) -> dg.MaterializeResult:
    from mcp_evals_pipeline.synthesis import synthesize  # the openai client loads only when a synthesis runs

    window = context.partition_time_window
    end_date = (window.end - dt.timedelta(days=1)).date()
    result = synthesize(end_date=end_date, days=7, require_model=False, store=eval_store.store())
    head = result.stats.headline
    return dg.MaterializeResult(metadata={
        "report": str(result.report_path),
        "pass_rate": dg.MetadataValue.float(head.rate) if head.rate is not None else dg.MetadataValue.null(),
        "passed": head.passed,
        "valid_scored": head.total,
        "invalid": result.stats.invalid,
        "suspect_tasks": ", ".join(s.task for s in result.stats.suspects) or "none",
        "notes": "\n".join(result.stats.notes) or "none",  # what the figures leave out (recorded sessions), pool
        # the model that wrote the analysis; else why none did (no key, an error, nothing failing to synthesize)
        "model": result.model_error or (result.model if result.model_text else "not called: no failing trial in "
                                        "the window's figures"),
    })


@dg.asset(
    partitions_def=weekly_partitions,
    deps=[weekly_synthesis],
    group_name="reports",
    kinds={"json", "duckdb"},
    description=(
        "Findings that persist: the files under `eval_results/findings/` (one per finding, stable id, written by "
        "the weekly synthesis, statuses decided by code from the week's trials) indexed as the `findings` and "
        "`finding_history` tables. A malformed findings file fails the materialization, naming file and field."
    ),
)
def findings(context: dg.AssetExecutionContext, eval_store: EvalStore) -> dg.MaterializeResult:
    from mcp_evals_pipeline.findings.statuses import STATUSES
    from mcp_evals_pipeline.findings.store import FindingsError, FindingsStore, index_findings

    week = (context.partition_time_window.end - dt.timedelta(days=1)).date()
    try:
        found = FindingsStore().load()
    except FindingsError as exc:
        raise dg.Failure(description=str(exc)) from exc
    with eval_store.store().connect() as con:
        index_findings(con, found)
    this_week = {f.id: h.status for f in found for h in f.history if h.week == week}
    rows = [f"| {f.id} | {this_week.get(f.id, '-')} | {f.category} | {md_code(f.title)} | {f.first_seen} | "
            f"{f.last_seen} | {'yes' if f.closed else ''} |" for f in found]
    table = "\n".join(["| id | status this week | category | title | first seen | last seen | closed |",
                       "|---|---|---|---|---|---|---|", *rows]) if rows else "none"
    return dg.MaterializeResult(metadata={
        "findings": len(found),
        **{status: sum(1 for s in this_week.values() if s == status) for status in STATUSES},
        "table": dg.MetadataValue.md(table),
    })
