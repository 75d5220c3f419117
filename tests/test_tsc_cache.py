"""Remembered typecheck results (grader/tsc_cache.py): the same inputs answer without a compiler, and anything tsc
could read differently is asked again."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from mcp_evals_pipeline.grader import tsc_cache
from mcp_evals_pipeline.grader.node_runtime import CACHED_TYPECHECK
from mcp_evals_pipeline.grader.runtimes import runtime_for
from mcp_evals_pipeline.grader.scratch import workdir_for

from .conftest import TASKS, write_tree

RUNTIME = runtime_for("node")
GOLDEN = TASKS / "v5-01-basic-tool-server" / "golden"


def _typecheck(workspace: Path) -> tuple[list[str], str]:
    with workdir_for(workspace) as work:
        problems = RUNTIME.typecheck(work, RUNTIME.install(work))
        return problems, work.isolation["typecheck"]


def test_the_same_workspace_is_answered_from_memory_and_any_change_is_checked_again(tmp_path: Path) -> None:
    # Files of its own make this workspace's keys new, whatever earlier gradings remembered today.
    unique = f"// {uuid.uuid4()}\n"
    workspace = write_tree(Path(shutil.copytree(GOLDEN, tmp_path / "ws")), {"src/marker.ts": unique})
    first, first_box = _typecheck(workspace)
    assert first == [] and not first_box.startswith(CACHED_TYPECHECK)
    again, again_box = _typecheck(workspace)
    assert again == [] and again_box == CACHED_TYPECHECK + first_box

    # One changed file: a compiler runs and finds the error the remembered answer did not have.
    write_tree(workspace, {"src/marker.ts": 'export const n: number = "one";\n' + unique})
    broken, broken_box = _typecheck(workspace)
    assert not broken_box.startswith(CACHED_TYPECHECK)
    assert [p for p in broken if p.startswith("src/marker.ts:1: TS2322")], broken
    # The same bytes under another name are a new key too.
    write_tree(workspace, {"src/marker.ts": "export const n = 1;\n" + unique})
    _typecheck(workspace)
    (workspace / "src" / "marker.ts").rename(workspace / "src" / "renamed.ts")
    assert not _typecheck(workspace)[1].startswith(CACHED_TYPECHECK)


def test_the_key_covers_the_node_modules_set_and_refuses_what_it_cannot_key(tmp_path: Path) -> None:
    product = tmp_path / "set-a"
    (product / "node_modules").mkdir(parents=True)
    copy = write_tree(tmp_path / "copy", {"src/a.ts": "export const a = 1;\n"})
    (copy / "node_modules").mkdir()
    key = tsc_cache.key_for(copy, "toolchain", product / "node_modules")
    assert key is not None and key == tsc_cache.key_for(copy, "toolchain", product / "node_modules")
    assert key != tsc_cache.key_for(copy, "own 5.9.3", product / "node_modules")
    # The same set path rebuilt (a new directory under the same content key) never inherits the old set's answers.
    shutil.rmtree(product)
    (product / "node_modules").mkdir(parents=True)
    assert tsc_cache.key_for(copy, "toolchain", product / "node_modules") not in (None, key)
    # Files in the mount point of the set (the workspace's own node_modules): not keyed, so not remembered.
    write_tree(copy, {"node_modules/zod/index.d.ts": "export {};\n"})
    assert tsc_cache.key_for(copy, "toolchain", product / "node_modules") is None
    shutil.rmtree(copy / "node_modules")
    (copy / "node_modules").mkdir()
    (copy / "link.ts").symlink_to("src/a.ts")
    assert tsc_cache.key_for(copy, "toolchain", product / "node_modules") not in (None, key)


def test_only_complete_answers_are_kept_and_the_switch_turns_it_off(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.setenv("MCP_EVALS_CACHE_DIR", str(tmp_path / "cache"))
    key = uuid.uuid4().hex
    tsc_cache.remember(key, ["tsc did not finish within 120s"], "bwrap box", complete=False)
    assert tsc_cache.lookup(key) is None
    tsc_cache.remember(key, ["src/a.ts:1: TS2322 no"], "bwrap box", complete=True)
    assert tsc_cache.lookup(key) == (["src/a.ts:1: TS2322 no"], "bwrap box")
    # A damaged entry is no answer (the compiler runs), never a crash or a wrong verdict.
    entry = next((tmp_path / "cache" / "tsc-results").glob(f"*/{key}.json"))
    entry.write_text('{"problems": "not a list", "box": 1}')
    assert tsc_cache.lookup(key) is None
    monkeypatch.setenv(tsc_cache.CACHE_ENV, "0")
    copy = write_tree(tmp_path / "copy", {"a.ts": "export {};\n"})
    assert tsc_cache.key_for(copy, "toolchain", tmp_path) is None
