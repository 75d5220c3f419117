"""The code-written part of the synthesis report: the figures as Markdown tables, verbatim."""

from __future__ import annotations

from pathlib import Path

from mcp_evals_pipeline.paths import results_dir as default_results_dir
from mcp_evals_pipeline.reporting.markdown import md_code, md_text
from mcp_evals_pipeline.reporting.release_boundary import render_boundary
from mcp_evals_pipeline.synthesis.figures import RateRow, Suspect, UsageWeek, WeekStats

# ---------------------------------------------------------------------------------------------------------------
# Rendering (code-written; goes into the report verbatim)

def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _num(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}{unit}" if value == int(value) else f"{value:,.1f}{unit}"


def _clip(text: str | None, limit: int = 160) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _table(headers: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines.extend("| " + " | ".join(md_text(c) for c in row) + " |" for row in rows)  # stored text: inert
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
    return (f"{md_text(s.task)}: {s.at_check} of {s.failures} failures ({s.valid} valid trials) stop at "
            f"{md_code(s.check)}, {same}"
            f" ({md_text(repr(_clip(s.detail, 120)))}). Nearly all failures at one identical check point to a contract "
            "or grader bug: read the contract and a few transcripts before blaming the SDK.")


def _suite_headlines(stats: WeekStats) -> list[str]:
    """One headline per suite x condition (as the CI gate judges a batch); the pooled line below is then context."""
    if len(stats.by_suite) < 2:
        return []
    return ["Headlines, one per suite × condition (never pooled over SDKs or conditions):", "",
            *_table(["suite · condition", "passed / valid", "pass rate", "invalid (excluded)"],
                    [[r.name, f"{r.passed}/{r.total}", _pct(r.rate), r.invalid] for r in stats.by_suite]),
            "", "All of them pooled (context, not a headline):"]


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
        *_suite_headlines(stats),
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
    lines += _release_lines(stats)
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


def _release_lines(stats: WeekStats) -> list[str]:
    """The SDK release each batch ran on, and each release boundary of the window (real models only)."""
    if stats.releases is None or not stats.releases.batches:
        return []
    lines = ["", "### SDK releases the batches ran on", ""]
    lines += _table(["batch", "suite", "release"], [list(b) for b in stats.releases.batches])
    lines += ["", "Release boundaries in the window (the last batch on the earlier release against the first on the "
                  "next, per suite × condition × agent; the change with Newcombe's 95% interval, beyond its noise "
                  "when the interval excludes 0; recorded sessions never enter):", ""]
    lines += [render_boundary(b) for b in stats.releases.boundaries] or ["None: no release changed between two "
                                                                          "batches of one series."]
    return lines


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
