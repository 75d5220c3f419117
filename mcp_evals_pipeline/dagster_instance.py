"""The project-local Dagster instance as the CLI uses it: opened once under a file lock, its runs owned by processes
it can check, and no wait on the `sandbox` pool that is silent or deaf to signals.

- `open_instance`: the first use of a fresh DAGSTER_HOME creates (or migrates) the sqlite schemas of run,
  event-log and schedule storage; several processes doing that at once corrupt it (alembic heads, tables that
  already exist). Every CLI process opens the instance under one file lock, so the first creates the schema and
  the pool's slots and the others find them.
- Owner tags: every run the CLI launches carries the host, pid and create time of the process executing it
  (`owner_tags`), so `recover_dead_runs` can tell a run whose process is gone (kill -9, OOM, a lost terminal)
  from one still running elsewhere, and a reused pid cannot pass for its predecessor.
- `recover_dead_runs` (at the start of every `eval`): such runs are marked failed and their pool slots freed, as
  are slots still held by runs that ended or no longer exist. Runs without owner tags (launched from the UI or by
  the daemon) are left to Dagster's run monitoring, which the DAGSTER_YAML written here enables.
- `RunWatch`: Dagster's in-process executor waits for a pool slot in a loop that logs once every 5 minutes and,
  inside `capture_interrupts`, only records SIGINT/SIGTERM (it re-raises them when a step's user code starts,
  which never happens while it waits). A watcher thread says every few seconds who holds the slots, and when an
  interrupt stays pending it marks the run failed, frees its claim and ends the process.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

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
LAUNCH_TAG = "mcp-evals/launch"  # one token per launch, so a watcher finds the run it watches

# Exit status of a process stopped by SIGINT/SIGTERM while Dagster held the signal (the shell's 128 + SIGINT).
INTERRUPTED_EXIT = 130

DAGSTER_YAML = """\
# Written by mcp-evals on first use; edit freely.
telemetry:
  enabled: false
nux:
  # The webserver's first-visit community modal: off, it stands between a user and the runs they came to read.
  enabled: false
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
            partial = home / f".dagster.yaml.{os.getpid()}"
            partial.write_text(DAGSTER_YAML)
            os.replace(partial, config)
        # Building the instance builds its storages, whose constructors create or migrate the sqlite schemas.
        instance = dg.DagsterInstance.get()
        _initialize_pool(instance)
    return instance


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


def launch_tags(tags: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """(token, tags) for one launch from this process: its owner and a token a watcher can find the run by."""
    token = uuid.uuid4().hex
    return token, {**tags, **owner_tags(), LAUNCH_TAG: token}


def owner_state(tags: Mapping[str, str]) -> str:
    """`alive`, `dead` (the process is gone, a zombie, or its pid now belongs to another process) or `unknown`
    (no owner recorded, or one on another host)."""
    host, pid, started = (tags.get(t) for t in (OWNER_HOST_TAG, OWNER_PID_TAG, OWNER_STARTED_TAG))
    if not (host and pid and started) or host != socket.gethostname():
        return "unknown"
    try:
        process = psutil.Process(int(pid))
        if process.status() == psutil.STATUS_ZOMBIE or abs(process.create_time() - float(started)) > 1.0:
            return "dead"
    except psutil.NoSuchProcess:
        return "dead"
    except (ValueError, psutil.Error):
        return "unknown"
    return "alive"


def describe_owner(tags: Mapping[str, str]) -> str:
    if not tags.get(OWNER_PID_TAG):
        return "no owner recorded (launched from the UI or an older mcp-evals)"
    return f"pid {tags[OWNER_PID_TAG]} on {tags.get(OWNER_HOST_TAG, '?')}, {owner_state(tags)}"


# ---- recovery ---------------------------------------------------------------------------------------------------

IN_FLIGHT = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
             dg.DagsterRunStatus.CANCELING]


def recover_dead_runs(instance: dg.DagsterInstance, echo: Echo = _stderr) -> list[str]:
    """Mark failed every in-flight run whose owner process is gone, and free the pool slots it held, or that any
    ended (or deleted) run still holds. Returns the ids of the runs marked failed."""
    from dagster._core.events import JobFailureData, RunFailureReason

    storage = instance.event_log_storage
    slots = storage.supports_global_concurrency_limits
    recovered = []
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=IN_FLIGHT)):
        run = record.dagster_run
        if owner_state(run.tags) != "dead":
            continue
        why = (f"its process (pid {run.tags[OWNER_PID_TAG]} on {run.tags[OWNER_HOST_TAG]}) is gone: killed or "
               "crashed without ending the run; marked failed by mcp-evals")
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


# ---- watching a launch ------------------------------------------------------------------------------------------


class RunWatch:
    """Watch the run one `dg.materialize` in this process's main thread is executing (found by its launch tag):
    while it waits for a pool slot, say so every `say_every` seconds, naming the runs that hold the slots; when
    SIGINT/SIGTERM reached Dagster's capturing handler and stayed unhandled for `grace` seconds (no step code
    runs to raise it: the run waits for a slot or a retry), mark the run failed, free its claim and exit."""

    def __init__(self, instance: dg.DagsterInstance, token: str, echo: Echo = _stderr, *, pool: str = POOL,
                 say_every: float = 5.0, check_every: float = 1.0, grace: float = 2.0,
                 exit: Callable[[int], Any] = os._exit):
        self.instance, self.token, self.echo, self.pool = instance, token, echo, pool
        self.say_every, self.check_every, self.grace, self._exit = say_every, check_every, grace, exit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="mcp-evals-run-watch", daemon=True)
        self._run: dg.DagsterRun | None = None

    def __enter__(self) -> RunWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _find_run(self) -> dg.DagsterRun | None:
        if self._run is None:
            runs = self.instance.get_runs(filters=dg.RunsFilter(tags={LAUNCH_TAG: self.token}), limit=1)
            self._run = runs[0] if runs else None
        return self._run

    def waiting_line(self) -> str | None:
        """The line to print if the run waits for a slot of the pool, else None."""
        run = self._find_run()
        if run is None:
            return None
        info = self.instance.event_log_storage.get_concurrency_info(self.pool)
        if run.run_id not in info.pending_run_ids or run.run_id in info.active_run_ids:
            return None
        holders = []
        for run_id in sorted(info.active_run_ids):
            holder = self.instance.get_run_by_id(run_id)
            tags = holder.tags if holder else {}
            status = holder.status.value if holder else "deleted"
            holders.append(f"{run_id} ({status}, {describe_owner(tags)})")
        return (f"waiting for a free `{self.pool}` pool slot: {len(info.claimed_slots)} of {info.slot_count} held "
                f"by runs {', '.join(holders) or '-'}")

    def _loop(self) -> None:
        from dagster._utils.interrupts import check_captured_interrupt

        last_said = last_checked = 0.0
        interrupted_since: float | None = None
        while not self._stop.wait(0.2):
            now = time.monotonic()
            if not check_captured_interrupt():
                interrupted_since = None
            elif interrupted_since is None:
                interrupted_since = now
            elif now - interrupted_since >= self.grace:
                self._interrupted()
                return
            if now - last_checked < self.check_every:
                continue
            last_checked = now
            try:
                line = self.waiting_line()
            except Exception as exc:  # the watch never breaks the run it watches
                line = None
                self.echo(f"(pool watch: {type(exc).__name__}: {exc})")
            if line and now - last_said >= self.say_every:
                self.echo(line)
                last_said = now

    def _interrupted(self) -> None:
        run = self._find_run()
        self.echo("interrupted: stopping" + (f" Dagster run {run.run_id}" if run else "") + " (SIGINT/SIGTERM)")
        if run is not None:
            try:
                current = self.instance.get_run_by_id(run.run_id)
                if current is not None and not current.is_finished:
                    self.instance.report_run_failed(current, "interrupted (SIGINT/SIGTERM) while no step was "
                                                             "running (waiting for a pool slot or a retry)")
                if self.instance.event_log_storage.supports_global_concurrency_limits:
                    self.instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
            except Exception as exc:  # still exit: the next eval recovers the run
                self.echo(f"could not mark run {run.run_id} failed ({type(exc).__name__}: {exc})")
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        self._exit(INTERRUPTED_EXIT)
