"""Many hosts, on one machine: a CLI batch on an instance with deploy/dagster.yaml's Postgres storage (a fresh
database on the project's own server, scripts/postgres_server.sh), queued coordinator, DockerRunLauncher and run
retries, its runs executed by run-worker containers three at a time, the results on a directory every worker mounts
(the stand-in for a shared volume). The workers write files only (MCP_EVALS_ROW_WRITER=indexer); the reports run is
the one writer of the DuckDB rows. One worker container is killed mid-trial: Dagster's run monitoring fails its run,
run retries re-execute it, and the trial keeps the killed attempt as an `infra.*` row beside its retry's. Every row
lands once, and the scorecard equals the one a local batch (the default launcher, one host) gives.
Skipped, with the reason, where no engine, run-worker image or Postgres server (DAGSTER_PG_*) is reachable."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest
import yaml

from .conftest import REPO
from .test_docker_config import _engine_skip_reason

BATCH = "2026-11-30"
RUN_ID = f"{BATCH}--replay--default"
CASES = ["usage-ops-v3-01-restart-by-id", "usage-ops-v3-02-restart-by-name"]
PIPELINE_IMAGE = os.environ.get("MCP_EVALS_PIPELINE_IMAGE") or "mcp-evals-pipeline:dev"
PG_VARS = ("DAGSTER_PG_HOST", "DAGSTER_PG_PORT", "DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_DB")
LABEL = "mcp-evals.postgres-workers-test"
WORKERS = 3


def _skip_reason() -> str | None:
    missing = [name for name in PG_VARS if not os.environ.get(name)]
    if missing:
        return f"no Postgres server: {', '.join(missing)} unset (scripts/postgres_server.sh run sets them)"
    return _engine_skip_reason(PIPELINE_IMAGE, "run-worker image")


_SKIP = _skip_reason()
pytestmark = pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")


def _admin(sql: str) -> None:
    """A statement on the server's own database (CREATE / DROP DATABASE: outside a transaction)."""
    import psycopg2

    con = psycopg2.connect(host=os.environ["DAGSTER_PG_HOST"], port=int(os.environ["DAGSTER_PG_PORT"]),
                           user=os.environ["DAGSTER_PG_USER"], password=os.environ["DAGSTER_PG_PASSWORD"],
                           dbname=os.environ["DAGSTER_PG_DB"])
    try:
        con.autocommit = True
        con.cursor().execute(sql)
    finally:
        con.close()


def _instance_yaml(home: Path, results: Path, db: str) -> dict[str, Any]:
    """deploy/dagster.yaml as it is (Postgres storage from DAGSTER_PG_*, queued coordinator, Docker launcher, run
    monitoring and retries), with what one test machine needs instead of a deployment's paths: the host's network
    (the one way a worker reaches 127.0.0.1 when the engine runs with --bridge=none), this checkout, this results
    directory, a database of its own, three workers, and monitoring that looks every 2 s."""
    deployed = yaml.safe_load((REPO / "deploy" / "dagster.yaml").read_text())
    deployed["storage"]["postgres"]["postgres_db"]["db_name"] = db
    launcher = deployed["run_launcher"]
    kept = [v for v in launcher["config"]["env_vars"] if v.startswith(("DAGSTER_PG_", "MCP_EVALS_ROW_WRITER"))]
    launcher["config"] = {
        "image": PIPELINE_IMAGE,
        "network": "host",
        "env_vars": [*kept, f"DAGSTER_HOME={home}", f"MCP_EVALS_RESULTS_DIR={results}", f"PYTHONPATH={REPO}",
                     f"MCP_EVALS_CACHE_DIR={results / 'cache'}"],
        "container_kwargs": {
            "volumes": [f"{REPO}:{REPO}:ro", f"{home}:{home}:rw", f"{results}:{results}:rw"],
            "working_dir": str(REPO),
            "auto_remove": False,
            "labels": {LABEL: "1"},
        },
    }
    return {
        "telemetry": {"enabled": False},
        "storage": deployed["storage"],
        "run_launcher": launcher,
        "run_coordinator": deployed["run_coordinator"],
        "concurrency": {"runs": {"max_concurrent_runs": WORKERS},
                        "pools": {"default_limit": WORKERS, "granularity": "op"}},
        "run_monitoring": {**deployed["run_monitoring"], "poll_interval_seconds": 2},
        "run_retries": deployed["run_retries"],
    }


def _eval(home: Path, results: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    argv = [str(Path(sys.executable).parent / "mcp-evals"), "eval", "--agent", "replay",
            *[a for case in CASES for a in ("--task", case)], "--condition", "bare", "--trials", "3",
            "--batch-date", BATCH, "--parallel", str(WORKERS), "--sandbox", "local", "--no-verify", "--skip-judge"]
    with open(log, "wb") as out:
        return subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                env={**env, "DAGSTER_HOME": str(home), "MCP_EVALS_RESULTS_DIR": str(results)})


def _when(stamp: str) -> datetime:
    """Docker's RFC 3339 time with nanoseconds, to the microsecond."""
    return datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", stamp))


def _scorecard(results: Path) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(results / "evals.duckdb"), read_only=True) as con:
        rates = con.execute("SELECT * EXCLUDE (batch_id, batch_date) FROM usage_rates ORDER BY condition").fetchall()
        cases = con.execute("SELECT * FROM usage_cases ORDER BY ALL").fetchall()
    return [*rates, *cases]


def _kill_one_mid_trial(home: Path, results: Path, stop: threading.Event, killed: list[str]) -> None:
    """Kill the container of the first trial run seen between its attempt's start (the trial folder exists) and
    its end (no trial.json yet). The container is paused first, then looked at again: a trial that ended
    meanwhile is let go, so the kill always lands mid-trial."""
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
                container = client.containers.get(container_id)
                container.pause()
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
    local_home, local_results = tmp_path / "local_home", tmp_path / "local_results"
    home, results = tmp_path / "dagster_home", tmp_path / "results"
    for folder in (home, results, local_results):
        folder.mkdir()
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_HOME")}

    # The same batch on one host, the default launcher, each trial writing its own row.
    local = _eval(local_home, local_results, base_env, tmp_path / "local.log")
    assert local.wait(timeout=600) == 0, (tmp_path / "local.log").read_text()[-4000:]

    db = f"mcp_evals_test_{uuid.uuid4().hex[:12]}"
    _admin(f"CREATE DATABASE {db}")
    env = {**base_env, "MCP_EVALS_ROW_WRITER": "indexer"}
    (home / "dagster.yaml").write_text(yaml.safe_dump(_instance_yaml(home, results, db)))
    (tmp_path / "workspace.yaml").write_text(yaml.safe_dump({"load_from": [{"python_module": {
        "module_name": "mcp_evals_pipeline.definitions", "location_name": "mcp_evals_pipeline",
        "working_directory": str(REPO)}}]}))
    daemon_log = tmp_path / "daemon.log"
    with open(daemon_log, "wb") as out:
        daemon = subprocess.Popen([str(Path(sys.executable).parent / "dagster-daemon"), "run", "-w",
                                   str(tmp_path / "workspace.yaml")], cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                  env={**env, "DAGSTER_HOME": str(home)}, start_new_session=True)
    stop, killed = threading.Event(), list[str]()
    killer = threading.Thread(target=_kill_one_mid_trial, args=(home, results, stop, killed), daemon=True)
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            deadline = time.monotonic() + 120
            while "QUEUED_RUN_COORDINATOR" not in instance.get_daemon_heartbeats():
                assert time.monotonic() < deadline and daemon.poll() is None, daemon_log.read_text()[-3000:]
                time.sleep(1)
        killer.start()
        batch = _eval(home, results, env, tmp_path / "batch.log")
        code = batch.wait(timeout=900)
        stop.set()
        killer.join(timeout=30)
        said = (tmp_path / "batch.log").read_text()
        assert code == 0, said[-6000:]
        assert killed, "no trial was caught mid-attempt"
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

        with dg.DagsterInstance.from_config(str(home)) as instance:
            records = instance.get_run_records(dg.RunsFilter(job_name="trials_job"))
        # Each trial run in its own worker container, of the run-worker image; three at once.
        containers = {r.dagster_run.tags.get("docker/container_id") for r in records}
        assert len(records) == 7 and None not in containers and len(containers) == 7, records
        assert {client.containers.get(c).attrs["Config"]["Image"] for c in containers} == {PIPELINE_IMAGE}
        # The containers' lives (from start to exit, the worker's Python start included) overlapped three deep.
        spans = sorted((_when(state["StartedAt"]), _when(state["FinishedAt"]))
                       for state in (client.containers.get(c).attrs["State"] for c in containers))
        busiest = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
        assert busiest == WORKERS, spans
    except AssertionError:
        print(daemon_log.read_text()[-4000:])
        raise
    finally:
        stop.set()
        os.killpg(daemon.pid, 15)
        daemon.wait(timeout=60)
        for container in client.containers.list(all=True, filters={"label": LABEL}):
            container.remove(force=True)
        _admin(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
