"""`mcp-evals serve` over stdio, on a world of its own: the server of the `evals-server` usage suite. Every start
builds a fresh world under TMPDIR (the usage world's scratch, removed with it) from committed fixtures, then serves
it: a results store indexed from the earlier harness's eight fixture runs (tests/fixtures/legacy_runs, imported as
`mcp-evals import-runs` does, the SQL models built), a tasks directory holding one real task (its suite and lock
entry beside it, the fixture runs' tasks listed as retired so their rows carry the suite), and an empty drafts area.
The built world is kept as a template under the grader's cache (keyed by a hash of everything it is made from: the
fixtures, the task, the SQL models and the code that indexes them, DuckDB's version), so a start copies it (~50 ms)
instead of importing and indexing again (~3 s of CPU). The server reads its directories from MCP_EVALS_TASKS_DIR,
MCP_EVALS_RESULTS_DIR and MCP_EVALS_DRAFTS_DIR, so nothing a trial does (a draft, a submit) ever reaches the
repository's tasks/ or eval_results/. stdout is the protocol's: the world is built before the server speaks, its
logging on stderr.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[2]
FIXTURE_RUNS = REPO / "tests" / "fixtures" / "legacy_runs"
WORLD_TASK = "v5-01-basic-tool-server"  # the one task the world's catalog holds (mcp-use suite)


MADE_FROM = [FIXTURE_RUNS, REPO / "tasks" / WORLD_TASK, REPO / "dbt_like_sql", REPO / "mcp_evals_pipeline" / "store.py",
             REPO / "mcp_evals_pipeline" / "sql_models.py", REPO / "mcp_evals_pipeline" / "legacy_import.py",
             Path(__file__)]


def _key() -> str:
    digest = hashlib.sha256(duckdb.__version__.encode())
    for source in MADE_FROM:
        for path in sorted([source] if source.is_file() else (p for p in source.rglob("*") if p.is_file())):
            digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _point_at(root: Path) -> dict[str, str]:
    env = {"MCP_EVALS_TASKS_DIR": str(root / "tasks"), "MCP_EVALS_RESULTS_DIR": str(root / "results"),
           "MCP_EVALS_DRAFTS_DIR": str(root / "drafts")}
    os.environ.update(env)
    os.environ.pop("MCP_EVALS_DB", None)
    return env


def build_world(root: Path) -> None:
    """The world's directories under `root`, filled from the fixtures."""
    tasks, results, drafts = root / "tasks", root / "results", root / "drafts"
    for path in (tasks, results, drafts):
        path.mkdir(parents=True)
    _point_at(root)
    # Imported only now: paths are read from the environment when used, and the imports take most of a second.
    from mcp_evals_pipeline.legacy_import import filled_run, find_run_dirs, import_runs, load_run
    from mcp_evals_pipeline.sql_models import materialize_models
    from mcp_evals_pipeline.store import TrialStore

    shutil.copytree(REPO / "tasks" / WORLD_TASK, tasks / WORLD_TASK)
    legacy = sorted({t.task for d in find_run_dirs(FIXTURE_RUNS) for t in filled_run(load_run(d / "run.json")).trials})
    (tasks / "suites.json").write_text(json.dumps({"mcp-use": {
        "title": "mcp-use TypeScript SDK", "sdkPackage": "mcp-use", "registry": "npm", "tasks": [WORLD_TASK],
        "retired": legacy}}, indent=2))
    lock = json.loads((REPO / "tasks" / "prompt-hashes.lock.json").read_text())
    (tasks / "prompt-hashes.lock.json").write_text(json.dumps({WORLD_TASK: lock[WORLD_TASK]}, indent=2) + "\n")
    store = TrialStore(results / "evals.duckdb")
    summary = import_runs(FIXTURE_RUNS, store, results / "runs")
    if summary.errors:
        raise SystemExit(f"the evals-server world did not build: {summary.errors}")
    with store.connect() as con:
        materialize_models(con)
    for lock in results.glob("*.lock"):  # a template holds data only
        lock.unlink()


def fresh_world(cache: Path) -> dict[str, str]:
    """A fresh copy of the world's template (built once per key, by whichever start gets there first) under
    TMPDIR; the environment that points the server at it."""
    template = cache / "evals-server-world" / _key()
    if not template.is_dir():
        template.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=".building-", dir=template.parent))
        try:
            build_world(building)
            building.rename(template)  # atomic: a start never sees half a template
        except OSError:
            if not template.is_dir():
                raise
        finally:
            shutil.rmtree(building, ignore_errors=True)
    root = Path(tempfile.mkdtemp(prefix="evals-world-"))
    shutil.copytree(template, root, dirs_exist_ok=True)
    return _point_at(root)


def main() -> None:
    from mcp_evals_pipeline.paths import cache_dir

    fresh_world(cache_dir())
    # The world lives in the usage world's private scratch (TMPDIR, 0700, removed with it); the grader that
    # run_check and submit_draft call makes its boxes' relay sockets under TMPDIR, bound by uid nobody, who cannot
    # enter that scratch: its temporary files go where a grading's always do.
    os.environ.pop("TMPDIR", None)
    tempfile.tempdir = None
    from mcp_evals_pipeline.serve.server import run_stdio

    run_stdio()


if __name__ == "__main__":
    main()
