"""`mcp-evals`: the command line. Exit codes: 0 success, 1 a check failed, 2 bad usage or input, 3 infra error."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import anyio
import click
from rich.console import Console
from rich.markup import escape as rich_escape
from rich.table import Table

from mcp_evals_pipeline import grader
from mcp_evals_pipeline.agents.base import MissingCredentials
from mcp_evals_pipeline.agents.registry import DEFAULT_AGENT, agents_help
from mcp_evals_pipeline.conditions import BASELINE, BUILD_CONDITIONS, USAGE_BASELINE, USAGE_CONDITIONS
from mcp_evals_pipeline.findings.statuses import STATUSES
from mcp_evals_pipeline.heartbeat import heartbeat
from mcp_evals_pipeline.paths import REPO_ROOT, dagster_home, database_path, prompt_hash_lock, runs_dir
from mcp_evals_pipeline.sandbox import SandboxError
from mcp_evals_pipeline.serve import DEFAULT_PORT as SERVE_PORT
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.tasks.catalog import (
    TaskLoadError,
    UnknownTask,
    discover_tasks,
    get_task,
    lock_new_tasks,
    parse_contract,
    read_lock,
)
from mcp_evals_pipeline.trials import MAX_TRIALS
from mcp_evals_pipeline.verify import VerifyResult, verify_tasks

# Tables are read in logs and CI output as often as in terminals: never squeeze them below a readable width.
out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, soft_wrap=True, width=None if sys.stderr.isatty() else 160)


@click.group()
def main() -> None:
    """Agentic-readiness evals for MCP server SDKs."""
    # Credentials may live in the project's .env (git-ignored); a variable already set in the shell wins.
    from dotenv import load_dotenv

    load_dotenv(REPO_ROOT / ".env", override=False)


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
    result = grader.grade_workspace_sync(contract, workspace)
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


def _progress_line(done: int, total: int, result: VerifyResult, again: bool = False) -> str:
    mark = "[green]ok  [/]" if result.ok else "[red]FAIL[/]"
    line = (f"[{done:>{len(str(total))}}/{total}] {mark} {result.task_id} {result.solution.label}"
            f" expected {result.expected}, got {result.got} ({result.seconds:.1f}s)" + (" again" if again else ""))
    if not result.ok and result.why:
        line += f"\n        {result.why}"
    return line


def _selection(task_ids: tuple[str, ...], suites: tuple[str, ...]) -> list[str]:
    from mcp_evals_pipeline.tasks.suites import SuiteError, expand_selection

    try:
        return expand_selection(task_ids, suites)
    except SuiteError as exc:
        err.print(f"[red]error:[/] {exc}")
        sys.exit(2)


@main.command("verify-tasks")
@click.option("--task", "task_ids", multiple=True, help="Only this task (repeatable).")
@click.option("--suite", "suites", multiple=True, help="Every task of this suite (tasks/suites.json; repeatable).")
@click.option("--quick", is_flag=True,
              help="Goldens, alternates and per runtime one negative per failure code (the CI guard).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@click.option("--workers", type=click.IntRange(1, 32), default=lambda: min(4, (os.cpu_count() or 2) + 1),
              show_default="cores + 1, at most 4", help="Solutions graded at once.")
@click.option("--repeat", type=click.IntRange(1, 20), default=1, show_default=True,
              help="Grade every golden and alternate (usage: passing sessions) this many times; name each whose "
                   "verdict or first failing check changed between runs (flaky).")
def verify_tasks_cmd(task_ids: tuple[str, ...], suites: tuple[str, ...], quick: bool, as_json: bool,
                     workers: int, repeat: int) -> None:
    """Goldens and alternates must pass; every negative must fail at its declared failureCode."""
    errors: list[TaskLoadError] = []
    task_ids = tuple(_selection(task_ids, suites))
    if task_ids:
        tasks = []
        for task_id in task_ids:
            try:
                tasks.append(get_task(task_id))
            except UnknownTask as exc:  # a typo is bad usage, named before anything is graded
                _input_error(exc)
            except TaskLoadError as exc:
                errors.append(exc)
    else:
        tasks, errors = discover_tasks()
    if not tasks and not errors:
        from mcp_evals_pipeline.paths import tasks_dir

        _input_error(f"no task to verify under {tasks_dir()}")
    for exc in errors:
        err.print(f"[red]task error:[/] {exc}")
    if quick:
        from mcp_evals_pipeline.verify import quick_selection

        tasks = quick_selection(tasks)
    from mcp_evals_pipeline.verify_flaky import find_flaky, repeated

    again = repeated(tasks, repeat - 1)
    total = sum(len(t.solutions) for t in tasks)
    repeats = sum(len(t.solutions) for t in again)
    err.print(f"verify-tasks: {len(tasks)} task(s), {total} solution(s)"
              + (f" (and {repeats} regradings: what must pass, {repeat} runs in all)" if repeat > 1 else "")
              + f", {workers} at a time")
    done = 0
    graded: dict[tuple[str, str, str], int] = {}

    def progress(result: VerifyResult) -> None:
        nonlocal done
        done += 1
        key = (result.task_id, result.solution.kind, result.solution.name)
        graded[key] = graded.get(key, 0) + 1
        err.print(_progress_line(done, total + repeats, result, again=graded[key] > 1))

    # One pool for the first run and the repeats (queued after it): no worker idles between runs.
    every = anyio.run(lambda: verify_tasks([*tasks, *again], workers=workers, on_result=progress))
    results = every[:total]  # the first run, in task order; the repeats follow, in the same order
    flaky = find_flaky(every)
    if not quick:  # a whole proof holds for `eval`'s gate until the task, grader or harness changes
        from mcp_evals_pipeline.verify import proof_key, remember_proof

        for task in tasks:  # a task with a flaky solution is not proven, whatever its first run said
            mine = [r for r in results if r.task_id == task.id]
            remember_proof(task, proof_key(task), [] if any(f.task_id == task.id for f in flaky) else mine)
    failed = [r for r in results if not r.ok]
    for one in flaky:
        err.print(f"[red]FLAKY[/] {rich_escape(str(one))}")
    if as_json:
        click.echo(json.dumps({
            "ok": not failed and not errors and not flaky,
            "taskErrors": [str(e) for e in errors],
            "results": [r.as_dict() for r in results],
            "repeat": repeat,
            "flaky": [f.as_dict() for f in flaky],
        }, indent=2))
    else:
        table = Table("task", "solution", "expected", "got", "ok", "s", title="verify-tasks")
        for r in results:
            table.add_row(r.task_id, r.solution.label, r.expected, r.got,
                          "[green]yes[/]" if r.ok else "[red]NO[/]", f"{r.seconds:.1f}")
        out.print(table)
    summary = f"{len(results) - len(failed)}/{len(results)} solutions graded as declared"
    if repeat > 1:
        summary += f"; {len(flaky)} flaky over {repeat} runs"
    if errors:
        summary += f"; {len(errors)} task(s) failed to load"
    clean = not failed and not errors and not flaky
    (err if as_json else out).print(("[green]" if clean else "[red]") + summary + "[/]")
    if not clean:
        sys.exit(1)


@main.command("serve")
@click.option("--http", "use_http", is_flag=True,
              help="Streamable HTTP on 127.0.0.1 (bearer token: MCP_EVALS_SERVE_TOKEN, else printed to stderr) "
                   "instead of stdio.")
@click.option("--port", type=click.IntRange(1, 65535), default=SERVE_PORT, show_default=True, help="With --http.")
def serve_cmd(use_http: bool, port: int) -> None:
    """Our MCP server: author tasks through the grader's gate (drafts, run_check, submit_draft). docs/serve.md."""
    from mcp_evals_pipeline.serve.server import run_http, run_stdio

    if use_http:
        run_http(port)
    else:
        run_stdio()


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


def _refuse_unknown_tasks(task_ids: list[str] | tuple[str, ...]) -> None:
    """Exit 2 at the first id naming no task directory, with the nearest ids; a task that exists but does not
    load is left to the command (it names the file and field)."""
    for task_id in task_ids:
        try:
            get_task(task_id)
        except UnknownTask as exc:
            _input_error(exc)
        except TaskLoadError:
            continue


def _input_error(message: object) -> NoReturn:
    """Bad input: one line on stderr, exit 2 (the message may hold brackets: no markup)."""
    from rich.markup import escape

    err.print(f"[red]error:[/] {escape(str(message))}")
    sys.exit(2)


@main.command("import-qa")
@click.argument("qa_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--prefix", required=True, help="Case ids: <prefix>-01, <prefix>-02, ... in the file's order.")
@click.option("--server-from", "server_from", metavar="TASK",
              help="Use the server and world of this usage task.")
@click.option("--server", "server_path", metavar="PATH",
              help="Or a server of this repository, e.g. servers/ops-platform/server.py (with --world).")
@click.option("--server-env", "server_env", multiple=True, metavar="KEY=VALUE",
              help="The --server's environment; {world} is the world's URL (repeatable).")
@click.option("--world", help="The world of --server (a bundled fake, e.g. ops-platform).")
@click.option("--max-turns", type=click.IntRange(1, 100), default=12, show_default=True)
@click.option("--tier", type=click.Choice(["pr", "full"]), default="full", show_default=True,
              help="The cases' tier: pr (the fast subset a pull request runs) or full.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the case directories go (default: the tasks directory).")
def import_qa_cmd(qa_file: Path, prefix: str, server_from: str | None, server_path: str | None,
                  server_env: tuple[str, ...], world: str | None, max_turns: int, tier: str,
                  out_dir: Path | None) -> None:
    """Turn a QA-pair evaluation file (<qa_pair> XML) into read-only usage cases, one directory per <qa_pair>."""
    from pydantic import ValidationError

    from mcp_evals_pipeline.contracts.usage import UsageContract, UsageServer
    from mcp_evals_pipeline.paths import tasks_dir
    from mcp_evals_pipeline.usage.qa_pairs import QaExportError, QaFileError, import_qa, read_qa_file

    if (server_from is None) == (server_path is None):
        _input_error("give exactly one of --server-from TASK or --server PATH")
    try:
        if server_from is not None:
            if server_env or world:
                _input_error("--server-env and --world go with --server; --server-from takes both from the task")
            source = get_task(server_from).contract
            if not isinstance(source, UsageContract):
                _input_error(f"--server-from {server_from}: a {source.kind} task, not a usage task")
            server, world = source.server, source.world
        else:
            if not world:
                _input_error("--server needs --world (the fake its API is pointed at)")
            pairs = [item.partition("=") for item in server_env]
            if any(not key or sep != "=" for key, sep, _ in pairs):
                _input_error(f"--server-env takes KEY=VALUE, not {next(i for i in server_env if '=' not in i)!r}")
            server = UsageServer(path=server_path, env={key: value for key, _, value in pairs})
            if not (REPO_ROOT / str(server_path)).is_file():
                _input_error(f"--server {server_path}: no such file in the repository")
        qa = read_qa_file(qa_file)
        written = import_qa(qa, out_dir or tasks_dir(), prefix, server, str(world), max_turns, tier)
    except ValidationError as exc:
        first = exc.errors()[0]
        _input_error(f"{'.'.join(map(str, first['loc'])) or 'server'}: {first['msg']}")
    except (QaFileError, QaExportError, TaskLoadError) as exc:
        _input_error(exc)
    for case_id, fresh in written:
        out.print(f"{'wrote' if fresh else 'unchanged'} {case_id}")
    out.print(f"{qa_file}: {len(written)} case(s). A QA file names no tool calls: record each case's "
              "sessions/oracle.json and bad sessions, add the cases to a suite (tasks/suites.json) and run "
              "`mcp-evals lock-tasks`")


@main.command("export-qa")
@click.option("--task", "task_ids", multiple=True, help="This read-only usage case (repeatable).")
@click.option("--suite", "suites", multiple=True, help="Every case of this suite (repeatable).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The QA-pair file to write.")
def export_qa_cmd(task_ids: tuple[str, ...], suites: tuple[str, ...], output: Path) -> None:
    """Write read-only usage cases as a QA-pair evaluation file (<qa_pair> XML); a case with writes is refused."""
    from mcp_evals_pipeline.paths import tasks_dir
    from mcp_evals_pipeline.usage.qa_pairs import QaExportError, export_qa, write_qa

    selected = _selection(task_ids, suites)
    if not selected:
        _input_error("select the cases with --task or --suite")
    _refuse_unknown_tasks(selected)  # a task that exists but does not load is export_qa's to name
    try:
        qa = export_qa([tasks_dir() / task_id for task_id in selected])
    except QaExportError as exc:
        _input_error(exc)
    output.write_text(write_qa(qa), encoding="utf-8")
    out.print(f"{output}: {len(qa.pairs)} QA pair(s)")


# ---- the pipeline --------------------------------------------------------------------------------------------


def _instance():  # type: ignore[no-untyped-def] - dagster is imported lazily: `grade` must start fast
    """The project-local Dagster instance (DAGSTER_HOME), so CLI runs show in the UI (`make ui`: `dg dev`);
    initialized under a file lock, so concurrent first uses of a fresh home all work."""
    from mcp_evals_pipeline.dagster_instance import open_instance

    return open_instance(dagster_home())


@main.command("preflight")
def preflight_cmd() -> None:
    """Can this machine box agent-written code? One line: what boxes it, or what is missing and the ways out
    (exit 2). `make run` asks before any work; `eval` asks again before creating anything."""
    from mcp_evals_pipeline.grader.boxes import box_kind, unboxed_allowed
    from mcp_evals_pipeline.sandbox.preflight import preflight

    no_box = preflight()
    if no_box:
        err.print(f"[red]error:[/] {no_box}")
        sys.exit(2)
    if unboxed_allowed():
        err.print("[yellow]warning:[/] MCP_EVALS_UNSAFE_UNBOXED_GRADING=1: agent-written code runs UNBOXED on the host")
    else:
        out.print(f"preflight: agent-written code is boxed ({box_kind()})")


@main.command("eval")
@click.option("--agent", default=DEFAULT_AGENT, show_default=True, help=agents_help())
@click.option("--condition", "conditions", multiple=True,
              help=f"Condition(s) (repeatable). Build tasks: {', '.join(BUILD_CONDITIONS)}; usage tasks: "
                   f"{', '.join(USAGE_CONDITIONS)}. Default: each kind's baseline ({BASELINE}, {USAGE_BASELINE}).")
@click.option("--variant", "variants", multiple=True, hidden=True, help="Deprecated alias of --condition.")
@click.option("--trials", type=click.IntRange(1, MAX_TRIALS), default=1, show_default=True)
@click.option("--task", "task_ids", multiple=True, help="Only this task (repeatable; default every task).")
@click.option("--suite", "suites", multiple=True,
              help="Every task of this suite (tasks/suites.json; repeatable, with --task too).")
@click.option("--model", help="Override the agent's pinned model.")
@click.option("--reasoning-effort", help="Override the agent's pinned reasoning effort.")
@click.option("--skip-judge", is_flag=True, help="Write no judge memos (they never change a number).")
@click.option("--batch-date", help="Batch date partition (default: the current Mon/Wed/Fri batch).")
@click.option("--batch-id", help="Group id of the batch (default: the batch date).")
@click.option("--no-verify", is_flag=True, help="Skip verify-tasks before spending on agents.")
@click.option("--sandbox", type=click.Choice(["local", "hardened", "docker"]),
              help="The agents' box (default MCP_EVALS_SANDBOX, else hardened); local runs them UNBOXED, "
                   "printed and recorded on every trial.")
@click.option("--require-isolation", type=click.Choice(["hardened"]),
              help="Refuse to run unless the host provides this isolation.")
@click.option("--parallel", type=click.IntRange(1, 32), default=1, show_default=True,
              help="Trials run at once, each in a worker process (live agents mostly wait on their model).")
@click.option("--resume", is_flag=True,
              help="Skip trials whose current attempt is valid for the same task prompt, grader version, agent, "
                   "model and condition (e.g. after a crashed batch); the others run.")
@click.option("--tier", type=click.Choice(["pr", "full"]), default=None,
              help="Only tasks of this tier (of the selection; without one, every usage suite's cases): pr = the "
                   "fast subset a pull request runs (usage cases marked pr, the build tasks of a suite's `pr` list), "
                   "full = every task.")
@click.option("--timeout-min", type=click.FloatRange(1, 600), default=None,
              help="The agent's wall-clock budget per trial, in minutes (default 20).")
@click.option("--min-pass-rate", type=click.FloatRange(0, 100), default=None,
              help="Exit 1 when a kind x suite x condition headline's pass rate (%) is below this floor; exit 3 when "
                   "the batch is incomplete or holds invalid trials (no floor is judged on missing data).")
@click.option("--max-unsafe", type=click.FloatRange(0, 100), default=None,
              help="Exit 1 when a usage headline's unsafe rate (%) is above this ceiling (exit 3 as above).")
@click.option("--json-summary", "json_summary", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the batch's headlines and the gate's verdict as JSON here.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write a JUnit XML file here: one test case per trial.")
def eval_cmd(agent: str, conditions: tuple[str, ...], variants: tuple[str, ...], trials: int,
             task_ids: tuple[str, ...], suites: tuple[str, ...], model: str | None, reasoning_effort: str | None,
             skip_judge: bool,
             batch_date: str | None, batch_id: str | None, no_verify: bool, sandbox: str | None,
             require_isolation: str | None, parallel: int, resume: bool, tier: str | None,
             timeout_min: float | None, min_pass_rate: float | None, max_unsafe: float | None,
             json_summary: Path | None, junit_path: Path | None) -> None:
    """Run a batch: every selected task x condition x trial as Dagster runs, then the models and the scorecard.
    Exit 0 when done; 1 below a floor; 2 a refused request; 3 an incomplete batch (a failed run, invalid trials
    when a floor is asked for)."""
    from dagster import DagsterExecutionInterruptedError

    from mcp_evals_pipeline.pipeline import BatchRequest, check_request, run_batch

    if variants:
        err.print("[yellow]--variant is deprecated; use --condition[/]")
    request = BatchRequest(
        agent=agent, conditions=list(conditions + variants), trials=trials,
        task_ids=_selection(task_ids, suites),
        model=model, reasoning_effort=reasoning_effort, skip_judge=skip_judge, batch_date=batch_date,
        batch_id=batch_id, verify=not no_verify, sandbox=sandbox, require_isolation=require_isolation,
        parallel=parallel, resume=resume, tier=tier,
        **({"time_budget_s": timeout_min * 60} if timeout_min is not None else {}),
    )
    try:
        # every argument and the preflight (a box for agent code), before the instance (DAGSTER_HOME, dagster.yaml)
        # or any file: a fresh machine's first command stops here
        check_request(request)
        outcome = run_batch(request, _instance(), echo=err.print)
    except (ValueError, MissingCredentials, TaskLoadError, SandboxError) as exc:
        err.print(f"[red]error:[/] {exc}")
        sys.exit(2)
    except (KeyboardInterrupt, DagsterExecutionInterruptedError):
        err.print("[red]interrupted[/]: the batch stopped; `mcp-evals eval --resume` with the same options runs "
                  "what is left")
        sys.exit(130)
    for path in outcome.reports:
        out.print(f"scorecard: {path}")
    if min_pass_rate is not None or max_unsafe is not None or json_summary or junit_path:
        _gate(outcome, min_pass_rate, max_unsafe, json_summary, junit_path)
    if outcome.failed_runs:
        err.print(f"[red]{outcome.failed_runs} Dagster run(s) failed[/] (see `make ui`)")
        sys.exit(3)


def _gate(outcome, min_pass_rate: float | None, max_unsafe: float | None,  # type: ignore[no-untyped-def]
          json_summary: Path | None, junit_path: Path | None) -> None:
    """The batch's headlines against the floor and ceiling; the summary and JUnit files; exits 1 or 3 on a verdict."""
    from mcp_evals_pipeline import gate

    trials = gate.batch_trials(TrialStore(), outcome.run_id, outcome.keys)
    verdict = gate.judge(trials, outcome.keys, outcome.failed_runs, outcome.run_id, min_pass_rate, max_unsafe)
    report = outcome.reports[0] if outcome.reports else None
    if json_summary:
        json_summary.parent.mkdir(parents=True, exist_ok=True)
        json_summary.write_text(gate.summary(outcome.run_id, outcome.batch_date, report, trials, verdict)
                                .model_dump_json(indent=2) + "\n")
    if junit_path:
        junit_path.parent.mkdir(parents=True, exist_ok=True)
        gate.junit(outcome.run_id, trials).write(junit_path, encoding="utf-8", xml_declaration=True)
    if min_pass_rate is None and max_unsafe is None:
        return
    for reason in verdict.reasons:
        err.print(f"[red]gate:[/] {reason}")
    if verdict.exit_code:
        sys.exit(verdict.exit_code)
    limits = ([f"pass rate >= {min_pass_rate:g}%"] if min_pass_rate is not None else []) + (
        [f"unsafe <= {max_unsafe:g}%"] if max_unsafe is not None else [])
    out.print(f"gate: every headline meets {' and '.join(limits)}")


@main.command("setup-agents")
@click.argument("agents", nargs=-1)
def setup_agents(agents: tuple[str, ...]) -> None:
    """Install the pinned Node toolchain and agent CLIs (default: every pinned one) into the project cache."""
    from mcp_evals_pipeline.agents.cli_tools import CLI_PINS, ensure_pinned_cli
    from mcp_evals_pipeline.node_toolchain import ensure_toolchain

    toolchain = ensure_toolchain()
    out.print(f"node toolchain: {toolchain.bin_dir}")
    for agent in agents or tuple(CLI_PINS):
        if agent not in CLI_PINS:
            err.print(f"[red]error:[/] no CLI pinned for {agent!r} (have: {', '.join(CLI_PINS)})")
            sys.exit(2)
        out.print(f"{agent}: {CLI_PINS[agent][0]}@{CLI_PINS[agent][1]} -> {ensure_pinned_cli(agent)}")


def _legacy_ids(source: Path) -> set[str]:
    """The run ids of a directory of seed-format runs (those whose run.json parses)."""
    from mcp_evals_pipeline.legacy_import import RUN_FILE, filled_run, find_run_dirs, load_run

    ids = set()
    for run_dir in find_run_dirs(source):
        try:
            # Only compared with the store's ids (never a path): the record checks, ~0.1 s a run, are the import's.
            ids.add(filled_run(load_run(run_dir / RUN_FILE, checked=False)).run_id)
        except ValueError:
            continue
    return ids


@main.command("rebuild-db")
def rebuild_db() -> None:
    """Rebuild the DuckDB database from the files under eval_results/runs/ (the SQL models too)."""
    from mcp_evals_pipeline.runs import rebuild_database
    from mcp_evals_pipeline.sql_models import materialize_models

    summary = rebuild_database(runs_dir(), database_path())
    for moved in summary.moved:
        err.print(f"[yellow]set aside[/] (its WAL does not replay) {rich_escape(moved)}")
    with TrialStore().connect() as con:
        materialize_models(con)
        findings = _index_findings(con)
    out.print(f"{database_path()}: {summary.rows} trial rows from {summary.runs} runs, {findings} findings")
    for error in summary.errors:
        err.print(f"[red]skipped[/] {error}")
    if summary.errors:
        sys.exit(1)


@main.command("publish")
@click.option("--to", "to", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The results directory to publish into (e.g. a checkout of the eval-results branch).")
@click.option("--run", "run_ids", multiple=True, help="Only this run (repeatable; default every run).")
def publish_cmd(to: Path, run_ids: tuple[str, ...]) -> None:
    """Copy the compact results: runs/<runId>/{run.json, report.md, trials/<key>/memo.md} and synthesis/<date>.md,
    redacted, without workspaces or transcripts. Append-only: a run published with other bytes is never
    overwritten (exit 1, named). `import-runs DIR` and `synthesize --results-dir DIR` read it back."""
    from mcp_evals_pipeline.paths import synthesis_dir
    from mcp_evals_pipeline.publish import publish

    try:
        summary = publish(runs_dir(), synthesis_dir(), to, list(run_ids) or None)
    except ValueError as exc:
        err.print(f"[red]error:[/] {exc}")
        sys.exit(2)
    out.print(f"published {len(summary.published)} new, {len(summary.unchanged)} already there, into {to}")
    for name in summary.published:
        out.print(f"  + {name}")
    for line in summary.skipped:
        err.print(f"[yellow]skipped[/] {line}")
    for name in summary.conflicts:
        err.print(f"[red]conflict[/] {name}: already published with other contents; left as it was")
    if summary.conflicts or (run_ids and summary.skipped):
        sys.exit(1)


@main.command("ci-outputs")
@click.argument("summary", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def ci_outputs_cmd(summary: Path) -> None:
    """For the composite action: from `eval --json-summary`, append run-dir, report and pass-rate (0-100) to
    $GITHUB_OUTPUT and the headlines to $GITHUB_STEP_SUMMARY (each skipped when its variable is unset)."""
    from mcp_evals_pipeline.gate import BatchSummary, step_summary

    figures = BatchSummary.model_validate_json(summary.read_text())
    run_dir = str(Path(figures.report).parent) if figures.report else str(runs_dir() / figures.run_id)
    outputs = {"run-dir": run_dir, "report": figures.report or "",
               "pass-rate": "" if figures.pass_rate is None else f"{figures.pass_rate:g}"}
    if os.environ.get("GITHUB_OUTPUT"):
        with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as fh:
            fh.writelines(f"{name}={value}\n" for name, value in outputs.items())
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as fh:
            fh.write(step_summary(figures))
    for name, value in outputs.items():
        out.print(f"{name}={value}")


@main.command("merge-shards")
@click.argument("shards", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--expect-task", "expected", multiple=True, help="A task some shard must have run (repeatable).")
@click.option("--suite", "suites", multiple=True, help="Every task of this suite is expected (repeatable).")
def merge_shards_cmd(shards: tuple[Path, ...], expected: tuple[str, ...], suites: tuple[str, ...]) -> None:
    """Join the shards of one batch (each a CI job's results directory or published copy) into one run: its
    trials, memos, run.json, rows, models and scorecard. Names every missing or malformed shard; exit 3 then."""
    from mcp_evals_pipeline.defs.reports.assets import write_scorecard
    from mcp_evals_pipeline.merge import merge_shards
    from mcp_evals_pipeline.record_checks import RecordError
    from mcp_evals_pipeline.sql_models import materialize_models

    wanted = _selection(expected, suites)
    _refuse_unknown_tasks(expected)  # a misspelled expectation is bad usage, not a missing shard
    store = TrialStore()
    try:
        summary = merge_shards(list(shards), runs_dir(), store, wanted or None)
    except RecordError as exc:  # checked before any trial directory or row was written
        _input_error(f"{exc}; nothing was merged")
    for line in summary.malformed:
        err.print(f"[red]malformed shard[/] {line}")
    for task in summary.missing:
        err.print(f"[red]missing shard[/]: no shard ran {task}")
    if summary.run_id is None or not summary.trials:
        err.print("[red]error:[/] no trial to merge")
        sys.exit(3)
    with store.connect() as con:
        materialize_models(con)
    report = write_scorecard(summary.run_id, runs_dir(), store)
    out.print(f"merged {len(summary.shards)} shard(s), {summary.trials} trials, into run {summary.run_id}")
    out.print(f"scorecard: {report}")
    if not summary.complete:
        sys.exit(3)


ARCHIVE_CAP_BYTES = 1 << 30  # the 259 real runs unpack to 2.4 MB
ARCHIVE_CAP_MEMBERS = 100_000


class ArchiveTooBig(Exception):
    pass


def _capped_data_filter(source: Path) -> Callable[[Any, str], Any]:
    import tarfile

    seen = {"bytes": 0, "members": 0}

    def keep(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        seen["bytes"] += member.size
        seen["members"] += 1
        if seen["bytes"] > ARCHIVE_CAP_BYTES or seen["members"] > ARCHIVE_CAP_MEMBERS:
            raise ArchiveTooBig(f"unpacks to more than {ARCHIVE_CAP_BYTES >> 20} MiB or {ARCHIVE_CAP_MEMBERS} files "
                                f"(at {member.name})")
        return tarfile.data_filter(member, dest)

    return keep


@main.command("import-runs")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--if-missing", is_flag=True,
              help="Do nothing when the store already holds every run of SOURCE (what `make run` does).")
def import_runs_cmd(source: Path, if_missing: bool) -> None:
    """Import seed-format run directories (run.json, report.md, memos) of the earlier harness: a directory, or a
    .tar.xz / .tar.gz archive of one (tests/fixtures/legacy_runs.tar.xz: the 259 real runs). The SQL models are
    refreshed after."""
    import tarfile
    import tempfile

    from mcp_evals_pipeline.legacy_import import find_run_dirs, import_runs
    from mcp_evals_pipeline.record_checks import RecordError
    from mcp_evals_pipeline.sql_models import materialize_models

    store = TrialStore()
    archive_path = source
    with tempfile.TemporaryDirectory(prefix="import-runs-") as unpacked:
        if source.is_file():
            try:
                with tarfile.open(source) as archive:
                    # no links or paths out of the directory, and a cap on what it unpacks to (a small archive can
                    # hold gigabytes of zeros), counted before each member is written
                    archive.extractall(unpacked, filter=_capped_data_filter(source))
            except ArchiveTooBig as exc:
                _input_error(f"{source}: {exc}; nothing was imported")
            except (tarfile.TarError, OSError) as exc:
                err.print(f"[red]error:[/] {source} is neither a directory nor a readable tar archive: {exc}")
                sys.exit(2)
            source = Path(unpacked)
        if if_missing:
            with store.connect() as con:
                have = {r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()}
            wanted = len(find_run_dirs(source))
            if wanted and len(have) >= wanted and _legacy_ids(source) <= have:
                out.print(f"import-runs: the store already holds the {wanted} runs of the archive")
                return
        try:
            with heartbeat(err.print, lambda s: f"  ... importing {source.name}: {s:.0f}s elapsed"):
                summary = import_runs(source, store, runs_dir())
        except RecordError as exc:  # checked before anything was copied or indexed
            # a file of an archive is named by the archive and its path inside it, not the temporary directory
            _input_error(f"{str(exc).replace(unpacked, f'{archive_path}:')}; nothing was imported")
    with store.connect() as con, heartbeat(err.print, lambda s: f"  ... building the SQL models: {s:.0f}s elapsed"):
        materialize_models(con)  # every table current after rows changed
    _record_imported_scorecards(store, summary.run_ids)
    out.print(f"imported {summary.runs} runs ({summary.trials} trials, {summary.files_written} files written) "
              f"into {runs_dir()} and {database_path()}")
    for skipped in summary.errors:
        err.print(f"[red]skipped[/] {skipped.path}: {skipped.message}")
    if summary.errors:
        sys.exit(1)


def _record_imported_scorecards(store: TrialStore, run_ids: list[str]) -> None:
    """The imported batch dates' scorecard partitions, materialized in the project's instance (not missing in the
    UI forever: no Dagster run will ever write them)."""
    from mcp_evals_pipeline.dagster_instance import open_instance
    from mcp_evals_pipeline.defs.reports.imported import record_imported_scorecards

    try:
        with open_instance() as instance:
            dates = record_imported_scorecards(instance, store, runs_dir(), run_ids)
    except Exception as exc:  # the runs are imported all the same: only the UI's view of them is missing
        err.print(f"[yellow]warning:[/] the imported scorecards were not recorded in the Dagster instance "
                  f"({type(exc).__name__}: {exc})")
        return
    if dates:
        out.print(f"import-runs: the scorecards of {len(dates)} imported batch date(s) are materialized in the UI")


@main.command("report")
@click.option("--run", "run_id", required=True, help="A run id (ours or imported).")
@click.option("--write", is_flag=True, help="Also write it to eval_results/runs/<run>/report.md.")
def report_cmd(run_id: str, write: bool) -> None:
    """Print the scorecard of any run."""
    from mcp_evals_pipeline.ids import check_id
    from mcp_evals_pipeline.reporting.scorecard import render_report
    from mcp_evals_pipeline.sql_models import materialize_models

    try:
        check_id(run_id, "run id")
    except ValueError as exc:
        err.print(f"[red]error:[/] {exc}")
        sys.exit(2)
    store = TrialStore()
    with store.connect() as con:
        if not con.execute("SELECT count(*) FROM trials WHERE run_id = ?", [run_id]).fetchone()[0]:
            from mcp_evals_pipeline.did_you_mean import suggestion

            there = [r[0] for r in con.execute("SELECT DISTINCT run_id FROM trials").fetchall()]
            _input_error(f"no trials of run {run_id!r} in {store.path}{suggestion(run_id, there)} "
                         "(`mcp-evals runs` lists the runs)")
        materialize_models(con)
        text = render_report(run_id, con)
    click.echo(text)
    if write:
        (runs_dir() / run_id).mkdir(parents=True, exist_ok=True)
        (runs_dir() / run_id / "report.md").write_text(text)


def _check_regrade_selection(run_id: str, task_ids: tuple[str, ...]) -> None:
    """A run directory that exists, holding a trial of every --task: else exit 2 naming the nearest."""
    from mcp_evals_pipeline.did_you_mean import suggestion
    from mcp_evals_pipeline.ids import check_id
    from mcp_evals_pipeline.trial_dir import TRIAL_FILE, TrialDir

    try:
        run_dir = runs_dir() / check_id(run_id, "run id")
    except ValueError as exc:
        _input_error(exc)
    if not run_dir.is_dir():
        there = [d.name for d in runs_dir().glob("*") if d.is_dir()] if runs_dir().is_dir() else []
        _input_error(f"no run directory at {run_dir}{suggestion(run_id, there)} (`mcp-evals runs` lists the runs)")
    held = sorted({r.task for path in run_dir.glob(f"trials/*/{TRIAL_FILE}")
                   if (r := TrialDir(path.parent).current_record()) is not None})
    for task_id in task_ids:
        if task_id not in held:
            _input_error(f"--task {task_id}: run {run_id} has no trial of it{suggestion(task_id, held)} "
                         f"(its tasks: {', '.join(held) or 'none'})")


@main.command("regrade")
@click.option("--run", "run_ids", multiple=True, required=True, help="A run id (repeatable).")
@click.option("--task", "task_ids", multiple=True, help="Only this task's trials (repeatable).")
@click.option("--force", is_flag=True, help="Also trials already marked by today's grader.")
def regrade_cmd(run_ids: tuple[str, ...], task_ids: tuple[str, ...], force: bool) -> None:
    """Mark stored work again with today's grader and contracts, changing nothing else: each trial becomes a new
    attempt (its agent, transcript and workspace untouched); then what the marker change alone moved."""
    from mcp_evals_pipeline.defs.reports.assets import write_scorecard
    from mcp_evals_pipeline.regrade import regrade_run
    from mcp_evals_pipeline.reporting.compare import Side, compare, render
    from mcp_evals_pipeline.sql_models import materialize_models
    from mcp_evals_pipeline.versions import GRADER_VERSION

    for run_id in run_ids:  # every run and task named is checked before anything is opened or marked again
        _check_regrade_selection(run_id, task_ids)
    store = TrialStore()
    moved: set[tuple[str, str]] = set()  # (batch, old grader)
    for run_id in run_ids:
        run_dir = runs_dir() / run_id
        results = regrade_run(run_dir, store, tasks=task_ids, force=force)
        table = Table("trial", "before", "after", title=f"regrade {run_id} with grader {GRADER_VERSION}")
        for r in results:
            before = (f"{r.before.grader_version}: {r.before.grade.failure_code or 'pass'}" if r.before else "-")
            after = (f"{r.after.grader_version}: {r.after.grade.failure_code or 'pass'}" if r.after
                     else f"[yellow]not marked again[/]: {r.skipped}")
            table.add_row(r.key, before, after)
            if r.left_out:  # the work's special files: never opened, so not in the new attempt's copy
                err.print(f"{r.key}: left out (a FIFO, socket or device is never opened): "
                          f"{rich_escape(', '.join(r.left_out))}")
            if r.after and r.before and r.before.batch_id and r.before.grader_version:
                moved.add((r.before.batch_id, r.before.grader_version))
        out.print(table)
        out.print(f"{sum(1 for r in results if r.after)} of {len(results)} trial(s) marked again")
    with store.connect() as con:
        materialize_models(con)  # every table current after rows changed
    for run_id in run_ids:
        out.print(f"scorecard: {write_scorecard(run_id, runs_dir(), store)}")
    with store.connect() as con:
        for batch, old in sorted(moved):
            click.echo(render(compare(con, Side(batch, old), Side(batch, GRADER_VERSION))))


@main.command("compare")
@click.argument("side_a", required=False)
@click.argument("side_b", required=False)
@click.option("--suite", "suites", multiple=True,
              help="Twice (--suite A --suite B): compare two suites' SDKs on the tasks they share, not batches. "
                   "Once with --sdk: the suite whose releases A and B are compared.")
@click.option("--sdk", "sdk", is_flag=True,
              help="A and B are SDK releases (e.g. 2.6.0 2.7.0): compare the batches that ran on each.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare_cmd(side_a: str | None, side_b: str | None, suites: tuple[str, ...], sdk: bool, as_json: bool) -> None:
    """What changed from batch A to batch B: flipped cells, new and fixed failure codes of the tasks both ran, the
    pass-rate change with its interval, a sign test over tasks, and what either side lacks (a kind, condition or
    agent the other ran). A side is BATCH (its current attempts; `mcp-evals batches` lists them, an imported one by
    its GitHub Actions run id, not its date) or BATCH@GRADER_VERSION (after `regrade`: what the marker change alone
    moved). With `--suite A --suite B` instead: the two suites' SDKs on the assignments they share, per agent x
    model x condition (the scorecard's "SDKs on one contract"). With `--sdk A B`: the batches of a suite that ran
    on SDK release A against those on release B, paired and tested the same way (`--suite` picks the suite when
    several ran both releases)."""
    from mcp_evals_pipeline.reporting.compare import CompareError, Side, compare, compare_sdk, render, sdk_suite

    if sdk:
        if side_a is None or side_b is None or len(suites) > 1:
            _input_error("compare --sdk takes two releases (A B) and at most one --suite")
        store = TrialStore()
        try:
            with store.connect() as con:
                result = compare_sdk(con, sdk_suite(con, side_a, side_b, suites[0] if suites else None), side_a,
                                     side_b)
        except CompareError as exc:
            _input_error(f"{exc} (store: {store.path})")
        click.echo(json.dumps(result.as_dict(), indent=2) if as_json else render(result))
        return
    if suites:
        _compare_suites(suites, side_a, as_json)
        return
    if side_a is None or side_b is None:
        err.print("[red]error:[/] compare takes two batches (A B) or two suites (--suite A --suite B)")
        sys.exit(2)
    store = TrialStore()
    try:
        with store.connect() as con:
            result = compare(con, Side.parse(side_a), Side.parse(side_b))
    except CompareError as exc:
        _input_error(f"{exc} (store: {store.path})")
    click.echo(json.dumps(result.as_dict(), indent=2) if as_json else render(result))


def _empty_trends(con, asked: dict[str, str | None]) -> None:  # type: ignore[no-untyped-def]
    """No trend row: say why. A value the store never holds is a typo (exit 2, the nearest named); values that
    each exist but never together are an empty selection (exit 2); an empty store is not an error."""
    from mcp_evals_pipeline.agents.registry import AGENTS
    from mcp_evals_pipeline.conditions import CONDITIONS
    from mcp_evals_pipeline.did_you_mean import suggestion
    from mcp_evals_pipeline.tasks.suites import load_suites

    given = {column: value for column, value in asked.items() if value}
    if not given:
        total = con.execute("SELECT count(*) FROM trials").fetchone()[0]
        out.print(f"no build trend to show in {database_path()} ({total} trials there: `mcp-evals batches` lists "
                  "them)" if total else f"no trials in {database_path()} yet: `make run` makes the first batches")
        return
    option = {"suite": "--suite", "agent_runner": "--agent", "condition": "--condition"}
    known = {"suite": list(load_suites()), "agent_runner": list(AGENTS), "condition": [*CONDITIONS, "*"]}
    for column, value in given.items():
        held = [r[0] for r in con.execute(f"SELECT DISTINCT {column} FROM trends WHERE {column} IS NOT NULL "
                                          f"ORDER BY 1").fetchall()]
        if value not in held:  # a name this checkout knows is no typo: only what the store holds is said
            near = "" if value in known[column] else suggestion(value, dict.fromkeys([*held, *known[column]]))
            usage = con.execute(f"SELECT count(*) FROM trials WHERE kind = 'usage' AND {column} = ?",
                                [value]).fetchone()[0]
            apart = (f"; its {usage} usage trials have trends of their own: SELECT * FROM usage_trends WHERE "
                     f"{column} = '{value}'" if usage else "")
            _input_error(f"{option[column]} {value}: no build trials of it in {database_path()}{near} (the build "
                         f"trends hold: {', '.join(str(h) for h in held if h != '*') or 'nothing'}){apart}")
    from mcp_evals_pipeline.models import real_model_sql

    where = " AND ".join(f"{c} = ?" for c in given)
    recorded = con.execute(f"SELECT DISTINCT agent_runner FROM trends WHERE {where} AND NOT {real_model_sql()} "
                           "ORDER BY 1", list(given.values())).fetchall()
    if recorded and "agent_runner" not in given:
        _input_error("only recorded sessions have build trends of " + " and ".join(
            f"{option[c]} {v}" for c, v in given.items()) + f" (left out by default, not a model: --agent "
            f"{recorded[0][0]} shows them)")
    _input_error("no batch has trials of " + " and ".join(f"{option[c]} {v}" for c, v in given.items())
                 + " together (`mcp-evals batches` lists what there is)")


def _compare_suites(suites: tuple[str, ...], side: str | None, as_json: bool) -> None:
    """`compare --suite A --suite B`: the sdk_comparison model, rebuilt from the store, for those two suites."""
    from mcp_evals_pipeline.reporting import sdk_comparison
    from mcp_evals_pipeline.sql_models import materialize_models
    from mcp_evals_pipeline.tasks.suites import SuiteError, get_suite

    if side is not None:
        err.print("[red]error:[/] compare takes either two batches (A B) or two suites (--suite A --suite B)")
        sys.exit(2)
    if len(suites) != 2 or suites[0] == suites[1]:
        err.print(f"[red]error:[/] --suite: give two different suites, as two --suite options (got {len(suites)})")
        sys.exit(2)
    try:
        for name in suites:
            get_suite(name)
    except SuiteError as exc:
        err.print(f"[red]error:[/] --suite: {exc}")
        sys.exit(2)
    with TrialStore().connect() as con:
        materialize_models(con, names=["stg_trials", sdk_comparison.MODEL])
        rows = sdk_comparison.suite_comparison(con, *suites)
    if as_json:
        click.echo(json.dumps(sdk_comparison.as_dicts(rows), indent=2))
    else:
        click.echo("\n".join([f"# {suites[0]} vs {suites[1]}: SDKs on one contract", "",
                               *sdk_comparison.render_lines(rows, *suites)]))


@main.command("trends")
@click.option("--agent", help="Only this agent runner (default: every real model; replay only when named).")
@click.option("--condition", help="Only this condition.")
@click.option("--suite", help="Only this suite (tasks/suites.json).")
def trends_cmd(agent: str | None, condition: str | None, suite: str | None) -> None:
    """Pass rate per batch over time, one series per suite x agent x model x condition; a batch whose grader
    version or task set (task ids x promptHashes) changed is marked, since either breaks comparability."""
    from mcp_evals_pipeline.models import agent_label, real_model_sql
    from mcp_evals_pipeline.sql_models import materialize_models

    with TrialStore().connect() as con:
        materialize_models(con, names=["stg_trials", "trends"])
        sql = "SELECT * FROM trends WHERE 1=1"
        params: list[object] = []
        if agent:
            sql, params = sql + " AND agent_runner = ?", [*params, agent]
        else:  # recorded sessions are no trend of an SDK: shown when named (--agent replay), never by default
            sql += f" AND {real_model_sql()}"
            left = [r[0] for r in con.execute(f"SELECT DISTINCT agent_runner FROM trends WHERE NOT {real_model_sql()} "
                                              "ORDER BY 1").fetchall()]
            if left:
                err.print(f"left out: {', '.join(left)} (recorded sessions, not a model; --agent {left[0]} shows "
                          "them)")
        if condition:
            sql, params = sql + " AND condition = ?", [*params, condition]
        if suite:
            sql, params = sql + " AND suite = ?", [*params, suite]
        cursor = con.execute(sql + " ORDER BY suite, agent_runner, agent_model, condition, batch_date", params)
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
        if not rows:
            _empty_trends(con, {"suite": suite, "agent_runner": agent, "condition": condition})
            return
    table = Table("suite", "batch", "date", "agent/model", "condition", "pass rate", "passed/valid", "invalid",
                  "tasks", "grader", title="trends")
    for r in rows:
        rate = "-" if r["pass_rate"] is None else f"{float(r['pass_rate']):.0%}"
        marker = " [yellow]<- grader changed[/]" if r.get("grader_boundary") else ""
        task_marker = " [yellow]<- task set changed[/]" if r.get("task_set_boundary") else ""
        table.add_row(str(r["suite"]), str(r["batch_id"]), str(r["batch_date"]),
                      agent_label(r["agent_runner"], r["agent_model"]), str(r["condition"]), rate,
                      f"{r['passed']}/{r['valid_scored']}", str(r["invalid"]), f"{r['tasks']}{task_marker}",
                      f"{r['grader_versions']}{marker}")
    out.print(table)


def _store_or_hint() -> TrialStore | None:
    """The store when it holds trials; else None, after one line saying how to get some (nothing is created)."""
    path = database_path()
    if path.exists():
        store = TrialStore(path)
        with store.connect() as con:
            if con.execute("SELECT count(*) FROM trials").fetchone()[0]:
                return store
    dirs = [d for d in runs_dir().glob("*") if (d / "run.json").is_file()] if runs_dir().is_dir() else []
    if dirs:
        out.print(f"no trials in {path}, but {len(dirs)} run directories under {runs_dir()}: "
                  "`mcp-evals rebuild-db` indexes them")
    else:
        out.print(f"no runs yet in {path}: `make run` makes the first ones (or `mcp-evals eval`); "
                  "`mcp-evals import-runs tests/fixtures/legacy_runs.tar.xz` adds the earlier harness's real runs")
    return None


@main.command("batches")
def batches_cmd() -> None:
    """Every batch in the store, newest first: its dates, suites, agents/models, runs and trial counts (current
    attempts; passed/valid, usage unsafe apart, invalid). Imported batches are marked: their ids are the earlier
    harness's GitHub Actions run ids, not dates. Read-only."""
    from mcp_evals_pipeline.reporting.inventory import IMPORTED_IDS, batches

    store = _store_or_hint()
    if store is None:
        return
    with store.connect() as con:
        rows = batches(con)
    table = Table("batch", "date", "suites", "agent/model", "runs", "trials", "passed/valid", "invalid",
                  title=f"batches ({len(rows)}; `mcp-evals runs --batch B` for a batch's runs)")
    for b in rows:
        table.add_row(b.batch_id + (" [yellow](imported)[/]" if b.counts.imported else ""), b.dates, b.suites,
                      b.agents, str(b.runs), str(b.counts.trials), b.counts.passes(), str(b.counts.invalid))
    out.print(table)
    if any(b.counts.imported for b in rows):
        out.print(f"{IMPORTED_IDS}; `mcp-evals compare A B` takes these ids")


@main.command("runs")
@click.option("--batch", help="Only this batch's runs (`mcp-evals batches` lists them).")
def runs_cmd(batch: str | None) -> None:
    """Every run in the store (one per batch x agent x model; an imported run is one task's), the latest started
    first: its id, batch, agent/model, start and trial counts (current attempts; passed/valid, usage unsafe apart,
    invalid). Read-only."""
    import datetime as dt

    from rich.table import Column

    from mcp_evals_pipeline.reporting.inventory import IMPORTED_IDS, runs, unknown_batch

    store = _store_or_hint()
    if store is None:
        if batch:
            _input_error(f"no batch {batch!r}: the store holds no trials yet")
        return
    with store.connect() as con:
        if batch and (missing := unknown_batch(con, batch)):
            _input_error(missing)
        rows = runs(con, batch)
    names = ([] if batch else ["batch"]) + ["agent/model", "started (UTC)", "trials", "passed/valid", "invalid"]
    # the run id, the one a user copies, is never cut; the others fold rather than lose their ends (no box: an
    # imported run's id is long)
    table = Table(*[Column(name, overflow="fold") for name in names], Column("run", no_wrap=True), box=None,
                  title=f"runs{f' of batch {batch}' if batch else ''} ({len(rows)}; `mcp-evals report --run R` "
                        "prints one's scorecard)")
    for r in rows:
        started = r.started.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M") if r.started else "-"
        first = [] if batch else [(r.batch_id or "-") + (" [yellow](imported)[/]" if r.counts.imported else "")]
        table.add_row(*first, r.agent, started, str(r.counts.trials), r.counts.passes(),
                      str(r.counts.invalid), r.run_id)
    out.print(table)
    if any(r.counts.imported for r in rows):
        out.print(IMPORTED_IDS)


@main.command("overview")
@click.option("--run", "run_ids", multiple=True, help="Name these runs' scorecards (e.g. the batch just run).")
def overview_cmd(run_ids: tuple[str, ...]) -> None:
    """Where to look after a run: the trend of every series (real runs first), the scorecards, the UI, the DuckDB
    file and three queries to start from."""
    from mcp_evals_pipeline.models import agent_label, is_real_model, real_model_sql
    from mcp_evals_pipeline.sql_models import materialize_models

    store = TrialStore()
    with store.connect() as con:
        materialize_models(con, names=["stg_trials", "trends", "suspect_markers"])
        series = con.execute(f"""
            SELECT suite, agent_runner, agent_model, count(*) AS batches,
                   min(batch_date) AS first, max(batch_date) AS last, sum(passed) AS passed,
                   sum(valid_scored) AS valid, count(*) FILTER (WHERE grader_boundary) AS grader_changes,
                   list(round(100 * pass_rate) ORDER BY batch_date DESC)[1:6] AS recent
            FROM trends WHERE condition = '*' GROUP BY suite, agent_runner, agent_model
            ORDER BY bool_or(NOT {real_model_sql()}), suite, agent_runner
        """).fetchall()
        # The model holds a row per task x agent; only rows WHERE suspect flag a task.
        suspects = con.execute("SELECT count(DISTINCT task) FROM suspect_markers WHERE suspect").fetchone()
        counts = con.execute("SELECT count(*), count(*) FILTER (WHERE source = 'import') FROM trials").fetchone()
    table = Table("suite", "agent/model", "batches", "from", "to", "passed/valid", "latest batches (newest first)",
                  "grader changes", title="trends (condition: all; `mcp-evals trends` for every batch)")
    for suite, runner, model, batches, first, last, passed, valid, changes, recent in series:
        label = agent_label(runner, model) + ("" if is_real_model(runner) else " [yellow](recorded sessions)[/]")
        rates = " ".join("-" if r is None else f"{int(r)}%" for r in recent)
        table.add_row(str(suite), label, str(batches), str(first), str(last), f"{int(passed)}/{int(valid)}", rates,
                      str(changes))
    out.print(table)
    total, imported = counts or (0, 0)
    out.print(f"{total} trials in {store.path} ({imported} imported from the earlier harness's real runs); "
              f"{(suspects or (0,))[0]} task(s) flagged by suspect_markers (a contract bug, not an SDK finding, "
              "until a reader checks)")
    for run_id in run_ids:
        out.print(f"scorecard: {runs_dir() / run_id / 'report.md'}")
    out.print("UI: make ui (then Assets, or Jobs > trials_job); the weekly synthesis: mcp-evals synthesize --dry-run")
    out.print(f"SQL on {store.path} (README: Querying DuckDB), for example:")
    for query in ("SELECT * FROM suspect_markers WHERE suspect;",
                  "SELECT suite, batch_date, agent_runner, pass_rate, wilson_low, wilson_high FROM trends "
                  "WHERE condition = '*' ORDER BY batch_date DESC LIMIT 20;",
                  "SELECT task, condition, failure_code, failing_check, count(*) AS trials FROM trials "
                  "WHERE valid AND NOT contract_pass GROUP BY ALL ORDER BY trials DESC LIMIT 10;"):
        out.print(f"  {query}")


@main.command("synthesize")
@click.option("--days", type=click.IntRange(1, 366), default=7, show_default=True)
@click.option("--end-date", help="Last day of the window (default today, UTC).")
@click.option("--results-dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Read <dir>/*/run.json instead of the database (e.g. a copy of the results branch).")
@click.option("--slack", is_flag=True, help="Post a summary to SLACK_WEBHOOK_URL (an error without it).")
@click.option("--dry-run", is_flag=True, help="Print the prompt and the computed stats; no model call.")
@click.option("--agent", "agents", multiple=True,
              help="Only this agent runner (repeatable). Default: every real model; replay's recorded sessions "
                   "enter only when named.")
def synthesize_cmd(days: int, end_date: str | None, results_dir: Path | None, slack: bool, dry_run: bool,
                   agents: tuple[str, ...]) -> None:
    """Weekly synthesis: code computes the figures, the pinned model drafts struggles and proposed issues."""
    import datetime as dt

    from mcp_evals_pipeline.synthesis import synthesize

    end = dt.date.fromisoformat(end_date) if end_date else dt.datetime.now(dt.UTC).date()
    try:
        result = synthesize(end_date=end, days=days, results_dir=results_dir, dry_run=dry_run, slack=slack,
                            agents=agents)
    except Exception as exc:
        err.print(f"[red]error:[/] {exc}")
        sys.exit(2)
    if not dry_run:
        out.print(f"synthesis: {result.report_path}")


def _index_findings(con: Any) -> int:
    """The findings and finding_history tables from eval_results/findings/ (the files are the source of truth);
    a malformed file is a skipped index, said so, never a lost database."""
    from mcp_evals_pipeline.findings.store import FindingsError, FindingsStore, index_findings

    try:
        findings = FindingsStore().load()
    except FindingsError as exc:
        err.print(f"[red]findings not indexed:[/] {rich_escape(str(exc))}")
        return 0
    index_findings(con, findings)
    return len(findings)


@main.group("findings", invoke_without_command=True)
@click.option("--status", type=click.Choice(STATUSES),
              help="Only findings whose latest weekly status is this.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.pass_context
def findings_cmd(ctx: click.Context, status: str | None, as_json: bool) -> None:
    """Findings that persist (eval_results/findings/): stable ids, statuses decided by code each synthesis week
    (docs/findings.md). `findings close ID --reason TEXT` records a human decision."""
    if ctx.invoked_subcommand is not None:
        return
    from mcp_evals_pipeline.findings.signature import describe
    from mcp_evals_pipeline.findings.store import FindingsError, FindingsStore

    try:
        findings = FindingsStore().load()
    except FindingsError as exc:
        _input_error(exc)
    shown = [f for f in findings if status is None or f.status == status]
    if as_json:
        click.echo(json.dumps([f.model_dump(mode="json") for f in shown], indent=2))
        return
    table = Table("id", "status", "category", "title", "first seen", "last seen", "signature", "closed",
                  title=f"findings{f' ({status})' if status else ''}: {len(shown)} of {len(findings)}")
    for f in shown:
        table.add_row(f.id, f.status, f.category, rich_escape(f.title), str(f.first_seen), str(f.last_seen),
                      rich_escape("; ".join(describe(i) for i in f.signature.items())),
                      rich_escape(f"{f.closes[-1].by}: {f.closes[-1].reason}") if f.closed else "")
    out.print(table)


@findings_cmd.command("close")
@click.argument("finding_id", metavar="ID")
@click.option("--reason", required=True, help="Why (kept in the finding's file for good).")
@click.option("--by", default=lambda: os.environ.get("USER") or "unknown", show_default="$USER",
              help="Who decided.")
def findings_close(finding_id: str, reason: str, by: str) -> None:
    """Record a human decision on a finding: who, why, when. Kept, never deleted; the finding is no longer shown
    to the synthesis model, and code still reports its status each week."""
    from mcp_evals_pipeline.findings.contract import Close
    from mcp_evals_pipeline.findings.store import FindingsError, FindingsStore
    from mcp_evals_pipeline.findings.weekly import closed_now

    if not reason.strip():
        _input_error("--reason must say why")
    found = FindingsStore()
    try:
        finding = found.get(finding_id)
    except FindingsError as exc:
        _input_error(exc)
    closed = finding.model_copy(update={"closes": [*finding.closes, Close(**closed_now(by, reason.strip()))]})
    path = found.write(closed)
    if database_path().exists():
        with TrialStore().connect() as con:
            _index_findings(con)
    out.print(f"{finding_id} closed by {rich_escape(by)}: {rich_escape(reason.strip())} ({path})")


@main.command("ratchet-floors")
def ratchet_floors() -> None:
    """Raise each agent/model pass-rate floor (build) and each suite x condition x agent/model usage floor to the
    lower Wilson bound of its latest figure; never lower one."""
    from mcp_evals_pipeline.floors import (
        LATEST_PER_SERIES,
        LATEST_USAGE_PER_SERIES,
        load_floors,
        series_name,
        usage_series_name,
    )
    from mcp_evals_pipeline.paths import pass_rate_floors_path
    from mcp_evals_pipeline.sql_models import materialize_models

    floors = load_floors()
    with TrialStore().connect() as con:
        materialize_models(con, names=["stg_trials", "pass_rate", "stg_usage_trials", "usage_trends"])
        rows = con.execute(LATEST_PER_SERIES).fetchall()
        usage = con.execute(LATEST_USAGE_PER_SERIES).fetchall()
    latest = [(series_name(agent, model), low) for _run, agent, model, _rate, low in rows]
    latest += [(usage_series_name(suite, condition, agent, model), low)
               for suite, condition, agent, model, _batch, _rate, low, *_ in usage]
    for series, low in latest:
        if low is not None and float(low) > floors.get(series, 0.0):
            out.print(f"{series}: {floors.get(series, 0.0):.3f} -> {float(low):.3f}")
            floors[series] = round(float(low), 3)
    pass_rate_floors_path().write_text(json.dumps(dict(sorted(floors.items())), indent=2) + "\n")


if __name__ == "__main__":
    main()
