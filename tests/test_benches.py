"""The benchmarks keep working: each runs at a tiny size (its figures mean nothing there, so none is asserted; the
measurements live in the scripts' own output at full size). The SQL bench still proves, at any size, that the
pandas implementation and the SQL models agree table by table."""

from __future__ import annotations

import re
import subprocess
import sys

from mcp_evals_pipeline.sql_models import load_models
from mcp_evals_pipeline.tasks.catalog import load_task

from .conftest import REPO


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=600, check=False)


def test_sql_models_bench_agrees_with_pandas_at_a_small_size() -> None:
    done = _bench("bench/sql_models_bench.py", "--rows", "5000", "--repeat", "1")
    # exit 1 only for missed targets, which a 5,000-row run may miss; a disagreement raises before this line
    assert "results agree on all 13 tables" in done.stdout, done.stdout + done.stderr
    assert f"SQL models ({len(load_models())}, " in done.stdout


def test_trial_overhead_bench_runs() -> None:
    done = _bench("bench/trial_overhead_bench.py", "--trials", "2")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"2 trials \(replay agent, \d+ build tasks\)", done.stdout)
    assert "harness overhead per trial" in done.stdout
    usage = _bench("bench/trial_overhead_bench.py", "--trials", "2", "--kind", "usage")
    assert usage.returncode == 0, usage.stdout[-2000:] + usage.stderr[-2000:]
    assert re.search(r"2 trials \(replay agent, \d+ usage tasks\)", usage.stdout), usage.stdout[-2000:]
    assert "target <= 1500 ms" in usage.stdout


def test_grader_bench_runs() -> None:
    done = _bench("bench/grader_bench.py", "--runs", "1", "--unseen", "1", "--task", "py-v4-01-basic-tool-server")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    solutions = len(load_task(REPO / "tasks" / "py-v4-01-basic-tool-server").solutions)  # blind ones included
    assert f"verify-tasks, {solutions} solutions, warm: median" in done.stdout and "target <= 150 s" in done.stdout
    assert "per-stage median (ms), by runtime:" in done.stdout and "python  start" in done.stdout
    assert "install of a dependency set not seen before (python" in done.stdout
