"""Tasks exported for other harnesses: JSONL (one task per line, its contract whole), CSV (one row per task, the
contract as a JSON cell) and an Inspect AI dataset (JSONL in Inspect's sample shape: `id`, the prompt as `input`,
the contract's hash and path as `metadata`; `inspect_ai.dataset.json_dataset` reads it as is).

A file is written under eval_results/exports/ (named by format and filters, replaced by the next export of the
same selection), or the content is returned instead.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Literal

from pydantic import Field

from mcp_evals_pipeline.contracts.task_base import ContractModel
from mcp_evals_pipeline.ids import check_id
from mcp_evals_pipeline.paths import results_dir
from mcp_evals_pipeline.serve.task_catalog import repo_relative, select_tasks
from mcp_evals_pipeline.tasks.catalog import Task
from mcp_evals_pipeline.tasks.suites import load_suites, suite_of

ExportFormat = Literal["jsonl", "csv", "inspect"]
Destination = Literal["file", "content"]
EXPORTS = "exports"
_SUFFIX: dict[str, str] = {"jsonl": ".jsonl", "csv": ".csv", "inspect": ".inspect.jsonl"}
CSV_COLUMNS = ("id", "kind", "suite", "title", "runtime", "promptHash", "contractPath", "prompt", "contract")


class ExportResult(ContractModel):
    format: ExportFormat
    count: int = Field(description="How many tasks were exported.")
    path: str | None = Field(default=None, description="The file written (destination file).")
    content: str | None = Field(default=None, description="The export itself (destination content).")


def _row(task: Task, suites: dict) -> dict[str, object]:
    return {"id": task.id, "kind": task.kind, "suite": suite_of(task.id, task.prompt_hash, suites=suites),
            "title": task.contract.title, "runtime": task.contract.effective_runtime,
            "promptHash": task.prompt_hash, "contractPath": repo_relative(task.dir / "task.json"),
            "prompt": task.prompt,
            "contract": task.contract.model_dump(mode="json", by_alias=True, exclude_unset=True)}


def render(tasks: list[Task], fmt: ExportFormat) -> str:
    suites = load_suites()
    rows = [_row(t, suites) for t in tasks]
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if fmt == "inspect":
        return "".join(json.dumps({"id": r["id"], "input": r["prompt"],
                                   "metadata": {"promptHash": r["promptHash"], "contractPath": r["contractPath"],
                                                "kind": r["kind"], "suite": r["suite"]}},
                                  ensure_ascii=False) + "\n" for r in rows)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({**r, "contract": json.dumps(r["contract"], ensure_ascii=False)})
    return buffer.getvalue()


def export_tasks(fmt: ExportFormat, destination: Destination = "file", suite: str | None = None,
                 kind: str | None = None, runtime: str | None = None) -> ExportResult:
    tasks, _unloadable = select_tasks(suite, kind, runtime)  # list_tasks names them; an export has what loads
    text = render(tasks, fmt)
    if destination == "content":
        return ExportResult(format=fmt, count=len(tasks), content=text)
    # The filters name the file (they passed the catalog's checks: a suite that exists, a kind, a runtime).
    name = check_id("-".join(["tasks", *(v for v in (suite, kind, runtime) if v)]) + _SUFFIX[fmt], "export name")
    folder = results_dir() / EXPORTS
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    partial = target.with_name(target.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(target)  # a reader never sees half an export
    return ExportResult(format=fmt, count=len(tasks), path=str(target))
