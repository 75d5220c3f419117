"""What a week's trials show, in the terms of a finding's signature: which signature items failing trials carry
(and which trials), and in which batches each task or case ran at all. Read from the synthesis's figures, so the
findings see exactly the trials the report counts (the same window, agents and validity)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from mcp_evals_pipeline.findings.contract import BuildSignature, Signature, SignatureItem, UsageSignature
from mcp_evals_pipeline.synthesis.figures import FailingTrial, WeekStats


def trial_ref(f: FailingTrial) -> str:
    """How a trial is named in a finding's history: its batch and its name (a name alone repeats every batch)."""
    return f"{f.batch} {f.trial_name}"


@dataclass
class WeekObservation:
    """The observable facts of one synthesis week."""
    week: str  # the window's last day, ISO
    seen: dict[SignatureItem, list[FailingTrial]] = field(default_factory=dict)
    ran: dict[str, set[str]] = field(default_factory=dict)  # task or case -> batch dates with a valid trial
    trial_names: set[str] = field(default_factory=set)  # the failing trials' names, build and usage

    def matching(self, signature: Signature) -> list[FailingTrial]:
        found = [f for item in signature.items() for f in self.seen.get(item, [])]
        return sorted({id(f): f for f in found}.values(), key=lambda f: (f.batch, f.trial_name))

    def batches(self, signature: Signature) -> set[str]:
        return set().union(*(self.ran.get(s, set()) for s in signature.subjects()))

    def described(self) -> list[str]:
        """The observed items, one line each, as the model is shown them."""
        return [f"{describe(item)} ({len(trials)} trial(s))" for item, trials in
                sorted(self.seen.items(), key=lambda kv: describe(kv[0]))]


def observe(stats: WeekStats) -> WeekObservation:
    obs = WeekObservation(week=stats.end_date.isoformat())
    seen: dict[SignatureItem, list[FailingTrial]] = defaultdict(list)
    for f in stats.failing:
        if f.failure_code and f.failing_check:
            seen[BuildSignature(task=f.task, failure_code=f.failure_code, failing_check=f.failing_check)].append(f)
        obs.trial_names.add(f.trial_name)
    ran: dict[str, set[str]] = defaultdict(set)
    for task, batch in stats.ran:
        ran[task].add(batch)
    if stats.usage is not None:
        for f in stats.usage.failing:
            if f.failing_check:
                seen[UsageSignature(case=f.task, mark=f.failing_check)].append(f)
            obs.trial_names.add(f.trial_name)
        for case, batch in stats.usage.ran:
            ran[case].add(batch)
    obs.seen, obs.ran = dict(seen), dict(ran)
    return obs


def describe(item: SignatureItem) -> str:
    if isinstance(item, BuildSignature):
        return f"build task={item.task} failure_code={item.failure_code} failing_check={item.failing_check}"
    return f"usage case={item.case} mark={item.mark}"
