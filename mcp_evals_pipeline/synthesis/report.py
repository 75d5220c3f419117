"""The synthesis report and where it goes: the model's sections beside the figures, the file, the trend picture,
Slack; `synthesize`, the entry point."""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_evals_pipeline.judge import (
    chat,
    extract_quotes,
    first_key,
    load_transcript,
    memo_body,
    verify_quotes,
)
from mcp_evals_pipeline.models import SYNTHESIS_MODEL
from mcp_evals_pipeline.paths import synthesis_dir
from mcp_evals_pipeline.reporting.markdown import md_block, md_code, md_text
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.synthesis.figures import (
    MODEL_TIMEOUT_S,
    REPORT_BASE_URL_ENV,
    SECTIONS,
    SLACK_ENV,
    SLACK_TIMEOUT_S,
    SYNTHESIS_KEY_ENV,
    FailingTrial,
    SynthesisError,
    WeekStats,
    _as_date,
    compute_week_stats,
    stats_from_results_dir,
)
from mcp_evals_pipeline.synthesis.prompt import SYSTEM_PROMPT, build_prompt
from mcp_evals_pipeline.synthesis.render import _clip, _display_path, render_stats

if TYPE_CHECKING:  # findings import the synthesis's figures: imported where used, never in a cycle
    from mcp_evals_pipeline.findings.weekly import FindingsWeek

log = logging.getLogger(__name__)

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
    findings: FindingsWeek | None = None  # the week's findings, statuses decided by code (None on a dry run)


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
        f"Generated {generated}. "
        + (f"Headlines: one per suite × condition ({len(stats.by_suite)}, below); pooled: "
           if len(stats.by_suite) > 1 else "Headline: ")
        + f"**{stats.headline.fraction()}** valid scored trials passed. Every figure "
        "below is computed by code from the trial records; only the section marked model-written comes from "
        f"{result.model}, and it never changes a number.",
        "",
        *_findings_lines(result.findings),
        render_stats(stats),
        f"## Model-written analysis ({result.model}; unscored, verify against the memos)",
        "",
        "> Everything in this section was written by a language model from the memos of failing trials. Quotes are "
        "checked by code (below); proposed issues are drafts for human review, not decisions.",
        "",
    ]
    if result.model_text:
        # The model read agent text: its markdown is kept, its HTML and script links are not.
        lines += [md_block(_demote_headings(result.model_text.strip())), "", "### Quote check (code)", ""]
        if result.unverified_quotes:
            lines.append(f"**{len(result.unverified_quotes)} of {len(result.quotes)} quoted spans were not found "
                         "verbatim in the memos, failure details or transcripts; treat the claims they support as "
                         "unconfirmed:**")
            lines.extend(f"- {md_code(q)}" for q in result.unverified_quotes)
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


def _findings_lines(week: FindingsWeek | None) -> list[str]:
    """The report's lead: what changed among the findings this week (new and apparently resolved first), every
    status decided by code from the week's trials; then the notes on what code dropped from the model's proposals."""
    if week is None:
        return []
    from mcp_evals_pipeline.findings.weekly import CHANGE_LABELS, CHANGE_ORDER

    lines = ["## What changed: findings (statuses decided by code from the trials, never by the model)", ""]
    if not week.findings:
        lines += ["No findings on file yet.", ""]
    for status in CHANGE_ORDER:
        found = week.with_status(status)
        if not found:
            continue
        lines += [f"**{CHANGE_LABELS[status]}**", ""]
        for f in found:
            entry = week.entry(f)
            if entry is None:  # with_status returns only the findings judged this week
                continue
            seen = (f"; {len(entry.matching_trials)} matching trial(s): "
                    + ", ".join(md_code(t) for t in entry.matching_trials[:5])
                    + (" …" if len(entry.matching_trials) > 5 else "")) if entry.matching_trials else ""
            closed = (f"; closed by {md_text(f.closes[-1].by)} ({md_text(_clip(f.closes[-1].reason, 80))})"
                      if f.closed else "")
            lines.append(f"- {f.id} [{f.category}] {md_text(f.title)} (first seen {f.first_seen}, last seen "
                         f"{f.last_seen}{seen}{closed})")
        lines.append("")
    if week.notes:
        lines += ["Dropped from the model's findings proposals (code checks every id, signature and quote):", ""]
        lines += [f"- {md_text(n)}" for n in week.notes] + [""]
    return lines


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
             *_findings_slack(result.findings),
             f"Pass rate: *{stats.headline.fraction()}* valid scored trials "
             f"({stats.invalid} invalid excluded)."]
    if len(stats.by_suite) > 1:  # the pooled rate is context: each suite x condition is a headline of its own
        lines.extend(f"• {r.name}: *{r.fraction()}*" for r in stats.by_suite)
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


def _findings_slack(week: FindingsWeek | None) -> list[str]:
    """Slack leads with what changed: new findings and apparently resolved ones (statuses by code)."""
    if week is None:
        return []
    lines = []
    for status, label in (("new", "New findings"), ("apparently-resolved", "Apparently resolved")):
        found = week.with_status(status)
        if found:
            lines.append(f"{label}: " + "; ".join(f"{f.id} {_clip(f.title, 80)}" for f in found))
    return lines


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
               store: TrialStore | None = None, agents: tuple[str, ...] = (),
               findings_dir: Path | None = None) -> SynthesisResult:
    """Write eval_results/synthesis/<end_date>.md (or `out_dir`/<end_date>.md) and optionally post to Slack.

    Configuration errors (SLACK_WEBHOOK_URL missing with `slack`, no model key without `dry_run`) raise
    SynthesisError before anything is read. A failing model call still writes the report with the computed figures
    and says the model failed. A failed Slack post raises after the report is written. With require_model=False
    (the scheduled asset) a missing key writes the figures and states that the model part was skipped. `agents`:
    only these agent runners (default every real model: replay only when named, see figures.Window). Findings
    (eval_results/findings/, or `findings_dir`) are updated for the week before the report, which leads with them;
    a malformed findings file raises before anything is read or written."""
    model = model or SYNTHESIS_MODEL
    webhook = os.environ.get(SLACK_ENV) if slack else None
    if slack and not webhook:
        raise SynthesisError(f"--slack needs the {SLACK_ENV} environment variable (a Slack incoming-webhook URL); "
                             "it is not set. Set it or omit --slack.")
    api_key = first_key(SYNTHESIS_KEY_ENV)
    if not dry_run and api_key is None and require_model:
        raise SynthesisError(f"the synthesis model {model} needs {' or '.join(SYNTHESIS_KEY_ENV)}; it is not set. "
                             "Use --dry-run to see the prompt and figures without a model call.")

    from mcp_evals_pipeline.findings.signature import observe
    from mcp_evals_pipeline.findings.store import FindingsError, FindingsStore
    from mcp_evals_pipeline.findings.weekly import prompt_part

    found = FindingsStore(findings_dir)
    try:  # a malformed findings file stops the synthesis before anything is read or written
        on_file = found.load()
    except FindingsError as exc:
        raise SynthesisError(str(exc)) from exc

    end = _as_date(end_date)
    if results_dir is not None:
        stats = stats_from_results_dir(Path(results_dir), end, days, agents)
    else:
        stats = compute_week_stats(store or TrialStore(), end, days, agents)
    observed = observe(stats)
    findings_prompt = prompt_part(on_file, observed)
    prompt = build_prompt(stats, findings=findings_prompt)
    result = SynthesisResult(stats=stats, prompt=prompt, report_path=None, model=model)

    if dry_run:
        print(render_stats(stats))
        print("=" * 30 + " prompt (system) " + "=" * 30)
        print(SYSTEM_PROMPT)
        print("=" * 30 + " prompt (user) " + "=" * 30)
        # The prompt's figures are the ones just printed: said once, not twice.
        print(build_prompt(stats, figures=False, findings=findings_prompt))
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
    block = None
    if result.model_text:
        from mcp_evals_pipeline.findings.weekly import split_model_text

        # The findings block is data for code, not prose: out of the quotes and out of the report's text.
        result.model_text, block = split_model_text(result.model_text)
        result.quotes = extract_quotes(result.model_text)
        _, result.unverified_quotes = verify_quotes(result.quotes, _quote_sources(stats))
        result.missing_sections = [s for s in SECTIONS
                                   if not re.search(rf"^#+\s*{re.escape(s)}", result.model_text, re.MULTILINE)]

    from mcp_evals_pipeline.findings.weekly import apply_week

    result.findings = apply_week(on_file, observed, block, _quote_sources(stats), found,
                                 model_called=result.model_text is not None)
    if results_dir is None:
        from mcp_evals_pipeline.findings.store import index_findings

        with (store or TrialStore()).connect() as con:
            index_findings(con, result.findings.findings)

    target_dir = Path(out_dir) if out_dir else synthesis_dir()
    target_dir.mkdir(parents=True, exist_ok=True)
    result.report_path = target_dir / f"{end.isoformat()}.md"
    text = render_report(result)
    if results_dir is None:
        trend = _trend_picture(store or TrialStore(), target_dir / f"{end.isoformat()}-trend.png", end, agents)
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


def _trend_picture(store: TrialStore, path: Path, end: date, agents: tuple[str, ...] = ()) -> Path | None:
    """The trend chart beside the synthesis (every suite and the figures' agents up to the window's end); a picture
    that cannot be drawn never costs the report its figures."""
    from mcp_evals_pipeline.reporting.plots import trend_chart
    from mcp_evals_pipeline.sql_models import materialize_models

    try:
        with store.connect() as con:
            materialize_models(con, names=["stg_trials", "trends"])
            return trend_chart(con, path, until=end, agents=agents)
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
