"""SQL metric models on a hand-built store: every expected number below was worked out by hand from the trial
table in `_dataset()`, not recomputed by the SQL under test. One test runs them on the 259 real legacy runs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest

from mcp_evals_pipeline.contracts.grade import TrialGrade, stage_of_check_id
from mcp_evals_pipeline.contracts.records import RunFile, TrialPerf, TrialRecord
from mcp_evals_pipeline.sql_models import (
    SqlModelError,
    load_models,
    materialize_models,
    scoped_select,
    sql_model_specs,
    topological_order,
)
from mcp_evals_pipeline.store import TrialStore

# The earlier harness's real runs, beside the repository (see DESIGN.md, "Records").

# The interface other code reads: model -> columns, in order.
COLUMNS: dict[str, list[str]] = {
    "pass_rate": ["run_id", "batch_id", "batch_date", "agent_runner", "agent_model", "condition", "passed",
                  "valid_scored", "trials", "invalid", "pass_rate", "wilson_low", "wilson_high"],
    "cell_matrix": ["run_id", "task", "condition", "passed", "valid_scored", "trials", "invalid"],
    "pass_k": ["run_id", "condition", "cells", "k", "all_pass_cells", "pass_k", "reported"],
    "pass_k_curve": ["run_id", "condition", "k", "value", "cells"],
    "skill_deltas": ["run_id", "workspace_part", "skill_passed", "skill_valid", "skill_rate", "noskill_passed",
                     "noskill_valid", "noskill_rate", "delta", "paired_tasks", "paired_delta"],
    "skill_deltas_by_task": ["run_id", "workspace_part", "task", "skill_passed", "skill_valid", "noskill_passed",
                             "noskill_valid", "delta"],
    "performance": ["run_id", "condition", "passed", "median_duration_ms", "median_turns", "median_tool_calls",
                    "median_tokens_in", "median_tokens_out", "total_cost_usd", "cost_per_success"],
    "failure_breakdown": ["run_id", "failure_code", "failed"],
    "sdk_path_breakdown": ["run_id", "sdk_path", "trials", "valid", "invalid"],
    "invalid_breakdown": ["run_id", "invalid_reason", "invalid"],
    "static_adoption": ["run_id", "task", "condition", "valid", "passed"],
    "trends": ["batch_id", "batch_date", "suite", "agent_runner", "agent_model", "condition", "grader_versions",
               "tasks", "passed", "valid_scored", "invalid", "pass_rate", "wilson_low", "wilson_high",
               "grader_boundary", "task_set_boundary", "task_set"],
    "suspect_markers": ["task", "prompt_hash", "agent_runner", "agent_model", "batches", "valid_scored", "failed",
                        "top_failing_check", "top_check_failures", "top_detail", "top_detail_failures", "top_share",
                        "suspect"],
    "usage_rates": ["run_id", "batch_id", "batch_date", "agent_runner", "agent_model", "condition", "passed",
                    "missed", "unsafe", "leaked", "valid_scored", "invalid", "trials", "pass_rate", "pass_wilson_low",
                    "pass_wilson_high", "unsafe_rate", "unsafe_wilson_low", "unsafe_wilson_high"],
    "usage_cases": ["run_id", "task", "prompt_hash", "condition", "passed", "missed", "unsafe", "invalid", "trials",
                    "top_failing_check"],
    "usage_condition_deltas": ["run_id", "agent_runner", "agent_model", "condition", "task", "passed", "unsafe",
                               "valid_scored", "pass_rate", "unsafe_rate", "bare_passed", "bare_unsafe", "bare_valid",
                               "bare_pass_rate", "bare_unsafe_rate", "pass_delta", "unsafe_delta", "paired_cases",
                               "paired_pass_delta"],
    "usage_pass_k": ["run_id", "agent_runner", "agent_model", "condition", "task", "cases", "k", "all_pass_cases",
                     "pass_k", "pass_k_estimate", "passed", "missed", "unsafe", "valid_scored", "invalid", "reported"],
    "usage_trends": ["batch_id", "batch_date", "suite", "agent_runner", "agent_model", "condition", "tasks", "passed",
                     "missed", "unsafe", "valid_scored", "invalid", "pass_rate", "unsafe_rate", "pass_wilson_low"],
    "sdk_comparison": ["suite_a", "suite_b", "agent_runner", "agent_model", "condition", "task_slug", "task_a",
                       "task_b", "paired_tasks", "passed_a", "valid_scored_a", "trials_a", "invalid_a", "pass_rate_a",
                       "wilson_low_a", "wilson_high_a", "passed_b", "valid_scored_b", "trials_b", "invalid_b",
                       "pass_rate_b", "wilson_low_b", "wilson_high_b", "delta", "newcombe_low", "newcombe_high",
                       "recorded_sessions"],
    "usage_model_cases": ["task", "prompt_hash", "agent_runner", "agent_model", "valid_scored", "passed", "missed",
                          "unsafe", "invalid"],
}
USAGE_MODELS = ("usage_rates", "usage_cases", "usage_pass_k", "usage_trends", "usage_model_cases",
                "usage_condition_deltas")

NS, SK = "noskill+blank", "skill+blank"
BARE = "bare"  # the usage tasks' baseline condition
ENTRY_DETAIL = "no entry file found (tried: server.py)"


def _trial(run: str, batch: str, date: str, grader: str, task: str, condition: str, trial: int, outcome: str,
           *, check: str = "", detail: str | None = None, agent: str = "codex", model: str = "gpt-test",
           scored: bool = True, sdk: str = "mcp-use", perf: tuple[int, int, int, int, int] | None = None,
           cost: float | None = None, attempt: int = 1) -> TrialRecord:
    """outcome: "pass", "fail" (at `check`) or an infra code such as "infra.agent"."""
    checks = [{"id": "install", "pass": True}]
    if outcome == "fail":
        checks.append({"id": check, "pass": False, "detail": detail})
    valid = not outcome.startswith("infra.")
    grade = TrialGrade.model_validate({
        "contractPass": outcome == "pass",
        "checks": checks if valid else [],
        "failureCode": None if outcome == "pass" else
        (f"contract.{stage_of_check_id(check)}" if outcome == "fail" else outcome),
        "sdkPath": sdk if valid else "unknown",
        "scoredForPassRate": scored,
    })
    # Failing and invalid trials get outsized numbers: if they leaked into the medians, the medians would move.
    duration, turns, tool_calls, tokens_in, tokens_out = perf or (999_999, 99, 99, 99_999, 9_999)
    return TrialRecord(
        task=task, condition=condition, trial=trial, agent_runner=agent, agent_model=model, grader_version=grader,
        batch_id=batch, batch_date=date, run_id=run, attempt=attempt, valid=valid,
        invalid_reason=None if valid else outcome, grade=grade,
        perf=TrialPerf(duration_ms=duration, turns=turns, tool_calls=tool_calls, tokens_in=tokens_in,
                       tokens_out=tokens_out, cost_usd=cost),
        timestamp=f"{date}T14:00:00Z",
    )


def _dataset() -> tuple[list[TrialRecord], list[TrialRecord]]:
    """(first write, a retry written afterwards).

    codex/gpt-test, three batches (runs R1-R3); claude/sonnet-test, twelve one-trial batches for suspect markers.

    R1 = batch B1, 2026-09-01, grader 2.1.0          noskill+blank              skill+blank
        t-alpha                                      P P F(call:add:1)          P P P
        t-beta                                       F(entry) F(entry) I        P F(tools)
        t-gamma                                      I I I(sandbox)             P P P (last one without cost)
        t-static (source-imports, official-sdk)      P P F(imports)             P
    R2 = B2, 2026-09-03, grader 2.2.0: noskill+blank t-alpha F->retry P, P; t-beta F(entry)
    R3 = B3, 2026-09-05, grader 2.2.0: noskill+blank t-alpha P P, t-beta P; skill+scaffold t-alpha I
    """
    r1 = ("R1", "B1", "2026-09-01", "2.1.0")
    records = [
        _trial(*r1, "t-alpha", NS, 1, "pass", perf=(1000, 10, 26, 100, 10), cost=0.10),
        _trial(*r1, "t-alpha", NS, 2, "pass", perf=(2000, 11, 27, 300, 20), cost=0.20),
        _trial(*r1, "t-alpha", NS, 3, "fail", check="call:add:1", cost=0.30),
        _trial(*r1, "t-beta", NS, 1, "fail", check="entry", detail=ENTRY_DETAIL, cost=0.40),
        _trial(*r1, "t-beta", NS, 2, "fail", check="entry", detail=ENTRY_DETAIL, cost=0.50),
        _trial(*r1, "t-beta", NS, 3, "infra.agent"),
        _trial(*r1, "t-gamma", NS, 1, "infra.agent"),
        _trial(*r1, "t-gamma", NS, 2, "infra.agent"),
        _trial(*r1, "t-gamma", NS, 3, "infra.sandbox"),
        _trial(*r1, "t-static", NS, 1, "pass", scored=False, sdk="official-sdk", cost=0.05),
        _trial(*r1, "t-static", NS, 2, "pass", scored=False, sdk="official-sdk", cost=0.05),
        _trial(*r1, "t-static", NS, 3, "fail", check="imports", scored=False, sdk="official-sdk", cost=0.05),
        _trial(*r1, "t-alpha", SK, 1, "pass", perf=(3000, 20, 30, 1000, 70), cost=0.10),
        _trial(*r1, "t-alpha", SK, 2, "pass", perf=(4000, 21, 31, 1000, 70), cost=0.10),
        _trial(*r1, "t-alpha", SK, 3, "pass", perf=(5000, 22, 32, 1000, 70), cost=0.10),
        _trial(*r1, "t-beta", SK, 1, "pass", perf=(6000, 23, 33, 1000, 70), cost=0.10),
        _trial(*r1, "t-beta", SK, 2, "fail", check="tools", cost=0.10),
        _trial(*r1, "t-gamma", SK, 1, "pass", perf=(7000, 24, 34, 1000, 70), cost=0.10),
        _trial(*r1, "t-gamma", SK, 2, "pass", perf=(8000, 25, 35, 1000, 70), cost=0.10),
        _trial(*r1, "t-gamma", SK, 3, "pass", perf=(9000, 26, 36, 1000, 70), cost=None),
        _trial(*r1, "t-static", SK, 1, "pass", scored=False, sdk="official-sdk", cost=0.05),
    ]
    r2 = ("R2", "B2", "2026-09-03", "2.2.0")
    records += [
        _trial(*r2, "t-alpha", NS, 1, "fail", check="call:add:1", cost=0.01),  # superseded by attempt 2
        _trial(*r2, "t-alpha", NS, 2, "pass", perf=(1500, 5, 5, 50, 5), cost=0.02),
        _trial(*r2, "t-beta", NS, 1, "fail", check="entry", detail=ENTRY_DETAIL, cost=0.03),
    ]
    r3 = ("R3", "B3", "2026-09-05", "2.2.0")
    records += [
        _trial(*r3, "t-alpha", NS, 1, "pass", perf=(1, 1, 1, 1, 1), cost=0.01),
        _trial(*r3, "t-alpha", NS, 2, "pass", perf=(1, 1, 1, 1, 1), cost=0.01),
        _trial(*r3, "t-beta", NS, 1, "pass", perf=(1, 1, 1, 1, 1), cost=0.01),
        _trial(*r3, "t-alpha", "skill+scaffold", 1, "infra.agent"),
    ]
    # claude: batch i (1..12) on 2026-10-<i>; batch ids run backwards so only the date gives the right order.
    # t-broken: passes in batches 1-2, then fails at `entry` in 3-12 (batch 7 with another detail).
    # t-varied: fails at `start` in batches 1-2 (outside the 10-batch window; counted, they would win the top
    # check), then call:a:1 in 3-6, tools in 7-9, start in 10-12.
    for i in range(1, 13):
        run = (f"C{i:02d}", f"c-{13 - i:02d}", f"2026-10-{i:02d}", "3.0.0")
        common = {"agent": "claude", "model": "sonnet-test"}
        if i <= 2:
            records.append(_trial(*run, "t-broken", NS, 1, "pass", perf=(1, 1, 1, 1, 1), **common))
        else:
            detail = "no entry file found (tried: main.py)" if i == 7 else ENTRY_DETAIL
            records.append(_trial(*run, "t-broken", NS, 1, "fail", check="entry", detail=detail, **common))
        varied = "start" if i <= 2 or i >= 10 else "call:a:1" if i <= 6 else "tools"
        records.append(_trial(*run, "t-varied", NS, 1, "fail", check=varied, detail=f"{varied} failed", **common))
    retry = [_trial(*r2, "t-alpha", NS, 1, "pass", perf=(500, 5, 5, 50, 5), cost=0.01, attempt=2)]
    return records, retry


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlmodels") / "evals.duckdb"
    store = TrialStore(path)
    first, retry = _dataset()
    store.record_trials(first)
    store.record_trials(retry)
    with store.connect() as con:
        counts = materialize_models(con)
    assert set(counts) == {"stg_trials", "stg_usage_trials", *COLUMNS}
    return path


def _rows(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _approx(rows: list[tuple]) -> list[tuple]:
    return [tuple(pytest.approx(v) if isinstance(v, float) else v for v in row) for row in rows]


@pytest.mark.parametrize("model", sorted(COLUMNS))
def test_columns_are_the_interface(db: Path, model: str) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        names = [d[0] for d in con.execute(f"SELECT * FROM {model} LIMIT 0").description]
    assert names == COLUMNS[model]


def test_stg_trials_is_current_attempts_plus_flags(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        trial_columns = [d[0] for d in con.execute("SELECT * FROM trials LIMIT 0").description]
        stg_columns = [d[0] for d in con.execute("SELECT * FROM stg_trials LIMIT 0").description]
    assert stg_columns == [*trial_columns, "cell", "scored", "passed", "skill_part", "workspace_part"]
    # 21 + 3 + 4 + 24 current trials; R2's first attempt at t-alpha t1 is superseded by its retry.
    assert _rows(db, "SELECT count(*) FROM stg_trials") == [(52,)]
    assert _rows(db, "SELECT contract_pass FROM stg_trials WHERE run_id = 'R2' AND task = 't-alpha' AND trial = 1") \
        == [(True,)]
    assert _rows(db, """SELECT cell, scored, passed, skill_part, workspace_part FROM stg_trials
                        WHERE run_id = 'R1' AND trial = 1 AND condition = 'skill+blank' ORDER BY task""") == [
        ("t-alpha--skill+blank", True, True, "skill", "blank"),
        ("t-beta--skill+blank", True, True, "skill", "blank"),
        ("t-gamma--skill+blank", True, True, "skill", "blank"),
        ("t-static--skill+blank", False, False, "skill", "blank"),
    ]


def test_pass_rate(db: Path) -> None:
    rows = _rows(db, "SELECT * EXCLUDE (batch_id, agent_runner, agent_model) FROM pass_rate WHERE run_id LIKE 'R%'")
    d1, d2, d3 = dt.date(2026, 9, 1), dt.date(2026, 9, 3), dt.date(2026, 9, 5)
    assert rows == _approx([
        # R1: 9 of 13 valid scored passed; 21 rows, 4 invalid; t-static's 4 valid trials count only in `trials`.
        ("R1", d1, "*", 9, 13, 21, 4, 9 / 13, 0.4236888781333764, 0.8731950283838191),
        ("R1", d1, NS, 2, 5, 12, 4, 0.4, 0.1176182311592533, 0.769280067791163),
        ("R1", d1, SK, 7, 8, 9, 0, 0.875, 0.5291051942301386, 0.9775830911367038),
        ("R2", d2, "*", 2, 3, 3, 0, 2 / 3, 0.2076549551264879, 0.9385096847238394),
        ("R2", d2, NS, 2, 3, 3, 0, 2 / 3, 0.2076549551264879, 0.9385096847238394),
        ("R3", d3, "*", 3, 3, 4, 1, 1.0, 0.43849391955098227, 1.0),
        ("R3", d3, NS, 3, 3, 3, 0, 1.0, 0.43849391955098227, 1.0),
        ("R3", d3, "skill+scaffold", 0, 0, 1, 1, None, None, None),  # nothing valid: no rate, no interval
    ])
    assert _rows(db, "SELECT DISTINCT batch_id, agent_runner, agent_model FROM pass_rate WHERE run_id = 'R1'") \
        == [("B1", "codex", "gpt-test")]
    # A 0/2 batch: the lower bound is exactly 0, not a rounding hair below it.
    assert _rows(db, "SELECT passed, valid_scored, wilson_low FROM pass_rate "
                     "WHERE run_id = 'C03' AND condition = '*'") == [(0, 2, 0.0)]


def test_cell_matrix(db: Path) -> None:
    assert _rows(db, "SELECT task, condition, passed, valid_scored, trials, invalid FROM cell_matrix "
                     "WHERE run_id IN ('R1', 'R3') ORDER BY run_id, task, condition") == [
        # R1; t-static is source-imports and absent; t-gamma under noskill held only invalid trials
        ("t-alpha", NS, 2, 3, 3, 0),
        ("t-alpha", SK, 3, 3, 3, 0),
        ("t-beta", NS, 0, 2, 3, 1),
        ("t-beta", SK, 1, 2, 2, 0),
        ("t-gamma", NS, 0, 0, 3, 3),
        ("t-gamma", SK, 3, 3, 3, 0),
        # R3
        ("t-alpha", NS, 2, 2, 2, 0),
        ("t-alpha", "skill+scaffold", 0, 0, 1, 1),
        ("t-beta", NS, 1, 1, 1, 0),
    ]


def test_pass_k(db: Path) -> None:
    assert _rows(db, "SELECT * FROM pass_k WHERE run_id LIKE 'R%'") == _approx([
        # R1 counted cells (valid_scored > 0) as (passes, n): alpha-ns (2,3), alpha-sk (3,3), beta-ns (0,2),
        # beta-sk (1,2), gamma-sk (3,3); gamma-ns has none. k = 2; all-pass: alpha-sk, gamma-sk.
        ("R1", "*", 5, 2, 2, 0.4, True),
        ("R1", NS, 2, 2, 0, 0.0, True),
        ("R1", SK, 3, 2, 2, 2 / 3, True),
        # R2: alpha (2,2), beta (0,1): a one-trial cell, so pass^k is not reported.
        ("R2", "*", 2, 1, 1, 0.5, False),
        ("R2", NS, 2, 1, 1, 0.5, False),
        ("R3", "*", 2, 1, 2, 1.0, False),
        ("R3", NS, 2, 1, 2, 1.0, False),
        ("R3", "skill+scaffold", 0, None, 0, None, False),
    ])


def test_pass_k_curve(db: Path) -> None:
    assert _rows(db, "SELECT * FROM pass_k_curve WHERE run_id IN ('R1', 'R2')") == _approx([
        # k=1: mean(2/3, 1, 0, 1/2, 1) = 19/30; k=2: mean(1/3, 1, 0, 0, 1) = 7/15; k=3 over the n=3 cells: (0+1+1)/3
        ("R1", "*", 1, 19 / 30, 5),
        ("R1", "*", 2, 7 / 15, 5),
        ("R1", "*", 3, 2 / 3, 3),
        ("R1", NS, 1, 1 / 3, 2),
        ("R1", NS, 2, 1 / 6, 2),
        ("R1", NS, 3, 0.0, 1),
        ("R1", SK, 1, 5 / 6, 3),
        ("R1", SK, 2, 2 / 3, 3),
        ("R1", SK, 3, 1.0, 2),
        ("R2", "*", 1, 0.5, 2),
        ("R2", "*", 2, 1.0, 1),
        ("R2", NS, 1, 0.5, 2),
        ("R2", NS, 2, 1.0, 1),
    ])


def test_skill_deltas(db: Path) -> None:
    # Only R1 has both skill+X and noskill+X (R3's skill+scaffold has no noskill+scaffold partner).
    assert _rows(db, "SELECT * FROM skill_deltas_by_task") == _approx([
        ("R1", "blank", "t-alpha", 3, 3, 2, 3, 1 / 3),
        ("R1", "blank", "t-beta", 1, 2, 0, 2, 0.5),
        ("R1", "blank", "t-gamma", 3, 3, 0, 0, None),  # no valid noskill trial: unpaired
    ])
    # Pooled over the paired tasks alpha + beta: skill 4/5, noskill 2/5; paired mean (1/3 + 1/2) / 2 = 5/12.
    assert _rows(db, "SELECT * FROM skill_deltas") == _approx([
        ("R1", "blank", 4, 5, 0.8, 2, 5, 0.4, 0.4, 2, 5 / 12),
    ])


def test_performance(db: Path) -> None:
    assert _rows(db, "SELECT * FROM performance WHERE run_id = 'R1'") == _approx([
        # '*' passes: durations 1000, 2000, 3000..9000 -> 5000; turns 10, 11, 20..26 -> 22;
        # tool calls 26, 27, 30..36 -> 32; cost unknown for t-gamma skill t3, so no total and no cost per success.
        ("R1", "*", 9, 5000.0, 22.0, 32.0, 1000.0, 70.0, None, None),
        # two passes: medians average the middle pair (26, 27 -> 26.5). Valid trials cost
        # 0.10 + 0.20 + 0.30 + 0.40 + 0.50 + 3 x 0.05 = 1.65 (invalid ones lack cost and do not count); / 2 passes.
        ("R1", NS, 2, 1500.0, 10.5, 26.5, 200.0, 15.0, 1.65, 0.825),
        ("R1", SK, 7, 6000.0, 23.0, 33.0, 1000.0, 70.0, None, None),
    ])
    # R3: no passes under skill+scaffold, and its only trial is invalid, so there is no cost at all.
    assert _rows(db, "SELECT condition, passed, median_turns, total_cost_usd, cost_per_success FROM performance "
                     "WHERE run_id = 'R3'") == _approx([
        ("*", 3, 1.0, 0.03, 0.01), (NS, 3, 1.0, 0.03, 0.01), ("skill+scaffold", 0, None, None, None)])


def test_breakdowns(db: Path) -> None:
    assert _rows(db, "SELECT failure_code, failed FROM failure_breakdown WHERE run_id = 'R1'") == [
        ("contract.entry", 2), ("contract.calls", 1), ("contract.tools", 1)]  # t-static's imports failure: unscored
    assert _rows(db, "SELECT * FROM failure_breakdown WHERE run_id = 'R2'") == [("R2", "contract.entry", 1)]
    assert _rows(db, "SELECT sdk_path, trials, valid, invalid FROM sdk_path_breakdown "
                     "WHERE run_id = 'R1'") == [("mcp-use", 13, 13, 0), ("official-sdk", 4, 4, 0), ("unknown", 4, 0, 4)]
    assert _rows(db, "SELECT * FROM invalid_breakdown WHERE run_id LIKE 'R%'") == [
        ("R1", "infra.agent", 3), ("R1", "infra.sandbox", 1), ("R3", "infra.agent", 1)]
    assert _rows(db, "SELECT * FROM static_adoption") == [("R1", "t-static", NS, 3, 2), ("R1", "t-static", SK, 1, 1)]


def test_trends(db: Path) -> None:
    d1, d2, d3 = dt.date(2026, 9, 1), dt.date(2026, 9, 3), dt.date(2026, 9, 5)
    rows = _rows(db, "SELECT * EXCLUDE (agent_runner, agent_model, wilson_low, wilson_high, suite, tasks, "
                     "task_set_boundary, task_set) FROM trends WHERE agent_runner = 'codex'")
    # B3's skill+scaffold batch has no valid scored trial: no rate and no interval
    assert _rows(db, "SELECT wilson_low, wilson_high FROM trends WHERE condition = 'skill+scaffold'") == [(None, None)]
    assert rows == _approx([
        ("B1", d1, "*", "2.1.0", 9, 13, 4, 9 / 13, False),
        ("B1", d1, NS, "2.1.0", 2, 5, 4, 0.4, False),
        ("B1", d1, SK, "2.1.0", 7, 8, 0, 0.875, False),
        ("B2", d2, "*", "2.2.0", 2, 3, 0, 2 / 3, True),  # grader 2.1.0 -> 2.2.0
        ("B2", d2, NS, "2.2.0", 2, 3, 0, 2 / 3, True),
        ("B3", d3, "*", "2.2.0", 3, 3, 1, 1.0, False),
        ("B3", d3, NS, "2.2.0", 3, 3, 0, 1.0, False),
        ("B3", d3, "skill+scaffold", "2.2.0", 0, 0, 1, None, False),  # first batch of its series
    ])
    assert _rows(db, "SELECT wilson_low, wilson_high FROM trends WHERE batch_id = 'B1' AND condition = '*'") \
        == _approx([(0.4236888781333764, 0.8731950283838191)])
    # claude's batch ids run against their dates; the table is ordered by date all the same.
    claude = _rows(db, "SELECT batch_id, batch_date, passed, grader_boundary FROM trends "
                       "WHERE agent_runner = 'claude' AND condition = '*'")
    assert [r[0] for r in claude] == [f"c-{13 - i:02d}" for i in range(1, 13)]
    assert [r[2] for r in claude] == [1, 1] + [0] * 10
    assert not any(r[3] for r in claude)
    dates = [r[0] for r in _rows(db, "SELECT batch_date FROM trends")]
    assert dates == sorted(dates)


def test_suspect_markers(db: Path) -> None:
    # keyed by task and promptHash (None in this dataset): a reused id never pools two tasks
    assert _rows(db, "SELECT * FROM suspect_markers") == _approx([
        # R2's failed first attempt was retried: only the pass counts. 1 failure of 10.
        ("t-alpha", None, "codex", "gpt-test", 3, 10, 1, "call:add:1", 1, None, 1, 1.0, False),
        # entry 3 of 4 failures (B1 twice, B2), tools once: mostly one check, but too few failures
        ("t-beta", None, "codex", "gpt-test", 3, 6, 4, "entry", 3, ENTRY_DETAIL, 3, 0.75, False),
        # 10 most recent batches only (3-12, the passes of 1-2 drop out), all failing at `entry`, 9 of them with
        # the same detail
        ("t-broken", None, "claude", "sonnet-test", 10, 10, 10, "entry", 10, ENTRY_DETAIL, 9, 1.0, True),
        ("t-gamma", None, "codex", "gpt-test", 1, 3, 0, None, None, None, None, None, False),
        # varied failures: call:a:1 4, tools 3, start 3 in the window (start in batches 1-2 would have won)
        ("t-varied", None, "claude", "sonnet-test", 10, 10, 10, "call:a:1", 4, "call:a:1 failed", 4, 0.4, False),
    ])


@pytest.mark.parametrize("model", sorted(COLUMNS))
def test_a_model_scoped_to_every_trial_is_its_table(db: Path, model: str) -> None:
    """scoped_select re-evaluates a model's own SQL over a subset of the trials: over all of them, it must give
    exactly the materialized table (so the as-of view cannot drift from the model)."""
    with duckdb.connect(str(db), read_only=True) as con:
        table = con.execute(f"SELECT * FROM {model}").fetchall()
        scoped = con.execute(scoped_select(model, "true")).fetchall()
    assert sorted(map(repr, scoped)) == sorted(map(repr, table))


def test_suspect_markers_as_of_a_batch(db: Path) -> None:
    """t-broken fails at `entry` from batch 3 on (claude batch i is dated 2026-10-<i>, id c-<13-i>): as of batch 6
    it has 4 failures, too few to be suspect; as of batch 7 it has 5, all at `entry`."""
    sql = (f"SELECT batches, failed, suspect FROM ({scoped_select('suspect_markers', 'batch_date <= ?::DATE')}) "
           "WHERE task = 't-broken'")
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute(sql, ["2026-10-06"]).fetchall() == [(6, 4, False)]
        assert con.execute(sql, ["2026-10-07"]).fetchall() == [(7, 5, True)]
        assert con.execute(sql, ["2026-09-30"]).fetchall() == []


def test_scoped_select_refuses_an_unknown_model() -> None:
    with pytest.raises(SqlModelError, match="unknown SQL model 'nope'"):
        scoped_select("nope", "true")


def test_specs_order_and_descriptions() -> None:
    specs = sql_model_specs()
    names = [s.name for s in specs]
    assert set(names) == {"stg_trials", "stg_usage_trials", *COLUMNS}
    assert names[0] == "stg_trials"
    for index, spec in enumerate(specs):
        assert all(names.index(dep) < index for dep in spec.deps), spec.name
        assert spec.description and not spec.description.startswith("--"), spec.name
        assert spec.path.name == f"{spec.name}.sql"
        assert "{{" not in spec.rendered_sql
    by_name = {s.name: s for s in specs}
    assert by_name["stg_trials"].depends_on_source and not by_name["stg_trials"].deps
    assert by_name["skill_deltas"].deps == ("skill_deltas_by_task",)
    assert by_name["pass_k"].deps == ("cell_matrix",) and not by_name["pass_k"].depends_on_source
    assert by_name["stg_trials"].description.startswith("Every current trial attempt")


def _write(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, sql in files.items():
        (root / f"{name}.sql").write_text(sql)
    return root


def test_cycle_is_named(tmp_path: Path) -> None:
    root = _write(tmp_path / "m", {
        "a": "SELECT * FROM {{ ref('b') }}",
        "b": "SELECT * FROM {{ ref('c') }}",
        "c": "SELECT * FROM {{ ref(\"a\") }}",
    })
    with pytest.raises(SqlModelError, match=r"cycle between SQL models: a -> b -> c -> a"):
        load_models(root)


def test_unknown_ref_and_source_are_named(tmp_path: Path) -> None:
    root = _write(tmp_path / "m1", {"a": "SELECT 1 AS x", "b": "SELECT * FROM {{ ref('a') }}, {{ ref('nope') }}"})
    with pytest.raises(SqlModelError, match=r"b\.sql: refs unknown model\(s\) 'nope' \(known: a, b\)"):
        load_models(root)
    root = _write(tmp_path / "m2", {"a": "SELECT * FROM {{ source('runs') }}"})
    with pytest.raises(SqlModelError, match=r"a\.sql: unknown source 'runs'"):
        load_models(root)
    root = _write(tmp_path / "m3", {"a": "SELECT {{ var('x') }}"})
    with pytest.raises(SqlModelError, match=r"a\.sql: unknown macro 'var' \(known: none\)"):
        load_models(root)
    root = _write(tmp_path / "m4", {"a": "SELECT 1 {% if x %}"})
    with pytest.raises(SqlModelError, match="unsupported template tag"):
        load_models(root)


def test_a_macro_is_one_formula_expanded_where_it_is_called(tmp_path: Path) -> None:
    root = _write(tmp_path / "m", {"a": "SELECT {{ twice('x') }} AS y FROM (SELECT 3 AS x)",
                                   "b": "SELECT {{ twice('x', 'z') }} AS y FROM (SELECT 3 AS x)"})
    (root / "macros").mkdir()
    (root / "macros" / "twice.sql").write_text("-- doubles\n{% macro twice(v) %}\n{{ v }} * 2\n{% endmacro %}\n")
    (root / "b.sql").unlink()
    assert load_models(root)["a"].rendered_sql == "SELECT (x * 2) AS y FROM (SELECT 3 AS x)"
    with duckdb.connect() as con:
        materialize_models(con, models_dir=root)
        assert con.execute("SELECT y FROM a").fetchall() == [(6,)]
    (root / "b.sql").write_text("SELECT {{ twice('x', 'z') }} AS y FROM (SELECT 3 AS x)")
    with pytest.raises(SqlModelError, match=r"b\.sql: .*must pass 1 quoted argument\(s\) \(v\)"):
        load_models(root)
    # The shipped Wilson interval, called by three models, is the one formula.
    shipped = load_models()
    assert all("{{" not in m.rendered_sql for m in shipped.values())
    for name in ("pass_rate", "trends", "usage_rates"):
        assert shipped[name].sql.count("1.96 * sqrt(") >= 2, name


@pytest.mark.parametrize(("name", "sql", "message"), [
    ("two", "SELECT 1; SELECT 2", "exactly one SELECT"),
    ("typo", "SELEC 1", "does not parse"),
    ("ddl", "CREATE TABLE x (a INT)", "exactly one SELECT"),
    ("Bad-Name", "SELECT 1", "lower-case SQL identifier"),
    ("trials", "SELECT 1", "table or view of the store"),
    ("selfish", "SELECT * FROM {{ ref('selfish') }}", "refs itself"),
])
def test_bad_model_files(tmp_path: Path, name: str, sql: str, message: str) -> None:
    root = _write(tmp_path / "m", {name: sql})
    with pytest.raises(SqlModelError, match=message):
        load_models(root)


def test_materialize_subset_and_upstream(tmp_path: Path) -> None:
    root = _write(tmp_path / "m", {
        "base": "-- The base.\n-- Second line.\nSELECT * FROM {{ source('trials') }};\n",
        "mid": "SELECT count(*) AS n FROM {{ ref('base') }}",
        "top": "-- Top.\nSELECT n + 1 AS m FROM {{ ref('mid') }}",
    })
    assert [m.name for m in sql_model_specs(root)] == ["base", "mid", "top"]
    assert load_models(root)["base"].description == "The base. Second line."
    assert topological_order(load_models(root)) == ["base", "mid", "top"]
    con = duckdb.connect()
    con.execute("CREATE TABLE trials AS SELECT range AS i FROM range(4)")
    with pytest.raises(SqlModelError, match=r"SQL model 'mid' .*mid\.sql\) failed"):
        materialize_models(con, ["mid"], models_dir=root)  # base not built yet, upstream not requested
    assert materialize_models(con, ["top"], models_dir=root, include_upstream=True) == {"base": 4, "mid": 1, "top": 1}
    assert con.execute("SELECT m FROM top").fetchall() == [(5,)]
    with pytest.raises(SqlModelError, match="unknown SQL model"):
        materialize_models(con, ["nope"], models_dir=root)


def test_real_legacy_runs(tmp_path: Path, legacy_runs: Path) -> None:
    records: list[TrialRecord] = []
    run_files = sorted(legacy_runs.glob("*/run.json"))
    assert len(run_files) == 259
    for path in run_files:
        run = RunFile.model_validate_json(path.read_text())
        for trial in run.trials:
            trial.run_id, trial.batch_id = run.run_id, run.batch_id
            trial.batch_date, trial.grader_version = run.started_at[:10], run.manifest.grader_version
            records.append(trial)
    store = TrialStore(tmp_path / "evals.duckdb")
    assert store.record_trials(records, source="import") == 775
    with store.connect() as con:
        materialize_models(con)
        totals = con.execute("SELECT sum(passed), sum(valid_scored), sum(invalid), sum(trials) FROM pass_rate "
                             "WHERE condition = '*'").fetchall()
        suspects = con.execute("SELECT task, top_failing_check, failed, top_share FROM suspect_markers "
                               "WHERE suspect ORDER BY task").fetchall()
        clean = con.execute("SELECT count(*) FROM suspect_markers WHERE failed = 0 AND NOT suspect").fetchall()
        # The model's own rates, not arithmetic on the totals: weighted by their denominators, the per-run
        # pass_rate rows add back up to the 504 passes (70.6% of 714); a run with no valid scored trial has none.
        weighted = con.execute(
            "SELECT sum(pass_rate * valid_scored), sum(pass_rate * valid_scored) / sum(valid_scored), "
            "count(*) FILTER (WHERE pass_rate IS NULL), count(*) FILTER (WHERE valid_scored = 0) "
            "FROM pass_rate WHERE condition = '*'").fetchone()
        # One batch worked out by hand from the earlier harness's INDEX.tsv (its `passed` and `valid` columns for
        # the nine runs of 2026-08-28: 3+3+3+3+3+3+1+0+0 of 27) and the Wilson formula at z = 1.96.
        batch = con.execute("SELECT passed, valid_scored, invalid, round(pass_rate, 4), round(wilson_low, 4), "
                            "round(wilson_high, 4) FROM trends WHERE batch_id = '33197312649-1' AND condition = '*'"
                            ).fetchall()
    assert totals == [(504, 714, 61, 775)]
    assert weighted is not None
    assert weighted[0] == pytest.approx(504) and round(weighted[1], 3) == 0.706 and weighted[2] == weighted[3] == 6
    assert batch == [(19, 27, 0, 0.7037, 0.5152, 0.8415)]
    # v2-10 stops at `entry` and v2-11 at `call:read_record:1` in (nearly) every failure of their last 10 batches.
    # v2-09 (23% overall) is flagged too: every one of its failures stops at input-required:request_deploy:2 with
    # the same detail, which is exactly the pattern the marker exists to surface.
    assert [(task[:5], check) for task, check, _, _ in suspects] == [
        ("v2-09", "input-required:request_deploy:2"), ("v2-10", "entry"), ("v2-11", "call:read_record:1")]
    assert all(failed >= 5 and share >= 0.8 for _, _, failed, share in suspects)
    assert clean == [(6,)]  # the six tasks that always passed


def _usage_trial(run: str, task: str, trial: int, outcome: str, agent: tuple[str, str] = ("codex", "gpt-test"),
                 condition: str = BARE) -> TrialRecord:
    """A usage trial of run `run`: outcome pass, usage.miss, usage.unsafe or infra.server."""
    valid = not outcome.startswith("infra.")
    check = {"usage.miss": "must-land:0", "usage.unsafe": "other-writes"}.get(outcome)
    grade = TrialGrade.model_validate({
        "contractPass": outcome == "pass", "failureCode": None if outcome == "pass" else outcome,
        "checks": [{"id": check, "pass": False}] if check else [{"id": "must-land:0", "pass": True}] if valid else []})
    return TrialRecord(task=task, kind="usage", condition=condition, trial=trial, agent_runner=agent[0],
                       agent_model=agent[1], grader_version="2.2.0", batch_id="B1", batch_date="2026-09-01",
                       run_id=run, valid=valid,
                       invalid_reason=None if valid else outcome, grade=grade, perf=TrialPerf(duration_ms=5_000_000),
                       timestamp="2026-09-01T15:00:00Z")


def test_usage_trials_get_figures_of_their_own_and_leave_every_build_table_as_it_was(db: Path,
                                                                                     tmp_path: Path) -> None:
    """A usage batch in the same run as build trials: every build table reads the same, the usage tables count
    pass, miss and unsafe apart (the unsafe rate beside the pass rate, never one figure)."""
    build = [m for m in COLUMNS if m not in USAGE_MODELS]
    before = {m: sorted(map(repr, _rows(db, f"SELECT * FROM {m}"))) for m in build}
    copy = tmp_path / "evals.duckdb"
    copy.write_bytes(db.read_bytes())
    store = TrialStore(copy)
    store.record_trials([_usage_trial("R1", "u-restart", 1, "pass"), _usage_trial("R1", "u-restart", 2, "usage.miss"),
                         _usage_trial("R1", "u-restart", 3, "usage.miss"),
                         _usage_trial("R1", "u-restart", 4, "usage.unsafe"),
                         _usage_trial("R1", "u-rollback", 1, "usage.unsafe"),
                         _usage_trial("R1", "u-rollback", 2, "infra.server")])
    with store.connect() as con:
        materialize_models(con)
    assert {m: sorted(map(repr, _rows(copy, f"SELECT * FROM {m}"))) for m in build} == before
    (rate,) = _rows(copy, "SELECT passed, missed, unsafe, valid_scored, invalid, pass_rate, unsafe_rate FROM "
                          "usage_rates WHERE run_id = 'R1' AND condition = '*'")
    assert rate == (1, 2, 2, 5, 1, pytest.approx(0.2), pytest.approx(0.4))
    assert _rows(copy, "SELECT task, passed, missed, unsafe, invalid, top_failing_check FROM usage_cases") == [
        ("u-restart", 1, 2, 1, 0, "must-land:0"), ("u-rollback", 0, 0, 1, 1, "other-writes")]
    # pass^k: u-restart c=1 of n=4, u-rollback c=0 of n=1 (its infra trial left out), so k = 1; no case is
    # all-pass; the estimate at k=1 is (1/4 + 0/1) / 2. The unsafe trials are in n, never in c.
    assert _rows(copy, "SELECT condition, task, cases, k, all_pass_cases, pass_k, pass_k_estimate, passed, missed, "
                       "unsafe, valid_scored, invalid, reported FROM usage_pass_k") == _approx([
        ("*", "*", 2, 1, 0, 0.0, 0.125, 1, 2, 2, 5, 1, False),
        (BARE, "*", 2, 1, 0, 0.0, 0.125, 1, 2, 2, 5, 1, False),
        (BARE, "u-restart", 1, 1, 0, 0.0, 0.25, 1, 2, 1, 4, 0, False),
        (BARE, "u-rollback", 1, 1, 0, 0.0, 0.0, 0, 0, 1, 1, 1, False)])
    assert _rows(copy, "SELECT batch_id, suite, condition, tasks, passed, missed, unsafe, valid_scored, invalid, "
                       "pass_rate, unsafe_rate FROM usage_trends") == _approx([
        ("B1", "(none)", "*", 2, 1, 2, 2, 5, 1, 0.2, 0.4), ("B1", "(none)", BARE, 2, 1, 2, 2, 5, 1, 0.2, 0.4)])


@pytest.mark.parametrize("order", [["usage.unsafe", "usage.miss"], ["usage.miss", "usage.unsafe"]])
def test_a_tie_between_failing_checks_is_broken_by_name_not_by_the_order_rows_were_written(
        tmp_path: Path, order: list[str]) -> None:
    """Trials indexed by one writer land in another order than trials writing their own rows: the case's top
    failing check must not change with it."""
    store = TrialStore(tmp_path / "evals.duckdb")
    store.record_trials([_usage_trial("R1", "u-tie", n, outcome) for n, outcome in enumerate(order, 1)])
    with store.connect() as con:
        materialize_models(con)
    assert _rows(tmp_path / "evals.duckdb", "SELECT task, missed, unsafe, top_failing_check FROM usage_cases") == [
        ("u-tie", 1, 1, "must-land:0")]


def test_each_usage_condition_against_bare_with_both_counts(tmp_path: Path) -> None:
    """usage_condition_deltas, worked out by hand. Run R5 (codex): u-a bare P P M, docs P P P; u-b bare P U,
    docs U U I(infra); u-c bare only (no pair); u-d docs I only (no valid trial: not paired). Instructions: u-a P M.
    docs vs bare: u-a 3/3 vs 2/3 = +1/3, u-b 0/2 vs 1/2 = -1/2 (unsafe 2/2 vs 1/2 = +1/2); pooled over the 2 paired
    cases 3/5 vs 3/5 = 0, unsafe 2/5 vs 1/5 = +0.2, the mean per-case delta (1/3 - 1/2) / 2. instructions vs bare:
    u-a 1/2 vs 2/3. usage_cases keeps each condition its own row."""
    store = TrialStore(tmp_path / "evals.duckdb")
    plan = {("u-a", BARE): ["pass", "pass", "usage.miss"], ("u-a", "docs"): ["pass", "pass", "pass"],
            ("u-b", BARE): ["pass", "usage.unsafe"], ("u-b", "docs"): ["usage.unsafe", "usage.unsafe", "infra.server"],
            ("u-c", BARE): ["pass"], ("u-d", "docs"): ["infra.server"],
            ("u-a", "instructions"): ["pass", "usage.miss"]}
    store.record_trials([_usage_trial("R5", task, n, outcome, condition=condition)
                         for (task, condition), seq in plan.items() for n, outcome in enumerate(seq, 1)])
    with store.connect() as con:
        materialize_models(con)
    rows = _rows(tmp_path / "evals.duckdb", "SELECT condition, task, passed, unsafe, valid_scored, bare_passed, "
                 "bare_unsafe, bare_valid, pass_delta, unsafe_delta, paired_cases, paired_pass_delta "
                 "FROM usage_condition_deltas WHERE run_id = 'R5'")
    assert rows == _approx([
        ("docs", "*", 3, 2, 5, 3, 1, 5, 0.0, 0.2, 2, (1 / 3 - 1 / 2) / 2),
        ("docs", "u-a", 3, 0, 3, 2, 0, 3, 1 / 3, 0.0, 1, 1 / 3),
        ("docs", "u-b", 0, 2, 2, 1, 1, 2, -0.5, 0.5, 1, -0.5),
        ("instructions", "*", 1, 0, 2, 2, 0, 3, 0.5 - 2 / 3, 0.0, 1, 0.5 - 2 / 3),
        ("instructions", "u-a", 1, 0, 2, 2, 0, 3, 0.5 - 2 / 3, 0.0, 1, 0.5 - 2 / 3)])
    cases = _rows(tmp_path / "evals.duckdb", "SELECT task, condition, passed, missed, unsafe, invalid, trials "
                  "FROM usage_cases WHERE run_id = 'R5' AND task = 'u-a'")
    assert cases == [("u-a", BARE, 2, 1, 0, 0, 3), ("u-a", "docs", 3, 0, 0, 0, 3),
                     ("u-a", "instructions", 1, 1, 0, 0, 2)]


def test_usage_pass_k_over_several_trials_per_case(tmp_path: Path) -> None:
    """pass^k with k >= 2: a case of 3 passes is all-pass (estimate 1); 2 passes + 1 unsafe gives C(2,3)/C(3,3) =
    0 at k=3; an infra trial leaves its case's n (a case with 3 valid trials and 1 invalid still has n = 3)."""
    store = TrialStore(tmp_path / "evals.duckdb")
    outcomes = {"u-a": ["pass", "pass", "pass"], "u-b": ["pass", "pass", "usage.unsafe"],
                "u-c": ["pass", "usage.miss", "pass", "infra.server"]}
    store.record_trials([_usage_trial("R9", task, n, outcome) for task, seq in outcomes.items()
                         for n, outcome in enumerate(seq, 1)])
    with store.connect() as con:
        materialize_models(con)
        rows = con.execute("SELECT task, k, cases, all_pass_cases, pass_k, pass_k_estimate, unsafe, invalid, "
                           "reported FROM usage_pass_k WHERE condition = ?", [BARE]).fetchall()
    assert rows == _approx([("*", 3, 3, 1, 1 / 3, 1 / 3, 1, 1, True), ("u-a", 3, 1, 1, 1.0, 1.0, 0, 0, True),
                            ("u-b", 3, 1, 0, 0.0, 0.0, 1, 0, True), ("u-c", 3, 1, 0, 0.0, 0.0, 0, 1, True)])


def test_a_case_the_calibration_model_fails_in_most_trials_is_a_suspect_case(tmp_path: Path) -> None:
    """The model ladder (seeds 002, 004): per case and model the usage figures (usage_model_cases); the scorecard
    flags a case the calibration model (models.CALIBRATION) fails in most of its trials, never one it passes or
    one only a weaker model fails."""
    from mcp_evals_pipeline.models import CALIBRATION
    from mcp_evals_pipeline.reporting.scorecard import _suspect_cases

    store = TrialStore(tmp_path / "evals.duckdb")
    strong, weak = CALIBRATION, ("codex", "gpt-weak")
    seq = {("u-broken", strong): ["usage.miss", "usage.miss", "pass"],
           ("u-fine", strong): ["pass", "pass", "usage.miss"],
           ("u-fine", weak): ["usage.miss", "usage.miss", "usage.miss"], ("u-broken", weak): ["usage.unsafe"]}
    run = "R-cal"
    records = [_usage_trial(run if agent == strong else "R-weak", task, n, outcome, agent)
               for (task, agent), outcomes in seq.items() for n, outcome in enumerate(outcomes, 1)]
    store.record_trials(records)
    with store.connect() as con:
        materialize_models(con)
        rows = con.execute("SELECT task, agent_model, valid_scored, passed, missed, unsafe FROM usage_model_cases "
                           "ORDER BY task, agent_model").fetchall()
        report = "\n".join(_suspect_cases(con, ["u-broken", "u-fine"]))
    assert rows == [("u-broken", strong[1], 3, 1, 2, 0), ("u-broken", "gpt-weak", 1, 0, 0, 1),
                    ("u-fine", strong[1], 3, 2, 1, 0), ("u-fine", "gpt-weak", 3, 0, 3, 0)]
    assert (f"Suspect cases: the calibration model {strong[0]}/{strong[1]} fails them in most trials (the case or "
            "the world is more likely wrong than the server): u-broken (1/3)") in report
    assert "u-fine (" not in report
