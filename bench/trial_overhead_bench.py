"""Harness overhead per trial with the replay agent: everything except the agent's own work.

    .venv/bin/python bench/trial_overhead_bench.py [--trials 12] [--kind build|usage]

Each trial is a real Dagster run in a temporary instance (as `mcp-evals eval` launches them): sandbox preparation,
the replay agent, grading (install from the warm environment cache, server start, MCP calls), trial files and the
DuckDB row. Overhead = wall time of the run - the agent phase (TrialPerf.durationMs). Prints the median and the
split by grader stage. `--kind usage`: the usage tasks' trials, where the overhead is the world and the server
under evaluation coming up and going down, the world's record and the marker (target: median <= 1.5 s).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import dagster as dg

from mcp_evals_pipeline.defs.partitions import multi_key, register_trial_keys
from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.defs.trials.assets import trial
from mcp_evals_pipeline.kinds import kind_of
from mcp_evals_pipeline.tasks.catalog import discover_tasks
from mcp_evals_pipeline.trial_dir import current_trials
from mcp_evals_pipeline.trials import trial_key

BATCH = "2026-11-25"
USAGE_TARGET_MS = 1500  # issue 10: a usage trial's harness overhead with replay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--kind", choices=["build", "usage"], default="build")
    args = parser.parse_args()
    tasks = [t for t in discover_tasks()[0] if t.kind == args.kind]
    baseline = kind_of(args.kind).baseline  # noskill+blank for build tasks, bare for usage tasks
    keys = [trial_key(t.id, baseline, n) for t in tasks for n in (1, 2, 3)]
    keys = (keys * (args.trials // len(keys) + 1))[: args.trials]

    with tempfile.TemporaryDirectory() as tmp, dg.instance_for_test() as instance:
        store = EvalStore(database=str(Path(tmp) / "evals.duckdb"), runs_root=str(Path(tmp) / "runs"))
        config = {"ops": {"trial": {"config": {"agent": "replay", "skip_judge": True}}}}
        register_trial_keys(instance, keys)
        # Warm-up: environments and imports, as in a long-running deployment.
        dg.materialize([trial], partition_key=multi_key(BATCH, keys[0]), instance=instance,
                       resources={"eval_store": store}, run_config=config)
        walls: list[float] = []
        for key in keys:
            started = time.perf_counter()
            dg.materialize([trial], partition_key=multi_key(BATCH, key), instance=instance,
                           resources={"eval_store": store}, run_config=config)
            walls.append((time.perf_counter() - started) * 1000)
        run_dir = next(Path(tmp, "runs").iterdir())
        by_key = {t.trial_name: t for t in current_trials(run_dir)}
        overheads, stages = [], defaultdict(list)
        for key, wall in zip(keys, walls, strict=True):
            record = by_key[key]
            overheads.append(wall - (record.perf.duration_ms or 0))
            for stage, ms in record.grade.stage_ms.items():
                stages[stage].append(ms)

    print(f"{len(keys)} trials (replay agent, {len(tasks)} {args.kind} tasks), one Dagster run each")
    print(f"wall per trial: median {statistics.median(walls):.0f} ms")
    median = statistics.median(overheads)
    target = f"; target <= {USAGE_TARGET_MS} ms: {'MET' if median <= USAGE_TARGET_MS else 'MISSED'}" \
        if args.kind == "usage" else ""
    print(f"harness overhead per trial (wall - agent phase): median {median:.0f} ms, "
          f"max {max(overheads):.0f} ms{target}")
    print("of which grading, median per stage (ms):")
    for stage, values in stages.items():
        print(f"  {stage:<10} {statistics.median(values):8.1f}")


if __name__ == "__main__":
    main()
