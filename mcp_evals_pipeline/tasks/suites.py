"""Suites: named sets of tasks (`tasks/suites.json`), each for one SDK under test.

A suite is what a batch, a scorecard section and a trend series are about: `mcp-use` is the spec's monitor of
the mcp-use TypeScript SDK (its `baseline` the nine tasks of the Mon/Wed/Fri batch), `mcp-python` the official
Python SDK. Every task belongs to exactly one suite. `retired` lists the earlier versions of the suite's tasks
(ids no task directory carries any more, e.g. the imported runs' `v2-*`): their rows stay in the store and in the
suite's trend lines, marked at the task-set boundary where the versions changed. A retired entry
`<id>@<promptHash>` claims only the rows of that prompt: two tasks that once shared an id (our first Python
`v2-01-basic-tool-server` and the imported mcp-use task of that name) go to their own suites.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Literal

from filelock import FileLock
from pydantic import Field, ValidationError, model_validator

from mcp_evals_pipeline.contracts.task_base import ContractModel
from mcp_evals_pipeline.did_you_mean import suggestion
from mcp_evals_pipeline.paths import cache_dir, tasks_dir

SUITES_FILE = "suites.json"


class Suite(ContractModel):
    title: str
    # The SDK under test: its package name and the registry its releases come from.
    sdk_package: str
    registry: Literal["npm", "pypi"]
    tasks: list[str] = Field(min_length=1)
    # The tasks of the scheduled baseline batch (default: all of them).
    baseline: list[str] | None = None
    # The build tasks of the fast tier (`eval --tier pr`: what a pull request and `make run` grade); a usage case
    # carries its tier in its task.json.
    pr: list[str] = Field(default_factory=list)
    retired: list[str] = Field(default_factory=list)
    # A usage suite's docs pack (a Markdown file, or a folder of them, relative to the repository): what the
    # `docs` condition gives the agent besides the server's tools.
    docs_pack: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Suite:
        if self.docs_pack is not None and (self.docs_pack.startswith("/") or ".." in self.docs_pack.split("/")):
            raise ValueError(f"docsPack {self.docs_pack!r} must be relative to the repository, inside it")
        if len(set(self.tasks)) != len(self.tasks):
            raise ValueError("tasks lists an id twice")
        for field, listed in (("baseline", self.baseline or []), ("pr", self.pr)):
            extra = [t for t in listed if t not in self.tasks]
            if extra:
                raise ValueError(f"{field} names {', '.join(extra)}, which are not in tasks")
        reused = sorted(set(self.retired) & set(self.tasks))
        if reused:
            raise ValueError(f"{', '.join(reused)} is both a task and retired")
        return self

    @property
    def baseline_tasks(self) -> list[str]:
        return list(self.baseline if self.baseline is not None else self.tasks)


class SuiteError(ValueError):
    pass


def load_suites(root: Path | None = None, name: str = SUITES_FILE) -> dict[str, Suite]:
    """Every suite of tasks/suites.json (a file that does not exist: no suites)."""
    path = (root or tasks_dir()) / name
    if not path.exists():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        suites = {name: Suite.model_validate(spec) for name, spec in raw.items()}
    except (json.JSONDecodeError, ValidationError) as exc:
        raise SuiteError(f"{path}: {exc}") from exc
    owners: dict[str, str] = {}
    for name, suite in suites.items():
        for task_id in (*suite.tasks, *suite.retired):
            if "@" in task_id and not task_id.split("@", 1)[1]:
                raise SuiteError(f"{path}: retired entry {task_id!r} has no promptHash after '@'")
            if task_id in owners:
                raise SuiteError(f"{path}: task {task_id!r} is in suites {owners[task_id]!r} and {name!r}")
            owners[task_id] = name
    return suites


def unknown_suite(name: str, suites: dict[str, Suite]) -> str:
    return f"no such suite {name!r}{suggestion(name, suites)} (known: {', '.join(sorted(suites)) or 'none'})"


def add_task(suite_name: str, task_id: str, root: Path | None = None) -> None:
    """Append a new task to a suite's `tasks` (the authoring gate's landing): the file re-validated before it is
    replaced, atomically, under a lock, so two landings never lose one another's id."""
    path = (root or tasks_dir()) / SUITES_FILE
    locks = cache_dir() / "locks"
    locks.mkdir(parents=True, exist_ok=True)  # not beside the file: tasks/ holds only what is committed
    with FileLock(str(locks / f"suites-{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]}.lock")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        if suite_name not in raw:
            raise SuiteError(unknown_suite(suite_name, load_suites(root)))
        if task_id not in raw[suite_name]["tasks"]:
            raw[suite_name]["tasks"].append(task_id)
        text = json.dumps(raw, indent=2) + "\n"
        staged = path.with_name(f".{SUITES_FILE}.{os.getpid()}")
        staged.write_text(text, encoding="utf-8")
        try:
            load_suites(staged.parent, staged.name)
            os.replace(staged, path)
        finally:
            staged.unlink(missing_ok=True)


def get_suite(name: str, root: Path | None = None) -> Suite:
    suites = load_suites(root)
    if name not in suites:
        raise SuiteError(unknown_suite(name, suites))
    return suites[name]


def suite_of(task_id: str, prompt_hash: str | None = None, root: Path | None = None,
             suites: dict[str, Suite] | None = None) -> str | None:
    """The suite a trial of this task (and prompt) belongs to: a retired `<id>@<hash>` entry first, then a task
    or retired id; None when it is in none."""
    suites = load_suites(root) if suites is None else suites
    if prompt_hash:
        for name, suite in suites.items():
            if f"{task_id}@{prompt_hash}" in suite.retired:
                return name
    for name, suite in suites.items():
        if task_id in suite.tasks or task_id in suite.retired:
            return name
    return None


def expand_selection(task_ids: list[str] | tuple[str, ...], suite_names: list[str] | tuple[str, ...],
                     root: Path | None = None) -> list[str]:
    """The task ids named, then every task of each named suite (in suite order), once each."""
    selected = list(task_ids)
    if suite_names:
        suites = load_suites(root)
        for name in suite_names:
            if name not in suites:
                raise SuiteError(unknown_suite(name, suites))
            selected += suites[name].tasks
    return list(dict.fromkeys(selected))
