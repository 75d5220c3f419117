"""Runs the CLI submits to the instance for the project's code location, exactly as the UI's launches are.

A batch opens the project's code location (its own code server, `code_server.py`: Dagster's `dagster api grpc`
for mcp_evals_pipeline.definitions with run workers that start warm, under the location name `dg dev` shows) and
creates each run from it, with its code origin and repository tag: the runs then
list under their jobs, in the Timeline and in each asset's history like any launch from the UI. `instance.submit_run`
hands each one to the instance's run coordinator and launcher: with the project's instance config, the default
coordinator and launcher (a local subprocess of the code server per run, no daemon); with deploy/dagster.yaml, the
Docker launcher (a container per run); any other launcher by config. A queued coordinator needs its daemon: a batch
refuses to start without one instead of queueing runs nobody dequeues.

Owners: a run is created with the launching process's owner tags (dagster_instance.owner_tags) and, for the local
launcher, a tag saying so; from its RUN_START on, its owner is the run worker that logged that event (same host,
its pid in the event). `dagster_instance.recover_dead_runs` reads it so, and a kill -9 of the batch or of a worker
leaves runs a later eval recovers. Runs launched elsewhere (containers) are left to Dagster's run monitoring.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.definitions.selector import JobSubsetSelector
from dagster._core.events import DagsterEventType
from dagster._core.storage.tags import AUTO_RETRY_RUN_ID_TAG, WILL_RETRY_TAG

from mcp_evals_pipeline.dagster_instance import (
    LAUNCHER_TAG,
    POOL,
    cancel_stopped_run,
    describe_owner,
    recover_dead_runs,
    worker_start,
)

LOCATION_NAME = "mcp_evals_pipeline"  # pyproject's [tool.dg.project] code_location_name (a test holds them equal)
DEFINITIONS_MODULE = "mcp_evals_pipeline.definitions"
POLL_S = 0.3
HEARTBEAT_TIMEOUT_S = 60
RETRY_TAG_WAIT_S = 10.0  # how long a failed run may lack the tag that says whether Dagster retries it
RETRY_PENDING = "pending"  # _retry_of: a retry is due (or may be) and has no run yet

Echo = Callable[[str], None]


class NoDaemon(ValueError):
    """The instance queues runs and no daemon dequeues them."""


def coordinator_problem(instance: dg.DagsterInstance) -> str | None:
    """Why runs submitted to this instance would never start, or None."""
    from dagster._core.run_coordinator import QueuedRunCoordinator

    if not isinstance(instance.run_coordinator, QueuedRunCoordinator):
        return None
    heartbeats = instance.get_daemon_heartbeats()
    beat = heartbeats.get("QUEUED_RUN_COORDINATOR")
    if beat is not None and time.time() - beat.timestamp < 60:
        return None
    return (f"the Dagster instance at {instance.root_directory} queues runs (QueuedRunCoordinator) and no daemon "
            "dequeues them: start one (`dagster-daemon run`, or `make ui`) or set `run_coordinator: {module: "
            "dagster._core.run_coordinator, class: DefaultRunCoordinator}` in its dagster.yaml")


def is_local_launcher(instance: dg.DagsterInstance) -> bool:
    from dagster._core.launcher import DefaultRunLauncher

    return isinstance(instance.run_launcher, DefaultRunLauncher)


class InstanceRuns:
    """The project's code location, loaded once per batch, and the runs submitted from it."""

    def __init__(self, instance: dg.DagsterInstance) -> None:
        self.instance = instance
        self._stack = ExitStack()
        self._plans: dict[tuple[str, str], tuple[Any, Any]] = {}
        self.local = is_local_launcher(instance)

    def __enter__(self) -> InstanceRuns:
        from dagster._core.workspace.context import WorkspaceProcessContext
        from dagster._core.workspace.load_target import GrpcServerTarget

        if problem := coordinator_problem(self.instance):
            raise NoDaemon(problem)
        try:
            socket = self._stack.enter_context(_code_server())
            process = self._stack.enter_context(WorkspaceProcessContext(
                self.instance, GrpcServerTarget(host="localhost", port=None, socket=socket,
                                                location_name=LOCATION_NAME)))
            self.workspace = process.create_request_context()
            if error := self.workspace.get_code_location_error(LOCATION_NAME):
                raise ValueError(f"the code location {LOCATION_NAME} did not load: {error.message.strip()}")
        except BaseException:
            self._stack.close()
            raise
        self.location = self.workspace.get_code_location(LOCATION_NAME)
        (self.repository,) = self.location.get_repositories().values()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _job_and_plan(self, job_name: str, run_config: Mapping[str, Any]) -> tuple[Any, Any]:
        """The remote job and its execution plan: the same for every run of a job with the same config (the
        partition is a tag), so asked of the code server once per batch."""
        key = (job_name, json.dumps(run_config, sort_keys=True, default=str))
        if key not in self._plans:
            job = self.location.get_job(JobSubsetSelector(location_name=LOCATION_NAME,
                                                          repository_name=self.repository.name, job_name=job_name,
                                                          op_selection=None))
            plan = self.location.get_execution_plan(job, dict(run_config), step_keys_to_execute=None,
                                                    known_state=None, instance=self.instance)
            self._plans[key] = (job, plan.execution_plan_snapshot)
        return self._plans[key]

    def submit(self, job_name: str, run_config: Mapping[str, Any], tags: Mapping[str, str],
               partition_tags: Mapping[str, str] | None = None,
               created: Callable[[str], None] = lambda _run_id: None) -> str:
        """Create the run from the code location (its origin and repository tag as a UI launch has them) and
        submit it to the instance's run coordinator; its id. `created` hears the id before the submission, so an
        interrupt during the launch still finds the run."""
        job, plan = self._job_and_plan(job_name, run_config)
        run = self.instance.create_run(
            job_name=job_name, run_id=None, run_config=dict(run_config), resolved_op_selection=None,
            step_keys_to_execute=plan.step_keys_to_execute, op_selection=None, status=None, root_run_id=None,
            parent_run_id=None,
            tags={**job.tags, **(partition_tags or {}), **tags, **({LAUNCHER_TAG: "local"} if self.local else {})},
            job_snapshot=job.job_snapshot, execution_plan_snapshot=plan, parent_job_snapshot=job.parent_job_snapshot,
            remote_job_origin=job.get_remote_origin(), job_code_origin=job.get_python_origin(),
            asset_selection=None, asset_check_selection=None, asset_graph=self.repository.asset_graph)
        created(run.run_id)
        self.instance.submit_run(run.run_id, self.workspace)
        return run.run_id

    def stop(self, run_ids: Iterable[str], echo: Echo, grace_s: float = 20.0) -> None:
        """SIGINT/SIGTERM of the batch: terminate each run through the launcher (a trial's step is interrupted, its
        agent's box killed, the run ends CANCELED). A local run that runs no step code to take the interrupt
        (waiting for a pool slot, or for its step's retry after an infra attempt), or still there after `grace_s`,
        has its worker killed and is marked CANCELED: it was stopped, it did not crash."""
        live = [r for r in run_ids if (run := self.instance.get_run_by_id(r)) is not None and not run.is_finished]
        for run_id in live:
            echo(f"interrupted: stopping Dagster run {run_id}")
            try:
                self.instance.run_launcher.terminate(run_id)
            except Exception as exc:  # the code server may be gone: the kill below still ends a local run
                echo(f"could not terminate run {run_id} ({type(exc).__name__}: {exc})")
        deadline = time.monotonic() + grace_s
        while live and time.monotonic() < deadline:
            live = [r for r in live if (run := self.instance.get_run_by_id(r)) is not None and not run.is_finished]
            if self.local and self._idle(live) == set(live):
                break
            time.sleep(POLL_S)
        if self.local and live:
            idle = self._idle(live)
            for run_id in live:
                if (pid := worker_start(self.instance, run_id)[0]) is not None:
                    # CANCELED before the kill: the code server fails a run whose worker exits while it is unended
                    why = ("waited for a pool slot or its step's retry, so no step code ran to take the termination "
                           "request" if run_id in idle else f"did not end within {grace_s:g} s of the termination "
                           "request")
                    cancel_stopped_run(self.instance, run_id, f"its worker (pid {pid}) {why}: killed by mcp-evals",
                                       echo)
                    with suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)  # the kernel reaps them; recovery then sees their owners gone
            recover_dead_runs(self.instance, echo)

    def _idle(self, run_ids: Iterable[str]) -> set[str]:
        """Those of the runs whose worker runs no step code: waiting for a `sandbox` pool slot, or their step up for
        retry (Dagster waits out the backoff between steps, where an interrupt is only noted)."""
        info = self.instance.event_log_storage.get_concurrency_info(POOL)
        waiting = info.pending_run_ids - info.active_run_ids
        return {run_id for run_id in run_ids if run_id in waiting or self._up_for_retry(run_id)}

    def _up_for_retry(self, run_id: str) -> bool:
        last = self.instance.get_records_for_run(
            run_id, of_type={DagsterEventType.STEP_START, DagsterEventType.STEP_RESTARTED,
                             DagsterEventType.STEP_UP_FOR_RETRY}, limit=1, ascending=False).records
        return bool(last) and last[0].event_log_entry.dagster_event_type == DagsterEventType.STEP_UP_FOR_RETRY


def wait_for_runs(instance: dg.DagsterInstance, run_ids: Iterable[str],
                  on_end: Callable[[str, dg.DagsterRun | None], None], echo: Echo, until_one: bool = False,
                  say_every: float = 5.0, on_retry: Callable[[str], None] | None = None) -> None:
    """Poll the runs until each has ended (or one has, with `until_one`), telling `on_end` of each by the id it was
    asked with. A run Dagster retries (run_retries: its worker died, a container was killed) has not ended: its
    retry is followed to the end (`on_retry` hears each retry's id), and `on_end` gets the last run. While a run
    waits for a pool slot, say so every `say_every` seconds, naming who holds the slots."""
    asked_for = {run_id: run_id for run_id in run_ids}  # the run followed now -> the id it was asked with
    asked = len(asked_for)
    last_said = 0.0
    failed_at: dict[str, float] = {}
    while asked_for:
        polled = sorted(asked_for)
        seen = instance.get_runs(dg.RunsFilter(run_ids=polled))
        for gone in set(polled) - {run.run_id for run in seen}:
            on_end(asked_for.pop(gone), None)
        for run in seen:
            if not run.is_finished:
                continue
            retry = _retry_of(instance, run, failed_at)
            if retry == RETRY_PENDING:
                continue
            original = asked_for.pop(run.run_id)
            if retry is not None:
                echo(f"Dagster run {run.run_id} failed ({failure_message(instance, run.run_id)[:200]}): "
                     f"Dagster retries it as run {retry}")
                asked_for[retry] = original
                if on_retry is not None:
                    on_retry(retry)
                continue
            on_end(original, run)
        if not asked_for or (until_one and len(asked_for) < asked):
            return
        if time.monotonic() - last_said >= say_every and (line := waiting_line(instance, set(asked_for))):
            echo(line)
            last_said = time.monotonic()
        time.sleep(POLL_S)


def _retry_of(instance: dg.DagsterInstance, run: dg.DagsterRun, failed_at: dict[str, float]) -> str | None:
    """The id of the run Dagster retries a finished run as; None when it is not retried; "pending" while the
    retry is due but not created yet (the daemon creates it), or while the instance has yet to say whether it
    retries (it tags a failed run just after its failure): RETRY_PENDING."""
    if run.status != dg.DagsterRunStatus.FAILURE or not instance.run_retries_enabled:
        return None
    will_retry = run.tags.get(WILL_RETRY_TAG)
    if will_retry is None:
        first = failed_at.setdefault(run.run_id, time.monotonic())
        return RETRY_PENDING if time.monotonic() - first < RETRY_TAG_WAIT_S else None
    if will_retry != "true":
        return None
    return run.tags.get(AUTO_RETRY_RUN_ID_TAG) or RETRY_PENDING


@contextmanager
def _code_server(start_timeout_s: float = 180.0) -> Iterator[str]:
    """The project's code server (code_server.py: warm run workers) on a unix socket in a directory only this user
    can enter, kept alive by heartbeats (it shuts itself down a minute after they stop: a killed batch leaves no
    server behind); the socket's path."""
    from dagster._grpc.client import DagsterGrpcClient

    with tempfile.TemporaryDirectory(prefix="mcp-evals-code-server-") as private:  # mode 0700
        socket = str(Path(private) / "grpc.sock")
        server = subprocess.Popen(
            [sys.executable, "-m", "mcp_evals_pipeline.code_server", "--socket", socket, "-m", DEFINITIONS_MODULE,
             "--location-name", LOCATION_NAME, "--heartbeat", "--heartbeat-timeout", str(HEARTBEAT_TIMEOUT_S),
             "--log-level", "warning"], stdin=subprocess.DEVNULL)
        client = DagsterGrpcClient(socket=socket)
        stop = threading.Event()
        try:
            deadline = time.monotonic() + start_timeout_s
            while True:
                if server.poll() is not None:
                    raise ValueError(f"the code server for {LOCATION_NAME} exited ({server.returncode}) before it "
                                     "answered: its output is above")
                with suppress(Exception):
                    client.ping("")
                    break
                if time.monotonic() > deadline:
                    raise ValueError(f"the code server for {LOCATION_NAME} did not answer in {start_timeout_s:.0f} s")
                time.sleep(0.2)

            def beat() -> None:
                while not stop.wait(HEARTBEAT_TIMEOUT_S / 6):
                    with suppress(Exception):
                        client.heartbeat("mcp-evals")

            threading.Thread(target=beat, name="mcp-evals-code-server-heartbeat", daemon=True).start()
            yield socket
        finally:
            stop.set()
            with suppress(Exception):
                client.shutdown_server()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)


def waiting_line(instance: dg.DagsterInstance, run_ids: set[str]) -> str | None:
    """What a batch says while one of its runs waits for a `sandbox` pool slot, else None."""
    if not instance.event_log_storage.supports_global_concurrency_limits:
        return None
    info = instance.event_log_storage.get_concurrency_info(POOL)
    if not (run_ids & info.pending_run_ids) - info.active_run_ids:
        return None
    holders = []
    for run_id in sorted(info.active_run_ids):
        holder = instance.get_run_by_id(run_id)
        status = holder.status.value if holder else "deleted"
        holders.append(f"{run_id} ({status}, {describe_owner(holder.tags, instance, run_id) if holder else '-'})")
    return (f"waiting for a free `{POOL}` pool slot: {len(info.claimed_slots)} of {info.slot_count} held "
            f"by runs {', '.join(holders) or '-'}")


def events_of(instance: dg.DagsterInstance, run_id: str, kind: DagsterEventType) -> list[Any]:
    return [r.event_log_entry for r in instance.get_records_for_run(run_id, of_type=kind).records]


def failure_message(instance: dg.DagsterInstance, run_id: str) -> str:
    """Why a run failed: its first step failure's message, else the run failure's."""
    for entry in events_of(instance, run_id, DagsterEventType.STEP_FAILURE):
        error = entry.dagster_event.step_failure_data.error
        if error is not None:
            return error.message.strip()
    for entry in events_of(instance, run_id, DagsterEventType.RUN_FAILURE):
        return (entry.message or entry.user_message or "?").strip()
    return "?"


def materialization(instance: dg.DagsterInstance, run_id: str, asset: str) -> dg.AssetMaterialization | None:
    for entry in events_of(instance, run_id, DagsterEventType.ASSET_MATERIALIZATION):
        mat = entry.dagster_event.event_specific_data.materialization
        if mat.asset_key == dg.AssetKey(asset):
            return mat
    return None


def check_evaluations(instance: dg.DagsterInstance, run_id: str) -> list[Any]:
    return [e.dagster_event.event_specific_data
            for e in events_of(instance, run_id, DagsterEventType.ASSET_CHECK_EVALUATION)]
