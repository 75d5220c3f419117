"""The read-only tools and resources of `mcp-evals serve`: the task catalog (describe_task_schema, list_tasks,
get_task, export_tasks) and the results (query_results, get_scorecard, get_trends), plus the resources
`task://{id}` and `run://{runId}/report`.

Each tool is a thin call into a library module (serve/task_catalog.py, serve/export.py, serve/results_query.py,
serve/scorecards.py); the SDK derives every input schema from the typed parameters and every output schema from
the pydantic model returned, so the contracts' own models are the schema and nothing is written twice. A refusal
(an unknown id, a query that is not one SELECT, no store yet) is a tool error whose text says why.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Annotated, Any, ParamSpec, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from mcp_evals_pipeline.serve import export, results_query, scorecards, task_catalog

P = ParamSpec("P")
R = TypeVar("R")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# export_tasks may write one file under eval_results/exports/ (replacing the last export of the same selection).
WRITES_EXPORT = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)

Suite = Annotated[str | None, Field(description="Only this suite's tasks (tasks/suites.json).")]
Kind = Annotated[task_catalog.KindName | None, Field(description="Only tasks of this kind.")]
Runtime = Annotated[task_catalog.Runtime | None, Field(description="Only tasks of this runtime.")]
RunId = Annotated[str | None, Field(description="A run id (`mcp-evals runs` lists them).")]
BatchId = Annotated[str | None, Field(description="A batch id: the scorecards of each of its runs.")]
MaxRows = Annotated[int, Field(ge=1, le=results_query.MAX_MAX_ROWS,
                               description="The row cap: more rows than this and the answer says truncated.")]

_REFUSALS = (task_catalog.TaskLookupError, results_query.QueryRefused, ValueError)


def _refusing(fn: Callable[P, R]) -> Callable[P, R]:
    """A refusal of the library (an unknown id, a refused query) becomes a tool error carrying its reason."""
    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except _REFUSALS as exc:
            raise ToolError(str(exc)) from None
    return wrapper


def describe_task_schema() -> task_catalog.TaskSchema:
    """What a task is: its kinds, every field of each kind's contract (task.json) with its type and meaning, a
    minimal valid example per kind taken from a real task, the build grader's ladder of stages with the failure
    code each gives, every failure code, and the authoring rules a committable task keeps."""
    return task_catalog.describe_task_schema()


def list_tasks(suite: Suite = None, kind: Kind = None, runtime: Runtime = None) -> task_catalog.TaskList:
    """The tasks (id, kind, title, suite, runtime, promptHash, contract path), optionally filtered."""
    return task_catalog.list_tasks(suite, kind, runtime)


def get_task(task_id: Annotated[str, Field(description="A task id (list_tasks).")]) -> task_catalog.TaskView:
    """One task: its prompt (what the agent reads) and its contract (task.json, validated)."""
    return task_catalog.get_task(task_id)


def export_tasks(format: Annotated[export.ExportFormat, Field(description=(
                     "jsonl: one task per line with its contract; csv: one row per task, the contract a JSON cell; "
                     "inspect: an Inspect AI dataset (id, the prompt as input, promptHash and contractPath as "
                     "metadata), read by inspect_ai.dataset.json_dataset"))],
                 destination: Annotated[export.Destination, Field(description=(
                     "file: written under eval_results/exports/, its path returned; content: returned"))] = "file",
                 suite: Suite = None, kind: Kind = None, runtime: Runtime = None) -> export.ExportResult:
    """Export the tasks (optionally filtered) as JSONL, CSV or an Inspect AI dataset."""
    return export.export_tasks(format, destination, suite, kind, runtime)


def query_results(sql: Annotated[str, Field(description=(
                      "One SELECT (or WITH ... SELECT) over the results store: the `trials` view (current "
                      "attempts), `trial_attempts`, `runs` and the SQL model tables (dbt_like_sql/: pass_rate, "
                      "trends, failure_breakdown, usage_rates, ...)."))],
                  max_rows: MaxRows = results_query.DEFAULT_MAX_ROWS,
                  timeout_seconds: Annotated[float, Field(gt=0, le=results_query.MAX_TIMEOUT_S, description=(
                      "The query is stopped after this many seconds."))] = results_query.DEFAULT_TIMEOUT_S,
                  ) -> results_query.QueryResult:
    """Read-only SQL over the results. Anything but one SELECT is refused with the reason (writes, COPY, ATTACH,
    INSTALL, PRAGMA, several statements), as is a table function that reads files (read_csv, read_parquet, glob,
    ...); the database is opened read-only; the answer says when the row cap truncated it."""
    return results_query.run_query(sql, max_rows, timeout_seconds)


def get_scorecard(run_id: RunId = None, batch_id: BatchId = None) -> scorecards.Scorecards:
    """A run's scorecard (its report.md), or the scorecards of every run of a batch: give one of the two."""
    return scorecards.scorecards(run_id, batch_id)


def get_trends(kind: Annotated[scorecards.TrendKind, Field(description=(
                   "build: pass rate with Wilson bands and grader / task-set boundaries; usage: pass and unsafe "
                   "rates"))] = "build",
               suite: Suite = None,
               agent: Annotated[str | None, Field(description="Only this agent runner (e.g. codex, replay).")] = None,
               condition: Annotated[str | None, Field(description=(
                   "Only this condition ('*': all of a batch's conditions together)."))] = None,
               max_rows: MaxRows = results_query.DEFAULT_MAX_ROWS) -> results_query.QueryResult:
    """Pass rate per batch over time, one series per suite x agent x model x condition."""
    return scorecards.trends(kind, suite, agent, condition, max_rows)


TOOLS: tuple[tuple[Callable[..., Any], ToolAnnotations], ...] = (
    (describe_task_schema, READ_ONLY), (list_tasks, READ_ONLY), (get_task, READ_ONLY),
    (export_tasks, WRITES_EXPORT), (query_results, READ_ONLY), (get_scorecard, READ_ONLY), (get_trends, READ_ONLY),
)


def task_resource(id: str) -> str:
    """A task's prompt and contract, as JSON."""
    try:
        view = task_catalog.get_task(id)
    except task_catalog.TaskLookupError as exc:
        raise ResourceError(str(exc)) from None
    return json.dumps(view.model_dump(mode="json", by_alias=True), indent=2)


def run_report_resource(runId: str) -> str:  # the URI template's variable names the parameter
    """A run's scorecard (report.md)."""
    try:
        return scorecards.report_of(runId).markdown
    except results_query.QueryRefused as exc:
        raise ResourceError(str(exc)) from None


def register(server: MCPServer) -> None:
    """Add the read-only tools and the task:// and run:// resources to `server`."""
    for fn, hints in TOOLS:
        server.add_tool(_refusing(fn), name=fn.__name__, annotations=hints, structured_output=True)
    server.resource("task://{id}", name="task", mime_type="application/json",
                    description="A task's prompt and contract (task.json).")(task_resource)
    server.resource("run://{runId}/report", name="run-report", mime_type="text/markdown",
                    description="A run's scorecard (report.md).")(run_report_resource)
