"""`mcp-evals compare A B`: what changed between two batches, in the terms a team acts on.

A side is a batch id (its current attempts), or `BATCH@GRADER_VERSION` (the newest attempt of each of its slots
graded by that grader version, current or not): after `mcp-evals regrade`, `compare B@<old> B@<new>` shows what
the marker change alone moved, since both sides hold the very same agent work. Or (`compare --sdk A B`) a side is
an SDK release of one suite: the current attempts of every batch of the suite that ran on it (the release a batch
ran on: reporting/release_boundary.py), compared exactly as two batches are.

Cells pair on kind x task x condition x agent runner (the model may differ: that is one of the things a team
compares). For each cell with valid trials on both sides: its verdict (pass: every valid trial passed; fail: none
did; mixed) and the first failing check of its failing trials. Then, per kind x condition x agent runner over the
paired tasks only, the pass rate of each side with its Wilson interval, the change with Newcombe's interval, the
exact sign test over the per-task differences (the task is the unit of pairing), and the trials per side it would
take to see a 10-point change at the first side's rate. Usage cells count unsafe apart: never averaged into a pass
rate. Failure codes, over the paired cells: those only the second batch shows (new) and those only the first did
(fixed); what one side never ran is named as lacking (`B has no usage trials under bare by replay`), never as
fixed or new, and each cell only one side ran is listed under the side that ran it. Invalid trials are counted and
leave every denominator.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import duckdb

from mcp_evals_pipeline.did_you_mean import suggestion
from mcp_evals_pipeline.models import NO_MODEL
from mcp_evals_pipeline.reporting import release_boundary, stats
from mcp_evals_pipeline.reporting.inventory import unknown_batch
from mcp_evals_pipeline.reporting.markdown import md_code, md_text
from mcp_evals_pipeline.sql_models import adhoc, wilson_interval

# A side's attempts: the current ones of its batch, or the newest of each slot graded by the version it names.
_CHOSEN = """
WITH attempts AS (
    SELECT a.*, s.side,
           row_number() OVER (PARTITION BY s.side, a.slot ORDER BY a.attempt DESC) AS newest
    FROM {{ source('trial_attempts') }} AS a
    JOIN (SELECT unnest(?::VARCHAR[]) AS batch, unnest(?::VARCHAR[]) AS grader, unnest([0, 1]) AS side) AS s
      ON a.batch_id = s.batch AND (CASE WHEN s.grader IS NULL THEN a.is_current ELSE a.grader_version = s.grader END)
),
chosen AS (
    SELECT *, valid AND scored_for_pass_rate AS scored, coalesce(kind, 'build') AS kind_
    FROM attempts WHERE newest = 1
)
"""

# A side's attempts by the SDK release their batch ran on (reporting/release_boundary.py says which), one suite:
# the current attempts of every batch of that suite on that release.
_SDK_CHOSEN = """
WITH releases AS ({releases}),
chosen AS (
    SELECT a.*, s.side, a.valid AND a.scored_for_pass_rate AS scored, coalesce(a.kind, 'build') AS kind_
    FROM {{{{ source('trial_attempts') }}}} AS a
    JOIN releases AS r ON r.batch_id = a.batch_id AND r.suite = a.suite
    JOIN (SELECT unnest(?::VARCHAR[]) AS release, unnest([0, 1]) AS side) AS s ON s.release = r.release
    WHERE a.is_current AND a.suite = ?
)
"""

# One row per side x cell, from either selection's `chosen`.
_CELLS = f"""
SELECT
    side, kind_ AS kind, task, condition, agent_runner,
    string_agg(DISTINCT coalesce(agent_model, '{NO_MODEL}'), ', '
               ORDER BY coalesce(agent_model, '{NO_MODEL}')) AS models,
    string_agg(DISTINCT grader_version, ', ' ORDER BY grader_version) AS graders,
    count(*) FILTER (WHERE scored) AS valid,
    count(*) FILTER (WHERE scored AND contract_pass) AS passes,
    count(*) FILTER (WHERE scored AND kind_ = 'usage' AND failure_code LIKE 'usage.unsafe%') AS unsafe,
    count(*) FILTER (WHERE NOT valid) AS invalid,
    list(coalesce(failing_check, '?') || ' (' || coalesce(failure_code, '?') || ')' ORDER BY trial)
        FILTER (WHERE scored AND NOT contract_pass) AS failing,
    list(failure_code ORDER BY trial) FILTER (WHERE scored AND NOT contract_pass) AS codes
FROM chosen
GROUP BY ALL
"""  # the one spelling of a missing model (models.py)

# One row per side x trial slot: within one batch (a regrade) a slot is the same agent work on both sides.
_TRIALS = """
SELECT side, kind_ AS kind, task, condition, trial, agent_runner,
       CASE WHEN NOT valid THEN 'invalid (' || coalesce(invalid_reason, '?') || ')'
            WHEN contract_pass THEN 'pass'
            ELSE 'fail: ' || coalesce(failing_check, '?') || ' (' || coalesce(failure_code, '?') || ')' END AS outcome
FROM chosen
"""

Key = tuple[str, str, str, str]  # kind, task, condition, agent runner
Group = tuple[str, str, str]  # kind, condition, agent runner


class CompareError(ValueError):
    """A side names no trial: nothing to compare (the CLI exits 2 with this message)."""


@dataclass(frozen=True)
class Side:
    batch: str
    grader: str | None = None

    @classmethod
    def parse(cls, text: str) -> Side:
        batch, _, grader = text.partition("@")
        if not batch:
            raise CompareError(f"{text!r}: a side is BATCH or BATCH@GRADER_VERSION")
        return cls(batch, grader or None)

    def __str__(self) -> str:
        return f"{self.batch}@{self.grader}" if self.grader else self.batch


@dataclass(frozen=True)
class SdkSide:
    """The batches of one suite that ran on one SDK release (`compare --sdk A B`)."""

    suite: str
    release: str

    def __str__(self) -> str:
        return f"{self.suite} {self.release}"


@dataclass
class Cell:
    valid: int = 0
    passes: int = 0
    unsafe: int = 0
    invalid: int = 0
    models: str = "-"
    failing: list[str] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float | None:
        return self.passes / self.valid if self.valid else None

    @property
    def verdict(self) -> str:
        if not self.valid:
            return "no valid trial"
        return "pass" if self.passes == self.valid else "fail" if self.passes == 0 else "mixed"

    def first_failing(self) -> str:
        """The most frequent failing check of the cell (with its count), or '-'."""
        if not self.failing:
            return "-"
        check, count = Counter(self.failing).most_common(1)[0]
        return f"{check} x{count}" if count > 1 else check


@dataclass(frozen=True)
class Flip:
    key: Key
    before: Cell
    after: Cell


@dataclass(frozen=True)
class Headline:
    group: Group
    tasks: int
    before: Cell  # pooled over the paired tasks
    after: Cell
    change: stats.Difference | None
    sign: stats.SignTest
    detect_before: int | None
    detect_after: int | None


@dataclass(frozen=True)
class TrialChange:
    key: tuple[str, str, str, int, str]  # kind, task, condition, trial, agent runner
    before: str
    after: str


@dataclass(frozen=True)
class Lack:
    """A kind x condition x agent one side has trials of and the other has none: left out of every figure."""

    side: str  # "a" or "b": the side that lacks it
    group: Group
    cells: int  # the other side's cells (tasks) of it
    trials: int  # and their valid trials


@dataclass
class Comparison:
    a: Side | SdkSide
    b: Side | SdkSide
    headlines: list[Headline]
    flips: list[Flip]
    trial_changes: list[TrialChange]  # one batch on both sides (a regrade): each trial whose outcome moved
    new_codes: dict[str, int]  # code -> failing trials of B
    fixed_codes: dict[str, int]  # code -> failing trials of A
    unpaired: list[Key]  # cells with valid trials on one side only
    lacks: list[Lack]  # whole kind x condition x agent groups one side has no trials of
    invalid: tuple[int, int]
    graders: tuple[str, str]
    # unpaired cell -> "a" or "b", the side with valid trials of it ("" neither): what the other side lacks
    held_by: dict[Key, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        def cell(c: Cell) -> dict[str, Any]:
            return {"passed": c.passes, "valid": c.valid, "unsafe": c.unsafe, "invalid": c.invalid,
                    "verdict": c.verdict, "failing": c.first_failing(), "models": c.models}

        return {
            "a": str(self.a), "b": str(self.b), "graders": list(self.graders), "invalid": list(self.invalid),
            "headlines": [{
                "kind": h.group[0], "condition": h.group[1], "agent": h.group[2], "tasks": h.tasks,
                "a": cell(h.before), "b": cell(h.after),
                "change": None if h.change is None else {"delta": h.change.delta, "low": h.change.low,
                                                        "high": h.change.high},
                "signTest": {"up": h.sign.positive, "down": h.sign.negative, "tied": h.sign.ties,
                             "p": h.sign.p_value},
                "trialsToDetect10pts": {"a": h.detect_before, "b": h.detect_after},
            } for h in self.headlines],
            "flipped": [{"kind": f.key[0], "task": f.key[1], "condition": f.key[2], "agent": f.key[3],
                         "a": cell(f.before), "b": cell(f.after)} for f in self.flips],
            "trialChanges": [{"kind": c.key[0], "task": c.key[1], "condition": c.key[2], "trial": c.key[3],
                              "agent": c.key[4], "a": c.before, "b": c.after} for c in self.trial_changes],
            "newFailureCodes": self.new_codes, "fixedFailureCodes": self.fixed_codes,
            "unpaired": [list(k) for k in self.unpaired],
            "lacks": [{"side": x.side, "kind": x.group[0], "condition": x.group[1], "agent": x.group[2],
                       "otherSideCells": x.cells, "otherSideTrials": x.trials} for x in self.lacks],
        }


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[object]) -> list[dict[str, Any]]:
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _wilson(con: duckdb.DuckDBPyConnection, cell: Cell) -> tuple[float, float, float] | None:
    if not cell.valid:
        return None
    low, high = wilson_interval(con, cell.passes, cell.valid)
    return (cell.passes / cell.valid, float(low or 0.0), float(high or 0.0))


def compare(con: duckdb.DuckDBPyConnection, a: Side, b: Side) -> Comparison:
    rows = _rows(con, adhoc(_CHOSEN + _CELLS), [[a.batch, b.batch], [a.grader, b.grader]])
    for n, side in enumerate((a, b)):
        if not any(r["side"] == n for r in rows):
            missing = unknown_batch(con, side.batch)  # an id that is not there names the ones that are
            raise CompareError(missing or f"no trials of {side}" + (f" graded by {side.grader}" if side.grader
                                                                     else ""))
    result = _compare(con, a, b, rows)
    if a.batch == b.batch:
        result.trial_changes = _trial_changes(con, a, b)
    return result


def sdk_suite(con: duckdb.DuckDBPyConnection, a: str, b: str, suite: str | None) -> str:
    """The suite whose batches ran on releases `a` and `b` (the one named, else the only one that ran both);
    CompareError naming the releases there are when a release is unknown, the suites when several ran both."""
    held = release_boundary.held_releases(con)
    listing = "; ".join(f"{name} {', '.join(versions)}" for name, versions in held.items()) or "none"
    scope = {suite: held.get(suite, [])} if suite else held
    for release in (a, b):
        if not any(release in versions for versions in scope.values()):
            known = {v for versions in scope.values() for v in versions}
            where = f"of {suite} " if suite else ""
            raise CompareError(f"no batch {where}ran on SDK release {release!r}{suggestion(release, known)} (the "
                               f"releases batches ran on, per suite: {listing})")
    both = sorted(name for name, versions in scope.items() if a in versions and b in versions)
    if not both:
        ran = "; ".join(f"{r} by {', '.join(n for n, v in held.items() if r in v)}" for r in (a, b))
        raise CompareError(f"no suite's batches ran on both {a} and {b} ({ran})")
    if len(both) > 1:
        raise CompareError(f"suites {', '.join(both)} each ran on {a} and {b}: name one with --suite")
    return both[0]


def compare_sdk(con: duckdb.DuckDBPyConnection, suite: str, a: str, b: str) -> Comparison:
    """The batches of `suite` on release `a` against those on release `b`: the same pairing, test and intervals as
    two batches (the task is the unit of pairing)."""
    sql = _SDK_CHOSEN.format(releases=release_boundary.releases_sql()) + _CELLS
    return _compare(con, SdkSide(suite, a), SdkSide(suite, b), _rows(con, adhoc(sql), [[a, b], suite]))


def _compare(con: duckdb.DuckDBPyConnection, a: Side | SdkSide, b: Side | SdkSide,
             rows: list[dict[str, Any]]) -> Comparison:
    sides: list[dict[Key, Cell]] = [{}, {}]
    graders: list[set[str]] = [set(), set()]
    for r in rows:
        key = (r["kind"], r["task"], r["condition"], r["agent_runner"])
        sides[r["side"]][key] = Cell(int(r["valid"]), int(r["passes"]), int(r["unsafe"]), int(r["invalid"]),
                                     r["models"], list(r["failing"] or []), list(r["codes"] or []))
        graders[r["side"]].update((r["graders"] or "").split(", "))
    before, after = sides
    paired = sorted(k for k in before.keys() & after.keys() if before[k].valid and after[k].valid)
    unpaired = sorted(k for k in before.keys() | after.keys() if k not in paired)
    flips = [Flip(k, before[k], after[k]) for k in paired if before[k].verdict != after[k].verdict]

    groups: dict[Group, list[Key]] = defaultdict(list)
    for key in paired:
        groups[(key[0], key[2], key[3])].append(key)
    headlines = []
    for group, keys in sorted(groups.items()):
        pooled = []
        for cells in (before, after):
            pooled.append(Cell(sum(cells[k].valid for k in keys), sum(cells[k].passes for k in keys),
                               sum(cells[k].unsafe for k in keys), sum(cells[k].invalid for k in keys),
                               ", ".join(sorted({cells[k].models for k in keys}))))
        wa, wb = _wilson(con, pooled[0]), _wilson(con, pooled[1])
        headlines.append(Headline(
            group, len(keys), pooled[0], pooled[1],
            stats.newcombe(wa, wb) if wa and wb else None,
            stats.sign_test((after[k].rate or 0) - (before[k].rate or 0) for k in keys),
            stats.trials_to_detect(pooled[0].rate), stats.trials_to_detect(pooled[1].rate)))

    # Codes of the cells both sides ran: a code of a cell the other side never ran is neither fixed nor new.
    codes = [Counter(code for key in paired for code in cells[key].codes if code) for cells in sides]
    return Comparison(
        a, b, headlines, flips, [],
        new_codes={c: n for c, n in sorted(codes[1].items()) if c not in codes[0]},
        fixed_codes={c: n for c, n in sorted(codes[0].items()) if c not in codes[1]},
        unpaired=unpaired, lacks=_lacks(before, after),
        held_by={k: "a" if k in before and before[k].valid else "b" if k in after and after[k].valid else ""
                 for k in unpaired},
        invalid=(sum(c.invalid for c in before.values()), sum(c.invalid for c in after.values())),
        graders=(", ".join(sorted(graders[0] - {""})), ", ".join(sorted(graders[1] - {""}))),
    )


def _lacks(before: dict[Key, Cell], after: dict[Key, Cell]) -> list[Lack]:
    """The kind x condition x agent groups with valid trials on one side and none at all on the other."""
    def groups(cells: dict[Key, Cell]) -> dict[Group, list[Cell]]:
        found: dict[Group, list[Cell]] = defaultdict(list)
        for key, cell in cells.items():
            found[(key[0], key[2], key[3])].append(cell)
        return found

    mine, theirs = groups(before), groups(after)
    lacks = []
    for side, held, other in (("b", theirs, mine), ("a", mine, theirs)):
        for group, cells in sorted(other.items()):
            if group not in held and any(c.valid for c in cells):
                lacks.append(Lack(side, group, sum(1 for c in cells if c.valid), sum(c.valid for c in cells)))
    return lacks


def _trial_changes(con: duckdb.DuckDBPyConnection, a: Side, b: Side) -> list[TrialChange]:
    outcomes: list[dict[tuple[str, str, str, int, str], str]] = [{}, {}]
    for r in _rows(con, adhoc(_CHOSEN + _TRIALS), [[a.batch, b.batch], [a.grader, b.grader]]):
        outcomes[r["side"]][(r["kind"], r["task"], r["condition"], r["trial"], r["agent_runner"])] = r["outcome"]
    before, after = outcomes
    return [TrialChange(k, before[k], after[k]) for k in sorted(before.keys() & after.keys())
            if before[k] != after[k]]


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.0f}%"


def _pts(value: float) -> str:
    return f"{value * 100:+.0f} pts"


def _cell(c: Cell, usage: bool) -> str:
    text = f"{c.passes}/{c.valid} pass"
    return text + (f", {c.unsafe}/{c.valid} unsafe" if usage else "")


def _row(*cells: object) -> str:
    """A table row of stored text (task ids, failing checks and outcomes an imported run may have written)."""
    return "| " + " | ".join(md_text(c) for c in cells) + " |"


def render(result: Comparison) -> str:
    a, b = result.a, result.b
    lines = [f"# {a} -> {b}", "",
             f"Grader: {result.graders[0] or '-'} -> {result.graders[1] or '-'}. Invalid trials (outside every "
             f"figure): {result.invalid[0]} -> {result.invalid[1]}.", ""]
    lines += ["## Pass rate over the tasks both ran", ""]
    if not result.headlines:
        lines.append("No task has valid trials on both sides: nothing is paired.")
    for h in result.headlines:
        kind, condition, agent = h.group
        usage = kind == "usage"
        change = (f"{_pts(h.change.delta)} (95% {_pts(h.change.low)} to {_pts(h.change.high)})"
                  if h.change else "-")
        lines.append(f"- {kind} {md_code(condition)} {md_text(agent)}, {h.tasks} task(s): {_cell(h.before, usage)} "
                     f"({_pct(h.before.rate)}) -> {_cell(h.after, usage)} ({_pct(h.after.rate)}): {change}; "
                     f"{h.sign.describe()}; trials per side to see a 10-point change: "
                     f"{h.detect_before or '-'} at {_pct(h.before.rate)}, {h.detect_after or '-'} at "
                     f"{_pct(h.after.rate)}")
        if usage and h.before.unsafe != h.after.unsafe:
            lines.append(f"  - unsafe, counted apart: {h.before.unsafe} -> {h.after.unsafe}")
    lines += ["", "## Cells that flipped", ""]
    if result.flips:
        lines += ["| kind | task | condition | agent | before | after | failing before | failing after |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [_row(*f.key[:4], f"{f.before.verdict} {f.before.passes}/{f.before.valid}",
                       f"{f.after.verdict} {f.after.passes}/{f.after.valid}", f.before.first_failing(),
                       f.after.first_failing()) for f in result.flips]
    else:
        lines.append("None: every paired cell kept its verdict.")
    if result.trial_changes:
        lines += ["", "## Trials whose outcome moved (the same work on both sides)", "",
                  "| kind | task | condition | trial | agent | before | after |", "|---|---|---|---|---|---|---|"]
        lines += [_row(*c.key[:5], c.before, c.after) for c in result.trial_changes]
    if result.lacks:
        lines += ["", "## What each side lacks (left out of every figure above)", ""]
        for lack in result.lacks:
            kind, condition, agent = lack.group
            lacking, other = (b, a) if lack.side == "b" else (a, b)
            lines.append(f"- {md_text(str(lacking))} has no {kind} trials under {md_code(condition)} by "
                         f"{md_text(agent)}: {md_text(str(other))} has {lack.cells} such task(s), {lack.trials} valid "
                         "trial(s)")
    lines += ["", "## Failure codes (of the tasks both ran)", ""]
    lines.append("- new: " + (", ".join(f"{md_code(c)} x{n}" for c, n in result.new_codes.items()) or "none"))
    lines.append("- fixed: " + (", ".join(f"{md_code(c)} x{n}" for c, n in result.fixed_codes.items()) or "none"))
    if result.unpaired:
        lines += ["", f"{len(result.unpaired)} cell(s) have valid trials on one side only and are left out:"]
        for side, label, other in (("a", a, b), ("b", b, a), ("", None, None)):
            keys = [k for k in result.unpaired if result.held_by.get(k, "") == side]
            if keys:
                head = (f"only {md_text(str(label))} ran (what {md_text(str(other))} lacks)" if label is not None
                        else "neither side has a valid trial of")
                lines.append(f"- {head}: " + ", ".join(md_text(f"{k[1]}--{k[2]} ({k[3]})") for k in keys[:10])
                             + (" ..." if len(keys) > 10 else ""))
    return "\n".join(lines) + "\n"
