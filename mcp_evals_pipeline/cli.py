"""`mcp-evals`: the command line. Exit codes: 0 success, 1 a check failed, 2 bad usage or input, 3 infra error."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import click
from rich.console import Console
from rich.table import Table

from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.paths import prompt_hash_lock
from mcp_evals_pipeline.tasks.catalog import (
    TaskLoadError,
    discover_tasks,
    get_task,
    lock_new_tasks,
    parse_contract,
    read_lock,
)
from mcp_evals_pipeline.verify import VerifyResult, verify_tasks

# Tables are read in logs and CI output as often as in terminals: never squeeze them below a readable width.
out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, soft_wrap=True, width=None if sys.stderr.isatty() else 160)


@click.group()
def main() -> None:
    """Agentic-readiness evals for MCP server SDKs."""


@main.command()
@click.option("--task", "task_id", help="Task id (a directory under tasks/).")
@click.option("--contract", "contract_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Grade against this task.json instead of a task of the suite.")
@click.option("--workspace", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the TrialGrade as JSON.")
def grade(task_id: str | None, contract_path: Path | None, workspace: Path, as_json: bool) -> None:
    """Grade any directory against a task contract and print the TrialGrade."""
    if bool(task_id) == bool(contract_path):
        raise click.UsageError("give exactly one of --task or --contract")
    try:
        contract = get_task(task_id).contract if task_id else parse_contract(contract_path)  # type: ignore[arg-type]
    except TaskLoadError as exc:
        err.print(f"[red]error:[/] {exc}")
        sys.exit(2)
    result = grade_workspace_sync(contract, workspace)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    else:
        table = Table("check", "pass", "detail", title=f"{task_id or contract_path} · {workspace}")
        for check in result.checks:
            mark = "[green]yes[/]" if check.passed else "[red]no[/]"
            table.add_row(check.id, mark, check.detail or "")
        out.print(table)
        verdict = "[green]PASS[/]" if result.contract_pass else f"[red]FAIL[/] {result.failure_code}"
        out.print(f"{verdict} · sdkPath {result.sdk_path} · grader {result.grader_version}")
        if result.error:
            out.print(f"[red]{result.error}[/]")
    if not result.contract_pass:
        sys.exit(3 if not result.valid else 1)


def _progress_line(done: int, total: int, result: VerifyResult) -> str:
    mark = "[green]ok  [/]" if result.ok else "[red]FAIL[/]"
    line = (f"[{done:>{len(str(total))}}/{total}] {mark} {result.task_id} {result.solution.kind}:"
            f"{result.solution.name} expected {result.expected}, got {result.got} ({result.seconds:.1f}s)")
    if not result.ok and result.why:
        line += f"\n        {result.why}"
    return line


@main.command("verify-tasks")
@click.option("--task", "task_ids", multiple=True, help="Only this task (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@click.option("--workers", type=click.IntRange(1, 32), default=lambda: min(4, (os.cpu_count() or 2) + 1),
              show_default="cores + 1, at most 4", help="Solutions graded at once.")
def verify_tasks_cmd(task_ids: tuple[str, ...], as_json: bool, workers: int) -> None:
    """Goldens and alternates must pass; every negative must fail at its declared failureCode."""
    errors: list[TaskLoadError] = []
    if task_ids:
        tasks = []
        for task_id in task_ids:
            try:
                tasks.append(get_task(task_id))
            except TaskLoadError as exc:
                errors.append(exc)
    else:
        tasks, errors = discover_tasks()
    for exc in errors:
        err.print(f"[red]task error:[/] {exc}")
    total = sum(len(t.solutions) for t in tasks)
    err.print(f"verify-tasks: {len(tasks)} task(s), {total} solution(s), {workers} at a time")
    done = 0

    def progress(result: VerifyResult) -> None:
        nonlocal done
        done += 1
        err.print(_progress_line(done, total, result))

    results = anyio.run(lambda: verify_tasks(tasks, workers=workers, on_result=progress))
    failed = [r for r in results if not r.ok]
    if as_json:
        click.echo(json.dumps({
            "ok": not failed and not errors,
            "taskErrors": [str(e) for e in errors],
            "results": [r.as_dict() for r in results],
        }, indent=2))
    else:
        table = Table("task", "solution", "expected", "got", "ok", "s", title="verify-tasks")
        for r in results:
            table.add_row(r.task_id, f"{r.solution.kind}:{r.solution.name}", r.expected, r.got,
                          "[green]yes[/]" if r.ok else "[red]NO[/]", f"{r.seconds:.1f}")
        out.print(table)
    summary = f"{len(results) - len(failed)}/{len(results)} solutions graded as declared"
    if errors:
        summary += f"; {len(errors)} task(s) failed to load"
    (err if as_json else out).print(("[green]" if not failed and not errors else "[red]") + summary + "[/]")
    if failed or errors:
        sys.exit(1)


@main.command("list-tasks")
def list_tasks() -> None:
    """Every task with its promptHash and whether the lock agrees."""
    tasks, errors = discover_tasks()
    lock = read_lock()
    table = Table("task", "runtime", "promptHash", "lock", "solutions")
    for task in tasks:
        state = ("[green]locked[/]" if lock.get(task.id) == task.prompt_hash
                 else "[yellow]new[/]" if task.id not in lock else "[red]EDITED IN PLACE[/]")
        table.add_row(task.id, task.contract.effective_runtime, task.prompt_hash, state, str(len(task.solutions)))
    out.print(table)
    for exc in errors:
        err.print(f"[red]task error:[/] {exc}")
    if errors:
        sys.exit(2)


@main.command("lock-tasks")
def lock_tasks() -> None:
    """Add the promptHash of every new task to the lock. Never rewrites an entry: an edited task is a new task."""
    tasks, errors = discover_tasks()
    for exc in errors:
        err.print(f"[red]task error:[/] {exc}")
    added, changed = lock_new_tasks(tasks)
    for task_id in added:
        out.print(f"locked {task_id}")
    for task_id in changed:
        err.print(f"[red]{task_id} was edited in place[/] (lock {read_lock()[task_id]}); "
                  "restore it and add the change as a new task")
    out.print(f"{prompt_hash_lock()}: {len(added)} added")
    if changed or errors:
        sys.exit(1)


if __name__ == "__main__":
    main()
