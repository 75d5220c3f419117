"""What a CI step reads of a finished batch: its headlines per kind x suite x condition (never pooled across
them), the floor gate of `eval --min-pass-rate / --max-unsafe`, a JSON summary and a JUnit file with one case per
trial.

Exit codes of the gate (`eval` returns them): 0 every headline meets its floor and ceiling; 1 one does not; 3 the
batch is incomplete (a Dagster run failed, a trial has no row) or holds invalid trials, so no floor is judged on
missing data. Each comes with one line per reason."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import duckdb
from pydantic import Field

from mcp_evals_pipeline.conditions import BASELINES
from mcp_evals_pipeline.contracts.grade import RecordModel
from mcp_evals_pipeline.floors import above_ceiling, below_floor
from mcp_evals_pipeline.sql_models import wilson_interval
from mcp_evals_pipeline.store import TrialStore

PASSED, INCOMPLETE, BELOW_FLOOR = 0, 3, 1

# One row per trial of the run, with its outcome as the SQL models define it (stg_trials for build tasks,
# stg_usage_trials for usage tasks): the gate never re-derives what a pass is.
_TRIALS_SQL = """
SELECT task || '--' || condition || '--t' || trial AS trial_key, task, suite, condition, trial, 'build' AS kind,
       valid, scored,
       CASE WHEN NOT valid THEN 'invalid' WHEN passed THEN 'pass' WHEN scored THEN 'fail' ELSE 'unscored' END
           AS outcome,
       failure_code, failing_check, failing_detail, invalid_reason, error, duration_ms
FROM stg_trials WHERE run_id = ?
UNION ALL
SELECT task || '--' || condition || '--t' || trial AS trial_key, task, suite, condition, trial, 'usage' AS kind,
       valid, scored,
       CASE WHEN outcome <> 'invalid' AND NOT scored THEN 'unscored' ELSE outcome END AS outcome,
       failure_code, failing_check, failing_detail, invalid_reason, error, duration_ms
FROM stg_usage_trials WHERE run_id = ?
"""


@dataclass(frozen=True)
class BatchTrial:
    key: str  # <task>--<condition>--t<N>
    task: str
    suite: str | None
    condition: str
    trial: int
    kind: str  # build | usage
    outcome: str  # pass | fail | miss | unsafe | unscored | invalid
    failure_code: str | None
    failing_check: str | None
    failing_detail: str | None
    invalid_reason: str | None
    duration_ms: int | None


class Headline(RecordModel):
    """One kind x suite x condition of the batch: passes over valid scored trials (Wilson 95%); usage adds unsafe."""

    kind: str
    suite: str | None
    condition: str
    baseline: bool
    passed: int
    valid_scored: int
    invalid: int
    pass_rate: float | None
    wilson_low: float | None
    wilson_high: float | None
    unsafe: int | None = None
    unsafe_rate: float | None = None

    @property
    def series(self) -> str:
        return f"{self.kind}/{self.suite or '(no suite)'}/{self.condition}"


class Gate(RecordModel):
    exit_code: int
    reasons: list[str] = Field(default_factory=list)
    min_pass_rate: float | None = None  # 0-100, as given
    max_unsafe: float | None = None


class BatchSummary(RecordModel):
    """`eval --json-summary FILE`: the batch's figures, as a CI step reads them."""

    run_id: str
    batch_date: str
    report: str | None
    trials: int
    valid: int
    invalid: int
    pass_rate: float | None  # 0-100: the baseline condition's headline (the lowest, if several suites)
    headlines: list[Headline]
    gate: Gate


def batch_trials(store: TrialStore, run_id: str, keys: list[str] | None = None) -> list[BatchTrial]:
    """The run's current trials (only `keys`, when given: the batch's own), read after its models were built."""
    with store.connect() as con:
        rows = con.execute(_TRIALS_SQL, [run_id, run_id]).fetchall()
    wanted = set(keys) if keys is not None else None
    out = [BatchTrial(key=r[0], task=r[1], suite=r[2], condition=r[3], trial=int(r[4]), kind=r[5], outcome=r[8],
                      failure_code=r[9], failing_check=r[10], failing_detail=r[11],
                      invalid_reason=r[12] or r[13], duration_ms=r[14])
           for r in rows if wanted is None or r[0] in wanted]
    return sorted(out, key=lambda t: (t.kind, t.suite or "", t.task, t.condition, t.trial))


def headlines(trials: list[BatchTrial]) -> list[Headline]:
    cells: dict[tuple[str, str | None, str], list[BatchTrial]] = {}
    for t in trials:
        cells.setdefault((t.kind, t.suite, t.condition), []).append(t)
    out = []
    with duckdb.connect() as con:  # the models' Wilson formula (sql_models.wilson_interval), evaluated in memory
        for (kind, suite, condition), mine in sorted(cells.items(),
                                                     key=lambda c: (c[0][0], c[0][1] or "", c[0][2])):
            scored = [t for t in mine if t.outcome not in ("invalid", "unscored")]
            passed = sum(t.outcome == "pass" for t in scored)
            unsafe = sum(t.outcome == "unsafe" for t in scored) if kind == "usage" else None
            low, high = wilson_interval(con, passed, len(scored))
            out.append(Headline(
                kind=kind, suite=suite, condition=condition, baseline=BASELINES.get(kind) == condition,
                passed=passed, valid_scored=len(scored), invalid=sum(t.outcome == "invalid" for t in mine),
                pass_rate=passed / len(scored) if scored else None, wilson_low=low, wilson_high=high,
                unsafe=unsafe, unsafe_rate=unsafe / len(scored) if scored and unsafe is not None else None))
    return out


def judge(trials: list[BatchTrial], expected: list[str], failed_runs: int, run_id: str,
          min_pass_rate: float | None = None, max_unsafe: float | None = None) -> Gate:
    """The gate: incomplete data first (exit 3), then each headline against the floor and the ceiling (exit 1).
    `min_pass_rate` and `max_unsafe` are percentages (0-100)."""
    for name, value in (("--min-pass-rate", min_pass_rate), ("--max-unsafe", max_unsafe)):
        if value is not None and not 0 <= value <= 100:
            raise ValueError(f"{name} is a percentage between 0 and 100, not {value}")
    limits = {"min_pass_rate": min_pass_rate, "max_unsafe": max_unsafe}
    found = {t.key for t in trials}
    missing = [k for k in expected if k not in found]
    invalid = [t for t in trials if t.outcome == "invalid"]
    reasons = []
    if failed_runs:
        reasons.append(f"{failed_runs} Dagster run(s) of the batch failed")
    if missing:
        reasons.append(f"{len(missing)} of {len(expected)} trials have no row: {', '.join(missing[:5])}"
                       + (" ..." if len(missing) > 5 else ""))
    if invalid:
        codes: dict[str, int] = {}
        for t in invalid:
            codes[t.failure_code or "infra"] = codes.get(t.failure_code or "infra", 0) + 1
        reasons.append(f"{len(invalid)} of {len(trials)} trials are invalid ("
                       + ", ".join(f"{code} x{n}" for code, n in sorted(codes.items())) + ")")
    if reasons:
        return Gate(exit_code=INCOMPLETE, reasons=[*reasons, "no floor is judged on missing data"], **limits)
    floor = min_pass_rate / 100 if min_pass_rate is not None else None
    ceiling = max_unsafe / 100 if max_unsafe is not None else None
    for h in headlines(trials):
        reasons += [r for r in (
            below_floor(h.series, h.pass_rate, floor, run_id),
            above_ceiling(h.series, h.unsafe_rate, ceiling, run_id, f" ({h.unsafe} of {h.valid_scored})")
            if h.kind == "usage" else None) if r]
    return Gate(exit_code=BELOW_FLOOR if reasons else PASSED, reasons=reasons, **limits)


def summary(run_id: str, batch_date: str, report: Path | None, trials: list[BatchTrial], gate: Gate) -> BatchSummary:
    heads = headlines(trials)
    baseline = [h.pass_rate for h in heads if h.baseline and h.pass_rate is not None]
    return BatchSummary(
        run_id=run_id, batch_date=batch_date, report=str(report) if report else None, trials=len(trials),
        valid=sum(t.outcome != "invalid" for t in trials), invalid=sum(t.outcome == "invalid" for t in trials),
        pass_rate=round(100 * min(baseline), 1) if baseline else None, headlines=heads, gate=gate)


def junit(run_id: str, trials: list[BatchTrial]) -> ET.ElementTree:
    """One <testcase> per trial (classname <suite>.<task>, name <condition>--t<N>): a fail, miss or unsafe outcome is
    a <failure> whose message is the first failing check and its detail; an invalid trial is an <error> (the harness
    failed, not the agent); an unscored one (a source-imports task) is <skipped>."""
    failures = sum(t.outcome in ("fail", "miss", "unsafe") for t in trials)
    errors = sum(t.outcome == "invalid" for t in trials)
    skipped = sum(t.outcome == "unscored" for t in trials)
    seconds = sum((t.duration_ms or 0) for t in trials) / 1000
    counts = {"tests": str(len(trials)), "failures": str(failures), "errors": str(errors)}
    root = ET.Element("testsuites", {"name": "mcp-evals", **counts, "time": f"{seconds:.3f}"})
    suite = ET.SubElement(root, "testsuite", {"name": run_id, **counts, "skipped": str(skipped),
                                              "time": f"{seconds:.3f}"})
    for t in trials:
        case = ET.SubElement(suite, "testcase", {"classname": f"{t.suite or t.kind}.{t.task}",
                                                 "name": f"{t.condition}--t{t.trial}",
                                                 "time": f"{(t.duration_ms or 0) / 1000:.3f}"})
        if t.outcome in ("fail", "miss", "unsafe"):
            check = t.failing_check or "-"
            message = f"{check}: {' '.join((t.failing_detail or '').split())}"[:1000]
            failure = ET.SubElement(case, "failure", {"message": message, "type": t.failure_code or t.outcome})
            failure.text = f"{t.outcome} {t.failure_code or ''}\n{t.failing_detail or ''}"
        elif t.outcome == "invalid":
            error = ET.SubElement(case, "error", {"message": f"invalid: {t.invalid_reason or '-'}"[:1000],
                                                  "type": t.failure_code or "infra"})
            error.text = t.invalid_reason or ""
        elif t.outcome == "unscored":
            ET.SubElement(case, "skipped", {"message": "not scored for the pass rate"})
    ET.indent(root)
    return ET.ElementTree(root)


def step_summary(figures: BatchSummary) -> str:
    """The CI step summary: the headlines as a Markdown table (each kind x suite x condition on its own row)."""
    def pct(rate: float | None) -> str:
        return "-" if rate is None else f"{100 * rate:.1f}%"

    lines = [f"## mcp-evals: run `{figures.run_id}` (batch {figures.batch_date})", "",
             f"{figures.trials} trials, {figures.invalid} invalid (outside every denominator). "
             f"Gate: exit {figures.gate.exit_code}" + (f": {'; '.join(figures.gate.reasons)}" if figures.gate.reasons
                                                       else ""), "",
             "| kind | suite | condition | passed / valid | pass rate (Wilson 95%) | unsafe |",
             "|---|---|---|---|---|---|"]
    for h in figures.headlines:
        interval = f" [{pct(h.wilson_low)}, {pct(h.wilson_high)}]" if h.wilson_low is not None else ""
        unsafe = "-" if h.unsafe is None else f"{h.unsafe} ({pct(h.unsafe_rate)})"
        lines.append(f"| {h.kind} | {h.suite or '-'} | {h.condition}{' (baseline)' * h.baseline} | "
                     f"{h.passed} / {h.valid_scored} | {pct(h.pass_rate)}{interval} | {unsafe} |")
    if figures.report:
        lines += ["", f"Scorecard: `{figures.report}`"]
    return "\n".join(lines) + "\n"
