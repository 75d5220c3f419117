"""What the synthesis model is asked: the figures as context and the failing trials' memos as evidence, within
a budget."""

from __future__ import annotations

from collections import defaultdict

from mcp_evals_pipeline.judge import (
    memo_body,
    truncate_middle,
)
from mcp_evals_pipeline.synthesis.figures import (
    ISSUE_CATEGORIES,
    MAX_LISTED_WITHOUT_MEMO,
    MEMO_CHAR_BUDGET,
    MEMOS_CHAR_BUDGET,
    SECTIONS,
    FailingTrial,
    WeekStats,
)
from mcp_evals_pipeline.synthesis.render import _clip, render_stats, suspect_sentence

# ---------------------------------------------------------------------------------------------------------------
# The prompt

SYSTEM_PROMPT = ("You write the qualitative part of a weekly report on agentic-readiness evals of an MCP server SDK. "
                 "You summarize and cite; you never compute or score.")

INSTRUCTIONS = f"""\
Coding agents were asked to build MCP servers with an SDK; a deterministic grader marked each trial pass, fail or \
invalid (infrastructure). Code has already computed every figure below. An unscored judge wrote a memo per trial \
(prose with verbatim transcript quotes). Your job is only the qualitative part.

Write these three sections as markdown, with these headings (and, when the end of this prompt asks for it, the \
findings section after them):

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


FIGURES_PLACEHOLDER = "(here the model reads the computed figures printed above, without the failing-trials tables)\n"


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


def build_prompt(stats: WeekStats, memos: list[FailingTrial] | None = None, *, figures: bool = True,
                 findings: str | None = None) -> str:
    """The model's whole user message: the instructions, the code's figures as context, the suspects and the
    failing trials' memos. `memos` defaults to the window's failing trials (`stats.failing`). figures=False puts
    a placeholder where the figures go (the dry run, which has just printed them). `findings`: the open findings
    and the week's observed signature items, with the fourth section's format (findings/weekly.prompt_part)."""
    failing = stats.failing if memos is None else memos
    chosen, left_out = _select_memos(failing)
    parts = [INSTRUCTIONS, "# Figures computed by code (context only; do not restate)", "",
             render_stats(stats, failing_table=False) if figures else FIGURES_PLACEHOLDER]
    parts.append("# Suspect tasks")
    suspects = "\n".join(f"- {suspect_sentence(s)}" for s in stats.suspects) if stats.suspects else "None."
    parts.append(suspects if figures or not stats.suspects else "(the suspect tasks printed above)")
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
    if findings:
        parts += ["", "# Findings on file, and the fourth section", "", findings]
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
