"""Benchmark of the SQL metric models against a straightforward pandas implementation of the same metrics.

    .venv/bin/python bench/sql_models_bench.py [--rows 1000000] [--repeat 3] [--workdir DIR]

Generates synthetic trials straight into a DuckDB `trial_attempts` table (one bulk INSERT ... SELECT): ~40 tasks,
2 conditions, 3 trials per cell, one run per batch × agent, ~8% invalid, 3 source-imports tasks, costs missing
for one agent and now and then for the others, two tasks whose failures always stop at one check. Then, each in
its own subprocess so peak memory (ru_maxrss) belongs to one side only:
  sql     materialize_models() over every model, end to end, `--repeat` times;
  pandas  load the `trials` view into a DataFrame (timed apart), then compute every metric `--repeat` times.
Finally every pandas table is compared with its SQL table, so both sides demonstrably compute the same thing.
Targets: SQL under 5 s, at least 5x faster than pandas (pandas timed without its load, which favours pandas).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from mcp_evals_pipeline.sql_models import materialize_models
from mcp_evals_pipeline.store import SCHEMA

SQL_TARGET_S = 5.0
SPEEDUP_TARGET = 5.0
TRIALS_PER_RUN = 240  # 40 tasks x 2 conditions x 3 trials

# One INSERT ... SELECT; u(i, k) is a deterministic uniform [0, 1) per row and purpose, so runs are reproducible.
GENERATE = """
CREATE OR REPLACE TEMP MACRO u(i, k) AS (hash(i, k) % 1000000)::DOUBLE / 1000000;
INSERT INTO trial_attempts BY NAME
WITH base AS (
    SELECT
        i,
        i // 240 AS run_no,
        (i % 240) // 6 AS task_no,
        ((i % 240) // 3) % 2 AS cond_no,
        i % 3 + 1 AS trial
    FROM range(?) AS r(i)
),
shaped AS (
    SELECT
        *,
        run_no // 3 AS batch_no,
        ['codex', 'claude', 'openai'][run_no % 3 + 1] AS agent_runner,
        ['gpt-5.6-terra', 'claude-sonnet-5', 'local-qwen'][run_no % 3 + 1] AS agent_model,
        'v2-' || lpad(task_no::VARCHAR, 2, '0') || '-task' AS task,
        ['noskill+blank', 'skill+blank'][cond_no + 1] AS condition,
        task_no >= 37 AS source_imports,
        u(i, 2) < 0.08 AS invalid,
        -- per-task difficulty, a skill bonus and an agent offset; tasks 9 and 10 never pass (suspect)
        CASE WHEN task_no IN (9, 10) THEN 0.0
             ELSE least(1.0, greatest(0.0, 0.35 + 0.6 * u(task_no, 101) + 0.08 * cond_no
                                           - [0.0, 0.05, 0.15][run_no % 3 + 1])) END AS p_pass
    FROM base
),
graded AS (
    SELECT
        *,
        NOT invalid AND u(i, 3) < CASE WHEN source_imports THEN 0.7 ELSE p_pass END AS contract_pass,
        CASE
            WHEN source_imports THEN 'imports'
            WHEN task_no = 9 THEN 'entry'
            WHEN task_no = 10 THEN CASE WHEN u(i, 5) < 0.85 THEN 'call:read_record:1' ELSE 'resources' END
            WHEN u(i, 5) < 0.25 THEN 'entry'
            WHEN u(i, 5) < 0.40 THEN 'start'
            WHEN u(i, 5) < 0.55 THEN 'tools'
            WHEN u(i, 5) < 0.65 THEN 'resources'
            ELSE 'call:op' || (hash(i, 6) % 3)::VARCHAR || ':1'
        END AS check_id,
        ['infra.agent', 'infra.agent', 'infra.agent', 'infra.sandbox', 'infra.timeout'][(hash(i, 7) % 5)::BIGINT + 1]
            AS infra_code
    FROM shaped
)
SELECT
    'batch-' || lpad(batch_no::VARCHAR, 5, '0') || '|' || task || '--' || condition || '--t' || trial::VARCHAR
        || '|' || agent_runner || '|' || agent_model AS slot,
    1 AS attempt,
    true AS is_current,
    'run-' || lpad(batch_no::VARCHAR, 5, '0') || '-' || agent_runner AS run_id,
    'batch-' || lpad(batch_no::VARCHAR, 5, '0') AS batch_id,
    -- Mon / Wed / Fri from 2018-01-01 (a Monday)
    DATE '2018-01-01' + (batch_no // 3 * 7 + [0, 2, 4][batch_no % 3 + 1])::INTEGER AS batch_date,
    task, condition, trial,
    substr(md5(task), 1, 12) AS prompt_hash,
    agent_runner, agent_model,
    'high' AS reasoning_effort,
    '2.0.4' AS sdk_version,
    '2.' || (batch_no // 150)::VARCHAR || '.0' AS grader_version,
    'docker' AS sandbox,
    'docker' AS isolation,
    NOT invalid AS valid,
    CASE WHEN invalid THEN infra_code END AS invalid_reason,
    CASE WHEN invalid THEN 'agent run reported success but consumed zero input/output tokens' END AS error,
    contract_pass,
    CASE WHEN invalid THEN infra_code WHEN contract_pass THEN NULL
         WHEN check_id LIKE 'call:%' THEN 'contract.calls' ELSE 'contract.' || check_id END AS failure_code,
    CASE WHEN NOT invalid AND NOT contract_pass THEN check_id END AS failing_check,
    CASE WHEN NOT invalid AND NOT contract_pass
         THEN check_id || ' failed: variant ' || (hash(i, 8) % CASE WHEN task_no IN (9, 10) THEN 1 ELSE 4 END)::VARCHAR
    END AS failing_detail,
    CASE WHEN invalid THEN 'unknown'
         ELSE ['mcp-use', 'mcp-use', 'official-sdk', 'fastmcp', 'hand-rolled', 'unknown'][(hash(i, 9) % 6)::BIGINT + 1]
    END AS sdk_path,
    NOT source_imports AS scored_for_pass_rate,
    (20000 + u(i, 10) * 600000)::BIGINT AS duration_ms,
    (3 + u(i, 11) * 40)::INTEGER AS turns,
    (50000 + u(i, 12) * 500000)::BIGINT AS tokens_in,
    (1000 + u(i, 13) * 20000)::BIGINT AS tokens_out,
    (2 + u(i, 14) * 60)::INTEGER AS tool_calls,
    -- codex reports no cost (as in the real legacy runs); the others miss it rarely
    CASE WHEN agent_runner = 'codex' OR u(i, 15) < 0.0002 THEN NULL ELSE round(0.05 + u(i, 16) * 2, 4) END AS cost_usd,
    'trials/' || task || '--' || condition || '--t' || trial::VARCHAR || '/memo.md' AS memo_path,
    'trials/' || task || '--' || condition || '--t' || trial::VARCHAR || '/transcript.jsonl' AS transcript_path,
    'pipeline' AS source,
    batch_date::TIMESTAMPTZ + INTERVAL 14 HOUR AS recorded_at,
    NULL AS grade_json
FROM graded
"""


def generate(db: Path, rows: int) -> float:
    started = time.perf_counter()
    with duckdb.connect(str(db)) as con:
        con.execute(SCHEMA)
        con.execute("DELETE FROM trial_attempts")
        statements = [s for s in GENERATE.split(";\n") if s.strip()]
        con.execute(statements[0])
        con.execute(statements[1], [rows])
    return time.perf_counter() - started


def peak_rss_mb() -> float:
    """This process image's peak resident set size in MB.

    VmHWM first: ru_maxrss survives execve on Linux, so a child would report its parent's peak at fork time."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


# ---------------------------------------------------------------------------------------------------------------
# pandas: the same metrics, written the way one would with DataFrames (vectorized groupbys, no row loops).


def _wilson(passed: pd.Series, n: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    z = 1.96
    n = n.astype(float).where(n > 0)
    p = passed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return np.maximum(centre - half, 0.0), np.minimum(centre + half, 1.0)


def _star(frame: pd.DataFrame, keys: list[str], agg: dict, by_condition: bool = True) -> pd.DataFrame:
    """One row per group with condition '*' plus one per group × condition, like GROUPING SETS."""
    parts = [frame.groupby(keys, dropna=False, sort=False).agg(**agg).reset_index().assign(condition="*")]
    if by_condition:
        parts.append(frame.groupby([*keys, "condition"], dropna=False, sort=False).agg(**agg).reset_index())
    return pd.concat(parts, ignore_index=True)


def pandas_metrics(trials: pd.DataFrame) -> dict[str, pd.DataFrame]:
    out: dict[str, pd.DataFrame] = {}
    df = trials.copy()
    df["cell"] = df["task"] + "--" + df["condition"]
    df["scored"] = df["valid"] & df["scored_for_pass_rate"]
    df["passed"] = df["scored"] & df["contract_pass"]
    parts = df["condition"].str.split("+", n=1, expand=True)
    df["skill_part"] = parts[0]
    df["workspace_part"] = parts[1].fillna("") if 1 in parts else ""
    df["invalid"] = ~df["valid"]

    # pass_rate
    counts = {"passed": ("passed", "sum"), "valid_scored": ("scored", "sum"), "trials": ("scored", "size"),
              "invalid": ("invalid", "sum")}
    rate = _star(df, ["run_id"], counts)
    meta = df.groupby("run_id", dropna=False).agg(batch_id=("batch_id", "min"), batch_date=("batch_date", "min"),
                                                  agent_runner=("agent_runner", "min"),
                                                  agent_model=("agent_model", "min")).reset_index()
    rate = rate.merge(meta, on="run_id", how="left")
    rate["pass_rate"] = rate["passed"] / rate["valid_scored"].where(rate["valid_scored"] > 0)
    rate["wilson_low"], rate["wilson_high"] = _wilson(rate["passed"], rate["valid_scored"])
    out["pass_rate"] = rate[["run_id", "batch_id", "batch_date", "agent_runner", "agent_model", "condition",
                             "passed", "valid_scored", "trials", "invalid", "pass_rate", "wilson_low", "wilson_high"]]

    # cell_matrix: tasks with a valid unscored trial in the run are source-imports, reported elsewhere
    df["unscored_valid"] = df["valid"] & ~df["scored_for_pass_rate"]
    cells = df.groupby(["run_id", "task", "condition"], dropna=False, sort=False).agg(
        passed=("passed", "sum"), valid_scored=("scored", "sum"), trials=("scored", "size"),
        invalid=("invalid", "sum"), has_unscored=("unscored_valid", "any")).reset_index()
    cells = cells[~cells.groupby(["run_id", "task"])["has_unscored"].transform("any")].drop(columns="has_unscored")
    out["cell_matrix"] = cells

    # pass_k
    counted = cells[cells["valid_scored"] > 0].assign(all_pass=lambda c: c["passed"] == c["valid_scored"])
    kagg = {"cells": ("valid_scored", "size"), "k": ("valid_scored", "min"), "all_pass_cells": ("all_pass", "sum")}
    groups = pd.concat([cells[["run_id"]].drop_duplicates().assign(condition="*"),
                        cells[["run_id", "condition"]].drop_duplicates()], ignore_index=True)
    pass_k = groups.merge(_star(counted, ["run_id"], kagg), on=["run_id", "condition"], how="left")
    pass_k["cells"] = pass_k["cells"].fillna(0).astype("int64")
    pass_k["all_pass_cells"] = pass_k["all_pass_cells"].fillna(0).astype("int64")
    pass_k["pass_k"] = pass_k["all_pass_cells"] / pass_k["cells"].where(pass_k["cells"] > 0)
    pass_k["reported"] = pass_k["k"].fillna(0) >= 2
    out["pass_k"] = pass_k[["run_id", "condition", "cells", "k", "all_pass_cells", "pass_k", "reported"]]

    # pass_k_curve: mean over cells with n >= k of C(c,k)/C(n,k)
    both = pd.concat([counted.assign(condition="*"), counted], ignore_index=True)
    c, n = both["passed"].to_numpy(float), both["valid_scored"].to_numpy(float)
    curves = []
    for k in range(1, int(n.max()) + 1 if len(n) else 1):
        mask = n >= k
        ratio = np.ones(mask.sum())
        for i in range(k):
            ratio *= (c[mask] - i) / (n[mask] - i)
        ratio[c[mask] < k] = 0.0
        sub = both.loc[mask, ["run_id", "condition"]].assign(value=ratio)
        curves.append(sub.groupby(["run_id", "condition"], sort=False).agg(
            value=("value", "mean"), cells=("value", "size")).reset_index().assign(k=k))
    out["pass_k_curve"] = pd.concat(curves, ignore_index=True)[["run_id", "condition", "k", "value", "cells"]]

    # skill deltas
    sides = cells.assign(skill_part=cells["condition"].str.split("+", n=1).str[0],
                         workspace_part=cells["condition"].str.split("+", n=1).str[1].fillna(""))
    sides = sides[sides["skill_part"].isin(["skill", "noskill"])]
    wide = sides.pivot_table(index=["run_id", "workspace_part", "task"], columns="skill_part",
                             values=["passed", "valid_scored"], aggfunc="sum")
    by_task = pd.DataFrame(index=wide.index)
    for side in ("skill", "noskill"):
        present = wide[("passed", side)].notna() if ("passed", side) in wide else pd.Series(False, index=wide.index)
        by_task[f"has_{side}"] = present
        by_task[f"{side}_passed"] = wide.get(("passed", side), 0).fillna(0).astype("int64")
        by_task[f"{side}_valid"] = wide.get(("valid_scored", side), 0).fillna(0).astype("int64")
    by_task = by_task.reset_index()
    keep = (by_task.groupby(["run_id", "workspace_part"])["has_skill"].transform("any")
            & by_task.groupby(["run_id", "workspace_part"])["has_noskill"].transform("any"))
    by_task = by_task[keep]
    paired = (by_task["skill_valid"] > 0) & (by_task["noskill_valid"] > 0)
    by_task["delta"] = (by_task["skill_passed"] / by_task["skill_valid"]
                        - by_task["noskill_passed"] / by_task["noskill_valid"]).where(paired)
    out["skill_deltas_by_task"] = by_task[["run_id", "workspace_part", "task", "skill_passed", "skill_valid",
                                           "noskill_passed", "noskill_valid", "delta"]]
    pooled = by_task.assign(**{col: by_task[col].where(paired, 0) for col in
                               ("skill_passed", "skill_valid", "noskill_passed", "noskill_valid")})
    deltas = pooled.groupby(["run_id", "workspace_part"]).agg(
        skill_passed=("skill_passed", "sum"), skill_valid=("skill_valid", "sum"),
        noskill_passed=("noskill_passed", "sum"), noskill_valid=("noskill_valid", "sum"),
        paired_tasks=("delta", "count"), paired_delta=("delta", "mean")).reset_index()
    deltas["skill_rate"] = deltas["skill_passed"] / deltas["skill_valid"].where(deltas["skill_valid"] > 0)
    deltas["noskill_rate"] = deltas["noskill_passed"] / deltas["noskill_valid"].where(deltas["noskill_valid"] > 0)
    deltas["delta"] = deltas["skill_rate"] - deltas["noskill_rate"]
    out["skill_deltas"] = deltas[["run_id", "workspace_part", "skill_passed", "skill_valid", "skill_rate",
                                  "noskill_passed", "noskill_valid", "noskill_rate", "delta", "paired_tasks",
                                  "paired_delta"]]

    # performance: medians over passing trials, cost over valid trials (unknown if any is missing)
    medians = {f"median_{col}": (col, "median") for col in
               ("duration_ms", "turns", "tool_calls", "tokens_in", "tokens_out")}
    perf = _star(df, ["run_id"], {"passed": ("passed", "sum")})
    perf = perf.merge(_star(df[df["passed"]], ["run_id"], medians), on=["run_id", "condition"], how="left")
    valid = df[df["valid"]].assign(cost_missing=lambda v: v["cost_usd"].isna())
    cost = _star(valid, ["run_id"], {"cost_sum": ("cost_usd", "sum"), "missing": ("cost_missing", "any")})
    cost["total_cost_usd"] = cost["cost_sum"].where(~cost["missing"])
    perf = perf.merge(cost[["run_id", "condition", "total_cost_usd"]], on=["run_id", "condition"], how="left")
    perf["cost_per_success"] = perf["total_cost_usd"] / perf["passed"].where(perf["passed"] > 0)
    out["performance"] = perf[["run_id", "condition", "passed", "median_duration_ms", "median_turns",
                               "median_tool_calls", "median_tokens_in", "median_tokens_out", "total_cost_usd",
                               "cost_per_success"]]

    # breakdowns
    failed = df[df["scored"] & ~df["contract_pass"]]
    out["failure_breakdown"] = failed.groupby(["run_id", "failure_code"], dropna=False).size() \
        .rename("failed").reset_index()
    out["sdk_path_breakdown"] = df.groupby(["run_id", "sdk_path"], dropna=False).agg(
        trials=("valid", "size"), valid=("valid", "sum"), invalid=("invalid", "sum")).reset_index()
    out["invalid_breakdown"] = df[~df["valid"]].groupby(["run_id", "invalid_reason"], dropna=False).size() \
        .rename("invalid").reset_index()
    out["static_adoption"] = df[df["unscored_valid"]].groupby(["run_id", "task", "condition"]).agg(
        valid=("valid", "size"), passed=("contract_pass", "sum")).reset_index()

    # trends: one series per suite x agent x model x condition
    df = df.assign(suite=df["suite"].fillna("(none)"),
                   task_at=df["task"] + "@" + df["prompt_hash"].fillna("?"))
    keys = ["batch_id", "suite", "agent_runner", "agent_model"]
    trend = _star(df, keys, {"batch_date": ("batch_date", "min"), "passed": ("passed", "sum"),
                             "valid_scored": ("scored", "sum"), "invalid": ("invalid", "sum"),
                             "tasks": ("task", "nunique")})
    versions = df[[*keys, "condition", "grader_version"]].drop_duplicates().dropna(subset=["grader_version"])
    joined = _star(versions, keys, {"grader_versions": ("grader_version", lambda s: ",".join(sorted(set(s))))})
    task_sets = _star(df[[*keys, "condition", "task_at"]].drop_duplicates(), keys,
                      {"task_set": ("task_at", lambda s: ",".join(sorted(set(s))))})
    trend = trend.merge(joined, on=[*keys, "condition"], how="left").merge(task_sets, on=[*keys, "condition"])
    trend["pass_rate"] = trend["passed"] / trend["valid_scored"].where(trend["valid_scored"] > 0)
    trend["wilson_low"], trend["wilson_high"] = _wilson(trend["passed"], trend["valid_scored"])
    series_keys = ["suite", "agent_runner", "agent_model", "condition"]
    trend = trend.sort_values([*series_keys, "batch_date", "batch_id"])
    first = trend.groupby(series_keys, dropna=False).cumcount() == 0
    previous = trend.groupby(series_keys, dropna=False)["grader_versions"].shift()
    same = (trend["grader_versions"] == previous) | (trend["grader_versions"].isna() & previous.isna())
    trend["grader_boundary"] = ~first & ~same
    trend["task_set_boundary"] = ~first & (trend["task_set"] != trend.groupby(series_keys, dropna=False)[
        "task_set"].shift())
    out["trends"] = trend.sort_values(["batch_date", "batch_id", "suite", "agent_runner", "agent_model",
                                       "condition"])[
        ["batch_id", "batch_date", "suite", "agent_runner", "agent_model", "condition", "grader_versions", "tasks",
         "passed", "valid_scored", "invalid", "pass_rate", "wilson_low", "wilson_high", "grader_boundary",
         "task_set_boundary", "task_set"]]

    # suspect markers over each series' 10 most recent batches of the task
    series = ["task", "prompt_hash", "agent_runner", "agent_model"]
    scored = df[df["scored"]]
    batches = scored.groupby([*series, "batch_id"], dropna=False)["batch_date"].max().reset_index()
    batches = batches.sort_values([*series, "batch_date", "batch_id"], ascending=[True] * 4 + [False, False])
    batches = batches[batches.groupby(series, dropna=False).cumcount() < 10]
    recent = scored.merge(batches[[*series, "batch_id"]], on=[*series, "batch_id"])
    totals = recent.groupby(series, dropna=False).agg(batches=("batch_id", "nunique"), valid_scored=("passed", "size"),
                                                      failed=("passed", lambda s: int((~s).sum()))).reset_index()
    fails = recent[~recent["passed"]]
    checks = fails.groupby([*series, "failing_check"], dropna=False).size().rename("n").reset_index()
    checks = checks.sort_values([*series, "n", "failing_check"], ascending=[True] * 4 + [False, True],
                                na_position="last").drop_duplicates(series)
    details = fails.merge(checks[[*series, "failing_check"]], on=[*series, "failing_check"])
    details = details.groupby([*series, "failing_detail"], dropna=False).size().rename("d").reset_index()
    details = details.sort_values([*series, "d", "failing_detail"], ascending=[True] * 4 + [False, True],
                                  na_position="last").drop_duplicates(series)
    marks = totals.merge(checks, on=series, how="left").merge(details[[*series, "failing_detail", "d"]], on=series,
                                                                how="left")
    marks = marks.rename(columns={"failing_check": "top_failing_check", "n": "top_check_failures",
                                  "failing_detail": "top_detail", "d": "top_detail_failures"})
    marks["top_share"] = marks["top_check_failures"] / marks["failed"].where(marks["failed"] > 0)
    marks["suspect"] = (marks["failed"] >= 5) & (marks["top_share"].fillna(0) >= 0.8)
    out["suspect_markers"] = marks[["task", "prompt_hash", "agent_runner", "agent_model", "batches", "valid_scored",
                                    "failed",
                                    "top_failing_check", "top_check_failures", "top_detail", "top_detail_failures",
                                    "top_share", "suspect"]]
    return out


# ---------------------------------------------------------------------------------------------------------------
# phases (each in its own process) and the comparison


def phase_sql(db: Path, repeat: int) -> dict[str, object]:
    baseline = peak_rss_mb()
    walls: list[float] = []
    with duckdb.connect(str(db)) as con:
        threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
        for _ in range(repeat):
            started = time.perf_counter()
            counts = materialize_models(con)
            walls.append(time.perf_counter() - started)
        peak = peak_rss_mb()
        # one more pass, model by model, only to show where the time goes
        per_model: dict[str, float] = {}
        for name in counts:
            started = time.perf_counter()
            materialize_models(con, [name])
            per_model[name] = time.perf_counter() - started
    return {"walls": walls, "counts": counts, "peak_rss_mb": peak, "baseline_rss_mb": baseline,
            "threads": threads, "per_model": per_model}


def phase_pandas(db: Path, repeat: int, out: Path) -> dict[str, object]:
    baseline = peak_rss_mb()
    started = time.perf_counter()
    with duckdb.connect(str(db), read_only=True) as con:
        trials = con.execute("SELECT * FROM trials").df()
    load = time.perf_counter() - started
    walls: list[float] = []
    results: dict[str, pd.DataFrame] = {}
    for _ in range(repeat):
        started = time.perf_counter()
        results = pandas_metrics(trials)
        walls.append(time.perf_counter() - started)
    out.write_bytes(pickle.dumps(results))
    return {"walls": walls, "load_s": load, "peak_rss_mb": peak_rss_mb(), "baseline_rss_mb": baseline}


KEYS: dict[str, list[str]] = {
    "pass_rate": ["run_id", "condition"],
    "cell_matrix": ["run_id", "task", "condition"],
    "pass_k": ["run_id", "condition"],
    "pass_k_curve": ["run_id", "condition", "k"],
    "skill_deltas": ["run_id", "workspace_part"],
    "skill_deltas_by_task": ["run_id", "workspace_part", "task"],
    "performance": ["run_id", "condition"],
    "failure_breakdown": ["run_id", "failure_code"],
    "sdk_path_breakdown": ["run_id", "sdk_path"],
    "invalid_breakdown": ["run_id", "invalid_reason"],
    "static_adoption": ["run_id", "task", "condition"],
    "trends": ["batch_id", "suite", "agent_runner", "agent_model", "condition"],
    "suspect_markers": ["task", "prompt_hash", "agent_runner", "agent_model"],
}


def compare(con: duckdb.DuckDBPyConnection, name: str, theirs: pd.DataFrame) -> None:
    """Every row and column of the pandas result equals the SQL table (floats to 1e-9, NULL = NaN)."""
    ours = con.execute(f"SELECT * FROM {name}").df()
    assert list(ours.columns) == list(theirs.columns), (name, list(ours.columns), list(theirs.columns))
    assert len(ours) == len(theirs), (name, len(ours), len(theirs))
    keys = KEYS[name]
    ours = ours.sort_values(keys, na_position="last").reset_index(drop=True)
    theirs = theirs.sort_values(keys, na_position="last").reset_index(drop=True)
    for column in ours.columns:
        a, b = ours[column], theirs[column]
        if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b) and not pd.api.types.is_bool_dtype(a):
            ok = np.isclose(a.astype(float), b.astype(float), rtol=1e-9, atol=1e-12, equal_nan=True)
        else:
            missing_a, missing_b = a.isna().to_numpy(), b.isna().to_numpy()
            same = a.astype(object).to_numpy() == b.astype(object).to_numpy()
            ok = (missing_a & missing_b) | (~missing_a & ~missing_b & same)
        assert ok.all(), f"{name}.{column} differs at rows {np.flatnonzero(~ok)[:5].tolist()}"


def child(phase: str, db: Path, repeat: int, out: Path, rows: int = 0) -> dict:
    """Run one phase in a fresh interpreter, so its peak memory is its own."""
    command = [sys.executable, __file__, "--phase", phase, "--db", str(db), "--repeat", str(repeat),
               "--out", str(out), "--rows", str(rows)]
    result = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None, help="keep the database here (default: a temp dir)")
    parser.add_argument("--phase", choices=["generate", "sql", "pandas"], help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.phase == "generate":
        print(json.dumps({"seconds": generate(args.db, args.rows)}))
        return
    if args.phase == "sql":
        print(json.dumps(phase_sql(args.db, args.repeat)))
        return
    if args.phase == "pandas":
        print(json.dumps(phase_pandas(args.db, args.repeat, args.out)))
        return

    with tempfile.TemporaryDirectory(prefix="sql-models-bench-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        db = workdir / "bench.duckdb"
        db.unlink(missing_ok=True)
        generated = float(child("generate", db, args.repeat, workdir / "unused", rows=args.rows)["seconds"])
        with duckdb.connect(str(db), read_only=True) as con:
            shape = con.execute("""SELECT count(*), count(DISTINCT task), count(DISTINCT condition),
                                          count(DISTINCT run_id), count(DISTINCT batch_id),
                                          avg((NOT valid)::INT), avg((NOT scored_for_pass_rate)::INT),
                                          avg((cost_usd IS NULL)::INT) FROM trials""").fetchall()[0]
        print(f"{shape[0]:,} trials, {shape[1]} tasks, {shape[2]} conditions, {shape[3]:,} runs, "
              f"{shape[4]:,} batches; {shape[5]:.1%} invalid, {shape[6]:.1%} source-imports, "
              f"{shape[7]:.1%} without cost; generated in {generated:.2f} s")
        print(f"{os.cpu_count()} cores, duckdb {duckdb.__version__}, pandas {pd.__version__}")

        sql = child("sql", db, args.repeat, workdir / "unused")
        pandas_out = workdir / "pandas.pickle"
        pand = child("pandas", db, args.repeat, pandas_out)

        with duckdb.connect(str(db), read_only=True) as con:
            results = pickle.loads(pandas_out.read_bytes())
            for name in KEYS:
                compare(con, name, results[name])
            headline = con.execute("""SELECT sum(passed), sum(valid_scored) FROM pass_rate
                                      WHERE condition = '*'""").fetchall()[0]
            suspects = [r[0] for r in con.execute("SELECT DISTINCT task FROM suspect_markers WHERE suspect "
                                                  "ORDER BY 1").fetchall()]
        pandas_rate = results["pass_rate"].query("condition == '*'")[["passed", "valid_scored"]].sum()
        assert (int(pandas_rate["passed"]), int(pandas_rate["valid_scored"])) == headline, (pandas_rate, headline)
        assert suspects == sorted(results["suspect_markers"].query("suspect")["task"].unique())
        print(f"results agree on all {len(KEYS)} tables; headline {headline[0]:,}/{headline[1]:,} = "
              f"{headline[0] / headline[1]:.1%}; suspect tasks: {', '.join(suspects) or 'none'}")

        sql_median = statistics.median(sql["walls"])
        pandas_median = statistics.median(pand["walls"])
        speedup = pandas_median / sql_median
        print(f"SQL models ({len(sql['counts'])}, {sql['threads']} threads): "
              f"{', '.join(f'{w:.2f}' for w in sql['walls'])} s -> median {sql_median:.2f} s; "
              f"peak RSS {sql['peak_rss_mb']:.0f} MB (process baseline {sql['baseline_rss_mb']:.0f} MB)")
        slowest = sorted(sql["per_model"].items(), key=lambda item: -item[1])[:4]
        print("  slowest models: " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in slowest))
        print(f"pandas: load {pand['load_s']:.2f} s, metrics {', '.join(f'{w:.2f}' for w in pand['walls'])} s "
              f"-> median {pandas_median:.2f} s; peak RSS {pand['peak_rss_mb']:.0f} MB "
              f"(process baseline {pand['baseline_rss_mb']:.0f} MB)")
        print(f"speedup: {speedup:.1f}x on compute alone, {(pandas_median + pand['load_s']) / sql_median:.1f}x "
              f"counting the pandas load")
        ok = sql_median < SQL_TARGET_S and speedup >= SPEEDUP_TARGET
        print(f"targets (SQL < {SQL_TARGET_S:.0f} s, >= {SPEEDUP_TARGET:.0f}x): {'met' if ok else 'MISSED'}")
        if not ok:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
