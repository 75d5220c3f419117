"""Many hosts, on one machine: a CLI batch on an instance with deploy/dagster.yaml's Postgres storage (a fresh
database on the project's own server, scripts/postgres_server.sh), queued coordinator, DockerRunLauncher and run
retries, its runs executed by run-worker containers three at a time, the results on a directory every worker mounts
(the stand-in for a shared volume): tests/support/many_workers.py. The workers write files only
(MCP_EVALS_ROW_WRITER=indexer); the reports run is the one writer of the DuckDB rows. One worker container is killed
mid-trial: Dagster's run monitoring fails its run, run retries re-execute it, and the trial keeps the killed attempt
as an `infra.*` row beside its retry's. Every row lands once, and the scorecard equals the one a local batch (the
default launcher, one host) gives. Skipped, with the reason, where no engine, run-worker image or Postgres server
(DAGSTER_PG_*) is reachable."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest
from dagster._core.events import DagsterEventType

from .conftest import REPO
from .support.many_workers import PIPELINE_IMAGE, eval_argv, postgres_missing, worker_instance
from .test_docker_config import _engine_skip_reason

BATCH = "2026-11-30"
RUN_ID = f"{BATCH}--replay--default"
CASES = ["usage-ops-v3-01-restart-by-id", "usage-ops-v3-02-restart-by-name"]
WORKERS = 3

_SKIP = postgres_missing() or _engine_skip_reason(PIPELINE_IMAGE, "run-worker image")
pytestmark = pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")


def _eval(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(eval_argv(CASES, 3, WORKERS, BATCH), cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                env=env)


def _scorecard(results: Path) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(results / "evals.duckdb"), read_only=True) as con:
        rates = con.execute("SELECT * EXCLUDE (batch_id, batch_date) FROM usage_rates ORDER BY condition").fetchall()
        cases = con.execute("SELECT * FROM usage_cases ORDER BY ALL").fetchall()
    return [*rates, *cases]


def _kill_one_mid_trial(home: Path, results: Path, stop: threading.Event, killed: list[str],
                        missed: list[str]) -> None:
    """Kill the container of the first trial run seen between its attempt's start (the trial folder exists) and
    its end (no trial.json yet). The container is paused first, then looked at again: a trial that ended
    meanwhile is let go, so the kill always lands mid-trial. A container that cannot be paused (it is ending, or
    the kernel's freezer timed out on a busy machine: seen once under CI's load) is noted in `missed` and looked at
    again."""
    import docker

    client = docker.from_env()
    trials = results / "runs" / RUN_ID / "trials"
    with dg.DagsterInstance.from_config(str(home)) as instance:
        while not stop.is_set() and not killed:
            for run in instance.get_runs(dg.RunsFilter(job_name="trials_job", statuses=[dg.DagsterRunStatus.STARTED])):
                key, container_id = run.tags.get("dagster/partition/trial"), run.tags.get("docker/container_id")
                folder = trials / str(key)
                if not key or not container_id or not folder.is_dir() or (folder / "trial.json").exists():
                    continue
                try:
                    container = client.containers.get(container_id)
                    container.pause()
                except docker.errors.APIError as exc:  # ending, or the freezer gave up (runc thaws it): look again
                    missed.append(f"{key}: {exc}")
                    continue
                if (folder / "trial.json").exists():
                    container.unpause()
                    continue
                container.kill()
                killed.append(str(key))
                return
            time.sleep(0.05)


@pytest.mark.long(240)
def test_six_trials_on_three_run_workers_on_postgres_with_one_killed(tmp_path: Path) -> None:
    import docker

    client = docker.from_env()
    # The same batch on one host, the default launcher, each trial writing its own row.
    local_results = tmp_path / "local_results"
    local_env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "local_home"),
                 "MCP_EVALS_RESULTS_DIR": str(local_results), "MCP_EVALS_ROW_WRITER": "trial"}
    local = _eval(local_env, tmp_path / "local.log")
    assert local.wait(timeout=600) == 0, (tmp_path / "local.log").read_text()[-4000:]

    with worker_instance(tmp_path / "workers", WORKERS) as workers:
        results = workers.results
        stop, killed, missed = threading.Event(), list[str](), list[str]()
        killer = threading.Thread(target=_kill_one_mid_trial, args=(workers.home, results, stop, killed, missed),
                                  daemon=True)
        killer.start()
        try:
            batch = _eval(workers.env, tmp_path / "batch.log")
            code = batch.wait(timeout=900)
        finally:
            stop.set()
            killer.join(timeout=30)
        said = (tmp_path / "batch.log").read_text()
        try:
            assert code == 0, said[-6000:]
            assert killed, f"no trial was caught mid-attempt; pauses refused: {missed}"
            assert "Dagster retries it as run" in said, said[-4000:]

            with duckdb.connect(str(results / "evals.duckdb"), read_only=True) as con:
                rows = con.execute("SELECT task || '--bare--t' || trial, attempt, is_current, valid, invalid_reason "
                                   "FROM trial_attempts ORDER BY ALL").fetchall()
            # Once each: six trials, the killed one with two attempts, no (slot, attempt) twice.
            assert sorted({r[0] for r in rows}) == sorted(f"{c}--bare--t{n}" for c in CASES for n in (1, 2, 3)), rows
            assert len(rows) == 7 and len({(r[0], r[1]) for r in rows}) == 7, rows
            assert [r for r in rows if r[0] == killed[0]] == [(killed[0], 1, False, False, "infra.agent"),
                                                               (killed[0], 2, True, True, None)], rows
            assert all(r[2] and r[3] for r in rows if r[0] != killed[0]), rows
            assert _scorecard(results) == _scorecard(local_results)
            assert (results / "runs" / RUN_ID / "report.md").is_file()

            with dg.DagsterInstance.from_config(str(workers.home)) as instance:
                records = instance.get_run_records(dg.RunsFilter(job_name="trials_job"))
                # A run is in flight from its launch (the daemon hands it to the launcher) to its end.
                spans = sorted((instance.all_logs(r.dagster_run.run_id, of_type=DagsterEventType.RUN_STARTING)[0]
                                .timestamp, r.end_time or 0.0) for r in records)
            # Each trial run in its own worker container, of the run-worker image; three in flight at once, never more.
            containers = {r.dagster_run.tags.get("docker/container_id") for r in records}
            assert len(records) == 7 and None not in containers and len(containers) == 7, records
            assert {client.containers.get(c).attrs["Config"]["Image"] for c in containers} == {PIPELINE_IMAGE}
            busiest = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
            assert busiest == WORKERS, spans
        except AssertionError:
            print(workers.daemon_log.read_text()[-4000:])
            raise
