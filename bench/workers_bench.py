"""One host's launcher against three run-worker containers on Postgres: the same 12 replay trials (four usage cases x
bare x three trials) as one CLI batch each way.

    scripts/postgres_server.sh run scripts/docker_engine.sh run .venv/bin/python bench/workers_bench.py

(a) local: the project's instance (DefaultRunLauncher: a forked run worker per trial), `--parallel 4`, its `sandbox`
    pool set to 4;
(b) workers: deploy/dagster.yaml on one machine (tests/support/many_workers.py): Postgres storage, the queued
    coordinator and its daemon, a run-worker container per trial, three at once, rows left to the reports run.
Prints, for each: the batch's wall time (the CLI's, catalog to scorecard), its trials' span (first trial run created
to last ended), and the per-trial overhead: a trial run's time from its launch to its end beyond its trial step's
own time (worker start, Dagster's bookkeeping, storage round trips), median and max; then the ratios. Needs the
engine, the run-worker image and DAGSTER_PG_* (the command above gives all three)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import dagster as dg  # noqa: E402
from dagster._core.events import DagsterEventType  # noqa: E402

from tests.support.many_workers import eval_argv, postgres_missing, worker_instance  # noqa: E402

BATCH = "2026-11-30"
CASES = ["usage-ops-v3-01-restart-by-id", "usage-ops-v3-02-restart-by-name", "usage-ops-v3-03-missing-target",
         "usage-ops-v3-04-logs-question"]
TRIALS = 3


def batch(env: dict[str, str], parallel: int, log: Path) -> float:
    started = time.monotonic()
    with open(log, "wb") as out:
        code = subprocess.run(eval_argv(CASES, TRIALS, parallel, BATCH), cwd=REPO, env=env, stdout=out,
                              stderr=subprocess.STDOUT, check=False).returncode
    if code != 0:
        sys.exit(f"the batch exited {code}: {log.read_text()[-3000:]}")
    return time.monotonic() - started


def _first(instance: dg.DagsterInstance, run_id: str, kind: DagsterEventType) -> float:
    return instance.all_logs(run_id, of_type=kind)[0].timestamp


def figures(home: Path) -> tuple[float, list[float]]:
    """The trials' span and each trial run's overhead (launch to end, minus its trial step)."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.get_run_records(dg.RunsFilter(job_name="trials_job"))
        if len(records) != len(CASES) * TRIALS:
            sys.exit(f"{len(records)} trial runs, not {len(CASES) * TRIALS}")
        span = max(r.end_time or 0.0 for r in records) - min(r.create_timestamp.timestamp() for r in records)
        overheads = []
        for record in records:
            run_id = record.dagster_run.run_id
            step = _first(instance, run_id, DagsterEventType.STEP_SUCCESS) - _first(
                instance, run_id, DagsterEventType.STEP_START)
            overheads.append((record.end_time or 0.0) - _first(instance, run_id, DagsterEventType.RUN_STARTING)
                             - step)
    return span, overheads


def main() -> None:
    missing = postgres_missing()
    if missing:
        sys.exit(missing)
    rows = []
    with tempfile.TemporaryDirectory(prefix="workers-bench-") as tmp:
        root = Path(tmp)
        local_home = root / "local_home"
        local_env = {**os.environ, "DAGSTER_HOME": str(local_home), "MCP_EVALS_RESULTS_DIR": str(root / "local"),
                     "MCP_EVALS_ROW_WRITER": "trial"}
        # The project's instance, its `sandbox` pool at 4 (its default is 2) so that four trials run at once, as
        # `--parallel 4` asks: a slot waited for would count as overhead.
        from mcp_evals_pipeline.dagster_instance import POOL, open_instance

        os.environ["DAGSTER_HOME"] = str(local_home)
        with open_instance(local_home) as instance:
            instance.event_log_storage.set_concurrency_slots(POOL, 4)
        wall = batch(local_env, 4, root / "local.log")
        rows.append(("local launcher, --parallel 4", wall, *figures(local_home)))
        with worker_instance(root / "workers", 3) as workers:
            wall = batch(workers.env, 3, root / "workers.log")
            rows.append(("3 run-worker containers, Postgres", wall, *figures(workers.home)))
    print(f"{len(CASES) * TRIALS} replay trials ({len(CASES)} usage cases x bare x {TRIALS}), one CLI batch each:")
    print(f"{'':36} {'batch':>8} {'trials':>8} {'overhead/trial (median, max)':>30}")
    for name, wall, span, overheads in rows:
        print(f"{name:36} {wall:7.1f}s {span:7.1f}s {statistics.median(overheads):14.2f}s {max(overheads):10.2f}s")
    (_, wall_a, span_a, over_a), (_, wall_b, span_b, over_b) = rows
    print(f"workers / local: batch x{wall_b / wall_a:.2f}, trials x{span_b / span_a:.2f}, "
          f"overhead per trial x{statistics.median(over_b) / statistics.median(over_a):.1f}")


if __name__ == "__main__":
    main()
