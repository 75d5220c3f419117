"""`mcp-evals regrade`: stored work marked again by today's grader, nothing else changed, and `compare` showing
what the marker change alone moved. Real replay trials, the real grader, the real store."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import socket
import stat
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from mcp_evals_pipeline.cli import main
from mcp_evals_pipeline.contracts.records import TrialRecord
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.trials import TrialSpec, run_trial
from mcp_evals_pipeline.versions import GRADER_VERSION

TASK = "py-v4-01-basic-tool-server"
OLD = "0.0-old-marker"


def _tree(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MCP_EVALS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("MCP_EVALS_DB", str(tmp_path / "results" / "evals.duckdb"))
    return tmp_path / "results"


def _as_if_an_older_marker(trial_json: Path, store: TrialStore, **grade: object) -> TrialRecord:
    """The stored record as an older grader would have written it: its version, and its verdict (`grade`)."""
    record = TrialRecord.model_validate_json(trial_json.read_text())
    record = record.model_copy(update={"grader_version": OLD, "grade": record.grade.model_copy(update=grade)})
    trial_json.write_text(record.model_dump_json(indent=2))
    store.record_trials([record])
    return record


def test_regrade_marks_the_same_work_again_and_compare_shows_what_moved(results: Path) -> None:
    from mcp_evals_pipeline.contracts.grade import Check

    store = TrialStore()
    records = {t: run_trial(TrialSpec(task_id=TASK, condition="noskill+blank", trial=t, batch_date="2026-11-30",
                                      agent="replay", skip_judge=True), store=store) for t in (1, 2, 3)}
    assert [records[t].grade.contract_pass for t in (1, 2, 3)] == [False, True, True]  # the replay sessions
    run_dir = results / "runs" / records[2].run_id
    dirs = {t: run_dir / "trials" / records[t].trial_name for t in records}
    # Trial 2: an older marker failed it at `tools` (a marker bug the new grader fixed); trial 3 as it was marked.
    failed = [*records[2].grade.checks[:1], Check(id="tools", passed=False, detail="old marker: missing tool")]
    _as_if_an_older_marker(dirs[2] / "trial.json", store, contract_pass=False, failure_code="contract.tools",
                           checks=failed)
    _as_if_an_older_marker(dirs[3] / "trial.json", store)
    _as_if_an_older_marker(dirs[1] / "trial.json", store)
    work_before = {t: (_tree(dirs[t] / "workspace"), (dirs[t] / "transcript.jsonl").read_bytes()) for t in dirs}

    done = CliRunner().invoke(main, ["regrade", "--run", records[2].run_id])
    assert done.exit_code == 0, done.output
    for t, trial_dir in dirs.items():
        now = TrialRecord.model_validate_json((trial_dir / "trial.json").read_text())
        assert (now.attempt, now.regraded_from, now.grader_version) == (2, 1, GRADER_VERSION)
        assert now.perf == records[t].perf and now.agent_model == records[t].agent_model
        # The agent's work is what it was (and the archive keeps the original attempt whole).
        assert (_tree(trial_dir / "workspace"), (trial_dir / "transcript.jsonl").read_bytes()) == work_before[t]
        archived = TrialRecord.model_validate_json((trial_dir / "previous" / "attempt-1" / "trial.json").read_text())
        assert archived.grader_version == OLD
        assert now.grade.contract_pass == records[t].grade.contract_pass  # today's verdict on the same work
    # DuckDB: the new attempts are current, the old ones kept; compare pairs them by grader.
    with duckdb.connect(str(results / "evals.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT trial, attempt, is_current, grader_version, regraded_from FROM trial_attempts "
                           "ORDER BY trial, attempt").fetchall()
    assert rows == [(t, a, a == 2, OLD if a == 1 else GRADER_VERSION, None if a == 1 else 1)
                    for t in (1, 2, 3) for a in (1, 2)]
    batch = records[2].batch_id
    assert f"# {batch}@{OLD} -> {batch}@{GRADER_VERSION}" in done.output
    assert f"| build | {TASK} | noskill+blank | 2 | replay | fail: tools (contract.tools) | pass |" in done.output
    assert "None: every paired cell kept its verdict." in done.output  # 1/3 -> 2/3: mixed both times
    assert "- fixed: `contract.tools` x1" in done.output
    report = (run_dir / "report.md").read_text()  # the scorecard reads the current attempts: today's marks
    assert "2/3" in report

    again = CliRunner().invoke(main, ["regrade", "--run", records[2].run_id])
    assert again.exit_code == 0 and again.output.count(f"already marked by grader {GRADER_VERSION}") == 3


def test_work_that_cannot_be_marked_again_says_why(results: Path) -> None:
    store = TrialStore()
    record = run_trial(TrialSpec(task_id=TASK, condition="noskill+blank", trial=2, batch_date="2026-11-30",
                                 agent="replay", skip_judge=True), store=store)
    trial_dir = results / "runs" / record.run_id / "trials" / record.trial_name
    stored = TrialRecord.model_validate_json((trial_dir / "trial.json").read_text())
    cases = {
        "its agent phase never finished (infra.agent)": {"valid": False, "invalid_reason": "infra.agent"},
        "the task's prompt changed since": {"prompt_hash": "0" * 16},
    }
    for reason, update in cases.items():
        (trial_dir / "trial.json").write_text(stored.model_copy(update={"grader_version": OLD, **update})
                                              .model_dump_json(indent=2))
        done = CliRunner().invoke(main, ["regrade", "--run", record.run_id])
        assert done.exit_code == 0 and reason in done.output, done.output
        assert not (trial_dir / "previous").exists()  # nothing moved
    missing = CliRunner().invoke(main, ["regrade", "--run", "no-such-run"])
    assert missing.exit_code == 2 and "no run directory" in missing.output
    assert json.loads((trial_dir / "trial.json").read_text())["attempt"] == 1


def _replayed_at_an_older_marker(results: Path) -> tuple[TrialRecord, Path]:
    store = TrialStore()
    record = run_trial(TrialSpec(task_id=TASK, condition="noskill+blank", trial=2, batch_date="2026-11-30",
                                 agent="replay", skip_judge=True), store=store)
    trial_dir = results / "runs" / record.run_id / "trials" / record.trial_name
    return _as_if_an_older_marker(trial_dir / "trial.json", store), trial_dir


def test_a_fifo_and_a_socket_in_the_snapshot_are_left_out_and_named(
        results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old, trial_dir = _replayed_at_an_older_marker(results)
    os.mkfifo(trial_dir / "workspace" / "pipe")  # shutil's copy refused it, after the old attempt was moved away
    listener = socket.socket(socket.AF_UNIX)
    with monkeypatch.context() as here:
        here.chdir(trial_dir / "workspace")  # a socket's path is at most 107 bytes: bind it relative
        listener.bind("sock")
    try:
        done = CliRunner().invoke(main, ["regrade", "--run", old.run_id])
    finally:
        listener.close()
    assert done.exit_code == 0, done.output
    assert "pipe (FIFO)" in done.output and "sock (socket)" in done.output
    now = TrialRecord.model_validate_json((trial_dir / "trial.json").read_text())
    assert (now.attempt, now.regraded_from, now.grader_version) == (2, 1, GRADER_VERSION)
    assert now.grade.contract_pass
    archived = trial_dir / "previous" / "attempt-1"
    assert TrialRecord.model_validate_json((archived / "trial.json").read_text()).grader_version == OLD
    assert stat.S_ISFIFO((archived / "workspace" / "pipe").lstat().st_mode)  # the archive keeps the work whole
    assert not (trial_dir / "workspace" / "pipe").exists()
    assert not list(trial_dir.parent.parent.glob(".regrade-*"))  # no staging left behind


def test_a_regrade_that_fails_midway_leaves_the_old_record_current(results: Path, tmp_path: Path) -> None:
    """A real write failure (a file-size limit, as a full disk would) while the new attempt is being built: the slot
    keeps its current record and files, nothing is archived, no staging is left."""
    old, trial_dir = _replayed_at_an_older_marker(results)
    (trial_dir / "workspace" / "data.bin").write_bytes(os.urandom(256 * 1024))  # more than the limit below
    before = {p.relative_to(trial_dir): p.read_bytes() for p in trial_dir.rglob("*") if p.is_file()}
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    limit = 64 * 1024  # Python ignores SIGXFSZ: a write past the limit fails with EFBIG, like ENOSPC would

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run([sys.executable, "-m", "mcp_evals_pipeline.cli", "regrade", "--run", old.run_id],
                          env=env, capture_output=True, text=True, timeout=300, preexec_fn=limited, check=False)
    assert done.returncode != 0 and "File too large" in done.stderr, done.stderr[-2000:]
    assert TrialRecord.model_validate_json((trial_dir / "trial.json").read_text()) == old  # still current
    after = {p.relative_to(trial_dir): p.read_bytes() for p in trial_dir.rglob("*") if p.is_file()}
    assert after == before and not (trial_dir / "previous").exists()
    assert not list(trial_dir.parent.parent.glob(".regrade-*"))
    # Once the limit is gone the same regrade completes.
    again = CliRunner().invoke(main, ["regrade", "--run", old.run_id])
    assert again.exit_code == 0, again.output
    assert json.loads((trial_dir / "trial.json").read_text())["attempt"] == 2
