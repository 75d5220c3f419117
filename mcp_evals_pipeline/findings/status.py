"""A finding's status for one synthesis week, decided by code from the week's trials alone (the model's words never
enter): whether failing trials carry its signature, and whether its tasks ran at all."""

from __future__ import annotations

from datetime import date

from mcp_evals_pipeline.findings.contract import Finding, WeekStatus
from mcp_evals_pipeline.findings.signature import WeekObservation, trial_ref

# A finding is apparently resolved once its tasks (or cases) have run in this many batches after its last sighting
# without its signature: one clean batch can be luck (three trials of a task), two in a row rarely are. Counted
# across weeks, so a week with one batch of the task followed by another is enough.
RESOLVED_AFTER_BATCHES = 2


def decide(finding: Finding, obs: WeekObservation) -> WeekStatus:
    week = date.fromisoformat(obs.week)
    matching = obs.matching(finding.signature)
    batches = obs.batches(finding.signature)
    if matching:
        last = max(f.batch for f in matching)
        return WeekStatus(week=week, status="new" if finding.first_seen == week else "recurring",
                          matching_trials=[trial_ref(f) for f in matching],
                          clean_batches=sum(1 for b in batches if b > last))
    if not batches:
        return WeekStatus(week=week, status="not-observed")
    clean = len(batches) + _clean_since_last_sighting(finding, week)
    return WeekStatus(week=week, status="apparently-resolved" if clean >= RESOLVED_AFTER_BATCHES else "quiet",
                      clean_batches=len(batches))


def _clean_since_last_sighting(finding: Finding, before: date) -> int:
    """Clean batches of the earlier weeks back to (and including) the last week its signature was seen."""
    total = 0
    for entry in sorted((h for h in finding.history if h.week < before), key=lambda h: h.week, reverse=True):
        total += entry.clean_batches
        if entry.matching_trials:
            break
    return total


def with_week(finding: Finding, entry: WeekStatus) -> Finding:
    """The finding with this week's verdict in its history (a re-run of the same week replaces it); its status and
    last_seen follow from the history, never from anything else."""
    history = sorted([h for h in finding.history if h.week != entry.week] + [entry], key=lambda h: h.week)
    seen = [h.week for h in history if h.matching_trials]
    return finding.model_copy(update={"history": history, "status": history[-1].status,
                                      "last_seen": max(seen) if seen else finding.last_seen})
