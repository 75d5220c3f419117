"""A fresh machine without bubblewrap: `make run`'s first commands stop before any work, with one line naming the
missing piece and the two ways out; and the verify gate names a cause every failing solution shares once."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.grade import TrialGrade
from mcp_evals_pipeline.pipeline import GATE_LINES, gate_failure
from mcp_evals_pipeline.tasks.catalog import get_task
from mcp_evals_pipeline.verify import VerifyResult

from .conftest import REPO
from .support.cli_env import cli_env

TASK = "py-v4-01-basic-tool-server"


def _path_without(tmp_path: Path, hidden: str) -> str:
    """A PATH holding every command of this machine's PATH but `hidden` (as a newcomer's machine lacks it)."""
    shadow = tmp_path / "bin"
    shadow.mkdir()
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        folder = Path(entry)
        if not folder.is_dir():
            continue
        for tool in folder.iterdir():
            target = shadow / tool.name
            if tool.name != hidden and not target.exists() and os.access(tool, os.X_OK):
                target.symlink_to(tool)
    return str(shadow)


def _mcp_evals(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_evals_pipeline.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, check=False, timeout=300)


@pytest.fixture
def env(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = cli_env(tmp_path, tmp_path_factory.getbasetemp() / "pycache")
    for name in ("MCP_EVALS_GRADER_BOX", "MCP_EVALS_UNSAFE_UNBOXED_GRADING"):
        env.pop(name, None)
    return env


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="the negative needs bubblewrap installed (CI installs it)")
def test_without_bubblewrap_eval_stops_before_any_work_naming_the_cause(tmp_path: Path, env: dict[str, str]) -> None:
    hidden = {**env, "PATH": _path_without(tmp_path, "bwrap")}
    for args in (("preflight",), ("eval", "--agent", "replay", "--task", TASK)):
        done = _mcp_evals(tmp_path, hidden, *args)
        assert done.returncode == 2, done
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, done.stderr  # one line, however many tasks the batch holds
        assert "bubblewrap is not installed" in lines[0], lines
        assert "scripts/install_boxes.sh" in lines[0] and "MCP_EVALS_GRADER_BOX=docker" in lines[0], lines
    # Before any work: no instance, no results, no database.
    assert not (tmp_path / "dh").exists() and not (tmp_path / "results").exists()
    # The negative: the same machine with bubblewrap passes the preflight.
    visible = _mcp_evals(tmp_path, env, "preflight")
    assert visible.returncode == 0 and "boxed (bwrap)" in visible.stdout, visible


def test_the_boxes_turned_off_are_refused_unless_the_loud_opt_out(tmp_path: Path, env: dict[str, str]) -> None:
    off = _mcp_evals(tmp_path, {**env, "MCP_EVALS_GRADER_BOX": "0"}, "preflight")
    assert off.returncode == 2 and "MCP_EVALS_GRADER_BOX=0" in off.stderr, off
    loud = _mcp_evals(tmp_path, {**env, "MCP_EVALS_GRADER_BOX": "0", "MCP_EVALS_UNSAFE_UNBOXED_GRADING": "1"},
                      "preflight")
    assert loud.returncode == 0 and "UNBOXED" in loud.stderr, loud


def _results(codes_and_errors: list[tuple[str | None, str | None]]) -> list[VerifyResult]:
    task = get_task(TASK)
    golden = task.golden
    return [VerifyResult(task_id=f"{TASK}-{i}", solution=golden, seconds=0.1,
                         grade=TrialGrade(contract_pass=False, checks=[], failure_code=code, error=error))
            for i, (code, error) in enumerate(codes_and_errors)]


def test_a_cause_every_failure_shares_is_said_once_with_its_count() -> None:
    why = "agent-written code does not run without a box, and none can be made here: bubblewrap is not installed"
    shared = gate_failure(_results([("infra.sandbox", why)] * 460))
    assert shared == f"all 460 solution(s) of 460 task(s) got infra.sandbox: {why}"
    # Two causes: each failure named with its reason, the first GATE_LINES of them, then how many more.
    mixed = gate_failure(_results([("infra.sandbox", why)] * 30 + [("infra.install", "the registry is down")]))
    assert mixed.count("expected pass, got") == GATE_LINES and "and 21 more" in mixed
    assert "bubblewrap is not installed" in mixed and len(mixed) < 4000
