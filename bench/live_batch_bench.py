"""A live batch is bound by the model, not the CPU: 27 trials side by side against a slow scripted model.

    .venv/bin/python bench/live_batch_bench.py [--trial-seconds 60] [--parallel 27] [--suite mcp-use]

The batch is the suite's baseline tasks (tasks/suites.json: nine for mcp-use) x `--trials`.
A local OpenAI-compatible server (tests/support/openai_server.py: real HTTP, the real `openai` client of the openai
runner) plays a model that writes the task's golden files one `write_file` call per turn and then says it is done,
answering each turn after a fixed delay so that one trial's agent phase takes about `--trial-seconds`. The batch is
`mcp-evals eval --agent openai --task T... --trials 3 --parallel N` (9 tasks x 3 = 27 trials) in
a temporary results directory and Dagster instance whose `sandbox` pool allows N trials at once. Prints the wall
time of the batch, the slowest trial, the grading CPU time of all trials (from their stage timings' sum is not CPU,
so the batch's own CPU time is measured: user + system of the eval and its workers), and the target: wall <= 1.5 x
the slowest trial + that CPU time / cores.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mcp_evals_pipeline.tasks.catalog import discover_tasks  # noqa: E402 - after the path is set
from mcp_evals_pipeline.tasks.suites import get_suite  # noqa: E402
from tests.support.openai_server import ScriptedOpenAI, call, reply  # noqa: E402


def golden_files(task_dir: Path) -> list[tuple[str, str]]:
    golden = task_dir / "golden"
    return [(p.relative_to(golden).as_posix(), p.read_text()) for p in sorted(golden.rglob("*"))
            if p.is_file() and "node_modules" not in p.parts and p.name != "NEGATIVE.json"]


def model(tasks: dict[str, list[tuple[str, str]]], prompts: dict[str, str], turn_delay: float) -> Any:
    """The scripted model: which task (its prompt is in the first user message), which turn (the assistant
    messages so far), then the next golden file or the final answer."""
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        first = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        text = first if isinstance(first, str) else json.dumps(first)
        task = next((t for t, prompt in prompts.items() if prompt.strip()[:200] in text), None)
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        files = tasks.get(task or "", [])
        if turn < len(files):
            path, content = files[turn]
            return reply(tool_calls=[call("write_file", {"path": path, "content": content})], delay_s=turn_delay)
        return reply("Done: the server is written.", delay_s=turn_delay)
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trial-seconds", type=float, default=60.0)
    parser.add_argument("--parallel", type=int, default=27)
    parser.add_argument("--suite", default="mcp-use")
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    found, _ = discover_tasks()
    tasks = {t.id: golden_files(t.dir) for t in found if t.kind == "build"}
    prompts = {t.id: t.prompt for t in found if t.kind == "build"}
    turns = max(len(files) for files in tasks.values()) + 1
    turn_delay = args.trial_seconds / turns
    with tempfile.TemporaryDirectory(prefix="live-batch-bench-") as tmp, \
            ScriptedOpenAI(model(tasks, prompts, turn_delay)) as server:
        home = Path(tmp) / "dagster_home"
        home.mkdir()
        (home / "dagster.yaml").write_text(f"telemetry:\n  enabled: false\nconcurrency:\n  pools:\n"
                                           f"    default_limit: {args.parallel}\n")
        env = {**os.environ, "MCP_EVALS_RESULTS_DIR": f"{tmp}/results", "MCP_EVALS_DB": f"{tmp}/results/evals.duckdb",
               "DAGSTER_HOME": str(home), "OPENAI_API_KEY": "sk-bench-not-a-key", "OPENAI_BASE_URL": server.base_url}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        selection = [arg for task in get_suite(args.suite).baseline_tasks for arg in ("--task", task)]
        done = subprocess.run([str(REPO / ".venv" / "bin" / "mcp-evals"), "eval", "--agent", "openai", *selection,
                               "--trials", str(args.trials), "--parallel", str(args.parallel),
                               "--no-verify", "--skip-judge"], cwd=REPO, env=env, capture_output=True, text=True,
                              check=False)
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"eval failed ({done.returncode}):\n{done.stderr[-3000:]}")
        records = [json.loads(p.read_text()) for p in Path(tmp, "results", "runs").glob("*/trials/*/trial.json")]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    slowest = max(r["perf"]["durationMs"] or 0 for r in records) / 1000
    passed = sum(1 for r in records if r["grade"]["contractPass"])
    cores = os.cpu_count() or 1
    target = 1.5 * slowest + cpu / cores
    print(f"{len(records)} trials ({passed} passed) with --parallel {args.parallel}, a model turn every "
          f"{turn_delay:.1f} s: batch {wall:.0f} s wall; slowest agent phase {slowest:.0f} s; CPU (eval and its "
          f"workers: start-up, sandboxes, grading) {cpu:.0f} s on {cores} cores")
    print(f"target: <= 1.5 x {slowest:.0f} s + {cpu:.0f} s / {cores} = {target:.0f} s: "
          f"{'met' if wall <= target else 'NOT met'} ({wall / target:.2f} of it)")


if __name__ == "__main__":
    main()
