"""Dagster runs launched through dagster-docker's DockerRunLauncher on a real engine: the instance config of
deploy/dagster.yaml with its SQLite variant (run, event and schedule storage in files under a DAGSTER_HOME mounted at
the same path in the run worker, which is all one host needs; deploy/dagster.yaml's Postgres is for several hosts),
the run worker a container of the project's run-worker image (docker/pipeline.Dockerfile, built by
scripts/docker_engine.sh). `dagster job launch` queues one trial partition, then the batch's models and scorecard;
the daemon (`dagster-daemon run`, as deployed: deploy/dagster.yaml's QueuedRunCoordinator) dequeues each and hands
it to the launcher; each run executes in its own container, on the host's network (`network: host`: measured here as the
one way a run worker reaches the host's loopback when the engine runs with --bridge=none and --iptables=false), and
writes the trial's files and its DuckDB row into the results directory mounted from the host.
Skipped, with the reason, where no engine or run-worker image is reachable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml

from mcp_evals_pipeline.defs.partitions import register_trial_keys

from .conftest import REPO
from .test_docker_config import _engine_skip_reason

BATCH = "2026-11-30"
CASE = "usage-ops-v3-01-restart-by-id"
TRIAL = f"{CASE}--bare--t1"
PIPELINE_IMAGE = os.environ.get("MCP_EVALS_PIPELINE_IMAGE") or "mcp-evals-pipeline:dev"


_SKIP = _engine_skip_reason(PIPELINE_IMAGE, "run-worker image")
pytestmark = pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")


def _instance_yaml(home: Path, results: Path) -> dict[str, object]:
    """deploy/dagster.yaml's run launcher and run policy, with SQLite storage in `home` instead of Postgres."""
    deployed = yaml.safe_load((REPO / "deploy" / "dagster.yaml").read_text())
    launcher = deployed["run_launcher"]
    launcher["config"] = {
        "image": PIPELINE_IMAGE,
        "network": "host",
        "env_vars": [f"DAGSTER_HOME={home}", f"MCP_EVALS_RESULTS_DIR={results}", f"PYTHONPATH={REPO}",
                     f"MCP_EVALS_CACHE_DIR={results / 'cache'}", "MCP_EVALS_SANDBOX=local"],
        "container_kwargs": {
            "volumes": [f"{REPO}:{REPO}:ro", f"{home}:{home}:rw", f"{results}:{results}:rw"],
            "working_dir": str(REPO),
            "auto_remove": False,  # as deployed: the run's logs need the exited container
            "labels": {"mcp-evals.launcher-test": "1"},
        },
    }
    return {"telemetry": {"enabled": False}, "run_launcher": launcher,
            "run_coordinator": deployed["run_coordinator"] | {}, "concurrency": deployed["concurrency"]}


def _launch(home: Path, job: str, tags: dict[str, str], config: dict[str, object] | None = None) -> str:
    run_id = str(uuid.uuid4())
    argv = [str(Path(sys.executable).parent / "dagster"), "job", "launch", "-m", "mcp_evals_pipeline.definitions",
            "-j", job, "--run-id", run_id, "--tags", json.dumps(tags)]
    if config:
        argv += ["--config-json", json.dumps(config)]
    done = subprocess.run(argv, cwd=REPO, env={**os.environ, "DAGSTER_HOME": str(home)}, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return run_id


def _wait(home: Path, run_id: str, timeout_s: float = 180) -> dg.DagsterRunStatus:
    """The run's terminal status, read from the instance the run worker writes to."""
    deadline = time.monotonic() + timeout_s
    with dg.DagsterInstance.from_config(str(home)) as instance:
        while time.monotonic() < deadline:
            run = instance.get_run_by_id(run_id)
            if run is not None and run.status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE,
                                                  dg.DagsterRunStatus.CANCELED):
                return run.status
            time.sleep(1)
        run = instance.get_run_by_id(run_id)
    raise AssertionError(f"run {run_id} still {run.status if run else 'unknown'} after {timeout_s} s")


def _logs(run_id: str) -> str:
    import docker

    client = docker.from_env()
    found = client.containers.list(all=True, filters={"label": "mcp-evals.launcher-test"})
    return "\n".join(c.logs(tail=40).decode(errors="replace") for c in found if run_id in str(c.attrs["Args"]))


@pytest.mark.long
def test_a_trial_and_its_models_run_in_run_worker_containers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import docker

    home, results = tmp_path / "dagster_home", tmp_path / "results"
    home.mkdir()
    results.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump(_instance_yaml(home, results)))
    client = docker.from_env()
    with dg.DagsterInstance.from_config(str(home)) as instance:  # its SQLite schema, before two processes race on it
        instance.get_runs(limit=1)
        register_trial_keys(instance, [TRIAL])  # as a batch does before it launches a trial's run
    daemon_log = tmp_path / "daemon.log"
    with open(daemon_log, "wb") as out:
        daemon = subprocess.Popen([str(Path(sys.executable).parent / "dagster-daemon"), "run", "-m",
                                   "mcp_evals_pipeline.definitions"], cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                  env={**os.environ, "DAGSTER_HOME": str(home)}, start_new_session=True)
    try:
        trial_run = _launch(home, "trials_job", {"dagster/partition": f"{BATCH}|{TRIAL}",
                                                 "dagster/partition/batch_date": BATCH,
                                                 "dagster/partition/trial": TRIAL},
                            {"ops": {"trial": {"config": {"agent": "replay"}}}})
        status = _wait(home, trial_run)
        assert status == dg.DagsterRunStatus.SUCCESS, _logs(trial_run)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            run = instance.get_run_by_id(trial_run)
            assert run is not None and run.tags.get("docker/container_id"), run and run.tags
            container = client.containers.get(run.tags["docker/container_id"])
            assert container.attrs["Config"]["Image"] == PIPELINE_IMAGE  # it ran in the run worker's image
        trial_dir = results / "runs" / f"{BATCH}--replay--default" / "trials" / TRIAL
        record = json.loads((trial_dir / "trial.json").read_text())
        assert record["valid"] and record["task"] == CASE, record.get("error")
        assert (trial_dir / "world.json").is_file() and (trial_dir / "transcript.jsonl").is_file()

        reports_run = _launch(home, "reports_job", {"dagster/partition": BATCH})
        assert _wait(home, reports_run) == dg.DagsterRunStatus.SUCCESS, _logs(reports_run)
        assert (results / "runs" / f"{BATCH}--replay--default" / "report.md").is_file()
        with duckdb.connect(str(results / "evals.duckdb"), read_only=True) as con:
            assert con.execute("SELECT task, condition, valid FROM trials").fetchall() == [(CASE, "bare", True)]
            assert con.execute("SELECT trials FROM usage_rates WHERE condition = '*'").fetchall() == [(1,)]
    except AssertionError:
        print(daemon_log.read_text()[-4000:])
        raise
    finally:
        os.killpg(daemon.pid, 15)
        daemon.wait(timeout=30)
        for container in client.containers.list(all=True, filters={"label": "mcp-evals.launcher-test"}):
            container.remove(force=True)
