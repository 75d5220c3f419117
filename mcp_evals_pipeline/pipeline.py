"""A batch driven from the CLI: Dagster runs submitted to the instance for the project's code location, so they
show in the UI (under their jobs, in the Timeline, in each asset's history) exactly as its own launches do.

First the catalog run (the lineage root), then one run per trial partition (the same unit a backfill or the baseline
schedule launches), then one run for the checks of every trial and one for the SQL models and the batch scorecard.
Each is executed by the instance's run coordinator and launcher (launched_runs.py): a local subprocess per run by
default, a container with deploy/dagster.yaml. `parallel` trial runs are in flight at once (live agents mostly wait
on their model); servers take free ports and the DuckDB writes are serialized across processes, so trials side by
side do not disturb each other.

Before anything runs, runs of the instance whose process is gone (a batch or a run worker killed with kill -9) are
marked failed and their pool slots freed (`dagster_instance.recover_dead_runs`). SIGINT/SIGTERM stop the batch: no
further run is submitted and the runs in flight are terminated through the launcher (`InstanceRuns.stop`).
`resume` skips the trials whose current attempt on disk is valid for the same spec (`trials.finished_for`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import dagster as dg
from pydantic import Field

from mcp_evals_pipeline.agents import agent_entry
from mcp_evals_pipeline.batch_calendar import BATCH_DAYS, FIRST_BATCH
from mcp_evals_pipeline.conditions import CONDITIONS, Condition
from mcp_evals_pipeline.dagster_instance import owner_tags, recover_dead_runs
from mcp_evals_pipeline.defs.partitions import batch_date_partitions, multi_key, register_trial_keys, trial_partitions
from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.heartbeat import heartbeat
from mcp_evals_pipeline.ids import check_id
from mcp_evals_pipeline.kinds import kind_of
from mcp_evals_pipeline.launched_runs import (
    InstanceRuns,
    check_evaluations,
    failure_message,
    materialization,
    wait_for_runs,
)
from mcp_evals_pipeline.paths import runs_dir
from mcp_evals_pipeline.sandbox import SandboxError, require_isolation
from mcp_evals_pipeline.sandbox.choice import box_unavailable, choose_backend
from mcp_evals_pipeline.sandbox.preflight import preflight
from mcp_evals_pipeline.store import row_writer
from mcp_evals_pipeline.tasks.catalog import Task, Tier, discover_tasks, get_task, in_tier
from mcp_evals_pipeline.tasks.suites import load_suites
from mcp_evals_pipeline.trial_options import TrialOptions
from mcp_evals_pipeline.trials import (
    MAX_TRIALS,
    RecordNotIndexed,
    TrialSpec,
    current_record,
    finished_for,
    parse_trial_key,
    reindex_recorded,
    run_id_for,
    trial_key,
)
from mcp_evals_pipeline.verify import Gate, ProofScope, VerifyResult, verify_gate
from mcp_evals_pipeline.versions import GRADER_VERSION

# The console shows one line per trial; Dagster's own event log stays in the instance (and the UI).
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


class BatchRequest(TrialOptions):
    """A batch: every task x condition x trial, each run with the same trial options (trial_options.py)."""

    conditions: list[str] = Field(default_factory=list)  # none: each task kind's baseline (noskill+blank, bare)
    trials: int = 1
    task_ids: list[str] = Field(default_factory=list)
    batch_date: str | None = None
    verify: bool = True
    parallel: int = 1  # trial runs at once
    resume: bool = False  # skip trials whose current attempt is valid for the same spec
    tier: Tier | None = None  # only the tasks of this tier (of the selection, or of every usage case)


def _trial_keys(tasks: list[Task], conditions: list[str], trials: int) -> list[str]:
    """Every task x condition x trial the batch runs: each kind under its own conditions (the named ones it
    supports, else its baseline). Refuses a condition a task cannot have and a selection that leaves nothing."""
    parsed = [Condition.parse(c) for c in conditions]  # an unknown name is refused with the known ones
    if not 1 <= trials <= MAX_TRIALS:
        raise ValueError(f"--trials must be between 1 and {MAX_TRIALS} (MCP_EVALS_MAX_TRIALS)")
    keys = []
    for task in tasks:
        kind = kind_of(task.kind)
        for condition in [c for c in parsed if kind.supports(c)] if parsed else [Condition.parse(kind.baseline)]:
            if problem := kind.condition_problem(task, condition):
                raise ValueError(f"{task.id} --condition {condition.name}: {problem}")
            keys += [trial_key(task.id, condition.name, n) for n in range(1, trials + 1)]
    if not keys:
        kinds = sorted({t.kind for t in tasks})
        raise ValueError(f"no trial to run: no condition of {', '.join(conditions)} applies to the selected "
                         f"{' and '.join(kinds)} tasks ({'; '.join(_conditions_of(k) for k in kinds)})")
    return keys


def _conditions_of(kind: str) -> str:
    return f"{kind} tasks run under {', '.join(c for c in CONDITIONS if Condition.parse(c).kind == kind)}"


@dataclass
class BatchOutcome:
    batch_date: str
    run_id: str
    trial_runs: int
    failed_runs: int
    reports: list[Path]
    skipped: int = 0  # trials --resume found finished
    broken_runs: list[str] = field(default_factory=list)  # runs of the batch date whose scorecard failed
    keys: list[str] = field(default_factory=list)  # every trial key the batch asked for (skipped ones included)


GATE_LINES = 10  # failures named one by one; `mcp-evals verify-tasks` lists them all


def gate_failure(bad: list[VerifyResult]) -> str:
    """What the verify gate says when solutions were not graded as declared: a cause every failure shares (the
    same infra code and reason: a host that cannot box, a registry down) once with its count; else the first
    failures one by one, each with its reason, and how many more."""
    causes = {(r.got, r.why) for r in bad}
    if len(causes) == 1:
        got, why = next(iter(causes))
        if got.startswith("infra.") and why:
            return f"all {len(bad)} solution(s) of {len({r.task_id for r in bad})} task(s) got {got}: {why}"
    named = "; ".join(f"{r.task_id} {r.solution.kind}:{r.solution.name} expected {r.expected}, got {r.got}"
                      + (f" ({r.why[:200]})" if r.why else "") for r in bad[:GATE_LINES])
    more = f"; and {len(bad) - GATE_LINES} more (`mcp-evals verify-tasks` lists them)" if len(bad) > GATE_LINES else ""
    return named + more


def _prove(tasks: list[Task], scope: ProofScope, echo: Callable[[str], None]) -> Gate:
    """The gate before any agent runs, one progress line per graded solution (a first run grades for minutes). An
    agent that plays recorded sessions spends nothing, so its gate proves what they rest on (verify.replay_selection)
    in the tasks it runs; a live agent's proves every solution."""
    total = 0

    def start(todo: list[Task]) -> None:  # the gate's selection, known before anything is graded
        nonlocal total
        total = sum(len(t.solutions) for t in todo)
        if total and scope == "replay":
            echo(f"verify-tasks: the agent plays recorded sessions (it spends nothing), so the gate proves what they "
                 f"rest on in {len(todo)} task(s): {total} solution(s), each build task's golden and each usage "
                 f"case's oracle and played sessions; a live agent's gate, and `mcp-evals verify-tasks`, prove every "
                 f"solution")
        elif total:
            echo(f"verify-tasks: proving {len(todo)} task(s) before any agent runs: {total} solution(s)")

    done = 0

    def status(elapsed: float) -> str:
        first = " (the first gradings build the grader's toolchain and environments)" if not done else ""
        return f"  ... {done} of {total} graded, {elapsed:.0f}s elapsed{first}"

    with heartbeat(echo, status) as beat:
        def progress(result: VerifyResult) -> None:
            nonlocal done
            done += 1
            beat.said()
            echo(f"  [{done:>{len(str(total))}}/{total}] {'ok  ' if result.ok else 'FAIL'} {result.task_id} "
                 f"{result.solution.label} ({result.seconds:.1f}s; {beat.elapsed():.0f}s elapsed)")

        return anyio.run(lambda: verify_gate(tasks, workers=3, scope=scope, on_start=start, on_result=progress))


@dataclass(frozen=True)
class CheckedBatch:
    """A batch request whose every argument was checked: what run_batch needs of them."""

    tasks: list[Task]
    keys: list[str]
    batch_date: str
    run_id: str


def check_request(request: BatchRequest) -> CheckedBatch:
    """Every argument of a batch (ids, tasks, conditions, agent, credentials, batch date, a box for agent code)
    checked, writing nothing: the CLI asks before it creates the Dagster instance, run_batch asks again."""
    no_box = preflight()
    if no_box:
        raise ValueError(no_box)
    row_writer()  # MCP_EVALS_ROW_WRITER: a ValueError naming it for a value that is not a row writer
    if request.batch_id is not None:
        check_id(request.batch_id, "batch id")  # it names the run directory: refused before anything is written
    for task_id in request.task_ids:
        check_id(task_id, "task id")
    # Without a selection, the build tasks (what a bare `eval` has always run): a usage batch
    # is asked for by name (--suite ops-platform), as `make run`'s second batch does.
    tasks = ([get_task(t) for t in request.task_ids] if request.task_ids
             else [t for t in discover_tasks()[0] if t.kind == ("usage" if request.tier else "build")])
    if request.tier is not None:
        suites = load_suites()
        tasks = [t for t in tasks if in_tier(t, request.tier, suites)]
        if not tasks:
            raise ValueError(f"no task of the selection is in tier {request.tier!r}")
    keys = _trial_keys(tasks, request.conditions, request.trials)
    entry = agent_entry(request.agent)  # UnknownRunner (a ValueError) naming the registered agents
    model = request.model or entry.pin.model
    entry.runner().check_credentials(model)
    if request.require_isolation:
        require_isolation(request.require_isolation)  # refuse before any verify or agent spend
    box = choose_backend(request.agent, request.sandbox)
    if (no_agent_box := box_unavailable(box)) is not None:
        raise SandboxError(no_agent_box)  # every trial would end infra.sandbox: refused before any spend
    batch_date = request.batch_date or batch_date_partitions.get_last_partition_key()
    if batch_date is None or not batch_date_partitions.has_partition_key(batch_date):
        raise ValueError(f"{batch_date!r} is not a batch date ({BATCH_DAYS} from {FIRST_BATCH})")
    return CheckedBatch(tasks, keys, batch_date, run_id_for(request.batch_id or batch_date, request.agent, model))


class _Launches:
    """The batch's runs through InstanceRuns, with the ids still in flight (what SIGINT/SIGTERM stops)."""

    def __init__(self, runs: InstanceRuns, store: EvalStore, tags: dict[str, str], echo: Callable[[str], None]):
        self.runs, self.echo, self.live = runs, echo, set[str]()
        # Local runs: the launching process owns each one until its worker starts it (dagster_instance.owner_state);
        # runs in containers or elsewhere are Dagster's run monitoring's to recover.
        self.tags = {**tags, **(owner_tags() if runs.local else {})}
        self.resources = {"resources": {"eval_store": {"config": {"database": store.database,
                                                                  "runs_root": store.runs_root,
                                                                  "row_writer": store.row_writer}}}}

    def submit(self, job_name: str, config: dict[str, Any], partition_tags: dict[str, str] | None = None) -> str:
        return self.runs.submit(job_name, {**config, **QUIET}, self.tags, partition_tags, created=self.live.add)

    def one(self, job_name: str, config: dict[str, Any],
            partition_tags: dict[str, str] | None = None) -> tuple[str, dg.DagsterRun | None]:
        """Submit one run and wait for it: its id and its end (None: deleted while it ran)."""
        run_id = self.submit(job_name, config, partition_tags)
        ended: list[dg.DagsterRun | None] = []
        self.wait([run_id], lambda _id, run: ended.append(run))
        return self.ended(run_id, ended[0]), ended[0]

    def wait(self, run_ids: list[str], on_end: Callable[[str, dg.DagsterRun | None], None],
             until_one: bool = False) -> None:
        """wait_for_runs, with each retry Dagster makes of a run in flight (what SIGINT/SIGTERM stops)."""
        wait_for_runs(self.runs.instance, run_ids, on_end, self.echo, until_one, on_retry=self.live.add)

    def ended(self, run_id: str, run: dg.DagsterRun | None) -> str:
        """The id of the run's end (Dagster's retry of it, when it made one), neither of them in flight any more."""
        last = run.run_id if run is not None else run_id
        self.live.difference_update({run_id, last})
        return last


@contextlib.contextmanager
def _stop_on_signal(launches: _Launches) -> Iterator[None]:
    """SIGTERM stops the batch like SIGINT does: nothing more is submitted and the runs in flight are stopped."""
    previous = (signal.signal(signal.SIGTERM, signal.default_int_handler)
                if threading.current_thread() is threading.main_thread() else None)
    try:
        yield
    except KeyboardInterrupt:
        launches.runs.stop(sorted(launches.live), launches.echo)
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run_trials(launches: _Launches, batch_date: str, config: dict[str, Any], parallel: int, keys: list[str],
                offset: int, say: Callable[[int, str, TrialRunOutcome], None]) -> None:
    """Each trial's run, `parallel` in flight at once; `say` hears each outcome as it ends."""
    todo = list(keys)
    live: dict[str, str] = {}  # run id -> trial key
    index = offset
    run_config = {"ops": {"trial": {"config": config}}, **launches.resources}
    while todo or live:
        while todo and len(live) < parallel:
            key = todo.pop(0)
            tags = dict(trial_partitions.get_tags_for_partition_key(multi_key(batch_date, key)))
            live[launches.submit("trials_job", run_config, tags)] = key

        def ended(run_id: str, run: dg.DagsterRun | None) -> None:
            nonlocal index
            index += 1
            say(index, live.pop(run_id), trial_outcome(launches.runs.instance, launches.ended(run_id, run), run))

        launches.wait(list(live), ended, until_one=True)


def trial_outcome(instance: dg.DagsterInstance, run_id: str, run: dg.DagsterRun | None) -> TrialRunOutcome:
    """What a trial run's end says: the outcome its materialization carries, or why the run failed."""
    if run is None:
        return TrialRunOutcome(False, run_id, error=" (the run was deleted while it ran)")
    if run.status != dg.DagsterRunStatus.SUCCESS:
        return TrialRunOutcome(False, run_id, error=f" ({run.status.value}: {failure_message(instance, run_id)[:300]})")
    mat = materialization(instance, run_id, "trial")
    if mat is None:
        return TrialRunOutcome(False, run_id, error=" (no trial materialization)")
    code = mat.metadata["failure_code"].value
    return TrialRunOutcome(True, run_id, str(mat.metadata["outcome"].value), str(code) if code else None)


def run_batch(request: BatchRequest, instance: dg.DagsterInstance,
              echo: Callable[[str], None] = print, store: EvalStore | None = None) -> BatchOutcome:
    """Validate everything first (check_request), then spend."""
    checked = check_request(request)
    store = store or EvalStore()
    recover_dead_runs(instance, echo)  # a killed batch's runs must not hold the pool's slots forever
    tags = tags_for(request, checked.batch_date)
    with InstanceRuns(instance) as runs:
        launches = _Launches(runs, store, tags, echo)
        with _stop_on_signal(launches):
            return _run_launched(request, launches, checked, store)


def _run_launched(request: BatchRequest, launches: _Launches, checked: CheckedBatch,
                  store: EvalStore) -> BatchOutcome:
    """run_batch once the code location is loaded: the catalog, the gate, the trials, the checks, the reports."""
    tasks, keys, batch_date, run_id = checked.tasks, checked.keys, checked.batch_date, checked.run_id
    instance, echo = launches.runs.instance, launches.echo
    # The lineage root first: the catalog every trial of the batch reads, with its promptHashes, as of now.
    catalog_id, catalog = launches.one("catalog_job", {})
    if catalog is None or catalog.status != dg.DagsterRunStatus.SUCCESS:
        why = "its Dagster run was deleted while it ran" if catalog is None else failure_message(instance, catalog_id)
        raise ValueError(f"task_catalog failed, no agent was run: {why}")
    register_trial_keys(instance, keys)  # the catalog's t1..t3 are there; a --trials 5 batch adds its own

    if request.verify:
        scope: ProofScope = "replay" if agent_entry(request.agent).plays_recordings else "full"
        gate = _prove(tasks, scope, echo)
        if gate.reused:
            proofs = ", ".join(f"{task} {key}" for task, key in sorted(gate.reused.items()))
            echo(f"verify-tasks: {len(gate.reused)} of {len(tasks)} task(s) unchanged since proven (proof keys: task "
                 f"files + grader {GRADER_VERSION} + harness code + toolchain + day: {proofs})")
        if len(gate.reused) < len(tasks):
            echo(f"verify-tasks: proved {len(tasks) - len(gate.reused)} task(s) before any agent runs"
                 + (" (what recorded sessions rest on)" if scope == "replay" else ""))
        if gate.failed:
            raise ValueError("verify-tasks failed, no agent was run: " + gate_failure(gate.failed))

    config = request.trial_options()
    # on every run: which box the agents get, and loudly when it is none
    echo(choose_backend(request.agent, request.sandbox).describe())
    failed = 0
    skipped = 0
    if request.resume:
        todo = []
        for index, key in enumerate(keys, 1):
            done = _finished(request, batch_date, key, store, echo)
            if done:
                skipped += 1
                echo(f"[{index}/{len(keys)}] {key}: skipped, {done} is current and valid for this spec")
            else:
                todo.append(key)
        keys_to_run = todo
    else:
        keys_to_run = keys

    finished = 0

    def say(index: int, key: str, outcome: TrialRunOutcome) -> None:
        nonlocal failed, finished
        finished += 1
        beat.said()
        if not outcome.success:
            failed += 1
            echo(f"[{index}/{len(keys)}] {key}: Dagster run {outcome.run_id} failed{outcome.error}")
        else:
            detail = f" {outcome.failure_code}" if outcome.failure_code else ""
            echo(f"[{index}/{len(keys)}] {key}: {outcome.outcome}{detail}")

    offset = len(keys) - len(keys_to_run)
    def status(elapsed: float) -> str:
        return f"  ... {finished} of {len(keys_to_run)} trial(s) finished, {elapsed:.0f}s elapsed"

    with heartbeat(echo, status) as beat:
        _run_trials(launches, batch_date, config, max(1, request.parallel), keys_to_run, offset, say)

    # The reports run first: it is the one writer of rows the trials left to it (store.ROW_WRITER_ENV), which the
    # checks then find.
    reports_id, reports_run = launches.one(
        "reports_job", launches.resources, dict(batch_date_partitions.get_tags_for_partition_key(batch_date)))
    checks_id, checks_run = launches.one("trial_checks_job", launches.resources)
    if not _succeeded(checks_run):
        failed += 1
    for check in [*check_evaluations(instance, checks_id), *check_evaluations(instance, reports_id)]:
        if not check.passed:
            echo(f"check {check.check_name} on {check.asset_key.to_user_string()} did not pass: "
                 f"{_check_detail(check.metadata)}")
    broken: list[str] = []
    scorecard = materialization(instance, reports_id, "batch_scorecard") if _succeeded(reports_run) else None
    if scorecard is None:
        failed += 1
    else:
        broken = [line for line in str(scorecard.metadata["broken_runs"].value).splitlines()
                  if line and line != "none"]
        for line in broken:
            echo(f"scorecard not written: {line}")
        if any(line.startswith(f"{run_id}: ") for line in broken):
            failed += 1  # this batch's own scorecard
    report = (Path(store.runs_root) if store.runs_root else runs_dir()) / run_id / "report.md"
    return BatchOutcome(batch_date, run_id, len(keys), failed, [report] if report.exists() else [], skipped, broken,
                        keys)


def _finished(request: BatchRequest, batch_date: str, key: str, store: EvalStore,
              echo: Callable[[str], None]) -> str | None:
    """For --resume: what already answers this trial (its current attempt on disk), else None. A finished attempt
    whose row never landed is indexed now."""
    task_id, condition, n = parse_trial_key(key)
    spec = TrialSpec(task_id=task_id, condition=condition, trial=n, batch_date=batch_date,
                     **request.trial_options())
    done = finished_for(spec, current_record(spec, store.runs()))
    if done:
        try:
            reindex_recorded(spec, store=store.store(), results_root=store.runs())
        except RecordNotIndexed as exc:  # still on disk; rebuild-db or the next write indexes it
            echo(f"{key}: {exc}")
    return done


@dataclass
class TrialRunOutcome:
    success: bool
    run_id: str
    outcome: str | None = None  # pass | fail | invalid (the asset's metadata)
    failure_code: str | None = None
    error: str = ""


def tags_for(request: BatchRequest, batch_date: str) -> dict[str, str]:
    return {"mcp-evals/batch": batch_date, "mcp-evals/agent": request.agent}


def job(name: str) -> dg.JobDefinition:
    """A job of the project's definitions (what the UI shows by name), run in this process with the batch's
    store as its resource."""
    from mcp_evals_pipeline.definitions import defs  # lazily: the definitions import every domain module

    return defs.resolve_job_def(name)


def _check_detail(metadata: dict[str, Any]) -> str:
    for name in ("violations", "problems"):
        if name in metadata:
            return " ".join(str(metadata[name].value).split())[:300]
    return "see the Dagster UI"


def _succeeded(run: dg.DagsterRun | None) -> bool:
    """A run that is no longer in the instance when it ends (deleted while it ran, e.g. through the webserver's
    API) failed."""
    return run is not None and run.status == dg.DagsterRunStatus.SUCCESS
