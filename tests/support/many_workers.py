"""An instance as deploy/dagster.yaml deploys it, on one machine: Postgres storage in a database of its own on the
project's server (scripts/postgres_server.sh sets DAGSTER_PG_*), the queued coordinator with its daemon, the
Docker launcher's run-worker containers, run monitoring and retries; the rows left to one writer
(MCP_EVALS_ROW_WRITER=indexer). For tests/test_docker_postgres_workers.py and bench/workers_bench.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PG_VARS = ("DAGSTER_PG_HOST", "DAGSTER_PG_PORT", "DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_DB")
LABEL = "mcp-evals.many-workers"
PIPELINE_IMAGE = os.environ.get("MCP_EVALS_PIPELINE_IMAGE") or "mcp-evals-pipeline:dev"


def postgres_missing() -> str | None:
    missing = [name for name in PG_VARS if not os.environ.get(name)]
    return f"no Postgres server: {', '.join(missing)} unset (scripts/postgres_server.sh run sets them)" if missing \
        else None


def admin(sql: str) -> None:
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


def instance_yaml(home: Path, results: Path, db: str, workers: int) -> dict[str, Any]:
    """deploy/dagster.yaml as it is, with what one test machine needs instead of a deployment's paths: the host's
    network (the one way a worker reaches 127.0.0.1 when the engine runs with --bridge=none), this checkout, this
    results directory (the stand-in for a shared volume), a database of its own, `workers` run workers at once,
    and monitoring that looks every 2 s."""
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
        "concurrency": {"runs": {**deployed["concurrency"]["runs"], "max_concurrent_runs": workers},
                        "pools": {"default_limit": workers, "granularity": "op"}},
        "run_monitoring": {**deployed["run_monitoring"], "poll_interval_seconds": 2},
        "run_retries": deployed["run_retries"],
    }


@dataclass(frozen=True)
class WorkerInstance:
    home: Path
    results: Path
    env: dict[str, str]  # for the CLI: DAGSTER_HOME, the results directory, the row writer
    daemon_log: Path


@contextmanager
def worker_instance(root: Path, workers: int) -> Iterator[WorkerInstance]:
    """The instance under `root`, its daemon running (its queued-run coordinator has beaten) until exit; then the
    daemon is stopped, the run-worker containers removed and the database dropped."""
    import docker

    home, results = root / "dagster_home", root / "results"
    home.mkdir(parents=True)
    results.mkdir(parents=True)
    db = f"mcp_evals_test_{uuid.uuid4().hex[:12]}"
    admin(f"CREATE DATABASE {db}")
    env = {**{k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}, "DAGSTER_HOME": str(home),
           "MCP_EVALS_RESULTS_DIR": str(results), "MCP_EVALS_ROW_WRITER": "indexer"}
    (home / "dagster.yaml").write_text(yaml.safe_dump(instance_yaml(home, results, db, workers)))
    # The daemon's code location under the name the CLI's runs carry: run retries are created from it.
    (root / "workspace.yaml").write_text(yaml.safe_dump({"load_from": [{"python_module": {
        "module_name": "mcp_evals_pipeline.definitions", "location_name": "mcp_evals_pipeline",
        "working_directory": str(REPO)}}]}))
    daemon_log = root / "daemon.log"
    with open(daemon_log, "wb") as out:
        daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", str(root / "workspace.yaml")], cwd=REPO,
                                  stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            deadline = time.monotonic() + 120
            while "QUEUED_RUN_COORDINATOR" not in instance.get_daemon_heartbeats():
                if time.monotonic() > deadline or daemon.poll() is not None:
                    raise RuntimeError(f"the daemon did not start: {daemon_log.read_text()[-3000:]}")
                time.sleep(1)
        yield WorkerInstance(home, results, env, daemon_log)
    finally:
        os.killpg(daemon.pid, 15)
        daemon.wait(timeout=60)
        for container in docker.from_env().containers.list(all=True, filters={"label": LABEL}):
            container.remove(force=True)
        admin(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


def eval_argv(cases: list[str], trials: int, parallel: int, batch_date: str) -> list[str]:
    """A replay batch of the usage cases x bare x trials. `--sandbox local`: the run-worker image has no
    bubblewrap, and the replay agent runs no agent-written code (a usage session is a list of MCP calls)."""
    return [str(BIN / "mcp-evals"), "eval", "--agent", "replay", *[a for case in cases for a in ("--task", case)],
            "--condition", "bare", "--trials", str(trials), "--batch-date", batch_date, "--parallel", str(parallel),
            "--sandbox", "local", "--no-verify", "--skip-judge"]
