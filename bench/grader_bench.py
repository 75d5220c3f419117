"""Benchmark of verify-tasks: wall time of the whole suite and per-stage medians, with a warm install cache.

    .venv/bin/python bench/grader_bench.py [--runs 5] [--workers N]

Also measures the install stage both ways: an environment reused for an identical dependency set (the warm path
every trial after the first takes) and a new environment built by uv from its warm download cache.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import time
from collections import defaultdict

import anyio

from mcp_evals_pipeline.grader.python_env import ensure_env
from mcp_evals_pipeline.grader.scratch import workdir_for
from mcp_evals_pipeline.tasks.catalog import discover_tasks
from mcp_evals_pipeline.verify import verify_tasks


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values):8.1f}" if values else "       -"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=min(4, (os.cpu_count() or 2) + 1))
    args = parser.parse_args()

    tasks, errors = discover_tasks()
    if errors:
        raise SystemExit("\n".join(map(str, errors)))
    solutions = sum(len(t.solutions) for t in tasks)
    print(f"{len(tasks)} tasks, {solutions} solutions, {args.workers} workers, {os.cpu_count()} cores")

    anyio.run(lambda: verify_tasks(tasks, workers=args.workers))  # warm-up: environments and uv cache
    walls: list[float] = []
    stage_ms: dict[str, list[float]] = defaultdict(list)
    golden_start: dict[str, list[float]] = defaultdict(list)
    per_task: dict[str, list[float]] = defaultdict(list)  # seconds of every solution of the task, summed per run
    all_ok = True
    for run in range(args.runs):
        started = time.perf_counter()
        results = anyio.run(lambda: verify_tasks(tasks, workers=args.workers))
        walls.append(time.perf_counter() - started)
        all_ok &= all(r.ok for r in results)
        task_seconds: dict[str, float] = defaultdict(float)
        for r in results:
            task_seconds[r.task_id] += r.seconds
            for stage, ms in r.grade.stage_ms.items():
                stage_ms[stage].append(ms)
            if r.solution.kind == "golden" and "start" in r.grade.stage_ms:
                golden_start[r.task_id].append(r.grade.stage_ms["start"])
        for task_id, seconds in task_seconds.items():
            per_task[task_id].append(seconds)
        print(f"run {run + 1}: {walls[-1]:.2f} s, all as declared: {all(r.ok for r in results)}")

    print(f"\nwhole suite ({solutions} solutions), warm: median {statistics.median(walls):.2f} s, "
          f"min {min(walls):.2f} s, max {max(walls):.2f} s")
    print("\nper-stage median over every grading (ms):")
    for stage, values in stage_ms.items():
        print(f"  {stage:<14} {median_ms(values)}   (n={len(values)})")
    print("\nper task: solutions, grading time of all its solutions (s, median), golden start stage (ms, median):")
    for task in tasks:
        print(f"  {task.id:<40} {len(task.solutions):>3} {statistics.median(per_task[task.id]):7.2f}"
              f"  {median_ms(golden_start.get(task.id, []))}")

    # The install stage when the dependency set is new for the day: uv in an install box, its download cache
    # private (no trial writes a cache another reads), so it downloads again.
    golden = tasks[0].golden.path
    builds = []
    for i in range(3):
        with workdir_for(golden) as work:
            started = time.perf_counter()
            env = ensure_env(work, today=dt.date(2000, 1, 1) + dt.timedelta(days=int(time.time()) % 10000 + i))
            builds.append((time.perf_counter() - started) * 1000)
            shutil.rmtree(env.root, ignore_errors=True)
    print(f"\ninstall, new environment in an install box (private download cache): median "
          f"{statistics.median(builds):.0f} ms "
          f"(n={len(builds)}); reused environment: median {median_ms(stage_ms['install']).strip()} ms")
    if not all_ok:
        raise SystemExit("some solution did not grade as declared")


if __name__ == "__main__":
    main()
