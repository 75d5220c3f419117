"""The gate before a batch re-proves only what changed: a task's passing proof holds while its files, the grader
version, the harness's code, the grading settings and the day are unchanged; a failing proof is never kept."""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
from pathlib import Path

import anyio
import pytest

from mcp_evals_pipeline.tasks.catalog import load_task
from mcp_evals_pipeline.verify import proof_key, still_proven, verify_gate

from .conftest import TASKS
from .support.instances import batch_instance

TASK = "py-v4-01-basic-tool-server"


def _task(root: Path):  # type: ignore[no-untyped-def]
    """A copy of the task, with its golden and one negative (two gradings keep the test short)."""
    shutil.copytree(TASKS / TASK, root / TASK)
    # A file of its own: the copy's key is its own, so no proof an earlier test or run left in the shared cache
    # (the same files on the same day) is reused.
    (root / TASK / "COPY.md").write_text(f"{root}\n")
    task = load_task(root / TASK)
    negative = next(s for s in task.solutions if s.kind == "negative")
    return dataclasses.replace(task, solutions=(task.golden, negative))


def test_a_proof_holds_until_something_it_rests_on_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = _task(tmp_path)
    first = anyio.run(lambda: verify_gate([task]))
    assert not first.failed and len(first.results) == 2 and first.reused == {}
    key = proof_key(task)
    second = anyio.run(lambda: verify_gate([task]))
    assert second.results == [] and second.reused == {TASK: key}  # nothing graded again

    # Each thing the proof rests on changes the key: the task's files, the grading settings, the day.
    negative = task.solutions[1].path
    (negative / "NOTES.md").write_text("a changed solution file\n")
    assert proof_key(task) != key and not still_proven(task, proof_key(task))
    (negative / "NOTES.md").unlink()
    assert proof_key(task) == key
    monkeypatch.setenv("MCP_EVALS_GRADER_BOX", "docker")
    assert proof_key(task) != key
    monkeypatch.delenv("MCP_EVALS_GRADER_BOX")
    assert proof_key(task, today=dt.date(2020, 1, 1)) != key


def test_two_copies_of_a_task_keep_their_own_proofs(tmp_path: Path) -> None:
    """Another tasks dir's copy of a task (or another checkout's code) has its own key and its own proof file:
    proving one never costs the other its proof (two batches side by side once proved again and again)."""
    from mcp_evals_pipeline.verify import remember_proof

    first, second = _task(tmp_path / "a"), _task(tmp_path / "b")
    (second.dir / "NOTES.md").write_text("a copy that differs\n")
    ok = anyio.run(lambda: verify_gate([first])).results
    assert ok and all(r.ok for r in ok)
    remember_proof(second, proof_key(second), ok)
    assert proof_key(first) != proof_key(second)
    assert still_proven(first, proof_key(first)) and still_proven(second, proof_key(second))
    assert anyio.run(lambda: verify_gate([first, second])).results == []  # neither proven again


def test_a_failing_proof_is_never_kept(tmp_path: Path) -> None:
    task = _task(tmp_path)
    (task.golden.path / "server.py").write_text("def broken(:\n")
    broken = dataclasses.replace(task, solutions=(task.golden,))
    for _ in range(2):  # proven again each time: a failure is never remembered
        gate = anyio.run(lambda: verify_gate([broken]))
        assert gate.reused == {} and [r.got for r in gate.failed] == ["contract.typecheck"]


@pytest.mark.long
def test_a_batch_whose_proofs_hold_runs_its_trials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate of `eval`: the first batch proves the task, the second reuses the proof, says so and still runs
    every trial (make run's second run once ran none: the gate's message clobbered the batch's trial keys)."""

    from mcp_evals_pipeline.defs.resources import EvalStore
    from mcp_evals_pipeline.pipeline import BatchRequest, run_batch

    task_dir = tmp_path / "tasks" / TASK
    shutil.copytree(TASKS / TASK, task_dir)
    shutil.rmtree(task_dir / "alternates")
    for negative in (task_dir / "negatives").iterdir():
        if negative.name not in ("coerces-digit-strings", "wrong-sum"):
            shutil.rmtree(negative)
    (task_dir / "COPY.md").write_text(f"{tmp_path}\n")  # its own key: no earlier run's proof is reused
    monkeypatch.setenv("MCP_EVALS_TASKS_DIR", str(tmp_path / "tasks"))
    store = EvalStore(database=str(tmp_path / "evals.duckdb"), runs_root=str(tmp_path / "runs"))
    said: list[str] = []
    with batch_instance() as instance:
        for _ in range(2):
            outcome = run_batch(BatchRequest(agent="replay", task_ids=[TASK], trials=2, batch_date="2026-11-30"),
                                instance, said.append, store)
            assert (outcome.failed_runs, outcome.trial_runs) == (0, 2), said
    assert sum("proved 1 task(s) before any agent runs (what recorded sessions rest on)" in line for line in said) == 1
    assert sum("1 of 1 task(s) unchanged since proven" in line for line in said) == 1
    assert sum(f"{TASK}--noskill+blank--t2: pass" in line for line in said) == 2
    # Replay spends nothing: its gate graded what its sessions rest on (the golden), one progress line each, with
    # the count and the time elapsed.
    assert any("plays recorded sessions" in line and "1 solution(s)" in line for line in said), said
    progress = [line for line in said if line.strip().startswith("[") and "elapsed)" in line]
    assert [line.split("]")[0].strip() for line in progress] == ["[1/1"], progress
    assert "golden" in progress[0]
    # A replay proof never stands in for a full one: a live agent's gate grades every solution, and its full
    # proof then holds for the replay gate too.
    task = load_task(task_dir)
    full = anyio.run(lambda: verify_gate([task], scope="full"))
    assert full.reused == {} and len(full.results) == 3 and not full.failed
    assert still_proven(task, proof_key(task), "full") and still_proven(task, proof_key(task), "replay")
    assert anyio.run(lambda: verify_gate([task], scope="replay")).results == []


def test_the_replay_gate_proves_what_recorded_sessions_rest_on() -> None:
    """Each build task's golden; each usage case's oracle and the sessions replay plays, never the blind round's
    (which prove the marker, and which replay never plays)."""
    from mcp_evals_pipeline.agents.replay import task_sessions
    from mcp_evals_pipeline.verify import replay_selection

    build, usage = load_task(TASKS / TASK), load_task(TASKS / "usage-ops-v3-12-set-and-restart")
    picked_build, picked_usage = replay_selection([build, usage])
    assert [s.kind for s in picked_build.solutions] == ["golden"]
    assert any(s.blind for s in usage.solutions)
    assert {s.kind for s in picked_usage.solutions} == {"oracle", "session"}
    assert not any(s.blind for s in picked_usage.solutions)
    played = {p.name for p in task_sessions(usage.id, TASKS, "*.json")}
    assert {s.path.name for s in picked_usage.solutions} == played  # the oracle's pass among them
