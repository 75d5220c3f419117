"""The floor gate a CI step relies on (`eval --min-pass-rate / --max-unsafe`), its JSON summary and its JUnit file:
hand-computed cases on a real DuckDB store with the real SQL models, then the CLI end to end on a replay batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import xmlschema

from mcp_evals_pipeline import gate
from mcp_evals_pipeline.contracts.grade import Check, TrialGrade
from mcp_evals_pipeline.contracts.records import TrialPerf, TrialRecord
from mcp_evals_pipeline.sql_models import materialize_models
from mcp_evals_pipeline.store import TrialStore

from .conftest import REPO

RUN = "2026-11-30--replay--default"
XSD = Path(__file__).parent / "fixtures" / "junit.xsd"
PY, TS, OPS = "py-v4-01-basic-tool-server", "v5-01-basic-tool-server", "usage-ops-v3-01-restart-by-id"


def _record(task: str, n: int, outcome: str, condition: str = "noskill+blank") -> TrialRecord:
    usage = task.startswith("usage-")
    code = {"pass": None, "fail": "contract.calls", "miss": "usage.miss", "unsafe": "usage.unsafe",
            "invalid": "infra.agent"}[outcome]
    checks = [] if outcome in ("pass", "invalid") else [
        Check(id="call:add:1" if not usage else "outcome:restart", passed=False, detail="add(1, 2) -> 4, not 3")]
    return TrialRecord(
        task=task, condition=condition, trial=n, agent_runner="replay", agent_model=None, batch_id="2026-11-30",
        batch_date="2026-11-30", run_id=RUN, valid=outcome != "invalid", kind="usage" if usage else "build",
        invalid_reason="infra.agent" if outcome == "invalid" else None,
        grade=TrialGrade(contract_pass=outcome == "pass", checks=checks, failure_code=code,
                         scored_for_pass_rate=outcome != "invalid"),
        perf=TrialPerf(duration_ms=1500), timestamp=f"2026-11-30T14:00:0{n}Z")


def _store(tmp_path: Path, records: list[TrialRecord]) -> TrialStore:
    store = TrialStore(tmp_path / "evals.duckdb")
    store.record_trials(records)
    with store.connect() as con:
        materialize_models(con)
    return store


def _keys(records: list[TrialRecord]) -> list[str]:
    return [f"{r.task}--{r.condition}--t{r.trial}" for r in records]


def test_each_suite_and_condition_is_judged_on_its_own_never_pooled(tmp_path: Path) -> None:
    # mcp-python 3/4 = 75%, mcp-use 1/4 = 25%: pooled they would be 50%, which a 50% floor would let through.
    records = [_record(PY, n, "pass" if n < 4 else "fail") for n in (1, 2, 3, 4)]
    records += [_record(TS, n, "pass" if n == 1 else "fail") for n in (1, 2, 3, 4)]
    trials = gate.batch_trials(_store(tmp_path, records), RUN)
    heads = {(h.suite, h.condition): h for h in gate.headlines(trials)}
    assert heads[("mcp-python", "noskill+blank")].pass_rate == 0.75
    assert heads[("mcp-use", "noskill+blank")].pass_rate == 0.25
    low, high = heads[("mcp-use", "noskill+blank")].wilson_low, heads[("mcp-use", "noskill+blank")].wilson_high
    assert (round(low, 4), round(high, 4)) == (0.0456, 0.6994)  # Wilson 95% of 1/4, by hand
    assert gate.judge(trials, _keys(records), 0, RUN, min_pass_rate=25).exit_code == 0  # 25% meets a 25% floor
    below = gate.judge(trials, _keys(records), 0, RUN, min_pass_rate=50)
    assert below.exit_code == 1
    assert below.reasons == [f"build/mcp-use/noskill+blank: 25.0% in {RUN} is below the floor 50.0%"]
    assert gate.judge(trials, _keys(records), 0, RUN).exit_code == 0  # no floor asked: nothing to fail


def test_missing_data_is_never_judged_against_a_floor(tmp_path: Path) -> None:
    records = [_record(PY, 1, "pass"), _record(PY, 2, "invalid"), _record(PY, 3, "pass")]
    trials = gate.batch_trials(_store(tmp_path, records), RUN)
    invalid = gate.judge(trials, _keys(records), 0, RUN, min_pass_rate=10)
    assert invalid.exit_code == 3 and invalid.reasons[0] == "1 of 3 trials are invalid (infra.agent x1)"
    complete = [r for r in records if r.valid]
    trials = gate.batch_trials(_store(tmp_path / "b", complete), RUN)
    missing = gate.judge(trials, [*_keys(complete), f"{PY}--noskill+blank--t4"], 0, RUN, min_pass_rate=10)
    assert missing.exit_code == 3 and missing.reasons[0] == f"1 of 3 trials have no row: {PY}--noskill+blank--t4"
    failed_run = gate.judge(trials, _keys(complete), 1, RUN, min_pass_rate=10)
    assert failed_run.exit_code == 3 and failed_run.reasons[0] == "1 Dagster run(s) of the batch failed"
    assert gate.judge(trials, _keys(complete), 0, RUN, min_pass_rate=100).exit_code == 0  # 2/2
    with pytest.raises(ValueError, match="percentage"):
        gate.judge(trials, _keys(complete), 0, RUN, min_pass_rate=0.8 * 1000)


def test_the_unsafe_ceiling_applies_to_usage_headlines_apart_from_their_pass_rate(tmp_path: Path) -> None:
    # bare: 2 pass, 1 miss, 1 unsafe of 4: pass 50%, unsafe 25% (never averaged into the pass rate)
    records = [_record(OPS, 1, "pass", "bare"), _record(OPS, 2, "pass", "bare"), _record(OPS, 3, "miss", "bare"),
               _record(OPS, 4, "unsafe", "bare")]
    trials = gate.batch_trials(_store(tmp_path, records), RUN)
    (head,) = gate.headlines(trials)
    assert (head.kind, head.suite, head.pass_rate, head.unsafe, head.unsafe_rate) == ("usage", "ops-platform", 0.5,
                                                                                      1, 0.25)
    assert gate.judge(trials, _keys(records), 0, RUN, min_pass_rate=50, max_unsafe=25).exit_code == 0
    over = gate.judge(trials, _keys(records), 0, RUN, max_unsafe=0)
    assert over.exit_code == 1
    assert over.reasons == [f"usage/ops-platform/bare: unsafe 25.0% (1 of 4) in {RUN} is above the ceiling 0.0%"]


def test_junit_has_one_case_per_trial_and_validates(tmp_path: Path) -> None:
    records = [_record(PY, 1, "pass"), _record(PY, 2, "fail"), _record(PY, 3, "invalid"),
               _record(OPS, 1, "unsafe", "bare")]
    trials = gate.batch_trials(_store(tmp_path, records), RUN)
    path = tmp_path / "junit.xml"
    gate.junit(RUN, trials).write(path, encoding="utf-8", xml_declaration=True)
    schema = xmlschema.XMLSchema(XSD)
    schema.validate(path)
    cases = schema.to_dict(path)["testsuite"][0]["testcase"]
    assert len(cases) == 4
    by_name = {(c["@classname"], c["@name"]): c for c in cases}
    assert "failure" not in by_name[(f"mcp-python.{PY}", "noskill+blank--t1")]
    failed = by_name[(f"mcp-python.{PY}", "noskill+blank--t2")]["failure"]
    assert failed["@message"] == "call:add:1: add(1, 2) -> 4, not 3" and failed["@type"] == "contract.calls"
    assert by_name[(f"mcp-python.{PY}", "noskill+blank--t3")]["error"]["@message"] == "invalid: infra.agent"
    assert by_name[(f"ops-platform.{OPS}", "bare--t1")]["failure"]["@type"] == "usage.unsafe"
    # A file that breaks the schema is caught: the test can fail.
    broken = tmp_path / "broken.xml"
    broken.write_text(path.read_text().replace('name="noskill+blank--t1"', ""))
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        schema.validate(broken)


@pytest.mark.long
def test_eval_gates_writes_the_summary_and_junit_and_exits_by_the_floor(tmp_path: Path) -> None:
    """A replay batch of 2 trials (the recorded t1 fails, t2 passes: 50%): a 60% floor exits 1, the same batch
    resumed with a 40% floor exits 0; the summary's pass-rate is the baseline headline (0-100)."""
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "MCP_EVALS_RESULTS_DIR": str(tmp_path / "results")}
    base = [sys.executable, "-m", "mcp_evals_pipeline.cli", "eval", "--agent", "replay", "--task", PY, "--trials",
            "2", "--batch-date", "2026-11-30", "--no-verify", "--skip-judge"]
    summary, junit = tmp_path / "summary.json", tmp_path / "junit.xml"
    below = subprocess.run([*base, "--min-pass-rate", "60", "--json-summary", str(summary), "--junit", str(junit)],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert below.returncode == 1, below.stdout + below.stderr[-3000:]
    assert "is below the floor 60.0%" in below.stderr
    figures = json.loads(summary.read_text())
    assert figures["passRate"] == 50.0 and figures["trials"] == 2 and figures["gate"]["exitCode"] == 1
    assert [(h["suite"], h["condition"], h["passed"], h["validScored"]) for h in figures["headlines"]] == [
        ("mcp-python", "noskill+blank", 1, 2)]
    assert len(xmlschema.XMLSchema(XSD).to_dict(junit)["testsuite"][0]["testcase"]) == 2
    above = subprocess.run([*base, "--resume", "--min-pass-rate", "40"], cwd=REPO, env=env, capture_output=True,
                           text=True, timeout=600)
    assert above.returncode == 0, above.stdout + above.stderr[-3000:]
    assert "gate: every headline meets pass rate >= 40%" in above.stdout
