"""The command line, as a user runs it: subprocesses against a temporary results directory."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from .conftest import REPO
from .support.cli_env import cli_env

TASK = "py-v4-01-basic-tool-server"


@pytest.fixture(scope="session")
def pycache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "pycache"


@pytest.fixture
def cli(tmp_path: Path, pycache: Path):  # type: ignore[no-untyped-def]
    env = cli_env(tmp_path, pycache)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mcp_evals_pipeline.cli", *args], cwd=REPO, env=env,
                              capture_output=True, text=True, check=False, timeout=600)

    return run


@pytest.mark.long
def test_import_report_trends_and_rebuild_on_real_runs(cli, legacy_runs: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    imported = cli("import-runs", str(legacy_runs))
    assert imported.returncode == 0, imported.stderr
    assert "imported 259 runs (775 trials" in imported.stdout
    # The models are current at once: the README's query answers right after an import.
    with duckdb.connect(str(tmp_path / "results" / "evals.duckdb"), read_only=True) as con:
        suspects = {r[0] for r in con.execute("SELECT task FROM suspect_markers").fetchall()}
    assert {"v2-10-multi-view-incident-console", "v2-11-middleware-protected-audit"} <= suspects, suspects
    # What `make run` does on a store that already holds the archive's runs: nothing.
    again = cli("import-runs", "--if-missing", str(REPO / "tests" / "fixtures" / "legacy_runs.tar.xz"))
    assert again.returncode == 0 and "already holds the 259 runs" in again.stdout, again.stderr
    run_id = "v2-02-stateful-ticket-queue--noskill+blank--codex--2026-09-09T14-07-38"
    report = cli("report", "--run", run_id)
    assert report.returncode == 0, report.stderr
    assert "## Pass rate: 100% (2/2 valid scored trials)" in report.stdout
    assert "pass^2: 100% (1/1 task×condition cells all-pass, min 2 trials/cell)" in report.stdout
    assert "- Median tool calls: 26.5" in report.stdout
    trends = cli("trends")
    assert trends.returncode == 0 and "30859637568-1" in trends.stdout
    # The overview's suspect count is the tasks flagged (rows WHERE suspect), and its query returns those alone.
    with duckdb.connect(str(tmp_path / "results" / "evals.duckdb"), read_only=True) as con:
        flagged = con.execute("SELECT count(DISTINCT task) FROM suspect_markers WHERE suspect").fetchone()[0]
        rows = con.execute("SELECT count(DISTINCT task) FROM suspect_markers").fetchone()[0]
    overview = cli("overview")
    assert overview.returncode == 0, overview.stderr
    assert 0 < flagged < rows and f" {flagged} task(s) flagged by suspect_markers" in overview.stdout
    assert "SELECT * FROM suspect_markers WHERE suspect;" in overview.stdout
    rebuilt = cli("rebuild-db")
    assert rebuilt.returncode == 0 and "775 trial rows from 259 runs" in rebuilt.stdout
    missing = cli("report", "--run", "no-such-run")
    assert missing.returncode == 2 and "no trials of run" in missing.stderr


def test_eval_refuses_bad_requests_before_spending(cli) -> None:  # type: ignore[no-untyped-def]
    no_key = cli("eval", "--agent", "openai", "--task", "py-v4-01-basic-tool-server", "--no-verify")
    assert no_key.returncode == 2 and "OPENAI_API_KEY" in no_key.stderr
    codex = cli("eval", "--agent", "codex", "--no-verify")
    assert codex.returncode == 2 and "OPENAI_API_KEY or CODEX_API_KEY" in codex.stderr
    unknown = cli("eval", "--agent", "nope", "--no-verify")
    assert unknown.returncode == 2 and "unknown agent runner 'nope'" in unknown.stderr
    bad_condition = cli("eval", "--condition", "skill+cloud", "--no-verify")
    assert bad_condition.returncode == 2 and "unknown condition" in bad_condition.stderr


def test_eval_variant_alias_runs_a_trial(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    done = cli("eval", "--variant", "noskill+blank", "--task", "py-v4-02-stateful-ticket-queue", "--trials", "2",
               "--no-verify", "--skip-judge")
    assert done.returncode == 0, done.stderr
    assert "--variant is deprecated" in done.stderr
    assert "[2/2] py-v4-02-stateful-ticket-queue--noskill+blank--t2: pass" in done.stderr
    report = Path(done.stdout.split("scorecard: ")[1].strip())
    assert report.exists() and "## Pass rate: 50% (1/2 valid scored trials)" in report.read_text()


@pytest.mark.long
def test_eval_runs_trials_side_by_side(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--parallel: worker processes materialize the partitions against the same instance; every trial lands once,
    in the files, in DuckDB and as its own successful Dagster run."""
    done = cli("eval", "--task", "py-v4-01-basic-tool-server", "--task", "py-v4-02-stateful-ticket-queue",
               "--trials", "2",
               "--parallel", "2", "--no-verify", "--skip-judge", "--batch-date", "2026-11-27")
    assert done.returncode == 0, done.stderr
    lines = sorted(line for line in done.stderr.splitlines() if line.startswith("["))
    assert len(lines) == 4 and all(": pass" in line or ": fail" in line for line in lines), done.stderr
    assert {f"[{i}/4]" for i in range(1, 5)} == {line.split()[0] for line in lines}
    with duckdb.connect(str(tmp_path / "results" / "evals.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT task, trial, count(*) FROM trials GROUP BY ALL ORDER BY ALL").fetchall()
    assert rows == [("py-v4-01-basic-tool-server", 1, 1), ("py-v4-01-basic-tool-server", 2, 1),
                    ("py-v4-02-stateful-ticket-queue", 1, 1), ("py-v4-02-stateful-ticket-queue", 2, 1)]
    with dg.DagsterInstance.from_config(str(tmp_path / "dh")) as instance:
        records = instance.get_run_records()
    runs = [r.dagster_run for r in records]
    assert sorted(r.job_name for r in runs) == ["catalog_job", "reports_job", "trial_checks_job",
                                                *["trials_job"] * 4]
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    # Side by side for real: at least two trial runs were executing at the same moment (Dagster's start and end
    # times of each run; runs one after the other never overlap, however the lines above came out).
    spans = sorted((r.start_time, r.end_time) for r in records if "dagster/partition/trial" in r.dagster_run.tags)
    assert len(spans) == 4 and all(start and end for start, end in spans)
    assert any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans)), spans
    report = Path(done.stdout.split("scorecard: ")[1].strip())
    assert report.exists()


@pytest.mark.long
def test_eval_resume_skips_finished_trials_and_reruns_invalid_ones(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--resume: a trial whose current attempt is valid for the same spec is not run again (no Dagster run, no new
    attempt); an invalid one is."""
    args = ("eval", "--task", TASK, "--trials", "2", "--no-verify", "--skip-judge", "--batch-id", "resumed")
    first = cli(*args)
    assert first.returncode == 0, first.stderr
    trial_dir = tmp_path / "results" / "runs" / "resumed--replay--default" / "trials"
    t2 = trial_dir / f"{TASK}--noskill+blank--t2" / "trial.json"
    record = json.loads(t2.read_text())  # t2 becomes an attempt a crashed agent harness left invalid
    t2.write_text(json.dumps(record | {"valid": False, "invalidReason": "infra.agent", "error": "crashed"}))
    resumed = cli(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert (f"[1/2] {TASK}--noskill+blank--t1: skipped, attempt 1 (fail contract.calls) is current and valid"
            in resumed.stderr), resumed.stderr
    assert f"[2/2] {TASK}--noskill+blank--t2: pass" in resumed.stderr
    with duckdb.connect(str(tmp_path / "results" / "evals.duckdb"), read_only=True) as con:
        attempts = con.execute("SELECT trial, attempt, is_current, valid FROM trial_attempts ORDER BY ALL").fetchall()
    assert attempts == [(1, 1, True, True), (2, 1, False, False), (2, 2, True, True)]  # the files rule
    with dg.DagsterInstance.from_config(str(tmp_path / "dh")) as instance:
        trial_runs = [r for r in instance.get_runs() if "dagster/partition/trial" in r.tags]
    assert sorted(r.tags["dagster/partition/trial"] for r in trial_runs) == [
        f"{TASK}--noskill+blank--t1", f"{TASK}--noskill+blank--t2", f"{TASK}--noskill+blank--t2"]
    assert json.loads(t2.read_text())["attempt"] == 2


def test_ids_that_would_leave_the_results_root_are_refused(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """An id becomes a directory name: a batch id, run id or task id with a path in it is bad input (exit 2),
    refused before anything is written, instead of a run directory outside eval_results/runs/."""
    before = {p for p in tmp_path.rglob("*")}
    escaping = cli("eval", "--task", TASK, "--no-verify", "--skip-judge", "--batch-id", "../../etc")
    assert escaping.returncode == 2 and "batch id '../../etc' is not a plain name" in escaping.stderr
    bad_task = cli("eval", "--task", "../tasks/x", "--no-verify")
    assert bad_task.returncode == 2 and "task id '../tasks/x' is not a plain name" in bad_task.stderr
    report = cli("report", "--run", "../x", "--write")
    assert report.returncode == 2 and "run id '../x' is not a plain name" in report.stderr
    written = {p for p in tmp_path.rglob("*")} - before
    assert not [p for p in written if not p.is_relative_to(tmp_path / "dh")], sorted(written)  # only the instance
    assert not (tmp_path / "x").exists() and not list(tmp_path.parent.glob("etc--*"))


def test_synthesize_refuses_slack_without_webhook(cli) -> None:  # type: ignore[no-untyped-def]
    done = cli("synthesize", "--slack", "--dry-run")
    assert done.returncode == 2 and "SLACK_WEBHOOK_URL" in done.stderr
