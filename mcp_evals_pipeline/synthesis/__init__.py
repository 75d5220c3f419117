"""The weekly synthesis: code computes every figure, a model writes only the qualitative part.

`compute_week_stats` evaluates the SQL models of dbt_like_sql/ over the window's trials (the DuckDB store, or a copy
of the results branch through `<dir>/*/run.json`), regrouped for a week (`sql_models.scoped_select`): pass rates,
pass^k, performance, breakdowns and suspect tasks come from the very SQL behind the scorecards, so the two cannot
disagree on a definition. Code lists the failing trials with their memos. Those tables are written into the report
verbatim by code. The model then gets them as context plus the failing trials' memos and writes three sections
(recurring struggles, quoted evidence, proposed issues for human review) that the report labels as model-written;
its quotes are verified against the memos and transcripts exactly like the judge's.

Split by what it does: figures.py (the numbers), render.py (their tables), prompt.py (what the model is asked, the
evidence chosen within a budget), report.py (the report, its file and picture, Slack, `synthesize`)."""

from mcp_evals_pipeline.synthesis.figures import (
    SynthesisError,
    WeekStats,
    compute_week_stats,
    load_run_files,
    stats_from_results_dir,
)
from mcp_evals_pipeline.synthesis.prompt import SYSTEM_PROMPT, build_prompt
from mcp_evals_pipeline.synthesis.render import render_stats, suspect_sentence
from mcp_evals_pipeline.synthesis.report import SynthesisResult, render_report, slack_summary, stats_json, synthesize

__all__ = ["SYSTEM_PROMPT", "SynthesisError", "SynthesisResult", "WeekStats", "build_prompt", "compute_week_stats",
           "load_run_files", "render_report", "render_stats", "slack_summary", "stats_from_results_dir", "stats_json",
           "suspect_sentence", "synthesize"]
