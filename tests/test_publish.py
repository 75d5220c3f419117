"""`publish --to DIR` on a real replay batch: the compact layout only (no workspace, no transcript), redacted,
append-only; `import-runs DIR` into a fresh store reproduces every result column of the trial rows, and
`synthesize --results-dir DIR` reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from .conftest import REPO

TASK = "py-v4-01-basic-tool-server"
RUN = "2026-11-30--replay--default"
SECRET = "pub-canary-5f0c9d2e7a1b"
OUTSIDE = "outside-canary-81d2c7f0"
# Every result column of a trial row; paths (memo, transcript), the import source and when it was recorded differ.
RESULT_COLUMNS = (
    "run_id, batch_id, batch_date, task, condition, trial, prompt_hash, agent_runner, agent_model, reasoning_effort, "
    "sdk_version, grader_version, sandbox, valid, invalid_reason, error, contract_pass, failure_code, failing_check, "
    "failing_detail, sdk_path, scored_for_pass_rate, duration_ms, turns, tokens_in, tokens_out, tool_calls, cost_usd, "
    "grade_json, isolation, suite, sdk_package, kind, condition_hash")


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_evals_pipeline.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def _rows(database: Path) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(f"SELECT {RESULT_COLUMNS} FROM trial_attempts WHERE is_current "
                           "ORDER BY task, condition, trial").fetchall()


@pytest.mark.long
def test_publish_is_compact_redacted_append_only_and_reads_back(tmp_path: Path) -> None:
    results = tmp_path / "results"
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "MCP_EVALS_RESULTS_DIR": str(results),
           "PUBLISH_TEST_TOKEN": SECRET}
    batch = _cli("eval", "--agent", "replay", "--task", TASK, "--trials", "2", "--batch-date", "2026-11-30",
                 "--no-verify", env=env)
    assert batch.returncode == 0, batch.stderr[-3000:]
    run_dir = results / "runs" / RUN
    memo = next(run_dir.glob("trials/*/memo.md"))
    memo.write_text(memo.read_text() + f"\nthe agent printed {SECRET}\n")  # a secret that reached a record
    # A run.json whose record names a file outside its run (an imported one could): never published.
    outside = tmp_path / "host-file.txt"
    outside.write_text(f"host file {OUTSIDE}\n")
    run_json = json.loads((run_dir / "run.json").read_text())
    other = next(i for i, t in enumerate(run_json["trials"]) if t["memoPath"] != memo.relative_to(run_dir).as_posix())
    run_json["trials"][other]["memoPath"] = "../../../host-file.txt"
    (run_dir / "run.json").write_text(json.dumps(run_json))

    published = tmp_path / "published"
    first = _cli("publish", "--to", str(published), env=env)
    assert first.returncode == 0, first.stderr
    files = sorted(p.relative_to(published).as_posix() for p in published.rglob("*") if p.is_file())
    assert f"runs/{RUN}/run.json" in files and f"runs/{RUN}/report.md" in files
    assert all(f.startswith(f"runs/{RUN}/") for f in files)
    assert {Path(f).name for f in files} == {"run.json", "report.md", "memo.md"}  # no workspace, transcript, png
    texts = "".join((published / f).read_text() for f in files)
    assert SECRET not in texts and "[redacted:PUBLISH_TEST_TOKEN]" in texts
    assert OUTSIDE not in texts and (run_dir / "../../../host-file.txt").resolve() == outside
    published_run = json.loads((published / "runs" / RUN / "run.json").read_text())
    assert [t["transcriptPath"] for t in published_run["trials"]] == [None, None]  # transcripts stay home
    assert published_run["trials"][other]["memoPath"] is None  # the outside file was not taken for its memo

    again = _cli("publish", "--to", str(published), env=env)
    assert again.returncode == 0 and "published 0 new, 1 already there" in again.stdout, again.stdout
    report = run_dir / "report.md"
    report.write_text(report.read_text() + "\nedited after publishing\n")
    before = (published / "runs" / RUN / "report.md").read_bytes()
    conflict = _cli("publish", "--to", str(published), env=env)
    assert conflict.returncode == 1 and f"conflict {RUN}" in " ".join(conflict.stderr.split()), conflict.stderr
    assert (published / "runs" / RUN / "report.md").read_bytes() == before  # never overwritten

    fresh = {**env, "MCP_EVALS_RESULTS_DIR": str(tmp_path / "fresh"), "DAGSTER_HOME": str(tmp_path / "home2")}
    imported = _cli("import-runs", str(published), env=fresh)
    assert imported.returncode == 0, imported.stderr
    original, back = _rows(results / "evals.duckdb"), _rows(tmp_path / "fresh" / "evals.duckdb")
    assert len(original) == 2 and back == original

    weekly = _cli("synthesize", "--results-dir", str(published), "--end-date", "2026-12-01", "--dry-run", env=env)
    assert weekly.returncode == 0, weekly.stderr
    assert "(1 runs read)" in " ".join(weekly.stdout.split()), weekly.stdout[:600]
