"""Benchmark of verify-tasks: the whole suite warm, per-runtime medians, the per-stage split, and installs of a
dependency set not seen before, each against its target (issue 9).

    .venv/bin/python bench/grader_bench.py [--runs 3] [--workers N] [--suite mcp-use ...] [--task ID ...]

Targets (2 cores, quiet machine): a warm TypeScript solution grades in <= 3 s (median), a TypeScript dependency set
not seen before installs in <= 10 s, and verify-tasks over the whole suite (every golden, alternate and negative of
both runtimes) takes <= 150 s warm. Each figure is printed with its target and MET / MISSED; the per-stage split
says where the time goes, so the next bottleneck is visible. Every solution must still grade as declared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import time
from collections import defaultdict
from pathlib import Path

import anyio

from mcp_evals_pipeline.grader.node_runtime import ensure_modules, find_lockfile, read_manifest
from mcp_evals_pipeline.grader.python_env import ensure_env
from mcp_evals_pipeline.grader.scratch import workdir_for
from mcp_evals_pipeline.node_toolchain import ensure_toolchain
from mcp_evals_pipeline.tasks.catalog import Task, discover_tasks, get_task
from mcp_evals_pipeline.tasks.suites import expand_selection
from mcp_evals_pipeline.verify import verify_tasks

TARGET_TS_WARM_S = 3.0
TARGET_TS_UNSEEN_S = 10.0
TARGET_SUITE_S = 150.0


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values):8.1f}" if values else "       -"


def verdict(value: float, target: float) -> str:
    return f"target <= {target:g} s: {'MET' if value <= target else 'MISSED'}"


def _unseen_day(i: int) -> dt.date:
    # A day no cached build carries: the key of a build includes its day, so this is a dependency set not seen before.
    return dt.date(2000, 1, 1) + dt.timedelta(days=int(time.time()) % 10000 + i)


def unseen_installs(golden: Path, runtime: str, n: int = 3) -> list[float]:
    """Seconds to build the golden's dependencies as a set not seen before (the download cache as the box has it)."""
    seconds = []
    for i in range(n):
        with workdir_for(golden) as work:
            started = time.perf_counter()
            if runtime == "node":
                root, _, _ = ensure_modules(read_manifest(work.copy), find_lockfile(work.copy), ensure_toolchain(),
                                            work, today=_unseen_day(i))
                built = root.parent
            else:
                built = ensure_env(work, today=_unseen_day(i)).root
            seconds.append(time.perf_counter() - started)
            shutil.rmtree(built, ignore_errors=True)
    return seconds


def select(suites: list[str], task_ids: list[str]) -> list[Task]:
    """The build tasks selected (the grader's bench: a usage task's sessions are not gradings)."""
    if suites or task_ids:
        tasks = [get_task(t) for t in expand_selection(task_ids, suites)]
    else:
        tasks, errors = discover_tasks()
        if errors:
            raise SystemExit("\n".join(map(str, errors)))
    return [t for t in tasks if t.kind == "build"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=min(4, (os.cpu_count() or 2) + 1))
    parser.add_argument("--suite", action="append", default=[])
    parser.add_argument("--task", action="append", default=[])
    parser.add_argument("--unseen", type=int, default=3, help="installs of a new dependency set per runtime")
    args = parser.parse_args()

    tasks = select(args.suite, args.task)
    runtime_of = {t.id: t.contract.effective_runtime for t in tasks}
    solutions = sum(len(t.solutions) for t in tasks)
    print(f"{len(tasks)} tasks, {solutions} solutions, {args.workers} workers, {os.cpu_count()} cores")

    anyio.run(lambda: verify_tasks(tasks, workers=args.workers))  # warm-up: environments, node_modules, caches
    walls: list[float] = []
    stage_ms: dict[tuple[str, str], list[float]] = defaultdict(list)
    per_solution: dict[str, list[float]] = defaultdict(list)  # runtime -> seconds of each solution
    per_task: dict[str, list[float]] = defaultdict(list)
    all_ok = True
    for run in range(args.runs):
        started = time.perf_counter()
        results = anyio.run(lambda: verify_tasks(tasks, workers=args.workers))
        walls.append(time.perf_counter() - started)
        all_ok &= all(r.ok for r in results)
        task_seconds: dict[str, float] = defaultdict(float)
        for r in results:
            runtime = runtime_of[r.task_id]
            task_seconds[r.task_id] += r.seconds
            per_solution[runtime].append(r.seconds)
            for stage, ms in r.grade.stage_ms.items():
                stage_ms[(runtime, stage)].append(ms)
        for task_id, seconds in task_seconds.items():
            per_task[task_id].append(seconds)
        bad = [f"{r.task_id}/{r.solution.name}" for r in results if not r.ok]
        print(f"run {run + 1}: {walls[-1]:.1f} s, all as declared: {not bad}" + (f" ({', '.join(bad)})" if bad else ""))

    wall = statistics.median(walls)
    print(f"\nverify-tasks, {solutions} solutions, warm: median {wall:.1f} s (min {min(walls):.1f}, max "
          f"{max(walls):.1f}); {verdict(wall, TARGET_SUITE_S)}")
    for runtime, seconds in sorted(per_solution.items()):
        line = f"  {runtime} solution, warm: median {statistics.median(seconds):.2f} s (n={len(seconds)})"
        print(line + (f"; {verdict(statistics.median(seconds), TARGET_TS_WARM_S)}" if runtime == "node" else ""))
    print("\nper-stage median (ms), by runtime:")
    for (runtime, stage), values in sorted(stage_ms.items()):
        print(f"  {runtime:<7} {stage:<15} {median_ms(values)}   (n={len(values)})")
    print("\nper task: solutions, grading time of all its solutions (s, median):")
    for task in tasks:
        print(f"  {task.id:<42} {runtime_of[task.id]:<7} {len(task.solutions):>3} "
              f"{statistics.median(per_task[task.id]):7.1f}")

    for runtime in sorted(set(runtime_of.values())):
        golden = next(t.golden.path for t in tasks if runtime_of[t.id] == runtime)
        seconds = unseen_installs(golden, runtime, args.unseen)
        line = f"\ninstall of a dependency set not seen before ({runtime}, install box, private download cache): " \
               f"median {statistics.median(seconds):.1f} s (n={len(seconds)})"
        print(line + (f"; {verdict(statistics.median(seconds), TARGET_TS_UNSEEN_S)}" if runtime == "node" else ""))
    if not all_ok:
        raise SystemExit("some solution did not grade as declared")


if __name__ == "__main__":
    main()
