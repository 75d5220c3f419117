"""The project-local Dagster instance as the CLI uses it: opened once under a file lock, its runs owned by processes
it can check.

- `open_instance`: the first use of a fresh DAGSTER_HOME creates (or migrates) the sqlite schemas of run,
  event-log and schedule storage; several processes doing that at once corrupt it (alembic heads, tables that
  already exist). Every CLI process opens the instance under one file lock, so the first creates the schema and
  the pool's slots and the others find them.
- Owner tags: every run the CLI submits carries the host, pid and create time of the process launching it
  (`owner_tags`); once the local launcher's worker has started it, the worker that logged its RUN_START owns it.
  So `recover_dead_runs` can tell a run whose process is gone (kill -9, OOM, a lost terminal) from one still
  running elsewhere, and a reused pid cannot pass for its predecessor.
- `recover_dead_runs` (at the start of every `eval`): such runs are marked failed and their pool slots freed, as
  are slots still held by runs that ended or no longer exist. Runs without owner tags (launched from the UI or by
  the daemon) are left to Dagster's run monitoring, which the DAGSTER_YAML written here enables.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import dagster as dg
import psutil
from filelock import FileLock

from mcp_evals_pipeline.paths import dagster_home

POOL = "sandbox"
INIT_LOCK = ".mcp-evals-init.lock"
INIT_LOCK_TIMEOUT_S = 600

OWNER_HOST_TAG = "mcp-evals/owner-host"
OWNER_PID_TAG = "mcp-evals/owner-pid"
OWNER_STARTED_TAG = "mcp-evals/owner-started"  # the owner's process create time (epoch seconds)
LAUNCHER_TAG = "mcp-evals/launcher"  # "local": executed by a subprocess on the launching host (launched_runs.py)

DAGSTER_YAML = """\
# Written by mcp-evals on first use; edit freely.
telemetry:
  enabled: false
nux:
  # The webserver's first-visit community modal: off, it stands between a user and the runs they came to read.
  enabled: false
run_coordinator:
  # Runs start as soon as they are submitted (the CLI's batches, the UI's launches), no daemon needed. With
  # QueuedRunCoordinator, `dagster-daemon run` (which `make ui` starts) dequeues them.
  module: dagster._core.run_coordinator
  class: DefaultRunCoordinator
concurrency:
  pools:
    # Trials (pool "sandbox") running at once; servers bind free ports, so trials can run side by side.
    default_limit: 2
run_monitoring:
  # The daemon (`make ui` runs one) watches runs launched from the UI or by schedules: with the default run
  # launcher it cannot check a run worker's health, so a run stuck starting, or running past any trial's budget,
  # is failed, and the pool slots of ended runs are freed. Runs the CLI launches carry their owner process in
  # their tags and are recovered at the start of every `mcp-evals eval`.
  enabled: true
  start_timeout_seconds: 300
  max_runtime_seconds: 14400
  # The default run launcher cannot resume a run: a dead run fails (its trial is re-run, never resumed).
  max_resume_run_attempts: 0
  poll_interval_seconds: 60
  free_slots_after_run_end_seconds: 60
"""

COORDINATOR_YAML = DAGSTER_YAML[DAGSTER_YAML.index("run_coordinator:"):DAGSTER_YAML.index("concurrency:")]

Echo = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def open_instance(home: Path | None = None) -> dg.DagsterInstance:
    """The instance at DAGSTER_HOME (default .dagster_home), its config written and its schema created on first
    use, both under a file lock held across the whole initialization."""
    home = Path(home) if home else dagster_home()
    os.environ["DAGSTER_HOME"] = str(home)
    home.mkdir(parents=True, exist_ok=True)
    with FileLock(str(home / INIT_LOCK), timeout=INIT_LOCK_TIMEOUT_S):
        config = home / "dagster.yaml"
        if not config.exists():
            _write(config, DAGSTER_YAML)
        elif (text := config.read_text()).startswith(DAGSTER_YAML.splitlines()[0]) and "run_coordinator:" not in text:
            # Written by an earlier mcp-evals, before batches were submitted to the instance: without this its
            # default (queued) coordinator would wait for a daemon.
            _write(config, text.rstrip("\n") + "\n" + COORDINATOR_YAML)
        # Building the instance builds its storages, whose constructors create or migrate the sqlite schemas.
        instance = dg.DagsterInstance.get()
        _initialize_pool(instance)
    return instance


def _write(config: Path, text: str) -> None:
    partial = config.with_name(f".dagster.yaml.{os.getpid()}")
    partial.write_text(text)
    os.replace(partial, config)


def _initialize_pool(instance: dg.DagsterInstance) -> None:
    """Give the pool its default slots now (as the first claim would), under the lock: concurrent first claims
    race on the slot rows. A limit set by hand (`dagster instance concurrency set`) is left alone."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return
    default = instance.global_op_concurrency_default_limit
    info = {p.name: p for p in storage.get_pool_limits()}.get(POOL)
    if (info is None and default is not None) or (info is not None and info.from_default and info.limit != default):
        storage.initialize_concurrency_limit_to_default(POOL)


# ---- owners -----------------------------------------------------------------------------------------------------


def owner_tags(pid: int | None = None) -> dict[str, str]:
    """Tags naming the process that executes a run (this one by default)."""
    process = psutil.Process(pid or os.getpid())
    return {OWNER_HOST_TAG: socket.gethostname(), OWNER_PID_TAG: str(process.pid),
            OWNER_STARTED_TAG: f"{process.create_time():.2f}"}


def owner_state(tags: Mapping[str, str], instance: dg.DagsterInstance | None = None, run_id: str | None = None) -> str:
    """`alive`, `dead` (the process is gone, a zombie, or its pid now belongs to another process) or `unknown`
    (no owner recorded, or one on another host). A run the local launcher started (its RUN_START logged) is owned by
    the worker that logged it; before that, and for runs executed in their launching process, by the tags' owner."""
    host, pid, started = (tags.get(t) for t in (OWNER_HOST_TAG, OWNER_PID_TAG, OWNER_STARTED_TAG))
    if not (host and pid and started) or host != socket.gethostname():
        return "unknown"
    if instance is not None and run_id is not None and tags.get(LAUNCHER_TAG) == "local":
        worker, at = worker_start(instance, run_id)
        if worker is not None and at is not None:
            return _process_state(worker, lambda created: created > at + 1.0)
    return _process_state(int(pid) if pid.isdigit() else -1, lambda created: abs(created - float(started)) > 1.0)


def _process_state(pid: int, another: Callable[[float], bool]) -> str:
    """`dead` when no such process lives (a zombie counts as gone) or `another(its create time)` says the pid was
    reused; else `alive`."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE or another(process.create_time()):
            return "dead"
    except psutil.NoSuchProcess:
        return "dead"
    except (ValueError, psutil.Error):
        return "unknown"
    return "alive"


def worker_start(instance: dg.DagsterInstance, run_id: str) -> tuple[int | None, float | None]:
    """The pid and time of the run's RUN_START event (the process that started executing it), or Nones."""
    from dagster._core.events import DagsterEventType

    records = instance.get_records_for_run(run_id, of_type=DagsterEventType.RUN_START, limit=1).records
    if not records:
        return None, None
    entry = records[0].event_log_entry
    return (entry.dagster_event.pid if entry.dagster_event else None), entry.timestamp


def describe_owner(tags: Mapping[str, str], instance: dg.DagsterInstance | None = None,
                   run_id: str | None = None) -> str:
    if not tags.get(OWNER_PID_TAG):
        return "no owner recorded (launched from the UI or an older mcp-evals)"
    pid = tags[OWNER_PID_TAG]
    if instance is not None and run_id is not None and tags.get(LAUNCHER_TAG) == "local":
        pid = str(worker_start(instance, run_id)[0] or pid)
    return f"pid {pid} on {tags.get(OWNER_HOST_TAG, '?')}, {owner_state(tags, instance, run_id)}"


# ---- recovery ---------------------------------------------------------------------------------------------------

IN_FLIGHT = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
             dg.DagsterRunStatus.CANCELING]


def cancel_stopped_run(instance: dg.DagsterInstance, run_id: str, why: str, echo: Echo = _stderr) -> None:
    """A run the batch was told to stop and whose worker it killed: CANCELED (stopped, not crashed; a run retry
    policy never retries it), its pool slots freed."""
    run = instance.get_run_by_id(run_id)
    if run is None or run.is_finished:  # it ended by itself before the kill
        return
    instance.report_run_canceled(run, message=why)
    if instance.event_log_storage.supports_global_concurrency_limits:
        instance.event_log_storage.free_concurrency_slots_for_run(run_id)
    echo(f"stopped Dagster run {run_id}: {why}")


def recover_dead_runs(instance: dg.DagsterInstance, echo: Echo = _stderr) -> list[str]:
    """Mark failed every in-flight run whose owner process is gone, and free the pool slots it held, or that any
    ended (or deleted) run still holds. Returns the ids of the runs marked failed."""
    from dagster._core.events import JobFailureData, RunFailureReason

    storage = instance.event_log_storage
    slots = storage.supports_global_concurrency_limits
    recovered = []
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=IN_FLIGHT)):
        run = record.dagster_run
        if owner_state(run.tags, instance, run.run_id) != "dead":
            continue
        pid = worker_start(instance, run.run_id)[0] if run.tags.get(LAUNCHER_TAG) == "local" else None
        why = (f"its process (pid {pid or run.tags[OWNER_PID_TAG]} on {run.tags[OWNER_HOST_TAG]}) is gone: killed "
               "or crashed without ending the run; marked failed by mcp-evals")
        instance.report_run_failed(run, why, JobFailureData(error=None,
                                                            failure_reason=RunFailureReason.UNEXPECTED_TERMINATION))
        if slots:
            storage.free_concurrency_slots_for_run(run.run_id)
        recovered.append(run.run_id)
        echo(f"recovered Dagster run {run.run_id}: {why}")
    if slots:
        info = storage.get_concurrency_info(POOL)
        holders = {s.run_id for s in info.claimed_slots} | {p.run_id for p in info.pending_steps}
        for run_id in sorted(holders | storage.get_concurrency_run_ids()):
            run = instance.get_run_by_id(run_id)
            if run is None or run.is_finished:
                storage.free_concurrency_slots_for_run(run_id)
                echo(f"freed the pool slots of Dagster run {run_id} ({run.status.value if run else 'deleted'})")
    return recovered
