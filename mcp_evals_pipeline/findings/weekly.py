"""One synthesis week of findings: the model's proposals checked against what the week's trials show, new findings
created under fresh ids, and every finding's status decided by code (status.py). Nothing the model writes can set
a status, a count or an id that does not exist."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from pydantic import ValidationError

from mcp_evals_pipeline.findings.contract import (
    CATEGORIES,
    Finding,
    Proposal,
    Quote,
    Signature,
    SignatureItem,
    WeekStatus,
)
from mcp_evals_pipeline.findings.signature import WeekObservation, describe
from mcp_evals_pipeline.findings.status import RESOLVED_AFTER_BATCHES, decide, with_week
from mcp_evals_pipeline.findings.store import FindingsStore
from mcp_evals_pipeline.judge import verify_quotes

# The model's fourth section: one fenced JSON block, read by code, never shown as prose.
FINDINGS_HEADING = "Findings"
_BLOCK = re.compile(rf"^#+\s*{FINDINGS_HEADING}\s*$.*?```(?:json)?\s*\n(.*?)```[ \t]*\n?", re.MULTILINE | re.DOTALL)


def split_model_text(text: str) -> tuple[str, str | None]:
    """(the prose sections, the findings block's JSON or None). The block is taken out of the prose so its
    strings are not counted as quotes and the report shows code's findings table in its place."""
    match = _BLOCK.search(text)
    if not match:
        return text, None
    return (text[:match.start()] + text[match.end():]).rstrip() + "\n", match.group(1)


def parse_proposals(block: str | None) -> tuple[list[Proposal], list[str]]:
    """The valid proposals and a note per one dropped (malformed JSON, a missing field, an id that is no id)."""
    if block is None:
        return [], ["The model gave no findings block: no finding was matched or created from its text."]
    try:
        data = json.loads(block)
    except json.JSONDecodeError as exc:
        return [], [f"The model's findings block is not JSON ({exc}): ignored."]
    items = data.get("proposals") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return [], ["The model's findings block has no list of proposals: ignored."]
    proposals, notes = [], []
    for n, item in enumerate(items, 1):
        try:
            proposals.append(Proposal.model_validate(item))
        except ValidationError as exc:
            err = exc.errors()[0]
            notes.append(f"Proposal {n} dropped: field {'.'.join(str(p) for p in err['loc'])}: {err['msg']}.")
    return proposals, notes


@dataclass
class FindingsWeek:
    week: date
    findings: list[Finding]  # every finding after this week, by id
    created: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # proposals (or parts of them) code dropped, and why

    def entry(self, finding: Finding) -> WeekStatus | None:
        """The finding's verdict for this week (a re-run of an older week reads that week's, not the latest)."""
        return next((h for h in finding.history if h.week == self.week), None)

    def with_status(self, status: str) -> list[Finding]:
        return [f for f in self.findings if (e := self.entry(f)) is not None and e.status == status]


def apply_week(findings: list[Finding], obs: WeekObservation, block: str | None, quote_sources: list[str],
               store: FindingsStore, *, model_called: bool) -> FindingsWeek:
    """The week's proposals applied, then every finding's status decided; the files written (each atomically)."""
    week = date.fromisoformat(obs.week)
    by_id = {f.id: f for f in findings}
    proposals, notes = parse_proposals(block) if model_called else ([], [])
    created: list[str] = []
    for n, p in enumerate(proposals, 1):
        label = f"Proposal {n} ({p.finding}{': ' + p.struggle[:80] if p.struggle else ''})"
        items, dropped = _observed_items(p, obs)
        notes += [f"{label}: signature {d} dropped: not shown by this week's failing trials." for d in dropped]
        owner = {item: f.id for f in by_id.values() for item in f.signature.items()}
        target: Finding | None
        if p.finding == "new":
            taken = sorted({owner[i] for i in items if i in owner})
            if not items:
                notes.append(f"{label} dropped: no signature item it names is in this week's trials.")
                continue
            if taken:  # a struggle already on file keeps its id: no finding twice
                notes.append(f"{label}: its signature is already {taken[0]}'s; matched to it, not created.")
                target = by_id[taken[0]]
            elif not p.title or p.category not in CATEGORIES:
                notes.append(f"{label} dropped: a new finding needs a title and a category "
                             f"(one of {', '.join(CATEGORIES)}).")
                continue
            else:
                fid = store.next_id(list(by_id.values()))
                # Its signature is filled below, where the finding is validated whole.
                target = Finding.model_construct(id=fid, title=p.title, category=p.category, signature=Signature(),
                                                 evidence=[], first_seen=week, last_seen=week, status="new",
                                                 history=[], closes=[])
                created.append(fid)
        elif p.finding not in by_id:
            notes.append(f"{label} dropped: no finding {p.finding} exists (the model may only name the ids it "
                         "was shown, or \"new\").")
            continue
        else:
            target = by_id[p.finding]
            if not items:
                notes.append(f"{label} dropped: none of the signature it names is in this week's trials, so it "
                             "cannot match this week's struggle.")
                continue
        others = [i for i in items if owner.get(i, target.id) != target.id]
        notes += [f"{label}: {describe(i)} is {owner[i]}'s signature; left there." for i in others]
        mine = [i for i in items if i not in others]
        quotes, quote_notes = _verified_quotes(p, obs, quote_sources, week)
        notes += [f"{label}: {q}" for q in quote_notes]
        evidence = list(dict.fromkeys([*target.evidence, *quotes]))
        by_id[target.id] = Finding.model_validate({
            **target.model_dump(), "signature": target.signature.merged(mine).model_dump(),
            "evidence": [q.model_dump() for q in evidence]})
    updated = [with_week(f, decide(f, obs)) for f in sorted(by_id.values(), key=lambda f: f.id)]
    for f in updated:
        store.write(f)
    return FindingsWeek(week=week, findings=updated, created=created, notes=notes)


def _observed_items(p: Proposal, obs: WeekObservation) -> tuple[list[SignatureItem], list[str]]:
    items, dropped = [], []
    for s in p.signature:
        item = s.item()
        if item is None:
            dropped.append(f"{s.model_dump(exclude_none=True)} (neither task+failure_code+failing_check nor "
                           "case+mark)")
        elif item in obs.seen:
            items.append(item)
        else:
            dropped.append(describe(item))
    return list(dict.fromkeys(items)), dropped


def _verified_quotes(p: Proposal, obs: WeekObservation, sources: list[str], week: date,
                     ) -> tuple[list[Quote], list[str]]:
    """The proposal's quotes found verbatim (judge.verify_quotes, as the synthesis checks its own) and attributed
    to a trial of the week; the others are dropped, said so."""
    kept, notes = [], []
    for q in p.quotes:
        trial = q.trial.split()[-1] if q.trial.strip() else ""
        if trial not in obs.trial_names:
            notes.append(f"quote `{q.text[:60]}` dropped: {q.trial!r} is not a failing trial of this week.")
        elif verify_quotes([q.text], sources)[1]:
            notes.append(f"quote `{q.text[:60]}` dropped: not found verbatim in the memos, details or transcripts.")
        else:
            kept.append(Quote(text=q.text, trial=trial, week=week))
    return kept, notes


def closed_now(by: str, reason: str) -> dict[str, str]:
    return {"by": by, "reason": reason, "at": datetime.now(UTC).isoformat(timespec="seconds")}


def prompt_part(findings: list[Finding], obs: WeekObservation) -> str:
    """What the model is shown and asked about findings (appended to the synthesis prompt)."""
    shown = [f for f in findings if not f.closed]
    lines = [f"## {FINDINGS_HEADING}",
             "After the three sections, write a fourth, headed exactly `## Findings`, holding one fenced ```json "
             "block: {\"proposals\": [...]}, one proposal per recurring struggle of this week. Each proposal: "
             "\"struggle\" (a few words), \"finding\" (the id of an open finding below that this struggle is, or "
             "\"new\"), \"signature\" (a list of the observed items below that this struggle shows, each as "
             "{\"task\", \"failure_code\", \"failing_check\"} or {\"case\", \"mark\"}), \"quotes\" (a list of "
             "{\"text\", \"trial\"}: verbatim spans and the trial name they come from) and, for \"new\" only, "
             f"\"title\" and \"category\" (one of {', '.join(CATEGORIES)}). Code decides every finding's status "
             "(new, recurring, apparently-resolved, quiet, not-observed) from the trials: do not write one.",
             "", "### Open findings (id, title, category, signature)"]
    lines += [f"- {f.id}: {f.title} [{f.category}] signature: " + "; ".join(describe(i) for i in f.signature.items())
              for f in shown] or ["None yet."]
    lines += ["", "### Signature items observed in this week's failing trials"]
    lines += [f"- {d}" for d in obs.described()] or ["None."]
    return "\n".join(lines) + "\n"


CHANGE_ORDER = ("new", "apparently-resolved", "recurring", "quiet", "not-observed")
CHANGE_LABELS = {"new": "New", "apparently-resolved": "Apparently resolved", "recurring": "Recurring",
                 "quiet": "Quiet (not seen; its tasks ran in fewer than "
                          f"{RESOLVED_AFTER_BATCHES} clean batches yet)",
                 "not-observed": "Not observed (its tasks did not run)"}
