"""A batch split into per-task CI jobs is one batch again after `merge-shards`: two real replay shards (each its own
results directory, as two jobs would upload them) join into one run with its rows and scorecard; a missing shard, a
shard of another batch and a broken one are each named, and the exit code says the batch is incomplete."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from .conftest import REPO

A, B, C = "usage-ops-v3-01-restart-by-id", "usage-ops-v3-02-restart-by-name", "usage-ops-v3-03-missing-target"
RUN = "shard-batch--replay--default"


def _env(results: Path, home: Path) -> dict[str, str]:
    return {**os.environ, "DAGSTER_HOME": str(home), "MCP_EVALS_RESULTS_DIR": str(results)}


def _cli(*args: str, results: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_evals_pipeline.cli", *args], cwd=REPO,
                          env=_env(results, home), capture_output=True, text=True, timeout=600)


def _shards(tmp_path: Path, *shards: tuple[str, str, str]) -> list[Path]:
    """Each (name, task, batch id) a one-trial replay batch in its own results directory, all at once (as CI
    jobs would run them; each its own Dagster home)."""
    running = []
    for name, task, batch_id in shards:
        results = tmp_path / name
        running.append((results, subprocess.Popen(
            [sys.executable, "-m", "mcp_evals_pipeline.cli", "eval", "--agent", "replay", "--task", task,
             "--condition", "bare", "--batch-date", "2026-11-30", "--batch-id", batch_id, "--no-verify",
             "--skip-judge"], cwd=REPO, env=_env(results, tmp_path / f"home-{name}"), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)))
    for _, proc in running:
        _, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr[-3000:]
    return [results for results, _ in running]


@pytest.mark.long
def test_shards_merge_into_one_run_and_missing_or_malformed_ones_are_named(tmp_path: Path) -> None:
    first, second, other = _shards(tmp_path, ("shard-a", A, "shard-batch"), ("shard-b", B, "shard-batch"),
                                   ("shard-other", A, "another-batch"))
    broken = tmp_path / "shard-broken" / "runs" / RUN
    broken.mkdir(parents=True)
    (broken / "run.json").write_text("{not json")
    merged, home = tmp_path / "merged", tmp_path / "home"

    whole = _cli("merge-shards", str(first), str(second), "--expect-task", A, "--expect-task", B,
                 results=merged, home=home)
    assert whole.returncode == 0, whole.stderr
    assert f"merged 2 shard(s), 2 trials, into run {RUN}" in " ".join(whole.stdout.split())
    run = json.loads((merged / "runs" / RUN / "run.json").read_text())
    assert sorted(t["task"] for t in run["trials"]) == [A, B]
    assert (merged / "runs" / RUN / "report.md").is_file()
    with duckdb.connect(str(merged / "evals.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM trials WHERE run_id = ?", [RUN]).fetchone() == (2,)
        assert con.execute("SELECT trials FROM usage_rates WHERE run_id = ? AND condition = '*'",
                           [RUN]).fetchone() == (2,)

    again = _cli("merge-shards", str(first), str(other), str(broken.parent.parent), "--expect-task", A,
                 "--expect-task", B, "--expect-task", C, results=tmp_path / "merged2", home=home)
    said = " ".join(again.stderr.split())
    assert again.returncode == 3, said
    assert f"missing shard: no shard ran {B}" in said and f"no shard ran {C}" in said
    assert f"malformed shard {other}: holds run another-batch--replay--default, not the batch's run {RUN}" in said
    assert f"malformed shard {tmp_path / 'shard-broken'}: {broken / 'run.json'}" in said
    run = json.loads((tmp_path / "merged2" / "runs" / RUN / "run.json").read_text())
    assert [t["task"] for t in run["trials"]] == [A]  # what was healthy is merged all the same
