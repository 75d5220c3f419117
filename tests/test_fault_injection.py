"""Fault injection: every injected fault ends in the right row and loses nothing.

Each case runs a real trial with a real mechanism for its fault (a scripted model endpoint answering 500, a
server that never answers a call, the trial process SIGKILLed by its own agent's shell command, a results
filesystem that is really full, the store's lock or DuckDB's own file lock held by another process past the
timeout) and then checks what survives: the row in `trial_attempts`, the trial's files, a database that still
opens and answers, and `rebuild-db` reproducing the same rows from the files alone.

The Dagster cases materialize the `trial` asset in a temporary instance: an infra-invalid attempt is recorded and
retried with backoff; a fault that goes away ends in a current valid attempt, one that persists ends invalid
after max_retries + 1 attempts, all of them queryable.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from mcp_evals_pipeline import store as store_module
from mcp_evals_pipeline.contracts.records import TrialRecord
from mcp_evals_pipeline.defs.partitions import multi_key, register_trial_keys
from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.defs.trials.assets import TrialConfig, trial
from mcp_evals_pipeline.runs import rebuild_database
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.trials import TrialSpec, run_id_for, run_trial, trial_key

from .conftest import REPO, TASKS, write_task
from .support.openai_server import Answer, ScriptedOpenAI, call, failure, reply
from .support.processes import gone_within, running_under

TASK = "py-v4-01-basic-tool-server"
DATE = "2026-11-25"
GOLDEN = TASKS / TASK / "golden"
COLUMNS = "slot, attempt, is_current, valid, invalid_reason, contract_pass, failure_code, failing_check, error"


def spec(**kw: Any) -> TrialSpec:
    base = {"task_id": TASK, "condition": "noskill+blank", "trial": 1, "batch_date": DATE, "agent": "replay",
            "skip_judge": True}
    return TrialSpec(**{**base, **kw})


def session(path: Path, actions: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(a) + "\n" for a in actions))
    return path


def golden_actions() -> list[dict[str, Any]]:
    return [{"type": "assistant", "text": "Writing the server."},
            *({"type": "tool", "tool": "write_file", "args": {"path": p.name, "content": p.read_text()}}
              for p in sorted(GOLDEN.iterdir()))]


def rows(db: TrialStore) -> list[dict[str, Any]]:
    return db.query(f"SELECT {COLUMNS} FROM trial_attempts ORDER BY slot, attempt")


def assert_nothing_lost(db: TrialStore, runs: Path, tmp_path: Path) -> list[dict[str, Any]]:
    """The database opens and answers; every attempt has its files; rebuild-db reproduces the rows exactly."""
    current = rows(db)
    assert current, "no row at all"
    for row in current:
        batch, key, agent, model = row["slot"].split("|")
        trial_dir = runs / run_id_for(batch, agent, model) / "trials" / key
        attempt_dir = trial_dir if row["is_current"] else trial_dir / "previous" / f"attempt-{row['attempt']}"
        record = json.loads((attempt_dir / "trial.json").read_text())
        assert record["attempt"] == row["attempt"]
        assert (attempt_dir / "memo.md").exists()
    summary = rebuild_database(runs, tmp_path / "rebuilt.duckdb")
    assert summary.errors == []
    assert rows(TrialStore(tmp_path / "rebuilt.duckdb")) == current
    return current


@pytest.fixture
def env(tmp_path: Path) -> tuple[TrialStore, Path]:
    return TrialStore(tmp_path / "evals.duckdb"), tmp_path / "runs"


@pytest.fixture
def model_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def golden_agent(failures: int) -> tuple[Callable[[dict[str, Any]], Answer], dict[str, int]]:
    """A model endpoint answering 500 to its first `failures` requests, then writing the golden server."""
    state = {"requests": 0}

    def script(body: dict[str, Any]) -> Answer:
        state["requests"] += 1
        if state["requests"] <= failures:
            return failure(500, "injected outage")
        if not any(m.get("role") == "tool" for m in body["messages"]):
            return reply(tool_calls=[call("write_file", {"path": p.name, "content": p.read_text()})
                                     for p in sorted(GOLDEN.iterdir())])
        return reply(content="Done: server.py serves add.")

    return script, state


# ---- the fault table ------------------------------------------------------------------------------------------


def test_model_server_500s_end_in_infra_model_api_after_bounded_retries(env: tuple[TrialStore, Path],
                                                                       tmp_path: Path, model_key: None) -> None:
    db, runs = env
    with ScriptedOpenAI(lambda body: failure(500, "injected outage")) as server:
        record = run_trial(spec(agent="openai", options={"base_url": server.base_url, "max_retries": "2",
                                                         "retry_backoff_s": "0"}), store=db, results_root=runs)
    assert len(server.requests) == 3  # the first request and its two retries, no more
    assert not record.valid and record.invalid_reason == "infra.model_api"
    assert "after 3 attempts" in (record.error or "") and "HTTP 500" in (record.error or "")
    (row,) = assert_nothing_lost(db, runs, tmp_path)
    assert (row["valid"], row["invalid_reason"], row["failure_code"]) == (False, "infra.model_api", "infra.model_api")
    assert record.retryable is True and record.retry_verdict()[0]


def test_failures_that_would_recur_are_recorded_as_not_retryable(env: tuple[TrialStore, Path],
                                                                tmp_path: Path, model_key: None) -> None:
    """Set where the failure arises, kept in trial.json, read by the Dagster retry decision: a refused request,
    a missing session, and (test_dagster_never_retries_...) a missing skill never buy a retry."""
    db, runs = env
    with ScriptedOpenAI(lambda body: failure(401, "invalid api key")) as server:
        refused = run_trial(spec(agent="openai", options={"base_url": server.base_url, "max_retries": "3"}),
                            store=db, results_root=runs)
    assert len(server.requests) == 1  # the agent did not retry it either
    assert (refused.invalid_reason, refused.retryable) == ("infra.model_api", False)
    assert refused.retry_verdict() == (False, f"infra.model_api would recur: {refused.error}")
    missing = run_trial(spec(trial=2, options={"session": str(tmp_path / "no-such-session.jsonl")}), store=db,
                        results_root=runs)
    assert (missing.invalid_reason, missing.retryable) == ("infra.agent", False)
    assert not missing.retry_verdict()[0]
    on_disk = json.loads((runs / missing.run_id / "trials" / missing.trial_name / "trial.json").read_text())
    assert on_disk["retryable"] is False


HANGING_SERVER = '''
import os
import time

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("hangs")


@mcp.tool()
def add(a: int, b: int) -> int:
    time.sleep(3600)
    return a + b


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
'''


def test_a_server_that_never_answers_a_call_is_a_valid_contract_failure(env: tuple[TrialStore, Path],
                                                                       tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    db, runs = env
    contract = json.loads((TASKS / TASK / "task.json").read_text())
    contract = {**contract, "id": "hang-fixture", "callTimeoutSeconds": 1}
    write_task(tmp_path / "tasks", "hang-fixture", contract)
    monkeypatch.setenv("MCP_EVALS_TASKS_DIR", str(tmp_path / "tasks"))
    hang = session(tmp_path / "hang.jsonl", [
        {"type": "assistant", "text": "Writing a server whose tool never returns."},
        {"type": "tool", "tool": "write_file", "args": {"path": "server.py", "content": HANGING_SERVER}},
        {"type": "tool", "tool": "write_file", "args": {"path": "requirements.txt", "content": "mcp>=2.3,<3\n"}},
    ])
    started = time.monotonic()
    record = run_trial(spec(task_id="hang-fixture", options={"session": str(hang)}), store=db, results_root=runs)
    assert time.monotonic() - started < 60
    assert record.valid and record.grade.failure_code == "contract.calls"
    first = record.grade.first_failure
    assert first is not None and first.id == "call:add:1" and "timed out" in first.detail
    (row,) = assert_nothing_lost(db, runs, tmp_path)
    assert (row["valid"], row["invalid_reason"], row["failure_code"]) == (True, None, "contract.calls")
    assert not record.retry_verdict()[0]


KILLED_CHILD = """
import sys
from pathlib import Path
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.trials import TrialSpec, run_trial
db, runs, session = sys.argv[1:4]
run_trial(TrialSpec(task_id="py-v4-01-basic-tool-server", condition="noskill+blank", trial=1, batch_date="2026-11-25",
                    agent="replay", options={"session": session}), store=TrialStore(Path(db)), results_root=Path(runs))
"""


def test_a_trial_process_killed_mid_run_is_recorded_infra_agent_and_its_retry_lands(env: tuple[TrialStore, Path],
                                                                         tmp_path: Path) -> None:
    db, runs = env
    # The store already holds another row, which the killed trial must not damage.
    run_trial(spec(trial=2, options={"session": str(TASKS / TASK / "sessions" / "pass-1.jsonl")}), store=db,
              results_root=runs)
    # The process running the trial is SIGKILLed (OOM, a lost host) mid-session, while the agent's command runs:
    # from outside, since the agent's box keeps the harness out of its reach.
    killer = session(tmp_path / "killer.jsonl", [
        *golden_actions(),
        {"type": "tool", "tool": "shell", "args": {"command": "touch harness-dies-now && sleep 300", "timeout_s": 400}},
        {"type": "assistant", "text": "never reached"},
    ])
    (tmp_path / "tmp").mkdir()  # a killed harness cannot remove its sandbox scratch: keep it in the test's tmp
    trial_dir = runs / run_id_for(DATE, "replay", "default") / "trials" / trial_key(TASK, "noskill+blank", 1)
    child = subprocess.Popen([sys.executable, "-c", KILLED_CHILD, str(db.path), str(runs), str(killer)], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    try:
        marker = trial_dir / "workspace" / "harness-dies-now"
        deadline = time.monotonic() + 120
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), child.communicate(timeout=30)
        child.kill()
    finally:
        _out, stderr = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL, stderr
    # The kernel killed the agent's command with the harness (PDEATHSIG): nothing keeps running in the workspace.
    assert not gone_within(lambda: running_under(runs))
    assert (trial_dir / "transcript.jsonl").exists() and not (trial_dir / "trial.json").exists()
    assert [r["slot"].split("|")[1] for r in rows(db)] == [trial_key(TASK, "noskill+blank", 2)]  # intact
    # The retry (what the Dagster asset does for a failed step, or a re-materialization) first records the died
    # attempt (infra.agent, its transcript and workspace archived), then runs attempt 2.
    record = run_trial(spec(options={"session": str(session(tmp_path / "ok.jsonl", golden_actions()))}), store=db,
                       results_root=runs)
    assert record.valid and record.grade.contract_pass and record.attempt == 2
    died = trial_dir / "previous" / "attempt-1"
    assert "harness-dies-now" in (died / "transcript.jsonl").read_text()
    assert (died / "workspace" / "server.py").exists()
    current = assert_nothing_lost(db, runs, tmp_path)
    assert [(r["slot"].split("|")[1], r["attempt"], r["is_current"], r["invalid_reason"], r["contract_pass"])
            for r in current] == [
        (trial_key(TASK, "noskill+blank", 1), 1, False, "infra.agent", False),
        (trial_key(TASK, "noskill+blank", 1), 2, True, None, True),
        (trial_key(TASK, "noskill+blank", 2), 1, True, None, True)]
    assert "process died" in current[0]["error"]
    # A killed process is the host's fault, not the trial's: the died attempt asks for a retry like any infra fault.
    died_record = TrialRecord.model_validate_json((died / "trial.json").read_text())
    assert died_record.retryable is True
    assert died_record.retry_verdict() == (True, "infra.agent is retryable")


# Each holder takes its lock, says so, and keeps it until the file `release` exists: the test decides when the
# database becomes writable again, so no timing decides what the writer meets.
HOLD_LOCK = """
import sys
import time
from pathlib import Path
from filelock import FileLock
with FileLock(sys.argv[1] + ".lock"):
    print("held", flush=True)
    while not Path(sys.argv[2]).exists():
        time.sleep(0.02)
"""

HOLD_DUCKDB = """
import sys
import time
from pathlib import Path
import duckdb
con = duckdb.connect(sys.argv[1])  # DuckDB's own file lock, outside the store's lock
print("held", flush=True)
while not Path(sys.argv[2]).exists():
    time.sleep(0.02)
con.close()
"""


def hold(script: str, database: Path, release: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", script, str(database), str(release)], stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.parametrize("script", [HOLD_LOCK, HOLD_DUCKDB], ids=["store-lock", "duckdb-lock"])
def test_a_database_locked_past_the_timeout_still_gets_the_row(env: tuple[TrialStore, Path], tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """Decision: wait and retry (STORE_WRITE_ATTEMPTS = 3). The lock stays held through the first two writes, each
    giving up after its LOCK_TIMEOUT_S; during the backoff after the second the holder lets go, and the third
    write lands the row."""
    from mcp_evals_pipeline import trials as trials_module

    db, runs = env
    # Patched after the store was built: the store reads the timeout at each access, so it applies all the same.
    monkeypatch.setattr(store_module, "LOCK_TIMEOUT_S", 0.5)
    db.query("SELECT 1")  # the database exists before another process locks it
    release = tmp_path / "release"
    holder = hold(script, db.path, release)
    backoffs: list[int] = []

    def backoff(failed_tries: int) -> None:  # instead of sleeping: let go of the lock after the second failure
        backoffs.append(failed_tries)
        if failed_tries == 2:
            release.touch()
            holder.wait(timeout=30)

    monkeypatch.setattr(trials_module, "_wait_before_store_retry", backoff)
    try:
        record = run_trial(spec(options={"session": str(session(tmp_path / "ok.jsonl", golden_actions()))}),
                           store=db, results_root=runs)
    finally:
        release.touch()
        holder.wait(timeout=30)
    assert backoffs == [1, 2]  # two writes met the lock; the third landed
    assert record.valid and record.grade.contract_pass
    (row,) = assert_nothing_lost(db, runs, tmp_path)
    assert (row["attempt"], row["valid"], row["contract_pass"]) == (1, True, True)


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 2 MB filesystem (tmpfs; we run as root in the test VM)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                                           capture_output=True, check=False).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_ends_in_an_infra_row_that_lands(env: tuple[TrialStore, Path], tmp_path: Path,
                                                     tiny_fs: Path) -> None:
    db, _ = env
    runs = tiny_fs / "runs"
    # The agent fills the results filesystem (its workspace lives there), then tries to go on working.
    filler = session(tmp_path / "filler.jsonl", [
        {"type": "assistant", "text": "Writing a large cache."},
        {"type": "tool", "tool": "shell", "args": {"command": "head -c 8M /dev/zero > cache.bin; df -k .",
                                                   "timeout_s": 30}},
        *golden_actions(),
    ])
    record = run_trial(spec(options={"session": str(filler)}), store=db, results_root=runs)
    assert not record.valid and record.invalid_reason == "infra.sandbox"
    assert "No space left on device" in (record.error or "")
    (row,) = assert_nothing_lost(db, runs, tmp_path)
    assert row["invalid_reason"] == "infra.sandbox"
    trial_dir = runs / record.run_id / "trials" / record.trial_name
    assert (trial_dir / "workspace" / "cache.bin").exists()  # the evidence stays
    assert "No space left on device" in (trial_dir / "transcript.jsonl").read_text()


# ---- Dagster retries ------------------------------------------------------------------------------------------


def materialize(instance: dg.DagsterInstance, store: EvalStore, config: dict[str, Any]) -> dg.ExecuteInProcessResult:
    register_trial_keys(instance, [trial_key(TASK, "noskill+blank", 1)])
    return dg.materialize([trial], partition_key=multi_key(DATE, trial_key(TASK, "noskill+blank", 1)),
                          instance=instance, resources={"eval_store": store}, raise_on_error=False,
                          run_config={"ops": {"trial": {"config": config}}})


def openai_config(base_url: str, **kw: Any) -> dict[str, Any]:
    return {"agent": "openai", "base_url": base_url, "options": {"max_retries": "0", "retry_backoff_s": "0"},
            "retry_backoff_s": 0.05, "retry_backoff_max_s": 0.1, **kw}


def test_dagster_retries_an_infra_failure_that_goes_away(tmp_path: Path, model_key: None) -> None:
    store = EvalStore(database=str(tmp_path / "evals.duckdb"), runs_root=str(tmp_path / "runs"))
    script, state = golden_agent(failures=1)  # the first attempt's only request fails (agent retries are off)
    with ScriptedOpenAI(script) as server, dg.instance_for_test() as instance:
        result = materialize(instance, store, openai_config(server.base_url))
    assert result.success
    (mat,) = result.asset_materializations_for_node("trial")
    assert mat.metadata["outcome"].value == "pass" and mat.metadata["attempt"].value == 2
    assert mat.metadata["dagster_retries"].value == 1
    retries = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY]
    assert len(retries) == 1
    db = store.store()
    current = assert_nothing_lost(db, Path(store.runs_root), tmp_path)
    assert [(r["attempt"], r["is_current"], r["valid"], r["invalid_reason"], r["contract_pass"]) for r in current] == [
        (1, False, False, "infra.model_api", False), (2, True, True, None, True)]
    assert state["requests"] == 3


def test_dagster_stops_retrying_a_persistent_infra_failure(tmp_path: Path, model_key: None) -> None:
    store = EvalStore(database=str(tmp_path / "evals.duckdb"), runs_root=str(tmp_path / "runs"))
    with ScriptedOpenAI(lambda body: failure(503, "down for good")) as server, dg.instance_for_test() as instance:
        started = time.monotonic()
        result = materialize(instance, store, openai_config(server.base_url, max_retries=2))
        elapsed = time.monotonic() - started
    assert result.success  # the trial ended in its row: invalid, after every retry
    (mat,) = result.asset_materializations_for_node("trial")
    assert mat.metadata["outcome"].value == "invalid" and mat.metadata["attempt"].value == 3
    assert mat.metadata["retry"].value.startswith("retries exhausted")
    assert len(server.requests) == 3
    current = assert_nothing_lost(store.store(), Path(store.runs_root), tmp_path)
    assert [(r["attempt"], r["is_current"], r["invalid_reason"]) for r in current] == [
        (1, False, "infra.model_api"), (2, False, "infra.model_api"), (3, True, "infra.model_api")]
    assert elapsed >= 0.05 + 0.1  # the backoff really waited: 0.05 s, then 0.1 s (capped)


def test_dagster_never_retries_a_valid_fail_or_a_permanent_infra_failure(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    store = EvalStore(database=str(tmp_path / "evals.duckdb"), runs_root=str(tmp_path / "runs"))
    with dg.instance_for_test() as instance:
        fail = materialize(instance, store, {"options": {"session": "fail-wrong-sum.jsonl"}, "retry_backoff_s": 0})
        (mat,) = fail.asset_materializations_for_node("trial")
        assert mat.metadata["outcome"].value == "fail" and mat.metadata["dagster_retries"].value == 0
        monkeypatch.setenv("MCP_EVALS_SKILL_DIR", str(tmp_path / "no-such-skill"))
        register_trial_keys(instance, [trial_key(TASK, "skill+blank", 1)])
        missing = dg.materialize([trial], partition_key=multi_key(DATE, trial_key(TASK, "skill+blank", 1)),
                                 instance=instance, resources={"eval_store": store},
                                 run_config={"ops": {"trial": {"config": {"retry_backoff_s": 0}}}})
        (mat,) = missing.asset_materializations_for_node("trial")
        assert mat.metadata["outcome"].value == "invalid" and mat.metadata["dagster_retries"].value == 0
        assert mat.metadata["retry"].value.startswith(
            "not retried: infra.sandbox would recur: sandbox preparation failed: FileNotFoundError")
    assert [(r["failure_code"], r["attempt"]) for r in rows(store.store())] == [
        ("contract.calls", 1), ("infra.sandbox", 1)]


def test_retry_config_backoff_is_exponential_and_capped() -> None:
    config = TrialConfig(retry_backoff_s=30, retry_backoff_max_s=100)
    assert [config.backoff_s(n) for n in range(4)] == [30, 60, 100, 100]
    assert TrialConfig().max_retries == 2
    assert TrialConfig(base_url="http://x/v1", options={"session": "s"}).runner_options() == {
        "session": "s", "base_url": "http://x/v1"}




def test_a_locked_database_costs_a_reindex_not_an_agent_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the row write failed (the store's lock held by another process past every try): the Dagster retry
    indexes the trial.json already on disk. The agent ran once, one attempt is recorded, and its row lands once
    the lock is free. (Before, the retry ran the whole trial again: a live model paid for twice or three times.)"""
    from mcp_evals_pipeline import trials as trials_module
    from mcp_evals_pipeline.agents.replay import ReplayAgent

    monkeypatch.setattr(store_module, "LOCK_TIMEOUT_S", 0.2)
    monkeypatch.setattr(trials_module, "STORE_WRITE_ATTEMPTS", 1)
    agent_runs: list[str] = []
    replay = ReplayAgent.run

    def counted(self: ReplayAgent, request: Any) -> Any:
        agent_runs.append(request.task_id)
        return replay(self, request)

    monkeypatch.setattr(ReplayAgent, "run", counted)
    store = EvalStore(database=str(tmp_path / "evals.duckdb"), runs_root=str(tmp_path / "runs"))
    store.store().query("SELECT 1")
    trial_dir = Path(store.runs_root) / run_id_for(DATE, "replay", "default") / "trials" / trial_key(
        TASK, "noskill+blank", 1)
    # Another process holds the store's lock until the attempt's own write has given up (it leaves the marker).
    holder = hold(HOLD_LOCK, store.store().path, trial_dir / ".unindexed")
    try:
        with dg.instance_for_test() as instance:
            result = materialize(instance, store, {"options": {"session": "pass-1.jsonl"}, "retry_backoff_s": 1.0})
        assert holder.poll() is not None  # the row landed only after the holder let go
    finally:
        if holder.poll() is None:  # the test failed early: let the holder go
            (trial_dir / ".unindexed").touch()
        holder.wait(timeout=60)
    assert result.success
    (mat,) = result.asset_materializations_for_node("trial")
    assert mat.metadata["attempt"].value == 1 and mat.metadata["dagster_retries"].value >= 1
    assert agent_runs == [TASK]
    current = assert_nothing_lost(store.store(), Path(store.runs_root), tmp_path)
    assert [(r["attempt"], r["is_current"], r["contract_pass"]) for r in current] == [(1, True, True)]
    assert not (trial_dir / "previous").exists() and not (trial_dir / ".unindexed").exists()
