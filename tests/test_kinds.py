"""Task kinds (mcp_evals_pipeline/kinds): every task has a registered kind, and a task.json naming another kind is
refused naming the file and the field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mcp_evals_pipeline.kinds import KINDS, kind_of
from mcp_evals_pipeline.tasks.catalog import TaskLoadError, discover_tasks, load_task

from .conftest import TASKS


def test_every_task_has_a_registered_kind() -> None:
    tasks, errors = discover_tasks()
    assert tasks and not errors
    assert {task.kind for task in tasks} <= set(KINDS)
    assert all(kind_of(task.kind).name == task.kind for task in tasks)


def test_an_unknown_kind_names_the_file_and_the_field(tmp_path: Path) -> None:
    task_dir = Path(shutil.copytree(TASKS / "v5-01-basic-tool-server", tmp_path / "v5-01-basic-tool-server"))
    contract = json.loads((task_dir / "task.json").read_text())
    (task_dir / "task.json").write_text(json.dumps({**contract, "kind": "teleport"}))
    with pytest.raises(TaskLoadError) as refused:
        load_task(task_dir)
    assert "task.json" in str(refused.value) and "kind" in str(refused.value)
    with pytest.raises(ValueError, match="unknown task kind 'teleport'"):
        kind_of("teleport")
