"""A crashed batch never blocks the next one, and the instance survives concurrent first use.

Real `mcp-evals eval` subprocesses against a fresh DAGSTER_HOME, results directory and database under tmp_path:
batches killed with SIGKILL in the middle of a trial (their runs STARTED, holding the `sandbox` pool's two slots),
an eval that finds the pool full (it says so, and SIGTERM stops it), and eight evals opening a fresh instance at
the same moment.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import psutil
import pytest
import yaml
from dagster._core.utils import make_new_run_id

from mcp_evals_pipeline.dagster_instance import (
    DAGSTER_YAML,
    OWNER_PID_TAG,
    POOL,
    describe_owner,
    open_instance,
    owner_state,
    owner_tags,
    recover_dead_runs,
)

from .conftest import REPO, TASKS
from .support.cli_env import cli_env
from .support.openai_server import ScriptedOpenAI, failure
from .support.processes import gone_within, naming, running_under

TASK = "py-v4-01-basic-tool-server"


@pytest.fixture(scope="session")
def pycache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "pycache"


@pytest.fixture
def env(tmp_path: Path, pycache: Path) -> dict[str, str]:
    return cli_env(tmp_path, pycache)


def eval_args(batch_id: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "mcp_evals_pipeline.cli", "eval", "--agent", "replay", "--task", TASK,
            "--no-verify", "--skip-judge", "--batch-id", batch_id, *extra]


class Eval:
    """An `mcp-evals eval` in a session of its own, its stderr collected line by line."""

    def __init__(self, args: list[str], env: dict[str, str]):
        self.proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)

    def wait_for_line(self, text: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [line for line in self.lines if text in line]
            if found:
                return found[0]
            if self.proc.poll() is not None:
                self._reader.join(timeout=5)
                break
            time.sleep(0.1)
        found = [line for line in self.lines if text in line]
        assert found, f"no line with {text!r} within {timeout}s (exit {self.proc.poll()}):\n{self.stderr}"
        return found[0]

    def terminate(self, timeout: float) -> str:
        """SIGTERM, as a user's Ctrl-C or a CI cancel: the eval must exit 130 in time. Its stderr, read whole."""
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=timeout) == 130, self.stderr
        self._reader.join(timeout=10)
        return self.stderr

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)


@pytest.fixture
def evals(tmp_path: Path) -> Iterator[list[Eval]]:
    started: list[Eval] = []
    yield started
    for e in started:
        e.kill()
    # The local sandbox kills a command's whole tree on every path but a SIGKILL of the harness: then only the
    # command's shell gets the parent-death signal, and its children (the session's `sleep`) are orphaned (the
    # local backend's documented limit; hardened and docker boxes die whole). Leave nothing running.
    for proc in running_under(tmp_path):
        with contextlib.suppress(psutil.Error):
            proc.kill()


def slow_task(root: Path, marker: str) -> Path:
    """A copy of TASK whose only session starts a long shell command (carrying `marker`) after writing nothing."""
    shutil.copytree(TASKS / TASK, root / TASK, ignore=shutil.ignore_patterns("sessions"))
    (root / TASK / "sessions").mkdir()
    actions = [{"type": "assistant", "text": "Thinking for a long while."},
               {"type": "tool", "tool": "shell", "args": {"command": f"sleep 300; echo {marker}", "timeout_s": 600}}]
    (root / TASK / "sessions" / "slow.jsonl").write_text("".join(json.dumps(a) + "\n" for a in actions))
    return root


def shells(marker: str) -> list[psutil.Process]:
    """The agents' shells running the slow command (one per trial in its box)."""
    found = []
    for proc in naming(marker):
        with contextlib.suppress(psutil.Error):  # it may end between the listing and the look
            if proc.name() == "bash":
                found.append(proc)
    return found


def wait_for(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def trial_runs_with(home: Path, event: str) -> int:
    """How many trial runs have an event of this type (a DagsterEventType name) in their log."""
    from dagster._core.events import DagsterEventType

    with dg.DagsterInstance.from_config(str(home)) as instance:
        return sum(bool(instance.get_records_for_run(run.run_id, of_type=DagsterEventType[event]).records)
                   for run in instance.get_runs(dg.RunsFilter(job_name="trials_job")))


def trial_workers(home: Path) -> list[psutil.Process]:
    """The live processes executing the trial runs (their RUN_START events' pids)."""
    from mcp_evals_pipeline.dagster_instance import worker_start

    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(dg.RunsFilter(job_name="trials_job"))
        pids = [worker_start(instance, run.run_id)[0] for run in runs]
    assert pids and None not in pids
    return [psutil.Process(pid) for pid in pids if pid is not None]


def pool_holders(home: Path) -> set[str]:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return instance.event_log_storage.get_concurrency_info(POOL).active_run_ids


def test_a_batch_killed_twice_mid_trial_does_not_block_the_next(tmp_path: Path, env: dict[str, str],
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  evals: list[Eval]) -> None:
    """Two batches SIGKILLed mid-trial leave two STARTED runs holding both `sandbox` slots (the default limit is
    2); the next eval marks them failed, frees their slots and completes. Before, it waited forever."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    open_instance(tmp_path / "dh").dispose()  # concurrent first use is the next test's matter
    marker = f"mcp-evals-killed-{uuid.uuid4().hex[:8]}"
    try:
        # Both at once: an eval started after the first kill would already recover the first batch's run.
        for n in (1, 2):
            slow = {**env, "MCP_EVALS_TASKS_DIR": str(slow_task(tmp_path / f"tasks-{n}", f"{marker}-{n}"))}
            evals.append(Eval(eval_args(f"killed-{n}"), slow))
        wait_for(lambda: naming(f"{marker}-1") and naming(f"{marker}-2"), 300, "both batches to be mid-trial")
        for killed in evals:
            killed.kill()
        assert not gone_within(lambda: naming(marker), 30)  # the agent's command died with its harness
        with dg.DagsterInstance.from_config(str(tmp_path / "dh")) as instance:
            stuck = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
            assert len(stuck) == 2 and all(owner_state(r.tags) == "dead" for r in stuck)
            assert instance.event_log_storage.get_concurrency_info(POOL).active_run_ids == {r.run_id for r in stuck}

        done = subprocess.run(eval_args("after"), cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
                              check=False)
    finally:
        for proc in naming(marker):
            proc.kill()
    assert done.returncode == 0, done.stderr
    assert f"[1/1] {TASK}--noskill+blank--t1: fail contract.calls" in done.stderr
    assert done.stderr.count("recovered Dagster run") == 2, done.stderr
    with dg.DagsterInstance.from_config(str(tmp_path / "dh")) as instance:
        runs = [r for r in instance.get_runs() if r.job_name != "catalog_job"]  # each eval's catalog run: SUCCESS
        assert len(runs) == 5  # two killed trials, the trial after them, its trial check and reports runs
        assert sorted(r.status.value for r in runs) == ["FAILURE", "FAILURE", "SUCCESS", "SUCCESS", "SUCCESS"]
        assert instance.event_log_storage.get_concurrency_info(POOL).claimed_slots == []


def test_an_eval_waiting_for_a_pool_slot_says_so_and_stops_on_sigterm(tmp_path: Path, env: dict[str, str],
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      evals: list[Eval]) -> None:
    """A live run (owned by this test's process) holds both slots: the eval prints who holds them every few
    seconds while it waits, and SIGTERM ends it, its run CANCELED and its claim gone. Before, it waited silently
    and ignored SIGTERM and SIGINT."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    with open_instance(tmp_path / "dh") as instance:
        holder = instance.add_run(dg.DagsterRun(job_name="holder", run_id=make_new_run_id(),
                                                status=dg.DagsterRunStatus.STARTED, tags=owner_tags()))
        for step in ("a", "b"):
            assert instance.event_log_storage.claim_concurrency_slot(POOL, holder.run_id, step).is_claimed
    waiting = Eval(eval_args("waits"), env)
    evals.append(waiting)
    first = waiting.wait_for_line("waiting for a free `sandbox` pool slot", 300)
    assert f"2 of 2 held by runs {holder.run_id} (STARTED, pid {os.getpid()}" in first and "alive" in first
    time.sleep(6)  # it keeps saying so
    assert sum("waiting for a free `sandbox` pool slot" in line for line in waiting.lines) >= 2, waiting.stderr
    stderr = waiting.terminate(60)
    assert "interrupted" in stderr and "waited for a pool slot" in stderr, stderr
    with dg.DagsterInstance.from_config(str(tmp_path / "dh")) as instance:
        (run,) = [r for r in instance.get_runs() if r.job_name == "trials_job"]
        assert run.status == dg.DagsterRunStatus.CANCELED  # stopped, not crashed: no run retry policy reruns it
        info = instance.event_log_storage.get_concurrency_info(POOL)
        assert info.active_run_ids == {holder.run_id} and info.pending_run_ids == set()
    assert not list((tmp_path / "results").glob("runs/*/trials/*/transcript.jsonl"))  # no trial ever started


@pytest.mark.parametrize("parallel", [1, 2], ids=["one-run", "two-runs"])
def test_sigterm_mid_trial_stops_the_batch(tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                           evals: list[Eval], parallel: int) -> None:
    """SIGTERM while trials run (one or two runs in flight, each in its run worker) terminates their runs through
    the instance's launcher (they end CANCELED), kills their agents' commands and stops the batch: no further trial
    starts and no pool slot stays held. Before, an in-process batch failed the one run and went on with the next
    trial."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    open_instance(tmp_path / "dh").dispose()
    marker = f"mcp-evals-stopped-{uuid.uuid4().hex[:8]}"
    slow = {**env, "MCP_EVALS_TASKS_DIR": str(slow_task(tmp_path / "tasks", marker))}
    stopped = Eval(eval_args("stopped", "--trials", "2", "--parallel", str(parallel)), slow)
    evals.append(stopped)
    try:
        # each trial's agent command runs: one shell per trial (its nsenter wrapper names the marker too; counted,
        # it let the stop land while the second trial still made its box)
        home = tmp_path / "dh"
        wait_for(lambda: len(shells(marker)) == parallel and trial_runs_with(home, "STEP_START") == parallel, 300,
                 f"{parallel} trial(s) to be running")
        # each run's worker was forked warm from the code server's forkserver (code_server.py), not spawned cold
        workers = trial_workers(tmp_path / "dh")
        assert all("multiprocessing.forkserver" in " ".join(worker.cmdline()) for worker in workers)
        stopped.terminate(120)
        assert not gone_within(lambda: naming(marker), 30)
    finally:
        for proc in naming(marker):
            proc.kill()
    assert "interrupted" in stopped.stderr
    with dg.DagsterInstance.from_config(str(tmp_path / "dh")) as instance:
        runs = [r for r in instance.get_runs() if r.job_name == "trials_job"]
        assert len(runs) == parallel and {r.status for r in runs} == {dg.DagsterRunStatus.CANCELED}, stopped.stderr
        info = instance.event_log_storage.get_concurrency_info(POOL)
        assert info.claimed_slots == [] and info.pending_steps == []


def test_sigterm_while_a_trial_waits_for_its_retry_cancels_its_run_at_once(tmp_path: Path, env: dict[str, str],
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          evals: list[Eval]) -> None:
    """An infra attempt (here the model endpoint answers 503) is retried after a backoff Dagster waits out between
    steps, where an interrupt is only noted. SIGTERM then: the run's worker is killed at once and the run is CANCELED
    (the user stopped it), its slot freed. Before, the batch waited 20 s and recovered it as a crashed run (FAILURE,
    which a run retry policy would run again)."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    open_instance(tmp_path / "dh").dispose()
    with ScriptedOpenAI(lambda _body: failure(503, "down for now")) as api:
        args = [a if a != "replay" else "openai" for a in eval_args("backoff")]
        stopped = Eval(args, {**env, "OPENAI_BASE_URL": api.base_url, "OPENAI_API_KEY": "sk-test-not-a-key"})
        evals.append(stopped)
        wait_for(lambda: trial_runs_with(tmp_path / "dh", "STEP_UP_FOR_RETRY"), 300,
                 "the trial's step to be up for retry")
        stderr = stopped.terminate(120)
    assert "retry 1/2 in 30s" in stderr and "stopped Dagster run" in stderr, stderr
    with dg.DagsterInstance.from_config(str(tmp_path / "dh")) as instance:
        (run,) = [r for r in instance.get_runs() if r.job_name == "trials_job"]
        assert run.status == dg.DagsterRunStatus.CANCELED, stderr
        info = instance.event_log_storage.get_concurrency_info(POOL)
        assert info.claimed_slots == [] and info.pending_steps == []


CONCURRENT = 4


@pytest.mark.long
def test_concurrent_first_uses_of_a_fresh_instance_all_succeed(tmp_path: Path, env: dict[str, str]) -> None:
    """Four evals started together on an empty DAGSTER_HOME: one creates the schemas under the init lock, the
    others find them. Before, six of eight died on `alembic_version has more than one head` or `table job_ticks
    already exists` (any second process racing the first did: four keep the race and halve the test's time)."""
    # Compiled once beforehand (see support/cli_env.py), so all eight reach the instance at about the same moment.
    warm = subprocess.run([sys.executable, "-c", "import mcp_evals_pipeline.cli, mcp_evals_pipeline.pipeline"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert warm.returncode == 0, warm.stderr
    assert not (tmp_path / "dh").exists()
    procs = [subprocess.Popen(eval_args(f"first-use-{n}"), cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for n in range(CONCURRENT)]
    results = [(p.wait(timeout=900), *p.communicate()) for p in procs]
    for code, _out, err in results:
        assert code == 0, err
        assert f"[1/1] {TASK}--noskill+blank--t1: fail contract.calls" in err
    with dg.DagsterInstance.from_config(str(tmp_path / "dh")) as instance:
        runs = instance.get_runs()
    # each eval: its catalog, its trial, its trial check and its reports run
    assert len(runs) == 4 * CONCURRENT and {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}


# ---- the pieces -------------------------------------------------------------------------------------------------


def test_an_owner_is_dead_when_its_process_is_gone_or_its_pid_was_reused() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        tags = owner_tags(child.pid)
        assert owner_state(tags) == "alive"
        assert owner_state({**tags, "mcp-evals/owner-started": str(float(tags["mcp-evals/owner-started"]) - 60)}) \
            == "dead"  # the same pid, another process
        assert owner_state({**tags, "mcp-evals/owner-host": "elsewhere"}) == "unknown"
        assert owner_state({}) == "unknown" and "no owner" in describe_owner({})
    finally:
        child.kill()
        child.wait()
    assert owner_state(tags) == "dead"
    assert not psutil.pid_exists(child.pid) or psutil.Process(child.pid).create_time() != float(
        tags["mcp-evals/owner-started"])


def test_recovery_fails_dead_runs_frees_their_slots_and_leaves_live_and_foreign_runs(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    (tmp_path / "dagster.yaml").write_text(DAGSTER_YAML)
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        def run(tags: dict[str, str], status: dg.DagsterRunStatus = dg.DagsterRunStatus.STARTED) -> str:
            return instance.add_run(dg.DagsterRun(job_name="j", run_id=make_new_run_id(), status=status,
                                                  tags=tags)).run_id

        dead, live, foreign = run(owner_tags() | {OWNER_PID_TAG: str(child.pid)}), run(owner_tags()), run({})
        ended = run({}, dg.DagsterRunStatus.SUCCESS)
        storage = instance.event_log_storage
        storage.set_concurrency_slots(POOL, 4)
        for run_id in (dead, live, foreign, ended):
            assert storage.claim_concurrency_slot(POOL, run_id, "trial").is_claimed
        lines: list[str] = []
        assert recover_dead_runs(instance, lines.append) == [dead]
        assert instance.get_run_by_id(dead).status == dg.DagsterRunStatus.FAILURE
        assert {instance.get_run_by_id(r).status for r in (live, foreign)} == {dg.DagsterRunStatus.STARTED}
        assert storage.get_concurrency_info(POOL).active_run_ids == {live, foreign}
        assert any(dead in line and "is gone" in line for line in lines)
        assert any(ended in line and "SUCCESS" in line for line in lines)


def test_the_instance_config_enables_run_monitoring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dagster's daemon watches runs launched from the UI: as far as the default run launcher allows (no health
    checks, no resume): start timeout, maximum runtime, slots of ended runs freed."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with open_instance(tmp_path) as instance:
        assert instance.run_monitoring_enabled and instance.run_monitoring_max_resume_run_attempts == 0
        assert "MONITORING" in instance.get_required_daemon_types()
        assert instance.global_op_concurrency_default_limit == 2
        assert {p.name: p.limit for p in instance.event_log_storage.get_pool_limits()} == {POOL: 2}
    assert yaml.safe_load(DAGSTER_YAML)["run_monitoring"]["free_slots_after_run_end_seconds"] > 0


def test_a_locally_launched_run_is_owned_by_the_worker_that_started_it(tmp_path: Path) -> None:
    """The launching process owns a run until its worker logs RUN_START; from then on the worker does: a dead
    worker is recovered although the eval that launched it lives, and a live worker is left alone although its
    eval is gone (a launched run outlives the process that submitted it)."""
    from dagster._core.events import DagsterEvent, DagsterEventType

    from mcp_evals_pipeline.dagster_instance import LAUNCHER_TAG, worker_start

    dead_worker = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_worker.wait()
    live_worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone_eval = subprocess.Popen([sys.executable, "-c", "pass"])
    gone_eval.wait()
    (tmp_path / "dagster.yaml").write_text(DAGSTER_YAML)
    try:
        with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
            def launched(owner: dict[str, str], worker: int | None) -> str:
                run = instance.add_run(dg.DagsterRun(job_name="trials_job", run_id=make_new_run_id(),
                                                     status=dg.DagsterRunStatus.STARTED,
                                                     tags={**owner, LAUNCHER_TAG: "local"}))
                if worker is not None:
                    instance.report_dagster_event(DagsterEvent(DagsterEventType.RUN_START.value, "trials_job",
                                                               pid=worker), run.run_id)
                return run.run_id

            gone = owner_tags() | {OWNER_PID_TAG: str(gone_eval.pid)}
            worker_died = launched(owner_tags(), dead_worker.pid)
            eval_died = launched(gone, live_worker.pid)
            never_started = launched(gone, None)  # its eval died before the worker started it
            assert worker_start(instance, worker_died)[0] == dead_worker.pid
            lines: list[str] = []
            assert sorted(recover_dead_runs(instance, lines.append)) == sorted([worker_died, never_started])
            assert instance.get_run_by_id(eval_died).status == dg.DagsterRunStatus.STARTED
            assert any(f"pid {dead_worker.pid} " in line for line in lines), lines
    finally:
        live_worker.kill()
        live_worker.wait()
