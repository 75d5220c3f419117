"""One trial, end to end, outside Dagster: fresh sandbox -> agent -> transcript + TrialPerf -> grader ->
trial files -> row in DuckDB -> judge memo.

Every path ends in exactly one TrialRecord on disk and in the database: a crashed sandbox, agent or grader gives
a `valid: false` row with an `infra.*` reason, never a lost trial. Re-running a trial archives the previous
attempt's files under `previous/attempt-<n>/` and adds a new attempt; the newest is current.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import time
import traceback
from pathlib import Path

from pydantic import model_validator

from mcp_evals_pipeline.agents import agent_entry, get_runner
from mcp_evals_pipeline.agents.base import AgentRequest, AgentResult, TranscriptWriter
from mcp_evals_pipeline.conditions import Condition, brief_hash, remove_agent_env, write_agent_env
from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.grade import TrialGrade
from mcp_evals_pipeline.contracts.records import TrialPerf, TrialRecord
from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader.source import detect_sdk_path
from mcp_evals_pipeline.ids import check_id
from mcp_evals_pipeline.kinds import kind_of
from mcp_evals_pipeline.paths import runs_dir
from mcp_evals_pipeline.redaction import redact_file, redact_tree, secret_values
from mcp_evals_pipeline.sandbox import require_isolation
from mcp_evals_pipeline.sandbox.choice import NoBox, choose_backend, open_agent_box, relay_loopback_env
from mcp_evals_pipeline.sdk_registry import latest_version
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.tasks.catalog import Task, get_task
from mcp_evals_pipeline.tasks.suites import SuiteError, load_suites, suite_of
from mcp_evals_pipeline.trial_dir import MEMO_FILE, PREVIOUS_DIR, TRANSCRIPT_FILE, TrialDir
from mcp_evals_pipeline.trial_options import AgentOptions, TrialOptions
from mcp_evals_pipeline.versions import GRADER_VERSION

# Trial partition keys exist for t1..tMAX of every task x condition (more trials per cell need a larger MAX).
MAX_TRIALS = int(os.environ.get("MCP_EVALS_MAX_TRIALS", "5"))
DEFERRED_MARKER = "deferred: the one indexer writes this row (MCP_EVALS_ROW_WRITER=indexer)\n"
# Writes of a trial's row: each waits up to store.LOCK_TIMEOUT_S for the lock, then backs off and tries again.
STORE_WRITE_ATTEMPTS = 3


class RecordNotIndexed(RuntimeError):
    """The attempt's files (trial.json included) are written but its DuckDB row is not: the store stayed locked
    or failed. Nothing is lost: a Dagster retry re-indexes the file (`reindex_recorded`, no new agent run), and so
    do the next write of the slot and `rebuild-db`."""


def check_task_id(task_id: str) -> str:
    """A task id is a plain name without `--` (the separator of trial keys)."""
    check_id(task_id, "task id")
    if "--" in task_id:
        raise ValueError(f"task id {task_id!r} contains '--', the separator of trial keys")
    return task_id


def trial_key(task_id: str, condition: str, trial: int) -> str:
    return check_id(f"{check_task_id(task_id)}--{check_id(condition, 'condition')}--t{int(trial)}", "trial key")


def parse_trial_key(key: str) -> tuple[str, str, int]:
    """`<task>--<condition>--t<N>` (task ids never contain `--`)."""
    parts = check_id(key, "trial key").split("--")
    if len(parts) != 3 or not parts[2].startswith("t") or not parts[2][1:].isdigit():
        raise ValueError(f"not a trial key: {key!r} (expected <task>--<condition>--t<N>)")
    return parts[0], parts[1], int(parts[2][1:])


def run_id_for(batch_id: str, agent: str, model: str | None) -> str:
    """One run directory per batch x agent x model: what ran leads the name, like the seed's run ids."""
    check_id(batch_id, "batch id")
    return check_id(f"{batch_id}--{agent}--{(model or 'default').replace('/', '_')}", "run id")


class TrialSpec(TrialOptions):
    """One trial: which (task, condition, trial number, batch date) and its options (trial_options.py)."""

    task_id: str
    condition: str
    trial: int
    batch_date: str  # YYYY-MM-DD

    @model_validator(mode="after")
    def _ids(self) -> TrialSpec:
        # Each of these becomes part of a path under the results root.
        check_task_id(self.task_id)
        check_id(self.condition, "condition")
        check_id(self.batch_date, "batch date")
        if self.batch_id is not None:
            check_id(self.batch_id, "batch id")
        check_id(self.agent, "agent")
        return self

    @property
    def key(self) -> str:
        return trial_key(self.task_id, self.condition, self.trial)

    def resolved(self) -> TrialSpec:
        pin = agent_entry(self.agent).pin  # UnknownRunner (a ValueError) for an unregistered name
        return self.model_copy(update={"model": self.model or pin.model,
                                       "reasoning_effort": self.reasoning_effort or pin.reasoning_effort,
                                       "batch_id": self.batch_id or self.batch_date})


def trial_dir_for(spec: TrialSpec, results_root: Path | None = None) -> TrialDir:
    """Where the slot's files live: <results>/runs/<runId>/trials/<key>/ (the spec resolved first)."""
    spec = spec.resolved()
    run_id = run_id_for(spec.batch_id or spec.batch_date, spec.agent, spec.model)
    return TrialDir((results_root or runs_dir()) / run_id / "trials" / spec.key)


def current_record(spec: TrialSpec, results_root: Path | None = None) -> TrialRecord | None:
    """The slot's current attempt as recorded on disk (its trial.json), or None when there is none or it does not
    parse."""
    return trial_dir_for(spec, results_root).current_record()


def finished_for(spec: TrialSpec, record: TrialRecord | None) -> str | None:
    """Why `record` already answers `spec` (for `eval --resume`), or None when the trial must run: a valid attempt
    of the same task prompt, grader version, agent, model (the requested one: it names the run directory; the
    endpoint may report a longer name), reasoning effort and condition."""
    if record is None or not record.valid:
        return None
    spec = spec.resolved()
    try:
        prompt_hash = get_task(spec.task_id).prompt_hash
    except Exception:
        return None
    wanted = {"prompt_hash": prompt_hash, "grader_version": GRADER_VERSION, "agent_runner": spec.agent,
              "run_id": run_id_for(spec.batch_id or spec.batch_date, spec.agent, spec.model),
              "reasoning_effort": spec.reasoning_effort, "condition": spec.condition, "trial": spec.trial,
              "task": spec.task_id}
    if any(getattr(record, name) != value for name, value in wanted.items()):
        return None
    outcome = "pass" if record.grade.contract_pass else f"fail {record.grade.failure_code or ''}".rstrip()
    return f"attempt {record.attempt} ({outcome})"


def reindex_recorded(spec: TrialSpec, *, store: TrialStore | None = None,
                     results_root: Path | None = None) -> TrialRecord | None:
    """Index the slot's current trial.json if its own row write failed (RecordNotIndexed left the marker); None
    when there is nothing to re-index. No sandbox, agent or grader runs. Raises RecordNotIndexed again if the
    store still refuses the write."""
    trial_dir = trial_dir_for(spec, results_root)
    store = store or TrialStore()
    if store.deferred or not trial_dir.unindexed_marker.exists() or not trial_dir.trial_file.exists():
        return None  # deferred: every attempt has the marker; the one indexer writes its row, never a trial's run
    record = TrialRecord.model_validate_json(trial_dir.trial_file.read_text())
    _index(store, record, trial_dir)
    return record


# Preparation errors that are the request's, not the host's: a skill, scaffold or starter that is not there, a
# malformed condition or task. Another attempt would meet them again.
PERMANENT_PREPARATION_ERRORS = (FileNotFoundError, NotADirectoryError, ValueError)


def run_trial(spec: TrialSpec, *, store: TrialStore | None = None, results_root: Path | None = None) -> TrialRecord:
    """Run one trial and persist it. Raises only for a bad request (unknown task/agent, missing credentials),
    before anything is prepared; everything after that ends in a record."""
    spec = spec.resolved()
    store = store or TrialStore()
    task = get_task(spec.task_id)
    condition = Condition.parse(spec.condition)
    runner = get_runner(spec.agent)
    runner.check_credentials(spec.model)  # fail fast, naming the variable, before any sandbox exists
    box = choose_backend(spec.agent, spec.sandbox)  # SandboxError for a name that is not a backend
    if spec.require_isolation:
        require_isolation(spec.require_isolation)  # SandboxError naming what the host lacks, before any work

    run_id = run_id_for(spec.batch_id or spec.batch_date, spec.agent, spec.model)
    trial_dir = trial_dir_for(spec, results_root)
    _record_died_attempt(spec, task, run_id, trial_dir)
    kind = kind_of(task.kind)
    attempt = trial_dir.archive_current()
    trial_dir.path.mkdir(parents=True, exist_ok=True)
    trial_dir.reserve_space()
    workspace = trial_dir.workspace
    transcript_path = trial_dir.transcript
    started = time.monotonic()
    timestamp = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    result: AgentResult | None = None
    grade: TrialGrade
    error: str | None = None
    sandbox_name: str | None = box.backend  # recorded even when the box cannot be made
    isolation: str | None = None
    env_written: list[str] = []
    brief = ""
    scored = task.contract.scored_for_pass_rate

    def infra(code: Infra, error: str, *, permanent: bool = False) -> TrialGrade:
        return TrialGrade.infra(code, error, sdk_path=detect_sdk_path(workspace), scored=scored, permanent=permanent)

    # What the agent phase needs live (the kind's: an OAuth task's IdP, its env for the sandbox); closed before
    # marking.
    services = contextlib.ExitStack()
    try:
        prompt = kind.prepare(workspace, task, condition, spec.agent)
        # Keys a build task's agent may need for its work (a usage task's agent has only the server's tools).
        keys = task.contract.agent_env_keys if isinstance(task.contract, TaskContract) else []
        env_written = write_agent_env(workspace, keys, dict(os.environ))
        if env_written:
            prompt += (f"\n\nThe values of {', '.join(env_written)} are in `.env` and `.mcp-evals-env.sh` in your "
                       "workspace: `source .mcp-evals-env.sh` before commands that need them.\n")
        phase = services.enter_context(kind.agent_services(task, condition, trial_dir.path))
        if phase.brief:  # what the condition gives besides the task, kept beside the transcript as it was sent
            prompt += phase.brief
            brief = phase.brief
            trial_dir.condition_brief.write_text(brief.strip() + "\n", encoding="utf-8")
        sandbox = open_agent_box(box, workspace, extra_env=phase.env or None)
        try:
            relay_loopback_env(sandbox, phase.env)
        except BaseException:
            sandbox.close()
            raise
    except BaseException as exc:
        services.close()
        remove_agent_env(workspace, env_written)
        if not isinstance(exc, Exception):
            raise  # an interrupt: no verdict, but nothing left running and no key left in the workspace
        # A service of the kind names its own reason (a usage task's server that did not come up: infra.server).
        code = getattr(exc, "infra_code", Infra.SANDBOX)
        error = f"{'sandbox ' if code == Infra.SANDBOX else ''}preparation failed: {type(exc).__name__}: {exc}"
        # No box on this host: closed, not retried (the host is the same on the next attempt), never run unboxed.
        grade = infra(code, error, permanent=isinstance(exc, (*PERMANENT_PREPARATION_ERRORS, NoBox)))
    else:
        sandbox_name, isolation = sandbox.backend, sandbox.isolation
        transcript = TranscriptWriter(transcript_path)
        try:
            request = AgentRequest(task_id=task.id, prompt=prompt, sandbox=sandbox, transcript=transcript,
                                   trial=spec.trial, condition=spec.condition, mcp_url=phase.mcp_url,
                                   **{name: getattr(spec, name) for name in AgentOptions.model_fields})
            result = runner.run(request)
        except Exception as exc:  # the harness, not the agent: the trial is invalid
            error = f"agent runner crashed: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
            with contextlib.suppress(OSError):  # e.g. a full disk: the record below still gets written
                transcript.emit("error", text=error)
            result = None
        finally:
            with contextlib.suppress(OSError):
                transcript.close()
            sandbox.close()
            services.close()
            remove_agent_env(workspace, env_written)  # the agent phase's secrets never reach grading or a snapshot
        if (full := trial_dir.disk_full()) is not None:
            # The host's disk, not the SDK under test: whoever filled it, grading a half-written workspace says
            # nothing. Checked first: a full disk also explains an agent that crashed writing its transcript.
            error = full + (f"; {error}" if error else "")
            grade = infra(Infra.SANDBOX, error)
        elif result is None:
            grade = infra(Infra.AGENT, error or "agent runner crashed")
        elif result.infra_reason:
            error = result.error
            grade = infra(result.infra_reason, result.error or result.infra_reason, permanent=result.permanent)
        else:
            error = result.error
            grade = kind.mark(task, workspace, trial_dir.path)
            if not grade.valid:
                error = grade.error

    perf = result.perf if result is not None else TrialPerf()
    if perf.duration_ms is None and result is not None:
        perf = perf.model_copy(update={"duration_ms": int((time.monotonic() - started) * 1000)})
    trial_dir.release_reserve()  # room for the record files even on a disk that filled up
    if grade.server_output:
        trial_dir.server_log.write_text(grade.server_output)
    # Every file of the attempt (transcript, workspace snapshot, logs) as every record is: no secret of the harness
    # survives in it, whatever the agent read or wrote. Before the memo: the judge reads the transcript.
    secrets = secret_values()
    redact_tree(trial_dir.path, secrets, skip=(PREVIOUS_DIR,))
    suite_name, registry_latest = suite_facts(task.id, task.prompt_hash)
    record = TrialRecord(
        task=task.id, kind=task.kind, condition=spec.condition, trial=spec.trial, prompt_hash=task.prompt_hash,
        agent_runner=spec.agent, agent_model=(result.model if result and result.model else spec.model),
        reasoning_effort=spec.reasoning_effort, sdk_version=grade.sdk_version, sdk_package=grade.sdk_package,
        suite=suite_name, sdk_registry_latest=registry_latest, grader_version=GRADER_VERSION,
        batch_id=spec.batch_id, batch_date=spec.batch_date, run_id=run_id, attempt=attempt, sandbox=sandbox_name,
        isolation=isolation, condition_hash=brief_hash(brief),
        valid=grade.valid, invalid_reason=None if grade.valid else grade.failure_code, error=error,
        retryable=None if grade.valid else not grade.permanent,
        grade=grade.model_copy(update={"server_output": None}), perf=perf,
        transcript_path=trial_dir.rel(TRANSCRIPT_FILE) if transcript_path.exists() else None,
        memo_path=trial_dir.rel(MEMO_FILE), timestamp=timestamp,
    )
    _write_memo(record, trial_dir, skip=spec.skip_judge)
    redact_file(trial_dir.memo, secrets)  # the judge may quote what it was given
    trial_dir.trial_file.write_text(record.model_dump_json(indent=2))
    _index(store, record, trial_dir)
    return record


def suite_facts(task_id: str, prompt_hash: str | None) -> tuple[str | None, str | None]:
    """The trial's suite and its SDK's latest registry release now (None when not known)."""
    try:
        suites = load_suites()
    except SuiteError:
        return None, None  # a broken suites.json is reported by verify-tasks and the tests, not by a trial
    name = suite_of(task_id, prompt_hash, suites=suites)
    if name is None:
        return None, None
    suite = suites[name]
    return name, latest_version(suite.sdk_package, suite.registry)


def _record_died_attempt(spec: TrialSpec, task: Task, run_id: str, trial_dir: TrialDir) -> None:
    """An attempt whose process died (SIGKILL, OOM, a lost host) left its files but no trial.json: give it its
    `infra.agent` record now, so its transcript and workspace are archived like any attempt's and its row lands."""
    leftovers = trial_dir.died_leftovers()
    if not leftovers:
        return
    trial_dir.release_reserve()
    done = trial_dir.earlier_attempts()
    died_at = max(c.stat().st_mtime for c in leftovers)
    error = ("the attempt's process died before it wrote its record (killed, out of memory or host lost); "
             "its files are kept as they were")
    prompt_hash, scored = task.prompt_hash, task.contract.scored_for_pass_rate
    record = TrialRecord(
        task=spec.task_id, kind=task.kind, condition=spec.condition, trial=spec.trial, prompt_hash=prompt_hash,
        suite=suite_of(spec.task_id, prompt_hash),
        agent_runner=spec.agent, agent_model=spec.model, reasoning_effort=spec.reasoning_effort,
        grader_version=GRADER_VERSION, batch_id=spec.batch_id, batch_date=spec.batch_date, run_id=run_id,
        attempt=(done[-1] + 1) if done else 1, valid=False, invalid_reason=Infra.AGENT, error=error, retryable=True,
        grade=TrialGrade.infra(Infra.AGENT, error, sdk_path=detect_sdk_path(trial_dir.workspace), scored=scored),
        perf=TrialPerf(),
        transcript_path=trial_dir.rel(TRANSCRIPT_FILE) if trial_dir.transcript.exists() else None,
        memo_path=trial_dir.rel(MEMO_FILE),
        timestamp=dt.datetime.fromtimestamp(died_at, dt.UTC).isoformat(timespec="milliseconds").replace(
            "+00:00", "Z"),
    )
    redact_tree(trial_dir.path, skip=(PREVIOUS_DIR,))  # what the died attempt left, as any attempt's files
    _write_memo(record, trial_dir, skip=True)
    trial_dir.trial_file.write_text(record.model_dump_json(indent=2))


def _index(store: TrialStore, record: TrialRecord, trial_dir: TrialDir) -> None:
    """Write the attempt's row, with every earlier attempt of the slot re-read from its files (idempotent), so a
    row an earlier attempt could not write (database locked past the timeout) lands now. With the one indexer as
    row writer (store.deferred), only the marker is written: runs.index_pending_trials does the rest."""
    if store.deferred:
        trial_dir.unindexed_marker.write_text(DEFERRED_MARKER)
        return
    earlier = trial_dir.earlier_records()
    for attempt in range(1, STORE_WRITE_ATTEMPTS + 1):
        try:
            store.record_trials([*earlier, record])
            trial_dir.unindexed_marker.unlink(missing_ok=True)
            return
        except Exception as exc:  # a lock held past the timeout, a database another process holds open
            if attempt == STORE_WRITE_ATTEMPTS:
                trial_dir.unindexed_marker.write_text(f"{type(exc).__name__}: {exc}\n")
                raise RecordNotIndexed(
                    f"{trial_dir.trial_file} is written but its row is not, after {attempt} tries "
                    f"({type(exc).__name__}: {exc}); a retry re-indexes it from the file (no new agent run), "
                    "as does the next attempt of this trial or rebuild-db"
                ) from exc
            _wait_before_store_retry(attempt)


def _wait_before_store_retry(failed_tries: int) -> None:
    """Back off before the next write of a trial's row: 1 s, 2 s, 4 s ... at most 10 s."""
    time.sleep(min(2.0 ** (failed_tries - 1), 10.0))


def _write_memo(record: TrialRecord, trial_dir: TrialDir, *, skip: bool) -> None:
    """The unscored judge memo; it never changes the record's numbers and never loses the trial."""
    from mcp_evals_pipeline import judge

    try:
        judge.write_memo(record, trial_dir.transcript, trial_dir.memo, skip=skip)
    except Exception as exc:
        trial_dir.memo.write_text(f"Judge failed: {type(exc).__name__}: {exc}\n")
