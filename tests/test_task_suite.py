"""Rules the checked-in tasks must keep (see docs/task-authoring.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mcp_evals_pipeline.paths import prompt_hash_lock
from mcp_evals_pipeline.tasks.catalog import Task, discover_tasks, lock_new_tasks, read_lock

from .conftest import write_task
from .support.prompt_strings import unstated

TASKS, LOAD_ERRORS = discover_tasks()
BUILD = [t for t in TASKS if t.kind == "build"]  # usage tasks: tests/test_usage.py


def test_every_task_loads() -> None:
    assert not LOAD_ERRORS, "\n".join(map(str, LOAD_ERRORS))
    assert {"py-v4-01-basic-tool-server", "py-v4-02-stateful-ticket-queue", "py-v5-03-docs-lookup-server"} <= {
        t.id for t in TASKS
    }


def test_no_task_was_edited_in_place() -> None:
    """A changed prompt or contract is a new task: the lock only ever gains entries."""
    lock = read_lock()
    for task in TASKS:
        assert task.id in lock, f"{task.id} is not locked: run `mcp-evals lock-tasks`"
        assert lock[task.id] == task.prompt_hash, (
            f"{task.id} was edited in place (lock {lock[task.id]}, now {task.prompt_hash}); add a new task instead"
        )


def test_lock_never_rewrites_an_entry(tmp_path: Path, minimal_contract: dict) -> None:
    from mcp_evals_pipeline.tasks.catalog import load_task

    task_dir = write_task(tmp_path, "t1", minimal_contract)
    lock = tmp_path / "lock.json"
    assert lock_new_tasks([load_task(task_dir)], lock) == (["t1"], [])
    original = json.loads(lock.read_text())["t1"]
    (task_dir / "prompt.md").write_text("edited\n")
    assert lock_new_tasks([load_task(task_dir)], lock) == ([], ["t1"])
    assert json.loads(lock.read_text())["t1"] == original


def _expected_strings(task: Task) -> list[str]:
    c = task.contract
    reads = list(c.resource_reads) + list(c.post_call_resource_reads)
    for call in c.calls:
        reads += list(call.reads_before) + list(call.reads_after)
    expectations = [e for call in c.calls for e in call.expect] + [e for r in reads for e in r.expect]
    strings = [str(e.value) for e in expectations if e.type in ("contains", "not-contains")]
    return strings + list(c.entry_candidates)


@pytest.mark.parametrize("task", BUILD, ids=lambda t: t.id)
def test_prompt_states_every_string_the_contract_checks(task: Task) -> None:
    """v2-09 of the earlier harness failed 59 of 61 trials on a 'decline' the prompt never asked for."""
    missing = unstated(_expected_strings(task), task.prompt)
    assert not missing, f"{task.id}: prompt.md never states {missing}"


@pytest.mark.parametrize("task", BUILD, ids=lambda t: t.id)
def test_prompt_states_tool_names_and_required_params(task: Task) -> None:
    for tool in task.contract.expected_tools:
        assert re.search(rf"\b{re.escape(tool.name)}\b", task.prompt), f"tool {tool.name} not in the prompt"
        for prop in tool.required_props:
            assert re.search(rf"\b{re.escape(prop)}\b", task.prompt), f"parameter {prop} not in the prompt"


@pytest.mark.parametrize("task", BUILD, ids=lambda t: t.id)
def test_each_task_has_negatives_at_three_stages(task: Task) -> None:
    codes = {s.expected_failure_code for s in task.solutions if s.kind == "negative"}
    # A source-imports task has two stages (typecheck, imports): a negative at each is all there can be.
    wanted = 2 if task.contract.deterministic_readiness is not None else 3
    assert len(codes) >= wanted, f"{task.id}: negatives cover only {codes}"


def test_some_task_ships_a_second_legitimate_solution() -> None:
    assert any(s.kind == "alternate" for t in TASKS for s in t.solutions)


def test_lock_file_is_sorted_json() -> None:
    raw = prompt_hash_lock().read_text()
    assert raw == json.dumps(dict(sorted(json.loads(raw).items())), indent=2) + "\n"
