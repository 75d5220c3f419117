"""The long-lived TypeScript compilers (grader/tsc_workers.py): the one-shot tsc's verdicts, faster, and nothing
of one job reaches the next."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.grader import tsc_workers
from mcp_evals_pipeline.grader.runtimes import runtime_for
from mcp_evals_pipeline.grader.scratch import workdir_for

from .conftest import TASKS, write_tree

TOOL_TASK = TASKS / "v4-01-basic-tool-server"
RUNTIME = runtime_for("node")
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


def test_a_worker_says_what_the_one_shot_tsc_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    strict = _variant(tmp_path, "strict", TOOL_TASK / "golden", {
        "tsconfig.json": STRICT_TSCONFIG, "src/twice.ts": "export function twice(x) {\n  return x * 2;\n}\n"})
    cases = [TOOL_TASK / "golden", TOOL_TASK / "negatives" / "type-error", strict]
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
