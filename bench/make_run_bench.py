"""`make run` as a newcomer meets it, twice: the first run and a second one on the same clone.

    .venv/bin/python bench/make_run_bench.py [--runs 2]

Each `make run` uses this checkout with its own results directory, database and Dagster instance (temporary), so
the first run imports the archived real runs and proves every task, and the second finds the runs imported and the
proofs still holding (unchanged tasks, grader and harness, the same day) and spends its time on the batches. The
grader's environment cache (.cache/) is the checkout's, warm after `make test` or an earlier run, as on a
developer's machine. Prints each run's wall time and its slowest steps (the target for the second: <= 3 min on 2
cores).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STEP = re.compile(r"^\S*mcp-evals (\S+)")


def make_run(env: dict[str, str]) -> tuple[float, list[tuple[str, float]]]:
    """Wall time of `make run` and of each of its commands (timed between the lines make echoes)."""
    started = time.monotonic()
    proc = subprocess.Popen(["make", "run"], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    steps: list[tuple[str, float]] = []
    current, since = None, started
    assert proc.stdout is not None
    seen: list[str] = []
    for line in proc.stdout:
        seen = [*seen[-40:], line]
        match = STEP.match(line.strip())
        if match:
            now = time.monotonic()
            if current:
                steps.append((current, now - since))
            current, since = line.strip().split("mcp-evals ", 1)[1][:70], now
    if proc.wait() != 0:
        raise SystemExit(f"make run failed with exit code {proc.returncode}:\n{''.join(seen)}")
    end = time.monotonic()
    if current:
        steps.append((current, end - since))
    return end - started, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="make-run-bench-") as tmp:
        env = {**os.environ, "MCP_EVALS_RESULTS_DIR": f"{tmp}/results", "MCP_EVALS_DB": f"{tmp}/results/evals.duckdb",
               "DAGSTER_HOME": f"{tmp}/dagster_home"}
        Path(env["DAGSTER_HOME"]).mkdir()
        for n in range(1, args.runs + 1):
            wall, steps = make_run(env)
            print(f"make run #{n}: {wall:.0f} s wall on {os.cpu_count()} cores")
            for step, seconds in steps:
                print(f"  {seconds:6.1f} s  mcp-evals {step}")


if __name__ == "__main__":
    main()
