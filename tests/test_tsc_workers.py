"""The long-lived TypeScript compilers (grader/tsc_workers.py): the one-shot tsc's verdicts, faster, and nothing
of one job reaches the next."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.grader import tsc_workers
from mcp_evals_pipeline.grader.runtimes import runtime_for
from mcp_evals_pipeline.grader.scratch import scratch_base, workdir_for
from mcp_evals_pipeline.node_toolchain import ensure_toolchain

from .conftest import TASKS, write_tree

pytestmark = pytest.mark.usefixtures("no_tsc_cache")  # these test the compilers, not the cache

TOOL_TASK = TASKS / "v5-01-basic-tool-server"
RUNTIME = runtime_for("node")
NO_DEPENDENCIES = {"package.json": '{"name": "fixture", "private": true, "type": "module"}\n'}
STRICT_TSCONFIG = ('{"compilerOptions": {"strict": true, "noEmit": true, "module": "ESNext", '
                   '"moduleResolution": "Bundler", "target": "ES2022", "skipLibCheck": true}, "include": ["src"]}\n')


def _typecheck(workspace: Path) -> tuple[list[str], str]:
    with workdir_for(workspace) as work:
        problems = RUNTIME.typecheck(work, RUNTIME.install(work))
        return [p.replace(str(work.copy), "<copy>") for p in problems], work.isolation["typecheck"]


def _variant(tmp_path: Path, name: str, solution: Path, files: dict[str, str]) -> Path:
    """`solution` (so the same shared node_modules) with `files` written over it."""
    workspace = Path(shutil.copytree(solution, tmp_path / name))
    return write_tree(workspace, files)


@pytest.fixture(autouse=True)
def _fresh_pool() -> None:
    tsc_workers.POOL.close_all()


@pytest.mark.long
def test_a_worker_says_what_the_one_shot_tsc_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    strict = _variant(tmp_path, "strict", TOOL_TASK / "golden", {
        "tsconfig.json": STRICT_TSCONFIG, "src/twice.ts": "export function twice(x) {\n  return x * 2;\n}\n"})
    # A tsconfig that reaches out of the workspace finds what a one-shot tsc finds there (nothing of the worker's).
    reaching = _variant(tmp_path, "reaching", TOOL_TASK / "golden", {"tsconfig.json": (
        '{"compilerOptions": {"allowJs": true, "checkJs": true, "noEmit": true, "strict": true, "module": "ESNext", '
        '"moduleResolution": "Bundler", "target": "ES2022", "skipLibCheck": true}, "include": ["src", "../**/*"]}\n')})
    cases = [TOOL_TASK / "golden", TOOL_TASK / "negatives" / "type-error", strict, reaching]
    monkeypatch.setenv(tsc_workers.WORKERS_ENV, "0")
    one_shot = [_typecheck(case) for case in cases]
    monkeypatch.delenv(tsc_workers.WORKERS_ENV)
    on_workers = [_typecheck(case) for case in cases] + [_typecheck(case) for case in cases]
    assert [problems for problems, _ in on_workers] == [problems for problems, _ in one_shot] * 2
    assert one_shot[0][0] == [] and one_shot[1][0][0].startswith("src/server.ts:16: TS2322")
    assert any(p.startswith("src/twice.ts:1: TS7006") for p in one_shot[2][0])
    assert all("long-lived tsc" in where and "net=none" in where for _, where in on_workers)
    assert not any("long-lived" in where for _, where in one_shot)


def test_a_job_sees_no_file_and_no_state_of_the_job_before(tmp_path: Path) -> None:
    """Jobs on one worker share a path: the one before's files are gone and its versions are not reused."""
    leaky = _variant(tmp_path, "leaky", TOOL_TASK / "golden", {"src/leak.ts": "export const secret = 42;\n"})
    probe = _variant(tmp_path, "probe", TOOL_TASK / "golden", {
        "src/probe.ts": 'import { secret } from "./leak.js";\nexport const seen: number = secret;\n'})
    assert _typecheck(leaky)[0] == []
    problems, where = _typecheck(probe)
    assert "long-lived tsc" in where
    assert len(problems) == 1 and problems[0].startswith("src/probe.ts:1: TS2307"), problems
    # The same path with new content: a clean file after a broken one, then the broken one again.
    assert _typecheck(TOOL_TASK / "negatives" / "type-error")[0][0].startswith("src/server.ts:16: TS2322")
    assert _typecheck(TOOL_TASK / "golden")[0] == []
    assert _typecheck(TOOL_TASK / "negatives" / "type-error")[0][0].startswith("src/server.ts:16: TS2322")


def test_a_dead_worker_costs_speed_not_the_verdict(tmp_path: Path) -> None:
    assert _typecheck(TOOL_TASK / "golden")[0] == []
    (worker,) = tsc_workers.POOL._idle
    procs.kill_tree(worker.proc)
    problems, where = _typecheck(TOOL_TASK / "negatives" / "type-error")
    assert problems[0].startswith("src/server.ts:16: TS2322")
    assert "long-lived" not in where  # answered by the one-shot tsc
    assert worker not in tsc_workers.POOL._idle  # and the dead one is not kept
    problems, where = _typecheck(TOOL_TASK / "golden")
    assert problems == [] and "long-lived tsc" in where  # a new worker took over


def _forged_build_info(tmp_path: Path) -> Path:
    """A workspace with a type error and an `incremental` tsconfig whose .tsbuildinfo says it has none: made by
    running tsc where the grader's copies live (same depth, so its relative paths hold there too) and deleting
    the recorded diagnostics, as an agent that knows the layout could."""
    files = {**NO_DEPENDENCIES, "src/a.ts": 'export const n: number = "one";\n',
             "tsconfig.json": '{"compilerOptions": {"incremental": true, "strict": true, "types": []}, '
                              '"include": ["src"]}\n'}
    forge = scratch_base() / f"forge-{uuid.uuid4().hex}" / "workspace"
    try:
        write_tree(forge, files)
        toolchain = ensure_toolchain()
        done = subprocess.run([str(toolchain.node), str(toolchain.tsc), "--noEmit", "-p", "tsconfig.json"],
                              cwd=forge, capture_output=True, text=True, check=False)
        assert "TS2322" in done.stdout
        info = json.loads((forge / "tsconfig.tsbuildinfo").read_text())
        assert info.pop("semanticDiagnosticsPerFile")
        write_tree(tmp_path / "forged", {**files, "tsconfig.tsbuildinfo": json.dumps(info)})
        (forge / "tsconfig.tsbuildinfo").write_text(json.dumps(info))
        again = subprocess.run([str(toolchain.node), str(toolchain.tsc), "--noEmit", "-p", "tsconfig.json"],
                               cwd=forge, capture_output=True, text=True, check=False)
        assert again.returncode == 0 and "TS2322" not in again.stdout  # the forgery fools a plain tsc
    finally:
        shutil.rmtree(forge.parent, ignore_errors=True)
    return tmp_path / "forged"


@pytest.mark.parametrize("workers", ["0", "4"])
def test_a_forged_build_info_does_not_hide_a_type_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        workers: str) -> None:
    forged = _forged_build_info(tmp_path)
    monkeypatch.setenv(tsc_workers.WORKERS_ENV, workers)
    problems, where = _typecheck(forged)
    assert ("long-lived tsc" in where) == (workers != "0")
    assert [p.split(" ")[:2] for p in problems] == [["src/a.ts:1:", "TS2322"]]
