"""The docker sandbox's cost on this host: container overhead per trial, and a parallel batch against local.

    scripts/docker_engine.sh run .venv/bin/python bench/docker_bench.py [--rounds 5] [--trials 4]

1. Container overhead per trial: a DockerSandbox opened (its --internal network, the container created and started
   from the sandbox image, one first command) and closed (the container stopped and removed with everything in
   it, the network removed), `--rounds` times; the median of each phase, with the engine's storage driver (on vfs,
   creating a container copies the image's whole root filesystem: ~30 s for the sandbox image here; overlay2
   shares the image's layers).
2. A batch of `--trials` replay trials of one build task run at once (`eval --parallel N`: Dagster runs in worker
   processes, the `sandbox` pool at N), once in the local sandbox and once in docker containers; both walls and
   their ratio.

Needs a reachable engine and the sandbox image (MCP_EVALS_DOCKER_IMAGE; `scripts/docker_engine.sh run` sets both).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import dagster as dg

from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.pipeline import BatchRequest, run_batch
from mcp_evals_pipeline.sandbox.docker_backend import DockerConfig, DockerSandbox

TASK = "py-v4-01-basic-tool-server"


def storage_driver() -> str:
    import docker

    return str(docker.from_env().info().get("Driver", "?"))


def container_overhead(rounds: int) -> tuple[float, float]:
    """Median (open, close) seconds of a DockerSandbox."""
    opens, closes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(rounds):
            started = time.perf_counter()
            box = DockerSandbox(Path(tmp) / f"ws-{n}", config=DockerConfig.from_env())
            opened = time.perf_counter()
            box.close()
            closes.append(time.perf_counter() - opened)
            opens.append(opened - started)
    return statistics.median(opens), statistics.median(closes)


def batch_wall(sandbox: str, trials: int) -> float:
    with tempfile.TemporaryDirectory() as tmp, dg.instance_for_test(temp_dir=tmp) as instance:
        instance.event_log_storage.set_concurrency_slots("sandbox", trials)
        os.environ["MCP_EVALS_RESULTS_DIR"] = str(Path(tmp) / "results")
        store = EvalStore(database=str(Path(tmp) / "evals.duckdb"), runs_root=str(Path(tmp) / "results" / "runs"))
        request = BatchRequest(agent="replay", task_ids=[TASK], conditions=["noskill+blank"], trials=trials,
                               parallel=trials, verify=False, sandbox=sandbox, batch_date="2026-11-30")
        started = time.perf_counter()
        outcome = run_batch(request, instance, echo=lambda _: None, store=store)
        wall = time.perf_counter() - started
        if outcome.failed_runs:
            raise SystemExit(f"{outcome.failed_runs} of the {sandbox} batch's runs failed")
        return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trials", type=int, default=4)
    args = parser.parse_args()
    opened, closed = container_overhead(args.rounds)
    print(f"container overhead per trial ({storage_driver()}, median of {args.rounds}): open {opened:.2f} s "
          f"(network, create, start, first command), close {closed:.2f} s (stop, remove), "
          f"total {opened + closed:.2f} s")
    batch_wall("local", 1)  # warm-up: the task's environment and imports, as in a long-running deployment
    local = batch_wall("local", args.trials)
    docker = batch_wall("docker", args.trials)
    print(f"{args.trials}-trial replay batch, --parallel {args.trials}: local {local:.1f} s, docker {docker:.1f} s, "
          f"ratio {docker / local:.2f}x")


if __name__ == "__main__":
    main()
