"""`make run` as a newcomer meets it, twice: the first run on a fresh clone and a second one on the same clone.

    .venv/bin/python bench/make_run_bench.py [--runs 2] [--in-place]

By default this checkout's HEAD is cloned into a temporary directory and `make run` runs there twice, with its
own results directory, database and Dagster instance: the first run makes the clone's virtualenv (from uv's
machine-wide cache: the "warm package caches" of the target), the grader's Node toolchain and environments (in
the clone's .cache/, so built and installed afresh, as a newcomer's are), imports the archived real runs and
proves what the replay batches rest on; the second finds all of that in place and spends its time on the
batches. `--in-place` runs in this checkout instead (its .venv and .cache/ warm: a developer's second run).
Prints each run's wall time against its target (first <= 5 min, second <= 2 min, on a quiet 2-core machine) and
the time of each of make's commands.
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
STEP = re.compile(r"^\S*(?:mcp-evals|install_boxes\.sh)\b")
TARGETS = {1: 300.0, 2: 120.0}  # seconds: the first run on a fresh clone, the second


TRACEBACK = re.compile(r"^(Traceback \(most recent call last\)|\S*(Error|Exception)\b.*:|\s+File \")")


def make_run(env: dict[str, str], cwd: Path) -> tuple[float, list[tuple[str, float]], list[str]]:
    """Wall time of `make run`, of each of its commands (timed between the lines make echoes), and every line it
    printed."""
    started = time.monotonic()
    proc = subprocess.Popen(["make", "run"], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    steps: list[tuple[str, float]] = []
    current: str | None = "make setup (the virtualenv; nothing when it exists)"
    since = started
    assert proc.stdout is not None
    seen: list[str] = []
    for line in proc.stdout:
        seen.append(line)
        match = STEP.match(line.strip())
        if match:
            now = time.monotonic()
            if current:
                steps.append((current, now - since))
            current, since = re.sub(r"^\S*/", "", line.strip())[:90], now
    if proc.wait() != 0:
        raise SystemExit(f"make run failed with exit code {proc.returncode}:\n{''.join(seen[-40:])}")
    end = time.monotonic()
    if current:
        steps.append((current, end - since))
    return end - started, steps, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--in-place", action="store_true", help="run in this checkout (warm .venv and .cache/)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="make-run-bench-") as tmp:
        where = REPO
        if not args.in_place:
            where = Path(tmp) / "clone"
            subprocess.run(["git", "clone", "--quiet", str(REPO), str(where)], check=True)
        env = {name: value for name, value in os.environ.items()
               if not name.startswith(("MCP_EVALS_", "VIRTUAL_ENV", "DAGSTER_"))}
        env |= {"MCP_EVALS_RESULTS_DIR": f"{tmp}/results", "MCP_EVALS_DB": f"{tmp}/results/evals.duckdb",
                "DAGSTER_HOME": f"{tmp}/dagster_home"}
        Path(env["DAGSTER_HOME"]).mkdir()
        print(f"make run in {'this checkout' if args.in_place else 'a fresh clone of HEAD'} on {os.cpu_count()} cores")
        for n in range(1, args.runs + 1):
            wall, steps, printed = make_run(env, where)
            target = TARGETS.get(n) if not args.in_place else None
            verdict = f" (target <= {target:.0f} s: {'met' if wall <= target else 'NOT met'})" if target else ""
            print(f"make run #{n}: {wall:.0f} s wall{verdict}")
            for step, seconds in steps:
                print(f"  {seconds:6.1f} s  {step}")
            # A run that exits 0 prints no traceback (a server's or proxy's log goes to the trial's files).
            noise = [line for line in printed if TRACEBACK.match(line)]
            print(f"  {len(printed)} lines printed, {len(noise)} of them traceback lines"
                  + (f": first {noise[0].strip()[:100]!r}" if noise else ""))


if __name__ == "__main__":
    main()
